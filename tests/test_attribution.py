"""Attribution: nested prefixes, pid/device -> rank maps, shard names, timestamps, the bounded
look-back, and RE2 for every pattern run on log text. Logs here are composed from real formats
(each says where the format comes from)."""

from __future__ import annotations

import datetime
import subprocess
import sys
from pathlib import Path

import pytest
import re2

from denpex_kb import rulepack as rp
from denpex_kb.attribution_vectors import ATTRIBUTION_VECTORS
from denpex_kb.engine import Engine
from denpex_kb.engine import attribute as at
from denpex_kb.engine.read import Source
from denpex_kb.kb import load_kb

HERE = Path(__file__).parent
FIXTURE = HERE / "fixtures" / "kb"
ENOSPC = "OSError: [Errno 28] No space left on device"


@pytest.fixture(scope="module")
def fx() -> Engine:
    return Engine(rp.build_pack(load_kb(FIXTURE)))


@pytest.fixture(scope="module")
def attr() -> at.Attributor:
    return at.Attributor(rp.globals_section())


def _evidence(report: dict) -> list[dict]:
    return [ev for c in report["candidates"] for ev in c["evidence"]]


# ---------------------------------------------------------------------------- prefixes
@pytest.mark.parametrize(
    ("line", "rank", "kind", "host"),
    [
        # srun --label (task id = node index) outside torchrun's [rankN]: the inner one wins
        (f"0: [rank3]: {ENOSPC}", 3, "global", None),
        (f"worker-7: [rank3]: {ENOSPC}", 3, "global", "worker-7"),
        (f"worker-7: [default3]:{ENOSPC}", 3, "local", "worker-7"),
        (f"3: worker-7: {ENOSPC}", 3, "global", "worker-7"),
        # a number after a process-level prefix is the program's own text, not a prefix
        (f"[rank3]: 12: {ENOSPC}", 3, "global", None),
    ],
)
def test_innermost_prefix_gives_the_rank(
    attr: at.Attributor, line: str, rank: int, kind: str, host: str | None
) -> None:
    a = attr.strip(line)
    assert (a.rank, a.rank_kind, a.host, a.rank_via) == (rank, kind, host, "prefix")


def test_innermost_prefix_through_the_engine(fx: Engine) -> None:
    # composed: two nodes under srun --label, torchrun's [rankN]: inside
    log = f"0: [rank1]: ok\n1: [rank6]: {ENOSPC}\n".encode()
    ev = _evidence(fx.analyse_bytes(log))
    assert [(e["rank"], e["host"]) for e in ev] == [(6, None)]


def test_outermost_when_the_pack_says_so(attr: at.Attributor) -> None:
    # a 1.0 pack has no prefix_rank: the first rank found wins, as before
    g = dict(rp.globals_section())
    del g["prefix_rank"]
    assert at.Attributor(g).strip(f"0: [rank3]: {ENOSPC}").rank == 0
    assert attr.strip(f"0: [rank3]: {ENOSPC}").rank == 3


# ---------------------------------------------------------------------------- pids
SPAWN = (
    "[2026-11-29 19:59:35,263] [INFO] [launch.py:272:main] process {pid} spawned with command: "
    "['/usr/bin/python3', '-u', 'train.py', '--local_rank={lr}', '--deepspeed']\n"
)
# NVIDIA/nccl#290 (a real NCCL_DEBUG=INFO log)
NCCL_WARN = (
    "gpu2-ru7:{pid}:2561 [{dev}] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : "
    "No space left on device\n"
)


def test_spawn_line_maps_a_pid_to_a_local_rank(fx: Engine) -> None:
    # composed: DeepSpeed launcher spawn lines (format of kb/captured/launcher-ds-4ranks-...)
    # then an NCCL WARN without any rank prefix
    log = (
        SPAWN.format(pid=2142, lr=0)
        + SPAWN.format(pid=2143, lr=1)
        + NCCL_WARN.format(pid=2143, dev=1)
    )
    report = fx.analyse_bytes(log.encode())
    ev = _evidence(report)
    assert [(e["rank"], e["host"]) for e in ev] == [(1, "gpu2-ru7")]
    assert report["initiating_rank"] == 1


def test_spawn_after_the_nccl_line_still_resolves(fx: Engine) -> None:
    # resolution is after the scan: the order of the lines does not matter
    log = NCCL_WARN.format(pid=2143, dev=1) + SPAWN.format(pid=2143, lr=1)
    assert [e["rank"] for e in _evidence(fx.analyse_bytes(log.encode()))] == [1]


