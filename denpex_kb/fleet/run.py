"""Run the per-job analysis over many jobs: serially, on a local process pool, or as Ray tasks.

No scheduler of our own: the pool is the standard library's, Ray is Ray. Each finished record is
appended to the records file as soon as it arrives (in completion order), so a killed run keeps
everything it finished. Jobs whose (log content, pack, analyser) key is already in the file are
skipped inside the worker, after it hashed the logs (the driver never reads a log).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .analyse import analyse_job, analyser_id, error_record, init_worker, pool_task
from .jobs import Job
from .store import RecordLog


@dataclass
class RunSummary:
    jobs: int = 0
    analysed: int = 0
    skipped: int = 0
    errors: int = 0
    bytes: int = 0
    seconds: float = 0.0
    engine: str = "local"
    workers: int = 1
    records: str = ""
    error_jobs: list[str] = field(default_factory=list)

    def line(self) -> str:
        rate = self.analysed / self.seconds if self.seconds else 0.0
        return (
            f"{self.jobs} job(s): {self.analysed} analysed ({self.errors} error(s)), "
            f"{self.skipped} already done; {self.seconds:.1f}s, {rate:.1f} jobs/s, "
            f"{self.engine} x{self.workers}; records in {self.records}"
        )


def _warm_index(kb_dir: str | None) -> None:
    """Build the text index once in the driver, not concurrently in every worker."""
    try:
        from ..index import cached_index

        cached_index(kb_dir).close()
    except Exception:  # noqa: BLE001 - suggestions only; workers fall back as the CLI does
        pass


def _serial(pack, jobs, kb_dir, analyser, known) -> Iterator[dict | None]:  # noqa: ANN001
    for job in jobs:
        yield analyse_job(pack, job, kb_dir, analyser, known(job.id))


def _pool(pack, jobs, kb_dir, analyser, known, workers: int) -> Iterator[dict | None]:  # noqa: ANN001
    """A bounded number of jobs in flight; a worker that dies (segfault, OOM kill) costs only the
    job it ran: the jobs in flight then are retried one by one in fresh single-worker pools."""
    it = iter(jobs)
    limit = workers * 4
    retry: list[Job] = []
    with ProcessPoolExecutor(workers, initializer=init_worker, initargs=(pack,)) as ex:
        inflight: dict[Any, Job] = {}
        broken = False
        while True:
            while not broken and len(inflight) < limit:
                job = next(it, None)
                if job is None:
                    break
                try:
                    inflight[ex.submit(pool_task, job, kb_dir, analyser, known(job.id))] = job
                except BrokenProcessPool:
                    retry.append(job)
                    broken = True
            if not inflight:
                break
            done, _ = wait(inflight, return_when=FIRST_COMPLETED)
            for fut in done:
                job = inflight.pop(fut)
                try:
                    rec = fut.result()
                except BrokenProcessPool:
                    retry.append(job)
                    broken = True
                    continue
                except Exception as exc:  # noqa: BLE001 - e.g. a result that did not pickle
                    rec = error_record(job, pack, analyser, f"{type(exc).__name__}: {exc}")
                yield rec
    for job in retry:
        yield _isolated(pack, job, kb_dir, analyser, known(job.id))
    if broken:
        yield from _pool(pack, list(it), kb_dir, analyser, known, workers)


def _isolated(pack, job: Job, kb_dir, analyser: str, known: frozenset[str]) -> dict | None:  # noqa: ANN001
    with ProcessPoolExecutor(1, initializer=init_worker, initargs=(pack,)) as ex:
        try:
            return ex.submit(pool_task, job, kb_dir, analyser, known).result()
        except BrokenProcessPool:
            return error_record(
                job,
                pack,
                analyser,
                "the worker analysing this job died (killed, out of memory or crashed)",
            )


# --- Ray --------------------------------------------------------------------------------------
def ray_available() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def _ray(pack, jobs, kb_dir, analyser, known, address: str | None, workers: int):  # noqa: ANN001, ANN202
    """Ray tasks, at most a few per CPU in flight. The pack goes into the object store once;
    each worker process compiles its engine once per pack (analyse.engine_for)."""
    try:
        import ray
    except ImportError:
        raise RuntimeError(
            "the Ray engine needs the 'ray' extra: pip install 'denpex-kb[ray]'"
        ) from None
    started = False
    if not ray.is_initialized():
        kw: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if address:
            kw["address"] = address
        elif workers:
            kw["num_cpus"] = workers
        ray.init(**kw)
        started = True
    try:
        task = ray.remote(_ray_task)
        pack_ref = ray.put(pack)
        cpus = int(ray.cluster_resources().get("CPU", 1)) or 1
        limit = max(2, cpus * 4)
        it = iter(jobs)
        inflight: dict[Any, Job] = {}
        while True:
            while len(inflight) < limit:
                job = next(it, None)
                if job is None:
                    break
                # the ref travels inside a list so that Ray does not fetch the pack per task
                ref = task.remote(
                    [pack_ref], pack["content_hash"], job, kb_dir, analyser, known(job.id)
                )
                inflight[ref] = job
            if not inflight:
                break
            ready, _ = ray.wait(list(inflight), num_returns=1)
            for ref in ready:
                job = inflight.pop(ref)
                try:
                    yield ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - a lost worker: record it, go on
                    msg = f"the Ray task failed: {type(exc).__name__}: {exc}"
                    yield error_record(job, pack, analyser, msg[:2000])
    finally:
        if started:
            ray.shutdown()


def _ray_task(pack_box, pack_hash, job, kb_dir, analyser, known):  # noqa: ANN001, ANN202
    from . import analyse

    if pack_hash not in analyse._ENGINES:
        import ray

        analyse.init_worker(ray.get(pack_box[0]))
    return analyse.analyse_job(analyse._PACK, job, kb_dir, analyser, known)


# ---------------------------------------------------------------------------------------------
def run_fleet(
    jobs: list[Job],
    records: Path,
    pack: dict[str, Any],
    kb_dir: str | None = None,
    workers: int | None = None,
    engine: str = "local",
    ray_address: str | None = None,
    progress: Callable[[dict], None] | None = None,
) -> RunSummary:
    """Analyse every job not yet in `records` (same logs, same pack) and append its record."""
    t0 = time.perf_counter()
    workers = workers or os.cpu_count() or 1
    analyser = analyser_id(kb_dir)
    _warm_index(kb_dir)
    s = RunSummary(jobs=len(jobs), engine=engine, workers=workers, records=str(records))
    with RecordLog(records) as log:
        if engine == "serial" or (engine == "local" and workers == 1 and len(jobs) < 2):
            stream = _serial(pack, jobs, kb_dir, analyser, log.known_for)
        elif engine == "local":
            stream = _pool(pack, jobs, kb_dir, analyser, log.known_for, workers)
        elif engine == "ray":
            stream = _ray(pack, jobs, kb_dir, analyser, log.known_for, ray_address, workers)
        else:
            raise ValueError(f"unknown engine {engine!r}")
        for rec in stream:
            if rec is None:
                s.skipped += 1
                continue
            log.append(rec)
            s.analysed += 1
            s.bytes += rec.get("bytes") or 0
            if rec["status"] != "ok":
                s.errors += 1
                s.error_jobs.append(rec["job"])
            if progress is not None:
                progress(rec)
    s.seconds = time.perf_counter() - t0
    return s
