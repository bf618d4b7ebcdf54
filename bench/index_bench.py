"""Benchmark of the full-text index.

1. Ranking quality: mean reciprocal rank of the target entry over perturbed error lines
   (denpex_kb.evalset: every positive signal's example lines with numbers, paths and addresses
   changed), and the share ranked first.
2. Latency on a big paste: one query against a generated 50 MB multi-rank log, reported next to
   a baseline measured in the same process (reading the same file from the page cache).

Usage: python bench/index_bench.py [--kb DIR] [--mb 50]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from denpex_kb.evalset import probes
from denpex_kb.index import TextIndex, build_index
from denpex_kb.kb import load_kb

NOISE = [
    "[2026-11-29 19:02:25,487] [INFO] [launch.py:162:main] WORLD INFO DICT: {{'node-{h}': [0, 1, 2, 3]}}",
    "node-{h}:{r}: node-{h}:{pid}:{pid} [{r}] NCCL INFO Channel 0{c}/08 : {r}[{r}] -> {s}[{s}] via P2P/IPC",
    "[default{r}]:[2026-11-29 10:00:0{c},123] [INFO] [logging.py:107:log_dist] [Rank {r}] step={step}, "
    "skipped=0, lr=[0.0001], mom=[(0.9, 0.999)]",
    " {pct}%|##########          | {step}/100000 [00:0{c}<12:00, 3.2it/s]",
    "[rank{r}]:/opt/venv/lib/python3.11/site-packages/torch/c10d_logger.py:83: FutureWarning: deprecated",
]
FAILURE = (
    "[rank3]: Traceback (most recent call last):\n"
    '[rank3]:   File "/work/train.py", line 88, in <module>\n'
    '[rank3]:   File "/opt/venv/lib/python3.11/site-packages/deepspeed/runtime/engine.py", line 2263, in step\n'
    "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 3 has a "
    "total capacity of 79.19 GiB of which 4.75 MiB is free.\n"
)


def make_paste(path: Path, megabytes: int) -> None:
    rnd = random.Random(7)
    target = megabytes * 1024 * 1024
    with path.open("w") as out:
        size = step = 0
        while size < target:
            step += 1
            line = rnd.choice(NOISE).format(
                h=rnd.randint(0, 63),
                r=rnd.randint(0, 7),
                s=rnd.randint(0, 7),
                c=rnd.randint(0, 7),
                pid=rnd.randint(1000, 99999),
                step=step,
                pct=step % 100,
            )
            out.write(line + "\n")
            size += len(line) + 1
            if step == 400_000:
                out.write(FAILURE)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kb", default=None, help="knowledge base folder (default: bundled kb/)")
    ap.add_argument("--mb", type=int, default=50, help="size of the generated paste")
    args = ap.parse_args()

    kb = load_kb(args.kb)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        ix = TextIndex(build_index(kb, Path(tmp) / "ix"))
        build_s = time.perf_counter() - t0

        ranks: list[int] = []
        misses: list[str] = []
        for probe in probes(kb):
            hits = [h.id for h in ix.search(probe.variant, limit=20)]
            rank = hits.index(probe.entry_id) + 1 if probe.entry_id in hits else 0
            ranks.append(rank)
            if rank != 1:
                misses.append(
                    f"  rank {rank or '>20'} {probe.entry_id}/{probe.signal_id}: {probe.variant[:100]}"
                )
        mrr = statistics.fmean(1 / r if r else 0 for r in ranks) if ranks else 0.0
        first = sum(r == 1 for r in ranks)

        paste = Path(tmp) / "paste.log"
        make_paste(paste, args.mb)
        t0 = time.perf_counter()
        data = paste.read_bytes()
        read_s = time.perf_counter() - t0
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            hits = ix.search(data.decode("utf-8", errors="replace"), limit=5)
            times.append(time.perf_counter() - t0)
        ix.close()

    print(f"entries: {len(kb.entries)}   index build: {build_s:.2f} s")
    print(
        f"ranking: {len(ranks)} perturbed lines, MRR {mrr:.3f}, ranked first {first}/{len(ranks)}"
    )
    if misses:
        print("not first:")
        print("\n".join(misses[:40]))
    med = statistics.median(times)
    print(
        f"{args.mb} MB paste: query {med:.3f} s median of 3 (top hit: {hits[0].id if hits else None}); "
        f"baseline read {read_s:.3f} s; ratio {med / read_s:.1f}x the read"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
