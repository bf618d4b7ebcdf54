"""Differential diagnosis, facts, probable causes and consequences (issue: "Diagnose like an
expert"). Every log here is composed from real message formats (the entries' quoted sources, GNU
df's table layout, NCCL's WARN format, torch's CUDA-OOM message) and marked as such."""

from __future__ import annotations

import pytest

from denpex_kb.engine import Engine, load_rulepack
from denpex_kb.engine.facts import FactCollector, check, parse_size

ERRNO28 = """Traceback (most recent call last):
  File "train.py", line 88, in <module>
    engine.save_checkpoint(args.out)
OSError: [Errno 28] No space left on device: '/ckpt/run1/global_step400/mp_rank_00_model_states.pt'
"""
DF_FREE = """$ df -h /ckpt
Filesystem      Size  Used Avail Use% Mounted on
/dev/nvme1n1    1.8T  630G  1.1T  35% /ckpt
"""
DF_FULL = """$ df -h /ckpt
Filesystem      Size  Used Avail Use% Mounted on
/dev/nvme1n1    1.8T  1.8T     0 100% /ckpt
"""
DF_I_FULL = """$ df -i /ckpt
Filesystem       Inodes    IUsed IFree IUse% Mounted on
/dev/nvme1n1   12000000 12000000     0  100% /ckpt
"""
DF_SHM_FULL = """$ df -h /dev/shm
Filesystem      Size  Used Avail Use% Mounted on
shm              64M   64M     0 100% /dev/shm
"""


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine(load_rulepack())


def run(engine: Engine, text: str) -> dict:
    return engine.analyse_bytes(text.encode())


def hyp_ids(report: dict) -> list[str]:
    return [h["id"] for h in report["differential"] + report["probable"]]


def test_parse_size_units() -> None:
    assert parse_size("35G") == 35 << 30
    assert parse_size("20.00 MiB") == 20 << 20
    assert parse_size("512 bytes") == 512
    assert parse_size("4096") == 4096
    assert parse_size("lots") is None


def test_df_tables_become_typed_facts(engine: Engine) -> None:
    r = run(engine, DF_FREE + DF_I_FULL)
    blocks = r["facts"]["df_blocks"]["records"]
    inodes = r["facts"]["df_inodes"]["records"]
    assert blocks[0]["fields"]["use_pct"] == 35 and blocks[0]["fields"]["mount"] == "/ckpt"
    assert blocks[0]["fields"]["avail"] == int(1.1 * (1 << 40))
    # the same row shape under the df -i header is an inode record, not a block record
    assert [i["fields"]["use_pct"] for i in inodes] == [100] and len(blocks) == 1


def test_bare_errno28_is_a_differential_not_a_diagnosis(engine: Engine) -> None:
    r = run(engine, ERRNO28)
    assert r["verdict"] == "differential" and r["root_cause"] is None
    ids = hyp_ids(r)
    assert {"disk-full-enospc", "inode-exhaustion-enospc", "dev-shm-too-small"} <= set(ids)
    assert "fastfilewriter-fd-leak-enospc" in ids
    commands = " ".join(t["command"] for t in r["tell_apart"])
    assert "df -h" in commands and "df -i" in commands and "lsof" in commands


def test_errno28_with_free_df_never_says_really_full(engine: Engine) -> None:
    r = run(engine, ERRNO28 + DF_FREE)
    assert r["verdict"] == "differential"
    assert "disk-full-enospc" not in hyp_ids(r)
    ruled = {c["id"]: c for c in r["ruled_out"]}
    assert "disk-full-enospc" in ruled
    against = ruled["disk-full-enospc"]["facts_against"][0]
    assert against["fact"] == "df_blocks" and "35%" in against["lines"][0]["text"]
    commands = " ".join(t["command"] for t in r["tell_apart"])
    assert "df -i" in commands and "lsof" in commands


