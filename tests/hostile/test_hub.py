"""Entries are untrusted text: the hub runs nothing and loads nothing from them."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest

from denpex_kb import site
from denpex_kb.htmlsafe import safe_href, sanitise
from denpex_kb.kb import KBError, load_kb

from .conftest import HOSTILE_KB


class _Scan(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.handlers: list[str] = []
        self.tags: list[str] = []
        self.hrefs: list[str] = []
        self.title = ""
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list) -> None:  # noqa: ANN001
        self.tags.append(tag)
        self._in_title = tag == "title"
        for k, v in attrs:
            if k.startswith("on"):
                self.handlers.append(f"<{tag} {k}={v!r}>")
            if k in ("href", "src") and v is not None:
                self.hrefs.append(v)

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data

    def handle_endtag(self, tag: str) -> None:
        self._in_title = False


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return site.build_site(kb_dir=HOSTILE_KB, site_dir=tmp_path_factory.mktemp("hub") / "site")


def test_hostile_entry_renders_as_text(hub: Path) -> None:
    pages = sorted(hub.rglob("*.html"))
    assert (hub / "entries" / "hostile-entry.html") in pages
    for page in pages:
        scan = _Scan()
        scan.feed(page.read_text())
        assert scan.handlers == [], f"{page.name}: {scan.handlers}"
        assert "img" not in scan.tags and "iframe" not in scan.tags, page.name
        text = page.read_text()
        if "<article" in text:  # the theme's own links (`javascript:void(0)`) are not entry text
            body = _Scan()
            body.feed(text[text.index("<article") : text.rindex("</article>")])
            for url in body.hrefs:
                assert safe_href(url), f"{page.name}: {url}"
    scan = _Scan()
    scan.feed((hub / "entries" / "hostile-entry.html").read_text())
    # The title is text in <title>, not markup that ends it.
    assert scan.title.startswith("</title><script>alert('title')</script>")
    assert scan.tags.count("script") == (hub / "index.html").read_text().count("<script")


def test_sanitiser_drops_what_runs_or_loads() -> None:
    dirty = (
        '<p onclick="x()">a<script>alert(1)</script><img src="https://h/p.png">'
        '<a href="javascript:alert(1)">j</a><a href=" JaVa&#x53;cript:x">e</a>'
        '<a href="//evil.invalid/">p</a><a href="../ok.html#x">ok</a>'
        '<iframe src="https://h/"></iframe><span style="x">s</span></p>'
    )
    clean, dropped = sanitise(dirty)
    assert "script" not in clean and "img" not in clean and "iframe" not in clean
    assert "onclick" not in clean and "style" not in clean and "javascript" not in clean.lower()
    assert "evil.invalid" not in clean and 'href="../ok.html#x"' in clean
    assert len(dropped) >= 7


def test_prose_leaves_no_raw_html_and_no_attribute_list() -> None:
    # A backslash-escaped backtick opens no code span (as in Markdown), so nothing after it
    # passes for code here and for raw HTML there.
    out = site.prose("a \\`<img src=x onerror=y> b { onmouseover=z }")
    assert "<img" not in out and "{" not in out and "}" not in out
    assert site.prose("run `<kept>` <x>") == "run `<kept>` &lt;x>"


@pytest.mark.parametrize(
    "text, what",
    [
        ("see ![x](https://host.invalid/p.png)", "images are not allowed"),
        ("see <iframe src=https://host.invalid/>", "is not allowed in entry text"),
        ("see [x](javascript:alert(1))", "not allowed (http(s) or relative)"),
        ("see [x][r]\n\n[r]: data:text/html,x", "not allowed (http(s) or relative)"),
    ],
)
def test_validate_refuses_what_the_hub_would_load(kb_copy: Path, text: str, what: str) -> None:
    entry = kb_copy / "config" / "hostile-entry.yaml"
    src = entry.read_text()
    filler = "This paragraph is long enough for the schema's minimum length of a mechanism."
    block = "mechanism: |-\n  " + filler + "\n  " + text.replace("\n", "\n  ") + "\n"
    start = src.index("mechanism: |-")
    end = src.index("symptoms:")
    entry.write_text(src[:start] + block + src[end:])
    with pytest.raises(KBError) as exc:
        load_kb(kb_copy)
    problems = [str(p) for p in exc.value.problems]
    assert len(problems) == 1 and what in problems[0] and ": mechanism: " in problems[0]
