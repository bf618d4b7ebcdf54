"""Generate the docs hub's pages from the knowledge base: plain Markdown plus a nav.

This module knows nothing about MkDocs. `generate_hub(kb)` returns a `Hub`: Markdown pages and
static files keyed by their path inside the docs folder, and a nav in the list-of-mappings shape
that MkDocs (and Zensical) read from `mkdocs.yml`. The MkDocs glue lives in `site_hooks.py`; any
other static-site generator can take `write_hub()`'s output folder instead.

Layout of the generated part of the hub (paths relative to the docs folder):

    index.md                    home: what the hub is, how to match a log, phases at a glance
    phases/<phase>.md           one index per lifecycle phase, each entry with its summary
    classes.md                  entries grouped by failure class
    tags.md                     the controlled vocabulary and the tags plugin's listing
    rule-pack.md                download of the rule pack and its conformance vectors
    entries/<id>.md             one page per entry, sections in a fixed order (ENTRY_SECTIONS)
    entries/<id>.yaml           the entry's YAML source, linked from its page
    downloads/...               rule pack files, when the rule-pack exporter provides them

Everything is derived from the entries in a fixed order, so generating twice gives the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from .model import FAILURE_CLASSES, PHASE_TITLES, PHASES, Entry, KnowledgeBase

# Section headings of an entry page, in order. Tests and the browser check use this list.
# Headings are fixed words on purpose: search gives heading text a large boost, so nothing that
# belongs to one entry (an example name, a check) is ever rendered as a heading.
ENTRY_SECTIONS: tuple[tuple[str, str], ...] = (
    ("what-you-see", "What you see"),
    ("why-it-happens", "Why it happens"),
    ("affected", "Affected configs and versions"),
    ("check-it", "Check it"),
    ("how-to-fix-it", "How to fix it"),
    ("verify-the-fix", "Verify the fix"),
    ("look-alikes", "Look-alikes"),
    ("signals", "Signals (for tool authors)"),
    ("examples", "Examples"),
    ("references", "References"),
    ("source", "Source"),
)

CLASS_TITLES: dict[str, str] = {
    "crash": "Crash",
    "hang": "Hang",
    "data-integrity": "Data integrity",
    "resource-exhaustion": "Resource exhaustion",
    "numerical": "Numerical",
    "configuration": "Configuration",
    "performance": "Performance",
}

CLASS_MEANINGS: dict[str, str] = {
    "crash": "The job dies with an error.",
    "hang": "The job stops making progress without dying, until a watchdog or a human ends it.",
    "data-integrity": "Data is silently wrong or lost: corrupt checkpoints, wrong weights.",
    "resource-exhaustion": "A limit runs out: memory, disk, file descriptors, shared memory.",
    "numerical": "Loss scale, NaN/Inf, precision.",
    "configuration": "The DeepSpeed config or the launch setup is rejected or inconsistent.",
    "performance": "The job runs, but far slower than it should.",
}

SEVERITY_ORDER = ("critical", "high", "medium", "low")

# Hand-written pages (in the docs folder) the nav places when they exist.
WRITE_AN_ENTRY = "write-an-entry.md"
RULE_PACK_FORMAT = "rule-pack-format.md"
REPORT_FORMAT = "report-format.md"
USING_PAGES = (("Command line", "cli.md"), ("Python API", "api.md"))

# Search boosts (Material's per-page `search.boost`): entry pages are what a search should find;
# the hub's own pages rank below them. Listing pages repeat every summary and are not indexed.
BOOST_ENTRY = 2.0
BOOST_COLLATERAL = 1.5
BOOST_GUIDE = 0.5
# A small step per severity breaks near-ties between entries that quote the same error string
# equally well (e.g. two zero_to_fp32 failures): the more severe one is listed first.
BOOST_SEVERITY_STEP = {"critical": 0.06, "high": 0.04, "medium": 0.02, "low": 0.0}


def search_boost(entry: Entry) -> float:
    base = BOOST_COLLATERAL if entry.role == "collateral" else BOOST_ENTRY
    return round(base + BOOST_SEVERITY_STEP.get(entry.severity, 0.0), 2)


# At most this many "key error lines" are pulled from an entry's examples into "What you see".
MAX_KEY_LINES = 12
# Longer example logs are shown in part on the page; the whole log ships as a download.
MAX_EXAMPLE_LINES = 60


@dataclass(frozen=True)
class Hub:
    """The generated part of the hub: Markdown pages, static files, and the nav."""

    pages: dict[str, str]
    files: dict[str, bytes]
    nav: list[Any]
    search_excluded: frozenset[str] = field(default_factory=frozenset)


# --------------------------------------------------------------------------------------------
# Markdown helpers


_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})")
_BACKTICKS = re.compile(r"`+")
# Outside code, these never reach Markdown as themselves: `<` and `&` would start raw HTML or an
# entity, `{` and `}` an attribute list (`{ onmouseover=... }`).
_TEXT_ESCAPES = {"&": "&amp;", "<": "&lt;", "{": "&#123;", "}": "&#125;"}
# A list item: `- x`, `* x`, `+ x`, `1. x`, `1) x`, with its indentation.
_LIST_ITEM = re.compile(r"^( {0,3})(?:[-*+]|\d{1,9}[.)])[ \t]+\S")


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
    in_fence: str | None = None

    def flush() -> None:
        if para:
            out.extend(_escape_text("\n".join(para)).split("\n"))
            para.clear()

    kind = "blank"  # of the previous line: blank, text, item (a list item) or cont (in an item)
    for line in text.strip("\n").split("\n"):
        m = _FENCE.match(line)
        if in_fence:
            out.append(line)
            if m and m.group(2)[0] == in_fence[0] and len(m.group(2)) >= len(in_fence):
                in_fence = None
            continue
        if m:
            flush()
            in_fence = m.group(2)
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


# --------------------------------------------------------------------------------------------
# Entry page


def versions_label(entry: Entry) -> str:
    if not entry.affected.versions:
        return "any version"
    return "; ".join(f"{v.package} {v.specifier}" for v in entry.affected.versions)


def key_error_lines(entry: Entry) -> list[str]:
    """The log lines that prove the failure, taken from the entry's own matching examples.

    Lines containing an example's `evidence` come first; otherwise lines where one of the
    entry's (non-veto) signals matches. Deduplicated, in log order, at most MAX_KEY_LINES.
    """
    import re2  # RE2, as the engine: a pattern can be fast in RE2 and hang Python's `re`

    wanted_ids = set(entry.match.all) | set(entry.match.any)
    patterns = []
    opts = re2.Options()
    opts.log_errors = False
    for s in entry.signals:
        if s.id in wanted_ids:
            opts.case_sensitive = not s.ignore_case
            try:
                patterns.append(re2.compile(s.pattern, opts))
            except Exception:  # pragma: no cover - the loader rejects these  # noqa: BLE001
                continue
    seen: set[str] = set()
    out: list[str] = []

    def add(line: str) -> None:
        line = line.rstrip()
        key = line.strip()
        if key and key not in seen and len(out) < MAX_KEY_LINES:
            seen.add(key)
            out.append(line if len(line) <= 400 else line[:397] + "...")

    positives = [ex for ex in entry.examples if ex.expect == "match"]
    for ex in positives:
        for line in ex.log.splitlines():
            if any(ev in line for ev in ex.evidence):
                add(line)
    if not out:
        for ex in positives:
            for line in ex.log.splitlines():
                if any(p.search(line) for p in patterns):
                    add(line)
    return out


# Programs a fix step's code span may start with (after `VAR=value` prefixes) to count as a
# command to copy. A span with one word only (`dmesg`, `tmux`) names a tool, not a command.
SHELL_COMMANDS = frozenset(
    """accelerate apt apt-get cat cd chmod chown conda cp dcgmi deepspeed df dmesg dnf docker du
    echo export find for git grep huggingface-cli ibstat kill llamafactory-cli ln ls lsof mamba
    mkdir mkfs.ext4 module mount mv nvidia-smi pip pip3 python python3 rm rsync sacct sbatch
    scontrol sed source srun ss ssh ssh-keygen ssh-keyscan sudo tar test torchrun touch ulimit
    uv unset yum""".split()
)
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# `not in `docker build``, `instead of `python train.py``: a span the step warns against.
_NEGATED = re.compile(
    r"\b(?:not|never|instead of|rather than|without|avoid|don't|do not)\b[^.;:`(]{0,20}$", re.I
)
# Text right before a command that says which alternative it is ("Debian/Ubuntu:", "On 0.14.3:").
_LEAD_IN = re.compile(r"(?:^|[.;]\s)([A-Za-z][^.;`\[\]()*_<>&{}|]{0,59}:)\s*$")


def is_shell_command(code: str) -> bool:
    """Whether a code span of a fix step is a command to run (not a config key or an API)."""
    code = code.strip()
    if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=\$\(", code):  # MASTER_ADDR=$(scontrol ...)
        return True
    words = code.split()
    while words and _ASSIGNMENT.match(words[0]):
        words.pop(0)
    return len(words) >= 2 and words[0] in SHELL_COMMANDS


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


def step_commands(step: str) -> list[tuple[str, str]]:
    """The commands a fix step gives, each with its lead-in ("Debian/Ubuntu:") or ""."""
    out: list[tuple[str, str]] = []
    prev_end = 0
    for start, end, body in code_spans(step):
        before = step[:start]
        if is_shell_command(body) and not _NEGATED.search(before):
            m = _LEAD_IN.search(step[prev_end:start])
            out.append((m.group(1).strip() if m else "", body.strip()))
        prev_end = end
    return out


def fix_at_a_glance(entry: Entry) -> str:
    """The box under the summary: what to run (or change) and the command that proves it."""
    b = [
        '<div class="dx-glance" data-search-exclude markdown>\n',
        '<p class="dx-glance-title" markdown>**Fix at a glance** '
        "([every step explained](#how-to-fix-it))</p>\n",
    ]
    steps = [(i, step_commands(s)) for i, s in enumerate(entry.fix.steps, 1)]
    steps = [(i, cmds) for i, cmds in steps if cmds]
    for i, cmds in steps:
        for lead, cmd in cmds:
            label = f"Step {i}" + (f" · {inline(lead)}" if lead else "")
            b.append(f'<p class="dx-glance-step" markdown>{label}</p>\n')
            b.append(fence(cmd, "bash") + "\n")
    if not steps and entry.fix.snippets:
        for sn in entry.fix.snippets:
            b.append(f'<p class="dx-glance-step" markdown>{inline(sn.title)}</p>\n')
            b.append(fence(sn.code, sn.language) + "\n")
    elif not steps and entry.fix.steps:
        b.append('<p class="dx-glance-step" markdown>Step 1</p>\n')
        b.append(f'<p class="dx-glance-text" markdown>{inline(entry.fix.steps[0])}</p>\n')
    elif entry.fix.snippets:
        n = len(entry.fix.snippets)
        b.append(
            f'<p class="dx-glance-more" markdown>And {n} code or config '
            f"{'change' if n == 1 else 'changes'} under [How to fix it](#how-to-fix-it).</p>\n"
        )
    b.append('<p class="dx-glance-step" markdown>Verify ([what it shows](#verify-the-fix))</p>\n')
    b.append(fence(entry.verify.command, "bash") + "\n")
    b.append("</div>\n")
    return "\n".join(b)


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
    in_fence: str | None = None

    def flush() -> None:
        if chunk:
            out.append(_link_ids_text("\n".join(chunk), ids, skip))
            chunk.clear()

    for line in md.split("\n"):
        m = _FENCE.match(line)
        if in_fence:
            out.append(line)
            if m and m.group(2)[0] == in_fence[0] and len(m.group(2)) >= len(in_fence):
                in_fence = None
            continue
        if m:
            flush()
            in_fence = m.group(2)
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


def entry_page(entry: Entry, kb: KnowledgeBase) -> str:
    page = entry_path(entry.id)
    ids = {e.id for e in kb.entries}
    targets = {e.id: relative(page, entry_path(e.id)) for e in kb.entries}

    def prose_ln(text: str) -> str:  # author prose, entry ids named in it linked
        return link_entry_ids(prose(text), targets, entry.id)

    def inline_ln(text: str) -> str:  # one line of author Markdown, entry ids linked
        return link_entry_ids(inline(text), targets, entry.id)

    b: list[str] = []
    add = b.append
    boost = search_boost(entry)
    add(
        front_matter(
            {
                # MkDocs and Material write page titles and meta values into the HTML as they
                # are (nav, <title>, header, meta description): they must be HTML already.
                "title": html_text(entry.title),
                "description": html_text(entry.summary),
                "tags": list(entry.tags),
                "search": {"boost": boost},
                "denpex_entry": entry.id,
            }
        )
    )
    add(f"# {inline(entry.title)} {{ #{entry.id} }}\n")
    badges = [
        _badge(
            f"phase: {PHASE_TITLES[entry.phase]}", "phase", relative(page, phase_path(entry.phase))
        ),
        _badge(
            f"class: {entry.failure_class}",
            "class",
            relative(page, "classes.md") + f"#{entry.failure_class}",
        ),
        _badge(f"severity: {entry.severity}", f"severity-{entry.severity}"),
        _badge(f"versions: {versions_label(entry)}", "versions"),
    ]
    if entry.role == "collateral":
        badges.append(_badge("collateral: a consequence, not a root cause", "collateral"))
    add(f'<p class="dx-id">id: <code>{html_text(entry.id)}</code></p>\n')
    add('<p class="dx-badges" markdown>' + " ".join(badges) + "</p>\n")
    add(f'<p class="dx-summary" markdown>{inline_ln(entry.summary)}</p>\n')
    add(fix_at_a_glance(entry))

    # What you see
    # Rendered as raw HTML on purpose: a heading without an id keeps "What you see" in the
    # page's top search document (title + summary + the error lines), which Material's search
    # ranks above sections. Error strings are what users search for.
    add(
        '<h2 class="dx-section"><a id="what-you-see"></a>What you see'
        '<a class="headerlink" href="#what-you-see" title="Permanent link" data-search-exclude>&para;</a></h2>\n'
    )
    for s in entry.symptoms:
        add(f"- {inline_ln(s)}")
    add("")
    lines = key_error_lines(entry)
    if lines:
        add("Key error lines, from the examples below:\n")
        add(fence("\n".join(lines), "text") + "\n")

    # Why it happens
    add("## Why it happens { #why-it-happens }\n")
    add(prose_ln(entry.mechanism) + "\n")
    for n in entry.not_the_cause:
        add(f'!!! warning "Not the cause: {inline(n.claim)}"\n')
        add(indent_block(prose_ln(n.why)) + "\n")

    # Affected
    add("## Affected configs and versions { #affected }\n")
    add("Needed for the failure:\n")
    for c in entry.affected.configs:
        add(f"- {inline_ln(c)}")
    add("")
    if entry.affected.versions:
        add("| Package | Affected versions | Fixed in | How this was established |")
        add("|---|---|---|---|")
        for v in entry.affected.versions:
            fixed = code_span(v.fixed_in) if v.fixed_in else "not fixed"
            src = inline_ln(v.source).replace("|", "\\|")
            add(f"| {code_span(v.package)} | {code_span(v.specifier)} | {fixed} | {src} |")
        add("")
    else:
        add("Does not depend on a package version.\n")

    # Check it
    add("## Check it { #check-it }\n")
    for i, c in enumerate(entry.checklist, 1):
        add(f"{i}. **{inline_ln(c.check)}**\n")
        add(fence(c.command, "bash", "    ") + "\n")
        add(indent_block(prose_ln(c.shows)) + "\n")

    # How to fix it
    add("## How to fix it { #how-to-fix-it }\n")
    for i, s in enumerate(entry.fix.steps, 1):
        add(f"{i}. {inline_ln(s)}")
    add("")
    for sn in entry.fix.snippets:
        add(f'<p class="dx-snippet-title" markdown>**{inline_ln(sn.title)}**</p>\n')
        add(fence(sn.code, sn.language) + "\n")
    if entry.fix.workaround:
        add('!!! tip "Workaround when you cannot apply the fix yet"\n')
        add(indent_block(prose_ln(entry.fix.workaround)) + "\n")

    # Verify
    add("## Verify the fix { #verify-the-fix }\n")
    add(fence(entry.verify.command, "bash") + "\n")
    add(prose_ln(entry.verify.expected) + "\n")

    # Look-alikes: not indexed for search. A tell quotes the other entry's error on purpose
    # ("an explicit Errno 28 means ..."), which would rank this page for that entry's queries.
    add("## Look-alikes { #look-alikes }\n")
    listed = {la.id for la in entry.look_alikes}
    listed_by = [
        (other, la)
        for other in kb.entries
        for la in other.look_alikes
        if la.id == entry.id and other.id not in listed and other.id != entry.id
    ]
    if entry.look_alikes or listed_by:
        add("Same surface error, different cause. The tell:\n")
        add('<div class="dx-lookalikes" data-search-exclude markdown>\n')
        for la in entry.look_alikes:
            if la.id in ids:
                other = kb.get(la.id)
                link = f"[{inline(other.title)}]({relative(page, entry_path(la.id))})"
            else:  # pragma: no cover - the loader rejects unknown ids
                link = code_span(la.id)
            add(f"- {link}: {inline_ln(la.tell)}")
        for other, la in listed_by:
            link = f"[{inline(other.title)}]({relative(page, entry_path(other.id))})"
            tell = link_entry_ids(inline(la.tell), targets, other.id)
            add(f"- {link} lists this entry as a look-alike. Its tell, from that page: {tell}")
        add("\n</div>\n")
    else:
        add("No known look-alikes.\n")

    # Signals
    add("## Signals (for tool authors) { #signals }\n")
    add(_match_rule_text(entry) + "\n")
    for s in entry.signals:
        role = (
            "veto"
            if s.id in entry.match.none
            else ("required" if s.id in entry.match.all else "any-of")
        )
        flags = ", case-insensitive" if s.ignore_case else ""
        add(f"- {code_span(s.id)} ({role}{flags}): {inline_ln(s.description)}\n")
        add(fence(s.pattern, "text", "    ") + "\n")
        add(indent_block(_source_text(s.source)) + "\n")

    # Examples: logs are shown, not indexed for search (no-match logs belong to other entries,
    # and the error lines that matter are already under "What you see").
    add("## Examples { #examples }\n")
    for ex in entry.examples:
        verdict = "must match" if ex.expect == "match" else "must not match"
        label = f"{ex.name}: {verdict} ({ex.provenance})"
        add(f'??? example "{html_text(label)}"\n')
        body: list[str] = []
        if ex.description:
            body.append(prose_ln(ex.description) + "\n")
        if ex.source:
            body.append(f"Source: {inline_ln(ex.source)}\n")
        if ex.expect_top:
            target = (
                f"[{code_span(ex.expect_top)}]({relative(page, entry_path(ex.expect_top))})"
                if ex.expect_top in ids
                else code_span(ex.expect_top)
            )
            body.append(f"The root cause here is {target}.\n")
        log_lines = ex.log.rstrip("\n").split("\n")
        if len(log_lines) > MAX_EXAMPLE_LINES:
            head = log_lines[: MAX_EXAMPLE_LINES // 2]
            tail = log_lines[-MAX_EXAMPLE_LINES // 2 :]
            omitted = len(log_lines) - len(head) - len(tail)
            shown = "\n".join([*head, f"[... {omitted} lines omitted ...]", *tail])
            body.append(
                f"First and last {MAX_EXAMPLE_LINES // 2} of {len(log_lines)} lines; "
                f"[the whole log]({relative(page, example_log_path(entry.id, ex.name))}).\n"
            )
        else:
            shown = "\n".join(log_lines)
        body.append('<div class="dx-log" data-search-exclude markdown>\n')
        body.append(fence(shown, "text") + "\n")
        body.append("</div>\n")
        add(indent_block("\n".join(body)) + "\n")

    # References
    add("## References { #references }\n")
    for r in entry.references:
        note = f": {inline_ln(r.note)}" if r.note else ""
        add(f"- [{inline(r.title)}]({r.url}) ({r.kind}){note}")
    add("")

    # Source
    add("## Source { #source }\n")
    src = entry.source_path or f"kb/{entry.phase}/{entry.id}.yaml"
    add(
        f"This page is generated from [{code_span(src)}]({entry.id}.yaml). "
        "Edit the YAML, never this page; the rule pack and the search index come from the "
        f"same file. Rule id: {code_span(entry.id)}.\n"
    )
    return "\n".join(b).rstrip() + "\n"


def example_log_path(entry_id: str, example_name: str) -> str:
    return f"entries/{entry_id}/{example_name}.log"


def _match_rule_text(entry: Entry) -> str:
    r = entry.match
    parts = [
        f"Role **{r.role}**, evaluated per **{'rank' if r.scope == 'rank' else 'whole log'}**."
    ]
    if r.all:
        parts.append("Fires when all of " + ", ".join(code_span(s) for s in r.all) + " are seen")
    if r.any:
        joiner = "and any of " if r.all else "Fires when any of "
        parts.append(joiner + ", ".join(code_span(s) for s in r.any) + " is seen")
    text = parts[0] + " " + "; ".join(parts[1:])
    if r.window_lines:
        text += f", within {r.window_lines} lines of one another"
    if not r.fatal:
        text += (
            " (not fatal: a warning or silent degradation; never preferred as the root cause"
            " over a fatal failure in the same log)"
        )
    text += "."
    if r.none:
        text += " Vetoed by " + ", ".join(code_span(s) for s in r.none) + "."
    if r.versions:
        text += (
            " Only when the log's own versions satisfy "
            + ", ".join(code_span(f"{v.package} {v.specifier}") for v in r.versions)
            + "."
        )
    return text


def _source_text(src: Any) -> str:
    where = ""
    if src.kind == "upstream-source":
        where = f"Emitted by {code_span(f'{src.repo}: {src.path}')} at {code_span(src.ref or '?')}"
    elif src.kind == "public-log":
        where = "Seen in a public log"
    elif src.kind == "captured-log":
        where = f"Seen in the captured log {code_span(src.path or '?')}"
    if src.url:
        where += f" ([link]({src.url}))"
    out = where + "."
    if src.quote:
        out += "\n\n" + fence(src.quote, "text")
    return out


# --------------------------------------------------------------------------------------------
# Hub pages


def _entry_row(entry: Entry, from_page: str) -> str:
    link = relative(from_page, entry_path(entry.id))
    sev = _badge(entry.severity, f"severity-{entry.severity}")
    return f"- [{inline(entry.title)}]({link}) {sev}<br>\n  {inline(entry.summary)}"


def home_page(kb: KnowledgeBase, has_rulepack: bool, has_diagnose: bool = False) -> str:
    n = len(kb.entries)
    b = [
        front_matter({"title": "DeepSpeed failure hub", "search": {"boost": BOOST_GUIDE}}),
        "# DeepSpeed failure hub\n",
        "What killed your DeepSpeed run, why, the exact fix and the command that proves it: "
        f"{n} failure {'entry' if n == 1 else 'entries'}, browsable offline by lifecycle phase, "
        "failure class and tag, or by pasting an error string into search.\n",
        "Match a whole log (any number of ranks) from the terminal, without uploading it:\n",
        fence(
            "denpex-kb match train.log        # or a folder of per-rank logs, or - for stdin",
            "bash",
        )
        + "\n",
        "It names the root-cause entry, the rank that started it, and which errors are only "
        "collateral damage.\n",
        *(
            [
                "Or paste the log (or drop the files) into [Diagnose a log](diagnose.md): the "
                "same rules run in this browser, and nothing leaves the page.\n"
            ]
            if has_diagnose
            else []
        ),
        "## Phases { #phases }\n",
        "| Phase | Entries | |",
        "|---|---|---|",
    ]
    for phase in PHASES:
        entries = kb.by_phase(phase)
        b.append(
            f"| [{PHASE_TITLES[phase]}]({phase_path(phase)}) | {len(entries)} | "
            f"{_phase_blurb(phase)} |"
        )
    b.append("")
    b.append("## More ways in { #more }\n")
    b.append(
        "- [By failure class](classes.md): crash, hang, data integrity, resource exhaustion..."
    )
    b.append("- [By tag](tags.md): errno names, features, launchers.")
    b.append(
        f"- [Catalogue]({CATALOGUE_PAGE}): every entry in one table, sortable by id, phase, "
        "class, severity or affected versions."
    )
    if has_rulepack:
        b.append("- [Rule pack](rule-pack.md): the same failures as JSON rules for your own tools.")
    b.append(f"- [Write an entry]({WRITE_AN_ENTRY}): add the failure that cost you a night.")
    return "\n".join(b) + "\n"


_PHASE_BLURBS = {
    "build": "installing DeepSpeed, building ops",
    "launch": "launchers, hostfiles, rendezvous",
    "config": "the DeepSpeed config and its checks",
    "init": "deepspeed.initialize, zero.Init, model loading",
    "zero": "ZeRO partitioning during training",
    "memory": "device and host memory exhaustion",
    "numerics": "loss scale, NaN/Inf, precision",
    "communication": "collectives, NCCL, gloo, timeouts",
    "checkpoint": "save, load, conversion, disks",
    "pipeline": "pipeline parallelism",
    "offload": "CPU/NVMe offload, async I/O",
    "data": "data loading",
    "hardware": "GPUs, links, ECC, nodes",
}


def _phase_blurb(phase: str) -> str:
    return _PHASE_BLURBS.get(phase, "")


def phase_page(kb: KnowledgeBase, phase: str) -> str:
    page = phase_path(phase)
    entries = kb.by_phase(phase)
    b = [
        front_matter({"title": f"{PHASE_TITLES[phase]}", "search": {"exclude": True}}),
        f"# {PHASE_TITLES[phase]}\n",
        f"Failures that show during **{phase}**: {_phase_blurb(phase)}.\n",
    ]
    if not entries:
        b.append("No entries yet. [Write one](../" + WRITE_AN_ENTRY + ").\n")
    for e in sorted(entries, key=_severity_key):
        b.append(_entry_row(e, page))
    return "\n".join(b).rstrip() + "\n"


def _severity_key(e: Entry) -> tuple[int, str]:
    return (SEVERITY_ORDER.index(e.severity), e.id)


def classes_page(kb: KnowledgeBase) -> str:
    page = "classes.md"
    b = [
        front_matter({"title": "By failure class", "search": {"exclude": True}}),
        "# By failure class\n",
        "What kind of failure it is, whatever the phase.\n",
    ]
    for cls in FAILURE_CLASSES:
        entries = [e for e in kb.entries if e.failure_class == cls]
        b.append(f"## {CLASS_TITLES.get(cls, cls)} {{ #{cls} }}\n")
        b.append(f"{CLASS_MEANINGS.get(cls, '')}\n")
        if not entries:
            b.append("No entries yet.\n")
            continue
        for e in sorted(entries, key=_severity_key):
            b.append(_entry_row(e, page))
        b.append("")
    return "\n".join(b).rstrip() + "\n"


CATALOGUE_PAGE = "catalogue.md"
# The script that sorts the catalogue's table (site_overrides/, loaded by main.html on pages
# whose front matter sets denpex_catalogue).
SORT_SCRIPT = "assets/tables/sort.js"


def catalogue_page(kb: KnowledgeBase) -> str:
    """Every entry in one table (id, title, phase, class, severity, affected versions), sorted
    by phase then severity; the page's script sorts it by any column. Without the script it is
    a plain table in that order."""
    page = CATALOGUE_PAGE
    n = len(kb.entries)
    b = [
        front_matter({"title": "Catalogue", "search": {"exclude": True}, "denpex_catalogue": True}),
        "# Catalogue\n",
        f"Every entry of the knowledge base ({n}) in one table. Click a column heading to sort "
        "by it, click again to reverse. Affected versions are the package ranges an entry "
        "applies to; *any version* means the failure does not depend on one.\n",
        '<div class="dx-catalogue-wrap" markdown="1">',
        '<table class="dx-catalogue dx-sortable" markdown="1">',
        "<thead><tr><th>Id</th><th>Title</th><th>Phase</th><th>Class</th><th>Severity</th>"
        "<th>Affected versions</th></tr></thead>",
        '<tbody markdown="1">',
    ]
    phase_rank = {p: i for i, p in enumerate(PHASES)}
    class_rank = {c: i for i, c in enumerate(FAILURE_CLASSES)}
    entries = sorted(kb.entries, key=lambda e: (phase_rank.get(e.phase, 99), *_severity_key(e)))
    for e in entries:
        link = relative(page, entry_path(e.id))
        sev = SEVERITY_ORDER.index(e.severity) if e.severity in SEVERITY_ORDER else 9
        versions = (
            "; ".join(code_span(f"{v.package} {v.specifier}") for v in e.affected.versions)
            if e.affected.versions
            else "any version"
        )
        cells = [
            (e.id, f"[{code_span(e.id)}]({link})"),
            (re.sub(r"^\W+", "", " ".join(e.title.split())), f"[{inline(e.title)}]({link})"),
            (
                f"{phase_rank.get(e.phase, 99):02d}",
                f"[{PHASE_TITLES[e.phase]}]({relative(page, phase_path(e.phase))})",
            ),
            (
                f"{class_rank.get(e.failure_class, 99):02d}",
                CLASS_TITLES.get(e.failure_class, e.failure_class),
            ),
            (str(sev), _badge(e.severity, f"severity-{e.severity}")),
            (versions_label(e), versions),
        ]
        row = "".join(
            f'<td data-sort="{html_text(key)}" markdown="span">{md}</td>' for key, md in cells
        )
        b.append(f'<tr markdown="1">{row}</tr>')
    b += ["</tbody>", "</table>", "</div>", ""]
    return "\n".join(b)


def tags_page(kb: KnowledgeBase) -> str:
    used: dict[str, int] = {}
    for e in kb.entries:
        for t in e.tags:
            used[t] = used.get(t, 0) + 1
    b = [
        front_matter({"title": "By tag", "search": {"exclude": True}}),
        "# By tag\n",
        "Tags come from a controlled vocabulary, `kb/tags.yaml`: an entry (or page) with a tag "
        "that is not listed there fails the build.\n",
        "## Entries by tag { #entries-by-tag }\n",
        "<!-- material/tags { toc: false } -->\n",
        "## Vocabulary { #vocabulary }\n",
        "| Tag | Meaning | Entries |",
        "|---|---|---|",
    ]
    for tag in sorted(kb.tags):
        b.append(f"| {code_span(tag)} | {inline(kb.tags[tag])} | {used.get(tag, 0)} |")
    return "\n".join(b) + "\n"


def rule_pack_page(downloads: Mapping[str, bytes], has_format_page: bool) -> str:
    b = [
        front_matter({"title": "Rule pack download", "search": {"boost": BOOST_GUIDE}}),
        "# Rule pack\n",
        "The rule pack is every entry's signals and match rule as one JSON file, for tools that "
        "are not this Python package: log monitors, CI bots, IDE plugins, a cluster's log "
        "pipeline. The regexes are RE2-compatible, so any consumer runs them in linear time. "
        "`denpex-kb match` reads the very same file.\n",
    ]
    if has_format_page:
        b.append(f"The format is specified on [Rule pack format]({RULE_PACK_FORMAT}).\n")
    b.append("## Download { #download }\n")
    if downloads:
        b.append("| File | Size | SHA-256 |")
        b.append("|---|---|---|")
        for name in sorted(downloads):
            data = downloads[name]
            digest = hashlib.sha256(data).hexdigest()
            b.append(
                f"| [{PurePosixPath(name).name}]({name}) | {len(data):,} bytes | "
                f"{code_span(digest)} |"
            )
        b.append("")
        b.append(
            "The conformance vectors are logs with the result every consumer must produce: "
            "run them against your implementation.\n"
        )
    else:
        b.append(
            "This build has no rule pack: run `denpex-kb build` (which exports it) rather than "
            "`mkdocs build` alone, or see the format page.\n"
        )
    return "\n".join(b) + "\n"


# --------------------------------------------------------------------------------------------
# The whole hub


# --------------------------------------------------------------------------------------------
# "Diagnose a log": the JavaScript engine (js/denpex-engine/, ES modules) in the hub

DIAGNOSE_PAGE = "diagnose.md"


def _js_engine_dir() -> Path:
    """js/denpex-engine of the checkout, or its copy in an installed wheel (denpex_kb/bundle.py)."""
    from .bundle import locate

    found = locate()
    return found.js_engine_dir if found else Path(__file__).resolve().parent / "_missing-js"


JS_ENGINE_DIR = _js_engine_dir()
# Classic scripts (file:// forbids ES-module scripts and fetch): the pack as data, the engine as
# one factory function whose source the page also turns into a Blob worker.
RULEPACK_SCRIPT = "assets/denpex/rulepack.js"
ENGINE_SCRIPT = "assets/denpex/engine.js"
ENGINE_MODULES = "assets/denpex/engine"  # the ES modules themselves, for other tools

_IMPORT = re.compile(r'^import \{([^}]*)\} from "\./([a-z0-9-]+\.js)";$')
_REEXPORT = re.compile(r'^export \{([^}]*)\} from "\./([a-z0-9-]+\.js)";$')
_EXPORT_LIST = re.compile(r"^export \{([^}]*)\};$")
_EXPORT_DECL = re.compile(r"^export (?:async )?(?:function|class|const|let) ([A-Za-z_$][\w$]*)")


def _names(spec: str) -> list[tuple[str, str]]:
    """`a, b as c` -> [(a, a), (b, c)] (imported name, local name)."""
    out = []
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        name, _, alias = part.partition(" as ")
        out.append((name.strip(), (alias or name).strip()))
    return out


def js_engine_bundle(engine_dir: Path = JS_ENGINE_DIR) -> str:
    """The ES modules of the JavaScript engine as one classic script: a function
    `denpexEngineFactory()` that evaluates every module in its own scope (imports resolved in
    dependency order) and returns index.js's exports, then `self.DenpexEngine = ...`.

    Only the import/export forms the engine uses are accepted (single-line `import {..} from
    "./x.js"`, `export function|class|const`, `export {..}` and `export {..} from "./x.js"`);
    anything else is an error, so the bundle cannot silently differ from the modules."""
    sources = {p.name: p.read_text(encoding="utf-8") for p in sorted(engine_dir.glob("*.js"))}
    if "index.js" not in sources:
        raise FileNotFoundError(f"{engine_dir}/index.js")
    deps: dict[str, list[str]] = {}
    bodies: dict[str, str] = {}
    for name, text in sources.items():
        body: list[str] = []
        exports: list[tuple[str, str]] = []  # (exported name, local name)
        deps[name] = []
        for line in text.split("\n"):
            if line.startswith("import "):
                m = _IMPORT.match(line)
                if m is None:
                    raise ValueError(f"{name}: unsupported import: {line}")
                deps[name].append(m.group(2))
                binds = ", ".join(f"{a}: {b}" if a != b else a for a, b in _names(m.group(1)))
                body.append(f'const {{ {binds} }} = __m["{m.group(2)}"];')
            elif line.startswith("export "):
                if m := _REEXPORT.match(line):
                    deps[name].append(m.group(2))
                    for a, b in _names(m.group(1)):
                        body.append(f'const {b} = __m["{m.group(2)}"].{a};')
                        exports.append((b, b))
                elif m := _EXPORT_LIST.match(line):
                    exports.extend((b, a) for a, b in _names(m.group(1)))
                elif m := _EXPORT_DECL.match(line):
                    exports.append((m.group(1), m.group(1)))
                    body.append(line[len("export ") :])
                else:
                    raise ValueError(f"{name}: unsupported export: {line}")
            else:
                body.append(line)
        ret = ", ".join(f"{e}: {loc}" if e != loc else e for e, loc in exports)
        bodies[name] = (
            f'__m["{name}"] = (function () {{\n"use strict";\n'
            + "\n".join(body)
            + f"\nreturn {{ {ret} }};\n}})();\n"
        )
    order: list[str] = []

    def visit(n: str, stack: tuple[str, ...] = ()) -> None:
        if n in order:
            return
        if n in stack:
            raise ValueError(f"import cycle: {' -> '.join((*stack, n))}")
        if n not in sources:
            raise FileNotFoundError(f"{engine_dir}/{n}")
        for d in deps[n]:
            visit(d, (*stack, n))
        order.append(n)

    visit("index.js")
    return (
        "// Generated by denpex_kb/site.py from js/denpex-engine/ (ES modules, the source);\n"
        "// do not edit. A classic script so that it loads from file:// too.\n"
        "function denpexEngineFactory() {\n"
        "const __m = {};\n" + "".join(bodies[n] for n in order) + 'return __m["index.js"];\n}\n'
        "self.DenpexEngine = denpexEngineFactory();\n"
    )


def rulepack_script(pack_bytes: bytes) -> bytes:
    """The rule pack as a classic script (`self.DENPEX_RULEPACK = {...};`): a page opened from
    file:// cannot fetch a JSON file, but it can load a script."""
    return (
        b"// The rule pack this hub ships (downloads/denpex-rules.json), as a script for file://.\n"
        b"self.DENPEX_RULEPACK = " + pack_bytes.rstrip(b"\n") + b";\n"
    )


