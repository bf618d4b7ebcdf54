"""Entry pages that answer first (issue 13, part 3), checked on the built HTML of the real hub.

The hub is built once from the real knowledge base with the top-level mkdocs.yml; every entry
page is parsed (standard library HTML parser) and scanned for the rendering defects the renderer
must not produce: a list run into the paragraph above it, an HTML entity shown literally (`&lt;pid>`
inside code), `__del__` rendered as bold "del", more than one h1. The scanner itself is tested on
small pieces of bad HTML, so a scan that finds nothing means something.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

from denpex_kb import site
from denpex_kb.model import PHASES

ROOT = Path(__file__).resolve().parent.parent
REAL_KB = Path(os.environ.get("DENPEX_HUB_TEST_KB") or ROOT / "kb")

_ENTITY = re.compile(r"&(?:[a-zA-Z]+|#\d+|#x[0-9a-fA-F]+);")
_LIST_IN_PARA = re.compile(r"\n[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+\S")
_DUNDER = re.compile(r"__([A-Za-z0-9][A-Za-z0-9_]*?)__")


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return site.build_site(kb_dir=REAL_KB, site_dir=tmp_path_factory.mktemp("hub") / "site")


# ------------------------------------------------------------------------------------------
# The defect scanner


class _Page(HTMLParser):
    """The parts of a page the defect checks need: h1s, paragraph text, code text, emphasis."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.h1: list[str] = []
        self.problems: list[str] = []
        self.emphasis: list[tuple[str, str, str]] = []  # (tag, text before, text inside)
        self._text_before = ""
        self._para: list[str] | None = None
        self._emph: tuple[str, str, list[str]] | None = None
        self._after_code = False  # the last thing seen closed a <code>

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack.append(tag)
        self._after_code = False
        if tag == "h1":
            self.h1.append("")
        elif tag == "p" and "pre" not in self.stack[:-1]:
            self._para = []
        elif tag in ("strong", "em", "b", "i") and self._emph is None:
            self._emph = (tag, self._text_before, [])

    def handle_endtag(self, tag: str) -> None:
        if tag not in self.stack:
            return
        while self.stack:
            top = self.stack.pop()
            if top == "p" and self._para is not None:
                text = "".join(self._para)
                if _LIST_IN_PARA.search(text):
                    self.problems.append(f"list run into a paragraph: {text[:120]!r}")
                self._para = None
            if self._emph is not None and top == self._emph[0]:
                self.emphasis.append((top, self._emph[1], "".join(self._emph[2])))
                self._emph = None
            if top == tag:
                self._after_code = tag == "code"
                break

    def handle_data(self, data: str) -> None:
        if "script" in self.stack or "style" in self.stack:
            return
        if self.stack and "h1" in self.stack:
            self.h1[-1] += data
        m = _ENTITY.search(data)
        if m:
            where = "inside code" if "code" in self.stack else "in text"
            self.problems.append(f"entity {m.group(0)} shown literally {where}: {data[:80]!r}")
        if "`" in data and self._after_code and "pre" not in self.stack:
            # A code span the Markdown closed early at a nested backtick: the rest of it shows
            # raw, up to the backtick that was meant to close it. (Backticks in quoted log text,
            # glibc's "version `GLIBCXX_3.4.29' not found", are not defects.)
            self.problems.append(f"code span cut at a nested backtick: {data.strip()[:80]!r}")
        self._after_code = False
        if self._para is not None:  # code as one placeholder: a line may start with code
            self._para.append("C" if "code" in self.stack else data)
        if self._emph is not None:
            self._emph[2].append(data)
        self._text_before = (self._text_before + data)[-40:]


def scan_page(html: str, dunders: frozenset[str] = frozenset()) -> list[str]:
    """Rendering defects of one built page. `dunders`: the names X of every `__X__` the page's
    source text contains; none of them may come out as emphasis."""
    page = _Page()
    page.feed(html)
    page.close()
    problems = list(page.problems)
    if len(page.h1) != 1:
        problems.append(f"{len(page.h1)} h1 elements: {[h.strip()[:60] for h in page.h1]}")
    for tag, before, inside in page.emphasis:
        if inside.strip() in dunders:
            problems.append(f"__{inside.strip()}__ rendered as <{tag}>{inside}</{tag}>")
        elif before and re.match(r"[\w./]", before[-1]) and re.fullmatch(r"\w+", inside):
            problems.append(f"emphasis inside a word: {before[-20:]!r}<{tag}>{inside}</{tag}>")
    return problems


