"""Step 9, render: the report as text for a terminal and as Markdown (for an issue or a chat),
both from the JSON report that explain() builds."""

from __future__ import annotations

from typing import Any

from ..termsafe import escape_controls

# ------------------------------------------------------------------------------------------


def _where(ev: dict[str, Any]) -> str:
    parts = [f"{ev['file']}:{ev['line']}"]
    if ev["rank"] is not None:
        parts.append(f"rank {ev['rank']}")
    if ev["host"]:
        parts.append(ev["host"])
    return ", ".join(parts)


VIA = {
    "prefix": "its [rankN]/launcher prefix",
    "marker": "a rank marker in the line",
    "file-name": "the file name",
    "elastic-summary": "the torchelastic failure summary",
    "pid": "its process id (launcher spawn lines)",
    "device": "its NCCL host:pid and device",
    "shard": "a per-rank file name in the line",
}


def _paint(color: bool):  # noqa: ANN202
    def c(s: str, code: str) -> str:
        return f"\x1b[{code}m{s}\x1b[0m" if color else s

    return c


def _headline(report: dict[str, Any], c, hub: str | None) -> list[str]:  # noqa: ANN001
    rc = report["root_cause"]
    if rc:
        page = (hub or "") + rc["url"]
        return [
            c("ROOT CAUSE", "1;31") + f"  {rc['title']}",
            f"  entry: {rc['id']}   verdict: {report.get('verdict') or 'confident'}   "
            f"confidence: {rc['confidence']:.2f}   page: {page}",
        ]
    if report.get("differential"):
        return [
            c("DIFFERENTIAL", "1;33") + "  several failures fit this log; it does not say which",
            *_hypotheses_text(report["differential"], hub),
        ]
    if report.get("probable"):
        p = report["probable"][0]
        return [
            c("PROBABLE CAUSE", "1;33") + f"  {p['title']}",
            f"  entry: {p['id']}   confidence: {p['confidence']:.2f} (weak evidence)",
            *(
                f"    {_where(ev)}: {escape_controls(ev['text'].strip()[:200])}"
                for ev in p["evidence"][:3]
            ),
        ]
    return [c("NO CONFIDENT MATCH", "1;33")]


def _initiator(report: dict[str, Any]) -> list[str]:
    if report["initiating_rank"] is None:
        return []
    host = f" on {report['initiating_host']}" if report["initiating_host"] else ""
    return [f"  initiating rank: {report['initiating_rank']}{host} ({report['initiating_basis']})"]


def _root_cause_body(rc: dict[str, Any], c) -> list[str]:  # noqa: ANN001
    out = ["\n" + c("EVIDENCE", "1")]
    for ev in rc["evidence"]:
        via = VIA.get(ev.get("rank_via") or "")
        out.append(f"  {_where(ev)}" + (f"  (rank from {via})" if via else ""))
        out.append(f"    {escape_controls(ev['text'].strip())}")
    if rc.get("facts_for"):
        out.append("\n" + c("FACTS", "1") + " (what else in the log supports it)")
        for f in rc["facts_for"]:
            out.append(f"  - {f['tell']}")
            out += [
                f"      {ln['file']}:{ln['line']}: {escape_controls(ln['text'].strip()[:200])}"
                for ln in f.get("lines", [])[:2]
            ]
    out.append("\n" + c("FIX", "1"))
    out += [f"  {i}. {step.strip()}" for i, step in enumerate(rc["fix"]["steps"], 1)]
    if rc["fix"]["workaround"]:
        out.append(f"  Workaround: {rc['fix']['workaround'].strip()}")
    out.append("\n" + c("VERIFY", "1"))
    out.append("  $ " + rc["verify"]["command"].strip().replace("\n", "\n    "))
    out.append(f"  {rc['verify']['expected'].strip()}")
    return out


def _settle(report: dict[str, Any], c) -> list[str]:  # noqa: ANN001
    if not report.get("tell_apart") or report["root_cause"]:
        return []
    title = "CONFIRM" if report.get("probable") else "TELL THEM APART"
    out = ["\n" + c(title, "1") + " (read-only commands; run them where the job ran)"]
    for t in report["tell_apart"]:
        out.append(f"  $ {t['command'].strip()}")
        out.append(f"    {t['entry']}: {t['shows'].strip()}")
    return out


