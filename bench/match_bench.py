"""Benchmark of `denpex-kb match` (issue 7): throughput vs grep -E, peak memory, start-up.

    .venv/bin/python bench/match_bench.py [--size-mb 1024] [--runs 15]

Generates synthetic multi-rank logs in /tmp (never committed), exports the bundled rule pack,
and prints the three measurements. Results are recorded in bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "denpex_kb.cli"]
TMP = Path(tempfile.gettempdir()) / "denpex-bench"


def chunk(seed: int, n_lines: int = 12_000) -> bytes:
    """About 1.5 MB of a healthy 8-rank torchrun + DeepSpeed log."""
    rnd = random.Random(seed)
    out = []
    for i in range(n_lines):
        r = rnd.randrange(8)
        k = rnd.random()
        if k < 0.35:
            out.append(
                f"[default{r}]:gpu-node-{r // 4}:{4000 + r}:{4100 + r} [{r}] NCCL INFO Channel {i % 32:02d}/0 : {r}[{r}] -> {(r + 1) % 8}[{(r + 1) % 8}] via P2P/CUMEM/read"
            )
        elif k < 0.55:
            out.append(
                f"[default{r}]:[2026-11-29 10:{i % 60:02d}:{i % 60:02d},{i % 1000:03d}] [INFO] [logging.py:107:log_dist] [Rank {r}] step={i}, skipped=0, lr=[1e-05], mom=[(0.9, 0.999)]"
            )
        elif k < 0.70:
            out.append(
                f"[default{r}]: {i % 100:2d}%|{'█' * (i % 10):<10}| {i % 1000}/1000 [01:23<01:55,  5.03it/s]"
            )
        elif k < 0.85:
            out.append(
                f"[default{r}]:[2026-11-29 10:{i % 60:02d}:00,000] [INFO] [timer.py:264:stop] epoch=0/micro_step={i}/global_step={i}, RunningAvgSamplesPerSec=120.5, CurrSamplesPerSec=121.3, MemAllocated=12.3GB, MaxMemAllocated=20.1GB"
            )
        else:
            out.append(
                f"[default{r}]:{{'loss': {rnd.random() * 3:.4f}, 'grad_norm': {rnd.random():.3f}, 'learning_rate': 1e-05, 'epoch': {i / 1e4:.2f}}}"
            )
    return ("\n".join(out) + "\n").encode()


FAILURE = (ROOT / "tests" / "logs" / "oom-rank3-watchdog-rest.log").read_bytes()


def make_log(path: Path, size_mb: int) -> None:
    if path.exists() and path.stat().st_size >= size_mb << 20:
        return
    chunks = [chunk(s) for s in range(8)]
    target = size_mb << 20
    written = 0
    with open(path, "wb") as f:
        f.write(
            b"[default0]:[2026-11-29 10:00:00,000] [INFO] [logging.py:107:log_dist] [Rank 0] DeepSpeed info: version=0.16.4, git-hash=unknown, git-branch=unknown\n"
        )
        i = 0
        while written < target:
            c = chunks[i % len(chunks)]
            f.write(c)
            written += len(c)
            i += 1
            if i % 200 == 0:  # a few failures along the way
                f.write(FAILURE)
                written += len(FAILURE)


def ere(pattern: str) -> str:
    """The pack's RE2 pattern in GNU grep -E syntax (same meaning for these patterns)."""
    return pattern.replace("(?:", "(").replace(r"\d", "[0-9]")


def rg_bytes(pattern: str) -> str:
    """The ERE pattern for ripgrep without Unicode: a non-ASCII character becomes its UTF-8
    bytes (inside a class, an alternative next to the class), as the byte-wise mode needs."""
    import re

    def esc(c: str) -> str:
        return "".join(f"\\x{b:02X}" for b in c.encode()) if not c.isascii() else c

    def cls(m: re.Match) -> str:
        body = m.group(1)
        if body.isascii():
            return m.group(0)
        ascii_part = "".join(c for c in body if c.isascii())
        wide = [esc(c) for c in body if not c.isascii()]
        return "(" + "|".join(([f"[{ascii_part}]"] if ascii_part else []) + wide) + ")"

    return "".join(esc(c) for c in re.sub(r"\[([^\]]*)\]", cls, pattern))


def timed(
    cmd: list[str], env: dict | None = None, stdin=None
) -> tuple[float, subprocess.CompletedProcess]:  # noqa: ANN001
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, env=env, stdin=stdin)
    return time.perf_counter() - t, p


