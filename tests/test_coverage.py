"""kb/COVERAGE.md stays in step with the knowledge base: every entry appears in it, and every
entry id its tables name exists."""

from __future__ import annotations

import re
from pathlib import Path

from denpex_kb.kb import load_kb

COVERAGE = Path(__file__).resolve().parent.parent / "kb" / "COVERAGE.md"
ID_LIKE = re.compile(r"(?<![\w/.-])([a-z0-9]+(?:-[a-z0-9]+){2,})(?![\w/.-])")


def _last_cells() -> list[str]:
    cells = []
    for line in COVERAGE.read_text().splitlines():
        if line.startswith("|") and not line.startswith("|---") and "failure mode" not in line:
            cells.append(line.strip().strip("|").split("|")[-1].strip())
    return cells


def test_every_entry_is_in_the_coverage_survey() -> None:
    text = COVERAGE.read_text()
    missing = [e.id for e in load_kb().entries if e.id not in text]
    assert not missing, f"add these entries to kb/COVERAGE.md: {missing}"


def test_coverage_names_only_existing_entries() -> None:
    ids = {e.id for e in load_kb().entries}
    cells = _last_cells()
    assert len(cells) > 60
    unknown = sorted({t for c in cells for t in ID_LIKE.findall(c)} - ids)
    assert not unknown, f"kb/COVERAGE.md names entries that do not exist: {unknown}"