def _dunders(source_yaml: str) -> frozenset[str]:
    return frozenset(_DUNDER.findall(source_yaml))


def test_scanner_finds_each_defect() -> None:
    ok = "<html><body><h1>T</h1><p>Intro:</p><ul><li>a</li></ul><p><code>&lt;pid&gt;</code></p>"
    assert scan_page(ok + "</body></html>") == []
    assert scan_page("<h1>T</h1><p>Intro:\n- a\n- b</p>")  # a list run into the paragraph
    assert scan_page("<h1>T</h1><p>Intro:\n1. a</p>")
    assert scan_page("<h1>T</h1><p><code>kill &amp;lt;pid&gt;</code></p>")  # &lt; literally
    assert scan_page("<h1>T</h1><p>engine <strong>del</strong> runs</p>", frozenset({"del"}))
    assert scan_page("<h1>T</h1><p>deepspeed/<strong>init</strong>.py</p>")
    assert scan_page("<h1>T</h1><p>x</p><h1>795), so</h1>")  # two h1
    assert scan_page("<p>no title</p>")
    assert scan_page("<h1>T</h1><p><code>Assertion </code>static_cast' failed.`</p>")
    # Emphasis an author meant is not a defect.
    assert scan_page("<h1>T</h1><p>the <strong>same major</strong> arch</p>", frozenset()) == []


def test_no_rendering_defects_on_any_entry_page(hub: Path, kb) -> None:  # noqa: ANN001
    problems: list[str] = []
    base = REAL_KB.resolve().parent
    for e in kb.entries:
        html = (hub / "entries" / f"{e.id}.html").read_text("utf-8")
        source = (base / e.source_path).read_text("utf-8")
        problems += [f"{e.id}: {p}" for p in scan_page(html, _dunders(source))]
    assert not problems, f"{len(problems)} defect(s):\n" + "\n".join(problems[:40])


def test_no_rendering_defects_on_the_other_pages(hub: Path) -> None:
    # The hand-written docs (rule-pack-format.md: lists run into paragraphs once) and the
    # generated hub pages.
    pages = [p for p in sorted(hub.rglob("*.html")) if p.parent.name != "entries"]
    assert len(pages) > 10
    problems = [
        f"{p.relative_to(hub)}: {x}" for p in pages for x in scan_page(p.read_text("utf-8"))
    ]
    assert not problems, f"{len(problems)} defect(s):\n" + "\n".join(problems[:40])


def test_renderer_fixes_the_markdown_at_the_source() -> None:
    assert site.prose("Intro:\n- a\n- b") == "Intro:\n\n- a\n- b"
    assert site.prose("Intro:\n1. a\n2. b") == "Intro:\n\n1. a\n2. b"
    assert site.prose("- a\n  - nested") == "- a\n    - nested"
    assert site.prose("- a\n  continued\n- b") == "- a\n  continued\n- b"
    assert site.prose("calls __del__ in deepspeed/__init__.py") == (
        "calls \\_\\_del\\_\\_ in deepspeed/\\_\\_init\\_\\_.py"
    )
    assert site.prose("`__del__` and snake_case") == "`__del__` and snake_case"
    assert site.prose("fixed in PR\n#795), so") == "fixed in PR\n\\#795), so"
    assert site.prose("a `b` c ` d") == "a `b` c \\` d"
    # A code span never crosses from one list item into the next, in Markdown or here.
    assert site.prose("- a `x\n- b` y") == "- a \\`x\n- b\\` y"
    assert site.prose("```\n# comment\n- x\n__y__\n```") == "```\n# comment\n- x\n__y__\n```"
    # Backticks an author escaped inside a code span (Markdown has no escapes there): the span
    # is rewritten to hold them; a span holding one backslash stays as it is.
    assert site.prose("`create a \\`DummyOptim\\` without` here") == (
        "``create a `DummyOptim` without`` here"
    )
    assert (
        site.prose("a missing `\\` at the end: runs `--x`")
        == "a missing `\\` at the end: runs `--x`"
    )


# ------------------------------------------------------------------------------------------
# Fix at a glance


