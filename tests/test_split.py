"""Issue 15: a large file scanned by worker processes (`match --jobs N`) gives the report of one
process, byte for byte; the torchelastic summary's item-start lines, no longer part of the
whole-file scan, are still all found.

The logs here are composed from the repository's test logs (marked composed: nothing new is
claimed about any program's output). Small read blocks make every few KB a split point, so the
state that crosses a split (time look-back, per-rank line counts, the torchelastic summary, df
tables, line numbers) is exercised at many places at once.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from denpex_kb.engine import Engine, load_rulepack, read, split
from denpex_kb.engine.attribute import ElasticParser, ElasticSummary, attribute_all
from denpex_kb.engine.explain import _item_json

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "tests" / "logs"
PARTS = [
    LOGS / "elastic-names-collateral-rank-initiator-sigkilled.log",
    LOGS / "launcher-torchrun-raise-rank1.log",
    ROOT / "kb" / "captured" / "disk-engine-save-checkpoint-enospc.log",
    LOGS / "oom-rank3-watchdog-rest.log",
    LOGS / "collateral-only-rank5-silent.log",
]


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine(load_rulepack())


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    def set_size(bs: int, piece_chunks: int = 1) -> None:
        monkeypatch.setattr(read, "BLOCK_SIZE", bs)
        monkeypatch.setattr(split, "SPLIT_MIN_BYTES", 0)
        monkeypatch.setattr(split, "PIECE_CHUNKS", piece_chunks)

    return set_size


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """(blocks the engine scanned itself, pieces) of each split file."""
    got: list[tuple[int, int]] = []
    close = split.Prescan.close

    def spy(self: split.Prescan) -> None:
        got.append((self.local_blocks, len(self.tasks)))
        close(self)

    monkeypatch.setattr(split.Prescan, "close", spy)
    return got


def composed(tmp_path: Path, filler_lines: int = 40) -> Path:
    """The parts one after another, each behind healthy rank-prefixed lines, some with a time."""
    out = bytearray()
    for i, p in enumerate(PARTS):
        for j in range(filler_lines):
            if j % 7 == 0:
                out += f"[rank{j % 4}]:[2026-11-29 10:{i:02d}:{j % 60:02d},000] [INFO] step={j}\n".encode()
            else:
                out += f"[rank{j % 4}]: {j % 100:2d}%| {j}/1000 [01:23<01:55,  5.03it/s]\n".encode()
        out += p.read_bytes()
    f = tmp_path / "composed-multirank.log"
    f.write_bytes(bytes(out))
    return f


def report(engine: Engine, path: Path, jobs: int) -> str:
    return json.dumps(engine.analyse_paths([str(path)], jobs=jobs), sort_keys=True, default=str)


@pytest.fixture
def times(monkeypatch: pytest.MonkeyPatch) -> list:
    """The time given to each hit line (its own, or looked back for), in scan order."""
    got: list = []
    orig = Engine._time_of

    def spy(*args):  # noqa: ANN002, ANN202
        ts = orig(*args)
        got.append(ts)
        return ts

    monkeypatch.setattr(Engine, "_time_of", staticmethod(spy))
    return got


@pytest.mark.parametrize("bs", [512, 1000, 4096])
def test_split_report_identical(engine, tmp_path, small_blocks, served, times, bs) -> None:
    log = composed(tmp_path)
    small_blocks(bs)
    one = report(engine, log, 1)
    t1 = list(times)
    times.clear()
    small_blocks(bs, piece_chunks=2)
    assert report(engine, log, 3) == one
    assert times == t1  # time look-back across split points, hit by hit
    assert sum(t is not None for t in t1) >= 3
    local, pieces = served[-1]
    assert pieces >= 3  # the file really was split
    assert local < pieces  # and the workers' records were used
    rep = json.loads(one)
    assert rep["torchelastic"] is not None and rep["torchelastic"]["root_cause"] is not None
    assert rep["facts"]  # the df table of the captured ENOSPC run


def test_split_after_overlong_line_falls_back(engine, tmp_path, small_blocks, served) -> None:
    """A line longer than a read block before a piece boundary: the worker cannot know the
    partial line the single reader carries there, so the engine scans those blocks itself."""
    log = composed(tmp_path, filler_lines=10)
    data = log.read_bytes()
    mid = data.index(b"\n", len(data) // 2) + 1
    long_line = b"[rank2]: " + b"x" * 5000 + b"\n"
    log.write_bytes(data[:mid] + long_line + data[mid:])
    small_blocks(1024)
    one = report(engine, log, 1)
    assert report(engine, log, 2) == one
    local, pieces = served[-1]
    assert 0 < local < pieces


def test_jobs_one_and_small_files_stay_in_process(engine, tmp_path, served) -> None:
    log = composed(tmp_path)
    assert report(engine, log, 4) == report(engine, log, 1)
    assert served == []  # below SPLIT_MIN_BYTES: no pool


def summary_of_every_line(g: dict, data: bytes) -> list:
    """The reference: the parser fed every line of the log."""
    summary = ElasticSummary()
    parser = ElasticParser(g, summary)
    attr = Engine(load_rulepack()).attr
    for n, raw in enumerate(data.splitlines(), 1):
        a = attr.strip(raw.decode("utf-8", "replace"))
        parser.feed(a.content, n)
    return summary.items


def test_item_start_not_in_whole_file_scan(engine) -> None:
    item = engine.globals["elastic_summary"]["patterns"]["item_start"]
    assert item not in [p for p, _ in engine.prefilter_patterns]


@pytest.mark.parametrize("bs", [64, 300, 4 << 20])
def test_summary_items_as_if_every_line_were_read(engine, tmp_path, small_blocks, bs) -> None:
    """Items whose start line only the section search finds, at block sizes that put block
    boundaries inside the summary, with rank-prefixed `]:` lines between the items."""
    base = PARTS[0].read_bytes()
    noisy = base.replace(
        b"[0]:\n", b"[0]:\n[rank1]: noise [x]: y\n", 1
    )  # a prefixed line inside the item
    log = tmp_path / "summary.log"
    log.write_bytes(noisy)
    small_blocks(bs)
    got = engine.analyse_paths([str(log)])["torchelastic"]
    ref = summary_of_every_line(engine.globals, noisy)
    assert ref and any(i.section == "root_cause" for i in ref)
    roots = [i for i in ref if i.section == "root_cause"]
    assert got["root_cause"] == _item_json(roots[0])
    assert got["failures"] == [_item_json(i) for i in ref if i.section == "failures"]
    assert got["root_cause"]["rank"] is not None


def test_attribution_reference_agrees_on_summary(engine) -> None:
    """attribute_all (every line) and the engine give the summary's rank to the same lines."""
    data = PARTS[0].read_bytes()
    recs = attribute_all(engine.globals, [(None, data)])[0]
    via = [r["line"] for r in recs if r["rank_via"] == "elastic-summary"]
    assert via  # the summary's field lines take the item's rank
