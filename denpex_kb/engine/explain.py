"""Step 8, explain: the JSON report from the diagnosis (engine/diagnose.py): the verdict and its
hypotheses, the initiating rank, collateral and consequences, the commands that settle a
differential. Rendering as text or Markdown is engine/render.py."""

from __future__ import annotations

from typing import Any

from .attribute import ElasticSummary
from .diagnose import Candidate, Diagnosis, earliest, order_key
from .evaluate import Hit
from .facts import Outcome

EVIDENCE_TEXT_MAX = 2000
MAX_EVIDENCE = 12


def _ev(h: Hit, names: list[str]) -> dict[str, Any]:
    text = h.text
    if len(text) > EVIDENCE_TEXT_MAX:
        half = EVIDENCE_TEXT_MAX // 2
        text = text[:half] + " … " + text[-half:]
    return {
        "file": names[h.source],
        "line": h.line,
        "rank": h.rank,
        "host": h.host,
        "text": text,
        "rank_via": h.rank_via if h.rank is not None else None,
    }


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
        "verify": {"command": e["verify"]["command"], "expected": e["verify"]["expected"]},
        "matched_signals": sorted(set().union(*(f.matched for f in c.firings))),
        "versions_checked": "unknown" if c.unknown_versions else "ok",
        "shadowed_by": c.shadowed_by,
        "hypothesis": c.partial,
        "specificity": c.specificity,
        "ranks": ranks,
        "evidence": [_ev(h, names) for h in c.evidence[:MAX_EVIDENCE]],
        "facts_for": [_outcome_json(o, names) for o in c.outcomes if _for(o)],
        "facts_against": [_outcome_json(o, names) for o in c.outcomes if _against(o)],
        "facts_unknown": [_outcome_json(o, names) for o in c.outcomes if o.state == "unknown"],
        "caused_by": c.consequence_of,
    }


def entry_json(
    entry: dict[str, Any], confidence: float, evidence: list[dict[str, Any]]
) -> dict[str, Any]:
    """A candidate for an entry that no rule fired (a text-index suggestion promoted to a
    probable cause): the same shape, with the error lines it was matched on as evidence."""
    return {
        "id": entry["id"],
        "title": entry["title"],
        "role": entry["role"],
        "confidence": confidence,
        "url": entry["page"],
        "phase": entry["phase"],
        "severity": entry["severity"],
        "summary": entry["summary"],
        "fix": {"steps": entry["fix"]["steps"], "workaround": entry["fix"]["workaround"]},
        "verify": {"command": entry["verify"]["command"], "expected": entry["verify"]["expected"]},
        "matched_signals": [],
        "versions_checked": "unknown",
        "shadowed_by": None,
        "hypothesis": True,
        "specificity": 0,
        "ranks": sorted({e["rank"] for e in evidence if e["rank"] is not None}),
        "evidence": evidence,
        "facts_for": [],
        "facts_against": [],
        "facts_unknown": [],
        "caused_by": None,
    }


def _for(o: Outcome) -> bool:
    return (
        o.state == "holds" and o.effect == "favour" or o.state == "holds" and o.effect == "require"
    )


def _against(o: Outcome) -> bool:
    return o.state == "holds" and o.effect == "veto" or o.state == "fails" and o.effect == "require"


def _outcome_json(o: Outcome, names: list[str]) -> dict[str, Any]:
    return {
        "fact": o.condition["fact"],
        "effect": o.effect,
        "state": o.state,
        "tell": o.condition.get("tell", ""),
        "lines": [
            {"file": names[f.source], "line": f.line, "rank": f.rank, "text": f.text}
            for f in o.records[:4]
        ],
    }


def _read_only_checks(c: Candidate) -> list[dict[str, Any]]:
    items = c.entry.get("checklist", [])
    return [
        {"entry": c.id, "check": i["check"], "command": i["command"], "shows": i["shows"]}
        for i in items
        if i.get("read_only", False)
    ]


def _tell_apart(hyps: list[Candidate]) -> list[dict[str, Any]]:
    """The read-only checklist commands of every hypothesis (the ones that settle it), each
    once, plus each pair's documented tell."""
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    for c in hyps:
        for item in _read_only_checks(c)[:3]:
            if item["command"] not in seen:
                seen.add(item["command"])
                out.append(item)
    return out


def _tells(hyps: list[Candidate]) -> list[dict[str, str]]:
    ids = {c.id for c in hyps}
    return [
        {"entry": c.id, "versus": la["id"], "tell": la["tell"]}
        for c in hyps
        for la in c.entry.get("look_alikes", [])
        if la["id"] in ids
    ]


