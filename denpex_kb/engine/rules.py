"""Load the rule pack the engine runs on: an exported JSON file, by default the one built from the
bundled kb/, cached per user by the knowledge base's content hash so that `denpex-kb match` does
not parse and validate YAML on every run."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from .. import __version__
from ..digest import blake2b, sha256


class RulesError(Exception):
    """The rule pack could not be loaded or built; the message says why."""


def cache_dir() -> Path:
    env = os.environ.get("DENPEX_KB_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "denpex-kb"


MAX_RULEPACK_BYTES = 64 << 20  # the bundled pack is well under 1 MB


# A file modified this recently may change again within the file system's timestamp
# granularity with the same size and times: its stat says nothing, so it is read.
RACY_SECONDS = 3.0
_FINGERPRINTS: dict[str, str] = {}


def kb_fingerprint(kb_dir: Path, location: bool = True) -> str:
    """Hash of the knowledge base's resolved path, every entry file (path and bytes), the tag
    list and the exporter's version.

    Cheap (no YAML parsing): it decides whether a cached pack is still current. Two knowledge
    bases never share a cached pack, even with equal content. `location=False` leaves the path
    out: the prebuilt pack of a wheel is made in one folder and used from another.

    Reading every entry on each `match` is remembered per stat signature (each file's size,
    inode, mtime and ctime), in this process and in the per-user cache, unless a file was
    modified in the last RACY_SECONDS (then it is always read)."""
    import time

    head = sha256()
    head.update(f"denpex-kb {__version__}\n".encode())
    if location:
        head.update(os.fsencode(str(kb_dir.resolve())) + b"\0")
    code = Path(__file__).resolve().parent.parent / "rulepack.py"
    try:
        head.update(code.read_bytes())
    except OSError:
        pass
    base = str(kb_dir)
    names = [os.path.join(base, d, f) for d, f in _entry_files(kb_dir)]  # str(Path) spelling
    names.append(os.path.join(base, "tags.yaml"))
    sig = head.copy()
    sig.update(f"memo location={location} ".encode() + os.fsencode(str(kb_dir.resolve())) + b"\0")
    now, racy = time.time(), False
    for name in names:
        try:
            st = os.stat(name)
        except OSError:
            sig.update(os.fsencode(name) + b"\0missing\0")
            continue
        racy = racy or now - max(st.st_mtime, st.st_ctime) < RACY_SECONDS
        sig.update(
            os.fsencode(name)
            + f"\0{st.st_mode} {st.st_size} {st.st_ino} {st.st_mtime_ns} {st.st_ctime_ns}\0".encode()
        )
    key = sig.hexdigest()[:32]
    memo = cache_dir() / "checked" / f"kb-{key}"
    if not racy:
        if key in _FINGERPRINTS:
            return _FINGERPRINTS[key]
        try:
            got = memo.read_text().strip()
            if len(got) == 32 and all(c in "0123456789abcdef" for c in got):
                _FINGERPRINTS[key] = got
                return got
        except (OSError, UnicodeDecodeError):
            pass
    fp = _content_fingerprint(kb_dir, head, [Path(n) for n in names])
    if not racy:
        _FINGERPRINTS[key] = fp
        try:
            memo.parent.mkdir(parents=True, exist_ok=True)
            tmp = memo.with_name(f"{memo.name}.{os.getpid()}.tmp")
            tmp.write_text(fp + "\n")
            os.replace(tmp, memo)
        except OSError:
            pass
    return fp


def _entry_files(kb_dir: Path) -> list[tuple[str, str]]:
    """(folder, file) of every entry file, in the order of their paths' parts. os.scandir, not
    Path.glob: this runs on every `match` and `search`, and glob plus Path sorting was a tenth
    of their start-up."""
    out: list[tuple[str, str]] = []
    try:
        dirs = [d for d in os.scandir(kb_dir) if d.is_dir()]
    except OSError:
        return out
    for d in dirs:
        if d.name == "captured" or d.name.startswith((".", "_")):
            continue
        try:
            names = [f.name for f in os.scandir(d.path)]
        except OSError:
            continue
        out += [(d.name, n) for n in names if n.endswith((".yaml", ".yml"))]
    return sorted(out)


def _content_fingerprint(kb_dir: Path, h: Any, files: list[Path]) -> str:
    for p in files:
        try:
            if not p.is_file():  # a FIFO or device is refused by the loader, never read here
                h.update(os.fsencode(str(p.relative_to(kb_dir))) + b"\0special\0")
                continue
            data = p.read_bytes()
        except OSError:
            continue
        h.update(os.fsencode(str(p.relative_to(kb_dir))) + b"\0" + data + b"\0")
    return h.hexdigest()[:32]


def _layers_fingerprint(roots: list[Path]) -> str:
    """kb_fingerprint of one folder, or of several layered in this order."""
    if len(roots) == 1:
        return kb_fingerprint(roots[0])
    joined = "\0".join(["layers", *(kb_fingerprint(r) for r in roots)])
    return sha256(joined.encode()).hexdigest()[:32]


def _read_capped(path: Path, what: str) -> bytes:
    """A regular file's bytes, refusing devices, FIFOs and anything over MAX_RULEPACK_BYTES."""
    import stat

    try:
        with open(path, "rb", buffering=0) as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise RulesError(f"{what} {path} is not a regular file")
            if st.st_size > MAX_RULEPACK_BYTES:
                raise RulesError(
                    f"{what} {path} is {st.st_size:,} bytes; refusing more than "
                    f"{MAX_RULEPACK_BYTES:,}"
                )
            data = f.read(MAX_RULEPACK_BYTES + 1)
    except OSError as exc:
        raise RulesError(f"cannot read {what} {path}: {exc.strerror}") from None
    if len(data) > MAX_RULEPACK_BYTES:
        raise RulesError(f"{what} {path} is larger than {MAX_RULEPACK_BYTES:,} bytes")
    return data


