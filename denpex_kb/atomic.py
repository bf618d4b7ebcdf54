"""Atomic outputs: files and folders are built aside and renamed into place, under a lock.

A reader (or a killed build) sees the old output or the new one, never a mix: files are written
to a temporary name in the same folder and renamed; folders (site/, dist/index, cached indexes)
are built in a temporary sibling and exchanged with the old one in one rename where the system
can (Linux `renameat2(RENAME_EXCHANGE)`), else in two renames a moment apart. Temporary names
start with `.<name>.`; a build that was killed leaves one behind, and the next build, holding
the lock, removes it. Everything is created with the user's umask (temporary files are not).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

TMP_MARK = ".tmp-"
_umask: int | None = None


def umask() -> int:
    global _umask
    if _umask is None:
        current = os.umask(0o022)
        os.umask(current)
        _umask = current
    return _umask


def _tmp_prefix(path: Path) -> str:
    return f".{path.name}{TMP_MARK}"


def write_file(path: Path, data: bytes) -> None:
    """Write `data` to `path` via a temporary file in the same folder and a rename."""
    path = Path(path)
    if path.exists() and not path.is_file():
        # A device, FIFO or other special file (`-o /dev/stdout`): write to it, never replace it.
        try:
            with open(path, "wb") as f:
                f.write(data)
        except OSError as exc:
            exc.filename = str(path)
            raise
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=_tmp_prefix(path), dir=path.parent)
    except OSError as exc:
        exc.filename = exc.filename or str(path)
        raise
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fchmod(f.fileno(), 0o666 & ~umask())
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            exc.filename = str(path)  # name what the user asked for, not the temporary file
        raise


@contextlib.contextmanager
def lock(target: Path) -> Iterator[None]:
    """An exclusive lock for building `target` (a file or folder): concurrent builds of the
    same output wait for each other instead of tearing it. The lock file stays, empty."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    path = target.parent / f".{target.name}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: no lock, renames stay atomic
            yield
            return
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def remove_stale(target: Path) -> list[Path]:
    """Remove the temporary siblings a killed build of `target` left (call with the lock)."""
    target = Path(target)
    removed = []
    if not target.parent.is_dir():
        return removed
    prefix = _tmp_prefix(target)
    for p in target.parent.iterdir():
        if p.name.startswith(prefix):
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
            removed.append(p)
    return removed


def make_tmp_dir(target: Path) -> Path:
    """A fresh empty folder beside `target`, with the permissions a new folder would get."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=_tmp_prefix(target), dir=target.parent))
    os.chmod(tmp, 0o777 & ~umask())
    return tmp


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one rename (Linux); False where the system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    rc = fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange)
    return rc == 0


def replace_dir(tmp: Path, target: Path) -> None:
    """Put the complete folder `tmp` at `target`, removing what was there."""
    tmp, target = Path(tmp), Path(target)
    if target.is_symlink() or not target.exists():
        if target.is_symlink():
            target.unlink()
        os.replace(tmp, target)
        return
    if not target.is_dir():
        raise NotADirectoryError(20, "Not a directory", str(target))
    if _exchange(tmp, target):
        shutil.rmtree(tmp, ignore_errors=True)  # now holds the old content
        return
    old = Path(tempfile.mkdtemp(prefix=_tmp_prefix(target), dir=target.parent))
    os.replace(target, old / "old")
    os.replace(tmp, target)
    shutil.rmtree(old, ignore_errors=True)
