"""Issue 15, start-up: a warm `match` imports no checker it does not need (JSON Schema, YAML,
the exporter, whoosh), remembered checks are keyed by content, and the index's fingerprint
memo never serves a stale value."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from denpex_kb import index
from denpex_kb.engine import RulesError, load_rulepack

ROOT = Path(__file__).resolve().parent.parent
LOG = ROOT / "tests" / "logs" / "oom-rank3-watchdog-rest.log"
# the checkers, `packaging` (the engine has its own version subset: this log prints versions)
# and the API's model (its frozen dataclasses cost tens of ms to create)
HEAVY = (
    "jsonschema",
    "yaml",
    "whoosh",
    "packaging",
    "denpex_kb.rulepack",
    "denpex_kb.kb",
    "denpex_kb.model",
)
# modules a plain log's warm `match` with the bundled pack has no use for: OpenSSL's hashlib
# (denpex_kb.digest), the decompressors (compressed input only), json (the marshal copy), textwrap
LAZY = (
    "hashlib",
    "gzip",
    "bz2",
    "lzma",
    "json",
    "textwrap",
)


def _env(cache: Path) -> dict[str, str]:
    return dict(os.environ, DENPEX_KB_CACHE=str(cache), PYTHONPATH=str(ROOT))


def _imported_by_match(cache: Path, *args: str, watch: tuple[str, ...] = HEAVY) -> list[str]:
    code = (
        "import sys, atexit\n"
        f"heavy = {watch!r}\n"
        "atexit.register(lambda: sys.stderr.write('HEAVY=' + ','.join("
        "m for m in heavy if m in sys.modules) + '\\n'))\n"
        "from denpex_kb.cli import main\n"
        f"sys.argv = ['denpex-kb', 'match', *{list(args)!r}]\n"
        "main()\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(cache)
    )
    assert p.returncode == 0, p.stderr
    line = [x for x in p.stderr.splitlines() if x.startswith("HEAVY=")][-1]
    return [m for m in line[len("HEAVY=") :].split(",") if m]


def test_warm_match_imports_no_checker(tmp_path: Path) -> None:
    first = _imported_by_match(tmp_path, str(LOG))
    assert "denpex_kb.rulepack" in first  # the cold run builds and checks the pack
    assert _imported_by_match(tmp_path, str(LOG)) == []
    assert _imported_by_match(tmp_path, str(LOG), watch=LAZY) == []


def test_rules_file_checked_once_per_content(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    pack_file = tmp_path / "pack.json"
    pack_file.write_text(json.dumps(load_rulepack()))
    assert "denpex_kb.rulepack" in _imported_by_match(cache, "--rules", str(pack_file), str(LOG))
    assert _imported_by_match(cache, "--rules", str(pack_file), str(LOG)) == []
    # other bytes: checked again, and an invalid pack is refused every time
    bad = json.loads(pack_file.read_text())
    bad["entries"][0]["match"]["all"] = ["no-such-signal"]
    pack_file.write_text(json.dumps(bad))
    for _ in range(2):
        with pytest.raises(RulesError, match="unknown signal"):
            load_rulepack(pack_file)


def test_cached_pack_tampered_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DENPEX_KB_CACHE", str(tmp_path))
    good = load_rulepack()
    load_rulepack()  # remembered as checked
    (cached,) = tmp_path.glob("rulepack-*.json")
    doc = json.loads(cached.read_bytes())
    doc["entries"] = doc["entries"][:1]  # content no longer matches its hash
    cached.write_text(json.dumps(doc))
    assert load_rulepack() == good


def test_marshal_copy_is_used_only_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import marshal

    monkeypatch.setenv("DENPEX_KB_CACHE", str(tmp_path))
    good = load_rulepack()
    (fast,) = tmp_path.glob("pack-*.marshal")
    (cached,) = tmp_path.glob("rulepack-*.json")
    cached.unlink()  # the marshal copy alone serves the pack
    assert load_rulepack() == good and not cached.exists()
    doc = marshal.loads(fast.read_bytes())
    doc["entries"] = doc["entries"][:1]
    fast.write_bytes(marshal.dumps(doc))  # bytes no marker vouches for: ignored, pack rebuilt
    assert load_rulepack() == good and cached.exists()
    fast.write_bytes(b"\x00garbage")
    assert load_rulepack() == good


def _tree(root: Path) -> None:
    (root / "a").mkdir(parents=True)
    (root / "a" / "one.yaml").write_text("id: one\n")
    (root / "tags.yaml").write_text("tags: {}\n")


def _age(root: Path, monkeypatch, seconds: float = 3600) -> None:  # noqa: ANN001
    """Files last modified long ago (the ctime cannot be set back: the racy window is closed
    instead, as if it had passed)."""
    old = time.time() - seconds
    for p in root.rglob("*"):
        os.utime(p, (old, old))
    monkeypatch.setattr(index, "RACY_SECONDS", 0.0)


def test_fingerprint_memo_equals_full_hash(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("DENPEX_KB_CACHE", str(tmp_path / "cache"))
    kb = tmp_path / "kb"
    _tree(kb)
    fresh = index.kb_fingerprint(kb)  # racy (just written): hashed, not remembered
    assert not list((tmp_path / "cache").rglob("fingerprints/index-*"))
    _age(kb, monkeypatch)
    full = index.kb_fingerprint(kb)
    assert full == fresh
    assert list((tmp_path / "cache").rglob("fingerprints/index-*"))
    index._FINGERPRINTS.clear()
    assert index.kb_fingerprint(kb) == full  # from the per-user memo


def test_fingerprint_memo_sees_same_size_same_mtime_edit(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """An edit that keeps the size and puts the old mtime back still changes the ctime."""
    monkeypatch.setenv("DENPEX_KB_CACHE", str(tmp_path / "cache"))
    kb = tmp_path / "kb"
    _tree(kb)
    _age(kb, monkeypatch)
    before = index.kb_fingerprint(kb)
    f = kb / "a" / "one.yaml"
    st = f.stat()
    f.write_text("id: two\n")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert index.kb_fingerprint(kb) != before


def test_search_imports_whoosh_without_asyncio_or_urllib_request(tmp_path: Path) -> None:
    """whoosh is imported with stand-ins for three modules it never uses here (asyncio via the
    `cached_property` package, urllib.request, and the English morphology table), and the
    stand-ins are gone afterwards: the real modules still import, whoosh's cached property
    still works, and the Variations query's morphology loads the real table when called."""
    code = (
        "import sys\n"
        "from denpex_kb import index\n"
        "hits = index.cached_index().search('No space left on device')\n"
        "assert hits and hits[0].id.endswith('enospc'), hits\n"
        "loaded = [m for m in ('asyncio', 'http.client', 'urllib.request', 'cached_property',"
        " 'whoosh.lang.morph_en') if m in sys.modules]\n"
        "import urllib, urllib.request, cached_property\n"
        "assert 'urlopen' in dir(urllib.request) and urllib.request.__file__, 'stand-in left'\n"
        "assert cached_property.__file__ and urllib.request is sys.modules['urllib.request']\n"
        "from whoosh.reading import SegmentReader\n"
        "import functools\n"
        "assert isinstance(SegmentReader.__dict__['deleted_docs_set'], functools.cached_property)\n"
        "from whoosh.query.terms import variations\n"
        "assert {'run', 'ran'} <= set(variations('running')), 'stand-in did not delegate'\n"
        "import whoosh.lang.morph_en as me\n"
        "assert me.__file__ and me is sys.modules['whoosh.lang.morph_en'], 'stand-in left'\n"
        "print(','.join(loaded))\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(tmp_path)
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == ""


def test_digests_without_hashlib_are_hashlibs() -> None:
    import hashlib

    from denpex_kb.digest import blake2b, sha256

    for data in (b"", b"denpex", bytes(range(256)) * 300):
        h = sha256(data[:7])
        h.update(data[7:])
        assert h.hexdigest() == hashlib.sha256(data).hexdigest()
        assert h.copy().digest() == hashlib.sha256(data).digest()
        b = blake2b(data[:7], digest_size=32)
        b.update(data[7:])
        assert b.hexdigest() == hashlib.blake2b(data, digest_size=32).hexdigest()
