"""`match --check [--run]`: the read-only commands that settle a differential, run only on
request, their output diagnosed again. Recorded outputs are composed in GNU df's format."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from denpex_kb.confirm import Check, checks, run_checks, transcript
from denpex_kb.engine import Engine, load_rulepack

LOG = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 88, in <module>\n'
    "OSError: [Errno 28] No space left on device: '/ckpt/run1/global_step400/x.pt'\n"
    "$ df -h /ckpt\n"
    "Filesystem      Size  Used Avail Use% Mounted on\n"
    "/dev/nvme1n1    1.8T  630G  1.1T  35% /ckpt\n"
)
DF_I_FULL = (
    "Filesystem       Inodes    IUsed IFree IUse% Mounted on\n"
    "/dev/nvme1n1   12000000 12000000     0  100% /ckpt\n"
)


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine(load_rulepack())


def test_checks_are_read_only_and_filled_from_the_failing_path(engine: Engine) -> None:
    report = engine.analyse_bytes(LOG.encode())
    items = checks(report)
    commands = [c.command for c in items]
    assert "df -i /ckpt/run1/global_step400" in commands  # <ckpt_dir> filled in
    pack = {e["id"]: e for e in load_rulepack()["entries"]}
    for c in items:
        listed = [i for i in pack[c.entry]["checklist"] if i["read_only"]]
        assert listed, c.entry  # only entries' read-only commands are ever offered


def test_recorded_output_settles_the_differential(engine: Engine) -> None:
    report = engine.analyse_bytes(LOG.encode())
    assert report["verdict"] == "differential"
    recorded = {"df -i /ckpt/run1/global_step400": (0, DF_I_FULL)}
    ran: list[str] = []

    def runner(cmd: str) -> tuple[int | None, str]:
        ran.append(cmd)
        return recorded.get(cmd, (1, "not recorded\n"))

    results = run_checks(checks(report), runner=runner)
    assert ran and all(PLACE not in c for c in ran for PLACE in ("<ckpt_dir>", "<pid>"))
    again = engine.analyse_bytes(LOG.encode() + b"\n" + transcript(results))
    assert again["verdict"] == "confident"
    assert again["root_cause"]["id"] == "inode-exhaustion-enospc"


def test_placeholders_that_the_log_cannot_fill_are_never_run() -> None:
    ran: list[str] = []
    item = Check("x", "c", "lsof -nP +L1 <ckpt_mount>", False, "s")
    run_checks([item], runner=lambda c: (ran.append(c), (0, ""))[1])
    assert ran == []


@pytest.mark.skipif(shutil.which("df") is None, reason="no df on this machine")
def test_real_df_output_becomes_facts(engine: Engine) -> None:
    out = subprocess.run(["df", "-h", "/"], capture_output=True, text=True, check=True).stdout
    report = engine.analyse_bytes(("$ df -h /\n" + out).encode())
    rows = report["facts"]["df_blocks"]["records"]
    assert rows and rows[0]["fields"]["mount"] == "/"


def test_run_without_check_is_a_usage_error(tmp_path) -> None:  # noqa: ANN001
    log = tmp_path / "x.log"
    log.write_text(LOG)
    proc = subprocess.run(
        [sys.executable, "-m", "denpex_kb", "match", "--run", str(log)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1


def test_cli_check_lists_commands_and_runs_nothing(tmp_path) -> None:  # noqa: ANN001
    log = tmp_path / "x.log"
    log.write_text(LOG)
    proc = subprocess.run(
        [sys.executable, "-m", "denpex_kb", "match", "--check", "--format", "json", str(log)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1
    assert "check [inode-exhaustion-enospc] $ df -i /ckpt/run1/global_step400" in proc.stderr
    assert "ran $" not in proc.stderr
