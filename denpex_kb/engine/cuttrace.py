"""A traceback the paste cut before its exception line: users often copy the top of a traceback
and stop at the screen's edge. With no rule firing, its innermost frames are the only pointer
to the failure, so the report names them (`cut_traceback`) and the text-index step may look
them up (spec: docs/report-format.md).

Only the last bytes of each input are examined (TAIL_BYTES): the check costs nothing on a large
log and cannot be made to read more."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .attribute import compile_rx

TAIL_BYTES = 8192
MAX_FRAMES = 3
# Between two frames Python prints the frame's source line, since 3.11 a marker line under it
# (^^^^), since 3.13 a statement over several lines: a few lines, never an exception.
MAX_BETWEEN = 4
# Unbounded groups, their lengths checked after the match (MAX_PATH, MAX_FUNCTION): RE2
# compiles `{1,1000}` into a thousand states, 15 ms of every start-up.
FRAME_RX = compile_rx(rb'File "([^"\n]+)", line ([0-9]{1,9}), in ([^\s]+)\s*$')
MAX_PATH = 1000
MAX_FUNCTION = 300
HEADER_RX = compile_rx(rb"Traceback \(most recent call last\):\s*$")


def tail_of(block: bytes, lo: int, hi: int, prev: bytes) -> bytes:
    """The last TAIL_BYTES of the input read so far, given the previous tail and the next
    block as read (before ANSI escapes and NULs are removed)."""
    if hi - lo >= TAIL_BYTES:
        return block[hi - TAIL_BYTES : hi]
    return (prev + block[lo:hi])[-TAIL_BYTES:]


def cut_traceback(
    tail: bytes,
    lines: int,
    windowed: bool,
    content: Callable[[bytes], str],
    is_error: Callable[[bytes], bool],
    name: str,
) -> dict[str, Any] | None:
    """The frames of the traceback the input ends inside, innermost first, or None. `tail` is
    the input's last TAIL_BYTES as read (`windowed`: the input is longer), `lines` the input's
    line count as the scan counts it (newlines), `content` a raw line's normalised content
    (launcher prefix stripped), `is_error` whether content is an exception or other error."""
    rows = tail.split(b"\n")
    last = lines + 1 if rows[-1] != b"" and b"\n" in tail else lines
    if rows[-1] == b"":
        rows.pop()
    if windowed and rows:
        rows.pop(0)  # cut by the window, not by the user
    n = last + 1
    frames: list[dict[str, Any]] = []
    between: list[str] = []  # the non-frame lines below the frame being looked for
    seen_header = False
    for raw in reversed(rows):
        n -= 1
        text = content(raw).strip()
        if not text:
            if frames or between:
                break
            continue
        b = text.encode("utf-8")
        m = FRAME_RX.search(b)
        if m is not None and (len(m.group(1)) > MAX_PATH or len(m.group(3)) > MAX_FUNCTION):
            m = None  # not a frame line (as the bounded pattern of cuttrace.js says)
        if m is not None:
            if len(frames) < MAX_FRAMES:
                code = next((t for t in reversed(between) if t.strip("^~ ")), None)
                frames.append(_frame(m, code, n))
            between = []
        elif HEADER_RX.search(b) is not None:
            seen_header = True
            break
        elif is_error(b) or len(between) >= MAX_BETWEEN:
            break
        else:
            between.append(text)
    if not frames or not (seen_header or len(frames) >= 2):
        return None
    return {"file": name, "line": frames[0]["line"], "frames": frames}


def first_cut(
    tails: list[tuple[int, bytes, int, bool]],
    content: Callable[[bytes], str],
    is_error: Callable[[bytes], bool],
    names: list[str],
) -> dict[str, Any] | None:
    """The first input (in order) that ends inside a traceback: (source, tail, lines, windowed)
    each."""
    for si, tail, n, windowed in tails:
        got = cut_traceback(tail, n, windowed, content, is_error, names[si])
        if got is not None:
            return got
    return None


def _frame(m: Any, code: str | None, line: int) -> dict[str, Any]:
    return {
        "line": line,
        "path": m.group(1).decode("utf-8", "replace"),
        "function": m.group(3).decode("utf-8", "replace"),
        "code": code,
    }


def frame_query(cut: dict[str, Any]) -> str:
    """Text-index query for a cut traceback: each frame's path inside its package (the part
    after site-packages/dist-packages), its function and its source line."""
    parts = []
    for f in cut["frames"]:
        path = f["path"].replace("\\", "/")
        for marker in ("site-packages/", "dist-packages/"):
            if marker in path:
                path = path.rsplit(marker, 1)[1]
                break
        else:
            path = path.rsplit("/", 1)[-1]
        parts.append(" ".join(p for p in (path, f["function"], f["code"] or "") if p))
    return "\n".join(parts)


def cut_note(cut: dict[str, Any]) -> str:
    f = cut["frames"][0]
    return (
        f"The traceback ending at {cut['file']}:{cut['line']} is cut before its exception line "
        f"(innermost frame: {f['path']}, in {f['function']}). The exception line names the "
        "failure: paste the traceback to its end."
    )


def frame_lines(cut: dict[str, Any]) -> list[dict[str, Any]]:
    """The cut traceback's frames as evidence lines (innermost first)."""
    return [
        {
            "file": cut["file"],
            "line": f["line"],
            "rank": None,
            "host": None,
            "text": f'File "{f["path"]}", in {f["function"]}'
            + (f": {f['code']}" if f["code"] else ""),
        }
        for f in cut["frames"]
    ]
