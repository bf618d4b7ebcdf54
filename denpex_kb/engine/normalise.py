"""Step 2, normalise: one raw line (bytes) -> the text the rules are matched against.

Undecodable bytes become U+FFFD, NULs are dropped, a carriage-return progress bar keeps only its
last non-empty segment (what a terminal shows), CRLF loses its CR, ANSI escapes are removed.
"""

from __future__ import annotations

MAX_LINE_CHARS = 64 * 1024


class Normaliser:
    def __init__(self, ansi_pattern: str) -> None:
        from .attribute import compile_rx

        self._ansi = compile_rx(ansi_pattern)

    def __call__(self, raw: bytes) -> str:
        text = raw.decode("utf-8", errors="replace")
        if "\x00" in text:
            text = text.replace("\x00", "")
        text = text.rstrip("\n")
        if "\r" in text:
            segments = [s for s in text.split("\r") if s.strip()]
            text = segments[-1] if segments else ""
        if "\x1b" in text:
            text = self._ansi.sub("", text)
        if len(text) > MAX_LINE_CHARS:
            text = text[:MAX_LINE_CHARS]
        return text
