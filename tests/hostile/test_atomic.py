"""Outputs are replaced whole or not at all; concurrent builds take turns."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from denpex_kb import atomic


def test_failed_write_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "pack.json"
    atomic.write_file(target, b"old")

    def boom(fd):  # noqa: ANN001, ANN202
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", boom)
    with pytest.raises(OSError) as exc:
        atomic.write_file(target, b"new")
    assert exc.value.filename == str(target)
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pack.json"]


def test_replace_dir_swaps_whole_folders_and_stale_temps_are_removed(tmp_path: Path) -> None:
    target = tmp_path / "site"
    target.mkdir()
    (target / "index.html").write_text("old")
    stale = atomic.make_tmp_dir(target)  # what a killed build leaves behind
    (stale / "half.html").write_text("x")
    with atomic.lock(target):
        assert atomic.remove_stale(target) == [stale]
        tmp = atomic.make_tmp_dir(target)
        (tmp / "index.html").write_text("new")
        atomic.replace_dir(tmp, target)
    assert (target / "index.html").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".site.lock", "site"]


def _build(dest: str) -> None:
    from denpex_kb.index import build_index
    from denpex_kb.kb import load_kb

    from .conftest import HOSTILE_KB

    build_index(load_kb(HOSTILE_KB), dest)


def test_concurrent_index_builds_take_turns(tmp_path: Path) -> None:
    dest = tmp_path / "dist" / "index"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_build, args=(str(dest),)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    names = sorted(p.name for p in (tmp_path / "dist").iterdir())
    assert names == [".index.lock", "index"]
    from denpex_kb.index import TextIndex

    TextIndex(dest).close()
