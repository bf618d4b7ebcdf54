"""One entry's standing in a finished report (`denpex-kb match --entry ID`): does this log show
that failure, and if the diagnosis names another one, why not this? Read from the report only,
so the answer is the diagnosis itself, seen from one entry (spec: docs/report-format.md,
`focus`)."""

from __future__ import annotations

from typing import Any

# Best first: the first that applies is the entry's standing.
STANDINGS = (
    "root-cause",  # the report's confident root cause
    "probable",  # the report's one probable cause
    "differential",  # one of the hypotheses the log does not settle
    "consequence",  # fired, explained by another entry the log shows
    "ruled-out",  # its signals matched, the log's facts rule it out
    "fired",  # fired, but another root cause was chosen (earlier, or it is shadowed)
    "collateral",  # a consequence line (watchdog timeouts, launcher kills...)
    "related",  # only text similarity to an unrecognised error
    "absent",  # nothing in the log matched it
)


def _find(items: list[dict[str, Any]], entry_id: str) -> dict[str, Any] | None:
    return next((c for c in items if c.get("id") == entry_id), None)


def _fired_detail(cand: dict[str, Any], report: dict[str, Any]) -> str:
    if cand.get("shadowed_by"):
        return f"its signals matched, but {cand['shadowed_by']} explains the same lines more specifically"
    rc = report.get("root_cause")
    if rc:
        return f"its signals matched, but {rc['id']} is the root cause (earlier or more specific)"
    return "its signals matched, but the evidence does not make it a cause"


def _standing(report: dict[str, Any], entry_id: str) -> tuple[str, dict[str, Any] | None, str]:
    rc = report.get("root_cause")
    if rc and rc["id"] == entry_id:
        return "root-cause", rc, "the log's root cause"
    cand = _find(report.get("probable") or [], entry_id)
    if cand:
        return "probable", cand, "the log's probable cause (weak evidence; confirm it)"
    hyps = report.get("differential") or []
    cand = _find(hyps, entry_id)
    if cand:
        others = ", ".join(h["id"] for h in hyps if h["id"] != entry_id)
        return "differential", cand, f"fits the log, as do {others}: the log does not say which"
    cand = _find(report.get("consequences") or [], entry_id)
    if cand:
        return "consequence", cand, f"fired as a consequence of {cand.get('caused_by')}"
    cand = _find(report.get("ruled_out") or [], entry_id)
    if cand:
        tells = "; ".join(f["tell"] for f in cand.get("facts_against") or [] if f.get("tell"))
        return (
            "ruled-out",
            cand,
            "its signals matched, but the log's facts rule it out"
            + (f": {tells}" if tells else ""),
        )
    cand = _find(report.get("candidates") or [], entry_id)
    if cand and cand.get("role") != "collateral":
        return "fired", cand, _fired_detail(cand, report)
    coll = _find(report.get("collateral") or [], entry_id)
    if coll or cand:
        return "collateral", cand, "a consequence line, never a cause on its own"
    rel = _find(report.get("related") or [], entry_id)
    if rel:
        return "related", None, f"no signal matched; only text similarity ({rel['confidence']:.2f})"
    return "absent", None, "no signal of this entry matched any line of the log"


def entry_focus(report: dict[str, Any], entry_id: str, title: str = "") -> dict[str, Any]:
    """`{entry, title, standing, detail, evidence, facts_against}`: where `entry_id` stands in
    `report`, with the lines that matched it and the facts against it, if any."""
    standing, cand, detail = _standing(report, entry_id)
    return {
        "entry": entry_id,
        "title": (cand or {}).get("title") or title,
        "standing": standing,
        "detail": detail,
        "evidence": list((cand or {}).get("evidence") or []),
        "facts_against": list((cand or {}).get("facts_against") or []),
    }
