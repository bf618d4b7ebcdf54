"""Step 1, read: turn what the user points at (stdin, files, .gz, folders) into byte blocks.

Streaming in bounded memory: a block is at most `BLOCK_SIZE` bytes plus one partial line, and a
line longer than `MAX_LINE` is cut (the pieces keep the same line number). Bytes stay bytes; the
engine decodes only the few lines it cites.
"""

from __future__ import annotations

import io
import os
import stat
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

BLOCK_SIZE = 4 << 20
MAX_LINE = 1 << 20
GZIP_MAGIC = b"\x1f\x8b"
BZIP2_MAGIC = b"BZh"
XZ_MAGIC = b"\xfd7zXZ\x00"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
# Decompressed data is read in pieces this big, so a truncated archive loses at most one.
PIECE = 1 << 16
ZSTD_SLICE = 512  # compressed bytes per decompress call (bounds its output to 16 MiB)


class InputError(Exception):
    """A path cannot be read; the message names it."""


@dataclass(frozen=True)
class Source:
    name: str  # as shown in reports: the path as given/found, or "<stdin>"
    path: Path | None  # None for stdin
    # Found by walking a folder: a file there that cannot be read is a warning in the report,
    # not the end of the run (the other ranks' logs are still diagnosed).
    in_folder: bool = False
    # Set when the walk already knows the file cannot be read (a FIFO, a device, a symlink
    # loop): the reason, reported as a warning; the file is never opened.
    skip: str | None = None