def test_unknown_or_ambiguous_pid_gives_no_rank(fx: Engine) -> None:
    log = (
        SPAWN.format(pid=2143, lr=1)
        + SPAWN.format(pid=2143, lr=2)
        + NCCL_WARN.format(pid=2143, dev=1)
    )
    assert [e["rank"] for e in _evidence(fx.analyse_bytes(log.encode()))] == [None]
    log = SPAWN.format(pid=2142, lr=0) + NCCL_WARN.format(pid=9999, dev=1)
    assert [e["rank"] for e in _evidence(fx.analyse_bytes(log.encode()))] == [None]


def test_prefixed_nccl_line_teaches_pid_and_device_across_files(fx: Engine, tmp_path: Path) -> None:
    # composed: one file with a torchrun-prefixed NCCL 'Init COMPLETE' line (NCCL 2.12's format,
    # transformers#11658), another
    # (no rank in its name) with unprefixed WARN lines of the same host
    a = tmp_path / "train.out"
    a.write_text(
        "[rank4]:gpu2-ru7:2144:2556 [2] NCCL INFO comm 0x7ff1ec001060 rank 4 nranks 8 cudaDev 2 "
        "busId 3d000 - Init COMPLETE\n"
    )
    b = tmp_path / "nccl.txt"
    b.write_text(NCCL_WARN.format(pid=2144, dev=2) + NCCL_WARN.format(pid=3001, dev=2))
    ev = _evidence(fx.analyse_paths([str(a), str(b)]))
    assert sorted((e["rank"], e["host"]) for e in ev) == [(4, "gpu2-ru7"), (4, "gpu2-ru7")]


