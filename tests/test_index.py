"""The full-text index: error-text analysis, salient-line picking, build, cache and search."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from denpex_kb import errortext
from denpex_kb.cli import main
from denpex_kb.index import (
    MARKER,
    TextIndex,
    build_index,
    cached_index,
    kb_fingerprint,
    regex_literal_text,
    related_entries,
)
from denpex_kb.kb import load_kb

FIXTURE = Path(__file__).parent / "fixtures" / "kb"


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("DENPEX_KB_CACHE", str(cache))
    return cache


# --- analysis -----------------------------------------------------------------------------


def test_compound_names_match_both_ways() -> None:
    full = set(errortext.terms("torch.distributed.DistBackendError: NCCL error"))
    short = set(errortext.terms("DistBackendError"))
    assert "distbackenderror" in full and "distbackenderror" in short
    assert {"dist", "backend"} <= full
    snake = set(errortext.terms("train_batch_size is not equal"))
    assert {"train_batch_size", "train", "batch", "size"} <= snake
    path = set(errortext.terms('File "/opt/ds/deepspeed/runtime/zero/stage3.py", line 12'))
    assert "stage3.py" in path and "stage3" in path


@pytest.mark.parametrize(
    ("text", "needed"),
    [
        ("OSError: [Errno 28] No space left on device", {"errno", "28"}),
        ("errno=ENOSPC", {"enospc"}),
        ("NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.", {"xid", "79"}),
        ("exitcode  : -9 (pid: 4242)", {"exitcode", "-9"}),
        ("Xid 48", {"xid", "48"}),
    ],
)
def test_error_codes_stay_searchable(text: str, needed: set[str]) -> None:
    assert needed <= set(errortext.terms(text))


def test_volatile_parts_are_normalised() -> None:
    a = (
        "[2026-11-29 19:02:25,487] [rank3]: RuntimeError: CUDA out of memory. Tried to allocate "
        "20.00 MiB at 0x7f3a2b4c10 in /home/alice/run1/train.py pid 4242"
    )
    b = (
        "[2025-01-02 03:04:05,006] [rank17]: RuntimeError: CUDA out of memory. Tried to allocate "
        "1.50 GiB at 0x55aa00ff in /scratch/bob/exp/train.py pid 777"
    )
    ta, tb = set(errortext.terms(a)), set(errortext.terms(b))
    assert ta - {"mib"} == tb - {"gib"}
    assert "4242" not in ta and "0x7f3a2b4c10" not in " ".join(ta)


def test_regex_literal_text() -> None:
    assert regex_literal_text(r"OSError: \[Errno 28\] No space left on device") == (
        "OSError: [Errno 28] No space left on device"
    )
    assert regex_literal_text(r"Tried to allocate [0-9.]+ (MiB|GiB)") == "Tried to allocate MiB GiB"


def test_salient_lines_from_a_noisy_multi_rank_paste() -> None:
    noise = [f"[default{r}]: step {i} loss 2.1 lr 1e-4" for i in range(2000) for r in range(4)]
    warn = [
        "[rank0]: /x/torch/c10d_logger.py:83: FutureWarning: `all_gather_into_tensor` is deprecated"
    ]
    errors = [
        f"[rank{r}]: [E ProcessGroupNCCL.cpp:1] Watchdog caught collective operation timeout"
        for r in range(8)
    ]
    tb = [
        "[rank3]: Traceback (most recent call last):",
        '[rank3]:   File "/x/train.py", line 10, in <module>',
        "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB",
    ]
    text = "\n".join(noise[:4000] + warn + tb + noise[4000:] + errors)
    picked = errortext.salient_lines(text)
    assert picked[0].endswith("CUDA out of memory. Tried to allocate 20.00 MiB")  # exceptions first
    assert sum("Watchdog" in p for p in picked) == 1  # 8 ranks, one line
    assert not any("FutureWarning" in p for p in picked)
    assert any('File "/x/train.py", line 10' in p for p in picked)


def test_salient_lines_bounded_on_a_paste_full_of_errors() -> None:
    lines = [f"[rank{i % 8}]: RuntimeError: NCCL error {i} on node{i % 64}" for i in range(60_000)]
    lines.append("[rank3]: torch.OutOfMemoryError: CUDA out of memory.")
    picked = errortext.salient_lines("\n".join(lines).encode())
    assert any("OutOfMemoryError" in p for p in picked)  # the tail is never skipped
    assert len(picked) <= 43


# --- build, cache, search -----------------------------------------------------------------


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def test_build_is_deterministic(tmp_path: Path) -> None:
    kb = load_kb(FIXTURE)
    a = build_index(kb, tmp_path / "a")
    b = build_index(kb, tmp_path / "b")
    assert _digests(a) == _digests(b)
    assert json.loads((a / MARKER).read_text())["entries"] == 2


def test_build_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import denpex_kb.index as index_mod

    kb = load_kb(FIXTURE)
    dest = tmp_path / "ix"
    build_index(kb, dest)
    before = _digests(dest)

    def crash(entry):  # noqa: ANN001, ANN202
        raise RuntimeError("disk died mid-build")

    monkeypatch.setattr(index_mod, "entry_document", crash)
    with pytest.raises(RuntimeError):
        build_index(kb, dest)
    assert _digests(dest) == before  # the old index is untouched
    # no temp folder left behind (the empty lock file of concurrent builds stays)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != ".ix.lock") == ["ix"]
    with pytest.raises(RuntimeError):
        build_index(kb, tmp_path / "fresh")
    assert not (tmp_path / "fresh").exists()


def test_cache_builds_once_and_follows_content(tmp_path: Path, private_cache: Path) -> None:
    kb_dir = tmp_path / "kb"
    shutil.copytree(FIXTURE, kb_dir)
    first = cached_index(kb_dir)
    first.close()
    stamp = (first.path / MARKER).stat().st_mtime_ns
    again = cached_index(kb_dir)
    again.close()
    assert again.path == first.path and (again.path / MARKER).stat().st_mtime_ns == stamp
    entry = kb_dir / "checkpoint" / "fixture-quota.yaml"
    entry.write_text(
        entry.read_text().replace("Disk quota exceeded", "Disk quota exceeded (EDQUOT)", 1)
    )
    changed = cached_index(kb_dir)
    changed.close()
    assert changed.path != first.path
    assert changed.fingerprint == kb_fingerprint(kb_dir)


def test_search_ranks_and_explains(tmp_path: Path) -> None:
    ix = TextIndex(build_index(load_kb(FIXTURE), tmp_path / "ix"))
    hits = ix.search("OSError: [Errno 122] Disk quota exceeded")
    assert [h.id for h in hits] == ["fixture-quota", "fixture-disk-full"]
    assert "Disk quota exceeded" in hits[0].snippet
    assert {"errno", "122", "quota"} <= set(hits[0].matched_terms)
    assert ix.search("zzz qqq") == []
    ix.close()


def test_open_incomplete_index_fails_clearly(tmp_path: Path) -> None:
    from denpex_kb.index import IndexError_

    (tmp_path / "half").mkdir()
    with pytest.raises(IndexError_, match="not a complete denpex-kb index"):
        TextIndex(tmp_path / "half")


def test_related_entries_have_low_confidence() -> None:
    rel = related_entries("OSError: [Errno 28] No space left on device", kb_dir=FIXTURE)
    assert rel[0]["id"] == "fixture-disk-full"
    assert all(0 < r["confidence"] <= 0.3 for r in rel)


def test_search_cli_json_and_stdin() -> None:
    runner = CliRunner()
    res = runner.invoke(
        main, ["search", "--kb", str(FIXTURE), "--format", "json", "-"], input="Errno 122\n"
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)[0]["id"] == "fixture-quota"
    res = runner.invoke(main, ["search", "--kb", str(FIXTURE), "qqqq zzzz"])
    assert res.exit_code == 1
    res = runner.invoke(main, ["search", "--index", "/nonexistent/ix", "x"])
    assert res.exit_code == 2 and res.stderr.startswith("denpex-kb: error: /nonexistent/ix")
