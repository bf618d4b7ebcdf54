"""The per-job analysis: a pure function of (rule pack, job files), run wherever the engine runs.

`match_report` is what `denpex-kb match --format json PATHS` prints (the same library calls as
the CLI: collect_sources -> Engine.analyse -> suggest_related, file names made displayable).
`analyse_job` wraps it into a fleet record; it never raises: an unreadable or corrupt job
becomes a record with `status: "error"`. Everything here is picklable and needs no state
but a per-process cache of compiled engines, so a process pool, Ray, Spark or Dask can call
it as it is.
"""

from __future__ import annotations

import hashlib
import os
import socket
import time
from typing import Any

from .. import __version__
from ..termsafe import displayable
from .jobs import Job, content_hash, iso

RECORD_FORMAT = "denpex-fleet-record"
RECORD_FORMAT_VERSION = "1.0"

# One compiled engine per process and pack (compiling the signal set costs ~0.1-1 s).
_ENGINES: dict[str, Any] = {}
# The pack a pool worker was started with (set by `init_worker`).
_PACK: dict[str, Any] | None = None


def engine_for(pack: dict[str, Any]):  # noqa: ANN201 - engine.Engine
    from ..engine import Engine

    key = pack["content_hash"]
    eng = _ENGINES.get(key)
    if eng is None:
        _ENGINES.clear()  # a worker runs one pack at a time; don't keep old ones
        eng = _ENGINES[key] = Engine(pack)
    return eng


def match_report(pack: dict[str, Any], paths: list[str], kb_dir: str | None = None) -> dict:
    """The report `denpex-kb match --format json PATHS` prints (without --check). Raises the
    engine's InputError when the paths cannot be read at all."""
    from ..engine import collect_sources, suggest_related
    from ..index import IndexError_

    report = engine_for(pack).analyse(collect_sources(list(paths)))
    try:
        suggest_related(report, kb_dir, pack=pack)
    except (OSError, IndexError_):
        report["related"] = []  # as the CLI: an unusable index cache only costs the hints
    return displayable(report)


def analyser_id(kb_dir: str | None = None) -> str:
    """What, besides the pack, decides a report: this package's version and the text index the
    suggestions come from (keyed by the knowledge base's content)."""
    try:
        from ..index import kb_fingerprint
        from ..kb import default_kb_dir

        fp = kb_fingerprint(kb_dir if kb_dir is not None else default_kb_dir())[:16]
    except OSError:
        fp = "none"
    return f"denpex-kb {__version__}; index {fp}"


def cache_key(content: str, pack_hash: str, analyser: str) -> str:
    return hashlib.sha256(f"{content}\0{pack_hash}\0{analyser}".encode()).hexdigest()[:32]


def _worker() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _record(job: Job, pack: dict[str, Any], analyser: str, **fields: Any) -> dict:
    """A fleet record with every member present (the store and the aggregates rely on it)."""
    rec: dict[str, Any] = {
        "format": RECORD_FORMAT,
        "format_version": RECORD_FORMAT_VERSION,
        "job": job.id,
        "paths": list(job.paths),
        "meta": job.meta,
        "content_hash": None,
        "bytes": None,
        "cache_key": None,
        "pack_hash": pack["content_hash"],
        "analyser": analyser,
        "job_time": job.time,
        "job_time_source": "manifest" if job.time else None,
        "analysed_at": None,
        "seconds": None,
        "worker": None,
        "status": "ok",
        "error": None,
        "report": None,
    }
    rec.update(fields)
    return rec


def error_record(job: Job, pack: dict[str, Any], analyser: str, message: str) -> dict:
    """The record of a job whose analysis did not finish (the worker died)."""
    return _record(job, pack, analyser, analysed_at=iso(time.time()), status="error", error=message)


def analyse_job(
    pack: dict[str, Any],
    job: Job,
    kb_dir: str | None = None,
    analyser: str = "",
    known: frozenset[str] = frozenset(),
) -> dict | None:
    """The fleet record of one job, or None when `known` holds its cache key (already analysed
    with this pack and analyser). Never raises for a bad job."""
    from ..engine import InputError, RulesError

    t0 = time.time()
    rec = _record(job, pack, analyser, worker=_worker())
    try:
        digest, size, newest = content_hash(job)
    except OSError as exc:
        # Unreadable: no cache key, so the next run tries again (it may be readable then).
        rec["status"] = "error"
        rec["error"] = f"{exc.filename or job.id}: {exc.strerror or type(exc).__name__}"
    else:
        key = cache_key(digest, pack["content_hash"], analyser)
        if key in known:
            return None
        rec.update(content_hash=digest, bytes=size, cache_key=key)
        if not job.time and newest is not None:
            rec["job_time"], rec["job_time_source"] = iso(newest), "mtime"
        try:
            rec["report"] = match_report(pack, list(job.paths), kb_dir)
        except (InputError, RulesError) as exc:
            rec["status"], rec["error"] = "error", str(exc)
        except OSError as exc:
            rec["status"] = "error"
            rec["error"] = f"{exc.filename or job.id}: {exc.strerror or exc}"
        except MemoryError:
            rec["status"], rec["error"] = "error", "out of memory"
        except Exception as exc:  # noqa: BLE001 - a bug must cost one job, not the batch
            rec["status"], rec["error"] = "error", f"internal error: {type(exc).__name__}: {exc}"
    rec["analysed_at"] = iso(time.time())
    rec["seconds"] = round(time.time() - t0, 4)
    return rec


# --- process-pool plumbing ---------------------------------------------------------------------
def init_worker(pack: dict[str, Any]) -> None:
    global _PACK
    _PACK = pack
    engine_for(pack)


def pool_task(job: Job, kb_dir: str | None, analyser: str, known: frozenset[str]) -> dict | None:
    assert _PACK is not None, "init_worker was not run"
    return analyse_job(_PACK, job, kb_dir, analyser, known)
