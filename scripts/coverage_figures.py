"""Regenerate the measured figures in kb/COVERAGE.md: the corpus table (from `denpex-kb eval
tests/corpus --format json`) and the survey block and ranking (from `python -m
denpex_kb.survey`). Only the text between the `<!-- figures:NAME -->` and `<!-- /figures:NAME -->`
markers is rewritten; the prose around them is written by hand.

    .venv/bin/python scripts/coverage_figures.py          # rewrite kb/COVERAGE.md
    .venv/bin/python scripts/coverage_figures.py --check  # exit 1 if it is out of date
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
COVERAGE = ROOT / "kb" / "COVERAGE.md"


def _pct(k: int, n: int) -> str:
    return f"{100 * k / n:.1f}%" if n else "-"


def part_row(name: str, cases: list[dict]) -> str:
    n = len(cases)
    if not n:
        return f"| {name} | 0 | - | - | - | - | - | - |"
    top1 = sum(c["right"] for c in cases)
    top3 = sum(c["top3"] for c in cases)
    abstain = sum(c["outcome"] == "abstain" for c in cases)
    wrong = sum(c["outcome"] in ("confident-wrong", "false-positive") for c in cases)
    conf = [c for c in cases if c["confident"]]
    cov = [c for c in cases if c["coverage"] == "covered"]
    cov_right = _pct(sum(c["right"] for c in cov), len(cov))
    return (
        f"| {name} | {n} | {_pct(top1, n)} | {_pct(top3, n)} | {_pct(abstain, n)} | "
        f"{_pct(wrong, n)} | {sum(c['right'] for c in conf)}/{len(conf)} | {cov_right} |"
    )


def corpus_table(report: dict, commit: str, entries: int) -> str:
    cases = report["cases"]
    hold = [c for c in cases if c["split"] == "holdout"]
    rows = [
        "| part | cases | top-1 | top-3 | abstain | confident-wrong | confident answers right "
        "| covered top-1 |",
        "|---|---|---|---|---|---|---|---|",
        part_row(
            "holdout, never cited (the generalisation figure)", [c for c in hold if not c["cited"]]
        ),
        part_row("holdout, all", hold),
        part_row("dev, all", [c for c in cases if c["split"] == "dev"]),
        part_row("whole corpus", cases),
    ]
    head = (
        f"`denpex-kb eval tests/corpus` at commit {commit} ({entries} entries, {len(cases)} cases):"
    )
    return head + "\n\n" + "\n".join(rows)


def calibration_table(report: dict) -> str:
    rows = ["| verdict | answers | first answer right |", "|---|---|---|"]
    for verdict, v in sorted(report["verdicts"].items()):
        rows.append(f"| {verdict} | {v['n']} | {v['right']} ({_pct(v['right'], v['n'])}) |")
    return "\n".join(rows)


def survey_block(text: str) -> str:
    head, _, ranking = text.partition("\n\n")
    return "```text\n" + head.strip() + "\n```\n\n" + ranking.strip()


def replace_between(doc: str, name: str, body: str) -> str:
    start, end = f"<!-- figures:{name} -->", f"<!-- /figures:{name} -->"
    i, j = doc.find(start), doc.find(end)
    if i < 0 or j < i:
        raise SystemExit(f"{COVERAGE}: markers {start} ... {end} not found")
    return doc[: i + len(start)] + "\n" + body.strip() + "\n" + doc[j:]


def _run(*cmd: str) -> str:
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    if p.returncode not in (0, 1) or not p.stdout.strip():  # eval exits 1 on a regression only
        last = (p.stderr.strip().splitlines() or ["no output"])[-1]
        raise SystemExit(f"coverage_figures: {' '.join(cmd[1:3])} failed: {last}")
    return p.stdout


def _json(*cmd: str) -> Any:
    try:
        return json.loads(_run(*cmd))
    except ValueError as exc:
        raise SystemExit(f"coverage_figures: {' '.join(cmd[1:4])} gave no JSON ({exc})") from None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when kb/COVERAGE.md is stale")
    args = ap.parse_args(argv)
    py = sys.executable
    report = _json(py, "-m", "denpex_kb", "eval", "-q", "tests/corpus", "--format", "json")
    git = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    )
    commit = git.stdout.strip() or "unknown"  # a source tree without git still gets its figures
    entries = _json(py, "-m", "denpex_kb", "list", "--format", "json")
    doc = COVERAGE.read_text(encoding="utf-8")
    new = replace_between(doc, "corpus", corpus_table(report, commit, len(entries)))
    new = replace_between(new, "calibration", calibration_table(report))
    new = replace_between(new, "survey", survey_block(_run(py, "-m", "denpex_kb.survey")))
    if args.check:
        # the commit line changes with every commit: compare the figures only
        strip = lambda s: "\n".join(ln for ln in s.splitlines() if "at commit" not in ln)  # noqa: E731
        return 0 if strip(new) == strip(doc) else 1
    if new != doc:
        sys.path.insert(0, str(ROOT))
        from denpex_kb.atomic import write_file

        write_file(COVERAGE, new.encode("utf-8"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
