"""One entry's page: title, id, badges, summary, the fix at a glance, then the sections of
ENTRY_SECTIONS in order."""

from __future__ import annotations

from typing import Any

from ..model import PHASE_TITLES, Entry, KnowledgeBase
from .glance import fix_at_a_glance, terminal_commands
from .markdown import (
    _badge,
    code_span,
    entry_path,
    fence,
    front_matter,
    html_text,
    indent_block,
    inline,
    link_entry_ids,
    phase_path,
    prose,
    relative,
)

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
    # Not indexed: search ranks the top of the page, and the id is in "Source" already.
    add(f'<p class="dx-id" data-search-exclude>id: <code>{html_text(entry.id)}</code></p>\n')
    add('<p class="dx-badges" markdown>' + " ".join(badges) + "</p>\n")
    add(f'<p class="dx-summary" markdown>{inline_ln(entry.summary)}</p>\n')
    add(fix_at_a_glance(entry))
    add(terminal_commands(entry))

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
            # The other page's words: its own id is a link here, this page's id is not.
            others = {k: v for k, v in targets.items() if k != entry.id}
            tell = link_entry_ids(inline(la.tell), others)
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
