"""The built hub in a real browser: Debian's Chromium, headless, over file://, network blocked.

Every request that is not file:// (or data:/blob:) is aborted and recorded; the test fails if any
was made. Screenshots of a search and of an entry page go to test-artifacts/ for review.

Needs the `chromium` Debian package (`apt-get install chromium`) and the `playwright` Python
package; Playwright's own browser download is never used. DENPEX_CHROMIUM overrides the path.
This test fails, never skips, when they are missing.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from urllib.parse import quote

import pytest

from denpex_kb import site
from denpex_kb.kb import load_kb

ROOT = Path(__file__).resolve().parent.parent
REAL_KB = Path(os.environ.get("DENPEX_HUB_TEST_KB") or ROOT / "kb")
ARTIFACTS = ROOT / "test-artifacts"

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-default-apps",
    "--disable-features=Translate,OptimizationHints,MediaRouter",
]

# Error strings a user pastes, and the entry that must come first. The ENOSPC family shares its
# surface strings: the bare message leads to the FastFileWriter entry, whose look-alike list is
# the family's full table of tells; the errno leads to the plain disk-full entry. A bare
# DistBackendError is the wrapper of every NCCL error: the two generic NCCL entries both quote
# it and are equally severe, so either may come first (their wordings and examples decide), and
# the other must come second; both are right answers to look at. The bare script
# name zero_to_fp32 names four entries now, so the query is the error line a user pastes.
SEARCHES: dict[str, str | tuple[str, ...]] = {
    "No space left on device": "fastfilewriter-fd-leak-enospc",
    "Errno 28": "disk-full-enospc",
    "DistBackendError": ("nccl-system-error", "nccl-unhandled-cuda-error"),
    "train_batch_size": "batch-size-mismatch",
    "CUDA out of memory. Tried to allocate 20.00 MiB": "cuda-oom-during-step",
    "ncclUnhandledCudaError": "nccl-unhandled-cuda-error",
    "ValueError: Expected 2 of *_optim_states.pt under /ckpt/global_step100 but found 1 files. "
    "Possibly due to an overwrite of an old checkpoint, or a checkpoint didn't get saved by one "
    "or more processes.": "zero-to-fp32-incomplete-checkpoint",
}


def _chromium() -> str:
    path = os.environ.get("DENPEX_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).is_file():
        pytest.fail(
            f"Chromium not found at {path}: install Debian's package (apt-get install chromium) "
            "or set DENPEX_CHROMIUM; the offline-hub browser test never skips",
            pytrace=False,
        )
    return path


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return site.build_site(kb_dir=REAL_KB, site_dir=tmp_path_factory.mktemp("hub") / "site")


@pytest.fixture(scope="module")
def browser():  # noqa: ANN201
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail(
            "the playwright package is missing: pip install -e '.[test]'; the offline-hub "
            "browser test never skips",
            pytrace=False,
        )
    executable = _chromium()
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS, headless=True)
        try:
            yield b
        finally:
            b.close()


class Offline:
    """A browser context in which only file:, data: and blob: requests may happen."""

    def __init__(self, browser) -> None:  # noqa: ANN001
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.blocked: list[str] = []
        self.errors: list[str] = []
        self.context.route("**/*", self._route)
        self.context.on("request", self._request)
        self.page = self.context.new_page()
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))

    def _route(self, route) -> None:  # noqa: ANN001
        url = route.request.url
        if url.startswith(("file:", "data:", "blob:")):
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort("internetdisconnected")

    def _request(self, request) -> None:  # noqa: ANN001
        if not request.url.startswith(("file:", "data:", "blob:", "about:")):
            if request.url not in self.blocked:
                self.blocked.append(request.url)

    def close(self) -> None:
        self.context.close()


def _search(page, query: str) -> list[str]:  # noqa: ANN001
    """Type `query` into the hub's search box; return result page hrefs, best first."""
    box = page.locator("input.md-search__input")
    box.click()
    # Material reads the query on keyup: set the whole string at once, then release a key.
    box.fill("")
    box.dispatch_event("keyup")
    page.wait_for_function(
        "() => !document.querySelector('.md-search-result__list li')", timeout=10_000
    )
    box.fill(query)
    box.dispatch_event("keyup")
    page.wait_for_function(
        "() => document.querySelectorAll('.md-search-result__list > li').length > 0",
        timeout=15_000,
    )
    hrefs = page.eval_on_selector_all(
        ".md-search-result__list > li > a.md-search-result__link", "els => els.map(e => e.href)"
    )
    return [h.split("#")[0].split("?")[0] for h in hrefs]


