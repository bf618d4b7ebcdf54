"""The frequency survey: parsing, mapping causes onto entries, and the headline figures."""

from pathlib import Path

import pytest

from denpex_kb.kb import load_kb
from denpex_kb.survey import (
    COLUMNS,
    SurveyError,
    check_causes,
    classify,
    read_causes,
    read_threads,
    survey,
)

ROOT = Path(__file__).resolve().parent.parent
IDS = frozenset({"disk-full-enospc", "dev-shm-too-small"})


def _tsv(folder: Path, name: str, rows: list[tuple[str, ...]]) -> None:
    lines = ["\t".join(COLUMNS)] + ["\t".join(r) for r in rows]
    (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_rows_counted_once_per_url_first_file_wins(tmp_path: Path) -> None:
    _tsv(tmp_path, "threads-a.tsv", [("u1", "p", "t", "disk-full", "-", "maintainer")])
    _tsv(
        tmp_path,
        "threads-b.tsv",
        [
            ("u1", "p", "t", "other", "-", "reporter"),
            ("u2", "p", "t", "unknown", "-", "unresolved"),
        ],
    )
    rows = read_threads(tmp_path)
    assert [(r.url, r.cause) for r in rows] == [("u1", "disk-full"), ("u2", "unknown")]
    assert rows[0].source == "threads-a.tsv:2"


def test_bad_header_and_bad_row_name_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "threads-a.tsv").write_text("url\tcause\n", encoding="utf-8")
    with pytest.raises(SurveyError, match=r"threads-a.tsv:1: header"):
        read_threads(tmp_path)
    (tmp_path / "threads-a.tsv").write_text("\t".join(COLUMNS) + "\nu1\tp\tt\n", encoding="utf-8")
    with pytest.raises(SurveyError, match=r"threads-a.tsv:2: 3 columns"):
        read_threads(tmp_path)


def test_causes_file_rejects_duplicates_and_malformed_lines(tmp_path: Path) -> None:
    f = tmp_path / "causes.tsv"
    f.write_text("# comment\na\tdisk-full-enospc\n\nb\tnot-a-failure  # why\n", encoding="utf-8")
    assert read_causes(f) == {"a": "disk-full-enospc", "b": "not-a-failure"}
    f.write_text("a\tx\na\ty\n", encoding="utf-8")
    with pytest.raises(SurveyError, match="mapped twice"):
        read_causes(f)
    f.write_text("a x\n", encoding="utf-8")
    with pytest.raises(SurveyError, match=":1:"):
        read_causes(f)


def test_mapping_beats_recorded_entry_and_stale_entries_are_ignored(tmp_path: Path) -> None:
    _tsv(
        tmp_path,
        "threads-a.tsv",
        [
            ("u1", "p", "t", "full-disk", "dev-shm-too-small", "maintainer"),  # mapping wins
            ("u2", "p", "t", "shm", "dev-shm-too-small", "reporter"),  # recorded entry used
            ("u3", "p", "t", "dev-shm-too-small", "-", "unresolved"),  # cause is an id
            ("u4", "p", "t", "gone", "renamed-entry", "maintainer"),  # stale: not covered
        ],
    )
    causes = {"full-disk": "disk-full-enospc"}
    got = [classify(t, causes, IDS).target for t in read_threads(tmp_path)]
    assert got == ["disk-full-enospc", "dev-shm-too-small", "dev-shm-too-small", ""]
    causes["u4"] = "dev-shm-too-small"  # one thread mapped by its URL, whatever its cause says
    assert classify(read_threads(tmp_path)[3], causes, IDS).target == "dev-shm-too-small"


def test_figures_pool_threads_per_entry_and_leave_classes_out_of_the_denominator(
    tmp_path: Path,
) -> None:
    _tsv(
        tmp_path,
        "threads-a.tsv",
        [
            ("u1", "p", "t", "full-disk", "-", "maintainer"),
            ("u2", "p", "t", "disk-full-enospc", "-", "unresolved"),
            ("u3", "p", "t", "weird", "-", "reporter"),
            ("u4", "p", "t", "how-to", "-", "maintainer"),
            ("u5", "p", "t", "unknown", "-", "unresolved"),
            ("https://github.com/a/b/pull/9", "p", "t", "weird", "-", "fix-pr"),
        ],
    )
    (tmp_path / "causes.tsv").write_text(
        "full-disk\tdisk-full-enospc\nhow-to\tnot-a-failure\n", encoding="utf-8"
    )
    fig = survey(tmp_path, IDS)
    assert (fig.threads, fig.pull_requests) == (6, 1)
    assert (fig.unknown, fig.not_failures, fig.failures, fig.covered) == (1, 1, 3, 2)
    assert fig.ranking == (("disk-full-enospc", 2, True), ("weird", 1, False))
    assert (fig.established, fig.established_covered) == (2, 1)
    assert round(fig.coverage, 3) == 0.667


def test_unknown_mapping_target_is_refused(tmp_path: Path) -> None:
    _tsv(tmp_path, "threads-a.tsv", [])
    (tmp_path / "causes.tsv").write_text("x\tno-such-entry\n", encoding="utf-8")
    with pytest.raises(SurveyError, match="no-such-entry"):
        survey(tmp_path, IDS)


def test_bundled_survey_maps_only_onto_existing_entries() -> None:
    ids = frozenset(e.id for e in load_kb(ROOT / "kb").entries)
    causes = read_causes(ROOT / "kb" / "survey" / "causes.tsv")
    assert check_causes(causes, ids) == []
    fig = survey(ROOT / "kb" / "survey", ids)
    assert fig.threads >= 400 and fig.failures > 0