def test_shell_commands_are_told_from_config_and_api() -> None:
    yes = [
        "pip install -U 'deepspeed>=0.14.5'",
        "DS_BUILD_AIO=1 pip install deepspeed",
        "rm -rf ~/.cache/torch_extensions/*/cpu_adam",
        "export CUDA_HOME=/usr/local/cuda-12.4",
        "MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n1)",
    ]
    no = [
        '"zero_optimization": {"stage": 2}',
        "deepspeed.initialize",
        "NCCL_IB_DISABLE=1",
        "dmesg",
        "torch.version.cuda",
        "deepspeed<0.15",
    ]
    assert all(site.is_shell_command(c) for c in yes)
    assert not any(site.is_shell_command(c) for c in no)
    step = "Debian/Ubuntu: `apt-get install -y libaio-dev`. RHEL: `dnf install -y libaio-devel`."
    assert site.step_commands(step) == [
        ("Debian/Ubuntu:", "apt-get install -y libaio-dev"),
        ("RHEL:", "dnf install -y libaio-devel"),
    ]
    assert site.step_commands("Build it in the job, not in `docker build .`.") == []


def _glance(html: str) -> str:
    start = html.index('<section class="dx-glance"')
    return html[start : html.index("</section>", start)]


def test_fix_at_a_glance_comes_first_with_copyable_commands(hub: Path, kb) -> None:  # noqa: ANN001
    for e in kb.entries:
        html = (hub / "entries" / f"{e.id}.html").read_text("utf-8")
        glance = _glance(html)
        assert html.index('class="dx-summary"') < html.index('class="dx-glance"')
        assert html.index('class="dx-glance"') < html.index('id="what-you-see"'), e.id
        blocks = re.findall(r"<pre><span></span><code>(.*?)</code></pre>", glance, re.S)
        texts = [re.sub(r"<[^>]+>", "", b).rstrip("\n") for b in blocks]
        import html as htmllib

        texts = [htmllib.unescape(t) for t in texts]
        assert e.verify.command.rstrip("\n") in texts, e.id
        for step in e.fix.steps:
            for _, cmd in site.step_commands(step):
                assert cmd in texts, (e.id, cmd)
    # The example: a fix whose command was only inline now has it in a block.
    ffw = (hub / "entries" / "fastfilewriter-fd-leak-enospc.html").read_text("utf-8")
    assert "deepspeed&gt;=0.19.1" in _glance(ffw)
    # Not in the search index (commands in it would rank pages for `pip install`): Material's
    # indexer ends an exclusion at the first closing tag of the same name, so this checks text
    # from after the box's first code block too.
    index = json.loads((hub / "search" / "search_index.json").read_text("utf-8"))
    indexed = " ".join(d["text"] for d in index["docs"] if d["location"].startswith("entries/"))
    assert "what it shows" not in indexed
    assert "code or config change" not in indexed
    assert "<p>id: <code>" not in indexed  # the line under the title ("Rule id:" is indexed)
    # Material's copy button is on for every code block.
    assert "content.code.copy" in (hub / "index.html").read_text("utf-8")


# ------------------------------------------------------------------------------------------
# Links between entries


def _links(html: str) -> set[str]:
    return set(re.findall(r'<a [^>]*href="([a-z0-9-]+)\.html"', html))


def test_look_alike_links_go_both_ways(hub: Path, kb) -> None:  # noqa: ANN001
    pages = {e.id: (hub / "entries" / f"{e.id}.html").read_text("utf-8") for e in kb.entries}
    missing = []
    for e in kb.entries:
        for la in e.look_alikes:
            other = pages[la.id]
            section = other[other.index('id="look-alikes"') : other.index('id="signals"')]
            if e.id not in _links(section):
                missing.append(f"{la.id} does not link back to {e.id}")
    assert not missing, "\n".join(missing[:20])
    # And the reverse link says what it is.
    one_way = [
        (e, la)
        for e in kb.entries
        for la in e.look_alikes
        if e.id not in {x.id for x in kb.get(la.id).look_alikes}
    ]
    assert one_way, "no one-way look-alike left to test the reverse link with"
    e, la = one_way[0]
    assert "lists this entry as a look-alike" in pages[la.id]


