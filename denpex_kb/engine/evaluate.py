"""Step 5, evaluate: each entry's match rule, per rank (scope rank) or over the log (scope log).

Input: the confirmed hit lines (each with the set of signals it matched), the versions the log
printed. Output: firings, i.e. (entry, scope key, matched signals, evidence lines).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from .version import parse_version, specifier_set


@dataclass
class Hit:
    source: int  # index of the input source
    offset: int  # byte offset of the line in the (decompressed) source
    line: int  # 1-based line number in the source
    rank_line: int  # position among the lines of the same rank (for window_lines)
    key: tuple  # scope key for scope "rank"
    rank: int | None
    host: str | None
    time: float | None  # own timestamp or the last one printed before it in the source
    text: str  # normalised line (prefix kept)
    signals: frozenset[int] = frozenset()  # global signal indices matched
    # How the rank was found: prefix, marker, file-name, elastic-summary, pid, device, shard.
    rank_via: str | None = None
    # The pid/host/device a process line names (attribute.Process), resolved after the scan.
    process: Any = None
    weak_rank: int | None = None  # a rank-specific file name in the line (used last)


@dataclass
class Firing:
    entry: dict[str, Any]
    key: tuple
    matched: frozenset[str]
    evidence: list[Hit]
    versions: str  # "ok", "unknown" (some condition could not be checked)
    unknown_conditions: int = 0
    point: Hit | None = None  # the line at which the rule became satisfied
    partial: bool = False  # a hypothesis: some signals seen, the rule itself not satisfied


@dataclass
class Compiled:
    """Signal bookkeeping: global index <-> (entry index, signal id)."""

    sig_index: dict[tuple[int, str], int] = field(default_factory=dict)


def check_versions(conds: list[dict[str, str]], printed: dict[str, set[str]]) -> tuple[bool, int]:
    """(vetoed, number of unknown conditions). A condition holds if any printed version of the
    package satisfies it; it is unknown when the log prints no parseable version of the package
    (or its specifier is not one this engine reads)."""
    if not any(printed.get(c["package"]) for c in conds):
        return False, len(conds)
    unknown = 0
    for c in conds:
        spec = specifier_set(c["specifier"])
        if spec is None:
            unknown += 1
            continue
        versions = [v for v in (parse_version(s) for s in printed.get(c["package"], ())) if v]
        if not versions:
            unknown += 1
        elif not any(spec(v) for v in versions):
            return True, unknown
    return False, unknown


def _min_window(groups: list[list[tuple[int, Hit]]], limit: int | None) -> list[Hit] | None:
    """Pick one occurrence per group (positions = rank lines) spanning the fewest lines.

    Returns the chosen hits, or None when no choice spans at most `limit` lines."""
    if limit is None:
        return [min((h for _, h in g), key=lambda h: (h.source, h.offset)) for g in groups]
    events = sorted(
        ((pos, gi, h) for gi, g in enumerate(groups) for pos, h in g), key=lambda t: (t[0], t[1])
    )
    need = len(groups)
    count: dict[int, int] = defaultdict(int)
    have = 0
    best: tuple[int, int, int] | None = None
    lo = 0
    for hi in range(len(events)):
        gi = events[hi][1]
        count[gi] += 1
        if count[gi] == 1:
            have += 1
        while have == need:
            span = events[hi][0] - events[lo][0]
            if best is None or span < best[0]:
                best = (span, lo, hi)
            g0 = events[lo][1]
            count[g0] -= 1
            if count[g0] == 0:
                have -= 1
            lo += 1
    if best is None or best[0] > limit:
        return None
    _, lo, hi = best
    chosen: dict[int, Hit] = {}
    for _pos, gi, h in events[lo : hi + 1]:
        chosen.setdefault(gi, h)
    return list(chosen.values())


MAX_EVIDENCE_PER_SIGNAL = 3


def _near_evidence(per_signal: list[list[Hit]]) -> list[Hit]:
    """For each signal: its first line, and the lines closest before the first line of each
    other signal (the frame just above an error, the error just after a banner)."""
    firsts = [occ[0] for occ in per_signal]
    out: list[Hit] = []
    for occ in per_signal:
        chosen = list(occ[:MAX_EVIDENCE_PER_SIGNAL])
        for anchor in firsts:
            before = [h for h in occ if (h.source, h.offset) <= (anchor.source, anchor.offset)]
            near = before[-1] if before else occ[0]
            if near not in chosen:
                chosen.append(near)
        out.extend(chosen)
    return out


def evaluate(
    entries: list[dict[str, Any]],
    sig_index: dict[tuple[int, str], int],
    hits: list[Hit],
    printed: dict[str, set[str]],
) -> list[Firing]:
    by_sig: dict[int, list[Hit]] = defaultdict(list)
    for h in hits:
        for s in h.signals:
            by_sig[s].append(h)
    firings: list[Firing] = []
    for ei, e in enumerate(entries):
        rule = e["match"]
        ids = {s["id"]: sig_index[(ei, s["id"])] for s in e["signals"]}
        weak = rule.get("weak", [])
        if not any(by_sig.get(ids[s]) for s in rule["all"] + rule["any"] + weak):
            continue
        vetoed, unknown = check_versions(rule["versions"], printed)
        if vetoed:
            continue
        before = len(firings)
        scoped: dict[tuple, dict[str, list[Hit]]] = defaultdict(lambda: defaultdict(list))
        for sid, gi in ids.items():
            for h in by_sig.get(gi, ()):
                key = h.key if rule["scope"] == "rank" else ("log",)
                scoped[key][sid].append(h)
        for key, occ in scoped.items():
            if any(occ.get(s) for s in rule["none"]):
                continue
            if any(not occ.get(s) for s in rule["all"]):
                continue
            present_any = [s for s in rule["any"] if occ.get(s)]
            if rule["any"] and not present_any:
                continue
            window = rule["window_lines"] if rule["scope"] == "rank" else None
            groups = [[(h.rank_line, h) for h in occ[s]] for s in rule["all"]]
            if present_any:
                groups.append([(h.rank_line, h) for s in present_any for h in occ[s]])
            chosen = _min_window(groups, window)
            if chosen is None:
                continue
            point = max(chosen, key=lambda h: (h.source, h.offset))
            matched = set(rule["all"])
            if window is None:
                matched.update(present_any)
                evidence = _near_evidence([occ[s] for s in rule["all"] + present_any])
            else:
                lo = min(h.rank_line for h in chosen)
                hi = max(h.rank_line for h in chosen)
                in_win = [
                    s for s in present_any if any(lo <= h.rank_line <= hi for h in occ[s])
                ] or present_any[:1]
                matched.update(in_win)
                evidence = [
                    h for s in rule["all"] + in_win for h in occ[s] if lo <= h.rank_line <= hi
                ][: MAX_EVIDENCE_PER_SIGNAL * max(1, len(matched))] or chosen
            uniq = {(h.source, h.offset): h for h in evidence}
            ev = sorted(uniq.values(), key=lambda h: (h.source, h.offset))
            firings.append(
                Firing(
                    e, key, frozenset(matched), ev, "unknown" if unknown else "ok", unknown, point
                )
            )
        if len(firings) == before and e["role"] == "root-cause":
            partial = _partial(e, ids, by_sig, unknown)
            if partial is not None:
                firings.append(partial)
    return firings


def _partial(
    e: dict[str, Any], ids: dict[str, int], by_sig: dict[int, list[Hit]], unknown: int
) -> Firing | None:
    """A root-cause entry whose rule did not fire but some of whose positive or weak signals were
    seen (and none of its vetoing ones): a hypothesis for the differential, never a diagnosis on
    its own (docs/rule-pack-format.md, "Hypotheses")."""
    rule = e["match"]
    if any(by_sig.get(ids[s]) for s in rule["none"]):
        return None
    seen = [s for s in rule["all"] + rule["any"] + rule.get("weak", []) if by_sig.get(ids[s])]
    if not any(s in rule["any"] or s in rule.get("weak", []) for s in seen):
        return None  # only context signals (an `all` banner, a frame): nothing failed
    evidence = sorted(
        {
            (h.source, h.offset): h for s in seen for h in by_sig[ids[s]][:MAX_EVIDENCE_PER_SIGNAL]
        }.values(),
        key=lambda h: (h.source, h.offset),
    )
    point = evidence[0]
    status = "unknown" if unknown else "ok"
    return Firing(e, ("log",), frozenset(seen), evidence, status, unknown, point, partial=True)