def _marker(kind: str, data: bytes) -> Path:
    """Where a check already passed on these exact bytes is remembered ("checked" markers in
    the per-user cache): keyed by the bytes and by the code and schemas that check them, so
    that `match` does not import and rerun the checker (JSON Schema, the exporter) each time."""
    # BLAKE2b: these are megabytes on every run (denpex_kb.digest says why not SHA-256)
    h = blake2b(kind.encode() + b"\0" + __version__.encode() + b"\0", digest_size=32)
    h.update(data)
    pkg = Path(__file__).resolve().parent.parent
    for p in [pkg / "rulepack.py", pkg / "kb.py", *sorted((pkg / "schemas").glob("*.json"))]:
        try:
            h.update(p.read_bytes())
        except OSError:
            pass
    return cache_dir() / "checked" / f"{kind}-{h.hexdigest()[:40]}"


def _remember(marker: Path) -> None:
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    except OSError:
        pass  # a read-only cache only costs the check next time


def _verified(data: bytes) -> dict[str, Any] | None:
    """The cached pack if its content hash matches its content, else None (then rebuilt)."""
    import json  # not at import: the marshal copy (_fast_pack) usually spares it

    try:
        pack = json.loads(data)
    except ValueError:
        return None
    if not isinstance(pack, dict) or not isinstance(pack.get("content_hash"), str):
        return None
    marker = _marker("hash", data)
    if not marker.is_file():
        from ..rulepack import content_hash

        if content_hash(pack) != pack["content_hash"]:
            return None
        _remember(marker)
    if not isinstance(pack.get("globals"), dict) or not isinstance(pack.get("entries"), list):
        return None
    return pack


def _fast_path(fingerprint: str) -> Path:
    # marshal's format belongs to the interpreter version that wrote it
    tag = f"py{sys.version_info[0]}{sys.version_info[1]}"
    return cache_dir() / f"pack-{fingerprint}.{tag}.marshal"


def _fast_pack(fingerprint: str) -> dict[str, Any] | None:
    """The pack for this fingerprint as this process's interpreter last stored it (marshal
    reads in a third of json's time), if the marker says these exact bytes were written from
    a pack that passed its checks."""
    import marshal

    path = _fast_path(fingerprint)
    try:
        if not path.is_file():
            return None
        data = path.read_bytes()
        if len(data) > MAX_RULEPACK_BYTES or not _marker("marshal", data).is_file():
            return None
        pack = marshal.loads(data)
    except (OSError, ValueError, EOFError, TypeError):
        return None
    ok = isinstance(pack, dict) and isinstance(pack.get("content_hash"), str)
    return pack if ok and isinstance(pack.get("entries"), list) else None


def _keep_fast(fingerprint: str, pack: dict[str, Any]) -> None:
    import marshal

    try:
        from ..atomic import write_file  # not rulepack: it imports the model and the vectors

        data = marshal.dumps(pack)
        write_file(_fast_path(fingerprint), data)
        _remember(_marker("marshal", data))
    except (OSError, ValueError):
        pass  # a read-only cache only costs the JSON parse next time