def test_errno28_with_full_df_is_really_full(engine: Engine) -> None:
    r = run(engine, ERRNO28 + DF_FULL)
    assert r["verdict"] == "confident"
    assert r["root_cause"]["id"] == "disk-full-enospc"
    assert r["root_cause"]["facts_for"][0]["fact"] == "df_blocks"


def test_errno28_with_full_inodes_names_inode_exhaustion(engine: Engine) -> None:
    r = run(engine, ERRNO28 + DF_FREE + DF_I_FULL)
    assert r["verdict"] == "confident"
    assert r["root_cause"]["id"] == "inode-exhaustion-enospc"


def test_errno28_with_full_dev_shm_names_dev_shm(engine: Engine) -> None:
    r = run(
        engine,
        ERRNO28.replace(
            "/ckpt/run1/global_step400/mp_rank_00_model_states.pt", "/dev/shm/torch_123_456"
        )
        + DF_SHM_FULL,
    )
    assert r["verdict"] == "confident"
    assert r["root_cause"]["id"] == "dev-shm-too-small"


def test_fastfilewriter_writer_config_and_version_name_the_leak(engine: Engine) -> None:
    banner = "deepspeed info ................... 0.19.0, unknown, unknown\n"
    config = '[INFO] [config.py:1003:print_user_config]   json = {\n    "checkpoint":{\n        "writer":{\n            "type":"fast"\n        }\n    },\n'
    r = run(engine, banner + config + ERRNO28 + DF_FREE)
    assert r["verdict"] == "confident", hyp_ids(r)
    assert r["root_cause"]["id"] == "fastfilewriter-fd-leak-enospc"
    # outside the affected range the same log is not the leak
    r = run(engine, banner.replace("0.19.0", "0.19.1") + config + ERRNO28 + DF_FREE)
    assert r["root_cause"] is None or r["root_cause"]["id"] != "fastfilewriter-fd-leak-enospc"


def test_sigkill_alone_is_probable_host_oom_with_its_confirm_command(engine: Engine) -> None:
    log = (
        "[2026-11-29 19:02:51,946] [ERROR] [launch.py:341:sigkill_handler] ['/usr/bin/python3', "
        "'-u', 'train.py', '--local_rank=1'] exits with return code = -9\n"
    )
    r = run(engine, log)
    assert r["verdict"] == "probable"
    assert r["probable"][0]["id"] == "host-oom-killer-sigkill"
    assert any("dmesg" in c["command"] for c in r["confirm"])


def test_nccl_system_error_is_a_consequence_of_full_dev_shm(engine: Engine) -> None:
    log = (
        "[rank3]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), "
        "NCCL version 2.20.5\n"
        "[rank3]: ncclSystemError: System call (e.g. socket, malloc) or external library call "
        "failed or device error. \n"
        "[rank3]: Last error:\n"
        "[rank3]: Error: failed to extend /dev/shm/nccl-WU88OE to 9637892 bytes\n"
    )
    r = run(engine, log)
    assert r["verdict"] == "confident", r["verdict"]
    assert r["root_cause"]["id"] == "dev-shm-too-small"
    assert r["initiating_rank"] == 3
    conseq = {c["id"]: c for c in r["consequences"]}
    assert conseq["nccl-system-error"]["caused_by"] == "dev-shm-too-small"
    assert not any("probably independent" in n for n in r["notes"])


def test_fragmentation_vetoed_when_request_exceeds_free_plus_reserved() -> None:
    pack = load_rulepack()
    collector = FactCollector(pack["globals"]["facts"])
    line = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB. GPU 0 has a total "
        "capacity of 79.15 GiB of which 1.50 GiB is free. Including non-PyTorch memory, this process "
        "has 77.64 GiB memory in use. Of the allocated memory 73.20 GiB is allocated by PyTorch, and "
        "3.12 GiB is reserved by PyTorch but unallocated."
    )
    assert collector.wants(line)
    collector.observe(0, line, 1, 0, line)
    entry = next(e for e in pack["entries"] if e["id"] == "cuda-oom-fragmentation")
    (cond,) = entry["match"]["facts"]
    assert check(cond, collector.records).state == "holds"  # 8 GiB > 1.5 + 3.12 GiB: veto
    small = line.replace("8.00 GiB", "2.00 GiB")
    collector = FactCollector(pack["globals"]["facts"])
    collector.observe(0, small, 1, 0, small)
    assert check(cond, collector.records).state == "fails"


