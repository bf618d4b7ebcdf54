"""Close the loop on the user's machine: the read-only checklist commands that would settle a
differential (or confirm a probable cause), run only with the user's consent, their output fed
back through the same fact extractors for a second diagnosis.

Only commands an entry marks `read_only: true` are ever offered. A command whose placeholders
(`<ckpt_dir>`) cannot be filled from the log is shown, never run.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

PLACEHOLDER = re.compile(r"<[a-z_]+>")
MAX_OUTPUT = 64 * 1024
TIMEOUT_S = 15


@dataclass(frozen=True)
class Check:
    entry: str
    check: str
    command: str  # with the placeholders filled where the log tells them
    runnable: bool  # no placeholder left
    shows: str


@dataclass(frozen=True)
class CheckOutput:
    check: Check
    returncode: int | None  # None: not run (timed out or could not start)
    output: str


def _failing_dir(report: dict[str, Any]) -> str | None:
    records = report.get("facts", {}).get("error_path", {}).get("records", [])
    for rec in records:
        path = rec["fields"].get("path")
        if isinstance(path, str) and path.startswith("/") and "'" not in path:
            return os.path.dirname(path) or "/"
    return None


def fill(command: str, report: dict[str, Any]) -> str:
    """Fill `<ckpt_dir>` and `<ckpt_mount>` with the folder of the path the failing call named
    (df and findmnt resolve a folder to its mount themselves)."""
    folder = _failing_dir(report)
    if folder is None:
        return command
    return command.replace("<ckpt_dir>", folder).replace("<ckpt_mount>", folder)


def checks(report: dict[str, Any]) -> list[Check]:
    """The read-only commands the report offers to settle its verdict, each once."""
    out: list[Check] = []
    seen: set[str] = set()
    for item in report.get("tell_apart") or report.get("confirm") or []:
        command = fill(item["command"].strip(), report)
        if command in seen:
            continue
        seen.add(command)
        runnable = PLACEHOLDER.search(command) is None
        out.append(Check(item["entry"], item["check"], command, runnable, item["shows"]))
    return out


def run_checks(
    items: list[Check], runner: Callable[[str], tuple[int | None, str]] | None = None
) -> list[CheckOutput]:
    """Run the runnable checks (each in `sh -c`, bounded time and output); `runner` replaces
    the shell in tests (recorded outputs)."""
    run = runner or _shell
    results = []
    for c in items:
        if not c.runnable:
            continue
        code, text = run(c.command)
        results.append(CheckOutput(c, code, text[:MAX_OUTPUT]))
    return results


def _shell(command: str) -> tuple[int | None, str]:
    try:
        proc = subprocess.run(
            ["sh", "-c", command],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"(not run: {exc})"
    text = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    return proc.returncode, text


def transcript(results: list[CheckOutput]) -> bytes:
    """The outputs as a log section (`$ command` then its output), for a second diagnosis."""
    parts = []
    for r in results:
        parts.append(f"$ {r.check.command}\n{r.output.rstrip()}\n")
    return "".join(parts).encode("utf-8")
