"""denpex-kb: knowledge base, rule pack and log matcher for DeepSpeed failures.

The stable Python API (docs/api.md): `load_kb`, `match`, `match_text`, `Matcher`, `search` and
their result types. Everything else in the package is internal and may change in any release.
"""

from ._version import __version__
from .api import (
    BUNDLED,
    Candidate,
    Collateral,
    Diagnosis,
    Entry,
    Evidence,
    KnowledgeBase,
    Matcher,
    Related,
    SearchHit,
    load_kb,
    match,
    match_text,
    search,
)

__all__ = [
    "BUNDLED",
    "Candidate",
    "Collateral",
    "Diagnosis",
    "Entry",
    "Evidence",
    "InputError",
    "KBError",
    "KnowledgeBase",
    "Matcher",
    "Related",
    "RulesError",
    "SearchHit",
    "SearchIndexError",
    "__version__",
    "load_kb",
    "match",
    "match_text",
    "search",
]

# The exceptions live beside the code that raises them, which imports the YAML, JSON Schema and
# regex stacks; they are looked up on first use so that `import denpex_kb` stays quick.
_ERRORS = {
    "KBError": ("denpex_kb.kb", "KBError"),
    "RulesError": ("denpex_kb.engine", "RulesError"),
    "InputError": ("denpex_kb.engine", "InputError"),
    "SearchIndexError": ("denpex_kb.index", "IndexError_"),
}


def __getattr__(name: str) -> type[Exception]:
    if name in _ERRORS:
        import importlib

        module, attr = _ERRORS[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'denpex_kb' has no attribute {name!r}")