def diagnose_page() -> str:
    b = [
        front_matter({"title": "Diagnose a log", "denpex_diagnose": True}),
        "# Diagnose a log\n",
        "Paste a traceback or a whole log, or drop log files (one per rank or per node, `.gz` "
        "too): the knowledge base's rule pack runs **in this page**, in your browser, and "
        "names the root cause (or the hypotheses that remain), the rank that started it, the "
        "collateral errors, the fix and the command that verifies it. Nothing is uploaded: "
        "the page makes no request at all, and works opened from disk.\n",
        '<div id="dx-diagnose" class="dx-diagnose"></div>\n',
        "The same diagnosis from a terminal, for logs on a cluster:\n",
        fence(
            "denpex-kb match train.log        # or a folder of per-rank logs, or - for stdin",
            "bash",
        )
        + "\n",
        "The engine of this page is a JavaScript implementation of the "
        "[rule pack format](rule-pack-format.md), tested against every conformance vector and "
        "against `denpex-kb match` on every test log.\n",
    ]
    return "\n".join(b) + "\n"


def js_engine_files(engine_dir: Path = JS_ENGINE_DIR) -> dict[str, bytes]:
    """The engine's ES modules as static files of the hub (for other tools), and the bundle."""
    files = {f"{ENGINE_MODULES}/{p.name}": p.read_bytes() for p in sorted(engine_dir.glob("*.js"))}
    files[ENGINE_SCRIPT] = js_engine_bundle(engine_dir).encode("utf-8")
    return files


