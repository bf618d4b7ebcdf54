"""The JavaScript engine (js/denpex-engine/) against the rule pack's conformance vectors and
against the Python engine, in Node.

- every conformance vector (entry examples and attribution vectors) of the bundled and of the
  fixture knowledge base passes in the JavaScript engine;
- over every log in tests/ (tests/logs, its folders and healthy runs, the captured runs the
  expectations name, tests/corpus/dev; not the evaluation-only holdout), the runs in
  kb/captured/, the examples/ folder, and every entry example, both engines give the same
  verdict, root cause, hypotheses, initiating rank, collateral set (with ranks) and candidates.

Node is required (it is already required for the pack's regex portability check); the test
fails, never skips, without it.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from denpex_kb import rulepack as rp
from denpex_kb.engine import Engine, collect_sources
from denpex_kb.kb import load_kb

ROOT = Path(__file__).resolve().parent.parent
JS = ROOT / "js" / "denpex-engine"
LOGS = ROOT / "tests" / "logs"
FIXTURE = ROOT / "tests" / "fixtures" / "kb"


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed: the JavaScript engine is tested in Node", pytrace=False)
    return node


def _conformance(tmp: Path, kb, pack: dict) -> dict:  # noqa: ANN001
    packf = tmp / "pack.json"
    packf.write_bytes(rp.dumps(pack))
    vecf = tmp / "vectors.json"
    vecf.write_bytes(rp.dumps(rp.build_vectors(kb, pack)))
    proc = subprocess.run(
        [_node(), str(JS / "tools" / "conformance.mjs"), str(packf), str(vecf)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.stdout, proc.stderr
    return json.loads(proc.stdout)


def test_js_engine_passes_every_bundled_conformance_vector(tmp_path: Path, kb, pack) -> None:  # noqa: ANN001
    out = _conformance(tmp_path, kb, pack)
    assert out["failures"] == []
    assert out["vectors"] == sum(len(e.examples) for e in kb.entries) > 100
    assert out["attribution"] >= 6


def test_js_engine_passes_the_fixture_vectors(tmp_path: Path) -> None:
    fkb = load_kb(FIXTURE)
    out = _conformance(tmp_path, fkb, rp.build_pack(fkb))
    assert out["failures"] == [] and out["vectors"] == 4


def test_conformance_runner_reports_a_wrong_vector(tmp_path: Path, kb, pack) -> None:  # noqa: ANN001
    """The runner is not a rubber stamp: a vector with a wrong expectation fails."""
    # a copy: build_vectors shares the attribution vectors with the module that defines them
    vec = copy.deepcopy(rp.build_vectors(kb, pack))
    v = next(x for x in vec["vectors"] if x["expect"] == "match")
    vec["vectors"] = [dict(v, name="wrong", evidence=["no line says this"])]
    vec["attribution"] = vec["attribution"][:1]
    vec["attribution"][0]["expect"][0] = dict(vec["attribution"][0]["expect"][0], rank=999)
    packf, vecf = tmp_path / "pack.json", tmp_path / "vectors.json"
    packf.write_bytes(rp.dumps(pack))
    vecf.write_text(json.dumps(vec), encoding="utf-8")
    proc = subprocess.run(
        [_node(), str(JS / "tools" / "conformance.mjs"), str(packf), str(vecf)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    names = [f["name"] for f in json.loads(proc.stdout)["failures"]]
    assert names == ["wrong", f"attribution/{vec['attribution'][0]['name']}"]


# ---------------------------------------------------------------------------------------------
# Agreement with the Python engine


def summarise(r: dict[str, Any]) -> dict[str, Any]:
    """The same summary as js/denpex-engine/tools/batch.mjs."""

    def ids(xs: list[dict[str, Any]]) -> list[str]:
        return [c["id"] for c in xs]

    rc = r["root_cause"]
    return {
        "verdict": r["verdict"],
        "root_cause": rc["id"] if rc else None,
        "differential": ids(r["differential"]),
        "probable": ids(r["probable"]),
        "consequences": ids(r["consequences"]),
        "ruled_out": ids(r["ruled_out"]),
        "candidates": [
            [c["id"], c["confidence"], c["hypothesis"], c["shadowed_by"], c["ranks"]]
            for c in r["candidates"]
        ],
        "initiating_rank": r["initiating_rank"],
        "initiating_host": r["initiating_host"],
        "initiating_basis": r["initiating_basis"],
        "collateral": [[c["id"], c["ranks"], c["count"]] for c in r["collateral"]],
        "evidence": [[e["file"], e["line"], e["rank"], e["host"]] for e in rc["evidence"]]
        if rc
        else [],
        "unrecognised": [
            [e["file"], e["line"], e["rank"], e.get("declined_by")]
            for e in r["unrecognised_errors"]
        ],
        "cut_traceback": r["cut_traceback"],
        "versions": r["versions"],
        "facts": {k: v["count"] for k, v in r["facts"].items()},
        "notes": r["notes"],
        "inputs": [[i["file"], i["lines"], i["bytes"]] for i in r["inputs"]],
    }


def _log_targets() -> list[Path]:
    """Every log under tests/ the engine tests read (holdout excluded), captured runs, examples."""
    out: set[Path] = set()
    for p in LOGS.rglob("*"):
        if p.is_file() and p.name.endswith((".log", ".log.gz", ".out", ".txt")):
            out.add(p)
    out.add(LOGS / "per-rank-folder")
    for exp in LOGS.glob("*.expect.json"):
        log = json.loads(exp.read_text()).get("log")
        if log:
            out.add(ROOT / log)
    for p in (ROOT / "tests" / "corpus" / "dev").rglob("*"):
        if p.is_file() and not p.name.endswith((".json", ".md")):
            out.add(p)
    for p in (ROOT / "kb" / "captured").iterdir():
        if p.is_dir() or p.name.endswith((".log", ".log.gz")):
            out.add(p)
    out.update(p for p in (ROOT / "examples").glob("*.log"))
    assert not any("holdout" in p.parts for p in out)
    return sorted(out)


# What both engines must agree on, and what is compared on top when it is there.
REQUIRED = ("verdict", "root_cause", "initiating_rank", "collateral_set")


def _cases(kb) -> list[dict[str, Any]]:  # noqa: ANN001
    cases: list[dict[str, Any]] = []
    for target in _log_targets():
        srcs = collect_sources([str(target.relative_to(ROOT))])
        cases.append(
            {
                "id": str(target.relative_to(ROOT)),
                "sources": [{"name": s.name, "path": str(ROOT / s.name)} for s in srcs],
            }
        )
    for e in kb.entries:
        for ex in e.examples:
            cases.append(
                {
                    "id": f"example:{e.id}/{ex.name}",
                    "sources": [{"name": "example.log", "text": ex.log}],
                    "isFile": False,
                }
            )
    return cases


def _python(engine: Engine, case: dict[str, Any]) -> dict[str, Any]:
    if case.get("isFile") is False:
        return summarise(engine.analyse_bytes(case["sources"][0]["text"].encode(), "example.log"))
    return summarise(engine.analyse_paths([case["id"]]))


@pytest.fixture(scope="module")
def agreement(tmp_path_factory: pytest.TempPathFactory, kb, pack) -> dict[str, Any]:  # noqa: ANN001
    import os

    tmp = tmp_path_factory.mktemp("agree")
    packf = tmp / "pack.json"
    packf.write_bytes(rp.dumps(pack))
    cases = _cases(kb)
    manifest = tmp / "manifest.json"
    manifest.write_text(json.dumps({"pack": str(packf), "cases": cases}), encoding="utf-8")
    proc = subprocess.run(
        [_node(), str(JS / "tools" / "batch.mjs"), str(manifest)],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    js = json.loads(proc.stdout)
    engine = Engine(pack)
    cwd = os.getcwd()
    os.chdir(ROOT)  # the case ids are paths from the repository root, as the names in reports
    try:
        py = {c["id"]: _python(engine, c) for c in cases}
    finally:
        os.chdir(cwd)
    return {"cases": cases, "js": js, "py": py}


def _required(s: dict[str, Any]) -> dict[str, Any]:
    return {
        "verdict": s["verdict"],
        "root_cause": s["root_cause"],
        "hypotheses": s["differential"] + s["probable"],
        "initiating_rank": s["initiating_rank"],
        "collateral_set": sorted(c[0] for c in s["collateral"]),
    }


def test_there_are_many_cases(agreement: dict[str, Any]) -> None:
    cases = agreement["cases"]
    assert sum(1 for c in cases if c["id"].startswith("example:")) > 400
    assert sum(1 for c in cases if c["id"].startswith("tests/")) >= 40
    assert any(len(c["sources"]) > 1 for c in cases)  # folders, one file per rank
    assert any(c["id"].endswith(".gz") for c in cases)


def test_js_and_python_agree_on_root_cause_rank_and_collateral(agreement: dict[str, Any]) -> None:
    js, py = agreement["js"], agreement["py"]
    errors = {k: v["error"] for k, v in js.items() if "error" in v}
    assert errors == {}
    diff = {
        k: {"python": _required(py[k]), "js": _required(js[k])}
        for k in py
        if _required(py[k]) != _required(js[k])
    }
    assert diff == {}


def test_js_and_python_agree_on_the_whole_summary(agreement: dict[str, Any]) -> None:
    """Beyond the required fields: candidates with confidences, ranks and shadowing, evidence
    lines with their ranks, initiating host and basis, collateral ranks and counts, facts,
    versions, notes and input sizes."""
    js, py = agreement["js"], agreement["py"]
    diff = {}
    for k in py:
        d = {f: {"python": py[k][f], "js": js[k].get(f)} for f in py[k] if py[k][f] != js[k].get(f)}
        if d:
            diff[k] = d
    assert diff == {}


# ---------------------------------------------------------------------------------------------
# The regex dialect: JavaScript (after js/denpex-engine/rules.js rewrites) matches what RE2 does

DIALECT_CHECK = r"""
import { readFileSync } from "node:fs";
import { compile, search } from "%(rules)s";
const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = cases.map(([p, ic, text]) => {
  const m = search(compile(p, ic), text);
  return m === null ? null : m[0];
});
console.log(JSON.stringify(out));
"""

# Characters where the dialects part: Unicode spaces (JavaScript's \s), \v (Python's and
# JavaScript's \s, not RE2's), line separators (JavaScript's . stops there).
ODD = ["\u00a0", "\x0b", "\u2028", "\u3000", "\ufeff"]


def test_js_patterns_match_what_re2_matches(tmp_path: Path, kb, pack) -> None:  # noqa: ANN001
    import re2

    opts = re2.Options()
    opts.log_errors = False
    lines = sorted(
        {ln for e in kb.entries for ex in e.examples for ln in ex.log.split("\n") if ln.strip()}
    )
    cases: list[tuple[str, bool, str]] = []
    want: list[str | None] = []
    patterns = [(s["pattern"], s["ignore_case"]) for e in pack["entries"] for s in e["signals"]]
    patterns += [(p["pattern"], False) for p in pack["globals"]["line_prefixes"]]
    patterns += [(p["pattern"], False) for p in pack["globals"]["facts"]["lines"]]
    for p, ic in patterns:
        rx = re2.compile(("(?i)" if ic else "") + p, opts)
        positives = [ln for ln in lines if rx.search(ln)][:4]
        probes = list(positives)
        for ln in positives:
            for odd in ODD:
                probes.append(ln.replace(" ", odd))
                probes.append(ln.replace(" ", " " + odd, 1))
        for text in probes:
            m = rx.search(text)
            cases.append((p, ic, text))
            want.append(m.group(0) if m else None)
    assert len(cases) > 2000
    data = tmp_path / "cases.json"
    data.write_text(json.dumps(cases), encoding="utf-8")
    script = tmp_path / "dialect.mjs"
    script.write_text(DIALECT_CHECK % {"rules": (JS / "rules.js").as_uri()})
    proc = subprocess.run(
        [_node(), str(script), str(data)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    differ = [(c[0], c[2], w, g) for c, w, g in zip(cases, want, got, strict=True) if w != g]
    assert differ == []
    # and the probes do exercise the difference: some odd variants stop matching in RE2
    assert any(w is None for (_, _, t), w in zip(cases, want, strict=True) if "\u00a0" in t)


def test_js_reports_have_the_report_schema(tmp_path: Path, kb, pack) -> None:  # noqa: ANN001
    """Whole JavaScript reports validate against the strict form of
    denpex_kb/schemas/report.schema.json (closed objects and vocabularies: no member or value
    the report format does not list)."""
    import jsonschema

    from denpex_kb.schemas import load_schema, strict_schema

    schema = strict_schema(load_schema("report"))
    cases = [c for c in _cases(kb) if not c["id"].startswith("example:")]
    cases += [c for c in _cases(kb) if c["id"].startswith("example:")][::20]
    packf = tmp_path / "pack.json"
    packf.write_bytes(rp.dumps(pack))
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"pack": str(packf), "cases": cases, "full": True}))
    proc = subprocess.run(
        [_node(), str(JS / "tools" / "batch.mjs"), str(manifest)],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    reports = json.loads(proc.stdout)
    assert len(reports) == len(cases) > 60
    verdicts = set()
    for cid, r in reports.items():
        assert "error" not in r, (cid, r.get("error"))
        assert r["scanner"] == "javascript"
        jsonschema.validate(r, schema)
        verdicts.add(r["verdict"])
    assert verdicts == {"confident", "differential", "probable", "none"}
