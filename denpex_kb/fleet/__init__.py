"""`denpex-kb fleet`: the same rule pack over many job logs, with fleet aggregates.

    from denpex_kb.engine import load_rulepack
    from denpex_kb.fleet import discover, run_fleet, write_reports
    pack = load_rulepack()
    jobs = discover(["/logs/jobs"], rank_of=rank_in_name(pack))
    run_fleet(jobs, Path("out/records.jsonl"), pack, workers=2)        # or engine="ray"
    write_reports(Path("out"), Path("out/records.jsonl"), pack)

The per-job analysis (`analyse.analyse_job`) is a pure function of (pack, job files) and is
what every engine runs; see docs/fleet.md for Spark and Dask.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .aggregate import aggregate
from .analyse import analyse_job, match_report
from .jobs import Job, JobError, discover
from .render import render_html, render_markdown
from .run import RunSummary, ray_available, run_fleet
from .store import iter_records, latest_records

__all__ = [
    "Job",
    "JobError",
    "RunSummary",
    "aggregate",
    "analyse_job",
    "discover",
    "iter_records",
    "latest_records",
    "match_report",
    "rank_in_name",
    "ray_available",
    "render_html",
    "render_markdown",
    "run_fleet",
    "write_reports",
]


def rank_in_name(pack: dict[str, Any]):  # noqa: ANN201
    """`name -> rank or None`: the rank the pack's file-name rules find in a file name."""
    from ..engine.attribute import Attributor

    attr = Attributor(pack["globals"])
    return lambda name: attr.file_rank(name)[0]


def write_reports(
    out_dir: Path,
    records: Path,
    pack: dict[str, Any] | None = None,
    min_suspect_jobs: int = 2,
    hub: str | None = None,
) -> dict[str, Path]:
    """report.json, report.md and report.html in `out_dir`, from the latest record per job."""
    from ..atomic import write_file

    agg = aggregate(list(iter_records(records)), pack, min_suspect_jobs=min_suspect_jobs)
    paths = {
        "json": out_dir / "report.json",
        "markdown": out_dir / "report.md",
        "html": out_dir / "report.html",
    }
    write_file(paths["json"], (json.dumps(agg, indent=1, ensure_ascii=False) + "\n").encode())
    write_file(paths["markdown"], render_markdown(agg).encode())
    write_file(paths["html"], render_html(agg, hub=hub).encode())
    return paths