def test_fact_condition_is_unknown_without_records() -> None:
    cond = {"fact": "df_blocks", "test": {"use_pct": {"lt": 90}}, "effect": "veto"}
    assert check(cond, {}).state == "unknown"


def test_slow_rank_in_a_barrier_is_named_without_inventing_a_sigkill(engine: Engine) -> None:
    lines = [
        "[rank0]: Running tokenizer on dataset:  41%|████      | 41000/100000 [29:12<42:01, 23.4 examples/s]"
    ]
    for r in (1, 2, 3):
        lines.append(
            f"[rank{r}]:[E1201 10:41:12.123456 1234 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog "
            "caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, "
            "NumelOut=1, Timeout(ms)=1800000) ran for 1800087 milliseconds before timing out."
        )
    lines.append(
        "[rank0]: Running tokenizer on dataset:  42%|████▏     | 42000/100000 [29:55<41:18, 23.4 examples/s]"
    )
    r = run(engine, "\n".join(lines) + "\n")
    assert r["initiating_rank"] == 0
    assert r["initiating_basis"] == "absent-from-collateral-reports"
    notes = " ".join(r["notes"])
    assert "rank 0 is the slow rank" in notes
    assert "SIGKILL" not in notes


def test_text_report_shows_the_facts_and_where_each_rank_came_from(engine: Engine) -> None:
    from denpex_kb.engine.render import render_text

    prefixed = "".join(f"[rank3]:{ln}\n" for ln in ERRNO28.splitlines())
    r = run(engine, prefixed + DF_FULL)
    ev = r["root_cause"]["evidence"][0]
    assert (ev["rank"], ev["rank_via"]) == (3, "prefix")
    text = render_text(r)
    assert "verdict: confident" in text
    assert "(rank from its [rankN]/launcher prefix)" in text
    facts = text.split("\nFACTS", 1)[1].split("\nFIX", 1)[0]
    assert "100% /ckpt" in facts  # the df row that proves the disk is full, with its line


def test_rank_via_is_null_without_a_rank(engine: Engine) -> None:
    r = run(engine, ERRNO28 + DF_FULL)
    assert {(e["rank"], e["rank_via"]) for e in r["root_cause"]["evidence"]} == {(None, None)}


DS_OPT_ADAM = (
    "Exception ignored in: <function DeepSpeedCPUAdam.__del__ at 0x7f2c1c0d3e20>\n"
    "Traceback (most recent call last):\n"
    '  File "/opt/conda/lib/python3.10/site-packages/deepspeed/ops/adam/cpu_adam.py", line 102, in __del__\n'
    "    self.ds_opt_adam.destroy_adam(self.opt_id)\n"
    "AttributeError: 'DeepSpeedCPUAdam' object has no attribute 'ds_opt_adam'\n"
)


def test_collateral_line_alone_stands_in_as_the_probable_cause(engine: Engine) -> None:
    r = run(engine, DS_OPT_ADAM)
    assert r["verdict"] == "probable"
    assert [p["id"] for p in r["probable"]] == ["cpu-adam-missing-ds-opt-adam"]
    assert "cpu-adam-missing-ds-opt-adam" not in {c["id"] for c in r["collateral"]}


def test_stand_in_yields_to_a_root_cause_in_the_same_log(engine: Engine) -> None:
    build = (
        "[1/3] c++ -MMD -MF cpu_adam.o.d -DTORCH_EXTENSION_NAME=cpu_adam -c cpu_adam.cpp -o cpu_adam.o\n"
        "FAILED: cpu_adam.o\n"
        "/bin/sh: 1: c++: not found\n"
        "ninja: build stopped: subcommand failed.\n"
        "RuntimeError: Error building extension 'cpu_adam'\n"
    )
    r = run(engine, build + DS_OPT_ADAM)
    assert r["verdict"] != "none"
    top = (r["root_cause"] or (r["probable"] + r["differential"])[0])["id"]
    assert top != "cpu-adam-missing-ds-opt-adam"
    assert "cpu-adam-missing-ds-opt-adam" in {c["id"] for c in r["collateral"]}