def generate_hub(
    kb: KnowledgeBase,
    *,
    static_pages: Iterable[str] = (),
    downloads: Mapping[str, bytes] | None = None,
) -> Hub:
    """Generate every page of the hub from `kb`.

    static_pages: docs-relative paths of the hand-written pages that exist (they are placed in
    the nav; links to them are only made when they exist). downloads: rule-pack files keyed by
    their path under `downloads/`, linked from the rule-pack page.
    """
    static = set(static_pages)
    downloads = dict(downloads or {})
    has_format = RULE_PACK_FORMAT in static
    has_rulepack = True  # the rule-pack page always exists; it says when the pack is missing
    pages: dict[str, str] = {}
    files: dict[str, bytes] = {}
    for phase in PHASES:
        pages[phase_path(phase)] = phase_page(kb, phase)
    pages["classes.md"] = classes_page(kb)
    pages["tags.md"] = tags_page(kb)
    pages[CATALOGUE_PAGE] = catalogue_page(kb)
    dl = {f"downloads/{name}": data for name, data in sorted(downloads.items())}
    pages["rule-pack.md"] = rule_pack_page(dl, has_format)
    files.update(dl)
    pack_bytes = downloads.get(RULE_PACK_FILE)
    has_diagnose = pack_bytes is not None and (JS_ENGINE_DIR / "index.js").is_file()
    if has_diagnose:
        pages[DIAGNOSE_PAGE] = diagnose_page()
        files[RULEPACK_SCRIPT] = rulepack_script(pack_bytes)
        files.update(js_engine_files())
    pages["index.md"] = home_page(kb, has_rulepack, has_diagnose)
    base = Path(kb.root).resolve().parent
    for e in kb.entries:
        pages[entry_path(e.id)] = entry_page(e, kb)
        src = base / e.source_path if e.source_path else None
        if src is not None and src.is_file():
            files[f"entries/{e.id}.yaml"] = src.read_bytes()
        else:  # pragma: no cover - entries always come from files
            files[f"entries/{e.id}.yaml"] = b""
        for ex in e.examples:
            if len(ex.log.rstrip("\n").split("\n")) > MAX_EXAMPLE_LINES:
                files[example_log_path(e.id, ex.name)] = ex.log.encode("utf-8")

    nav: list[Any] = [{"Home": "index.md"}]
    if has_diagnose:
        nav.append({"Diagnose a log": DIAGNOSE_PAGE})
    phases_nav: list[Any] = []
    for phase in PHASES:
        children: list[Any] = [phase_path(phase)]
        children.extend(entry_path(e.id) for e in kb.by_phase(phase))
        phases_nav.append({PHASE_TITLES[phase]: children})
    nav.append({"Phases": phases_nav})
    nav.append({"By failure class": "classes.md"})
    nav.append({"By tag": "tags.md"})
    nav.append({"Catalogue": CATALOGUE_PAGE})
    using = [{title: page} for title, page in USING_PAGES if page in static]
    if using:
        nav.append({"Use it": using})
    rp: list[Any] = [{"Download": "rule-pack.md"}]
    if has_format:
        rp.append({"Format": RULE_PACK_FORMAT})
    nav.append({"Rule pack": rp})
    if REPORT_FORMAT in static:
        nav.append({"Match report format": REPORT_FORMAT})
    if WRITE_AN_ENTRY in static:
        nav.append({"Write an entry": WRITE_AN_ENTRY})
    excluded = frozenset(
        [phase_path(p) for p in PHASES] + ["classes.md", "tags.md", CATALOGUE_PAGE]
    )
    return Hub(pages=pages, files=files, nav=nav, search_excluded=excluded)


