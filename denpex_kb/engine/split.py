"""A large regular file scanned by several processes (`match --jobs N`), same report byte for byte.

What a block costs is the whole-block work: the multi-pattern scan and the newline count for
line numbers. Neither depends on anything before the block, so worker processes do both, each
on a piece of the file (PIECE_CHUNKS reads of BLOCK_SIZE), and send back per block only the
scan's line starts and the newline counts up to each. The engine's own process still reads
every block in order and does all the rest exactly as with one process (time look-back,
per-rank line counts, the torchelastic summary, table rows, caps): no state is split, so
nothing needs merging beyond taking the precomputed numbers in file order.

A worker sees the same blocks as the single reader because a piece starts at a chunk boundary
with the same partial line the single reader carries there: the bytes after the last newline of
the chunk before. When that chunk has no newline (a line longer than a chunk) the worker cannot
know that carry and returns nothing for its piece; and every record names the file offset and
length of its block, which the engine checks against its own block: a block without a matching
record is scanned by the engine itself. So the split can only change the speed, never a result.
"""

from __future__ import annotations

import os
from array import array
from collections import deque
from typing import Any

from . import read
from .read import iter_blocks

# Files smaller than this are scanned in-process (a pool costs tens of milliseconds to start).
SPLIT_MIN_BYTES = 64 << 20
PIECE_CHUNKS = 8  # a piece is 8 reads of BLOCK_SIZE (32 MB)
TAIL_PROBE = 1 << 16  # the carry is found in the last 64 KB of the chunk before, usually

# file offset, raw length, line starts, newline counts up to each, newlines in the block, and
# whether the block has ANSI escapes or NUL bytes to remove (else the engine need not look)
Record = tuple[int, int, array, array, int, bool]

_worker: dict[str, Any] = {}


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS
        return max(1, os.cpu_count() or 1)


def count_lines(block: bytes, lo: int, hi: int, starts: list[int]) -> tuple[array, int]:
    """Newlines in [lo, st) for each line start st (in order), and in [lo, hi)."""
    counts = array("q")
    c, pos = 0, lo
    for st in starts:
        c += block.count(b"\n", pos, st)
        pos = st
        counts.append(c)
    return counts, c + block.count(b"\n", pos, hi)


def _init(patterns: list[tuple[str, bool]], backend: str, ansi: str) -> None:
    from .attribute import compile_rx
    from .scan import make_prefilter

    _worker["prefilter"] = make_prefilter(patterns, backend)
    _worker["ansi"] = compile_rx(ansi.encode())


def prepare(block: bytes, lo: int, hi: int, ansi: Any) -> tuple[bytes, int, int]:
    """What the engine scans: the block without ANSI escapes and NUL bytes."""
    if block.find(b"\x1b", lo, hi) != -1:
        block = ansi.sub(b"", block[lo:hi])
        lo, hi = 0, len(block)
    if block.find(b"\x00", lo, hi) != -1:
        block = block[lo:hi].replace(b"\x00", b"")
        lo, hi = 0, len(block)
    return block, lo, hi


def _scan_piece(path: str, k0: int, chunks: int | None, bs: int) -> list[Record] | None:
    prefilter, ansi = _worker["prefilter"], _worker["ansi"]
    out: list[Record] = []
    with open(path, "rb") as f:
        carry, off = b"", 0
        if k0:
            start = k0 * bs
            for probe in (min(TAIL_PROBE, bs), bs):
                f.seek(start - probe)
                tail = f.read(probe)
                cut = tail.rfind(b"\n")
                if cut != -1:
                    break
            else:
                return None  # a line longer than a chunk ends the chunk before: unknown carry
            carry, off = tail[cut + 1 :], start - probe + cut + 1
        f.seek(k0 * bs)
        for block, lo, hi in iter_blocks(f, path, bs, carry=carry, chunks=chunks):
            n = hi - lo
            raw = block
            block, lo, hi = prepare(block, lo, hi, ansi)
            starts = prefilter.line_starts(block, lo, hi)
            counts, total = count_lines(block, lo, hi, starts)
            out.append((off, n, array("q", starts), counts, total, block is not raw))
            off += n
    return out


class Prescan:
    """The workers' records for one file, handed out in file order; None for a block that the
    engine must scan itself. At most `jobs + 1` pieces are in flight or waiting (bounded
    memory whatever the file's size)."""

    def __init__(
        self, path: str, size: int, jobs: int, patterns: list, backend: str, ansi: str
    ) -> None:
        bs = read.BLOCK_SIZE
        n_chunks = -(-size // bs)
        self.tasks = [
            (path, k0, None if k0 + PIECE_CHUNKS >= n_chunks else PIECE_CHUNKS, bs)
            for k0 in range(0, n_chunks, PIECE_CHUNKS)
        ]
        import multiprocessing as mp

        methods = mp.get_all_start_methods()
        ctx = mp.get_context("fork" if "fork" in methods else "spawn")
        self.pool = ctx.Pool(jobs, initializer=_init, initargs=(patterns, backend, ansi))
        self.ahead = jobs + 1
        self.pending: deque = deque()
        self.next_task = 0
        self.cur: deque[Record] = deque()
        self.local_blocks = 0  # blocks the engine scanned itself (for tests)

    def _fill(self) -> None:
        while len(self.pending) < self.ahead and self.next_task < len(self.tasks):
            self.pending.append(self.pool.apply_async(_scan_piece, self.tasks[self.next_task]))
            self.next_task += 1

    def get(self, off: int, n: int) -> Record | None:
        while True:
            if self.cur:
                r = self.cur[0]
                if r[0] == off and r[1] == n:
                    self.cur.popleft()
                    return r
                if r[0] > off:
                    self.local_blocks += 1
                    return None
                self.cur.popleft()  # behind the engine's position: not this block's
                continue
            self._fill()
            if not self.pending:
                self.local_blocks += 1
                return None
            try:
                res = self.pending.popleft().get()
            except Exception:  # noqa: BLE001 - the engine's own read reports real errors
                res = None
            self._fill()
            if res:
                self.cur.extend(res)

    def close(self) -> None:
        self.pool.terminate()
        self.pool.join()
