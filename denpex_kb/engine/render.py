"""Step 8, render: the report as text for a terminal and as Markdown (for an issue or a chat),
both from the JSON report that explain() builds."""

from __future__ import annotations

from typing import Any

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
            out.append(f"    {ev['text'].strip()}")
        out.append("\n" + c("FIX", "1"))
        for i, step in enumerate(rc["fix"]["steps"], 1):
            out.append(f"  {i}. {step.strip()}")
        if rc["fix"]["workaround"]:
            out.append(f"  Workaround: {rc['fix']['workaround'].strip()}")
        out.append("\n" + c("VERIFY", "1"))
        out.append("  $ " + rc["verify"]["command"].strip().replace("\n", "\n    "))
        out.append(f"  {rc['verify']['expected'].strip()}")
    if report["collateral"]:
        out.append("\n" + c("COLLATERAL", "1") + " (consequences, not causes)")
        for col in report["collateral"]:
            ranks = f" ranks {_ranges(col['ranks'])}" if col["ranks"] else ""
            out.append(f"  - {col['id']}: {col['count']} line(s){ranks}")
    others = [
        x
        for x in report["candidates"]
        if x["role"] == "root-cause" and (not rc or x["id"] != rc["id"])
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


def render_markdown(report: dict[str, Any]) -> str:
    out: list[str] = []
    rc = report["root_cause"]
    if rc:
        out.append(f"### denpex-kb: {rc['title']}")
        out.append("")
        out.append(
            f"**Root cause:** `{rc['id']}` (confidence {rc['confidence']:.2f}, page `{rc['url']}`)"
        )
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
