"""CLI conventions (docs/cli.md): colour, quiet/verbose, progress, closed pipes, completion,
the build output folder, and every imported third-party module declared as a dependency."""

from __future__ import annotations

import ast
import io
import os
import pty
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from click.testing import CliRunner

from denpex_kb import progress
from denpex_kb.cli import BUILD_MARKER, main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "fastfilewriter-rotation-enospc.log"
FIXTURE_KB = ROOT / "tests" / "fixtures" / "kb"
ANSI = "\x1b["


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


def _cli(*args: str, **kw):  # noqa: ANN003, ANN202
    return subprocess.run(
        [sys.executable, "-m", "denpex_kb", *args],
        capture_output=True,
        timeout=300,
        check=False,
        **kw,
    )


# --- colour -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "env", "coloured"),
    [
        ((), {}, False),  # a pipe: no colour by default
        ((), {"FORCE_COLOR": "1"}, True),
        (("--color", "always"), {}, True),
        (("--color", "always"), {"NO_COLOR": "1"}, True),  # the option wins
        (("--color", "never"), {"FORCE_COLOR": "1"}, False),
        (("--no-color",), {"FORCE_COLOR": "1"}, False),
    ],
)
def test_colour_in_a_pipe(args: tuple[str, ...], env: dict[str, str], coloured: bool) -> None:
    result = CliRunner(env={"NO_COLOR": None, "FORCE_COLOR": None, **env}).invoke(
        main, ["match", *args, str(EXAMPLE)]
    )
    assert result.exit_code == 0, result.output
    assert (ANSI in result.stdout) is coloured


def test_colour_on_a_terminal_honours_no_color() -> None:
    def on_tty(**extra: str) -> bytes:
        master, slave = pty.openpty()
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "denpex_kb", "match", str(EXAMPLE)],
                stdout=slave,
                stderr=subprocess.DEVNULL,
                env=_env(TERM="xterm", **extra),
                timeout=300,
                check=False,
            )
            assert proc.returncode == 0
            os.close(slave)
            slave = -1
            out = b""
            while True:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                out += chunk
            return out
        finally:
            os.close(master)
            if slave != -1:
                os.close(slave)

    assert ANSI.encode() in on_tty()
    assert ANSI.encode() not in on_tty(NO_COLOR="1")


# --- quiet, verbose -------------------------------------------------------------------------------


def test_quiet_and_verbose() -> None:
    plain = CliRunner().invoke(main, ["list", "--kb", str(FIXTURE_KB)])
    assert "2 of 2 entries" in plain.stderr
    for args in (["-q", "list"], ["list", "--quiet"]):
        quiet = CliRunner().invoke(main, [*args, "--kb", str(FIXTURE_KB)])
        assert quiet.exit_code == 0 and quiet.stderr == "" and quiet.stdout == plain.stdout
    verbose = CliRunner().invoke(main, ["match", "-v", str(EXAMPLE)])
    assert re.search(r"rule pack sha256:[0-9a-f]{64} \(\d+ rules\)", verbose.stderr)
    assert verbose.stdout == CliRunner().invoke(main, ["match", str(EXAMPLE)]).stdout


# --- progress -------------------------------------------------------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_progress_line_shows_bytes_rate_and_eta() -> None:
    out, clock = io.StringIO(), _Clock()
    p = progress.Progress(total=100 << 20, out=out, now=clock, threshold=8 << 20)
    clock.t = 1.0
    p.update(4 << 20)
    assert out.getvalue() == ""  # below the threshold: nothing yet
    clock.t = 2.0
    p.update(50 << 20)
    line = out.getvalue()
    assert "reading 50.0 MiB of 100.0 MiB (50%), 25.0 MiB/s, ETA 0:02" in line
    clock.t = 2.1
    p.update(60 << 20)
    assert out.getvalue() == line  # redrawn at most every REDRAW_S
    p.finish()
    assert out.getvalue().endswith("\r\x1b[K")
    unknown = progress.Progress(total=None, out=io.StringIO(), now=clock, threshold=0)
    clock.t += 2.0
    assert unknown.line(10 << 20) == "reading 10.0 MiB, 5.0 MiB/s"  # no total: no ETA


