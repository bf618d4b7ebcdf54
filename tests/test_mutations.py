"""The vector mutation harness (js/denpex-engine/tools/mutate.mjs): every deliberate misreading
of the rule pack format built into the JavaScript engine (js/denpex-engine/mutation.js) makes
at least one conformance vector fail, so every rule those misreadings name is checked by a
vector. The harness also replays the vectors unmutated first, which must pass.

Also: the rule vectors (denpex_kb/rule_vectors.py) hold for the reference, the Python engine,
and each of them is a valid pack once its entries replace the pack's.

Node is required, as for tests/test_js_engine.py: the test fails, never skips, without it.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from denpex_kb import rulepack as rp
from denpex_kb.engine import Engine
from denpex_kb.engine.read import Source
from denpex_kb.rule_vectors import check_rule_vector, rule_vectors

ROOT = Path(__file__).resolve().parent.parent
JS = ROOT / "js" / "denpex-engine"


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed: the mutation harness runs in Node", pytrace=False)
    return node


def _run_rule_vector(pack: dict, vec: dict) -> dict:
    p = {**pack, "entries": vec["entries"]}
    p["content_hash"] = rp.content_hash(p)
    rp.validate_pack(p)  # the vector's entries are complete pack entries
    sources = [
        Source("<stream>", None) if s["name"] is None else Source(s["name"], Path(s["name"]))
        for s in vec["sources"]
    ]
    streams = [io.BytesIO(s["log"].encode("utf-8")) for s in vec["sources"]]
    return Engine(p).analyse(sources, streams=streams)


@pytest.mark.parametrize("vec", rule_vectors(), ids=[v["name"] for v in rule_vectors()])
def test_rule_vector_holds_for_the_python_engine(pack: dict, vec: dict) -> None:
    assert check_rule_vector(vec, _run_rule_vector(pack, vec)) == []


def test_rule_vector_checker_can_fail(pack: dict) -> None:
    vec = next(v for v in rule_vectors() if v["name"] == "fatal-entries-first")
    report = _run_rule_vector(pack, vec)
    wrong = dict(vec, expect={**vec["expect"], "root_cause": "rv-fatal-no"})
    assert check_rule_vector(wrong, report) == [
        "root_cause is 'rv-fatal-yes', expected 'rv-fatal-no'"
    ]


def test_rule_vectors_are_exported(kb, pack: dict) -> None:  # noqa: ANN001
    vectors = rp.build_vectors(kb, pack)
    assert [v["name"] for v in vectors["rules"]] == [v["name"] for v in rule_vectors()]
    assert "rules_semantics" in vectors


def _mutations() -> list[str]:
    text = (JS / "mutation.js").read_text()
    block = text[text.index("export const MUTATIONS") :]
    return re.findall(r'^  "([a-z0-9-]+)":', block, re.M)


def test_every_mutation_is_caught(tmp_path: Path, kb, pack: dict) -> None:  # noqa: ANN001
    names = _mutations()
    assert len(names) >= 30
    packf, vecf = tmp_path / "pack.json", tmp_path / "vectors.json"
    packf.write_bytes(rp.dumps(pack))
    vecf.write_bytes(rp.dumps(rp.build_vectors(kb, pack)))
    proc = subprocess.run(
        [_node(), str(JS / "tools" / "mutate.mjs"), str(packf), str(vecf), "--jobs", "2"],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.stdout, proc.stderr
    out = json.loads(proc.stdout)
    assert out["baseline"]["failures"] == [], "the unmutated engine fails a vector"
    assert [m["name"] for m in out["mutations"]] == names
    survivors = [f"{m['name']} ({m['rule']})" for m in out["mutations"] if not m["caught"]]
    assert survivors == [], "mutations no vector catches: " + "; ".join(survivors)
    # a crash is not a vector catching a misreading
    crashed = [m["name"] for m in out["mutations"] if m["crashed"]]
    assert crashed == [], crashed
    assert proc.returncode == 0


def test_mutation_switch_is_off_by_default() -> None:
    """Without DENPEX_MUTATION the engine runs unmutated; an unknown name is refused."""
    probe = "import('./mutation.js').then((m) => console.log(JSON.stringify(m.MUTATION)))"
    env = {"PATH": "/usr/bin:/bin"}
    off = subprocess.run(
        [_node(), "--input-type=module", "-e", probe],
        cwd=JS,
        capture_output=True,
        text=True,
        env=env,
    )
    assert off.stdout.strip() == "null", off.stderr
    bad = subprocess.run(
        [_node(), "--input-type=module", "-e", probe],
        cwd=JS,
        capture_output=True,
        text=True,
        env={**env, "DENPEX_MUTATION": "no-such-mutation"},
    )
    assert bad.returncode != 0 and "unknown DENPEX_MUTATION" in bad.stderr
