"""Make the prebuilt rule pack and text index of a wheel: `python -m denpex_kb._prebuild DIR`.

Run by the wheel build (setup.py) on the bundle folder it has just filled (`DIR/kb` ...). It
writes `DIR/prebuilt/`: the rule pack, the text index and a manifest recording the fingerprints
that `load_rulepack()` and `cached_index()` check before using them. A knowledge base that does
not validate fails the wheel build.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from . import __version__
from .bundle import PREBUILT_DIR, PREBUILT_INDEX, PREBUILT_MANIFEST, PREBUILT_PACK


def prebuild(bundle_dir: Path) -> Path:
    from . import index, rulepack
    from .atomic import write_file
    from .engine import rules
    from .kb import load_kb

    kb_dir = bundle_dir / "kb"
    kb = load_kb(kb_dir)
    pack = rulepack.build_pack(kb)
    rulepack.validate_pack(pack)
    out = bundle_dir / PREBUILT_DIR
    out.mkdir(parents=True, exist_ok=True)
    write_file(out / PREBUILT_PACK, rulepack.dumps(pack))
    index.build_index(kb, out / PREBUILT_INDEX)
    for lock in out.glob(".*.lock"):  # left by atomic.lock(); nothing locks a wheel's files
        lock.unlink()
    manifest = {
        "denpex_kb": __version__,
        "entries": len(kb.entries),
        "content_hash": pack["content_hash"],
        "rulepack_fingerprint": rules.kb_fingerprint(kb_dir, location=False),
        "index_fingerprint": index.kb_fingerprint(kb_dir),
    }
    write_file(out / PREBUILT_MANIFEST, (json.dumps(manifest, indent=2) + "\n").encode())
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m denpex_kb._prebuild BUNDLE_DIR", file=sys.stderr)
        return 2
    from .kb import KBError

    try:
        out = prebuild(Path(argv[0]))
    except KBError as exc:
        print(f"denpex-kb prebuild: the bundled knowledge base is invalid:\n{exc}", file=sys.stderr)
        return 1
    print(f"denpex-kb prebuild: wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
