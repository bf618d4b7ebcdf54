"""The rule pack: schema-valid, deterministic, hashed, portable (Python re, RE2, JavaScript)."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import re2
from click.testing import CliRunner

from denpex_kb import rulepack as rp
from denpex_kb.cli import main
from denpex_kb.kb import load_kb

FIXTURE = Path(__file__).parent / "fixtures" / "kb"
# The bundled knowledge base (DENPEX_TEST_KB points these tests at another checkout of it).
BUNDLED = Path(os.environ.get("DENPEX_TEST_KB") or Path(rp.__file__).resolve().parent.parent / "kb")
NODE = shutil.which("node")


@pytest.fixture(scope="module")
def fixture_pack() -> dict:
    return rp.build_pack(load_kb(FIXTURE))


@pytest.fixture(scope="module")
def bundled_pack() -> dict:
    return rp.build_pack(load_kb(BUNDLED))


def export(tmp_path: Path, kb: Path, name: str, *extra: str) -> Path:
    out = tmp_path / name
    result = CliRunner().invoke(main, ["export-rules", "--kb", str(kb), "-o", str(out), *extra])
    assert result.exit_code == 0, result.output + result.stderr
    return out


def test_fixture_and_bundled_packs_validate(fixture_pack: dict, bundled_pack: dict) -> None:
    rp.validate_pack(fixture_pack)
    rp.validate_pack(bundled_pack)
    assert [e["id"] for e in bundled_pack["entries"]] == sorted(
        e.id for e in load_kb(BUNDLED).entries
    )


def test_cli_export_is_byte_identical_and_validates(tmp_path: Path) -> None:
    a = export(tmp_path, FIXTURE, "a.json")
    b = export(tmp_path, FIXTURE, "b.json")
    assert a.read_bytes() == b.read_bytes()
    pack = json.loads(a.read_bytes())
    rp.validate_pack(pack)
    assert a.read_bytes() == rp.dumps(pack)  # the file is exactly the documented serialisation


def test_bundled_export_is_byte_identical(tmp_path: Path) -> None:
    a = export(tmp_path, BUNDLED, "a.json").read_bytes()
    assert a == export(tmp_path, BUNDLED, "b.json").read_bytes()


def test_content_hash_is_sha256_of_canonical_json_without_the_hash(fixture_pack: dict) -> None:
    import hashlib

    body = {k: v for k, v in fixture_pack.items() if k != "content_hash"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    assert fixture_pack["content_hash"] == f"sha256:{digest}"


def test_changing_one_entry_changes_the_hash(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    shutil.copytree(FIXTURE, kb)
    before = json.loads(export(tmp_path, kb, "before.json").read_bytes())["content_hash"]
    f = kb / "checkpoint" / "fixture-quota.yaml"
    f.write_text(
        f.read_text().replace("pattern: 'Disk quota exceeded'", "pattern: 'Disk quota exceeded!'")
    )
    after = json.loads(export(tmp_path, kb, "after.json").read_bytes())["content_hash"]
    assert before != after


def _del(path: list, key: str):  # noqa: ANN202
    def f(p: dict) -> None:
        node = p
        for k in path:
            node = node[k]
        del node[key]

    return f


def _set(path: list, value: object):  # noqa: ANN202
    def f(p: dict) -> None:
        node = p
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value

    return f


MUTATIONS = {
    "missing-format-version": _del([], "format_version"),
    "wrong-dialect": _set(["dialect"], "pcre"),
    "unknown-signal-reference": _set(["entries", 0, "match", "all"], ["no_such_signal"]),
    "missing-entry-title": _del(["entries", 0], "title"),
    "bad-role": _set(["entries", 0, "role"], "culprit"),
    "pattern-not-re2": _set(["entries", 0, "signals", 0, "pattern"], "(a)\\1"),
    "unknown-field": _set(["entries", 0, "extra"], 1),
    "tampered-content-hash": _set(["entries", 0, "title"], "A title changed after hashing"),
    "bad-version-specifier": _set(
        ["entries", 0, "match", "versions"], [{"package": "deepspeed", "specifier": "=>0.1"}]
    ),
    "no-all-and-no-any": _set(["entries", 0, "match", "all"], []),
    "prefix-without-groups": _del(["globals", "line_prefixes", 0], "groups"),
    "process-line-without-pid": _del(["globals", "process_lines", 0, "groups"], "pid"),
    "process-line-bad-subject": _set(["globals", "process_lines", 0, "subject"], "parent"),
    "bad-prefix-rank": _set(["globals", "prefix_rank"], "middle"),
    "weak-marker-without-rank": _del(["globals", "weak_rank_markers", 0, "groups"], "rank"),
    "unknown-look-alike": _set(["entries", 0, "look_alikes"], [{"id": "nope", "tell": "x"}]),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_mutated_pack_is_rejected(fixture_pack: dict, name: str) -> None:
    pack = copy.deepcopy(fixture_pack)
    if name == "no-all-and-no-any":
        pack["entries"][0]["match"]["any"] = []
    MUTATIONS[name](pack)
    if name != "tampered-content-hash":
        pack["content_hash"] = rp.content_hash(pack)  # a consistent hash: the content is at fault
    with pytest.raises(rp.RulePackError):
        rp.validate_pack(pack)


def _regexes(pack: dict) -> list[tuple[str, str, bool]]:
    return rp._all_patterns(pack)


def test_every_regex_compiles_in_python_and_re2(bundled_pack: dict, fixture_pack: dict) -> None:
    for pack in (bundled_pack, fixture_pack):
        pats = _regexes(pack)
        assert len(pats) > 20
        for where, pat, icase in pats:
            re.compile(pat, re.ASCII | (re.IGNORECASE if icase else 0))
            opts = re2.Options()
            opts.case_sensitive = not icase
            re2.compile(pat, opts), where


def test_global_patterns_match_their_examples(bundled_pack: dict) -> None:
    g = bundled_pack["globals"]
    for key in (
        "line_prefixes",
        "rank_markers",
        "file_name_ranks",
        "timestamps",
        "version_banners",
        "process_lines",
        "weak_rank_markers",
    ):
        assert g[key], key
        for item in g[key]:
            text = item["example"]
            for compiled in (re.compile(item["pattern"], re.ASCII), re2.compile(item["pattern"])):
                m = compiled.search(text)
                assert m, (key, item["id"])
                for name, num in item["groups"].items():
                    assert num <= compiled.groups, (item["id"], name)
    for item in g["boilerplate"]:
        assert re.search(item["pattern"], item["example"]), item["id"]
    for item in g["process_lines"]:
        assert any(lit in item["example"] for lit in item["literals"]), item["id"]
    pats = g["elastic_summary"]["patterns"]
    lines = g["elastic_summary"]["example"].splitlines()
    for key in ("root_cause_header", "item_start", "field_time", "field_host", "field_rank"):
        assert any(re.match(pats[key], line) for line in lines), key


JS = r"""
const fs = require('fs');
const pack = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const out = [];
const add = (where, pattern, icase) => out.push([where, pattern, icase]);
const g = pack.globals;
add('ansi', g.ansi_escape, false);
add('exception', g.exception_line, false);
add('salient', g.salient_line, false);
g.facts.tables.forEach((t, i) => { add(`facts.tables[${i}].header`, t.header, false); add(`facts.tables[${i}].row`, t.row, false); });
g.facts.lines.forEach((x, i) => add(`facts.lines[${i}]`, x.pattern, false));
for (const k of ['line_prefixes','rank_markers','file_name_ranks','timestamps','boilerplate','version_banners','process_lines','weak_rank_markers'])
  (g[k] || []).forEach((it, i) => add(`${k}[${i}]`, it.pattern, false));