def test_pid_resolved_hits_carry_how(fx: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = []
    real = Engine._resolve_ranks

    def spy(run):  # noqa: ANN001, ANN202
        real(run)
        seen.extend(run.hits)

    monkeypatch.setattr(Engine, "_resolve_ranks", staticmethod(spy))
    fx.analyse_bytes((SPAWN.format(pid=5, lr=0) + NCCL_WARN.format(pid=5, dev=0)).encode())
    assert [(h.rank, h.rank_via, h.key) for h in seen] == [(0, "pid", ("rank", 0, "gpu2-ru7"))]


def test_shard_name_is_a_weak_rank(fx: Engine) -> None:
    # composed: CPython's OSError text with a DeepSpeed ZeRO shard path
    path = "'/ckpt/global_step100/bf16_zero_pp_rank_5_mp_rank_00_optim_states.pt'"
    report = fx.analyse_bytes(f"{ENOSPC}: {path}\n".encode())
    assert [e["rank"] for e in _evidence(report)] == [5]
    report = fx.analyse_bytes(f"[rank2]: {ENOSPC}: {path}\n".encode())
    assert [e["rank"] for e in _evidence(report)] == [2]


# ---------------------------------------------------------------------------- timestamps
def _dt(attr: at.Attributor, line: str, year: int | None = None) -> datetime.datetime:
    ts, _ = attr.timestamp(line, year)
    assert ts is not None, line
    ref, _ = attr.timestamp("2000-01-01 00:00:00", None)
    return datetime.datetime(2000, 1, 1) + datetime.timedelta(seconds=ts - ref)


@pytest.mark.parametrize(
    ("line", "year", "expected"),
    [
        # c10's own logger, unpadded month (XPixelGroup/BasicSR#737)
        (
            "[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught",
            2025,
            datetime.datetime(2025, 6, 26, 6, 24, 44, 903882),
        ),
        # glog, zero-padded month
        (
            "E0622 12:34:56.789012 1234 x.cpp:1] y",
            2024,
            datetime.datetime(2024, 6, 22, 12, 34, 56, 789012),
        ),
        (
            "W1129 19:14:16.352000 21941 api.py:1028] z",
            2026,
            datetime.datetime(2026, 11, 29, 19, 14, 16, 352000),
        ),
        # transformers example scripts' datefmt
        (
            "06/22/2024 12:34:56 - INFO - __main__ - Training/evaluation parameters",
            None,
            datetime.datetime(2024, 6, 22, 12, 34, 56),
        ),
        # dmesg -T, with %e's space-padded day
        ("[Sat Jun 22 12:34:56 2024] NVRM: Xid", None, datetime.datetime(2024, 6, 22, 12, 34, 56)),
        ("[Sun Jun  2 01:02:03 2024] NVRM: Xid", None, datetime.datetime(2024, 6, 2, 1, 2, 3)),
        # ISO 8601 with T (dmesg --time-format iso) and with a space (Python logging)
        (
            "2024-06-22T12:34:56,123456+02:00 kernel: x",
            None,
            datetime.datetime(2024, 6, 22, 12, 34, 56, 123456),
        ),
        (
            "[2024-06-22 12:34:56,123] [INFO] x",
            None,
            datetime.datetime(2024, 6, 22, 12, 34, 56, 123000),
        ),
        # NCCL >= 2.26 WARN timestamp (pytorch/ci-infra#490)
        (
            "[2026-04-22 21:34:20] host:202016:202235 [0] misc/shmutils.cc:88 NCCL WARN Error",
            None,
            datetime.datetime(2026, 4, 22, 21, 34, 20),
        ),
    ],
)
def test_timestamp_formats(attr: at.Attributor, line: str, year: int | None, expected) -> None:  # noqa: ANN001
    got = _dt(attr, line, year)
    assert abs((got - expected).total_seconds()) < 1e-4


def test_not_timestamps(attr: at.Attributor) -> None:
    for line in ("loss 12/31/20 12:00", "step 1234 56:78", "[Foo Jun 22 12:34:56 2024]"):
        assert attr.timestamp(line, 2024) == (None, None), line


def test_time_orders_ranks_across_files(fx: Engine, tmp_path: Path) -> None:
    # composed: rank 0's file prints its error later (c10 timestamps on the preceding watchdog
    # line, BasicSR#737 format) than rank 1's, though rank0.log comes first
    (tmp_path / "rank0.log").write_text(
        f"[E626 06:30:00.000000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught\n{ENOSPC}\n"
    )
    (tmp_path / "rank1.log").write_text(
        f"[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught\n{ENOSPC}\n"
    )
    report = fx.analyse_paths([str(tmp_path / "rank0.log"), str(tmp_path / "rank1.log")])
    assert report["initiating_rank"] == 1


# ---------------------------------------------------------------------------- look-back
def _hits_everywhere(attr: at.Attributor, data: bytes, blocks: int = 1) -> tuple[list, at.LookBack]:
    """Ask a time for every line, as the engine does for hits, over `blocks` line-aligned blocks."""
    from denpex_kb.engine.normalise import Normaliser

    lb = at.LookBack(attr, Normaliser(rp.ANSI_ESCAPE))
    lines = data.splitlines(keepends=True)
    per = -(-len(lines) // blocks)
    times = []
    base = 0
    for b in range(blocks):
        block = b"".join(lines[b * per : (b + 1) * per])
        pos = 0
        for raw in block.splitlines(keepends=True):
            text = raw.decode()
            ts = lb.own(text, base + pos, base + pos + len(raw))
            if ts is None:
                ts = lb.before(block, 0, base, pos, base + pos + len(raw))
            times.append(ts)
            pos += len(raw)
        lb.end_block(block, 0, len(block), base)
        base += len(block)
    return times, lb


def test_lookback_examines_each_byte_at_most_once(attr: at.Attributor) -> None:
    # every line a hit, no timestamp after the first: the old look-back decoded 8 KiB per line
    data = b"[2024-06-22 12:34:56,123] [INFO] start\n" + f"{ENOSPC}\n".encode() * 20_000
    times, lb = _hits_everywhere(attr, data)
    assert lb.examined_bytes <= len(data)
    assert times[1] == times[0] and times[150] == times[0]  # within 8 KiB: the start time
    assert times[200] is None  # 200 lines of 44 bytes: beyond 8 KiB
    assert times[-1] is None  # 20,000 lines later: beyond the look-back


def test_lookback_reaches_across_blocks(attr: at.Attributor) -> None:
    data = (
        f"{ENOSPC}\n".encode() * 10
        + b"W1129 19:14:16.352000 1 a.py:1] t\n"
        + f"{ENOSPC}\n".encode() * 9
    )
    times, lb = _hits_everywhere(attr, data, blocks=2)  # the timestamp is the last line of block 1
    assert times[9] is None and times[10] is not None
    assert times[11:] == [times[10]] * 9
    assert lb.examined_bytes <= len(data)


def test_engine_lookback_work_is_linear(fx: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[at.LookBack] = []

    class Counting(at.LookBack):
        def __init__(self, *a, **k) -> None:  # noqa: ANN002, ANN003
            super().__init__(*a, **k)
            made.append(self)

    import denpex_kb.engine.analyse as eng

    monkeypatch.setattr(eng, "LookBack", Counting)
    data = b"[2024-06-22 12:34:56,123] start\n" + f"[rank1]: {ENOSPC}\n".encode() * 50_000
    report = fx.analyse_bytes(data)
    assert report["root_cause"]["id"] == "fixture-disk-full"
    assert len(made) == 1 and made[0].examined_bytes <= len(data)


# ---------------------------------------------------------------------------- RE2
def test_every_log_text_pattern_is_re2(fx: Engine) -> None:
    rx_type = type(re2.compile("x"))
    compiled = fx.attr.compiled() + fx.banners.rx + fx.boilerplate.rx
    compiled += [fx.exception_rx, fx.ansi_bytes, fx.normalise._ansi]
    compiled += list(at.ElasticParser(fx.globals, at.ElasticSummary()).rx.values())
    assert len(compiled) > 30
    assert all(isinstance(r, rx_type) for r in compiled)


def test_long_line_of_digits_is_linear() -> None:
    # 60 KB of digits then an exception: Python re's backtracking on the pdsh host pattern is
    # quadratic here (minutes); RE2 is linear. The timeout is only a generous backstop.
    code = (
        "from denpex_kb.engine import Engine\n"
        "from denpex_kb import rulepack as rp\n"
        "from denpex_kb.kb import load_kb\n"
        f"e = Engine(rp.build_pack(load_kb({str(FIXTURE)!r})))\n"
        "line = b'1' * 60000 + b'RuntimeError: boom\\n'\n"
        "r = e.analyse_bytes(line * 20 + b'OSError: [Errno 28] No space left on device\\n')\n"
        "print(r['root_cause']['id'])\n"
    )
    root = str(HERE.parent)
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=root,
        env={"PYTHONPATH": root, "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "fixture-disk-full"


# ---------------------------------------------------------------------------- vectors
@pytest.mark.parametrize("vec", ATTRIBUTION_VECTORS, ids=[v["name"] for v in ATTRIBUTION_VECTORS])
def test_attribution_vectors(vec: dict) -> None:
    sources = [(s["name"], s["log"].encode()) for s in vec["sources"]]
    got = at.attribute_all(rp.globals_section(), sources)
    for exp in vec["expect"]:
        rec = dict(got[exp["source"]][exp["line"] - 1])
        rec["time"] = at.format_time(rec["time"])
        for k, v in exp.items():
            if k not in ("source", "line"):
                assert rec[k] == v, (exp, rec)


@pytest.mark.parametrize("vec", ATTRIBUTION_VECTORS, ids=[v["name"] for v in ATTRIBUTION_VECTORS])
def test_engine_agrees_with_attribution_vectors(fx: Engine, vec: dict) -> None:
    """The engine's evidence lines (those its scan keeps) carry the vector's rank and host."""
    names = [s["name"] or "<text>" for s in vec["sources"]]
    import io

    report = fx.analyse(
        [Source(n, None) for n in names],
        streams=[io.BytesIO(s["log"].encode()) for s in vec["sources"]],
    )
    by_line = {(e["file"], e["line"]): e for e in _evidence(report)}
    checked = 0
    for exp in vec["expect"]:
        ev = by_line.get((names[exp["source"]], exp["line"]))
        if ev is None:
            continue
        checked += 1
        for k in ("rank", "host"):
            if k in exp:
                assert ev[k] == exp[k], (exp, ev)
    if vec["name"] != "timestamps":
        assert checked, "no expected line is an evidence line"


def test_vectors_file_holds_attribution_vectors(tmp_path: Path) -> None:
    kb = load_kb(FIXTURE)
    vectors = rp.build_vectors(kb, rp.build_pack(kb))
    assert [v["name"] for v in vectors["attribution"]] == [v["name"] for v in ATTRIBUTION_VECTORS]
    assert "attribution_semantics" in vectors


def test_plain_nccl_info_lines_are_not_scanned(fx: Engine) -> None:
    """NCCL INFO lines are a third of a busy log (bench/match_bench.py): only WARN and 'Init
    COMPLETE' lines are process lines, so the prefilter does not hand the others to Python."""
    block = (
        b"[default3]:gpu-node-0:4003:4103 [3] NCCL INFO Channel 05/0 : 3[3] -> 4[4] via "
        b"P2P/CUMEM/read\n"
    ) * 1000
    block += b"[default3]:" + NCCL_WARN.format(pid=4003, dev=3).encode()
    starts = fx.prefilter.line_starts(block, 0, len(block))
    assert len(starts) == 1


def test_process_line_literals_cover_their_patterns() -> None:
    """The engine reads only lines holding a process line's literal: on every line of every
    vector and test log here, a pattern match implies a literal."""
    g = rp.globals_section()
    lines = [ln for v in ATTRIBUTION_VECTORS for s in v["sources"] for ln in s["log"].splitlines()]
    lines += [SPAWN.format(pid=1, lr=0), NCCL_WARN.format(pid=1, dev=0)]
    matched = 0
    for item in g["process_lines"]:
        rx = re2.compile(item["pattern"])
        for line in lines:
            content = at.Attributor(g).strip(line).content
            if rx.search(content):
                matched += 1
                assert any(lit in content for lit in item["literals"]), (item["id"], line)
    assert matched >= 8