def test_collateral_without_weak_signals_never_stands_in(engine: Engine) -> None:
    watchdog = (
        "[rank0]:[E1129 11:00:00.200000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, "
        "NumelOut=9801523, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.\n"
    )
    r = run(engine, watchdog)
    assert r["verdict"] == "none" and not r["probable"]
    assert "nccl-watchdog-timeout" in {c["id"] for c in r["collateral"]}


DS_REPORT = (  # ds_report's op table after ANSI stripping (deepspeed/env_report.py, v0.5-v0.19)
    "JIT compiled ops requires ninja\n"
    "ninja .................. [OKAY]\n"
    "op name ................ installed .. compatible\n"
    "async_io ............... [NO] ....... [NO]\n"
    "cpu_adam ............... [NO] ....... [OKAY]\n"
)
NVSMI_T4 = "|   0  Tesla T4            Off  | 00000000:00:04.0 Off |                    0 |\n"
NVSMI_A100 = (
    "|   0  NVIDIA A100-SXM4-80GB          On  |   00000000:07:00.0 Off |                    0 |\n"
)


def test_ds_report_and_nvidia_smi_rows_become_facts(engine: Engine) -> None:
    r = run(engine, DS_REPORT + NVSMI_T4)
    ops = {(f["fields"]["op"], f["fields"]["compatible"]) for f in r["facts"]["ds_op"]["records"]}
    assert ops == {("ninja", "OKAY"), ("async_io", "NO"), ("cpu_adam", "OKAY")}
    assert [f["fields"]["name"] for f in r["facts"]["gpu_model"]["records"]] == ["Tesla T4"]


def test_pre_ampere_gpu_favours_the_dtype_entry_and_an_ampere_one_does_not(engine: Engine) -> None:
    err = "ValueError: Type bf16 is not supported on your device.\n"
    old = run(engine, NVSMI_T4 + err)["root_cause"]
    new = run(engine, NVSMI_A100 + err)["root_cause"]
    assert old["id"] == new["id"] == "dtype-not-supported-on-device"
    assert [f["fact"] for f in old["facts_for"]] == ["gpu_model"]
    assert new["facts_for"] == [] and old["confidence"] > new["confidence"]


def test_a_harmless_warning_alone_is_called_harmless_not_a_missing_error(engine: Engine) -> None:
    warn = (
        "[2024-05-01 10:00:00,000] [WARNING] [parameter_offload.py:87:_apply_to_tensors_only] "
        "Invalidate trace cache @ step 0 and module 1: cache has only 0 modules\n"
    )
    r = run(engine, warn)
    assert r["verdict"] == "none"
    assert any(n.startswith("Only lines that are harmless") for n in r["notes"])
    r2 = run(engine, warn + DS_OPT_ADAM.replace("DeepSpeedCPUAdam", "DeepSpeedCPUAdagrad"))
    assert not any(n.startswith("Only lines that are harmless") for n in r2["notes"])


# --- one entry's standing (`match --entry ID`) ----------------------------------------------

NCCL_SHM = (
    "[rank3]: ncclSystemError: System call (e.g. socket, malloc) or external library call "
    "failed or device error. \n"
    "[rank3]: Last error:\n"
    "[rank3]: Error: failed to extend /dev/shm/nccl-WU88OE to 9637892 bytes\n"
)


