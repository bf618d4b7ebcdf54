"""The hostile battery: inputs a demanding user or an attacker would try, generated small enough
for CI. Each case checks the exit code, that the failure is one clear line on stderr, and that
what was already good is kept. Work is bounded by design (budgets, caps, RE2); the cases check
the budget or the counter, never the clock."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PER_RANK = ROOT / "tests" / "logs" / "per-rank-folder"
HOSTILE_KB = ROOT / "tests" / "fixtures" / "hostile-kb"
OOM_LINE = (PER_RANK / "train-rank2.log").read_text().splitlines()[7]


class Cli:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.env = dict(os.environ)
        self.env["PYTHONPATH"] = str(ROOT) + os.pathsep + self.env.get("PYTHONPATH", "")
        self.env["DENPEX_KB_CACHE"] = str(tmp / "cache")
        self.env.pop("DENPEX_KB_DEBUG", None)

    def __call__(
        self, *args: str, stdin: bytes | None = None, env: dict | None = None, stdout=None
    ) -> subprocess.CompletedProcess:  # noqa: ANN001
        return subprocess.run(
            [sys.executable, "-m", "denpex_kb", *args],
            input=stdin,
            stdout=stdout if stdout is not None else subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**self.env, **(env or {})},
            cwd=self.tmp,
            timeout=300,
        )


def stderr_lines(proc: subprocess.CompletedProcess) -> list[str]:
    return [ln for ln in proc.stderr.decode("utf-8", "replace").splitlines() if ln.strip()]


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    lines = stderr_lines(proc)
    assert len(lines) == 1, f"expected one stderr line, got {lines}"
    assert "Traceback" not in lines[0]
    assert lines[0].startswith("denpex-kb: error: "), lines[0]
    return lines[0]


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


@pytest.fixture
def kb_copy(tmp_path: Path) -> Path:
    """A copy of the hostile fixture KB (one entry, one tag) to break in a test."""
    dest = tmp_path / "kbcopy" / "kb"
    shutil.copytree(HOSTILE_KB, dest)
    return dest