def write_hub(hub: Hub, out_dir: str | Path) -> list[Path]:
    """Write the generated pages and files under out_dir (for other static-site generators).

    Files whose content is unchanged are not rewritten, so a watcher sees no spurious change.
    """
    out = Path(out_dir)
    written: list[Path] = []
    items: list[tuple[str, bytes]] = [(k, v.encode("utf-8")) for k, v in hub.pages.items()]
    items += list(hub.files.items())
    for rel, data in sorted(items):
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.is_file() or target.read_bytes() != data:
            target.write_bytes(data)
        written.append(target)
    return written


# --------------------------------------------------------------------------------------------
# Rule pack for download


RULE_PACK_FILE = "denpex-rules.json"
VECTORS_FILE = "denpex-rules-vectors.json"


def page_url(entry_id: str) -> str:
    """URL of an entry's page relative to the site root (the hub is built without directory
    URLs so that it works from file://). Tools that link into the hub use this."""
    return f"entries/{entry_id}.html"


def rule_pack_downloads(kb: KnowledgeBase) -> dict[str, bytes]:
    """The rule pack and its conformance vectors as {file name: bytes}.

    Built with the same functions as `denpex-kb export-rules`, so the files the hub offers are
    byte-identical to dist/. Returns {} while the exporter is not available.
    """
    try:
        from . import rulepack
    except ImportError:  # pragma: no cover - the exporter ships with the package
        return {}
    needed = ("build_pack", "validate_pack", "dumps", "build_vectors")
    if not all(hasattr(rulepack, name) for name in needed):  # pragma: no cover
        return {}
    pack = rulepack.build_pack(kb)
    rulepack.validate_pack(pack)
    return {
        RULE_PACK_FILE: rulepack.dumps(pack),
        VECTORS_FILE: rulepack.dumps(rulepack.build_vectors(kb, pack)),
    }