def test_hub_offline_search_and_entry_page(hub: Path, browser) -> None:  # noqa: ANN001
    ARTIFACTS.mkdir(exist_ok=True)
    kb = load_kb(REAL_KB)
    ids = {e.id for e in kb.entries}
    wanted = [x for v in SEARCHES.values() for x in ((v,) if isinstance(v, str) else v)]
    missing = sorted(v for v in wanted if v not in ids)
    assert not missing, f"entries the search test expects are not in the KB: {missing}"

    s = Offline(browser)
    try:
        page = s.page
        page.goto((hub / "index.html").as_uri())
        # Styles and icons come from the site itself: the header is styled, the logo is an SVG.
        assert page.locator("header.md-header").evaluate("el => getComputedStyle(el).position") in (
            "sticky",
            "fixed",
        )
        assert page.locator(".md-header__button.md-logo svg").count() == 1

        results: dict[str, list[str]] = {}
        for query, expected in SEARCHES.items():
            hrefs = _search(page, query)
            results[query] = hrefs
            assert hrefs, f"no results for {query!r}"
            firsts = (expected,) if isinstance(expected, str) else expected
            top = [h.rsplit("/", 1)[-1].removesuffix(".html") for h in hrefs[: len(firsts)]]
            assert sorted(top) == sorted(firsts), (
                f"{query!r}: expected {firsts} first, got {[h.rsplit('/', 1)[-1] for h in hrefs[:5]]}"
            )
        first_query = next(iter(SEARCHES))
        _search(page, first_query)
        page.screenshot(path=str(ARTIFACTS / "hub-search-results.png"))

        # Open the top result and check the page, section by section.
        page.locator(".md-search-result__list > li > a.md-search-result__link").first.click()
        page.wait_for_load_state("load")
        expected_id = SEARCHES[first_query]
        assert page.url.split("#")[0].split("?")[0].endswith(f"/entries/{expected_id}.html")
        assert page.locator("h1").first.inner_text().strip()
        assert page.locator(".dx-badges .dx-badge").count() >= 4
        assert page.locator(".dx-summary").count() == 1
        for anchor, title in site.ENTRY_SECTIONS:
            el = page.locator(f"[id='{anchor}']")
            assert el.count() == 1, f"section {title!r} missing"
        for _anchor, title in site.ENTRY_SECTIONS:
            heading = page.locator("article h2", has_text=title)
            assert heading.count() == 1 and heading.is_visible(), f"heading {title!r}"
        page.screenshot(path=str(ARTIFACTS / "hub-entry-page.png"), full_page=True)

        # Navigation works from file://: a phase index, the tags page, the rule pack page.
        entry = kb.get(expected_id)
        page.goto((hub / "phases" / f"{entry.phase}.html").as_uri())
        assert page.locator(f"a[href$='entries/{expected_id}.html']").count() >= 1
        page.goto((hub / "tags.html").as_uri())
        assert page.locator(f"a[href$='entries/{expected_id}.html']").count() >= 1
        page.goto((hub / "rule-pack.html").as_uri())
        assert page.locator("a[href$='.json']").count() >= 1

        assert s.errors == [], f"JavaScript errors: {s.errors}"
        assert s.blocked == [], f"requests left the machine: {s.blocked}"
    finally:
        s.close()


