"""Every failure of the CLI ends in one line on stderr with the right exit code."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from .conftest import OOM_LINE, Cli, one_error_line, stderr_lines

FULL = Path("/dev/full")
needs_full = pytest.mark.skipif(not FULL.exists(), reason="needs /dev/full (Linux)")


@needs_full
@pytest.mark.parametrize("fmt", ["text", "json", "markdown"])
def test_match_output_to_dev_full(cli: Cli, fmt: str) -> None:
    with open(FULL, "wb") as out:
        proc = cli("match", "--format", fmt, "-", stdin=OOM_LINE.encode(), stdout=out)
    assert proc.returncode == 2
    assert "No space left on device" in one_error_line(proc)


@needs_full
def test_list_and_show_to_dev_full(cli: Cli) -> None:
    for args in (["list"], ["show", "cuda-oom-during-step"], ["--help"]):
        with open(FULL, "wb") as out:
            proc = cli(*args, stdout=out)
        assert proc.returncode == 2, args
        one_error_line(proc)


@needs_full
def test_export_rules_to_a_full_disk_names_the_path(cli: Cli) -> None:
    proc = cli("export-rules", "-o", str(FULL))
    assert proc.returncode == 2
    assert (
        one_error_line(proc) == "denpex-kb: error: cannot write /dev/full: No space left on device"
    )
    assert stat.S_ISCHR(os.stat(FULL).st_mode)  # written to, never replaced


def test_rules_from_dev_zero_and_huge_files_are_refused(cli: Cli, tmp_path: Path) -> None:
    from denpex_kb.engine.rules import MAX_RULEPACK_BYTES

    proc = cli("match", "--rules", "/dev/zero", "-", stdin=b"x\n")
    assert proc.returncode == 2 and "not a regular file" in one_error_line(proc)
    huge = tmp_path / "huge.json"
    with open(huge, "wb") as f:
        f.truncate(MAX_RULEPACK_BYTES + 1)  # sparse: costs no disk
    proc = cli("match", "--rules", str(huge), "-", stdin=b"x\n")
    assert proc.returncode == 2 and "refusing more than" in one_error_line(proc)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100000 + "]" * 100000)
    proc = cli("match", "--rules", str(deep), "-", stdin=b"x\n")
    assert proc.returncode == 2
    one_error_line(proc)


@pytest.mark.parametrize(
    "args", [["match", "--bogus"], ["nosuchcommand"], ["list", "--format", "yaml"]]
)
def test_usage_errors_are_one_line(cli: Cli, args: list[str]) -> None:
    proc = cli(*args)
    assert proc.returncode == 2
    one_error_line(proc)


def test_unwritable_cache_costs_nothing(cli: Cli, tmp_path: Path) -> None:
    """A cache path that cannot be created (a file where a folder should be: unwritable even
    for root) and a read-only one: `match` and `search` still answer, with no message."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        for cache in (blocker / "cache", ro / "cache"):
            env = {"DENPEX_KB_CACHE": str(cache)}
            proc = cli("match", "-", stdin=OOM_LINE.encode(), env=env)
            assert proc.returncode == 0 and stderr_lines(proc) == [], proc.stderr
            # no root cause: the suggestion index is built (privately), no traceback
            proc = cli("match", "-", stdin=b"ValueError: zorblax frobnicated\n", env=env)
            assert proc.returncode == 1 and stderr_lines(proc) == [], proc.stderr
            proc = cli("search", "CUDA out of memory", env=env)
            assert proc.returncode == 0 and stderr_lines(proc) == [], proc.stderr
    finally:
        ro.chmod(0o755)


def test_files_are_written_with_the_users_umask(cli: Cli, tmp_path: Path) -> None:
    out = tmp_path / "pack.json"
    old = os.umask(0o022)
    try:
        proc = cli("export-rules", "-o", str(out))
    finally:
        os.umask(old)
    assert proc.returncode == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    json.loads(out.read_text())
