"""Peak memory of `denpex-kb match` by input size and kind (issue 12: bounded by design).

    .venv/bin/python bench/memory_bench.py [--size-mb 1024] [--dense-mb 1024]

Measures, each in a fresh process (max RSS of the child only): a 100 MB and a SIZE MB synthetic
multi-rank log (the generator of match_bench.py) given as a file, the SIZE MB log on stdin, and a
hit-dense log in which every line is a signal hit (NCCL watchdog timeouts from 8 ranks). The
target: every figure under 200 MB, and each large input within 10 % of the 100 MB file's. Logs
are written to /tmp, never committed. Results are recorded in bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from match_bench import CLI, TMP, make_log  # noqa: E402

WATCHDOG = (
    "[rank{r}]:[E1129 11:00:{s:02d}.200000000 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum={n}, OpType=ALLREDUCE, NumelIn=9801523, "
    "NumelOut=9801523, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.\n"
)


def make_dense(path: Path, size_mb: int) -> None:
    if path.exists() and path.stat().st_size >= size_mb << 20:
        return
    block = "".join(WATCHDOG.format(r=i % 8, s=i % 60, n=800 + i) for i in range(4096)).encode()
    with open(path, "wb") as f:
        for _ in range((size_mb << 20) // len(block) + 1):
            f.write(block)


def peak(cmd: list[str], env: dict, stdin: Path | None = None) -> tuple[float, float]:
    """(max RSS of the child in MB, seconds), measured by a wrapper so nothing else counts."""
    redirect = f"stdin=open({str(stdin)!r}, 'rb')," if stdin else ""
    code = (
        "import resource,subprocess,sys,time;t=time.perf_counter();"
        f"subprocess.run({cmd!r}, {redirect} stdout=subprocess.DEVNULL);"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, time.perf_counter()-t)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    rss, secs = out.stdout.split()
    return int(rss) / 1024, float(secs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--dense-mb", type=int, default=1024)
    args = ap.parse_args()
    TMP.mkdir(exist_ok=True)
    env = dict(os.environ, DENPEX_KB_CACHE=str(TMP / "cache"))
    small, big = TMP / "synthetic-100mb.log", TMP / f"synthetic-{args.size_mb}mb.log"
    dense = TMP / f"dense-{args.dense_mb}mb.log"
    make_log(small, 100)
    make_log(big, args.size_mb)
    make_dense(dense, args.dense_mb)
    subprocess.run(CLI + ["match", str(small)], env=env, capture_output=True)  # warm the pack cache
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    runs = [
        ("100 MB file", CLI + ["match", str(small)], None),
        (f"{args.size_mb} MB file", CLI + ["match", str(big)], None),
        (f"{args.size_mb} MB on stdin", CLI + ["match", "-"], big),
        (f"{args.dense_mb} MB hit-dense file", CLI + ["match", str(dense)], None),
    ]
    base = None
    for label, cmd, stdin in runs:
        t0 = time.time()
        rss, secs = peak(cmd, env, stdin)
        base = base or rss
        print(
            f"{label}: peak RSS {rss:.0f} MB ({(rss / base - 1) * 100:+.1f}% vs 100 MB), "
            f"{secs:.1f} s wall (started {time.strftime('%H:%M:%S', time.localtime(t0))})"
        )
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
