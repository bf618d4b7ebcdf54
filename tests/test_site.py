"""The docs hub: generated pages, strict build, determinism, offline (no external URL)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from denpex_kb import site
from denpex_kb.cli import main
from denpex_kb.kb import load_kb
from denpex_kb.model import FAILURE_CLASSES, PHASES

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_KB = ROOT / "tests" / "fixtures" / "kb"
# The published knowledge base; DENPEX_HUB_TEST_KB points the hub tests at another one.
REAL_KB = Path(os.environ.get("DENPEX_HUB_TEST_KB") or ROOT / "kb")


@pytest.fixture(scope="module")
def real_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The hub of the real knowledge base, built once with the top-level mkdocs.yml."""
    return site.build_site(kb_dir=REAL_KB, site_dir=tmp_path_factory.mktemp("hub") / "site")


# ------------------------------------------------------------------------------------------
# Generated Markdown


def test_every_entry_page_has_every_section_in_order() -> None:
    kb = load_kb(REAL_KB)
    hub = site.generate_hub(kb, static_pages=["write-an-entry.md"])
    for e in kb.entries:
        md = hub.pages[site.entry_path(e.id)]
        positions = []
        for anchor, title in site.ENTRY_SECTIONS:
            m = re.search(rf"(## {re.escape(title)} \{{ #{anchor} \}}|<a id=\"{anchor}\">)", md)
            assert m, f"{e.id}: section {title!r} missing"
            positions.append(m.start())
        assert positions == sorted(positions), f"{e.id}: sections out of order"
        assert md.index("dx-badges") < md.index("dx-summary") < positions[0]
        assert f"tags: [{', '.join(site.yaml_str(t) for t in e.tags)}]" in md


def test_indexes_list_every_entry() -> None:
    kb = load_kb(REAL_KB)
    hub = site.generate_hub(kb)
    classes = hub.pages["classes.md"]
    nav_text = repr(hub.nav)
    for e in kb.entries:
        link = f"../entries/{e.id}.md"
        assert link in hub.pages[site.phase_path(e.phase)], e.id
        assert f"(entries/{e.id}.md)" in classes, e.id
        assert site.entry_path(e.id) in nav_text, e.id
    for phase in PHASES:
        assert site.phase_path(phase) in hub.pages
    for cls in FAILURE_CLASSES:
        assert f"{{ #{cls} }}" in classes
    assert "<!-- material/tags" in hub.pages["tags.md"]
    for tag in kb.tags:
        assert f"`{tag}`" in hub.pages["tags.md"]


def test_generation_is_deterministic() -> None:
    a = site.generate_hub(load_kb(REAL_KB), downloads={"x.json": b"{}"})
    b = site.generate_hub(load_kb(REAL_KB), downloads={"x.json": b"{}"})
    assert a == b


def test_prose_keeps_placeholders_and_code() -> None:
    assert site.prose("run df -h <ckpt_dir> now") == "run df -h &lt;ckpt_dir> now"
    assert site.prose("`a <b>` and <c>") == "`a <b>` and &lt;c>"
    assert site.prose("```\n<x>\n```") == "```\n<x>\n```"
    assert site.code_span("a`b") == "``a`b``"
    assert site.fence("```\ninner\n```").startswith("````")
    assert site.relative("entries/a.md", "phases/b.md") == "../phases/b.md"
    assert site.relative("index.md", "phases/b.md") == "phases/b.md"


def test_write_hub_writes_plain_markdown(tmp_path: Path) -> None:
    hub = site.generate_hub(load_kb(FIXTURE_KB))
    site.write_hub(hub, tmp_path)
    page = (tmp_path / "entries" / "fixture-disk-full.md").read_text("utf-8")
    assert page.startswith("---\ntitle: ")
    assert (tmp_path / "entries" / "fixture-disk-full.yaml").is_file()
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()}
    site.write_hub(hub, tmp_path)  # unchanged content is not rewritten (no watcher loops)
    assert before == {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()}


# ------------------------------------------------------------------------------------------
# The built site