@pytest.mark.parametrize(
    ("log", "entry", "standing"),
    [
        (ERRNO28 + DF_FREE, "disk-full-enospc", "ruled-out"),
        (ERRNO28 + DF_FREE, "inode-exhaustion-enospc", "differential"),
        (ERRNO28 + DF_FULL, "disk-full-enospc", "root-cause"),
        (NCCL_SHM, "dev-shm-too-small", "root-cause"),
        (NCCL_SHM, "nccl-system-error", "consequence"),
        (NCCL_SHM, "cuda-oom-fragmentation", "absent"),
    ],
)
def test_entry_focus_says_where_one_entry_stands(
    engine: Engine, log: str, entry: str, standing: str
) -> None:
    from denpex_kb.engine.focus import entry_focus

    r = run(engine, log)
    f = entry_focus(r, entry)
    assert f["standing"] == standing, (f, r["verdict"])
    assert bool(f["evidence"]) == (standing != "absent")
    if standing == "ruled-out":
        assert f["facts_against"] and "35%" in f["facts_against"][0]["lines"][0]["text"]
    if standing == "consequence":
        assert "dev-shm-too-small" in f["detail"]


def test_match_entry_cli_exit_code_and_schema(tmp_path) -> None:  # noqa: ANN001
    import json

    import jsonschema
    from click.testing import CliRunner

    from denpex_kb.cli import main
    from denpex_kb.schemas import load_schema, strict_schema

    log = tmp_path / "seed.log"
    log.write_text(ERRNO28 + DF_FREE)
    runner = CliRunner()
    res = runner.invoke(main, ["match", "--entry", "disk-full-enospc", str(log)])
    assert res.exit_code == 1 and res.stdout.startswith("ENTRY disk-full-enospc  RULED-OUT")
    assert "35% /ckpt" in res.stdout and "THE WHOLE DIAGNOSIS" in res.stdout
    res = runner.invoke(
        main, ["match", "--format", "json", "--entry", "disk-full-enospc", str(log)]
    )
    doc = json.loads(res.stdout)
    jsonschema.validate(doc, strict_schema(load_schema("report")))
    assert doc["focus"]["standing"] == "ruled-out" and doc["format_version"] == "1.3"
    log.write_text(ERRNO28 + DF_FULL)
    assert runner.invoke(main, ["match", "--entry", "disk-full-enospc", str(log)]).exit_code == 0
    res = runner.invoke(main, ["match", "--entry", "no-such-entry", str(log)])
    assert res.exit_code == 2 and "no entry 'no-such-entry'" in res.stderr


def test_focus_standings_are_the_schema_vocabulary() -> None:
    from denpex_kb.engine.focus import STANDINGS
    from denpex_kb.schemas import load_schema

    spec = load_schema("report")["properties"]["focus"]["properties"]["standing"]["anyOf"][0]
    assert tuple(spec["enum"]) == STANDINGS


# The P2P status matrix of `nvidia-smi topo -p2p r`, laid out as in noonghunna/club-3090#1229.
P2P_MATRIX = " \tGPU0\tGPU1\t\n GPU0\tX\t{s}\t\n GPU1\t{s}\tX\t\n"
RTX4090 = (
    "GPU 0: NVIDIA GeForce RTX 4090 (UUID: GPU-3c1f0a2e-5b7d-4e11-9a0c-7f2d7e6b1a01)\n"
    "GPU 1: NVIDIA GeForce RTX 4090 (UUID: GPU-8d2e4b6a-1c3f-4a7b-b9e2-0e5c4f3a2b02)\n"
)
WATCHDOG = (
    "[rank0]:[E820 10:42:04.906457629 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=65536, "
    "NumelOut=65536, Timeout(ms)=1800000) ran for 1800091 milliseconds before timing out.\n"
)
TOPO_M = (
    "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
    "GPU0\t X \tPHB\t0-63\t0\t\tN/A\n"
    "GPU1\tPHB\t X \t0-63\t0\t\tN/A\n"
)


