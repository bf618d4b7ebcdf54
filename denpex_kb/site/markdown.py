"""Markdown building blocks of the hub's pages: entry text made safe to embed, the renderer's
fixes for Markdown that would come out wrong (a list run into the paragraph above it, `__del__`
as bold, `#795` at a line start as a heading, a stray backtick pairing with the next text's),
code spans and fences that survive any content, front matter, relative links, and entry ids in
prose made into links."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import PurePosixPath
from typing import Any

_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})")
_BACKTICKS = re.compile(r"`+")
# Outside code, these never reach Markdown as themselves: `<` and `&` would start raw HTML or an
# entity, `{` and `}` an attribute list (`{ onmouseover=... }`).
_TEXT_ESCAPES = {"&": "&amp;", "<": "&lt;", "{": "&#123;", "}": "&#125;"}
# A list item: `- x`, `* x`, `+ x`, `1. x`, `1) x`, with its indentation.
_LIST_ITEM = re.compile(r"^( {0,3})(?:[-*+]|\d{1,9}[.)])[ \t]+\S")


def _fenced(lines: Iterable[str]) -> Iterator[tuple[str, bool]]:
    """Each line, and whether it belongs to a fenced block (its opening and closing fences too):
    a fence closes on a fence of the same character at least as long as the one that opened it."""
    fence: str | None = None
    for line in lines:
        m = _FENCE.match(line)
        if fence:
            if m and m.group(2)[0] == fence[0] and len(m.group(2)) >= len(fence):
                fence = None
            yield line, True
        elif m:
            fence = m.group(2)
            yield line, True
        else:
            yield line, False


def prose(text: str) -> str:
    """Author Markdown, made safe to embed: entry text is untrusted.

    Outside code, `<`, `&`, `{` and `}` are written as entities, so entry text can carry no raw
    HTML and no attribute list, and a `<ckpt_dir>` placeholder is shown, not eaten as an unknown
    tag. Code spans and fenced blocks are left untouched. Code spans are found the way Markdown
    finds them (a backslash-escaped backtick opens none), so no text can pass for code here and
    be raw HTML there. Link targets and images are restricted later, in the rendered tree
    (`denpex_kb.mdsafe`).
    """
    out: list[str] = []
    para: list[str] = []  # a run of text lines: code spans may cross lines, not blank ones

    def flush() -> None:
        if para:
            out.extend(_escape_text("\n".join(para)).split("\n"))
            para.clear()

    kind = "blank"  # of the previous line: blank, text, item (a list item) or cont (in an item)
    for line, fenced in _fenced(text.strip("\n").split("\n")):
        if fenced:
            flush()
            out.append(line)
            kind = "blank"
            continue
        if not line.strip():
            flush()
            out.append(line)
            kind = "blank"
            continue
        item = _LIST_ITEM.match(line)
        if item:
            # Each list item is text of its own for Markdown: no code span crosses into the next.
            flush()
            if kind == "text":
                # Markdown runs a list into the paragraph above unless a blank line parts them.
                out.append("")
            elif item.group(1) and kind in ("item", "cont"):
                # A nested item needs four spaces; authors write two.
                line = "    " + line.lstrip(" ")
            kind = "item"
        elif line.startswith(" ") and kind in ("item", "cont"):
            kind = "cont"
        elif kind not in ("item", "cont"):
            kind = "text"
        para.append(line)
    flush()
    return "\n".join(out)


def _escape_text(line: str) -> str:
    parts: list[str] = []
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if c == "\\" and i + 1 < n:
            nxt = line[i + 1]
            parts.append(_TEXT_ESCAPES[nxt] if nxt in _TEXT_ESCAPES else "\\" + nxt)
            i += 2
            continue
        if c == "`":
            run = _BACKTICKS.match(line, i)
            assert run is not None
            ticks = run.group(0)
            close = _closing_run(line, run.end(), len(ticks))
            meant = _escaped_backtick_span(line, i) if close is not None else None
            if meant is not None:
                end, span = meant
                parts.append(span)
                i = end
                continue
            if close is None:
                # No code span: literal backticks, escaped so that text put next to this one
                # (a title in a link, then a tell) cannot pair them with a backtick of its own.
                parts.append("\\`" * len(ticks))
                i = run.end()
            else:
                parts.append(line[i:close])
                i = close
            continue
        if c == "_" and ((i + 1 < n and line[i + 1] == "_") or (i and line[i - 1] == "_")):
            parts.append("\\_")  # `__del__`, `deepspeed/__init__.py`: never bold
        elif c == "#" and not line[line.rfind("\n", 0, i) + 1 : i].strip():
            parts.append("\\#")  # `#795` wrapped to the start of a line: never a heading
        else:
            parts.append(_TEXT_ESCAPES.get(c, c))
        i += 1
    return "".join(parts)


def _escaped_backtick_span(line: str, start: int) -> tuple[int, str] | None:
    """An author's `` `a \\`b\\` c` ``: a one-backtick code span that escapes the backticks
    inside it. Markdown has no escapes in code (the span would end at `\\`` and the rest show
    raw), so the span is rewritten as one that holds its backticks: (end, new span), or None
    when the span at `start` is not of that kind."""
    if line[start : start + 2] == "``":
        return None
    i, n, escaped = start + 1, len(line), False
    while i < n:
        c = line[i]
        # (`\\` alone, a span holding one backslash, is what it says.)
        if c == "\\" and line[i + 1 : i + 2] == "`" and i > start + 1:
            escaped = True
            i += 2
            continue
        if c == "`":
            if not escaped or line[i + 1 : i + 2] == "`":
                return None
            return i + 1, code_span(line[start + 1 : i].replace("\\`", "`"))
        i += 1
    return None


def _closing_run(line: str, start: int, width: int) -> int | None:
    """End of the first backtick run of exactly `width` after `start`, or None."""
    for m in _BACKTICKS.finditer(line, start):
        if len(m.group(0)) == width:
            return m.end()
    return None


def _escape_html(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;")


def inline(text: str) -> str:
    """One line of author Markdown (titles, list items): newlines folded."""
    return " ".join(prose(text).split())


def html_text(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def code_span(s: str) -> str:
    """A Markdown code span holding `s` exactly, whatever backticks it contains."""
    s = " ".join(s.split("\n"))
    longest = max((len(m) for m in re.findall(r"`+", s)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or not s.strip() else ""
    return f"{ticks}{pad}{s}{pad}{ticks}"


def fence(code: str, lang: str = "text", indent: str = "") -> str:
    """A fenced code block that survives any backticks inside `code`."""
    code = code.rstrip("\n")
    longest = max((len(m) for m in re.findall(r"^\s*(`{3,})", code, re.M)), default=0)
    ticks = "`" * max(3, longest + 1)
    lines = [f"{ticks} {lang}", *code.split("\n"), ticks]
    return "\n".join((indent + ln) if ln else ln for ln in lines)


def indent_block(text: str, indent: str = "    ") -> str:
    return "\n".join((indent + ln) if ln.strip() else "" for ln in text.split("\n"))


def yaml_str(s: str) -> str:
    """A YAML scalar for front matter (JSON strings are valid YAML)."""
    return json.dumps(" ".join(s.split()), ensure_ascii=False)


def front_matter(items: Mapping[str, Any]) -> str:
    lines = ["---"]
    for key, value in items.items():
        if isinstance(value, str):
            lines.append(f"{key}: {yaml_str(value)}")
        elif isinstance(value, (list, tuple)):
            lines.append(f"{key}: [{', '.join(yaml_str(v) for v in value)}]")
        elif isinstance(value, dict):
            lines.append(f"{key}:")
            for k, v in value.items():
                lines.append(f"  {k}: {json.dumps(v)}")
        else:
            lines.append(f"{key}: {json.dumps(value)}")
    lines.append("---")
    return "\n".join(lines) + "\n\n"


def relative(from_page: str, to_path: str) -> str:
    """Link from one docs-relative page to another docs-relative path."""
    src = PurePosixPath(from_page).parent
    dst = PurePosixPath(to_path)
    up = len(src.parts)
    common = 0
    for a, b in zip(src.parts, dst.parts, strict=False):
        if a != b:
            break
        common += 1
    parts = [".."] * (up - common) + list(dst.parts[common:])
    return "/".join(parts) or "."


def entry_path(entry_id: str) -> str:
    return f"entries/{entry_id}.md"


def phase_path(phase: str) -> str:
    return f"phases/{phase}.md"


def code_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, content) of every Markdown code span of `text`, found as `prose` finds them."""
    out: list[tuple[int, int, str]] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "`":
            run = _BACKTICKS.match(text, i)
            assert run is not None
            close = _closing_run(text, run.end(), len(run.group(0)))
            if close is None:
                i = run.end()
                continue
            body = text[run.end() : close - len(run.group(0))].replace("\n", " ")
            if body.startswith(" ") and body.endswith(" ") and body.strip():
                body = body[1:-1]
            out.append((i, close, body))
            i = close
            continue
        i += 1
    return out


_MD_LINK = re.compile(r"!?\[[^\]\n]*\]\([^)\n]*\)")
_URL = re.compile(r"https?://[^\s)\]>]+")
_ID_WORD = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)+")
_ID_BEFORE = re.compile(r"[A-Za-z0-9_\-/.$~]")  # a char that makes the word part of a path
_ID_AFTER = re.compile(r"[A-Za-z0-9_\-/]|\.[A-Za-z0-9]")


def link_entry_ids(md: str, ids: Mapping[str, str], skip: str = "") -> str:
    """Entry ids named in Markdown (as a code span holding just the id, or as a bare word) made
    into links: `ids` maps each id to its link target. Fenced blocks, code spans holding
    anything else, existing links, URLs and words that are part of a path are left alone, and
    so is `skip` (the page's own id)."""
    out: list[str] = []
    chunk: list[str] = []

    def flush() -> None:
        if chunk:
            out.append(_link_ids_text("\n".join(chunk), ids, skip))
            chunk.clear()

    for line, fenced in _fenced(md.split("\n")):
        if fenced:
            flush()
            out.append(line)
            continue
        chunk.append(line)
    flush()
    return "\n".join(out)


def _link_ids_text(text: str, ids: Mapping[str, str], skip: str) -> str:
    parts: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            parts.append(text[i : i + 2])
            i += 2
            continue
        if c == "`":
            run = _BACKTICKS.match(text, i)
            assert run is not None
            close = _closing_run(text, run.end(), len(run.group(0)))
            if close is None:
                parts.append(run.group(0))
                i = run.end()
                continue
            span = text[i:close]
            body = text[run.end() : close - len(run.group(0))].strip()
            if body in ids and body != skip:
                span = f"[{span}]({ids[body]})"
            parts.append(span)
            i = close
            continue
        m = _MD_LINK.match(text, i) if c in "[!" else None
        if m is None and c == "h":
            m = _URL.match(text, i)
        if m is not None:
            parts.append(m.group(0))
            i = m.end()
            continue
        m = _ID_WORD.match(text, i) if c.isalnum() else None
        if m is not None:
            word = m.group(0)
            before_ok = i == 0 or not _ID_BEFORE.match(text[i - 1])
            after_ok = not _ID_AFTER.match(text, m.end())
            if before_ok and after_ok and word in ids and word != skip:
                parts.append(f"[{word}]({ids[word]})")
            else:
                parts.append(word)
            i = m.end()
            continue
        if c.isalnum():  # the rest of a word that is not an id candidate
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            parts.append(text[i:j])
            i = j
            continue
        parts.append(c)
        i += 1
    return "".join(parts)


def _badge(text: str, kind: str, href: str | None = None) -> str:
    if href:
        return f"[{html_text(text)}]({href}){{ .dx-badge .dx-badge--{kind} }}"
    return f'<span class="dx-badge dx-badge--{kind}">{html_text(text)}</span>'
