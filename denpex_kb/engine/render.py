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


def render_text(report: dict[str, Any], color: bool = False, hub: str | None = None) -> str:
    """The report for a terminal. `hub`: base URL of a built docs hub (e.g. file:///.../site/)
    to turn the entry's page path into a link that opens."""

    def c(s: str, code: str) -> str:
        return f"\x1b[{code}m{s}\x1b[0m" if color else s

    out: list[str] = []
    rc = report["root_cause"]
    if rc:
        out.append(c("ROOT CAUSE", "1;31") + f"  {rc['title']}")
        page = (hub or "") + rc["url"]
        out.append(f"  entry: {rc['id']}   confidence: {rc['confidence']:.2f}   page: {page}")
    elif report.get("differential"):
        out.append(
            c("DIFFERENTIAL", "1;33") + "  several failures fit this log; it does not say which"
        )
        out += _hypotheses_text(report["differential"], hub)
    elif report.get("probable"):
        p = report["probable"][0]
        out.append(c("PROBABLE CAUSE", "1;33") + f"  {p['title']}")
        out.append(f"  entry: {p['id']}   confidence: {p['confidence']:.2f} (weak evidence)")
        out += [
            f"    {_where(ev)}: {escape_controls(ev['text'].strip()[:200])}"
            for ev in p["evidence"][:3]
        ]
    else:
        out.append(c("NO CONFIDENT MATCH", "1;33"))
    if report["initiating_rank"] is not None:
        host = f" on {report['initiating_host']}" if report["initiating_host"] else ""
        out.append(
            f"  initiating rank: {report['initiating_rank']}{host} ({report['initiating_basis']})"
        )
    if rc:
        out.append("\n" + c("EVIDENCE", "1"))
        for ev in rc["evidence"]:
            out.append(f"  {_where(ev)}")
            out.append(f"    {escape_controls(ev['text'].strip())}")
        out.append("\n" + c("FIX", "1"))
        for i, step in enumerate(rc["fix"]["steps"], 1):
            out.append(f"  {i}. {step.strip()}")
        if rc["fix"]["workaround"]:
            out.append(f"  Workaround: {rc['fix']['workaround'].strip()}")
        out.append("\n" + c("VERIFY", "1"))
        out.append("  $ " + rc["verify"]["command"].strip().replace("\n", "\n    "))
        out.append(f"  {rc['verify']['expected'].strip()}")
    if report.get("tell_apart") and not rc:
        title = "CONFIRM" if report.get("probable") else "TELL THEM APART"
        out.append("\n" + c(title, "1") + " (read-only commands; run them where the job ran)")
        for t in report["tell_apart"]:
            out.append(f"  $ {t['command'].strip()}")
            out.append(f"    {t['entry']}: {t['shows'].strip()}")
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
    shown = {x["id"] for x in report.get("differential", []) + report.get("probable", [])}
    shown |= {x["id"] for x in report.get("consequences", []) + report.get("ruled_out", [])}
    others = [
        x
        for x in report["candidates"]
        if x["role"] == "root-cause" and (not rc or x["id"] != rc["id"]) and x["id"] not in shown
    ]
    if others:
        out.append("\n" + c("OTHER CANDIDATES", "1"))
        for x in others:
            why = f" (less specific than {x['shadowed_by']})" if x["shadowed_by"] else ""
            out.append(f"  - {x['id']}  confidence {x['confidence']:.2f}{why}")
    if report.get("unrecognised_errors"):
        out.append("\n" + c("UNRECOGNISED ERRORS", "1") + " (no entry knows these)")
        for ev in report["unrecognised_errors"][:8]:
            out.append(f"  {_where(ev)}")
            out.append(f"    {ev['text'].strip()[:300]}")
    if report.get("related"):
        out.append("\n" + c("RELATED ENTRIES", "1") + " (text similarity: a hint, not a diagnosis)")
        for r in report["related"]:
            out.append(f"  - {r['id']}  confidence {r['confidence']:.2f}: {r['title']}")
    if report["notes"]:
        out.append("\n" + c("NOTES", "1"))
        for n in report["notes"]:
            out.append(f"  - {n}")
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
        out.append("\n**Unrecognised errors** (no entry knows these)\n\n```text")
        for ev in report["unrecognised_errors"][:8]:
            out.append(f"# {_where(ev)}")
            out.append(ev["text"].rstrip().replace("```", "'''"))
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