def test_entry_ids_named_in_prose_are_links(hub: Path, kb) -> None:  # noqa: ANN001
    ids = {e.id for e in kb.entries}
    unlinked = []
    for e in kb.entries:
        html = (hub / "entries" / f"{e.id}.html").read_text("utf-8")
        body = html[html.index('class="dx-summary"') : html.index('id="source"')]
        # <code>ID</code> not inside a link, for any id but the page's own.
        for m in re.finditer(r"(<a [^>]*>)?<code>([a-z0-9-]+)</code>", body):
            if m.group(2) in ids and m.group(2) != e.id and not m.group(1):
                unlinked.append(f"{e.id}: `{m.group(2)}`")
    assert not unlinked, "\n".join(unlinked[:20])
    assert site.link_entry_ids(
        "see a-b, `a-b`, kb/x/a-b.yaml, https://h/a-b, [a-b](u), `a-b c`, a-bc and a-b.",
        {"a-b": "a-b.md"},
    ) == (
        "see [a-b](a-b.md), [`a-b`](a-b.md), kb/x/a-b.yaml, https://h/a-b, [a-b](u), `a-b c`, "
        "a-bc and [a-b](a-b.md)."
    )
    assert site.link_entry_ids("```\na-b\n```", {"a-b": "a-b.md"}) == "```\na-b\n```"
    assert site.link_entry_ids("this a-b", {"a-b": "a-b.md"}, skip="a-b") == "this a-b"


# ------------------------------------------------------------------------------------------
# Id under the title, catalogue, dark mode, 404


def test_entry_id_is_shown_under_the_title(hub: Path, kb) -> None:  # noqa: ANN001
    for e in kb.entries:
        html = (hub / "entries" / f"{e.id}.html").read_text("utf-8")
        h1_end = html.index("</h1>")
        shown = re.search(rf'<p class="dx-id"[^>]*>id: <code>{re.escape(e.id)}</code>', html)
        assert shown and shown.start() > h1_end, e.id
        assert html.index('class="dx-id"') < html.index('class="dx-badges"'), e.id


def test_no_yaml_front_matter_leaks(kb) -> None:  # noqa: ANN001
    hub = site.generate_hub(kb)
    for md in hub.pages.values():
        if md.startswith("---\n"):
            yaml.safe_load(md.split("---\n", 2)[1])  # front matter stays valid YAML
    assert json.dumps(sorted(hub.pages))


def test_catalogue_lists_every_entry_with_sort_keys(hub: Path, kb) -> None:  # noqa: ANN001
    html = (hub / "catalogue.html").read_text("utf-8")
    table = html[html.index('<table class="dx-catalogue') : html.index("</table>")]
    rows = re.findall(r"<tr>\s*<td data-sort=\"([a-z0-9-]+)\">", table)
    assert sorted(rows) == sorted(e.id for e in kb.entries)
    heads = re.findall(r"<th>([^<]+)</th>", table)
    assert heads == ["Id", "Title", "Phase", "Class", "Severity", "Affected versions"]
    # Generated in lifecycle order, then by severity.
    phases = [kb.get(i).phase for i in rows]
    order = {p: n for n, p in enumerate(PHASES)}
    assert [order[p] for p in phases] == sorted(order[p] for p in phases)
    assert '<script src="assets/tables/sort.js" defer>' in html
    assert (hub / "assets" / "tables" / "sort.js").is_file()
    assert "catalogue.html" in (hub / "index.html").read_text("utf-8")  # in the nav / home


def test_dark_mode_follows_the_system(hub: Path) -> None:
    html = (hub / "index.html").read_text("utf-8")
    assert 'data-md-color-media="(prefers-color-scheme: light)"' in html
    assert 'data-md-color-media="(prefers-color-scheme: dark)"' in html


def test_404_uses_relative_urls(hub: Path) -> None:
    html = (hub / "404.html").read_text("utf-8")
    absolute = re.findall(r'(?:href|src)="(/[^"]*)"', html)
    assert not absolute, absolute[:5]
    assert 'href="./assets/stylesheets/denpex.css"' in html
    assert '"base": "."' in html
    assert 'href="./catalogue.html"' in html  # and it points somewhere useful


# ------------------------------------------------------------------------------------------
# In Chromium, from file://, with every request off the disk blocked


