"""The Python API (docs/api.md): what `import denpex_kb` offers, typed and immutable."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import denpex_kb

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "fastfilewriter-rotation-enospc.log"
FIXTURE_KB = ROOT / "tests" / "fixtures" / "kb"


def test_the_package_face_exports_exactly_its_all() -> None:
    for name in denpex_kb.__all__:
        assert getattr(denpex_kb, name) is not None, name
    import types

    public = {
        n
        for n in dir(denpex_kb)
        if not n.startswith("_") and not isinstance(getattr(denpex_kb, n), types.ModuleType)
    }
    assert public == set(denpex_kb.__all__) - {"__version__"}
    assert issubclass(denpex_kb.KBError, Exception)
    with pytest.raises(AttributeError):
        denpex_kb.no_such_name  # noqa: B018


def test_import_is_light() -> None:
    code = (
        "import sys, denpex_kb; "
        "heavy = [m for m in ('yaml', 'jsonschema', 'whoosh', 're2', 'denpex_kb.engine', "
        "'denpex_kb.kb', 'denpex_kb.api', 'denpex_kb.model') if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_match_gives_a_typed_frozen_diagnosis() -> None:
    d = denpex_kb.match(EXAMPLE)
    assert isinstance(d, denpex_kb.Diagnosis) and d.confident
    rc = d.root_cause
    assert isinstance(rc, denpex_kb.Candidate)
    assert rc.id == "fastfilewriter-fd-leak-enospc" and rc.role == "root-cause"
    assert d.initiating_rank == 0 and d.initiating_host == "worker-0"
    assert rc.fix_steps and rc.verify_command
    assert all(isinstance(e, denpex_kb.Evidence) for e in rc.evidence)
    assert any("No space left on device" in e.text for e in rc.evidence)
    assert {c.id for c in d.collateral} and all(c.count > 0 for c in d.collateral)
    assert d.report["root_cause"]["id"] == rc.id  # the full JSON report is there too
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.verdict = "none"  # type: ignore[misc]
    hash(d)  # hashable: tuples all the way down, the report dict left out


def test_match_text_and_a_reused_matcher_agree_with_match() -> None:
    m = denpex_kb.Matcher()
    from_file = m.match(EXAMPLE)
    from_text = m.match_text(EXAMPLE.read_text())
    assert from_text.root_cause is not None and from_file.root_cause is not None
    assert from_text.root_cause.id == from_file.root_cause.id
    assert from_text.initiating_rank == from_file.initiating_rank
    nothing = m.match_text("epoch 1 done\nepoch 2 done\n")
    assert nothing.verdict == "none" and nothing.root_cause is None
    with pytest.raises(TypeError):
        m.match()


def test_match_with_another_knowledge_base_and_a_bad_path() -> None:
    kb = denpex_kb.load_kb(FIXTURE_KB)
    example = next(ex for e in kb.entries for ex in e.examples if ex.expect == "match")
    d = denpex_kb.match_text(example.log, kb=FIXTURE_KB)
    assert {c.id for c in d.candidates} <= {e.id for e in kb.entries}
    with pytest.raises(denpex_kb.InputError):
        denpex_kb.match(ROOT / "no-such-log.txt")
    with pytest.raises(denpex_kb.RulesError):
        denpex_kb.Matcher(rules=ROOT / "no-such-pack.json")


def test_search_gives_typed_hits() -> None:
    hits = denpex_kb.search("OSError: [Errno 28] No space left on device", limit=3)
    assert 1 <= len(hits) <= 3
    assert all(isinstance(h, denpex_kb.SearchHit) for h in hits)
    assert "disk-full-enospc" in [h.id for h in hits]
    assert hits == sorted(hits, key=lambda h: -h.score)
    with pytest.raises(ValueError):
        denpex_kb.search("x", limit=0)
    with pytest.raises(denpex_kb.SearchIndexError):
        denpex_kb.search("x", index=ROOT / "docs")


def _layer(tmp_path: Path, entry_id: str, source: Path) -> Path:
    """A one-entry knowledge base folder without a tags.yaml, made from a fixture entry."""
    layer = tmp_path / f"layer-{entry_id}"
    (layer / "checkpoint").mkdir(parents=True)
    text = source.read_text("utf-8").replace("id: fixture-quota", f"id: {entry_id}", 1)
    (layer / "checkpoint" / f"{entry_id}.yaml").write_text(text, "utf-8")
    return layer


def test_layered_knowledge_bases(tmp_path: Path) -> None:
    src = FIXTURE_KB / "checkpoint" / "fixture-quota.yaml"
    base = denpex_kb.load_kb(FIXTURE_KB)
    team = _layer(tmp_path, "team-quota", src)
    both = denpex_kb.load_kb(FIXTURE_KB, team)
    assert {e.id for e in both.entries} == {e.id for e in base.entries} | {"team-quota"}
    assert both.layers == (str(FIXTURE_KB), str(team)) and both.tags == base.tags
    d = denpex_kb.match_text(
        next(ex.log for ex in both.get("team-quota").examples if ex.expect == "match"),
        kb=[FIXTURE_KB, team],
    )
    assert "team-quota" in {c.id for c in d.candidates}

    clash = tmp_path / "clash"
    shutil.copytree(FIXTURE_KB / "checkpoint", clash / "checkpoint")
    with pytest.raises(denpex_kb.KBError) as info:
        denpex_kb.load_kb(FIXTURE_KB, clash)
    assert any("duplicate id" in p.message for p in info.value.problems)


def test_a_layer_over_the_bundled_knowledge_base(tmp_path: Path) -> None:
    bundled = denpex_kb.load_kb()
    # An entry whose examples and sources are all inline (a layer has no captured/ folder).
    donor = next(
        e
        for e in bundled.entries
        if e.phase == "checkpoint"
        and "captured" not in (ROOT / e.source_path).read_text("utf-8")
        and "log_file:" not in (ROOT / e.source_path).read_text("utf-8")
    )
    layer = tmp_path / "team"
    (layer / "checkpoint").mkdir(parents=True)
    text = (ROOT / donor.source_path).read_text("utf-8")
    text = text.replace(f"id: {donor.id}", "id: team-only-entry", 1)
    (layer / "checkpoint" / "team-only-entry.yaml").write_text(text, "utf-8")
    kb = denpex_kb.load_kb(denpex_kb.BUNDLED, layer)
    assert len(kb.entries) == len(bundled.entries) + 1
    assert kb.get("team-only-entry").title == donor.title