def _prebuilt_pack(found: Any) -> dict[str, Any] | None:  # noqa: ANN401 - bundle.Bundle
    """The rule pack the wheel build made from the bundled knowledge base, if it is there and
    still belongs to the bundled files (else None: it is then built into the cache)."""
    from ..bundle import PREBUILT_PACK

    if not found.installed:
        return None
    want = found.prebuilt_manifest().get("rulepack_fingerprint")
    if not isinstance(want, str) or want != kb_fingerprint(found.kb_dir, location=False):
        return None
    # the fingerprint covers the bundled files and the exporter's code: one pack per value
    fast = _fast_pack(f"prebuilt-{want}")
    if fast is not None:
        return fast
    try:
        data = _read_capped(found.prebuilt_dir / PREBUILT_PACK, "prebuilt rule pack")
    except RulesError:
        return None
    pack = _verified(data)
    if pack is not None:
        _keep_fast(f"prebuilt-{want}", pack)
    return pack


def load_rulepack(
    path: str | Path | None = None,
    kb_dir: str | Path | list[str | Path] | tuple[str | Path, ...] | None = None,
) -> dict[str, Any]:
    """The rule pack at `path`, or the one exported from `kb_dir` (default: the bundled kb/;
    several folders are layered in order, as `kb.load_kb` does).

    A pack given as a file is validated against the rule pack schema (as any consumer would). A
    pack built from a knowledge base is validated when it is built and then served from the
    cache while the knowledge base's files are unchanged; on every load its content hash is
    checked, and a cached pack that does not match is rebuilt, never used. Both checks are
    remembered per content (`_marker`): the same bytes are not checked twice.
    """
    if path is not None:
        import json  # a given pack file is JSON; the bundled path reads the marshal copy

        data = _read_capped(Path(path), "rule pack")
        marker = _marker("valid", data)
        try:
            pack = json.loads(data)
            if not marker.is_file():  # the same bytes passed before: no JSON Schema import
                from ..rulepack import validate_pack

                validate_pack(pack)
                _remember(marker)
        except RecursionError:
            raise RulesError(f"invalid rule pack {path}: nested too deeply") from None
        except ValueError as exc:  # JSON errors and RulePackError
            from ..rulepack import RulePackError

            detail = "; ".join(exc.problems[:5]) if isinstance(exc, RulePackError) else str(exc)
            raise RulesError(f"invalid rule pack {path}: {detail}") from None
        return pack
    if kb_dir is None:
        # The bundled knowledge base (bundle.py says where), without importing the YAML/JSON
        # Schema stack; an installed wheel carries its pack prebuilt.
        from ..bundle import BundleError, bundle

        try:
            found = bundle()
        except BundleError as exc:
            raise RulesError(str(exc)) from None
        prebuilt = _prebuilt_pack(found)
        if prebuilt is not None:
            return prebuilt
        roots = [found.kb_dir]
    elif isinstance(kb_dir, str | Path):
        roots = [Path(kb_dir)]
    else:  # several folders, layered (kb.load_kb)
        roots = [Path(r) for r in kb_dir]
    for r in roots:
        if not r.is_dir():
            raise RulesError(f"knowledge base folder {r} does not exist")
    root: Any = roots[0] if len(roots) == 1 else roots
    for _ in range(3):
        fingerprint = _layers_fingerprint(roots)
        fast = _fast_pack(fingerprint)
        if fast is not None:
            return fast
        cached = cache_dir() / f"rulepack-{fingerprint}.json"
        data = None
        try:
            if cached.is_file():  # never a FIFO or device planted in the cache
                with open(cached, "rb") as f:
                    data = f.read(MAX_RULEPACK_BYTES + 1)
        except OSError:
            pass
        if data is not None:
            pack = _verified(data)
            if pack is not None:
                _keep_fast(fingerprint, pack)
                return pack
        from ..kb import KBError, load_kb
        from ..rulepack import build_pack, dumps, validate_pack, write_atomic

        try:
            kb = load_kb(root)
        except KBError as exc:
            lines = [str(p) for p in exc.problems[:10]]
            raise RulesError(
                f"knowledge base {root} is invalid ({len(exc.problems)} problem(s)):\n  "
                + "\n  ".join(lines)
            ) from None
        pack = build_pack(kb)
        validate_pack(pack)
        if _layers_fingerprint(roots) != fingerprint:
            continue  # edited while we read it: the pack belongs to neither version
        try:
            data = dumps(pack)
            write_atomic(cached, data)
            _remember(_marker("hash", data))  # built and checked here: no need to recheck
        except OSError:
            pass  # a read-only or full cache is no reason to fail; we rebuild next time
        _keep_fast(fingerprint, pack)
        return pack
    raise RulesError(f"knowledge base {root} kept changing while it was read; try again")