def _natural(s: str) -> list[tuple[int, object]]:
    """The order of the table's script (localeCompare, numeric): `zero-x` < `zero3` < `zero12`;
    punctuation before digits before letters, a run of digits as one number."""
    key: list[tuple[int, object]] = []
    for m in re.finditer(r"\d+|[a-z]|[^a-z\d]", s.lower()):
        t = m.group(0)
        key.append((1, int(t)) if t.isdigit() else (2, t) if t.isalpha() else (0, t))
    return key


def _chromium() -> str:
    path = os.environ.get("DENPEX_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).is_file():
        pytest.fail(f"Chromium not found at {path} (apt-get install chromium)", pytrace=False)
    return path


@pytest.fixture(scope="module")
def browser():  # noqa: ANN201
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the playwright package is missing", pytrace=False)
    with sync_playwright() as pw:
        b = pw.chromium.launch(
            executable_path=_chromium(),
            args=["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"],
            headless=True,
        )
        try:
            yield b
        finally:
            b.close()


def _offline_page(browser, color_scheme: str = "light"):  # noqa: ANN001, ANN202
    context = browser.new_context(
        viewport={"width": 1280, "height": 900}, color_scheme=color_scheme
    )
    off_disk: list[str] = []
    errors: list[str] = []

    def route(r) -> None:  # noqa: ANN001
        if r.request.url.startswith(("file:", "data:", "blob:")):
            r.continue_()
        else:
            off_disk.append(r.request.url)
            r.abort("internetdisconnected")

    context.route("**/*", route)
    page = context.new_page()
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    return context, page, off_disk, errors


def test_in_chromium_catalogue_sorts_dark_mode_404_copy(hub: Path, kb, browser) -> None:  # noqa: ANN001
    context, page, off_disk, errors = _offline_page(browser, "dark")
    try:
        # Dark system preference: the slate scheme, with no click.
        page.goto((hub / "index.html").as_uri())
        assert page.evaluate("document.body.getAttribute('data-md-color-scheme')") == "slate"

        # The catalogue sorts by severity, both ways, and by id.
        page.goto((hub / "catalogue.html").as_uri())
        page.wait_for_selector("table.dx-sortable--ready")
        column = "els => els.map(e => e.getAttribute('data-sort'))"
        cells = "table.dx-catalogue tbody tr td:nth-child({})"
        assert len(page.eval_on_selector_all(cells.format(1), column)) == len(kb.entries)
        page.click("th:nth-child(5) button")
        sev = page.eval_on_selector_all(cells.format(5), column)
        assert sev == sorted(sev) and sev[0] == "0"
        assert page.get_attribute("th:nth-child(5)", "aria-sort") == "ascending"
        page.click("th:nth-child(5) button")
        assert page.eval_on_selector_all(cells.format(5), column) == sorted(sev, reverse=True)
        page.click("th:nth-child(1) button")
        ids = page.eval_on_selector_all(cells.format(1), column)
        assert ids == sorted(ids, key=_natural), "ids not in order (numbers as numbers)"

        # An entry page: the fix at a glance has Material's copy buttons.
        page.goto((hub / "entries" / "fastfilewriter-fd-leak-enospc.html").as_uri())
        copy = '.dx-glance button.md-code__button[data-md-type="copy"]'
        page.wait_for_selector(copy)
        assert page.locator(copy).count() >= 2  # the fix command and the verify command
        glance_top = page.locator(".dx-glance").bounding_box()["y"]
        assert glance_top < 900 * 1.5, f"fix at a glance starts {glance_top}px down"

        # 404.html opened from disk is styled (its stylesheets load by relative URL).
        page.goto((hub / "404.html").as_uri())
        position = page.locator("header.md-header").evaluate("el => getComputedStyle(el).position")
        assert position in ("sticky", "fixed")
        assert page.locator(".md-header__button.md-logo svg").count() == 1
    finally:
        context.close()
    assert not off_disk, off_disk
    assert not errors, errors


def test_hub_tour_shows_existing_screenshots() -> None:
    # The pictures docs/hub-tour.md shows (scripts/screenshots.py takes them): desktop and phone,
    # the Diagnose page and an entry page, each a real PNG.
    tour = (ROOT / "docs" / "hub-tour.md").read_text("utf-8")
    images = re.findall(r"\]\((images/[^)]+\.png)\)", tour)
    assert {Path(i).stem for i in images} == {
        f"hub-{page}-{view}" for page in ("diagnose", "entry") for view in ("desktop", "phone")
    }
    for i in images:
        assert (ROOT / "docs" / i).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