def _links(report: dict[str, Any], c) -> list[str]:  # noqa: ANN001
    out: list[str] = []
    for con in report.get("consequences") or []:
        if con is report["consequences"][0]:
            out.append("\n" + c("CONSEQUENCES", "1") + " (caused by the root cause)")
        ranks = f" ranks {_ranges(con['ranks'])}" if con["ranks"] else ""
        out.append(f"  - {con['id']}{ranks}: caused by {con['caused_by']}")
    for ro in report.get("ruled_out") or []:
        if ro is report["ruled_out"][0]:
            out.append("\n" + c("RULED OUT", "1") + " (the log's own facts contradict them)")
        why = "; ".join(f["tell"] for f in ro["facts_against"])
        out.append(f"  - {ro['id']}: {why}")
        for f in ro["facts_against"][:1]:
            out += [
                f"      {ln['file']}:{ln['line']}: {ln['text'].strip()}" for ln in f["lines"][:2]
            ]
    if report["collateral"]:
        out.append("\n" + c("COLLATERAL", "1") + " (consequences, not causes)")
        for col in report["collateral"]:
            ranks = f" ranks {_ranges(col['ranks'])}" if col["ranks"] else ""
            out.append(f"  - {col['id']}: {col['count']} line(s){ranks}")
    return out


def _hub_search(hub: str, text: str) -> str:
    """A link that opens the built hub's search on this error line (`?q=`, as a shared search)."""
    from urllib.parse import quote

    return f"{hub}index.html?q={quote(text.strip()[:200], safe='')}"


def _others(report: dict[str, Any], c, hub: str | None = None) -> list[str]:  # noqa: ANN001
    rc = report["root_cause"]
    shown = {x["id"] for x in report.get("differential", []) + report.get("probable", [])}
    shown |= {x["id"] for x in report.get("consequences", []) + report.get("ruled_out", [])}
    others = [
        x
        for x in report["candidates"]
        if x["role"] == "root-cause" and (not rc or x["id"] != rc["id"]) and x["id"] not in shown
    ]
    out = ["\n" + c("OTHER CANDIDATES", "1")] if others else []
    for x in others:
        why = f" (less specific than {x['shadowed_by']})" if x["shadowed_by"] else ""
        out.append(f"  - {x['id']}  confidence {x['confidence']:.2f}{why}")
    if report.get("unrecognised_errors"):
        out.append("\n" + c("UNRECOGNISED ERRORS", "1") + " (no entry explains these)")
        for ev in report["unrecognised_errors"][:8]:
            out.append(f"  {_where(ev)}")
            out.append(f"    {escape_controls(ev['text'].strip()[:300])}")
            if ev.get("declined_by"):
                out.append(f"    {_declined(ev)}")
        if hub:
            first = report["unrecognised_errors"][0]["text"]
            out.append(f"  search the hub for it: {_hub_search(hub, first)}")
    if report.get("related"):
        out.append("\n" + c("RELATED ENTRIES", "1") + " (text similarity: a hint, not a diagnosis)")
        out += [
            f"  - {r['id']}  confidence {r['confidence']:.2f}: {r['title']}"
            for r in report["related"]
        ]
    if report["notes"]:
        out.append("\n" + c("NOTES", "1"))
        out += [f"  - {n}" for n in report["notes"]]
    return out


def _focus_text(focus: dict[str, Any], c) -> list[str]:  # noqa: ANN001
    head = "YES" if focus["standing"] == "root-cause" else focus["standing"].upper()
    out = [
        c(f"ENTRY {focus['entry']}", "1") + f"  {c(head, '1;31' if head == 'YES' else '1;33')}",
        f"  {escape_controls(focus['detail'])}",
    ]
    for ev in focus["evidence"][:3]:
        out.append(f"    {_where(ev)}: {escape_controls(ev['text'].strip()[:200])}")
    for f in focus["facts_against"]:
        for ln in f.get("lines", [])[:1]:
            out.append(
                f"    against: {ln['file']}:{ln['line']}: {escape_controls(ln['text'].strip()[:160])}"
            )
    return out + ["", c("THE WHOLE DIAGNOSIS", "1")]


def render_text(report: dict[str, Any], color: bool = False, hub: str | None = None) -> str:
    """The report for a terminal. `hub`: base URL of a built docs hub (e.g. file:///.../site/)
    to turn the entry's page path into a link that opens. A report with `focus` (`match
    --entry`) starts with that entry's standing."""
    c = _paint(color)
    out = _focus_text(report["focus"], c) if report.get("focus") else []
    out += _headline(report, c, hub) + _initiator(report)
    if report["root_cause"]:
        out += _root_cause_body(report["root_cause"], c)
    out += _settle(report, c) + _links(report, c) + _others(report, c, hub)
    return "\n".join(out) + "\n"


