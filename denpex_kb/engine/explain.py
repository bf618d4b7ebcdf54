"""Step 6, explain: rank the firings, separate root cause from collateral, pick the initiating
rank, abstain when nothing is confident, and render the report (JSON, text, Markdown)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ..termsafe import escape_controls
from .attribute import ElasticSummary
from .evaluate import Firing, Hit

EVIDENCE_TEXT_MAX = 2000
MAX_EVIDENCE = 12


@dataclass
class Candidate:
    entry: dict[str, Any]
    firings: list[Firing]
    specificity: int
    unknown_versions: int
    has_versions: bool
    shadowed_by: str | None = None
    confidence: float = 0.0
    first: Hit | None = None
    evidence: list[Hit] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.entry["id"]

    @property
    def role(self) -> str:
        return self.entry["role"]


def _score(c: Candidate, sc: dict[str, int]) -> float:
    s = sc["base"] + sc["per_signal"] * (c.specificity - 1)
    s = min(s, sc["max"])
    if c.has_versions and not c.unknown_versions:
        s += sc["version_known_bonus"]
    s -= sc["version_unknown_penalty"] * c.unknown_versions
    s = min(max(s, 0), sc["max"])
    if c.shadowed_by:
        s = s * sc["shadowed_factor_percent"] // 100
    return round(s / sc["scale"], 2)


def _order(h: Hit, same_source: bool) -> tuple:
    if same_source or h.time is None:
        return (1 if not same_source else 0, h.source, h.offset)
    return (0, h.time, h.source, h.offset)


def build_candidates(
    firings: list[Firing], hits: list[Hit], sig_entry: dict[int, set[str]], scoring: dict[str, int]
) -> list[Candidate]:
    grouped: dict[str, list[Firing]] = defaultdict(list)
    for f in firings:
        grouped[f.entry["id"]].append(f)
    cands: dict[str, Candidate] = {}
    for eid, fs in grouped.items():
        e = fs[0].entry
        ev = sorted(
            {(h.source, h.offset): h for f in fs for h in f.evidence}.values(),
            key=lambda h: (h.source, h.offset),
        )
        cands[eid] = Candidate(
            entry=e,
            firings=fs,
            specificity=max(len(f.matched) for f in fs),
            unknown_versions=min(f.unknown_conditions for f in fs),
            has_versions=bool(e["match"]["versions"]),
            evidence=ev,
        )
    # Shadowing: two root-cause entries explaining the same line; the one with more matched
    # signals (more specific) wins.
    co: dict[str, set[str]] = defaultdict(set)
    for h in hits:
        ids = set().union(*(sig_entry.get(s, set()) for s in h.signals)) if h.signals else set()
        ids &= cands.keys()
        for a in ids:
            co[a] |= ids - {a}
    for c in cands.values():
        if c.role != "root-cause":
            continue
        better = [
            cands[o]
            for o in co[c.id]
            if cands[o].role == "root-cause" and cands[o].specificity > c.specificity
        ]
        if better:
            c.shadowed_by = max(better, key=lambda o: (o.specificity, o.id)).id
    for c in cands.values():
        c.confidence = _score(c, scoring)
    return list(cands.values())


def _earliest(cands: list[Candidate]) -> Candidate | None:
    if not cands:
        return None
    srcs = {h.source for c in cands for h in c.evidence}
    same = len(srcs) == 1
    for c in cands:
        points = [f.point for f in c.firings if f.point is not None] or c.evidence
        c.first = min(points, key=lambda h: _order(h, same))
    return min(cands, key=lambda c: (_order(c.first, same), -c.confidence, c.id))


def _ev(h: Hit, names: list[str]) -> dict[str, Any]:
    text = h.text
    if len(text) > EVIDENCE_TEXT_MAX:
        half = EVIDENCE_TEXT_MAX // 2
        text = text[:half] + " … " + text[-half:]
    return {"file": names[h.source], "line": h.line, "rank": h.rank, "host": h.host, "text": text}


def _cand_json(c: Candidate, names: list[str]) -> dict[str, Any]:
    e = c.entry
    ranks = sorted({h.rank for h in c.evidence if h.rank is not None})
    return {
        "id": e["id"],
        "title": e["title"],
        "role": e["role"],
        "confidence": c.confidence,
        "url": e["page"],
        "phase": e["phase"],
        "severity": e["severity"],
        "summary": e["summary"],
        "fix": {"steps": e["fix"]["steps"], "workaround": e["fix"]["workaround"]},
        "verify": e["verify"],
        "matched_signals": sorted(set().union(*(f.matched for f in c.firings))),
        "versions_checked": "unknown" if c.unknown_versions else "ok",
        "shadowed_by": c.shadowed_by,
        "ranks": ranks,
        "evidence": [_ev(h, names) for h in c.evidence[:MAX_EVIDENCE]],
    }


def explain(
    candidates: list[Candidate],
    summary: ElasticSummary,
    names: list[str],
    scoring: dict[str, int],
    world_size: int | None,
    seen_ranks: set[int],
    unexplained: list[Hit] | None = None,
) -> dict[str, Any]:
    threshold = scoring["threshold"] / scoring["scale"]
    roots = [c for c in candidates if c.role == "root-cause"]
    confident = [c for c in roots if not c.shadowed_by and c.confidence >= threshold]
    # A warning (a skipped resume at start-up, a shrinking loss scale) printed before a crash
    # must not be blamed for it: non-fatal entries are the root cause only when nothing fatal is.
    root = _earliest([c for c in confident if c.entry["match"].get("fatal", True)])
    root = root or _earliest(confident)
    notes: list[str] = []
    collateral = [c for c in candidates if c.role == "collateral"]
    _earliest(collateral)
    _earliest([c for c in roots if c not in confident])

    ordered: list[Candidate] = [root] if root else []
    rest = sorted(
        (c for c in candidates if c is not root),
        key=lambda c: (
            c.role != "root-cause",
            c.shadowed_by is not None,
            -c.confidence,
            (c.first.source, c.first.offset) if c.first else (0, 0),
            c.id,
        ),
    )
    ordered += rest

    elastic_root = summary.root_causes[0] if summary.root_causes else None
    init_rank: int | None = None
    init_host: str | None = None
    basis: str | None = None
    if root is not None:
        first = root.first
        assert first is not None
        init_rank, init_host = first.rank, first.host
        if init_rank is None:  # e.g. a log-scope rule: the closest attributed line before it
            before = [
                h
                for h in root.evidence
                if h.rank is not None and (h.source, h.offset) <= (first.source, first.offset)
            ]
            if before:
                init_rank, init_host = before[-1].rank, before[-1].host or init_host
        basis = "earliest-root-cause-evidence"
        if init_rank is None and elastic_root is not None and elastic_root.rank is not None:
            init_rank, init_host = elastic_root.rank, elastic_root.host
            basis = "torchelastic-first-observed-failure"
        for other in confident:
            if other is not root:
                r = other.first.rank if other.first else None
                notes.append(
                    f"Another root-cause failure, probably independent: {other.id}"
                    + (f" on rank {r}" if r is not None else "")
                    + "."
                )
    else:
        if collateral:
            notes.append(
                "No root-cause entry matched: only collateral errors ("
                + ", ".join(c.id for c in collateral)
                + (
                    "). The error that started it is one the knowledge base does not know (see "
                    "the unrecognised errors)."
                    if unexplained
                    else "). The initiating rank's own error is either not in the knowledge base "
                    "or its output is probably missing: killed by SIGKILL (e.g. the host OOM killer) "
                    "before it could print, or its log is not included."
                )
            )
        killed = [
            i
            for i in summary.items
            if i.rank is not None and (i.signal == "SIGKILL" or i.exitcode == -9)
        ]
        if killed:
            k = min(killed, key=lambda i: (i.section != "root_cause", i.line))
            init_rank, init_host, basis = k.rank, k.host, "sigkill-in-torchelastic-summary"
            notes.append(
                f"Rank {k.rank}"
                + (f" on {k.host}" if k.host else "")
                + " was killed by SIGKILL (exitcode -9): it left no traceback; it is the likely "
                "initiator."
            )
        reporting = {h.rank for c in collateral for h in c.evidence if h.rank is not None}
        reporting |= {
            h.rank for c in collateral for f in c.firings for h in f.evidence if h.rank is not None
        }
        known = world_size or (max(seen_ranks | reporting) + 1 if (seen_ranks | reporting) else 0)
        raised = {h.rank for h in unexplained or [] if h.rank is not None}
        if collateral and reporting and known:
            absent = [r for r in range(known) if r not in reporting and r not in raised]
            if absent and len(absent) < known:
                notes.append(
                    "Ranks absent from the collateral reports (their own output is missing): "
                    + ", ".join(str(r) for r in absent[:64])
                    + (" ..." if len(absent) > 64 else "")
                    + "."
                )
                if init_rank is None and len(absent) == 1:
                    init_rank, basis = absent[0], "absent-from-collateral-reports"
        if unexplained:
            # An exception that no entry explains is direct evidence of an error on that rank:
            # stronger than an absence or torchelastic's observation order, weaker than a
            # SIGKILL (a killed rank prints nothing, so others' errors may follow from it).
            first = min(
                unexplained, key=lambda h: _order(h, len({u.source for u in unexplained}) == 1)
            )
            where = f"rank {first.rank}" if first.rank is not None else names[first.source]
            notes.append(
                f"The earliest error no entry recognises is on {where}: "
                f"{first.text.strip()[:300]} ({names[first.source]}:{first.line}). "
                "It is probably where the failure started; see the related entries, if any."
            )
            if basis in (None, "absent-from-collateral-reports") and first.rank is not None:
                init_rank, init_host = first.rank, first.host
                basis = "earliest-unrecognised-error"
        if elastic_root is not None and elastic_root.rank is not None and basis is None:
            init_rank, init_host = elastic_root.rank, elastic_root.host
            basis = "torchelastic-first-observed-failure"
    if (
        elastic_root is not None
        and elastic_root.rank is not None
        and init_rank is not None
        and elastic_root.rank != init_rank
    ):
        notes.append(
            f"torchelastic's summary names rank {elastic_root.rank} as the first observed "
            f"failure; that is when the agent noticed an exit, not when the failure began. "
            f"The evidence points at rank {init_rank} ({basis})."
        )
    coll_json = []
    for c in sorted(collateral, key=lambda c: c.id):
        ranks = sorted({h.rank for f in c.firings for h in f.evidence if h.rank is not None})
        count = len({(h.source, h.offset) for f in c.firings for h in f.evidence})
        coll_json.append({"id": c.id, "title": c.entry["title"], "ranks": ranks, "count": count})
    return {
        "verdict": "match" if root is not None else "no-match",
        "root_cause": _cand_json(root, names) if root else None,
        "candidates": [_cand_json(c, names) for c in ordered],
        "initiating_rank": init_rank,
        "initiating_host": init_host,
        "initiating_basis": basis,
        "collateral": coll_json,
        "torchelastic": {
            "root_cause": _item_json(elastic_root) if elastic_root else None,
            "failures": [_item_json(i) for i in summary.items if i.section == "failures"],
        }
        if summary.items
        else None,
        "unrecognised_errors": [
            _ev(h, names)
            for h in sorted(
                unexplained or [],
                key=lambda h: _order(h, len({u.source for u in unexplained}) == 1),
            )
        ]
        if root is None
        else [],
        "notes": notes,
    }


def _item_json(i: Any) -> dict[str, Any]:
    return {
        "rank": i.rank,
        "local_rank": i.local_rank,
        "host": i.host,
        "exitcode": i.exitcode,
        "signal": i.signal,
        "time": i.time,
    }


# ------------------------------------------------------------------------------------------
# Rendering
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
            out.append(f"    {escape_controls(ev['text'].strip())}")
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
