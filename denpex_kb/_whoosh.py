"""The whoosh side of the text index: the tokenizer and the schema.

whoosh pickles the schema into the index, so the tokenizer must be a module-level class; this
module is imported only when an index is built or opened, keeping whoosh off the CLI's start-up.
"""

from __future__ import annotations

import functools
import sys
import types
from collections.abc import Iterator


def _delegating_stand_in(module: str, name: str) -> types.ModuleType:
    """A module whose one function `name` imports the real `module` when called and calls its
    `name` (once the stand-in has left sys.modules, the import finds the real one)."""
    stand_in = types.ModuleType(module)

    def delegate(*args: object, **kwargs: object) -> object:
        import importlib

        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    setattr(stand_in, name, delegate)
    return stand_in


def _import_whoosh() -> None:
    """Import whoosh without three imports it never uses here, which were most of its import
    time and a third of a warm `search`: the `cached_property` package (it imports asyncio; on
    Python 3.8+ functools has the same decorator for the one synchronous method whoosh
    decorates), `urllib.request` (whoosh.compat only re-exports urlretrieve, which denpex-kb
    never calls; the stand-in imports the real one if anything does) and the English
    morphology table (see below). Each stand-in is
    put in place only if the real module is not loaded, and is removed again as soon as whoosh
    is imported, so later imports of either get the real module."""
    if "whoosh" in sys.modules:
        return
    import urllib

    added: dict[str, types.ModuleType] = {}
    if "cached_property" not in sys.modules:
        cp = types.ModuleType("cached_property")
        cp.cached_property = functools.cached_property  # type: ignore[attr-defined]
        added["cached_property"] = cp
    if "urllib.request" not in sys.modules:
        added["urllib.request"] = _delegating_stand_in("urllib.request", "urlretrieve")
    if "whoosh.lang.morph_en" not in sys.modules:
        # whoosh.query.terms imports this English morphology table (about 40 regular
        # expressions compiled at import, a third of whoosh's import time) for the Variations
        # query, which denpex-kb never builds.
        added["whoosh.lang.morph_en"] = _delegating_stand_in("whoosh.lang.morph_en", "variations")
    sys.modules.update(added)
    try:
        import whoosh.analysis
        import whoosh.fields
        import whoosh.index
        import whoosh.query
        import whoosh.scoring  # noqa: F401
    finally:
        for name, mod in added.items():
            if sys.modules.get(name) is mod:
                del sys.modules[name]
        if (
            "urllib.request" in added
            and getattr(urllib, "request", None) is added["urllib.request"]
        ):
            del urllib.request


_import_whoosh()

from whoosh import index as windex  # noqa: E402, F401 - index.py takes it from here
from whoosh.analysis import Token, Tokenizer  # noqa: E402
from whoosh.fields import ID, STORED, TEXT, Schema  # noqa: E402

from . import errortext  # noqa: E402

FIELD_BOOSTS = {"title": 3.0, "errors": 2.5, "summary": 2.0, "tags": 1.5, "body": 1.0}


class ErrorTextTokenizer(Tokenizer):
    """Emits errortext.tokens() as whoosh tokens (whole compounds and their parts)."""

    def __call__(  # noqa: PLR0913 - whoosh's signature
        self,
        value: str,
        positions: bool = False,
        chars: bool = False,
        keeporiginal: bool = False,
        removestops: bool = True,
        start_pos: int = 0,
        start_char: int = 0,
        tokenize: bool = True,
        mode: str = "",
        **kwargs: object,
    ) -> Iterator[Token]:
        t = Token(positions, chars, removestops=removestops, mode=mode, **kwargs)
        for pos, (term, start, end) in enumerate(errortext.tokens(value)):
            t.text = term
            t.boost = 1.0
            t.stopped = False
            if keeporiginal:
                t.original = term
            if positions:
                t.pos = start_pos + pos
            if chars:
                t.startchar = start_char + start
                t.endchar = start_char + end
            yield t


def whoosh_schema() -> Schema:
    ana = ErrorTextTokenizer()
    return Schema(
        id=ID(stored=True, unique=True),
        title=TEXT(analyzer=ana, stored=True, field_boost=FIELD_BOOSTS["title"]),
        phase=STORED(),
        summary=TEXT(analyzer=ana, stored=True, field_boost=FIELD_BOOSTS["summary"]),
        errors=TEXT(analyzer=ana, stored=True, field_boost=FIELD_BOOSTS["errors"]),
        tags=TEXT(analyzer=ana, field_boost=FIELD_BOOSTS["tags"]),
        body=TEXT(analyzer=ana, field_boost=FIELD_BOOSTS["body"]),
    )