def cpu_timed(cmd: list[str], env: dict | None = None, stdin=None) -> tuple[float, float]:  # noqa: ANN001
    """(wall, user + system CPU) seconds of one run: on a loaded machine the CPU time is the
    steadier figure (waiting for a core is not counted)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, stdin=stdin)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def raw_hyperscan(pats: list[tuple[str, bool]], path: Path) -> float | None:
    """A bare single-core Hyperscan scan of the signals over the file in 4 MiB reads (no line
    handling at all): the ceiling `match` is compared with."""
    try:
        import hyperscan as hs
    except ImportError:
        return None
    from denpex_kb.engine.scan import deanchor

    db = hs.Database(mode=hs.HS_MODE_BLOCK)
    flags = [hs.HS_FLAG_ALLOWEMPTY | (hs.HS_FLAG_CASELESS if ic else 0) for _, ic in pats]
    exprs = [deanchor(p).encode() for p, _ in pats]
    try:
        db.compile(expressions=exprs, ids=list(range(len(exprs))), flags=flags)
    except hs.error:
        flags = [f | hs.HS_FLAG_PREFILTER for f in flags]
        db.compile(expressions=exprs, ids=list(range(len(exprs))), flags=flags)
    n = [0]

    def on_match(*_a: object) -> None:
        n[0] += 1

    t = time.perf_counter()
    with open(path, "rb") as f:
        while chunk := f.read(4 << 20):
            db.scan(chunk, match_event_handler=on_match)
    return time.perf_counter() - t


def peak_rss_mb(cmd: list[str], env: dict) -> float:
    """Max RSS of the command, measured by a fresh wrapper so that nothing else counts."""
    code = (
        "import resource,subprocess,sys;"
        f"subprocess.run({cmd!r}, stdout=subprocess.DEVNULL);"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    return int(out.stdout.strip()) / 1024


def facts_cost(pack: dict, path: Path, size: int, runs: int = 3) -> None:
    """In-process: the same engine with and without the fact extractors (the 1.1 facts layer),
    same file, alternating runs; the ratio of the medians is its cost."""
    import copy

    from denpex_kb.engine import Engine

    bare = copy.deepcopy(pack)
    bare["globals"]["facts"] = {"tables": [], "lines": []}
    engines = {"with facts": Engine(pack), "without": Engine(bare)}
    times: dict[str, list[float]] = {k: [] for k in engines}
    for _ in range(runs):
        for label, eng in engines.items():
            t0 = time.perf_counter()
            eng.analyse_paths([str(path)])
            times[label].append(time.perf_counter() - t0)
    w, wo = (statistics.median(times[k]) for k in ("with facts", "without"))
    print(
        f"facts layer (in-process, median of {runs}): with {w:.2f} s ({size / w / 1e9:.2f} GB/s), "
        f"without {wo:.2f} s: cost {(w / wo - 1) * 100:+.1f}%"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--kb", help="knowledge base folder (default: the bundled kb/)")
    ap.add_argument("--skip-memory", action="store_true", help="skip the peak RSS and facts rows")
    args = ap.parse_args()
    kb = ["--kb", args.kb] if args.kb else []
    TMP.mkdir(exist_ok=True)
    env = dict(os.environ, DENPEX_KB_CACHE=str(TMP / "cache"))
    # An installed package has its bytecode compiled; a shell that forbids writing it would
    # make every start-up run compile every module again and measure that instead.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    pack_file = TMP / "pack.json"
    subprocess.run(
        CLI + ["export-rules", *kb, "-o", str(pack_file)], check=True, env=env, capture_output=True
    )
    pack = json.loads(pack_file.read_bytes())
    pats = [s["pattern"] for e in pack["entries"] for s in e["signals"]]
    pat_file = TMP / "patterns.ere"
    pat_file.write_text("\n".join(ere(p) for p in pats) + "\n")
    big, small = TMP / f"synthetic-{args.size_mb}mb.log", TMP / "synthetic-100mb.log"
    make_log(big, args.size_mb)
    make_log(small, 100)
    size = big.stat().st_size
    print(f"rule pack: {len(pack['entries'])} entries, {len(pats)} signal patterns")
    print(f"log: {big} ({size / 1e9:.2f} GB)")
    subprocess.run(["cat", str(big)], stdout=subprocess.DEVNULL)  # page cache

    print(f"load average before: {os.getloadavg()}")
    results: dict[str, object] = {}
    tools = [
        (
            "grep -E (LC_ALL=C)",
            ["grep", "-E", "-c", "-f", str(pat_file), str(big)],
            dict(env, LC_ALL="C"),
        ),
        ("grep -E (locale)", ["grep", "-E", "-c", "-f", str(pat_file), str(big)], env),
    ]
    if shutil.which("rg"):
        # ripgrep in its Unicode mode takes minutes on this pack (issue 15); --no-unicode is
        # the comparable setting. -j1: one thread, as grep.
        rg_file = TMP / "patterns.rg"
        rg_file.write_text("\n".join(rg_bytes(ere(p)) for p in pats) + "\n")
        rg = ["rg", "--no-unicode", "-c", "-j1", "-f", str(rg_file), str(big)]
        tools.append(("rg --no-unicode", rg, env))
    for label, cmd, genv in tools:
        t, p = timed(cmd, env=genv)
        results[label] = t
        print(f"{label}: {t:.2f} s  {size / t / 1e9:.2f} GB/s  ({p.stdout.decode().strip()} lines)")
    sig_pats = [(s["pattern"], s["ignore_case"]) for e in pack["entries"] for s in e["signals"]]
    raw = raw_hyperscan(sig_pats, big)
    if raw is not None:
        results["raw hyperscan"] = raw
        print(
            f"raw Hyperscan scan of the {len(sig_pats)} signals, one core: {raw:.2f} s  {size / raw / 1e9:.2f} GB/s"
        )
    scanners = ["re2"]
    try:
        import hyperscan  # noqa: F401

        scanners.insert(0, "hyperscan")
    except ImportError:
        print("hyperscan: not installed (no wheel for this platform); measuring re2 only")
    for sc in scanners:
        senv = dict(env, DENPEX_KB_SCANNER=sc)
        timed(CLI + ["match", *kb, "--format", "json", str(small)], env=senv)  # warm caches
        reports = {}
        for jobs in (1, 2) if sc == "hyperscan" else (1,):
            cmd = CLI + ["match", *kb, "--format", "json", "--jobs", str(jobs), str(big)]
            t, p = timed(cmd, env=senv)
            rep = json.loads(p.stdout)
            reports[jobs] = p.stdout
            results[f"{sc} jobs={jobs}"] = t
            ratios = ", ".join(
                f"vs {k} {results[k] / t:.2f}x"
                for k in ("grep -E (LC_ALL=C)", "grep -E (locale)", "rg --no-unicode")
                if k in results
            )
            if "raw hyperscan" in results:
                ratios += f", {results['raw hyperscan'] / t * 100:.0f}% of raw Hyperscan"
            print(
                f"denpex-kb match [{sc}] --jobs {jobs}: {t:.2f} s  {size / t / 1e9:.2f} GB/s  "
                f"{ratios}  -> {rep['root_cause']['id'] if rep['root_cause'] else None}"
            )
        if len(reports) == 2:
            same = reports[1] == reports[2]
            print(
                f"--jobs 1 -> 2: {results[f'{sc} jobs=1'] / results[f'{sc} jobs=2']:.2f}x, "
                f"reports {'identical' if same else 'DIFFER'}"
            )
        if args.skip_memory:
            continue
        m_big = peak_rss_mb(CLI + ["match", *kb, str(big)], senv)
        m_small = peak_rss_mb(CLI + ["match", *kb, str(small)], senv)
        print(
            f"peak RSS [{sc}]: 100 MB log {m_small:.0f} MB, {size >> 20} MB log {m_big:.0f} MB "
            f"(difference {abs(m_big - m_small) / m_small * 100:.1f}%)"
        )

    if not args.skip_memory:
        facts_cost(pack, big, size)

    tb = (ROOT / "tests" / "logs" / "oom-rank3-watchdog-rest.log").read_bytes()
    tb = (tb * (5000 // len(tb) + 1))[:5000]
    tb = tb[: tb.rfind(b"\n") + 1]
    tb_file = TMP / "traceback-5k.log"
    tb_file.write_bytes(tb)
    exe = str(Path(sys.executable).parent / "denpex-kb")
    timed([exe, "match", *kb, str(tb_file)], env=env)
    timed([exe, "search", *kb, "No space left on device"], env=env)  # builds the index once
    runs: dict[str, list[tuple[float, float]]] = {"match": [], "search": [], "pass": []}
    for _ in range(args.runs):
        with open(tb_file, "rb") as f:
            runs["match"].append(cpu_timed([exe, "match", *kb, "-"], env=env, stdin=f))
        runs["search"].append(cpu_timed([exe, "search", *kb, "No space left on device"], env=env))
        runs["pass"].append(cpu_timed([sys.executable, "-c", "pass"]))

    def med(k: str, i: int) -> float:
        return statistics.median(r[i] for r in runs[k]) * 1000

    print(
        f"startup ({args.runs} runs each, interleaved; median wall / median CPU): "
        f"match on a {len(tb)} B traceback (stdin) {med('match', 0):.0f} / {med('match', 1):.0f} ms, "
        f"search (warm) {med('search', 0):.0f} / {med('search', 1):.0f} ms, "
        f"python -c pass {med('pass', 0):.0f} / {med('pass', 1):.0f} ms; "
        f"match - pass: {med('match', 0) - med('pass', 0):.0f} / {med('match', 1) - med('pass', 1):.0f} ms"
    )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
