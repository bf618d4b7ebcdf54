"""The CLI's validate/list/show commands and its error contract (one line, exit 2)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from denpex_kb.cli import main

FIXTURE = Path(__file__).parent / "fixtures" / "kb"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_validate_ok() -> None:
    code, out, _ = run("validate", str(FIXTURE))
    assert code == 0
    assert out.startswith("ok: 2 entries, 4 examples, 3 tags")


def test_validate_reports_problems_and_exits_1(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    shutil.copytree(FIXTURE, root)
    path = root / "checkpoint" / "fixture-quota.yaml"
    path.write_text(path.read_text().replace("severity: high", "severity: extreme"))
    code, out, err = run("validate", str(root))
    assert code == 1
    assert "fixture-quota.yaml:8:11: severity: 'extreme' is not one of" in err
    assert "1 problem(s) found" in err
    assert "Traceback" not in err + out


def test_list_filters() -> None:
    code, out, _ = run("list", "--kb", str(FIXTURE), "--format", "json")
    assert code == 0
    assert [e["id"] for e in json.loads(out)] == ["fixture-disk-full", "fixture-quota"]
    code, out, _ = run("list", "--kb", str(FIXTURE), "--tag", "disk-full")
    assert code == 0 and out == ""
    code, out, _ = run(
        "list", "--kb", str(FIXTURE), "--phase", "checkpoint", "--class", "resource-exhaustion"
    )
    assert code == 0 and out.count("\n") == 2


def test_list_unknown_filter_is_a_user_error() -> None:
    code, out, err = run("list", "--kb", str(FIXTURE), "--phase", "training")
    assert code == 2
    assert err.startswith("denpex-kb: error: unknown phase 'training'")
    assert err.count("\n") == 1


def test_show_renders_every_section() -> None:
    code, out, _ = run("show", "--kb", str(FIXTURE), "fixture-disk-full")
    assert code == 0
    for heading in (
        "WHAT YOU SEE",
        "WHY IT HAPPENS",
        "CHECK IT",
        "FIX",
        "VERIFY",
        "LOOK-ALIKES",
        "REFERENCES",
    ):
        assert heading in out
    assert "$ df -h <ckpt_dir>" in out


def test_show_unknown_id_suggests() -> None:
    code, _, err = run("show", "--kb", str(FIXTURE), "fixture-quot")
    assert code == 2
    assert err.startswith("denpex-kb: error: no entry 'fixture-quot'; did you mean fixture-quota")
    assert err.count("\n") == 1


def test_invalid_kb_is_a_user_error_for_list(tmp_path: Path) -> None:
    code, _, err = run("list", "--kb", str(tmp_path / "missing"))
    assert code == 2
    assert "knowledge base folder does not exist" in err
    assert "Traceback" not in err


def test_console_script_runs() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "denpex_kb.cli", "validate", str(FIXTURE)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ok: 2 entries")


def test_terminal_rendering_keeps_paragraphs_and_list_items() -> None:
    from denpex_kb.cli import _wrap

    text = "Find it like this:\n- **It died.** An earlier\n  traceback.\n- It is missing.\n\nNext paragraph."
    assert _wrap(text) == (
        "  Find it like this:\n  - **It died.** An earlier traceback.\n  - It is missing.\n\n  Next paragraph."
    )
