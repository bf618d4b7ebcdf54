"""Benchmark of `denpex-kb fleet` (issue 16): N jobs through the local pool with 1 and 2
workers and through Ray local mode; jobs/s, GB/s, speed-up, RSS per worker.

    .venv/bin/python bench/fleet_bench.py [--jobs 200] [--ray]

Jobs are written to /tmp (never committed): half are synthetic multi-rank logs (the generator of
bench/match_bench.py, about 1.5 MB each, with a failure at the end), half are captured logs from
kb/captured/ behind a shorter synthetic prefix. Each configuration runs in a fresh process, into
a fresh records file; a sampler thread reads the RSS of the worker processes from /proc every
0.1 s. Results are recorded in bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TMP = Path(tempfile.gettempdir()) / "denpex-fleet-bench"
sys.path.insert(0, str(ROOT / "bench"))


def make_jobs(folder: Path, n: int) -> int:
    from match_bench import FAILURE, chunk

    captured = sorted((ROOT / "kb" / "captured").glob("*.log"))
    folder.mkdir(parents=True, exist_ok=True)
    rnd = random.Random(16)
    base = chunk(1)
    total = 0
    for i in range(n):
        if i % 2 == 0:
            data = base + FAILURE
        else:
            data = base[: len(base) // 4] + rnd.choice(captured).read_bytes()
        (folder / f"job-{i:05d}.log").write_bytes(data)
        total += len(data)
    return total


class Sampler(threading.Thread):
    """Peak RSS (MiB) per worker process: children of this process, or Ray task workers."""

    def __init__(self, ray: bool) -> None:
        super().__init__(daemon=True)
        self.ray, self.peak, self.stop = ray, {}, threading.Event()

    def _workers(self) -> list[int]:
        me, out = os.getpid(), []
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                if self.ray:
                    cmd = Path(f"/proc/{d}/cmdline").read_bytes()
                    if cmd.startswith(b"ray::"):
                        out.append(int(d))
                else:
                    stat = Path(f"/proc/{d}/stat").read_text()
                    if int(stat.rsplit(")", 1)[1].split()[1]) == me:
                        out.append(int(d))
            except (OSError, ValueError, IndexError):
                continue
        return out

    def run(self) -> None:
        while not self.stop.is_set():
            for pid in self._workers():
                try:
                    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                        if line.startswith("VmRSS:"):
                            mb = int(line.split()[1]) / 1024
                            self.peak[pid] = max(self.peak.get(pid, 0.0), mb)
                except OSError:
                    pass
            time.sleep(0.1)


def one(engine: str, workers: int, folder: Path, records: Path) -> dict:
    from denpex_kb import fleet
    from denpex_kb.engine import load_rulepack

    pack = load_rulepack()
    jobs = fleet.discover([str(folder)])
    sampler = Sampler(engine == "ray")
    sampler.start()
    load0 = os.getloadavg()
    s = fleet.run_fleet(jobs, records, pack, workers=workers, engine=engine)
    sampler.stop.set()
    sampler.join()
    rss = sorted(sampler.peak.values())
    return {
        "engine": engine,
        "workers": workers,
        "jobs": s.analysed,
        "errors": s.errors,
        "seconds": round(s.seconds, 2),
        "jobs_per_s": round(s.analysed / s.seconds, 1),
        "gb_per_s": round(s.bytes / s.seconds / 1e9, 3),
        "bytes": s.bytes,
        "worker_rss_mb": [round(x) for x in rss],
        "load_before": [round(x, 2) for x in load0],
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--ray", action="store_true", help="also Ray local mode (needs the extra)")
    ap.add_argument("--one", nargs=4, metavar=("ENGINE", "WORKERS", "FOLDER", "RECORDS"))
    a = ap.parse_args()
    if a.one:
        print(json.dumps(one(a.one[0], int(a.one[1]), Path(a.one[2]), Path(a.one[3]))))
        return
    rows = []
    configs = [("local", 1, a.jobs), ("local", 2, a.jobs), ("local", 2, 2 * a.jobs)]
    if a.ray:
        configs.append(("ray", 2, a.jobs))
    for engine, workers, n in configs:
        folder = TMP / f"jobs-{n}"
        if not folder.is_dir():
            make_jobs(folder, n)
        records = TMP / f"records-{engine}-{workers}-{n}.jsonl"
        records.unlink(missing_ok=True)
        cmd = [sys.executable, __file__, "--one", engine, str(workers), str(folder), str(records)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(json.dumps(row), flush=True)
    base = rows[0]["seconds"]
    print(f"speed-up 1 -> 2 workers (local pool, {a.jobs} jobs): {base / rows[1]['seconds']:.2f}x")
    if a.ray:
        print(f"Ray local x2 vs pool x1: {base / rows[-1]['seconds']:.2f}x")
    print(f"cpus: {os.cpu_count()}, load average now: {os.getloadavg()}")


if __name__ == "__main__":
    main()
