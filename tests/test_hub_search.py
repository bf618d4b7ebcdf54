"""The hub's search box fed error text as users paste it (issue 13, part 2), in Debian's
Chromium over file://, with every request off file:// aborted and recorded.

Material's own query syntax used to break on such text (a `"` made every word required, `-9`
forbade `9`, `--local_rank` was a parse error, a pasted traceback became one line that matched
nothing); site_overrides/assets/javascripts/denpex-search.js cleans the query, searches on any
paste, offers the Diagnose page for a multi-line paste and says so when nothing matches well.
The reference for a pasted traceback is `denpex-kb match` on the same text (the Python API).

Needs the `chromium` Debian package and the `playwright` Python package (never `playwright
install`); fails, never skips, when they are missing (see tests/test_browser.py).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import quote

import pytest
from test_browser import CHROMIUM_FLAGS, Offline, _chromium

import denpex_kb
from denpex_kb import site
from denpex_kb.kb import load_kb

ROOT = Path(__file__).resolve().parent.parent
REAL_KB = Path(os.environ.get("DENPEX_HUB_TEST_KB") or ROOT / "kb")
ARTIFACTS = ROOT / "test-artifacts"

# The queries of issue 13 that Material's query syntax broke, and the entry each must lead to.
# `exits with return code = -9`: both pages quote the launcher's line verbatim under "What you
# see"; the launcher entry explains the line, the OOM-killer entry the usual cause of -9, and
# either one first is a right answer.
QUERIES: dict[str, set[str]] = {
    "KeyError: \"filename 'storages' not found\"": {"zero-filled-checkpoint-file"},
    "unrecognized arguments: --local_rank": {"script-rejects-local-rank-argument"},
    "exits with return code = -9": {
        "deepspeed-launcher-exits-with-return-code",
        "host-oom-killer-sigkill",
    },
    # a traceback frame whose function only one entry's traceback names
    'File "anaconda3/envs/neox/lib/python3.8/site-packages/deepspeed/runtime/pipe/engine.py", '
    "line 258, in _exec_reduce_grads": {"pipeline-bf16-zero1-not-implemented"},
}

# A few typed keywords (not error text) that are all on the right pages: not a "no good match".
KEYWORDS: dict[str, set[str]] = {
    "fp16 overflow loss scale": {"fp16-loss-scale-at-minimum", "fp16-loss-scale-collapsing"},
}

# Error text no entry covers (no file under kb/ mentions UnicodeDecodeError), and a frame of
# words every traceback has: the honest answer is "no good match", not a list of pages.
NO_GOOD_MATCH = [
    "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte",
    'File "/usr/local/lib/python3.10/dist-packages/deepspeed/runtime/engine.py", line 2211, in step',
]

# Material starts a search on keyup only. Tests of paste swallow the real key events, so only a
# paste (or the input event it causes) can start the search.
SWALLOW_KEYUP = (
    "() => window.addEventListener('keyup', (e) => { if (e.isTrusted)"
    " e.stopImmediatePropagation(); }, true)"
)


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if os.environ.get("DENPEX_TEST_HUB_SITE"):  # a hub built beforehand, for quick reruns
        return Path(os.environ["DENPEX_TEST_HUB_SITE"])
    return site.build_site(kb_dir=REAL_KB, site_dir=tmp_path_factory.mktemp("hub") / "site")


@pytest.fixture(scope="module")
def browser():  # noqa: ANN201
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the playwright package is missing: pip install -e '.[test]'", pytrace=False)
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=_chromium(), args=CHROMIUM_FLAGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def session(browser):  # noqa: ANN001, ANN201
    s = Offline(browser)
    s.console: list[str] = []
    s.page.on("console", lambda m: s.console.append(m.text) if m.type == "error" else None)
    s.context.grant_permissions(["clipboard-read", "clipboard-write"])
    try:
        yield s
    finally:
        s.close()


def _open(page, hub: Path) -> None:  # noqa: ANN001
    page.goto((hub / "index.html").as_uri())
    # from file:// Material sets its search up when the search first opens
    page.locator("input.md-search__input").click()
    page.wait_for_function(
        "() => !!self.DenpexSearch && self.DenpexSearch.hub.ready", timeout=30_000
    )


def _answer(page) -> dict:  # noqa: ANN001
    """Wait until the results answer what the box holds; return them and the note."""
    page.wait_for_function(
        "() => { const n = document.getElementById('dx-search-note');"
        " const box = document.querySelector('input.md-search__input');"
        " return n && box.value && n.dataset.query === box.value; }",
        timeout=20_000,
    )
    return page.evaluate(
        """() => {
          const n = document.getElementById('dx-search-note');
          const links = [...document.querySelectorAll(
            '.md-search-result__list > li > a.md-search-result__link')];
          return {
            state: n.dataset.state,
            note: n.hidden ? '' : n.innerText,
            meta: document.querySelector('.md-search-result__meta').innerText,
            value: document.querySelector('input.md-search__input').value,
            pages: links.map(a => a.href.split('#')[0].split('?')[0].split('/').pop()),
          };
        }"""
    )


def _type(page, query: str) -> dict:  # noqa: ANN001
    box = page.locator("input.md-search__input")
    box.click()
    box.fill(query)
    box.dispatch_event("keyup")
    return _answer(page)


def _entry(name: str) -> str:
    return name.removesuffix(".html")


def test_issue_queries_find_their_entry_or_say_no_good_match(hub: Path, session) -> None:  # noqa: ANN001
    ids = {e.id for e in load_kb(REAL_KB).entries}
    assert set().union(*QUERIES.values(), *KEYWORDS.values()) <= ids
    page = session.page
    _open(page, hub)
    for query, expected in QUERIES.items():
        got = _type(page, query)
        assert got["pages"], f"{query!r}: no results ({got['meta']})"
        assert _entry(got["pages"][0]) in expected, f"{query!r}: first {got['pages'][:4]}"
        assert got["state"] != "no-good-match", f"{query!r}: {got['note']}"
        # no longer the whole hub: only pages that hold the line or score near the best
        assert len(got["pages"]) < 40, f"{query!r}: {len(got['pages'])} results"
    for query, expected in KEYWORDS.items():
        got = _type(page, query)
        assert got["pages"] and _entry(got["pages"][0]) in expected, (query, got["pages"][:4])
        assert got["state"] != "no-good-match", (query, got["note"])
    for query in NO_GOOD_MATCH:
        got = _type(page, query)
        assert got["state"] == "no-good-match", f"{query!r}: {got}"
        assert got["meta"] == "No good match"
        assert "No entry in this hub matches this error text" in got["note"]
        assert len(got["pages"]) <= 3
    assert session.errors == [], f"JavaScript errors: {session.errors}"
    assert session.console == [], f"console errors: {session.console}"
    assert session.blocked == [], f"requests left the machine: {session.blocked}"


def test_query_cleaning_leaves_no_lunr_operators(hub: Path, session) -> None:  # noqa: ANN001
    """What lunr gets from error text: plain words, none of its operators."""
    page = session.page
    _open(page, hub)
    cases = [
        "KeyError: \"filename 'storages' not found\"",
        "unrecognized arguments: --local_rank",
        "exits with return code = -9",
        "+required -forbidden title:x fuzzy~2 boost^10 wild* “curly” 'single' `tick`",
    ]
    out = page.evaluate("qs => qs.map(q => self.DenpexSearch.prepare(q).lunr)", cases)
    for query, lunr in zip(cases, out, strict=True):
        assert lunr.strip(), query
        for ch in "\"'`“”:~^*+":
            assert ch not in lunr, (query, lunr)
        assert not any(w.startswith("-") for w in lunr.split()), (query, lunr)
    assert out[2].split() == ["exits", "with", "return", "code", "9"]
    # a long line keeps its most distinctive words only
    long_line = " ".join(["error"] * 40 + ["ncclUnhandledCudaError"] + ["step"] * 40)
    q = page.evaluate("t => self.DenpexSearch.prepare(t)", long_line)
    assert "ncclunhandledcudaerror" in q["words"] and len(q["words"]) <= 10
    assert session.errors == [] and session.blocked == []


def test_paste_without_a_key_searches(hub: Path, session) -> None:  # noqa: ANN001
    """A real paste (clipboard, Ctrl+V) with the key events swallowed, and text that arrives
    with no key at all (as from a context-menu or middle-click paste): both search."""
    page = session.page
    _open(page, hub)
    page.evaluate(SWALLOW_KEYUP)
    box = page.locator("input.md-search__input")
    box.click()
    page.evaluate("t => navigator.clipboard.writeText(t)", "unrecognized arguments: --local_rank")
    page.keyboard.press("Control+V")
    got = _answer(page)
    assert got["value"] == "unrecognized arguments: --local_rank"
    assert _entry(got["pages"][0]) == "script-rejects-local-rank-argument"

    box.fill("")
    page.keyboard.insert_text("ncclUnhandledCudaError")  # an input event and no key event
    got = _answer(page)
    assert _entry(got["pages"][0]) == "nccl-unhandled-cuda-error"
    assert session.errors == [] and session.console == [] and session.blocked == []


def _traceback_examples(kb, n: int):  # noqa: ANN001, ANN202
    """Entry examples that are pasted Python tracebacks of 20 to 60 lines, with the root cause
    `denpex-kb match` names for each (confident verdicts only), at most n."""
    out = []
    for e in kb.entries:
        for ex in e.examples:
            if (
                ex.expect == "match"
                and "Traceback (most recent call last):" in ex.log
                and 20 <= ex.log.count("\n") <= 60
            ):
                d = denpex_kb.match_text(ex.log)
                if d.verdict == "confident" and d.root_cause is not None:
                    out.append((d.root_cause.id, ex.log))
                    break
        if len(out) >= n:
            break
    assert len(out) >= min(n, 3), "too few traceback examples with a confident diagnosis"
    return out


def test_pasted_traceback_searches_its_error_line_and_hands_off_to_diagnose(
    hub: Path,
    session,  # noqa: ANN001
) -> None:
    kb = load_kb(REAL_KB)
    page = session.page
    _open(page, hub)
    page.evaluate(SWALLOW_KEYUP)
    box = page.locator("input.md-search__input")
    examples = _traceback_examples(kb, 6)
    for want, log in examples:
        box.fill("")
        box.click()
        page.evaluate("t => navigator.clipboard.writeText(t)", log)
        page.keyboard.press("Control+V")
        got = _answer(page)
        # the box shows the one line searched for, not the log glued into one line
        assert "\n" not in got["value"] and len(got["value"]) <= 300
        assert got["value"] in log.replace("\r", "") or got["value"].split(": ", 1)[0] in log
        assert got["pages"], f"{want}: no results for {got['value']!r}"
        assert _entry(got["pages"][0]) == want, (
            f"{want}: searched {got['value']!r}, first {got['pages'][:4]}"
        )
        assert got["state"] != "no-good-match", got
        assert "Diagnose the pasted text" in got["note"]

    # the offer opens the Diagnose page with the whole text, diagnosed there
    want, log = examples[0]
    box.fill("")
    box.click()
    page.evaluate("t => navigator.clipboard.writeText(t)", log)
    page.keyboard.press("Control+V")
    _answer(page)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "hub-search-pasted-traceback.png"))
    page.locator("button.dx-search-handoff").click()
    page.wait_for_url("**/diagnose.html*")
    page.wait_for_function(
        "() => ['done', 'error'].includes(document.getElementById('dx-diagnose')?.dataset.state)",
        timeout=120_000,
    )
    assert page.evaluate("() => document.getElementById('dx-diagnose').dataset.state") == "done"
    assert page.input_value("#dx-paste") == log
    report = json.loads(page.text_content("#dx-report-json"))
    assert report["root_cause"]["id"] == want
    assert page.evaluate("() => sessionStorage.getItem('denpex-diagnose-text')") is None
    assert session.errors == [], f"JavaScript errors: {session.errors}"
    assert session.console == [], f"console errors: {session.console}"
    assert session.blocked == [], f"requests left the machine: {session.blocked}"


def test_enter_opens_the_first_result_shown(hub: Path, session) -> None:  # noqa: ANN001
    """Material's Enter opens the result with the highest score: after re-ranking, that is the
    first one shown."""
    page = session.page
    _open(page, hub)
    got = _type(page, "exits with return code = -9")
    page.locator("input.md-search__input").press("Enter")
    page.wait_for_url(f"**/entries/{got['pages'][0]}*")
    assert session.errors == [] and session.blocked == []


def test_diagnose_page_takes_text_from_the_fragment(hub: Path, session, tmp_path: Path) -> None:  # noqa: ANN001
    """Where sessionStorage is refused, the search box hands the text over in the URL fragment:
    the page diagnoses it and drops the fragment from the address."""
    _root, log = _traceback_examples(load_kb(REAL_KB), 1)[0]
    page = session.page
    url = (hub / "diagnose.html").as_uri() + "#dx-text=" + quote(log, safe="")
    page.goto(url)
    page.wait_for_function(
        "() => document.getElementById('dx-diagnose')?.dataset.state === 'done'", timeout=120_000
    )
    assert page.input_value("#dx-paste") == log
    assert "#" not in page.url
    want = denpex_kb.match_text(log)
    report = json.loads(page.text_content("#dx-report-json"))
    assert report["root_cause"]["id"] == want.root_cause.id
    assert session.errors == [] and session.console == [] and session.blocked == []


def test_deep_link_query_is_cleaned_too(hub: Path, session) -> None:  # noqa: ANN001
    """Material's `?q=` deep link goes through the same cleaning (a link from `denpex-kb match`
    to the hub can carry the error line as it is)."""
    page = session.page
    page.goto((hub / "index.html").as_uri() + "?q=" + quote("unrecognized arguments: --local_rank"))
    got = _answer(page)
    assert _entry(got["pages"][0]) == "script-rejects-local-rank-argument", got["pages"][:4]
    assert session.errors == [] and session.console == [] and session.blocked == []
