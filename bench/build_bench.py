"""Benchmark of `denpex-kb build` at scale (issue 15): seconds per entry for knowledge bases of
growing size, made of synthetic entries (copies of the bundled ones under new ids, so every
page, signal and example is as heavy as a real one).

    .venv/bin/python bench/build_bench.py [--sizes 185,500,1000]

Prints, per size, the wall time of a whole build (rule pack, vectors, text index, hub) and the
time per entry; the target is under 0.05 s per entry at 1,000 entries. The synthetic folders
live in /tmp and are never committed. Results are recorded in bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KB = ROOT / "kb"
CLI = [sys.executable, "-m", "denpex_kb.cli"]
TMP = Path(tempfile.gettempdir()) / "denpex-build-bench"
ID = re.compile(r"^id: (\S+)$", re.M)


def synthetic_kb(size: int) -> Path:
    """The bundled entries, plus copies named `<id>-synN` until there are `size` entries.
    Copies keep their look-alike links to the originals (which exist) and their examples."""
    dest = TMP / str(size) / "kb"  # named kb: entries cite kb/captured/... from the folder above
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(KB, dest)
    _link_examples(dest.parent)
    entries = sorted(
        p for p in dest.rglob("*.yaml") if p.name != "tags.yaml" and "survey" not in p.parts
    )
    n, copy = len(entries), 0
    while n < size:
        src = entries[copy % len(entries)]
        text = src.read_text(encoding="utf-8")
        old = ID.search(text).group(1)
        new = f"{old}-syn{copy // len(entries) + 1}"
        (src.parent / f"{new}.yaml").write_text(ID.sub(f"id: {new}", text, count=1), "utf-8")
        n += 1
        copy += 1
    return dest


def _link_examples(root: Path) -> None:
    """Entries may cite files beside kb/ (examples/, tests/logs/): make them resolve."""
    for name in ("examples", "tests"):
        if (ROOT / name).exists() and not (root / name).exists():
            (root / name).symlink_to(ROOT / name)


def build_seconds(kb: Path) -> float:
    out = TMP / "out"
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, DENPEX_KB_CACHE=str(TMP / "cache"))
    t = time.perf_counter()
    p = subprocess.run(
        [*CLI, "build", "-q", "--kb", str(kb), "-o", str(out)],
        env=env,
        capture_output=True,
        text=True,
    )
    secs = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"build failed on {kb}: {p.stderr.strip()[-400:]}")
    return secs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="185,500,1000")
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    print("| entries | build (s) | s per entry |")
    print("|---|---|---|")
    for size in (int(s) for s in args.sizes.split(",")):
        kb = synthetic_kb(size)
        count = sum(
            1 for p in kb.rglob("*.yaml") if p.name != "tags.yaml" and "survey" not in p.parts
        )
        secs = build_seconds(kb)
        print(f"| {count} | {secs:.1f} | {secs / count:.3f} |", flush=True)
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