HOSTILE_KB = ROOT / "tests" / "fixtures" / "hostile-kb"


def test_hostile_entries_run_nothing_and_load_nothing(tmp_path: Path, browser) -> None:  # noqa: ANN001
    """A KB whose text fields carry XSS payloads (titles, attribute lists, raw HTML, code-span
    tricks): on every page no dialog opens, no handler attribute or foreign element exists, and
    no request leaves file://."""
    hub = site.build_site(kb_dir=HOSTILE_KB, site_dir=tmp_path / "site")
    pages = sorted(hub.rglob("*.html"))
    assert any(p.name == "hostile-entry.html" for p in pages)
    s = Offline(browser)
    dialogs: list[str] = []
    s.page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    try:
        for path in pages:
            s.page.goto(path.as_uri())
            s.page.wait_for_load_state("load")
            for sel in (".dx-summary", "article li", "article p", "nav a"):
                loc = s.page.locator(sel)
                for i in range(min(loc.count(), 20)):
                    if loc.nth(i).is_visible():
                        loc.nth(i).hover(timeout=2000, force=True)
            handlers = s.page.evaluate(
                "() => [...document.querySelectorAll('*')].flatMap(el => [...el.attributes]"
                ".filter(a => a.name.startsWith('on')).map(a => el.tagName + ' ' + a.name))"
            )
            assert handlers == [], f"{path.name}: event handlers in the page: {handlers}"
            # the page list (.md-nav) carries entry titles; the header's palette script is the
            # theme's own
            foreign = s.page.evaluate(
                "() => document.querySelectorAll('article script, article img, article iframe, "
                "article svg:not(.md-icon svg), .md-nav img, .md-nav script').length"
            )
            assert foreign == 0, f"{path.name}: foreign elements in the page"
        s.page.goto((hub / "entries" / "hostile-entry.html").as_uri())
        assert "<script>alert('title')</script>" in s.page.title()
        assert "<script>alert('title')</script>" in s.page.locator("h1").first.inner_text()
        assert dialogs == [], f"script ran: {dialogs}"
        assert s.blocked == [], f"requests left the machine: {s.blocked}"
    finally:
        s.close()


# ---------------------------------------------------------------------------------------------
# "Diagnose a log": the JavaScript engine in the page, from file://, against the CLI


