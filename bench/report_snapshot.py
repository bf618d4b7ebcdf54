"""Snapshot the engine's reports on every log the project holds, to compare two versions of the
engine byte for byte (issue 15: every speed-up must leave each report unchanged).

    PYTHONPATH=. python bench/report_snapshot.py OUT.json [--jobs N] [--scanner re2|hyperscan]
    python bench/report_snapshot.py --diff A.json B.json

Inputs: every file under tests/logs, tests/fixtures, kb/captured, examples/ (each file alone),
each of those folders as one multi-file input, and every KB entry example's log. Each report
is stored as its JSON and its text rendering (sha256 of each, plus the JSON for diffs).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ["tests/logs", "tests/fixtures", "kb/captured", "examples"]


def _inputs() -> list[Path]:
    out: list[Path] = []
    for d in FOLDERS:
        for p in sorted((ROOT / d).rglob("*")):
            if p.is_file() and not p.name.startswith("."):
                out.append(p)
    return out


def snapshot(jobs: int | None, scanner: str | None) -> dict[str, dict[str, str]]:
    from denpex_kb.engine import Engine, InputError, load_rulepack, render_markdown, render_text
    from denpex_kb.kb import load_kb

    eng = Engine(load_rulepack(kb_dir=ROOT / "kb"), scanner=scanner)
    kwargs = {"jobs": jobs} if jobs is not None else {}

    def one(key: str, run) -> None:  # noqa: ANN001
        try:
            rep = run()
        except InputError as exc:
            res[key] = {"error": str(exc)}
            return
        js = json.dumps(rep, sort_keys=True, default=str)
        res[key] = {
            "json": js,
            "text": hashlib.sha256(render_text(rep).encode()).hexdigest(),
            "md": hashlib.sha256(render_markdown(rep).encode()).hexdigest(),
        }

    res: dict[str, dict[str, str]] = {}
    for p in _inputs():
        rel = str(p.relative_to(ROOT))
        one(rel, lambda p=p: eng.analyse_paths([str(p)], **kwargs))
    for d in FOLDERS:
        one(d + "/", lambda d=d: eng.analyse_paths([str(ROOT / d)], **kwargs))
    for e in load_kb(ROOT / "kb").entries:
        for ex in e.examples:
            one(f"kb:{e.id}/{ex.name}", lambda ex=ex: eng.analyse_bytes(ex.log.encode()))
    return res


def diff(a: dict, b: dict) -> int:
    bad = 0
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            bad += 1
            print(f"DIFFERS: {k}")
    print(f"{len(a)} vs {len(b)} reports, {bad} differ")
    return 1 if bad else 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?")
    ap.add_argument("--jobs", type=int)
    ap.add_argument("--scanner")
    ap.add_argument("--diff", nargs=2)
    ap.add_argument(
        "--block-size",
        type=int,
        help="read blocks of this many bytes and split every file (pieces of --piece-chunks "
        "blocks) whatever its size: exercises the split points of --jobs on small logs",
    )
    ap.add_argument("--piece-chunks", type=int, default=1)
    args = ap.parse_args()
    if args.block_size:
        from denpex_kb.engine import read, split

        read.BLOCK_SIZE = args.block_size
        split.SPLIT_MIN_BYTES = 0
        split.PIECE_CHUNKS = args.piece_chunks
    if args.diff:
        a, b = (json.loads(Path(x).read_text()) for x in args.diff)
        sys.exit(diff(a, b))
    res = snapshot(args.jobs, args.scanner)
    Path(args.out).write_text(json.dumps(res, sort_keys=True))
    print(f"{len(res)} reports -> {args.out}")


if __name__ == "__main__":
    main()
