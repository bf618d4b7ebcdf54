"""denpex-kb: knowledge base, rule pack and log matcher for DeepSpeed failures.

The stable Python API (docs/api.md): `load_kb`, `match`, `match_text`, `Matcher`, `search` and
their result types. Everything else in the package is internal and may change in any release.
"""

from typing import TYPE_CHECKING

from ._version import __version__

if TYPE_CHECKING:  # the names below, for type checkers; at run time they load on first use
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

# The API and its model (frozen dataclasses: creating them costs tens of milliseconds) and the
# exceptions, which live beside the code that raises them (YAML, JSON Schema, regex stacks), are
# looked up on first use: `import denpex_kb` and the CLI's `match` pay only for what they use.
_ERRORS = {
    "KBError": ("denpex_kb.kb", "KBError"),
    "RulesError": ("denpex_kb.engine", "RulesError"),
    "InputError": ("denpex_kb.engine", "InputError"),
    "SearchIndexError": ("denpex_kb.index", "IndexError_"),
}
_API = frozenset(__all__) - set(_ERRORS) - {"__version__"}  # the rest of the face: denpex_kb.api


def __getattr__(name: str):  # noqa: ANN202 - a type, function or constant of the API
    if name in _API:
        from . import api

        return getattr(api, name)
    if name in _ERRORS:
        import importlib

        module, attr = _ERRORS[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'denpex_kb' has no attribute {name!r}")


def __dir__() -> list[str]:
    # the public face is __all__ (loaded or not yet); private and dunder names as usual
    return sorted({n for n in globals() if n.startswith("_")} | set(__all__))