def _cli_report(args: list[str], cwd: Path, stdin: str | None = None) -> dict:
    """`denpex-kb match --format json ARGS` run in `cwd`, as a user would."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "denpex_kb", "match", "--format", "json", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=600,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def _diagnosis(r: dict) -> dict:
    """What the page must show the same as the CLI: verdict, root cause and hypotheses with
    their evidence lines and ranks, initiating rank, host and basis, collateral with ranks."""

    def cand(c: dict) -> dict:
        return {
            "id": c["id"],
            "confidence": c["confidence"],
            "evidence": [
                (e["file"], e["line"], e["rank"], e["host"], e["text"]) for e in c["evidence"]
            ],
            "fix": c["fix"],
            "verify": c["verify"],
        }

    return {
        "verdict": r["verdict"],
        "root_cause": cand(r["root_cause"]) if r["root_cause"] else None,
        "hypotheses": [cand(c) for c in r["differential"] + r["probable"]],
        "initiating": (r["initiating_rank"], r["initiating_host"], r["initiating_basis"]),
        "collateral": [(c["id"], c["ranks"], c["count"]) for c in r["collateral"]],
        "candidates": [c["id"] for c in r["candidates"]],
        "unrecognised": [(e["line"], e["rank"], e["text"]) for e in r["unrecognised_errors"]],
    }


def _page_report(page) -> dict:  # noqa: ANN001
    page.wait_for_function(
        "() => ['done', 'error'].includes(document.getElementById('dx-diagnose').dataset.state)",
        timeout=300_000,
    )
    state = page.evaluate("() => document.getElementById('dx-diagnose').dataset.state")
    assert state == "done", page.inner_text("#dx-status")
    return json.loads(page.text_content("#dx-report-json"))


def _compose_multirank_log(path: Path, target_bytes: int) -> None:
    """Composed: eight torchrun ranks logging training steps (about `target_bytes` of them),
    then tests/logs/oom-rank3-watchdog-rest.log (itself composed: rank 3 runs out of memory,
    the others time out in the NCCL watchdog)."""
    tail = (LOGS / "oom-rank3-watchdog-rest.log").read_text(encoding="utf-8")
    with path.open("w", encoding="utf-8") as f:
        written, i = 0, 0
        while written < target_bytes:
            line = (
                f"[rank{i % 8}]:[2026-11-29 10:{(i // 60000) % 20:02d}:{(i // 1000) % 60:02d},"
                f"{i % 1000:03d}] [INFO] [engine.py:2211:step] step={i // 8} loss={(i * 7919) % 1000 / 1000:.3f} "
                f"lr=1.0e-05 grad_norm={(i * 104729) % 997 / 100:.2f} samples/sec=48.3\n"
            )
            f.write(line)
            written += len(line)
            i += 1
        f.write(tail)


LOGS = ROOT / "tests" / "logs"


def _traceback_example(kb):  # noqa: ANN001, ANN202
    """The first entry example that is a pasted Python traceback of at least 8 lines."""
    for e in kb.entries:
        for ex in e.examples:
            if (
                ex.expect == "match"
                and ex.log.startswith("Traceback (most recent call last):")
                and ex.log.count("\n") >= 8
            ):
                return e.id, ex.log
    pytest.fail("no entry example is a multi-line traceback")


def _drop_files(page, paths: list[Path]) -> None:  # noqa: ANN001
    """Drop real files on the drop zone: load them through a file input the page does not
    listen to (the way a test gets File objects), then dispatch a drop with them."""
    page.evaluate(
        "() => { const i = document.createElement('input'); i.type = 'file'; i.multiple = true;"
        " i.id = 'test-files'; i.hidden = true; document.body.append(i); }"
    )
    page.set_input_files("#test-files", [str(p) for p in paths])
    page.evaluate(
        "() => { const dt = new DataTransfer();"
        " for (const f of document.getElementById('test-files').files) dt.items.add(f);"
        " document.getElementById('dx-drop').dispatchEvent("
        "   new DragEvent('drop', {dataTransfer: dt, bubbles: true, cancelable: true})); }"
    )


def test_diagnose_page_matches_the_cli_from_file_url(hub: Path, browser, tmp_path: Path) -> None:  # noqa: ANN001
    ARTIFACTS.mkdir(exist_ok=True)
    kb = load_kb(REAL_KB)
    entry_id, traceback = _traceback_example(kb)
    s = Offline(browser)
    console_errors: list[str] = []
    s.page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
    s.context.grant_permissions(["clipboard-read", "clipboard-write"])
    try:
        page = s.page
        page.goto((hub / "diagnose.html").as_uri())
        page.wait_for_function(
            "() => document.getElementById('dx-diagnose').dataset.state === 'idle'"
        )

        # 1. A pasted traceback (a real paste: clipboard, then Ctrl+V), diagnosed on paste.
        page.evaluate("t => navigator.clipboard.writeText(t)", traceback)
        page.locator("#dx-paste").click()
        page.keyboard.press("Control+V")
        got = _page_report(page)
        want = _cli_report(["-"], tmp_path, stdin=traceback)
        for r in (got, want):  # the CLI names stdin <stdin>, the page <text>
            for c in [r["root_cause"], *r["differential"], *r["probable"]]:
                for e in c["evidence"] if c else []:
                    e["file"] = "-"
            for e in r["unrecognised_errors"]:
                e["file"] = "-"
        assert _diagnosis(got) == _diagnosis(want)
        assert want["verdict"] == "confident" and want["root_cause"]["id"] == entry_id
        assert "in a background worker" in page.inner_text("#dx-status")
        link = page.locator(f"section.dx-card[data-entry='{entry_id}'] a.dx-entry-link")
        assert link.get_attribute("href").endswith(f"entries/{entry_id}.html")
        page.screenshot(path=str(ARTIFACTS / "hub-diagnose-paste.png"), full_page=True)

        # 2. A dropped multi-rank log of 20 MB, read in the worker with progress shown.
        big = tmp_path / "multirank-20mb.log"
        _compose_multirank_log(big, 20 << 20)
        _drop_files(page, [big])
        page.wait_for_function(
            "() => document.getElementById('dx-diagnose').dataset.state === 'running'"
        )
        # the page does not freeze while the worker reads: a 10 ms timer fires on time, and
        # the progress bar moves
        page.wait_for_function(
            "() => document.getElementById('dx-progress').value > 0", timeout=120_000
        )
        late = page.evaluate(
            "() => new Promise(r => { const t = performance.now();"
            " setTimeout(() => r(performance.now() - t), 10); })"
        )
        assert late < 1000, f"a 10 ms timer fired after {late:.0f} ms"
        got = _page_report(page)
        want = _cli_report([big.name], tmp_path)
        assert _diagnosis(got) == _diagnosis(want)
        assert want["root_cause"]["id"] == "cuda-oom-during-step" and want["initiating_rank"] == 3
        assert page.locator("#dx-initiating").get_attribute("data-rank") == "3"
        assert page.locator("#dx-collateral tr[data-entry='nccl-watchdog-timeout']").count() == 1
        assert got["inputs"] == want["inputs"]
        page.screenshot(path=str(ARTIFACTS / "hub-diagnose-multirank.png"), full_page=False)

        # 3. One file per rank, dropped together (the file names carry the ranks).
        folder = LOGS / "per-rank-folder"
        files = sorted(p for p in folder.iterdir() if p.is_file())
        _drop_files(page, files)
        got = _page_report(page)
        want = _cli_report([p.name for p in files], folder)
        assert _diagnosis(got) == _diagnosis(want)

        # The entry page the report links to opens from file://.
        page.locator("section.dx-card a.dx-entry-link").first.click()
        page.wait_for_load_state("load")
        assert "/entries/" in page.url

        assert s.errors == [], f"JavaScript errors: {s.errors}"
        assert console_errors == [], f"console errors: {console_errors}"
        assert s.blocked == [], f"requests left the machine: {s.blocked}"
    finally:
        s.close()


CHROMIUM_VECTORS = """
([pack, vectors, attribution]) => {
  const E = self.DenpexEngine;
  const failures = [];
  for (const v of vectors) {
    const r = E.diagnose(pack, [{ name: "example.log", data: v.log, isFile: false }]);
    const cands = new Map(r.candidates.filter((c) => !c.hypothesis).map((c) => [c.id, c]));
    const problems = [];
    if (v.expect === "match") {
      if (!cands.has(v.entry)) problems.push("did not fire");
      else {
        const texts = cands.get(v.entry).evidence.map((e) => e.text);
        for (const s of v.evidence) if (!texts.some((t) => t.includes(s))) problems.push("evidence " + s);
      }
    } else if (cands.has(v.entry) && !cands.get(v.entry).shadowed_by) problems.push("fired");
    if (v.expect_top) {
      let top = r.root_cause ? r.root_cause.id : null;
      const hyps = r.differential.concat(r.probable);
      if (top === null && hyps.length) top = hyps[0].id;
      if (top === null && r.candidates.length) top = r.candidates[0].id;
      if (top !== v.expect_top) problems.push("top " + top);
    }
    if (problems.length) failures.push([v.name, problems]);
  }
  for (const av of attribution) {
    const got = E.attributeAll(pack, av.sources.map((s) => ({ name: s.name, log: s.log })));
    for (const ex of av.expect) {
      const rec = (got[ex.source] || [])[ex.line - 1] || {};
      for (const [k, want] of Object.entries(ex)) {
        if (k !== "source" && k !== "line" && rec[k] !== want) {
          failures.push(["attribution/" + av.name, ex.source + ":" + ex.line + " " + k]);
        }
      }
    }
  }
  return { n: vectors.length, na: attribution.length, failures, hash: pack.content_hash };
}
"""


def test_js_engine_passes_every_vector_in_chromium(hub: Path, browser) -> None:  # noqa: ANN001
    """The engine the page ships (the classic bundle), on the pack the page ships, in Chromium."""
    vectors = json.loads((hub / "downloads" / site.VECTORS_FILE).read_text("utf-8"))
    s = Offline(browser)
    try:
        s.page.goto((hub / "diagnose.html").as_uri())
        s.page.wait_for_function("() => !!self.DenpexEngine && !!self.DENPEX_RULEPACK")
        pack = s.page.evaluate("() => self.DENPEX_RULEPACK")
        out = s.page.evaluate(CHROMIUM_VECTORS, [pack, vectors["vectors"], vectors["attribution"]])
        assert out["hash"] == vectors["rulepack_hash"]
        assert out["failures"] == [] and out["n"] == len(vectors["vectors"]) > 400
        assert out["na"] == len(vectors["attribution"]) >= 6
        assert s.errors == [] and s.blocked == []
    finally:
        s.close()


def test_diagnose_page_without_workers_runs_in_the_page(hub: Path, browser, tmp_path: Path) -> None:  # noqa: ANN001
    """A browser that cannot make the worker still gets the diagnosis (in the page)."""
    log = (LOGS / "oom-rank3-watchdog-rest.log").read_text(encoding="utf-8")
    s = Offline(browser)
    s.page.add_init_script("self.Worker = undefined;")
    try:
        s.page.goto((hub / "diagnose.html").as_uri())
        s.page.fill("#dx-paste", log)
        s.page.click("#dx-run")
        got = _page_report(s.page)
        assert "diagnosed in this page" in s.page.inner_text("#dx-status")
        want = _cli_report(["-"], tmp_path, stdin=log)
        assert (
            (got["root_cause"]["id"], got["initiating_rank"])
            == (
                want["root_cause"]["id"],
                want["initiating_rank"],
            )
            == ("cuda-oom-during-step", 3)
        )
        assert [c["id"] for c in got["collateral"]] == [c["id"] for c in want["collateral"]]
        assert s.errors == [] and s.blocked == []
    finally:
        s.close()


def test_unrecognised_error_links_to_the_hub_search(hub: Path, browser) -> None:  # noqa: ANN001
    # Composed: a Python traceback whose error no entry knows, but whose words the FastFileWriter
    # and ENOSPC entries use.
    text = (
        'Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n'
        "RuntimeError: checkpoint writer FastFileWriter reported a strange rotation state\n"
    )
    s = Offline(browser)
    try:
        s.page.goto((hub / "diagnose.html").as_uri() + "#dx-text=" + quote(text))
        report = _page_report(s.page)
        assert report["verdict"] == "none" and report["unrecognised_errors"]
        link = s.page.locator("#dx-search-error")
        assert "index.html?q=RuntimeError" in link.get_attribute("href")
        link.click()
        s.page.wait_for_function(
            "() => document.querySelectorAll('.md-search-result__list > li').length > 0",
            timeout=30_000,
        )
        first = s.page.eval_on_selector(
            ".md-search-result__list > li > a.md-search-result__link", "e => e.href"
        )
        assert "fastfilewriter" in first
        assert not s.blocked and not s.errors, (s.blocked, s.errors)
    finally:
        s.close()
