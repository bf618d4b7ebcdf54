"""Hostile log inputs: special files in folders, archives (truncated too), ReDoS lines, control
characters, file names that are not UTF-8."""

from __future__ import annotations

import bz2
import gzip
import io
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


def _zstd():  # noqa: ANN202
    # the test extra installs it: these tests must run, not skip, in CI
    import zstandard

    return zstandard


def test_zst_is_read(cli: Cli, tmp_path: Path) -> None:
    raw = _big_log()
    path = tmp_path / "train.log.zst"
    path.write_bytes(_zstd().ZstdCompressor().compress(raw))
    proc = cli("match", "--format", "json", str(path))
    assert proc.returncode == 0
    report = json.loads(proc.stdout)
    assert report["inputs"][0]["bytes"] == len(raw) and report["warnings"] == []
    assert report["root_cause"]["id"].startswith("cuda-oom")


def test_zst_frames_are_all_read(cli: Cli, tmp_path: Path) -> None:
    """`zstd` appends a frame per `cat a.zst b.zst`, and log rotators do the same: the error in
    the second frame must be seen."""
    z = _zstd().ZstdCompressor()
    first = "".join(f"step {i} loss 1.0\n" for i in range(2000)).encode()
    second = (OOM_LINE + "\n").encode()
    path = tmp_path / "rotated.log.zst"
    path.write_bytes(z.compress(first) + z.compress(second))
    report = json.loads(cli("match", "--format", "json", str(path)).stdout)
    assert report["inputs"][0]["bytes"] == len(first) + len(second)
    assert report["root_cause"]["id"].startswith("cuda-oom")


def test_zst_from_stdin_is_recognised_by_its_magic(cli: Cli) -> None:
    raw = _big_log()
    proc = cli("match", "--format", "json", "-", stdin=_zstd().ZstdCompressor().compress(raw))
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["inputs"][0]["bytes"] == len(raw)


def test_truncated_zst_is_diagnosed_up_to_the_break(cli: Cli, tmp_path: Path) -> None:
    data = _zstd().ZstdCompressor().compress(_big_log())
    path = tmp_path / "train.log.zst"
    path.write_bytes(data[: len(data) // 2])
    proc = cli("match", str(path))
    assert proc.returncode == 0, proc.stderr
    assert b"CUDA out of memory" in proc.stdout
    lines = stderr_lines(proc)
    assert len(lines) == 1 and "truncated or corrupt" in lines[0], lines


def test_zst_without_the_package_is_refused_in_one_line(cli: Cli, tmp_path: Path) -> None:
    # A stub that fails to import stands in for a machine without the optional package.
    stub = tmp_path / "nozstd"
    stub.mkdir()
    (stub / "zstandard.py").write_text("raise ImportError('not installed')\n")
    path = tmp_path / "train.log.zst"
    path.write_bytes(_zstd().ZstdCompressor().compress(_big_log()))
    env = {"PYTHONPATH": str(stub) + os.pathsep + cli.env["PYTHONPATH"]}
    proc = cli("match", str(path), env=env)
    assert proc.returncode == 2
    line = one_error_line(proc)
    assert "zstandard" in line and "zstd -dc" in line


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


def test_zst_bomb_is_read_in_bounded_pieces() -> None:
    """64 MiB of one byte compresses to a few KiB of RLE blocks; no single read may hold more
    than the slice bound."""
    from denpex_kb.engine import read

    bomb = _zstd().ZstdCompressor().compress(b"\0" * (64 << 20))
    assert len(bomb) < 64 << 10
    frames = read._ZstdFrames(io.BytesIO(bomb), _zstd())
    total = peak = 0
    while True:
        before = len(frames.pending)
        piece = frames.read(1 << 16)
        if not piece:
            break
        peak = max(peak, before, len(frames.pending) + len(piece))
        total += len(piece)
    assert total == 64 << 20
    assert peak <= read.ZSTD_SLICE * (32 << 10)