def _hypotheses_text(hyps: list[dict[str, Any]], hub: str | None) -> list[str]:
    out: list[str] = []
    for i, h in enumerate(hyps, 1):
        kind = "hypothesis" if h["hypothesis"] else "fired"
        out.append(f"  {i}. {h['id']}  ({kind}, confidence {h['confidence']:.2f}): {h['title']}")
        for ev in h["evidence"][:2]:
            out.append(f"       for: {_where(ev)}: {escape_controls(ev['text'].strip()[:160])}")
        for f in h["facts_for"]:
            out.append(f"       for: {f['tell']}")
        for f in h["facts_unknown"][:2]:
            out.append(
                f"       unknown: {f['tell']} (the log has no {f['fact']} record that settles it)"
            )
        out.append(f"       page: {(hub or '') + h['url']}")
    return out


def render_markdown(report: dict[str, Any]) -> str:
    out: list[str] = []
    if report.get("focus"):
        f = report["focus"]
        out += [f"**`{f['entry']}`: {f['standing']}**: {f['detail']}", ""]
    rc = report["root_cause"]
    if rc:
        out.append(f"### denpex-kb: {rc['title']}")
        out.append("")
        out.append(
            f"**Root cause:** `{rc['id']}` (confidence {rc['confidence']:.2f}, page `{rc['url']}`)"
        )
    elif report.get("differential") or report.get("probable"):
        kind = "differential" if report.get("differential") else "probable cause"
        out.append(f"### denpex-kb: {kind} (not settled by the log)")
        out.append("")
        for h in report.get("differential") or report.get("probable"):
            out.append(f"- `{h['id']}` (confidence {h['confidence']:.2f}): {h['title']}")
        if report.get("tell_apart"):
            out.append("\n**Tell them apart** (read-only)\n\n```bash")
            out.extend(t["command"].strip() for t in report["tell_apart"])
            out.append("```")
    else:
        out.append("### denpex-kb: no confident match")
    if report["initiating_rank"] is not None:
        host = f" on `{report['initiating_host']}`" if report["initiating_host"] else ""
        out.append("")
        out.append(
            f"**Initiating rank:** {report['initiating_rank']}{host} ({report['initiating_basis']})"
        )
    if rc:
        out.append("\n**Evidence**\n\n```text")
        for ev in rc["evidence"]:
            out.append(f"# {_where(ev)}")
            out.append(ev["text"].rstrip().replace("```", "'''"))
        out.append("```\n\n**Fix**\n")
        for i, step in enumerate(rc["fix"]["steps"], 1):
            out.append(f"{i}. {step.strip()}")
        out.append("\n**Verify**\n\n```bash\n" + rc["verify"]["command"].strip() + "\n```\n")
        out.append(rc["verify"]["expected"].strip())
    if report["collateral"]:
        out.append("\n**Collateral** (consequences, not causes)\n")
        for col in report["collateral"]:
            ranks = f", ranks {_ranges(col['ranks'])}" if col["ranks"] else ""
            out.append(f"- `{col['id']}`: {col['count']} line(s){ranks}")
    if report.get("unrecognised_errors"):
        out.append("\n**Unrecognised errors** (no entry explains these)\n\n```text")
        for ev in report["unrecognised_errors"][:8]:
            out.append(f"# {_where(ev)}")
            out.append(ev["text"].rstrip().replace("```", "'''"))
            if ev.get("declined_by"):
                out.append(f"# {_declined(ev)}")
        out.append("```")
    if report.get("related"):
        out.append("\n**Related entries** (text similarity: a hint, not a diagnosis)\n")
        out.extend(
            f"- `{r['id']}` (confidence {r['confidence']:.2f}): {r['title']}"
            for r in report["related"]
        )
    if report["notes"]:
        out.append("\n**Notes**\n")
        out.extend(f"- {n}" for n in report["notes"])
    return "\n".join(out) + "\n"


def _ranges(ranks: list[int]) -> str:
    if not ranks:
        return ""
    parts = []
    start = prev = ranks[0]
    for r in ranks[1:] + [None]:  # type: ignore[list-item]
        if r is not None and r == prev + 1:
            prev = r
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if r is not None:
            start = prev = r
    return ",".join(parts)


def _declined(ev: dict[str, Any]) -> str:
    ids = ", ".join(ev["declined_by"][:4])
    return (
        f"(a signal of {ids} matches this line; that rule needs more evidence than the log shows)"
    )
