"""Step 7, diagnose: from the entries that fired (and the hypotheses that partly fired) to a
verdict, the way an engineer on call reasons.

- facts: each candidate's fact conditions; a veto (or a failed requirement) rules it out, a
  favouring fact counts as one more piece of evidence for it;
- shadowing: of two entries explaining the same line, the one with more evidence wins;
- cause and effect: an entry may explain other entries' messages (`match.explains`); such an
  effect is reported as a consequence of its cause, not as a second root cause;
- verdict: `confident` (one entry, its look-alikes settled), `differential` (several remain:
  ranked, with the commands that tell them apart), `probable` (weak evidence, one hypothesis),
  or `none`.

The rules are specified in docs/rule-pack-format.md ("Diagnosis"); confidence is documented in
docs/report-format.md.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from .evaluate import Firing, Hit
from .facts import Fact, Outcome, check_all


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
    partial: bool = False
    outcomes: list[Outcome] = field(default_factory=list)
    ruled_out: Outcome | None = None
    consequence_of: str | None = None
    unsettled: bool = False  # a required fact is unknown
    co: set[str] = field(default_factory=set)  # entries explaining one of the same lines

    @property
    def id(self) -> str:
        return self.entry["id"]

    @property
    def role(self) -> str:
        return self.entry["role"]

    @property
    def favours(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.effect == "favour" and o.state == "holds"]

    @property
    def matched(self) -> frozenset[str]:
        return frozenset().union(*(f.matched for f in self.firings))


@dataclass
class Diagnosis:
    verdict: str  # confident | differential | probable | none
    root: Candidate | None
    hypotheses: list[Candidate]  # differential or probable, best first
    independent: list[Candidate]  # other confident roots no link explains
    consequences: list[Candidate]
    ruled_out: list[Candidate]
    candidates: list[Candidate]


def score(c: Candidate, sc: dict[str, int]) -> float:
    base = sc["partial_base"] if c.partial else sc["base"]
    s = base + sc["per_signal"] * (len(c.matched) - 1) + sc["fact_favour"] * len(c.favours)
    s = min(s, sc["max"])
    if c.has_versions and not c.unknown_versions:
        s += sc["version_known_bonus"]
    s -= sc["version_unknown_penalty"] * c.unknown_versions
    s = min(max(s, 0), sc["max"])
    if c.shadowed_by:
        s = s * sc["shadowed_factor_percent"] // 100
    return round(s / sc["scale"], 2)


def build_candidates(
    firings: list[Firing], hits: list[Hit], sig_entry: dict[int, set[str]]
) -> list[Candidate]:
    grouped: dict[str, list[Firing]] = defaultdict(list)
    for f in firings:
        grouped[f.entry["id"]].append(f)
    cands: dict[str, Candidate] = {}
    for eid, fs in grouped.items():
        full = [f for f in fs if not f.partial]
        use = full or fs
        ev = sorted(
            {(h.source, h.offset): h for f in use for h in f.evidence}.values(),
            key=lambda h: (h.source, h.offset),
        )
        e = use[0].entry
        cands[eid] = Candidate(
            entry=e,
            firings=use,
            specificity=max(len(f.matched) for f in use),
            unknown_versions=min(f.unknown_conditions for f in use),
            has_versions=bool(e["match"]["versions"]),
            evidence=ev,
            partial=not full,
        )
    for h in hits:
        ids = set().union(*(sig_entry.get(s, set()) for s in h.signals)) if h.signals else set()
        ids &= cands.keys()
        for a in ids:
            cands[a].co |= ids - {a}
    return list(cands.values())


def _apply_facts(c: Candidate, facts: dict[str, list[Fact]]) -> None:
    c.outcomes = check_all(c.entry["match"].get("facts", []), facts)
    for o in c.outcomes:
        if (o.effect == "veto" and o.state == "holds") or (
            o.effect == "require" and o.state == "fails"
        ):
            c.ruled_out = o
            return
        if o.effect == "require" and o.state == "unknown":
            c.unsettled = True
    if c.partial and c.favours:
        c.partial = False  # a favouring fact completes a hypothesis (spec: "Promotion")
    c.specificity = len(c.matched) + len(c.favours)


def _shadow(cands: list[Candidate]) -> None:
    by_id = {c.id: c for c in cands}
    for c in cands:
        c.shadowed_by = None
        if c.role != "root-cause":
            continue
        better = [
            by_id[o]
            for o in c.co
            if o in by_id
            and by_id[o].role == "root-cause"
            and by_id[o].ruled_out is None
            and not by_id[o].partial
            and by_id[o].specificity > c.specificity
        ]
        if better:
            c.shadowed_by = max(better, key=lambda o: (o.specificity, o.id)).id


def _ranks(c: Candidate) -> set[tuple[int | None, str | None]]:
    return {(h.rank, h.host) for h in c.evidence}


def _link(cause: Candidate, effect: Candidate, link: str) -> bool:
    if link == "log":
        return True
    cr = {r for r, _ in _ranks(cause) if r is not None}
    er = {r for r, _ in _ranks(effect) if r is not None}
    if link == "same-rank":
        return bool(cr & er) or not cr or not er
    ch = {h for _, h in _ranks(cause) if h}
    eh = {h for _, h in _ranks(effect) if h}
    return bool(ch & eh) or not ch or not eh


def _consequences(cands: list[Candidate]) -> None:
    by_id = {c.id: c for c in cands}
    for cause in cands:
        if cause.ruled_out is not None or cause.partial:
            continue
        for ex in cause.entry["match"].get("explains", []):
            eff = by_id.get(ex["id"])
            if eff is None or eff is cause or eff.consequence_of or eff.ruled_out is not None:
                continue
            if _link(cause, eff, ex.get("link", "log")):
                eff.consequence_of = cause.id


def order_key(h: Hit, same_source: bool) -> tuple:
    if same_source or h.time is None:
        return (1 if not same_source else 0, h.source, h.offset)
    return (0, h.time, h.source, h.offset)


def earliest(cands: list[Candidate]) -> Candidate | None:
    if not cands:
        return None
    srcs = {h.source for c in cands for h in c.evidence}
    same = len(srcs) == 1
    for c in cands:
        points = [f.point for f in c.firings if f.point is not None] or c.evidence
        c.first = min(points, key=lambda h: order_key(h, same))
    return min(cands, key=lambda c: (order_key(c.first, same), -c.confidence, c.id))


def _related(a: Candidate, b: Candidate) -> bool:
    la = {x["id"] for x in a.entry.get("look_alikes", [])}
    lb = {x["id"] for x in b.entry.get("look_alikes", [])}
    return b.id in a.co or a.id in b.co or b.id in la or a.id in lb


def _rank_hypotheses(cs: list[Candidate]) -> list[Candidate]:
    earliest(cs)
    return sorted(
        cs,
        key=lambda c: (
            -c.specificity,
            -c.confidence,
            (c.first.source, c.first.offset) if c.first else (0, 0),
            c.id,
        ),
    )


def _stand_ins(cands: list[Candidate]) -> list[Candidate]:
    """Collateral entries that fired on a signal they list as `weak`: their line is printed only
    as the consequence of the one failure the entry describes (the destructor of a CPU optimizer
    whose op never loaded), so with no root cause in sight it stands in for the cause the paste
    left out. Spec: docs/rule-pack-format.md, "Hypotheses"."""
    stand = [
        c
        for c in cands
        if c.role == "collateral"
        and not c.partial
        and c.ruled_out is None
        and c.matched & set(c.entry["match"].get("weak", []))
    ]
    return _rank_hypotheses(stand) if stand else []


def diagnose(
    cands: list[Candidate], facts: dict[str, list[Fact]], scoring: dict[str, int]
) -> Diagnosis:
    for c in cands:
        _apply_facts(c, facts)
    _shadow(cands)
    _consequences(cands)
    for c in cands:
        c.confidence = score(c, scoring)
    threshold = scoring["threshold"] / scoring["scale"]
    live = [
        c
        for c in cands
        if c.role == "root-cause" and c.ruled_out is None and c.consequence_of is None
    ]
    fired = [c for c in live if not c.partial and not c.shadowed_by]
    confident = [c for c in fired if c.confidence >= threshold]
    root = earliest([c for c in confident if c.entry["match"].get("fatal", True)])
    root = root or earliest(confident)
    earliest([c for c in cands if c.role == "collateral"])
    ruled = [c for c in cands if c.ruled_out is not None]
    conseq = [c for c in cands if c.consequence_of is not None]
    if root is not None:
        rivals = [
            c
            for c in live
            if c is not root
            and not c.shadowed_by
            and _related(root, c)
            and c.specificity >= root.specificity
        ]
        others = [c for c in confident if c is not root and c not in rivals]
        if rivals:
            hyps = _rank_hypotheses([root, *rivals])
            return Diagnosis("differential", None, hyps, others, conseq, ruled, cands)
        if root.unsettled:
            return Diagnosis("probable", None, [root], others, conseq, ruled, cands)
        return Diagnosis("confident", root, [], others, conseq, ruled, cands)
    pool = [c for c in live if not c.shadowed_by]
    if not pool:
        stand = _stand_ins(cands)
        if stand:
            return Diagnosis("probable", None, stand[:1], [], conseq, ruled, cands)
        return Diagnosis("none", None, [], [], conseq, ruled, cands)
    hyps = _rank_hypotheses(pool)
    top = hyps[0]
    close = [c for c in hyps[1:] if c.specificity >= top.specificity and _related(top, c)]
    if close:
        return Diagnosis("differential", None, [top, *close], [], conseq, ruled, cands)
    return Diagnosis("probable", None, [top], [], conseq, ruled, cands)
