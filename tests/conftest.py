"""Fixtures shared by the test modules: the bundled knowledge base (immutable, loaded once) and
its exported rule pack (a dict: one per module, so a module that edits it harms no other)."""

from __future__ import annotations

import pytest

from denpex_kb import rulepack as rp
from denpex_kb.kb import load_kb
from denpex_kb.model import KnowledgeBase


@pytest.fixture(scope="session")
def kb() -> KnowledgeBase:
    return load_kb()


@pytest.fixture(scope="module")
def pack(kb: KnowledgeBase) -> dict:
    return rp.build_pack(kb)
