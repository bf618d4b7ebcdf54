"""The hub's own pages: home, one per phase, by failure class, by tag, the catalogue (every entry
in one sortable table) and the rule-pack download page."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import PurePosixPath

from ..model import FAILURE_CLASSES, PHASE_TITLES, PHASES, Entry, KnowledgeBase
from .entry import BOOST_GUIDE, versions_label
from .markdown import (
    _badge,
    code_span,
    entry_path,
    fence,
    front_matter,
    html_text,
    inline,
    phase_path,
    relative,
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
USING_PAGES = (
    ("Command line", "cli.md"),
    ("Python API", "api.md"),
)


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
        front_matter(
            {
                "title": "Catalogue",
                "search": {"exclude": True},
                "denpex_catalogue": True,
                "hide": ["navigation", "toc"],  # the table needs the page's whole width
            }
        ),
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
