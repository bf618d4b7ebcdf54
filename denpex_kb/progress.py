"""A progress line on stderr while `match` reads large inputs: bytes read, rate, ETA.

Shown only when stderr is a terminal and the input is over `THRESHOLD` bytes (nothing at all
when stderr is piped or redirected, or with `--quiet`), redrawn at most a few times a second
and erased when reading ends, so that the report on stdout is never mixed with it.

`LazyStreams` hands the engine one stream per source, opened only when the engine gets to it
(as the engine would open it itself), counting what is read from the file underneath: for a
compressed log, progress is measured in its compressed bytes, which is what its size says.
"""

from __future__ import annotations

import os
import stat
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, BinaryIO, TextIO

THRESHOLD = 8 << 20  # "a few MB": below this a run ends before a progress line would help
REDRAW_S = 0.25


def human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def clock(seconds: float) -> str:
    seconds = int(seconds + 0.5)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """The line itself: `update(done)` redraws it (rate-limited), `finish()` erases it."""

    def __init__(
        self,
        total: int | None,
        out: TextIO,
        now: Callable[[], float] = time.monotonic,
        threshold: int = THRESHOLD,
    ) -> None:
        self.total = total
        self.out = out
        self.now = now
        self.threshold = threshold
        self.start = now()
        self.last = float("-inf")
        self.shown = False

    def line(self, done: int) -> str:
        elapsed = max(self.now() - self.start, 1e-6)
        rate = done / elapsed
        text = f"reading {human(done)}"
        if self.total:
            text += f" of {human(self.total)} ({min(100, 100 * done // self.total)}%)"
        text += f", {human(rate)}/s"
        if self.total and rate > 0 and done < self.total:
            text += f", ETA {clock((self.total - done) / rate)}"
        return text

    def update(self, done: int) -> None:
        if done < self.threshold and not self.shown:
            return
        t = self.now()
        if t - self.last < REDRAW_S:
            return
        self.last = t
        self._write("\r\x1b[K" + self.line(done))
        self.shown = True

    def finish(self) -> None:
        if self.shown:
            self._write("\r\x1b[K")
            self.shown = False

    def _write(self, s: str) -> None:
        try:
            self.out.write(s)
            self.out.flush()
        except (OSError, ValueError):
            self.shown = False


def _position(stream: Any) -> int:  # noqa: ANN401 - any binary stream
    """Bytes consumed from the file under `stream` (the compressed file for a compressed log)."""
    raw = getattr(stream, "raw", None)
    for s in (raw, stream):
        if s is None:
            continue
        try:
            return int(s.tell())
        except (OSError, ValueError, AttributeError):
            continue
    return 0


class _Counted:
    """A stream whose reads move the progress line."""

    def __init__(self, inner: BinaryIO, owner: LazyStreams) -> None:
        self.inner = inner
        self.owner = owner

    @property
    def warnings(self) -> list[str]:
        return list(getattr(self.inner, "warnings", ()))

    def read(self, size: int = -1) -> bytes:
        data = self.inner.read(size)
        self.owner.moved(_position(self.inner))
        return data

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:  # noqa: ANN401
        return getattr(self.inner, name)


class LazyStreams(Sequence):
    """`streams[i]` for the engine: source i opened on demand with `opener`, counted.

    Streams are closed as the next one is opened and by `close()`; stdin is never closed."""

    def __init__(self, sources: list[Any], opener: Callable[[Any], BinaryIO], progress: Progress):
        self.sources = sources
        self.opener = opener
        self.progress = progress
        self.done_before = 0  # bytes of the sources already read
        self.current: tuple[Any, BinaryIO] | None = None

    def __len__(self) -> int:
        return len(self.sources)

    def __getitem__(self, i: int) -> BinaryIO:  # type: ignore[override]
        self._close_current()
        src = self.sources[i]
        stream = self.opener(src)
        self.current = (src, stream)
        return _Counted(stream, self)  # type: ignore[return-value]

    def moved(self, position: int) -> None:
        self.progress.update(self.done_before + position)

    def _close_current(self) -> None:
        if self.current is None:
            return
        src, stream = self.current
        self.current = None
        self.done_before += _position(stream)
        if getattr(src, "path", None) is not None:
            try:
                stream.close()
            except OSError:
                pass

    def close(self) -> None:
        self._close_current()
        self.progress.finish()


def total_size(sources: list[Any]) -> int | None:
    """Bytes of all sources when every one is a regular file (stdin from a file counts)."""
    total = 0
    for src in sources:
        try:
            st = os.stat(src.path) if src.path is not None else os.fstat(sys.stdin.fileno())
        except (OSError, ValueError):
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        total += st.st_size
    return total