def _tree_digest(root: Path) -> dict[str, str]:
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.suffix != ".gz":  # sitemap.xml.gz carries a gzip timestamp
            out[p.relative_to(root).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def test_build_twice_gives_the_same_site(tmp_path: Path) -> None:
    a = site.build_site(kb_dir=FIXTURE_KB, site_dir=tmp_path / "a")
    b = site.build_site(kb_dir=FIXTURE_KB, site_dir=tmp_path / "b")
    assert _tree_digest(a) == _tree_digest(b)


def test_a_build_given_the_kb_loads_it_once_and_gives_the_same_site(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 15: `denpex-kb build` loads and exports the KB once; the MkDocs hook takes them."""
    import denpex_kb.kb as kbmod

    kb = load_kb(FIXTURE_KB)
    downloads = site.rule_pack_downloads(kb)
    plain = site.build_site(kb_dir=FIXTURE_KB, site_dir=tmp_path / "plain")
    calls = []
    real = kbmod.load_kb
    monkeypatch.setattr(kbmod, "load_kb", lambda *a, **k: calls.append(a) or real(*a, **k))
    given = site.build_site(
        kb_dir=FIXTURE_KB, site_dir=tmp_path / "given", kb=kb, downloads=downloads
    )
    only_kb = site.build_site(kb_dir=FIXTURE_KB, site_dir=tmp_path / "only-kb", kb=kb)
    assert calls == []
    assert _tree_digest(plain) == _tree_digest(given) == _tree_digest(only_kb)
    assert site.preloaded(FIXTURE_KB) is None  # nothing is kept after the build
    site.build_site(kb_dir=FIXTURE_KB, site_dir=tmp_path / "again")
    assert len(calls) == 1  # a plain build (or `mkdocs build`) still loads it itself


def test_built_site_has_every_page_and_download(real_site: Path) -> None:
    kb = load_kb(REAL_KB)
    for e in kb.entries:
        html = (real_site / site.page_url(e.id)).read_text("utf-8")
        for anchor, _title in site.ENTRY_SECTIONS:
            assert f'id="{anchor}"' in html, (e.id, anchor)
        assert (real_site / "entries" / f"{e.id}.yaml").is_file()
    for phase in PHASES:
        assert (real_site / "phases" / f"{phase}.html").is_file()
    for name in ("index.html", "classes.html", "tags.html", "rule-pack.html"):
        assert (real_site / name).is_file()
    assert (real_site / "write-an-entry.html").is_file()
    assert (real_site / "search" / "search_index.js").is_file()  # offline search
    assert (real_site / "assets/javascripts/iframe-worker-shim.js").is_file()
    downloads = site.rule_pack_downloads(kb)
    for name, data in downloads.items():
        assert (real_site / "downloads" / name).read_bytes() == data
    tags_html = (real_site / "tags.html").read_text("utf-8")
    for e in kb.entries:
        assert f"entries/{e.id}.html" in tags_html, e.id


# Anything a browser fetches by itself: element sources, stylesheets, icons, preloads, CSS
# url()/@import, script loaders. Plain <a href> links to references are not loaded.
_HTML_LOADS = re.compile(
    r"<(?:script|img|iframe|source|audio|video|embed|track|input)\b[^>]*?\s(?:src|srcset|poster)"
    r"\s*=\s*[\"']?([^\"'\s>]+)|<link\b[^>]*?\shref\s*=\s*[\"']?([^\"'\s>]+)|<object\b[^>]*?\s"
    r"data\s*=\s*[\"']?([^\"'\s>]+)|url\(\s*[\"']?([^\"')]+)|@import\s+[\"']([^\"']+)",
    re.I,
)
_EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:)?//", re.I)
_JS_URL = re.compile(r"https?://[a-z0-9.-]+\.[a-z]{2,}[^\s\"'`)]*", re.I)
# URLs inside Material's JavaScript that are never fetched by this hub, each with the reason.
_JS_ALLOWED = {
    "www.w3.org": "XML namespace identifiers, not requests",
    "bit.ly": "links inside console warnings",
    "lunrjs.com": "license comment of lunr",
    "tartarus.org": "comment in lunr's stemmer",
    "clipboardjs.com": "license comment of clipboard.js",
    "unpkg.com/resize-observer-polyfill": "only loaded when the browser lacks ResizeObserver",
    "unpkg.com/mermaid": "only loaded when a page has a mermaid diagram (none here; tested)",
    "api.github.com": "repository facts, only with repo_url (not set; tested)",
    "/api/v4/projects": "GitLab repository facts, only with repo_url (not set; tested)",
}


def _loaded_scripts(root: Path, html_files: list[Path]) -> set[Path]:
    """Every script a page of the site loads: <script src>, plus the search web worker."""
    scripts = set((root / "assets" / "javascripts" / "workers").glob("*.js"))
    for html in html_files:
        for src in re.findall(r"<script\b[^>]*\ssrc=\"([^\"]+)\"", html.read_text("utf-8")):
            if _EXTERNAL.match(src):
                continue  # reported by the HTML scan
            base = root if src.startswith("/") else html.parent  # 404.html uses /-paths
            scripts.add((base / src.split("?")[0].lstrip("/")).resolve())
    return scripts


def _external_loads(root: Path) -> list[str]:
    """Every external URL in something the browser would load from this site.

    HTML and CSS are scanned in full (element sources, stylesheets, icons, preloads, url(),
    @import, inline scripts); JavaScript is scanned for every script a page loads and the search
    worker, less the documented _JS_ALLOWED exceptions. The search index is data, not code.
    """
    root = root.resolve()
    problems = []
    html_files = sorted(root.rglob("*.html"))
    for p in sorted(root.rglob("*")):
        if not p.is_file() or p.suffix not in (".html", ".css", ".svg", ".xml", ".webmanifest"):
            continue
        rel = p.relative_to(root).as_posix()
        text = p.read_text("utf-8", errors="replace")
        for m in _HTML_LOADS.finditer(text):
            url = next(g for g in m.groups() if g)
            if _EXTERNAL.match(url.strip()):
                problems.append(f"{rel}: {url}")
        if p.suffix == ".html":
            for m in re.finditer(r"<script\b[^>]*>(.*?)</script>", text, re.S | re.I):
                for u in _JS_URL.findall(m.group(1)):
                    problems.append(f"{rel} (inline script): {u}")
    for p in sorted(_loaded_scripts(root, html_files)):
        rel = p.relative_to(root).as_posix() if p.is_relative_to(root) else str(p)
        if not p.is_file():
            problems.append(f"{rel}: loaded by a page but missing")
            continue
        text = p.read_text("utf-8", errors="replace")
        if p.name == "search_index.js":
            assert text.startswith("var __index = {"), "search index is not pure data"
            continue
        if rel == "assets/denpex/rulepack.js":  # the rule pack for the Diagnose page: data too
            head, _, body = text.partition("self.DENPEX_RULEPACK = ")
            assert head.startswith("//") and "\n" not in head.rstrip("\n"), "rulepack.js: not data"
            json.loads(body.removesuffix(";\n"))
            continue
        for u in _JS_URL.findall(text):
            if not any(k in u for k in _JS_ALLOWED):
                problems.append(f"{rel}: {u}")
    return problems


def test_no_external_url_in_anything_the_browser_loads(real_site: Path) -> None:
    assert _external_loads(real_site) == []
    # Only English search: lunr's other language files (with URLs in comments) never load.
    index = json.loads((real_site / "search" / "search_index.json").read_text("utf-8"))
    assert index["config"]["lang"] == ["en"]
    index = (real_site / "index.html").read_text("utf-8")
    assert "fonts.googleapis" not in index and "fonts.gstatic" not in index
    assert "unpkg.com" not in index and "iframe-worker-shim.js" in index
    for html in real_site.rglob("*.html"):
        text = html.read_text("utf-8")
        assert 'class="mermaid"' not in text, html  # keeps the mermaid loader dormant
        assert "md-source" not in text, html  # no repo_url: no GitHub API calls


def test_scanner_catches_external_loads(tmp_path: Path) -> None:
    (tmp_path / "a.html").write_text(
        '<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">'
        '<script src="//cdn.example.com/x.js"></script><a href="https://ok.example/">ok</a>'
    )
    (tmp_path / "b.css").write_text("@font-face{src:url(https://x.example/f.woff2)}")
    (tmp_path / "c.js").write_text('importScripts("https://unpkg.com/iframe-worker/shim")')
    (tmp_path / "d.html").write_text('<script src="c.js"></script>')
    found = _external_loads(tmp_path)
    assert len(found) == 4, found


# ------------------------------------------------------------------------------------------
# Strict builds: broken links and unknown tags fail


def _project(tmp_path: Path, pages: dict[str, str]) -> Path:
    """A copy of the hub project whose docs/ holds `pages`; returns its mkdocs.yml."""
    text = (ROOT / "mkdocs.yml").read_text("utf-8")
    text = text.replace("docs_dir: docs", f"docs_dir: {tmp_path / 'docs'}")
    text = text.replace("- denpex_kb/site_hooks.py", f"- {ROOT / 'denpex_kb' / 'site_hooks.py'}")
    text = text.replace("custom_dir: site_overrides", f"custom_dir: {ROOT / 'site_overrides'}")
    text = text.replace("  - kb\n", f"  - {FIXTURE_KB}\n")
    cfg = tmp_path / "mkdocs.yml"
    cfg.write_text(text, "utf-8")
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    for rel, body in pages.items():
        (tmp_path / "docs" / rel).write_text(body, "utf-8")
    return cfg


def test_fixture_project_builds(tmp_path: Path) -> None:
    cfg = _project(tmp_path, {"extra.md": "# Extra\n\nSee [the hub](index.md).\n"})
    out = site.build_site(kb_dir=FIXTURE_KB, site_dir=tmp_path / "site", config_file=cfg)
    assert (out / "extra.html").is_file()


def test_broken_internal_link_fails_the_build(tmp_path: Path) -> None:
    cfg = _project(tmp_path, {"extra.md": "# Extra\n\nSee [nothing](missing.md).\n"})
    with pytest.raises(site.SiteBuildError):
        site.build_site(kb_dir=FIXTURE_KB, site_dir=tmp_path / "site", config_file=cfg)


def test_unknown_tag_fails_the_build(tmp_path: Path) -> None:
    cfg = _project(tmp_path, {"extra.md": "---\ntags: [not-in-vocabulary]\n---\n# Extra\n"})
    with pytest.raises(site.SiteBuildError, match="not-in-vocabulary"):
        site.build_site(kb_dir=FIXTURE_KB, site_dir=tmp_path / "site", config_file=cfg)


def test_invalid_kb_fails_with_located_problems(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    shutil.copytree(FIXTURE_KB, kb)
    bad = kb / "checkpoint" / "fixture-quota.yaml"
    bad.write_text(bad.read_text("utf-8").replace("severity: high", "severity: huge"), "utf-8")
    with pytest.raises(site.SiteBuildError, match=r"fixture-quota\.yaml:\d+:\d+: severity"):
        site.build_site(kb_dir=kb, site_dir=tmp_path / "site")


# ------------------------------------------------------------------------------------------
# The CLI


def test_cli_build_writes_rule_pack_and_hub(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "build",
            "--kb",
            str(FIXTURE_KB),
            "--site-dir",
            str(tmp_path / "site"),
            "--dist-dir",
            str(tmp_path / "dist"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "docs hub" in result.output and "index.html" in result.output
    kb = load_kb(FIXTURE_KB)
    for name, data in site.rule_pack_downloads(kb).items():
        assert (tmp_path / "dist" / name).read_bytes() == data
        assert (tmp_path / "site" / "downloads" / name).read_bytes() == data
    assert (tmp_path / "site" / "entries" / "fixture-disk-full.html").is_file()
