"""Step 1, read: turn what the user points at (stdin, files, .gz, folders) into byte blocks.

Streaming in bounded memory: a block is at most `BLOCK_SIZE` bytes plus one partial line, and a
line longer than `MAX_LINE` is cut (the pieces keep the same line number). Bytes stay bytes; the
engine decodes only the few lines it cites.
"""

from __future__ import annotations

import gzip
import io
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

BLOCK_SIZE = 4 << 20
MAX_LINE = 1 << 20
GZIP_MAGIC = b"\x1f\x8b"


class InputError(Exception):
    """A path cannot be read; the message names it."""


@dataclass(frozen=True)
class Source:
    name: str  # as shown in reports: the path as given/found, or "<stdin>"
    path: Path | None  # None for stdin


def collect_sources(paths: list[str]) -> list[Source]:
    """Expand the command line: '-' or nothing is stdin, folders are walked (sorted)."""
    if not paths:
        paths = ["-"]
    out: list[Source] = []
    for p in paths:
        if p == "-":
            out.append(Source("<stdin>", None))
            continue
        path = Path(p)
        if path.is_dir():
            found = []
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for f in sorted(files):
                    if not f.startswith("."):
                        found.append(Path(root) / f)
            if not found:
                raise InputError(f"{p}: folder has no files")
            out.extend(Source(str(f), f) for f in found)
        elif path.exists():
            out.append(Source(str(path), path))
        else:
            raise InputError(f"{p}: no such file or folder")
    return out


def open_source(src: Source) -> BinaryIO:
    """A binary stream of the source's content, gunzipped when it starts with the gzip magic."""
    try:
        raw: BinaryIO = sys.stdin.buffer if src.path is None else open(src.path, "rb")  # noqa: SIM115
    except OSError as exc:
        raise InputError(f"{src.name}: {exc.strerror}") from None
    buffered = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)  # type: ignore[arg-type]
    try:
        head = buffered.peek(2)[:2]
    except OSError as exc:
        raise InputError(f"{src.name}: {exc.strerror}") from None
    if head == GZIP_MAGIC:
        return gzip.GzipFile(fileobj=buffered, mode="rb")  # type: ignore[return-value]
    return buffered


def iter_blocks(
    stream: BinaryIO, name: str, block_size: int = BLOCK_SIZE
) -> Iterator[tuple[bytes, int, int]]:
    """Regions (buffer, lo, hi) that end at a line boundary (except a cut over-long line and the
    last one). The body of each chunk read is yielded without copying; only the line that
    straddles two chunks is joined."""
    carry = b""
    while True:
        try:
            chunk = stream.read(block_size)
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            raise InputError(f"{name}: {reason}") from None
        if not chunk:
            break
        first = chunk.find(b"\n")
        if first == -1:
            carry += chunk
            if len(carry) > MAX_LINE:
                yield carry, 0, len(carry)
                carry = b""
            continue
        lo = 0
        if carry:
            head = carry + chunk[: first + 1]
            yield head, 0, len(head)
            lo = first + 1
        cut = chunk.rfind(b"\n")
        if cut + 1 > lo:
            yield chunk, lo, cut + 1
        carry = chunk[cut + 1 :]
    if carry:
        yield carry, 0, len(carry)
