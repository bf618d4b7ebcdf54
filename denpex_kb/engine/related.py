"""The text-index step: when no rule fired, the errors nobody recognised are looked up in the
full-text index; a clear winner becomes a probable cause (spec: docs/report-format.md,
`probable_basis: text-index`)."""

from __future__ import annotations

import sys
from typing import Any

from .cuttrace import frame_lines, frame_query

# A text-index suggestion becomes a probable cause only when it is a clear winner: at least this
# share of the query's terms (times 0.3, the index's confidence scale) and twice the runner-up.
PROBABLE_MIN_CONFIDENCE = 0.12
PROBABLE_MARGIN = 2.0


def suggest_related(
    report: dict[str, Any],
    kb_dir: str | None = None,
    limit: int = 3,
    pack: dict[str, Any] | None = None,
) -> None:
    """When no rule fired but the log holds errors no entry recognises, add `related`: the
    entries closest to those errors in the full-text index, with a low confidence. With the
    pack, a clear winner becomes the report's probable cause (verdict `probable`, labelled as
    coming from the text index), with the error lines it matched and its confirm commands.
    Builds the per-user index on first use."""
    errors = report.get("unrecognised_errors") or []
    cut = report.get("cut_traceback")
    report["related"] = []
    if report["verdict"] != "none" or not (errors or cut):
        return
    from ..index import related_entries

    try:
        if errors:
            query = "\n".join(e["text"] for e in errors[:10])
            report["related"] = related_entries(query, kb_dir=kb_dir, limit=limit)
        if cut and not report["related"]:
            # No error line to go by: the innermost frames of the cut traceback are the lead.
            errors = frame_lines(cut)
            report["related"] = related_entries(frame_query(cut), kb_dir=kb_dir, limit=limit)
    except Exception as exc:
        # A broken knowledge base only costs the suggestions. KBError comes from denpex_kb.kb,
        # imported only when the index had to be built: importing it here to name the class
        # (JSON Schema, YAML) would cost every run with a cached index a quarter of a second.
        kb_module = sys.modules.get("denpex_kb.kb")
        if kb_module is None or not isinstance(exc, kb_module.KBError):
            raise
        report["related"] = []
    if pack is not None:
        _promote_clear_winner(report, pack, errors)


def _promote_clear_winner(
    report: dict[str, Any], pack: dict[str, Any], errors: list[dict[str, Any]]
) -> None:
    from .explain import entry_json

    related = report["related"]
    if not related:
        return
    best = related[0]
    second = related[1]["confidence"] if len(related) > 1 else 0.0
    if (
        best["confidence"] < PROBABLE_MIN_CONFIDENCE
        or best["confidence"] < PROBABLE_MARGIN * second
    ):
        return
    # An entry whose own rule saw these lines and wanted more evidence keeps its verdict.
    if any(best["id"] in e.get("declined_by", ()) for e in errors):
        return
    entry = next((e for e in pack["entries"] if e["id"] == best["id"]), None)
    if entry is None or entry["role"] != "root-cause":
        return
    cand = entry_json(entry, best["confidence"], errors[:3])
    report["verdict"] = "probable"
    report["probable"] = [cand]
    report["probable_basis"] = "text-index"
    report["confirm"] = [
        {"entry": entry["id"], "check": c["check"], "command": c["command"], "shows": c["shows"]}
        for c in entry.get("checklist", [])
        if c.get("read_only")
    ][:3]
    report["tell_apart"] = report["confirm"]
