"""The Diagnose page's parts in the generated hub: the pack as a script, the engine as ES
modules and as the classic bundle the page (and its worker) runs, which must behave exactly
like the modules. The page itself in Chromium: tests/test_browser.py."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from denpex_kb import rulepack as rp
from denpex_kb import site

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def hub(kb):  # noqa: ANN001, ANN201
    return site.generate_hub(kb, downloads=site.rule_pack_downloads(kb))


def test_hub_has_the_diagnose_page_and_its_assets(hub, kb) -> None:  # noqa: ANN001
    assert site.DIAGNOSE_PAGE in hub.pages
    assert {"Diagnose a log": site.DIAGNOSE_PAGE} in hub.nav
    assert 'id="dx-diagnose"' in hub.pages[site.DIAGNOSE_PAGE]
    assert "denpex_diagnose: true" in hub.pages[site.DIAGNOSE_PAGE]
    assert "(diagnose.md)" in hub.pages["index.md"]
    # the shipped pack is the download, byte for byte, wrapped as a script
    text = hub.files[site.RULEPACK_SCRIPT].decode()
    body = text.partition("self.DENPEX_RULEPACK = ")[2].removesuffix(";\n")
    assert (body + "\n").encode() == hub.files[f"downloads/{site.RULE_PACK_FILE}"]
    assert json.loads(body)["content_hash"] == rp.build_pack(kb)["content_hash"]
    modules = sorted(p.name for p in site.JS_ENGINE_DIR.glob("*.js"))
    assert {"index.js", "read.js", "normalise.js", "attribute.js", "facts.js", "scan.js"} <= set(
        modules
    )
    for name in modules:
        got = hub.files[f"{site.ENGINE_MODULES}/{name}"]
        assert got == (site.JS_ENGINE_DIR / name).read_bytes()
    assert hub.files[site.ENGINE_SCRIPT].decode() == site.js_engine_bundle()


def test_without_a_pack_there_is_no_diagnose_page(kb) -> None:  # noqa: ANN001
    hub = site.generate_hub(kb, downloads={})
    assert site.DIAGNOSE_PAGE not in hub.pages and site.RULEPACK_SCRIPT not in hub.files
    assert "(diagnose.md)" not in hub.pages["index.md"]


def test_bundler_refuses_what_it_cannot_translate(tmp_path: Path) -> None:
    (tmp_path / "index.js").write_text('import * as all from "./x.js";\n')
    with pytest.raises(ValueError, match="unsupported import"):
        site.js_engine_bundle(tmp_path)
    (tmp_path / "index.js").write_text("export default 3;\n")
    with pytest.raises(ValueError, match="unsupported export"):
        site.js_engine_bundle(tmp_path)
    (tmp_path / "index.js").write_text('import { a } from "./a.js";\n')
    (tmp_path / "a.js").write_text('import { b } from "./index.js";\nexport const a = 1;\n')
    with pytest.raises(ValueError, match="import cycle"):
        site.js_engine_bundle(tmp_path)


BUNDLE_CHECK = r"""
import { readFileSync } from "node:fs";
import vm from "node:vm";
import * as modules from "%(index)s";
const [bundlePath, packPath, vecPath] = process.argv.slice(2);
const ctx = { self: {}, TextDecoder, TextEncoder };
vm.createContext(ctx);
vm.runInContext(readFileSync(bundlePath, "utf8"), ctx);
const bundled = ctx.self.DenpexEngine;
const pack = JSON.parse(readFileSync(packPath, "utf8"));
const vec = JSON.parse(readFileSync(vecPath, "utf8"));
const exported = Object.keys(modules).sort();
let same = 0;
const differ = [];
for (const v of vec.vectors) {
  const files = [{ name: "example.log", data: v.log, isFile: false }];
  const a = JSON.stringify(modules.diagnose(pack, files));
  const b = JSON.stringify(bundled.diagnose(pack, files));
  if (a === b) same++; else differ.push(v.name);
}
console.log(JSON.stringify({ same, differ, exported, bundled: Object.keys(bundled).sort() }));
"""


def test_bundle_behaves_like_the_modules(tmp_path: Path, kb) -> None:  # noqa: ANN001
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed", pytrace=False)
    pack = rp.build_pack(kb)
    (tmp_path / "pack.json").write_bytes(rp.dumps(pack))
    (tmp_path / "vectors.json").write_bytes(rp.dumps(rp.build_vectors(kb, pack)))
    (tmp_path / "engine.js").write_text(site.js_engine_bundle(), encoding="utf-8")
    script = tmp_path / "check.mjs"
    script.write_text(BUNDLE_CHECK % {"index": (site.JS_ENGINE_DIR / "index.js").as_uri()})
    proc = subprocess.run(
        [
            node,
            str(script),
            *(str(tmp_path / n) for n in ("engine.js", "pack.json", "vectors.json")),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["differ"] == [] and out["same"] > 400
    assert out["bundled"] == out["exported"]
