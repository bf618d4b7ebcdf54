"""Text from logs, made safe to print on a terminal.

A log line can carry control characters that act on the terminal instead of being shown: BEL,
backspace and carriage return (which overwrite what was printed), escape sequences (C0 ESC and
the C1 CSI, U+009B), and bidirectional overrides that reorder what is read. `escape_controls`
writes each of them as a visible `\\xNN` / `\\uNNNN` escape; a tab is kept.
"""

from __future__ import annotations

import re
from typing import Any

# C0 except tab, DEL, C1, and the Unicode bidi embedding/override/isolate controls.
_CONTROLS = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group(0))
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def escape_controls(text: str) -> str:
    """`text` with every control character (except tab) written as a visible escape."""
    return _CONTROLS.sub(_escape, text)


def displayable_path(name: str) -> str:
    """A file name from the file system as printable text: bytes that are not UTF-8 (kept by
    Python as lone surrogates) are written as `\\xNN`, so JSON and terminals get valid text."""
    if not any("\udc80" <= ch <= "\udcff" for ch in name):
        return name
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def displayable(obj: Any) -> Any:
    """A JSON-like value with every string passed through displayable_path (file names that
    are not UTF-8 written as `\\xNN`), as `match --format json` and the fleet records print it."""
    if isinstance(obj, str):
        return displayable_path(obj)
    if isinstance(obj, dict):
        return {k: displayable(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [displayable(v) for v in obj]
    return obj
