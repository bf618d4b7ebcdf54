"""The rule pack and the report as a contract (docs/rule-pack-format.md, "Compatibility policy").

- The published schemas carry versioned `$id`s, and a schema published under an `$id` never
  changes afterwards (tests/fixtures/published-schemas.json records each one's hash).
- A synthetic pack of the next minor version with only the additions the policy allows (new
  optional members in every object of the pack, new globals, a new phase, failure class and
  version-banner package) is accepted by `denpex-kb match --rules`, and this engine's report on
  it is the report on the pack it was derived from.
- A pack of another major version is refused with one line.
- Our own packs and reports pass the strict form of the schemas (closed objects, closed
  vocabularies): openness for later versions must not hide a typo in ours.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from denpex_kb import rulepack as rp
from denpex_kb.engine import Engine
from denpex_kb.kb import load_kb
from denpex_kb.schemas import load_schema, strict_schema

ROOT = Path(__file__).resolve().parent.parent
PUBLISHED = ROOT / "tests" / "fixtures" / "published-schemas.json"
REPORT_FORMAT_VERSION = "1.3"  # docs/report-format.md
# Logs with different verdicts, ranks and collateral (their .expect.json say what they show).
LOGS = [
    ROOT / "examples" / "fastfilewriter-rotation-enospc.log",
    ROOT / "tests" / "logs" / "oom-rank3-watchdog-rest.log",
    ROOT / "tests" / "logs" / "collateral-only-rank5-silent.log",
    ROOT / "tests" / "logs" / "two-independent-failures.log",
    ROOT / "tests" / "logs" / "per-rank-folder",
]
NEW_PHASE = "checkpoint-io"
NEW_CLASS = "silent-corruption"
NEW_PACKAGE = "megatron-core"


def _canonical_hash(obj: Any) -> str:
    return "sha256:" + hashlib.sha256(rp.canonical_bytes(obj)).hexdigest()


# --------------------------------------------------------------------------------------------
# $id
# --------------------------------------------------------------------------------------------


def test_schema_ids_name_the_format_version() -> None:
    assert load_schema("rulepack")["$id"] == rp.schema_id("rulepack", rp.FORMAT_VERSION)
    assert load_schema("report")["$id"] == rp.schema_id("report", REPORT_FORMAT_VERSION)
    assert rp.schema_id("rulepack", "1.3") == "https://denpex-kb.invalid/schemas/rulepack/1.3"


def test_report_format_version_is_the_one_the_schema_id_names(pack: dict) -> None:
    report = Engine(pack).analyse_bytes(b"RuntimeError: nothing we know\n")
    assert report["format_version"] == REPORT_FORMAT_VERSION
    assert report["rulepack"]["format_version"] == rp.FORMAT_VERSION


def test_a_published_schema_never_changes_under_its_id() -> None:
    """A schema published under an `$id` is immutable: a change to it needs a new format
    version (and so a new `$id`). Before a release, a schema whose `$id` is not yet recorded
    is recorded here; one that is recorded must hash as recorded."""
    published = json.loads(PUBLISHED.read_text())
    for name in ("rulepack", "report"):
        schema = load_schema(name)
        sid = schema["$id"]
        assert sid in published, f"{name}: $id {sid} is not recorded in {PUBLISHED.name}"
        assert published[sid] == _canonical_hash(schema), (
            f"the {name} schema changed under its published $id {sid}: give the format a new "
            f"minor version (and the schema the $id of that version), then record its hash"
        )


# --------------------------------------------------------------------------------------------
# Strict form
# --------------------------------------------------------------------------------------------


def test_strict_form_closes_what_the_published_schema_opens(pack: dict) -> None:
    strict = strict_schema(load_schema("rulepack"))
    jsonschema.validate(pack, strict)
    typo = copy.deepcopy(pack)
    typo["entries"][0]["match"]["windw_lines"] = 5
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(typo, strict)
    jsonschema.validate(typo, load_schema("rulepack"))  # the open form reads it
    odd = copy.deepcopy(pack)
    odd["entries"][0]["phase"] = NEW_PHASE
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(odd, strict)
    jsonschema.validate(odd, load_schema("rulepack"))


def test_own_version_pack_with_an_unknown_member_is_refused(pack: dict) -> None:
    typo = copy.deepcopy(pack)
    typo["globals"]["scoring"]["bse"] = 60
    typo["content_hash"] = rp.content_hash(typo)
    with pytest.raises(rp.RulePackError) as exc:
        rp.validate_pack(typo)
    assert any("bse" in p for p in exc.value.problems)


# --------------------------------------------------------------------------------------------
# A pack of the next minor version
# --------------------------------------------------------------------------------------------


def _resolve(schema: dict, node: dict) -> dict:
    while "$ref" in node:
        ref = node["$ref"]
        assert ref.startswith("#/"), ref
        target: Any = schema
        for part in ref[2:].split("/"):
            target = target[part]
        node = target
    return node


def _additive(schema: dict, node: dict, value: Any, where: str, counter: list[str]) -> None:
    """Add a new optional member to every object of `value` that the schema describes as a
    record (has `properties`); maps (`additionalProperties` with a schema: group numbers,
    field types, summary patterns) only get their values visited."""
    node = _resolve(schema, node)
    parts = [node] + [_resolve(schema, s) for s in node.get("allOf", [])]
    if isinstance(value, dict):
        props: dict[str, Any] = {}
        for p in parts:
            props.update(p.get("properties", {}))
        if props:
            for k, sub in props.items():
                if k in value:
                    _additive(schema, sub, value[k], f"{where}.{k}", counter)
            value["added_in_next_minor"] = {"note": "a member this engine does not know", "n": 1}
            counter.append(where)
        else:
            for p in parts:
                ap = p.get("additionalProperties")
                if isinstance(ap, dict):
                    for k, v in value.items():
                        _additive(schema, ap, v, f"{where}.{k}", counter)
    elif isinstance(value, list):
        for p in parts:
            if isinstance(p.get("items"), dict):
                for i, v in enumerate(value):
                    _additive(schema, p["items"], v, f"{where}[{i}]", counter)


def next_minor_pack(pack: dict) -> tuple[dict, list[str]]:
    """The pack as a later minor version could write it, with only additive changes."""
    schema = load_schema("rulepack")
    future = copy.deepcopy(pack)
    major, minor = rp.FORMAT_VERSION.split(".")
    future["format_version"] = f"{major}.{int(minor) + 1}"
    where: list[str] = []
    _additive(schema, schema, future, "$", where)
    g = future["globals"]
    g["future_global"] = [{"id": "x", "pattern": "^never matches here$"}]
    g["version_banners"].append(
        {
            "id": "megatron-core-banner",
            "package": NEW_PACKAGE,
            "pattern": "^megatron-core version ([0-9][0-9A-Za-z.+-]*)$",
            "groups": {"version": 1},
            "description": "a banner of a package this engine does not know",
            "example": "megatron-core version 0.9.0",
        }
    )
    # `future` keeps its unknown values on the entries it changes; the reports must show them
    # as printed (the open-vocabulary fallback) and otherwise not differ.
    future["entries"][0]["phase"] = NEW_PHASE
    future["entries"][1]["failure_class"] = NEW_CLASS
    future["content_hash"] = rp.content_hash(future)
    return future, where


def _comparable(report: dict, pack: dict) -> dict:
    out = copy.deepcopy(report)
    out.pop("rulepack")
    return out


def test_next_minor_pack_has_additions_at_every_level(pack: dict) -> None:
    future, where = next_minor_pack(pack)
    # the top level, globals, each kind of global record, entries and every part of a rule
    for must in [
        "$",
        "$.globals",
        "$.globals.scoring",
        "$.globals.facts",
        "$.globals.elastic_summary",
        "$.globals.line_prefixes[0]",
        "$.globals.timestamps[0]",
        "$.globals.facts.tables[0]",
        "$.entries[0]",
        "$.entries[0].signals[0]",
        "$.entries[0].match",
        "$.entries[0].fix",
        "$.entries[0].verify",
    ]:
        assert must in where, must
    assert any(".match.facts[" in w for w in where)
    assert any(".match.versions[" in w for w in where)
    assert any(".match.explains[" in w for w in where)
    assert any(".look_alikes[" in w for w in where)
    assert any(".checklist[" in w for w in where)
    with pytest.raises(rp.RulePackError):  # as ours, it would be refused: strict form
        rp.validate_pack({**future, "format_version": rp.FORMAT_VERSION})
    rp.validate_pack(future)  # as the next minor version: accepted


def _match_json(rules: Path, log: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "denpex_kb", "match", "--rules", str(rules), "--format", "json"]
        + ["--jobs", "1", str(log)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.fixture()
def cli_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["DENPEX_KB_CACHE"] = str(tmp_path / "cache")
    env["NO_COLOR"] = "1"
    return env


def test_next_minor_pack_gives_the_same_reports(pack: dict, tmp_path: Path, cli_env) -> None:  # noqa: ANN001
    future, _ = next_minor_pack(pack)
    now_f, future_f = tmp_path / "now.json", tmp_path / "future.json"
    now_f.write_bytes(rp.dumps(pack))
    future_f.write_bytes(rp.dumps(future))
    e_now, e_future = Engine(pack), Engine(future)
    for log in LOGS:
        want = e_now.analyse_paths([str(log)])
        got = e_future.analyse_paths([str(log)])
        assert got["rulepack"]["format_version"] == future["format_version"]
        assert _same_but_phase(got, want, future, pack), log.name
        # and the CLI, validating the pack as any consumer does, accepts it
        proc = _match_json(future_f, log, cli_env)
        assert proc.returncode in (0, 1), proc.stderr
        cli = json.loads(proc.stdout)
        ref = _match_json(now_f, log, cli_env)
        assert ref.returncode == proc.returncode, ref.stderr
        assert _same_but_phase(cli, json.loads(ref.stdout), future, pack), log.name


def _same_but_phase(got: dict, want: dict, future: dict, pack: dict) -> bool:
    """`got` (on the future pack) equals `want` once the changed phase is put back."""
    got = _comparable(got, future)
    old_phase = pack["entries"][0]["phase"]
    eid = pack["entries"][0]["id"]

    def put_back(o: Any) -> Any:
        if isinstance(o, dict):
            if o.get("id") == eid and o.get("phase") == NEW_PHASE:
                o = {**o, "phase": old_phase}
            return {k: put_back(v) for k, v in o.items()}
        if isinstance(o, list):
            return [put_back(v) for v in o]
        return o

    return put_back(got) == _comparable(want, pack)


def test_next_minor_pack_shows_the_new_phase_as_printed(pack: dict) -> None:
    """The new phase value reaches the report unchanged (the open-vocabulary fallback): on a
    log made of an example of the changed entry."""
    future, _ = next_minor_pack(pack)
    eid = future["entries"][0]["id"]
    kb = load_kb(ROOT / "kb")
    example = next(x for e in kb.entries if e.id == eid for x in e.examples if x.expect == "match")
    got = Engine(future).analyse_bytes(example.log.encode())
    want = Engine(pack).analyse_bytes(example.log.encode())
    cand = next(c for c in got["candidates"] if c["id"] == eid)
    assert cand["phase"] == NEW_PHASE
    assert _same_but_phase(got, want, future, pack)


def test_next_major_pack_is_refused_with_one_line(pack: dict, tmp_path: Path, cli_env) -> None:  # noqa: ANN001
    major = copy.deepcopy(pack)
    major["format_version"] = "2.0"
    major["content_hash"] = rp.content_hash(major)
    with pytest.raises(rp.RulePackError) as exc:
        rp.validate_pack(major)
    assert len(exc.value.problems) == 1
    f = tmp_path / "major.json"
    f.write_bytes(rp.dumps(major))
    proc = _match_json(f, LOGS[0], cli_env)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "format 2.0 is not supported" in lines[0] and "1.x" in lines[0]
    assert proc.stdout == ""


def test_our_reports_pass_the_strict_report_schema(pack: dict) -> None:
    strict = strict_schema(load_schema("report"))
    engine = Engine(pack)
    for log in LOGS:
        jsonschema.validate(engine.analyse_paths([str(log)]), strict)
    bad = engine.analyse_paths([str(LOGS[0])])
    bad["verdikt"] = "none"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, strict)
    jsonschema.validate(bad, load_schema("report"))


def test_javascript_engine_reads_the_next_minor_pack_alike(pack: dict, tmp_path: Path) -> None:
    """The second implementation, too, gives the same whole reports on the 1.(N+1) pack."""
    import shutil

    from denpex_kb.engine import collect_sources

    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed", pytrace=False)
    future, _ = next_minor_pack(pack)
    cases = []
    for log in LOGS:
        srcs = collect_sources([str(log)])
        cases.append({"id": log.name, "sources": [{"name": s.name, "path": s.name} for s in srcs]})
    reports = {}
    for label, p in (("now", pack), ("future", future)):
        packf = tmp_path / f"{label}.json"
        packf.write_bytes(rp.dumps(p))
        manifest = tmp_path / f"{label}-manifest.json"
        manifest.write_text(json.dumps({"pack": str(packf), "cases": cases, "full": True}))
        proc = subprocess.run(
            [node, str(ROOT / "js" / "denpex-engine" / "tools" / "batch.mjs"), str(manifest)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stderr
        reports[label] = json.loads(proc.stdout)
    for case in cases:
        got, want = reports["future"][case["id"]], reports["now"][case["id"]]
        assert "error" not in got, got
        assert got["rulepack"]["format_version"] == future["format_version"]
        assert _same_but_phase(got, want, future, pack), case["id"]
