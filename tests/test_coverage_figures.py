"""scripts/coverage_figures.py: the measured blocks of kb/COVERAGE.md are rewritten between their
markers only, and each row's rates are computed from the eval cases as the header says."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def cf():  # noqa: ANN201
    spec = importlib.util.spec_from_file_location(
        "coverage_figures", ROOT / "scripts" / "coverage_figures.py"
    )
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


def _case(outcome: str, right: bool, confident: bool, coverage: str = "covered") -> dict:
    return {
        "outcome": outcome,
        "right": right,
        "top3": right,
        "confident": confident,
        "coverage": coverage,
    }


def test_a_row_counts_what_its_columns_say(cf) -> None:  # noqa: ANN001
    cases = [
        _case("right-confident", True, True),
        _case("confident-wrong", False, True),
        _case("abstain", False, False),
        _case("right-none", True, False, coverage="none"),
    ]
    row = cf.part_row("part", cases)
    assert row == "| part | 4 | 50.0% | 50.0% | 25.0% | 25.0% | 1/2 | 33.3% |"
    assert cf.part_row("empty", []) == "| empty | 0 | - | - | - | - | - | - |"


def test_only_the_text_between_the_markers_changes(cf) -> None:  # noqa: ANN001
    doc = "intro\n<!-- figures:x -->\nold\n<!-- /figures:x -->\nhand-written\n"
    assert cf.replace_between(doc, "x", "new\n") == (
        "intro\n<!-- figures:x -->\nnew\n<!-- /figures:x -->\nhand-written\n"
    )
    with pytest.raises(SystemExit, match="markers"):
        cf.replace_between(doc, "y", "new")


def test_coverage_md_has_every_marker(cf) -> None:  # noqa: ANN001
    doc = cf.COVERAGE.read_text(encoding="utf-8")
    for name in ("corpus", "calibration", "survey"):
        cf.replace_between(doc, name, "x")  # raises when a marker pair is missing
