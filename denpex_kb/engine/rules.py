"""Load the rule pack the engine runs on: an exported JSON file, by default the one built from the
bundled kb/, cached per user by the knowledge base's content hash so that `denpex-kb match` does
not parse and validate YAML on every run."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from .. import __version__


class RulesError(Exception):
    """The rule pack could not be loaded or built; the message says why."""


def cache_dir() -> Path:
    env = os.environ.get("DENPEX_KB_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "denpex-kb"


def kb_fingerprint(kb_dir: Path) -> str:
    """Hash of every entry file (path and bytes), the tag list and the exporter's version.

    Cheap (no YAML parsing): it decides whether a cached pack is still current.
    """
    h = hashlib.sha256()
    h.update(f"denpex-kb {__version__}\n".encode())
    code = Path(__file__).resolve().parent.parent / "rulepack.py"
    try:
        h.update(code.read_bytes())
    except OSError:
        pass
    files = sorted(
        p
        for p in kb_dir.glob("*/*.yaml")
        if p.parent.name != "captured" and not p.parent.name.startswith((".", "_"))
    )
    files.append(kb_dir / "tags.yaml")
    for p in files:
        try:
            data = p.read_bytes()
        except OSError:
            continue
        h.update(str(p.relative_to(kb_dir)).encode() + b"\0" + data + b"\0")
    return h.hexdigest()[:32]


def load_rulepack(
    path: str | Path | None = None, kb_dir: str | Path | None = None
) -> dict[str, Any]:
    """The rule pack at `path`, or the one exported from `kb_dir` (default: the bundled kb/).

    A pack given as a file is validated against the rule pack schema (as any consumer would). A
    pack built from a knowledge base is validated when it is built and then served from the
    cache while the knowledge base's files are unchanged.
    """
    if path is not None:
        from ..rulepack import RulePackError, load_pack

        try:
            return load_pack(path)
        except OSError as exc:
            raise RulesError(f"cannot read rule pack {path}: {exc.strerror}") from None
        except ValueError as exc:  # JSON errors and RulePackError
            detail = "; ".join(exc.problems[:5]) if isinstance(exc, RulePackError) else str(exc)
            raise RulesError(f"invalid rule pack {path}: {detail}") from None
    # Same folder as kb.default_kb_dir(), without importing the YAML/JSON Schema stack.
    root = Path(kb_dir) if kb_dir is not None else Path(__file__).resolve().parents[2] / "kb"
    if not root.is_dir():
        raise RulesError(f"knowledge base folder {root} does not exist")
    cached = cache_dir() / f"rulepack-{kb_fingerprint(root)}.json"
    try:
        return json.loads(cached.read_bytes())
    except (OSError, ValueError):
        pass
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
    try:
        write_atomic(cached, dumps(pack))
    except OSError:
        pass  # a read-only home is no reason to fail; we just rebuild next time
    return pack
