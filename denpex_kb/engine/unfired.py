"""Error lines that signals matched although none of their entries fired (a broad signal that
waits for a second one, say): the knowledge base does not explain them either, so they join the
unrecognised errors, marked with the entries that declined them (spec: docs/rule-pack-format.md,
"Initiating rank"; docs/report-format.md, `declined_by`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .evaluate import Hit


def unfired_errors(
    hits: list[Hit],
    sig_entry: dict[int, set[str]],
    fired: set[str],
    room: int,
    content: Callable[[str], str],
    exception_rx: Any,
    salient_rx: Any,
) -> list[Hit]:
    """Of the hit lines, in input order, those none of whose signals' entries is a candidate
    and whose content (`content` strips the prefix) is an exception or other error line: the
    first exception and the first other error per input, rank and host, at most `room`."""
    out: list[Hit] = []
    seen: set[tuple] = set()
    for h in hits:
        if room <= len(out):
            break
        if any(sig_entry.get(s, set()) & fired for s in h.signals):
            continue
        cb = content(h.text).encode("utf-8")
        exc = exception_rx.search(cb) is not None
        if not exc and salient_rx.search(cb) is None:
            continue
        key = (h.source, h.rank, h.host, exc)
        if key not in seen:
            seen.add(key)
            out.append(h)
    return out


def mark_declined(
    report: dict[str, Any], unfired: list[Hit], names: list[str], sig_entry: dict[int, set[str]]
) -> None:
    """`declined_by` on an unrecognised error whose line signals matched: the entries whose
    rules saw it and wanted more (the text index must not hand the line back to them)."""
    if not unfired:
        return
    by_line = {
        (names[h.source], h.line): sorted(
            set().union(*(sig_entry.get(s, set()) for s in h.signals))
        )
        for h in unfired
    }
    for ev in report["unrecognised_errors"]:
        ids = by_line.get((ev["file"], ev["line"]))
        if ids:
            ev["declined_by"] = ids
