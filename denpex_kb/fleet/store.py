"""The records file: JSON Lines, one finished job a line, appended one whole record at a time.

Crash safety: a record is written with one `write()` on a file opened with O_APPEND. A run holds
an exclusive `flock` on the file while it is open, so a second run on the same file is refused
(it would analyse the same jobs again) rather than interleaved. A process killed in the middle of
that write can leave a last line without its newline: that line is not a finished record. On
open the file is cut back to its last newline (the unfinished job is analysed again), so a
restart loses no finished record and duplicates none. Readers skip such a torn tail too.
Records are fsynced every few seconds and when the file is closed.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

FSYNC_EVERY_S = 2.0


def iter_records(path: Path) -> Iterator[dict[str, Any]]:
    """Every finished record, in file order (a torn last line or a line that is not a JSON
    object is skipped)."""
    try:
        f = open(path, "rb")  # noqa: SIM115
    except FileNotFoundError:
        return
    with f:
        for raw in f:
            if not raw.endswith(b"\n"):
                break  # an unfinished record of a killed run
            try:
                rec = json.loads(raw)
            except ValueError:
                continue
            if isinstance(rec, dict) and "job" in rec:
                yield rec


def latest_records(path: Path) -> dict[str, dict[str, Any]]:
    """The last record per job id (a job whose logs changed has a newer record below)."""
    out: dict[str, dict[str, Any]] = {}
    for rec in iter_records(path):
        out[rec["job"]] = rec
    return out


class RecordsBusy(RuntimeError):
    """Another run holds the records file."""


class RecordLog:
    """Append-only records file; `known` holds (job id, cache key) of what is already there."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o666)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self.fd)
            self.fd = -1
            raise RecordsBusy(f"{self.path}: another fleet run is writing it") from None
        self._last_sync = time.monotonic()
        self._repair()
        self.known: dict[str, set[str]] = {}
        for rec in iter_records(self.path):
            if rec.get("cache_key"):
                self.known.setdefault(rec["job"], set()).add(rec["cache_key"])

    def _repair(self) -> None:
        """Cut a torn last line (no newline) off the end of the file."""
        size = os.fstat(self.fd).st_size
        if size == 0:
            return
        pos = size
        step = 1 << 16
        while pos > 0:
            lo = max(0, pos - step)
            chunk = os.pread(self.fd, pos - lo, lo)
            if pos == size and chunk.endswith(b"\n"):
                return
            nl = chunk.rfind(b"\n")
            if nl != -1:
                os.ftruncate(self.fd, lo + nl + 1)
                return
            pos = lo
        os.ftruncate(self.fd, 0)

    def append(self, rec: dict[str, Any]) -> None:
        line = (json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        view = memoryview(line)
        while view:
            n = os.write(self.fd, view)
            view = view[n:]
        if rec.get("cache_key"):
            self.known.setdefault(rec["job"], set()).add(rec["cache_key"])
        if time.monotonic() - self._last_sync > FSYNC_EVERY_S:
            os.fsync(self.fd)
            self._last_sync = time.monotonic()

    def known_for(self, job_id: str) -> frozenset[str]:
        return frozenset(self.known.get(job_id, ()))

    def close(self) -> None:
        if self.fd >= 0:
            try:
                os.fsync(self.fd)
            finally:
                os.close(self.fd)
                self.fd = -1

    def __enter__(self) -> RecordLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