for (const [k, v] of Object.entries(g.elastic_summary.patterns)) add(`elastic.${k}`, v, false);
pack.entries.forEach(e => e.signals.forEach(s => add(`${e.id}/${s.id}`, s.pattern, s.ignore_case)));
let bad = 0, examples = 0;
for (const [where, p, icase] of out) {
  try { new RegExp(p, 'u' + (icase ? 'i' : '')); }
  catch (err) { bad++; console.log(`FAIL ${where}: ${err.message}`); }
}
for (const k of ['line_prefixes','rank_markers','timestamps','version_banners','process_lines','weak_rank_markers']) for (const it of g[k]) {
  examples++;
  if (!new RegExp(it.pattern, 'u').test(it.example)) { bad++; console.log(`NOMATCH ${it.id}`); }
}
console.log(`checked ${out.length} patterns, ${examples} examples, ${bad} failures`);
process.exit(bad ? 1 : 0);
"""


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_every_regex_compiles_in_javascript(tmp_path: Path, bundled_pack: dict) -> None:
    pack_file = tmp_path / "pack.json"
    pack_file.write_bytes(rp.dumps(bundled_pack))
    script = tmp_path / "check.js"
    script.write_text(JS)
    proc = subprocess.run(
        [NODE, str(script), str(pack_file)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    n = len(_regexes(bundled_pack))
    assert f"checked {n} patterns" in proc.stdout


def test_vectors_hold_every_example(tmp_path: Path) -> None:
    vec = tmp_path / "vectors.json"
    export(tmp_path, FIXTURE, "pack.json", "--vectors", str(vec))
    data = json.loads(vec.read_bytes())
    pack = json.loads((tmp_path / "pack.json").read_bytes())
    assert data["rulepack_hash"] == pack["content_hash"]
    kb = load_kb(FIXTURE)
    assert len(data["vectors"]) == sum(len(e.examples) for e in kb.entries)
    names = {v["name"] for v in data["vectors"]}
    assert "fixture-disk-full/quota" in names


def test_export_of_invalid_kb_is_one_clean_error(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    shutil.copytree(FIXTURE, kb)
    f = kb / "checkpoint" / "fixture-quota.yaml"
    f.write_text(f.read_text().replace("role: root-cause", "role: culprit"))
    out = tmp_path / "pack.json"
    result = CliRunner().invoke(main, ["export-rules", "--kb", str(kb), "-o", str(out)])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert not out.exists()


def test_pack_page_is_the_hub_page() -> None:
    from denpex_kb import site
    from denpex_kb.kb import load_kb

    kb = load_kb(Path(__file__).parent / "fixtures" / "kb")
    for e in kb.entries:
        assert rp.page_path(e) == site.page_url(e.id)


def test_exported_attribution_vectors_are_a_copy() -> None:
    """A caller editing one export's vectors must not change the constant or the next export."""
    from denpex_kb.attribution_vectors import ATTRIBUTION_VECTORS

    kb = load_kb(FIXTURE)
    pack = rp.build_pack(kb)
    before = json.dumps(ATTRIBUTION_VECTORS, sort_keys=True)
    first = rp.build_vectors(kb, pack)
    first["attribution"].clear()
    second = rp.build_vectors(kb, pack)
    assert json.dumps(ATTRIBUTION_VECTORS, sort_keys=True) == before
    assert second["attribution"] == ATTRIBUTION_VECTORS and second["attribution"]
