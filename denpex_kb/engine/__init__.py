"""The matching engine: raw (multi-rank) logs in, a report out.

Steps, one module each: read -> normalise -> attribute -> facts -> scan -> evaluate -> diagnose ->
explain -> render; `analyse` runs them over the sources and `related` adds text-index suggestions
when no rule fired. The engine runs only on an exported rule pack (`rules.load_rulepack`), the
same file other tools get.

    from denpex_kb.engine import Engine, load_rulepack
    report = Engine(load_rulepack()).analyse_paths(["logs/"])
"""

from __future__ import annotations

from . import attribute, read, split
from .analyse import MAX_HITS_PER_SIGNAL, Engine
from .read import InputError, Source, collect_sources, open_source
from .related import suggest_related
from .render import render_markdown, render_text
from .rules import RulesError, load_rulepack

__all__ = [
    "MAX_HITS_PER_SIGNAL",
    "Engine",
    "InputError",
    "RulesError",
    "Source",
    "attribute",
    "collect_sources",
    "load_rulepack",
    "open_source",
    "read",
    "render_markdown",
    "render_text",
    "split",
    "suggest_related",
]
