"""An allow-list HTML sanitiser for the hub's generated pages: entry text is untrusted.

`site.prose` already writes entry text so that Markdown makes no raw HTML and no attribute list
of it; this is the second, independent line: the HTML that Markdown rendered for a generated page
is parsed again and only known elements and attributes are written back. Whatever else there is
(`<script>`, `<img>`, `<iframe>`, `on*=` handlers, `style`, a `javascript:` or off-host link
target) is dropped, and the text stays text. Standard library only.
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

# Elements Python-Markdown, its extensions (admonition, details, tables, toc, superfences,
# highlight) and the hub's own markup produce.
ALLOWED_TAGS = frozenset(
    """a abbr b blockquote br code dd del details div dl dt em h1 h2 h3 h4 h5 h6 hr i ins kbd
    li mark ol p pre s section small span strong sub summary sup table tbody td tfoot th thead tr
    u ul
    """.split()
)
VOID_TAGS = frozenset({"br", "hr"})
# Elements dropped with everything inside them (their content is not text to show).
DROP_CONTENT = frozenset({"script", "style", "iframe", "object", "embed", "template", "noscript"})
ALLOWED_ATTRS = frozenset(
    {
        "class",
        "id",
        "href",
        "title",
        "name",
        "open",
        "data-search-exclude",
        "data-sort",  # a table cell's sort key (the catalogue)
        "colspan",
        "rowspan",
    }
)
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):")
_CONTROL = re.compile(r"[\x00-\x20\x7f]+")


def safe_href(url: str) -> bool:
    """http(s) links, and links relative to the page (no scheme, no `//host`)."""
    u = _CONTROL.sub("", html.unescape(url))
    if u.startswith(("//", "\\\\", "/\\", "\\/")):
        return False
    m = _SCHEME.match(u)
    return m is None or m.group(1).lower() in ("http", "https")


class _Sanitiser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.dropped: list[str] = []
        self.skip: list[str] = []  # open DROP_CONTENT elements

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.skip:
            if tag in DROP_CONTENT:
                self.skip.append(tag)
            return
        if tag in DROP_CONTENT:
            self.skip.append(tag)
            self.dropped.append(f"<{tag}>")
            return
        if tag not in ALLOWED_TAGS:
            self.dropped.append(f"<{tag}>")
            return
        kept = []
        for name, value in attrs:
            if name not in ALLOWED_ATTRS:
                self.dropped.append(f"<{tag} {name}>")
                continue
            if name == "href" and value is not None and not safe_href(value):
                self.dropped.append(f"<{tag} href={value!r}>")
                continue
            if value is None:
                kept.append(f" {name}")
            else:
                kept.append(f' {name}="{html.escape(value, quote=True)}"')
        self.out.append(f"<{tag}{''.join(kept)}>")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in DROP_CONTENT:
            if not self.skip:
                self.dropped.append(f"<{tag}>")
            return
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if self.skip:
            if tag == self.skip[-1]:
                self.skip.pop()
            return
        if tag in ALLOWED_TAGS and tag not in VOID_TAGS:
            self.out.append(f"</{tag}>")

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.out.append(html.escape(data, quote=False))

    def handle_comment(self, data: str) -> None:
        # Comments never run; plugins (Material's tags listing) leave markers in them.
        if not self.skip and "--" not in data:
            self.out.append(f"<!--{data}-->")

    def handle_decl(self, decl: str) -> None:
        self.dropped.append("<!decl>")

    def handle_pi(self, data: str) -> None:
        self.dropped.append("<?pi>")

    def unknown_decl(self, data: str) -> None:
        self.dropped.append("<![...]>")


def sanitise(fragment: str) -> tuple[str, list[str]]:
    """(the fragment with only allowed HTML, what was dropped)."""
    p = _Sanitiser()
    p.feed(fragment)
    p.close()
    return "".join(p.out), p.dropped
