"""The text index over the bundled knowledge base: every entry's own error lines, perturbed,
find that entry, and the documented error-string queries put the right entry first."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from denpex_kb.errortext import tokens
from denpex_kb.evalset import probes, vary
from denpex_kb.index import TextIndex, build_index


@pytest.fixture(scope="module")
def index(kb, tmp_path_factory: pytest.TempPathFactory) -> TextIndex:  # noqa: ANN001
    ix = TextIndex(build_index(kb, tmp_path_factory.mktemp("ix") / "index"))
    yield ix
    ix.close()


def test_vary_changes_volatile_parts_only() -> None:
    line = "[rank3]: OSError: [Errno 28] No space left on device: '/data/ckpt/step100/x.pt' at 0x7f00ab pid 4242"
    out = vary(line)
    assert "[Errno 28]" in out and "/data/ckpt" not in out and "0x7f00ab" not in out
    assert "pid 4249" in out
    assert vary(
        "shape in current model is torch.Size([0]).", re.compile(r"Size\(\[0\]\)")
    ).endswith("Size([0]).")


def test_every_entry_has_probes(kb) -> None:  # noqa: ANN001
    covered = {p.entry_id for p in probes(kb)}
    missing = sorted(e.id for e in kb.entries if e.id not in covered)
    assert not missing, (
        f"entries whose positive examples contain no line their signals match: {missing}"
    )


def test_perturbed_error_lines_rank_their_entry_first(kb, index: TextIndex) -> None:  # noqa: ANN001
    # Two entries whose probes the index reads as the same words (they differ only in numbers
    # and operators, which the tokenizer drops: a minimum version check and an upper-bound pin
    # printed by the same require_version template) cannot both rank first: each may yield to
    # the other, and the match rules tell them apart.
    # Likewise a probe all of whose words are in a line another entry quotes (a bare config key
    # such as `zero_optimization`, from a pydantic location line, inside another entry's remedy
    # line): the query cannot prefer either, so that entry may rank first too.
    all_probes = list(probes(kb))
    words = {p: tuple(t for t, _, _ in tokens(p.variant)) for p in all_probes}
    twins: dict[tuple, set[str]] = {}
    for p in all_probes:
        twins.setdefault(words[p], set()).add(p.entry_id)
    quoted = [(p.entry_id, set(words[p])) for p in all_probes]
    failures = []
    for probe in all_probes:
        mine = set(words[probe])
        covering = {e for e, ws in quoted if mine <= ws}
        same_words = (twins[words[probe]] | covering) - {probe.entry_id} - set(probe.also_matching)
        allowed = 1 + len(probe.also_matching) + len(same_words)
        hits = [h.id for h in index.search(probe.variant, limit=allowed)]
        if probe.entry_id not in hits:
            failures.append(f"{probe.entry_id}/{probe.signal_id}: {probe.variant!r} -> {hits}")
    assert not failures, "\n".join(failures)


QUERIES = [
    ("DistBackendError", "nccl-unhandled-cuda-error"),
    ("Errno 28", "disk-full-enospc"),
    ("Too many open files", "fd-limit-emfile"),
    ("Xid 79", "gpu-fallen-off-bus-xid79"),
]


@pytest.mark.parametrize(("query", "expected"), QUERIES)
def test_documented_queries(kb, index: TextIndex, query: str, expected: str) -> None:  # noqa: ANN001
    assert expected in {e.id for e in kb.entries}, f"entry {expected} is not in the knowledge base"
    hits = index.search(query)
    assert hits and hits[0].id == expected, [h.id for h in hits]


def test_bundled_kb_index_path_is_importable_without_warnings(tmp_path: Path) -> None:
    import subprocess
    import sys

    proc = subprocess.run(
        [
            sys.executable,
            "-W",
            "error",
            "-c",
            "import denpex_kb._whoosh, whoosh.index, whoosh.scoring",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr


def test_related_suggestions_for_unrecognised_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from denpex_kb.engine import suggest_related

    monkeypatch.setenv("DENPEX_KB_CACHE", str(tmp_path / "cache"))
    report = {
        "verdict": "none",
        "unrecognised_errors": [
            {
                "file": "x.log",
                "line": 3,
                "rank": 3,
                "host": None,
                "text": "[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered",
            }
        ],
    }
    suggest_related(report)
    assert report["related"], "a CUDA error should suggest the CUDA/NCCL entries"
    assert all(0 < r["confidence"] <= 0.3 for r in report["related"])
    confidences = [r["confidence"] for r in report["related"]]
    assert confidences == sorted(confidences, reverse=True)
    # Only generic words in common: no suggestion rather than a misleading one.
    report["unrecognised_errors"][0]["text"] = "[rank2]: ValueError: failed at step 2"
    suggest_related(report)
    assert report["related"] == []
    # A match never gets suggestions.
    report["verdict"] = "confident"
    suggest_related(report)
    assert report["related"] == []


def test_unknown_error_sharing_only_function_words_gets_no_suggestion() -> None:
    from denpex_kb.index import related_entries

    # An unknown RuntimeError once became a "probable cause" because it shared `some` (and the
    # generic `RuntimeError`) with one entry's text.
    assert related_entries("RuntimeError: some totally unknown flux capacitor failure") == []
    # An informative shared word still counts.
    rel = related_entries("RuntimeError: some totally unknown inflight params failure")
    assert rel and rel[0]["id"] == "zero3-still-have-inflight-params"


def test_a_broken_knowledge_base_costs_only_the_suggestions(tmp_path: Path) -> None:
    from denpex_kb.engine import suggest_related

    (tmp_path / "kb" / "x").mkdir(parents=True)
    (tmp_path / "kb" / "x" / "bad.yaml").write_text("id: [not, valid\n")
    report = {
        "verdict": "none",
        "unrecognised_errors": [{"text": "RuntimeError: inflight params remain"}],
    }
    suggest_related(report, kb_dir=str(tmp_path / "kb"))
    assert report["related"] == []


def test_other_index_failures_are_not_swallowed(monkeypatch: pytest.MonkeyPatch) -> None:
    from denpex_kb import index
    from denpex_kb.engine import suggest_related

    def broken(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise ValueError("index bug")

    monkeypatch.setattr(index, "related_entries", broken)
    report = {"verdict": "none", "unrecognised_errors": [{"text": "RuntimeError: x y"}]}
    with pytest.raises(ValueError, match="index bug"):
        suggest_related(report)