def _big_log(tmp_path: Path) -> Path:
    log = tmp_path / "big.log"
    filler = b"[rank3]: step 1234 loss 2.345 lr 1e-4 throughput 123.4 samples/s\n" * 150_000
    log.write_bytes(filler + EXAMPLE.read_bytes())
    assert log.stat().st_size > progress.THRESHOLD
    return log


def test_progress_on_a_terminal_and_never_in_a_pipe(tmp_path: Path) -> None:
    log = _big_log(tmp_path)
    master, slave = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "denpex_kb", "match", "--format", "json", str(log)],
            stdout=subprocess.PIPE,
            stderr=slave,
            env=_env(),
            timeout=300,
            check=False,
        )
        os.close(slave)
        slave = -1
        err = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            err += chunk
    finally:
        os.close(master)
        if slave != -1:
            os.close(slave)
    assert proc.returncode == 0
    assert re.search(rb"reading [0-9.]+ MiB of [0-9.]+ MiB \(\d+%\), [0-9.]+ [KMG]?i?B/s", err)
    assert err.endswith(b"\r\x1b[K")
    assert b"reading" not in proc.stdout
    piped = _cli("match", "--format", "json", str(log), env=_env())
    assert piped.returncode == 0 and piped.stderr == b""


# --- closed pipes ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "code"), [(("list",), 0), (("show", "disk-full-enospc"), 0), (("match",), 0)]
)
def test_a_closed_pipe_ends_quietly(args: tuple[str, ...], code: int) -> None:
    extra = (str(EXAMPLE),) if args == ("match",) else ()
    proc = subprocess.Popen(
        [sys.executable, "-m", "denpex_kb", *args, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before anything is written: EPIPE for certain
    err = proc.stderr.read()
    assert proc.wait(timeout=300) == code
    assert err == b""


def test_list_into_head_through_a_shell() -> None:
    proc = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {sys.executable} -m denpex_kb list | head -1"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0 and len(proc.stdout.splitlines()) == 1
    assert "Traceback" not in proc.stderr and "error" not in proc.stderr


# --- completion -----------------------------------------------------------------------------------


def test_shell_completion_of_entry_ids_and_options() -> None:
    def complete(words: str) -> str:
        env = _env(
            _DENPEX_KB_COMPLETE="bash_complete",
            COMP_WORDS=words,
            COMP_CWORD=str(len(words.split()) - (0 if words.endswith(" ") else 1)),
        )
        proc = _cli(env=env)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.decode()

    assert "plain,fastfilewriter-fd-leak-enospc" in complete("denpex-kb show fastfilewriter-")
    assert "plain,checkpoint" in complete("denpex-kb list --phase check")
    assert "plain,--verbose" in complete("denpex-kb match --verb")
    for shell in ("bash", "zsh", "fish"):
        script = _cli(env=_env(_DENPEX_KB_COMPLETE=f"{shell}_source"))
        assert script.returncode == 0 and b"_DENPEX_KB_COMPLETE" in script.stdout, shell


# --- build output ---------------------------------------------------------------------------------


def test_build_writes_one_clearly_named_folder(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    runner = CliRunner()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DENPEX_KB_CACHE", str(tmp_path / ".cache"))
    first = runner.invoke(main, ["build", "--kb", str(FIXTURE_KB)])
    assert first.exit_code == 0, first.output
    out = tmp_path / "denpex-kb-build"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".cache", "denpex-kb-build"]
    assert (out / BUILD_MARKER).is_file()
    for name in ("denpex-rules.json", "index/denpex-index.json", "site/index.html"):
        assert (out / name).is_file(), name
    assert not list(out.glob(".*.lock")) and not list(out.glob("*.tmp-*"))
    again = runner.invoke(main, ["build", "--kb", str(FIXTURE_KB)])
    assert again.exit_code == 0, again.output  # its own folder: replaced


def test_build_refuses_a_folder_it_did_not_make(tmp_path: Path) -> None:
    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "todo.txt").write_text("keep me")
    result = CliRunner().invoke(main, ["build", "--kb", str(FIXTURE_KB), "-o", str(mine)])
    assert result.exit_code == 2
    assert "was not made by `denpex-kb build`" in result.stderr
    assert sorted(p.name for p in mine.iterdir()) == ["todo.txt"]


def test_a_failed_build_leaves_nothing_behind(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    from denpex_kb import site

    def broken(**kw):  # noqa: ANN003, ANN202
        raise site.SiteBuildError("mkdocs said no")

    monkeypatch.setattr(site, "build_site", broken)
    out = tmp_path / "hub"
    result = CliRunner().invoke(main, ["build", "--kb", str(FIXTURE_KB), "-o", str(out)])
    assert result.exit_code == 2 and "mkdocs said no" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")) == []


# --- dependencies ---------------------------------------------------------------------------------


def test_every_imported_package_is_a_declared_dependency() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = project["dependencies"] + [
        d for ds in project["optional-dependencies"].values() for d in ds
    ]
    names = {
        re.split(r"[\s<>=!~;\[]", d, maxsplit=1)[0].lower().replace("_", "-") for d in declared
    }
    providers = metadata.packages_distributions()
    imported: set[str] = set()
    for path in (ROOT / "denpex_kb").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                imported.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    # stdlib modules of other CPython releases than this one: _sha2 is 3.12+'s SHA-2 module,
    # which denpex_kb.digest tries before 3.11's _sha256
    other_stdlib = {"_sha2"}
    third_party = {
        m
        for m in imported
        if m not in sys.stdlib_module_names and m not in other_stdlib and m != "denpex_kb"
    }
    assert {"click", "yaml", "mkdocs"} <= third_party  # the scan sees real imports
    for module in sorted(third_party):
        dists = {d.lower().replace("_", "-") for d in providers.get(module, [])}
        dists = dists or {module.lower()}  # an optional one not installed here: by its name
        assert dists & names, f"`import {module}` (from {dists}) is not declared"


def test_layered_knowledge_bases_on_the_command_line(tmp_path: Path) -> None:
    team = tmp_path / "team-kb"
    (team / "checkpoint").mkdir(parents=True)
    src = (FIXTURE_KB / "checkpoint" / "fixture-quota.yaml").read_text("utf-8")
    (team / "checkpoint" / "team-quota.yaml").write_text(
        src.replace("id: fixture-quota", "id: team-quota", 1), "utf-8"
    )
    ok = CliRunner().invoke(main, ["validate", str(FIXTURE_KB), str(team)])
    assert ok.exit_code == 0 and "ok: 3 entries" in ok.stdout, ok.output
    listed = CliRunner().invoke(main, ["list", "--kb", str(FIXTURE_KB), "--kb", str(team)])
    assert "team-quota" in listed.stdout and "fixture-quota" in listed.stdout
    out = tmp_path / "hub"
    built = CliRunner().invoke(
        main, ["build", "--kb", str(FIXTURE_KB), "--kb", str(team), "-o", str(out)]
    )
    assert built.exit_code == 0, built.output
    assert (out / "site" / "entries" / "team-quota.html").is_file()
    assert (out / "site" / "entries" / "fixture-quota.html").is_file()
    (team / "checkpoint" / "fixture-quota.yaml").write_text(src, "utf-8")  # an id clash
    clash = CliRunner().invoke(main, ["validate", str(FIXTURE_KB), str(team)])
    assert clash.exit_code == 1 and "duplicate id 'fixture-quota'" in clash.stderr