def explain(
    diag: Diagnosis,
    summary: ElasticSummary,
    names: list[str],
    world_size: int | None,
    seen_ranks: set[int],
    unexplained: list[Hit] | None = None,
) -> dict[str, Any]:
    candidates = diag.candidates
    # With no confident root, the best hypothesis supplies the rank (its lines are still the
    # earliest evidence of the failure the report names).
    root = diag.root
    lead = diag.hypotheses[0] if diag.hypotheses else None
    notes: list[str] = []
    # A collateral entry standing in as the probable cause is reported as that, not twice.
    collateral = [c for c in candidates if c.role == "collateral" and c not in diag.hypotheses]
    earliest([c for c in candidates if c.role == "root-cause" and c.first is None])

    ordered: list[Candidate] = [root] if root else list(diag.hypotheses)
    rest = sorted(
        (c for c in candidates if c not in ordered),
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
        for other in diag.independent:
            if other is not root:
                r = other.first.rank if other.first else None
                notes.append(
                    f"Another root-cause failure, probably independent: {other.id}"
                    + (f" on rank {r}" if r is not None else "")
                    + "."
                )
    else:
        harmless = [c for c in collateral if not c.entry["match"].get("fatal", True)]
        if collateral and len(harmless) == len(collateral) and not unexplained and not lead:
            notes.append(
                "Only lines that are harmless on their own were recognised ("
                + ", ".join(c.id for c in collateral)
                + "): nothing in this log shows a failure. If the run did fail, its error is "
                "not in what was pasted."
            )
        elif collateral:
            notes.append(
                "No root-cause entry matched: only collateral errors ("
                + ", ".join(c.id for c in collateral)
                + (
                    "). The error that started it is one the knowledge base does not know (see "
                    "the unrecognised errors)."
                    if unexplained
                    else "). The initiating rank's own error is not in the knowledge base, or it "
                    "printed none: it was slow or hung (the others timed out waiting for it), it "
                    "was killed before it could print, or its log is not included."
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
                    if not killed:
                        notes.append(_slow_rank_note(absent[0]))
        if unexplained:
            # An exception that no entry explains is direct evidence of an error on that rank:
            # stronger than an absence or torchelastic's observation order, weaker than a
            # SIGKILL (a killed rank prints nothing, so others' errors may follow from it).
            first = min(
                unexplained, key=lambda h: order_key(h, len({u.source for u in unexplained}) == 1)
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
        if basis is None and lead is not None and lead.first is not None:
            ranked = [h for h in lead.evidence if h.rank is not None]
            if lead.first.rank is not None or ranked:
                h = lead.first if lead.first.rank is not None else ranked[0]
                init_rank, init_host, basis = h.rank, h.host, "earliest-hypothesis-evidence"
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
    hyps = [_cand_json(c, names) for c in diag.hypotheses]
    return {
        "verdict": diag.verdict,
        "root_cause": _cand_json(diag.root, names) if diag.root else None,
        "differential": hyps if diag.verdict == "differential" else [],
        "probable": hyps if diag.verdict == "probable" else [],
        "tell_apart": _tell_apart(diag.hypotheses),
        "tells": _tells(diag.hypotheses),
        "confirm": _tell_apart(diag.hypotheses[:1]) if diag.verdict == "probable" else [],
        "consequences": [_cand_json(c, names) for c in diag.consequences],
        "ruled_out": [_cand_json(c, names) for c in diag.ruled_out],
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
                key=lambda h: order_key(h, len({u.source for u in unexplained}) == 1),
            )
        ]
        if diag.root is None
        else [],
        "notes": notes,
        "probable_basis": "rules" if diag.verdict == "probable" else None,
    }


def _slow_rank_note(rank: int) -> str:
    return (
        f"Rank {rank} reported no timeout while every other rank timed out waiting for it: rank "
        f"{rank} is the slow rank, still busy (tokenising, loading, writing a checkpoint) or "
        f"stuck outside the collective the others were in, unless it died without output (no "
        f"kill is recorded here). Read its last lines before the timeouts; raise the timeout "
        f"(deepspeed.init_distributed(timeout=...) or the Trainer's ddp_timeout) or move the "
        f"slow work before init or onto every rank."
    )


def _item_json(i: Any) -> dict[str, Any]:
    return {
        "rank": i.rank,
        "local_rank": i.local_rank,
        "host": i.host,
        "exitcode": i.exitcode,
        "signal": i.signal,
        "time": i.time,
    }
