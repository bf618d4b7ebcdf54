"""The whoosh side of the text index: the tokenizer and the schema.

whoosh pickles the schema into the index, so the tokenizer must be a module-level class; this
module is imported only when an index is built or opened, keeping whoosh off the CLI's start-up.
"""

from __future__ import annotations

from collections.abc import Iterator

from whoosh.analysis import Token, Tokenizer
from whoosh.fields import ID, STORED, TEXT, Schema

from . import errortext

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
