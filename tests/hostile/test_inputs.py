"""Hostile log inputs: special files in folders, archives (truncated too), ReDoS lines, control
characters, file names that are not UTF-8."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import shutil
from pathlib import Path

import pytest

from .conftest import OOM_LINE, PER_RANK, Cli, one_error_line, stderr_lines


def _folder(tmp: Path) -> Path:
    d = tmp / "ranks"
    shutil.copytree(PER_RANK, d)
    return d


def test_special_files_in_a_folder_are_warnings_and_the_rest_is_diagnosed(
    cli: Cli, tmp_path: Path
) -> None:
    d = _folder(tmp_path)
    good = json.loads(cli("match", "--format", "json", str(d)).stdout)
    os.mkfifo(d / "train-rank4.log")  # would block `match` forever if opened
    (d / "train-rank5.log").symlink_to("/dev/zero")  # would never end
    (d / "train-rank6.log").symlink_to("train-rank6.log")  # a symlink loop
    proc = cli("match", "--format", "json", str(d))
    assert proc.returncode == 0
    report = json.loads(proc.stdout)
    assert report["root_cause"]["id"] == good["root_cause"]["id"]
    assert report["initiating_rank"] == good["initiating_rank"]
    assert len(report["warnings"]) == 3
    assert any("FIFO" in w for w in report["warnings"])
    assert any("device" in w for w in report["warnings"])
    text = cli("match", str(d))
    assert text.returncode == 0
    warnings = stderr_lines(text)
    assert len(warnings) == 3 and all(w.startswith("denpex-kb: warning: ") for w in warnings)


def _big_log() -> bytes:
    filler = "".join(f"step {i} loss {i * 0.001:.3f}\n" for i in range(30000))
    return (OOM_LINE + "\n" + filler).encode()


@pytest.mark.parametrize("kind", ["gzip", "xz"])
def test_truncated_archive_is_diagnosed_up_to_the_break(
    cli: Cli, tmp_path: Path, kind: str
) -> None:
    data = gzip.compress(_big_log()) if kind == "gzip" else lzma.compress(_big_log())
    path = tmp_path / f"train.log.{kind}"
    path.write_bytes(data[: len(data) // 2])
    proc = cli("match", str(path))
    assert proc.returncode == 0, proc.stderr
    assert b"CUDA out of memory" in proc.stdout
    lines = stderr_lines(proc)
    assert len(lines) == 1 and "truncated or corrupt" in lines[0]


@pytest.mark.parametrize("kind", ["gz", "bz2", "xz"])
def test_compressed_logs_are_read(cli: Cli, tmp_path: Path, kind: str) -> None:
    raw = _big_log()
    packed = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}[kind](raw)
    path = tmp_path / f"train.log.{kind}"
    path.write_bytes(packed)
    proc = cli("match", "--format", "json", str(path))
    assert proc.returncode == 0
    report = json.loads(proc.stdout)
    assert report["inputs"][0]["bytes"] == len(raw) and report["warnings"] == []


def test_zst_is_read_or_refused_in_one_line(cli: Cli, tmp_path: Path) -> None:
    try:
        import zstandard
    except ImportError:
        zstandard = None
    raw = _big_log()
    path = tmp_path / "train.log.zst"
    if zstandard is None:
        path.write_bytes(b"\x28\xb5\x2f\xfd" + b"\0" * 16)
        proc = cli("match", str(path))
        assert proc.returncode == 2
        assert "zstandard" in one_error_line(proc)
    else:
        path.write_bytes(zstandard.ZstdCompressor().compress(raw))
        proc = cli("match", "--format", "json", str(path))
        assert proc.returncode == 0
        assert json.loads(proc.stdout)["inputs"][0]["bytes"] == len(raw)


def test_redos_lines_do_not_hang_and_give_no_false_positive(cli: Cli) -> None:
    """64 KiB lines built to make backtracking regexes quadratic: digits before an error, a
    hex dump, a non-space run, pumped prefixes of the patterns that were rewritten."""
    lines = [
        "1" * 65536 + " RuntimeError: boom",
        " ".join(f"{i:08x}" for i in range(7000)),
        "A" * 65536,
        "pdsh@" * 13000,
        ".pt" * 21000,
        "9" * 65536 + ".5",
        "/bin/sh: " + "gcc" * 20000,
    ]
    proc = cli("match", "--format", "json", "-", stdin="\n".join(lines).encode() + b"\n")
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert report["root_cause"] is None
    assert report["inputs"][0]["lines"] == len(lines)


def test_control_characters_from_the_log_are_escaped(cli: Cli) -> None:
    line = OOM_LINE + " \x07\x08\x08\x1b[2J\x9b2J\x0b tail"
    proc = cli("match", "--no-color", "-", stdin=line.encode() + b"\n")
    assert proc.returncode == 0
    out = proc.stdout.decode()
    assert not any(c in out for c in "\x07\x08\x9b\x0b\x1b")
    assert "\\x07\\x08\\x08" in out and "\\x9b2J" in out


def test_file_names_that_are_not_utf8_give_valid_json(cli: Cli, tmp_path: Path) -> None:
    d = tmp_path / "ranks"
    d.mkdir()
    name = os.fsencode(str(d)) + b"/rank\xff0.log"
    with open(name, "wb") as f:
        f.write(OOM_LINE.encode() + b"\n")
    proc = cli("match", "--format", "json", str(d))
    assert proc.returncode == 0
    report = json.loads(proc.stdout.decode("utf-8"))  # strict UTF-8, valid JSON
    assert report["inputs"][0]["file"].endswith("rank\\xff0.log")
    text = cli("match", str(d))
    text.stdout.decode("utf-8")
    assert text.returncode == 0


def test_explicit_device_is_refused(cli: Cli) -> None:
    proc = cli("match", "/dev/zero")
    assert proc.returncode == 2 and "device" in one_error_line(proc)