def _kind(mode: int) -> str | None:
    """Why a file of this mode is not read from a folder (None for a regular file)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def collect_sources(paths: list[str]) -> list[Source]:
    """Expand the command line: '-' or nothing is stdin, folders are walked (sorted).

    Inside folders only regular files are read: FIFOs, devices, sockets and broken or looping
    symlinks are kept as `skip` sources (a warning each), never opened, so none can hang or
    flood the run."""
    if not paths:
        paths = ["-"]
    out: list[Source] = []
    for p in paths:
        if p == "-":
            out.append(Source("<stdin>", None))
            continue
        path = Path(p)
        try:
            st = path.stat()
        except OSError as exc:
            if path.is_symlink():
                raise InputError(f"{p}: {exc.strerror}") from None
            raise InputError(f"{p}: no such file or folder") from None
        if stat.S_ISDIR(st.st_mode):
            found: list[Source] = []
            for root, dirs, files in os.walk(path, onerror=None):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for f in sorted(files):
                    if f.startswith("."):
                        continue
                    fp = Path(root) / f
                    try:
                        why = _kind(fp.stat().st_mode)
                    except OSError as exc:
                        why = exc.strerror or "cannot be read"
                    found.append(
                        Source(str(fp), fp, in_folder=True, skip=f"skipped: {why}" if why else None)
                    )
            if not any(s.skip is None for s in found):
                if found:
                    raise InputError(f"{p}: folder has no readable files ({found[0].skip})")
                raise InputError(f"{p}: folder has no files")
            out.extend(found)
        elif stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
            if not _is_stdin(st):
                raise InputError(f"{p}: is a device, not a log file")
            out.append(Source(str(path), path))
        else:
            out.append(Source(str(path), path))  # a regular file, or a pipe (`<(zcat x)`)
    return out


def _is_stdin(st: os.stat_result) -> bool:
    try:
        return os.path.samestat(st, os.fstat(sys.stdin.fileno()))
    except (OSError, ValueError, AttributeError):
        return False


def _decode_errors(*more: type[BaseException]) -> tuple[type[BaseException], ...]:
    """What reading a (decompressed) stream raises for bad data. The codec modules are imported
    only for compressed input (a third of the reader's import time otherwise): an except clause
    is evaluated only when something is raised, so an error of a codec not loaded cannot occur."""
    lz = sys.modules.get("lzma")
    return (OSError, EOFError, zlib.error, *more, *((lz.LZMAError,) if lz else ()))


class Decompressed(io.RawIOBase):
    """A compressed stream, read in pieces: when the data is truncated or corrupt, what was
    readable is kept, the stream ends there, and `warnings` says so."""

    def __init__(self, inner, raw: BinaryIO, name: str, kind: str) -> None:  # noqa: ANN001
        super().__init__()
        self.inner = inner
        self.raw = raw
        self.name = name
        self.kind = kind
        self.total = 0
        self.done = False
        self.warnings: list[str] = []

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if self.done:
            return b""
        want = size if size is not None and size >= 0 else 1 << 62
        out = bytearray()
        reader = getattr(self.inner, "read1", None) or self.inner.read
        while len(out) < want:
            try:
                piece = reader(min(PIECE, want - len(out)))
            except _decode_errors(ValueError) as exc:
                self._broken(exc, len(out))
                break
            except Exception as exc:  # zstandard.ZstdError and friends  # noqa: BLE001
                self._broken(exc, len(out))
                break
            if not piece:
                break
            out += piece
        self.total += len(out)
        return bytes(out)

    def readinto(self, b) -> int:  # noqa: ANN001
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def _broken(self, exc: BaseException, pending: int) -> None:
        self.done = True
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        self.warnings.append(
            f"{self.name}: {self.kind} data is truncated or corrupt after "
            f"{self.total + pending:,} decompressed bytes ({reason}); diagnosed what was readable"
        )

    def close(self) -> None:
        try:
            self.inner.close()
        finally:
            if self.raw is not sys.stdin.buffer:
                self.raw.close()
            super().close()


class _ZstdFrames(io.RawIOBase):
    """zstd frames read one after another (`cat a.zst b.zst` and log rotators append frames).
    zstandard's stream reader ends quietly on a cut-off frame; this one raises, so a truncated
    file gets the same warning as a truncated .gz. Input goes in small slices because a zstd
    block can expand 32,768-fold (an RLE block): at most ZSTD_SLICE * 32 KiB comes out at once."""

    def __init__(self, raw: BinaryIO, zstandard) -> None:  # noqa: ANN001
        self.raw = raw
        self.dctx = zstandard.ZstdDecompressor()
        self.dobj = self.dctx.decompressobj()
        self.fed = False  # the current frame has consumed input
        # Output not yet read, as a view: taking a piece from its front copies only that piece.
        self.pending = memoryview(b"")

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        want = size if size is not None and size >= 0 else PIECE
        while not self.pending:
            chunk = self.raw.read(ZSTD_SLICE)
            if not chunk:
                if self.fed and not self.dobj.eof:
                    raise EOFError("the last zstd frame is cut off")
                return b""
            self.pending = memoryview(self._feed(chunk))
        out, self.pending = bytes(self.pending[:want]), self.pending[want:]
        return out

    def _feed(self, chunk: bytes) -> bytes:
        out = bytearray()
        while chunk:
            out += self.dobj.decompress(chunk)
            self.fed = True
            if not self.dobj.eof:
                break
            chunk = self.dobj.unused_data
            self.dobj = self.dctx.decompressobj()
            self.fed = False
        return bytes(out)


def _zstd_reader(buffered: BinaryIO, name: str):  # noqa: ANN202
    try:
        import zstandard
    except ImportError:
        raise InputError(
            f"{name}: zstd-compressed; reading it needs the 'zstandard' package "
            "(pip install 'denpex-kb[zstd]'), or decompress it first: zstd -dc FILE | denpex-kb match"
        ) from None
    return _ZstdFrames(buffered, zstandard)


def open_source(src: Source) -> BinaryIO:
    """A binary stream of the source's content, decompressed when it starts with the magic of
    gzip, bzip2, xz or zstd (whatever the file is called)."""
    if src.skip is not None:
        raise InputError(f"{src.name}: {src.skip}")
    try:
        raw: BinaryIO = sys.stdin.buffer if src.path is None else open(src.path, "rb")  # noqa: SIM115
    except OSError as exc:
        raise InputError(f"{src.name}: {exc.strerror}") from None
    buffered = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)  # type: ignore[arg-type]
    try:
        head = buffered.peek(6)[:6]
    except OSError as exc:
        raise InputError(f"{src.name}: {exc.strerror}") from None
    if head.startswith(GZIP_MAGIC):
        import gzip

        inner, kind = gzip.GzipFile(fileobj=buffered, mode="rb"), "gzip"
    elif head.startswith(BZIP2_MAGIC) and len(head) >= 4 and head[3:4].isdigit():
        import bz2

        inner, kind = bz2.BZ2File(buffered, "rb"), "bzip2"
    elif head.startswith(XZ_MAGIC):
        import lzma

        inner, kind = lzma.LZMAFile(buffered, "rb"), "xz"
    elif head.startswith(ZSTD_MAGIC):
        inner, kind = _zstd_reader(buffered, src.name), "zstd"
    else:
        return buffered
    return Decompressed(inner, buffered, src.name, kind)  # type: ignore[return-value]


def iter_blocks(
    stream: BinaryIO,
    name: str,
    block_size: int = BLOCK_SIZE,
    carry: bytes = b"",
    chunks: int | None = None,
) -> Iterator[tuple[bytes, int, int]]:
    """Regions (buffer, lo, hi) that end at a line boundary (except a cut over-long line and the
    last one). The body of each chunk read is yielded without copying; only the line that
    straddles two chunks is joined.

    A worker scanning a piece of a file (engine.split) starts at a chunk boundary with `carry`,
    the partial line read before it, and reads `chunks` chunks: it then sees exactly the blocks
    a single reader sees there (the last partial line is left to the next piece)."""
    read = 0
    while chunks is None or read < chunks:
        read += 1
        try:
            chunk = stream.read(block_size)
        except _decode_errors() as exc:
            reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            raise InputError(f"{name}: {reason}") from None
        if not chunk:
            break
        first = chunk.find(b"\n")
        if first == -1:
            carry += chunk
            if len(carry) > MAX_LINE:
                yield carry, 0, len(carry)
                carry = b""
            continue
        lo = 0
        if carry:
            head = carry + chunk[: first + 1]
            yield head, 0, len(head)
            lo = first + 1
        cut = chunk.rfind(b"\n")
        if cut + 1 > lo:
            yield chunk, lo, cut + 1
        carry = chunk[cut + 1 :]
    if carry and chunks is None:
        yield carry, 0, len(carry)