def test_consumer_gpu_watchdog_is_probable_until_the_p2p_matrix_settles_it(engine: Engine) -> None:
    bare = run(engine, RTX4090 + WATCHDOG)
    assert bare["verdict"] == "probable" and hyp_ids(bare) == ["gpu-p2p-unsupported-hang"]
    ok = run(engine, RTX4090 + P2P_MATRIX.format(s="OK") + WATCHDOG)
    assert ok["verdict"] == "confident"
    assert ok["root_cause"]["id"] == "gpu-p2p-unsupported-hang"
    assert [f["fact"] for f in ok["root_cause"]["facts_for"]] == ["gpu_p2p"]
    gns = run(engine, RTX4090 + P2P_MATRIX.format(s="GNS") + WATCHDOG)
    assert gns["verdict"] == "none" and gns["root_cause"] is None
    ruled = [c for c in gns["ruled_out"] if c["id"] == "gpu-p2p-unsupported-hang"]
    assert ruled and [(f["fact"], f["state"]) for f in ruled[0]["facts_against"]] == [
        ("gpu_p2p", "fails")
    ]


def test_topo_m_is_not_read_as_the_p2p_matrix(engine: Engine) -> None:
    r = run(engine, RTX4090 + TOPO_M + WATCHDOG)
    assert "gpu_p2p" not in r["facts"]
    assert r["verdict"] == "probable"


# --- lines a signal matched whose entry did not fire ----------------------------------------

NO_MODULE = "[rank2]: ModuleNotFoundError: No module named 'foo_bar_pkg'\n"
META = "[rank2]: NotImplementedError: Cannot copy out of meta tensor; no data!"


def test_an_error_line_whose_signal_fired_nothing_is_still_an_unrecognised_error(
    engine: Engine,
) -> None:
    # A broad signal that waits for a second one used to hide the line: the report said the
    # log showed no error at all.
    warn = (
        "[2024-05-01 10:00:00,000] [WARNING] [parameter_offload.py:87:_apply_to_tensors_only] "
        "Invalidate trace cache @ step 0 and module 1: cache has only 0 modules\n"
    )
    r = run(engine, warn + NO_MODULE)
    assert r["verdict"] == "none"
    [err] = r["unrecognised_errors"]
    assert err["line"] == 2 and err["rank"] == 2
    # the entries named are ones a signal of which matches the line and that did not fire
    assert err["declined_by"]
    assert not set(err["declined_by"]) & {c["id"] for c in r["candidates"]}
    pack_ids = {e["id"] for e in engine.pack["entries"]}
    assert set(err["declined_by"]) <= pack_ids
    assert r["initiating_rank"] == 2 and r["initiating_basis"] == "earliest-unrecognised-error"
    assert not any(n.startswith("Only lines that are harmless") for n in r["notes"])
    # Both renderers say which rule saw the line.
    from denpex_kb.engine import render_markdown, render_text

    for out in (render_text(r), render_markdown(r)):
        assert f"a signal of {err['declined_by'][0]}" in out
    # An error line no signal matches carries no declined_by.
    r2 = run(engine, "[rank1]: ValueError: flux capacitor at 88 mph\n")
    assert [e.get("declined_by") for e in r2["unrecognised_errors"]] == [None]


def _unrecognised_report(declined: list[str] | None) -> dict:
    err = {"file": "x.log", "line": 1, "rank": 2, "host": None, "text": META}
    if declined is not None:
        err["declined_by"] = declined
    return {"verdict": "none", "unrecognised_errors": [err], "probable": []}


def test_the_text_index_does_not_hand_a_declined_line_back_to_its_entry(
    engine: Engine, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from denpex_kb.engine import suggest_related

    monkeypatch.setenv("DENPEX_KB_CACHE", str(tmp_path / "cache"))
    r = _unrecognised_report(None)
    suggest_related(r, pack=engine.pack)
    assert r["verdict"] == "probable" and r["probable_basis"] == "text-index"
    winner = r["probable"][0]["id"]
    # The same line, declined by the entry the index would name: no probable cause, the
    # entry stays a related hint.
    r = _unrecognised_report([winner])
    suggest_related(r, pack=engine.pack)
    assert r["verdict"] == "none" and r["probable"] == []
    assert r["related"][0]["id"] == winner