# --------------------------------------------------------------------------------------------
# Running MkDocs on the top-level mkdocs.yml (used by `denpex-kb build`)


class SiteBuildError(Exception):
    """The hub did not build; the message says why (warnings are errors: strict mode)."""


def default_config_file() -> Path:
    """The bundled mkdocs.yml: the checkout's, or the copy inside an installed wheel."""
    from .bundle import BundleError, bundle

    try:
        return bundle().mkdocs_config
    except BundleError as exc:
        raise SiteBuildError(str(exc)) from None


def build_site(
    kb_dir: str | Path | list[str | Path] | tuple[str | Path, ...] | None = None,
    site_dir: str | Path | None = None,
    config_file: str | Path | None = None,
) -> Path:
    """Build the hub with MkDocs (strict) exactly as `mkdocs build` would; return the site dir.

    kb_dir overrides `extra.denpex.kb_dir`; site_dir overrides `site_dir` (both default to what
    mkdocs.yml says). Any MkDocs warning fails the build; SiteBuildError carries every message.
    """
    import logging
    import os

    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")
    from mkdocs.commands.build import build
    from mkdocs.config import load_config
    from mkdocs.exceptions import MkDocsException

    bundled = not config_file
    config_file = Path(config_file) if config_file else default_config_file()
    if not config_file.is_file():
        raise SiteBuildError(f"{config_file}: no such file")

    class _Collect(logging.Handler):
        def __init__(self) -> None:
            super().__init__(logging.WARNING)
            self.messages: list[str] = []

        def emit(self, record: logging.LogRecord) -> None:
            msg = record.getMessage().strip()
            if msg and msg not in self.messages:
                self.messages.append(msg)

    logger = logging.getLogger("mkdocs")
    collect = _Collect()
    logger.addHandler(collect)
    overrides: dict[str, Any] = {"strict": True}
    if site_dir is not None:
        overrides["site_dir"] = str(Path(site_dir).resolve())
    if bundled:
        from .bundle import bundle

        if bundle().installed:
            if site_dir is None:  # mkdocs.yml's `site/` would land inside the installed package
                raise SiteBuildError("give the folder to build the hub in (site_dir)")
            # The hooks file by its place in this package (mkdocs.yml names it from the checkout).
            overrides["hooks"] = [str(Path(__file__).with_name("site_hooks.py"))]
    from . import atomic

    try:
        cfg = load_config(config_file=str(config_file), **overrides)
        if isinstance(kb_dir, list | tuple):  # several folders, layered (kb.load_kb)
            cfg.extra.setdefault("denpex", {})["kb_dir"] = [str(Path(k).resolve()) for k in kb_dir]
        elif kb_dir is not None:
            cfg.extra.setdefault("denpex", {})["kb_dir"] = str(Path(kb_dir).resolve())
        # Built aside and renamed into place: a killed or failed build leaves the old hub whole,
        # and two builds of the same hub take turns.
        final = Path(cfg["site_dir"])
        with atomic.lock(final):
            atomic.remove_stale(final)
            tmp = atomic.make_tmp_dir(final)
            try:
                cfg["site_dir"] = str(tmp)
                cfg.plugins.on_startup(command="build", dirty=False)
                try:
                    build(cfg)
                finally:
                    cfg.plugins.on_shutdown()
                atomic.replace_dir(tmp, final)
            finally:
                if tmp.exists():
                    import shutil

                    shutil.rmtree(tmp, ignore_errors=True)
    except MkDocsException as exc:
        detail = "\n".join(collect.messages) or str(exc) or "the hub build failed"
        raise SiteBuildError(detail) from None
    finally:
        logger.removeHandler(collect)
    return final
