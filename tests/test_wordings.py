"""Every wording a signal's description attributes to a release is matched by the signal.

Convention (ENTRY-GUIDE point 7): when the emitting program printed the message differently in
different releases, the signal's ``description`` lists each wording as a version label, a colon
and the wording in backticks, entries separated by semicolons, e.g.

    DeepSpeed v0.13.0-v0.15.x: `Type fp16 is not supported.`; v0.16.0+: `Type fp16 is not
    supported on your device.`

A version label is a version (``v0.13.0``, ``2.1``, ``4.38.x``), a range of two (``v0.5.0-v0.9.5``)
or an open range (``v0.16.0+``), optionally followed by one parenthesised note before the colon
(``v0.5.5+ (cpu_adagrad.py added in 8abdaee24): `...` ``); words before it (``DeepSpeed``,
``torch``, ``transformers``) are free text. The wording is one concrete printed line (variables
filled in with sample values, a prefix of the line is fine), so it can be searched by the
signal's pattern exactly as the engine searches a log line. A message that itself contains
backticks cannot be quoted this way; describe it in prose. This test keeps the description and
the regex from drifting apart: widening a description without the regex, or narrowing the
regex, fails here.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from denpex_kb.kb import load_kb

BUNDLED = Path(os.environ.get("DENPEX_TEST_KB") or Path(__file__).resolve().parent.parent / "kb")

_VERSION = r"v?\d+(?:\.(?:\d+|x))+"
WORDING = re.compile(
    rf"(?<![\w.])({_VERSION}(?:\s*-\s*{_VERSION}|\+)?)(?:\s*\([^()]*\))?\s*:\s*`([^`]+)`"
)


def wordings(description: str) -> list[tuple[str, str]]:
    """(version label, wording) pairs written by the convention above."""
    return [(m.group(1), m.group(2)) for m in WORDING.finditer(description)]


def _signals() -> list[tuple[str, object]]:
    kb = load_kb(BUNDLED)
    return [(f"{e.id}:{s.id}", s) for e in kb.entries for s in e.signals]


SIGNALS = _signals()
VERSIONED = [(name, s) for name, s in SIGNALS if wordings(s.description)]


def test_parser_reads_the_convention() -> None:
    text = (
        "DeepSpeed v0.13.0-v0.15.x: `Type fp16 is not supported.`; "
        "v0.16.0+: `Type fp16 is not supported on your device.`; see PR #6742 (0.16.0)."
    )
    assert wordings(text) == [
        ("v0.13.0-v0.15.x", "Type fp16 is not supported."),
        ("v0.16.0+", "Type fp16 is not supported on your device."),
    ]
    # a version followed by prose, not a quoted wording, is not a wording
    assert wordings("fixed in v0.6.0: see the PR") == []
    # one parenthesised note may sit between the label and the colon
    assert wordings("v0.5.5+ (added in commit 8abdaee24, see `x`): `AttributeError: a`") == [
        ("v0.5.5+", "AttributeError: a")
    ]
    # a version inside a note is not a label of its own
    assert wordings("(first tag v0.13.0) and more") == []


def test_convention_is_in_use() -> None:
    multi = [name for name, s in VERSIONED if len(wordings(s.description)) > 1]
    assert len(multi) >= 10, multi


@pytest.mark.parametrize("name,signal", VERSIONED, ids=[n for n, _ in VERSIONED])
def test_every_described_wording_matches(name: str, signal) -> None:
    import re2

    opts = re2.Options()
    opts.case_sensitive = not signal.ignore_case
    rx = re2.compile(signal.pattern, opts)
    missed = [
        f"{label}: {text!r}" for label, text in wordings(signal.description) if not rx.search(text)
    ]
    assert not missed, f"{name} pattern {signal.pattern!r} misses {missed}"


@pytest.mark.parametrize("name,signal", VERSIONED, ids=[n for n, _ in VERSIONED])
def test_wordings_are_distinct(name: str, signal) -> None:
    texts = [t for _, t in wordings(signal.description)]
    assert len(texts) == len(set(texts)), f"{name} lists a wording twice: {texts}"
