// Step 5, evaluate: each entry's match rule, per rank (scope rank) or over the log (scope log).
// Mirrors denpex_kb/engine/evaluate.py; spec: docs/rule-pack-format.md, "How an entry fires"
// and "Hypotheses". Hits: {source, offset, line, rankLine, key, rank, host, time, text,
// signals (global signal indices), rankVia, process, weakRank}.

import { parseVersion, specifierSet } from "./version.js";
import { MUTATION } from "./mutation.js";

export const MAX_EVIDENCE_PER_SIGNAL = 3;

const byPos = (a, b) => a.source - b.source || a.offset - b.offset;

// [vetoed, number of unknown conditions]
export function checkVersions(conds, printed) {
  let unknown = 0;
  for (const c of conds) {
    const spec = specifierSet(c.specifier);
    if (spec === null) {
      unknown++;
      continue;
    }
    const versions = [...(printed.get(c.package) || [])].map(parseVersion).filter((v) => v !== null);
    const ok = MUTATION === "version-prerelease-excluded" ? versions.filter((v) => v.pre === null && v.dev === null) : versions;
    if (!versions.length) {
      if (MUTATION === "version-unknown-fails") return [true, unknown + 1];
      unknown++;
    } else if (!ok.some(spec) && MUTATION !== "version-fail-ignored") return [true, unknown];
  }
  return [false, unknown];
}

// One occurrence per group (positions = rank lines) spanning the fewest lines, or null when no
// choice spans at most `limit` lines.
function minWindow(groups, limit) {
  if (limit === null || limit === undefined) {
    return groups.map((g) => g.map(([, h]) => h).reduce((a, b) => (byPos(b, a) < 0 ? b : a)));
  }
  const events = [];
  groups.forEach((g, gi) => g.forEach(([pos, h]) => events.push([pos, gi, h])));
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const need = groups.length;
  const count = new Map();
  let have = 0;
  let best = null;
  let lo = 0;
  for (let hi = 0; hi < events.length; hi++) {
    const gi = events[hi][1];
    count.set(gi, (count.get(gi) || 0) + 1);
    if (count.get(gi) === 1) have++;
    while (have === need) {
      const span = events[hi][0] - events[lo][0];
      if (best === null || span < best[0]) best = [span, lo, hi];
      const g0 = events[lo][1];
      count.set(g0, count.get(g0) - 1);
      if (count.get(g0) === 0) have--;
      lo++;
    }
  }
  if (best === null || best[0] > limit || (MUTATION === "window-exclusive" && best[0] === limit)) return null;
  const chosen = new Map();
  for (const [, gi, h] of events.slice(best[1], best[2] + 1)) if (!chosen.has(gi)) chosen.set(gi, h);
  return [...chosen.values()];
}

// For each signal: its first lines, and the line closest before the first line of each other.
function nearEvidence(perSignal) {
  const firsts = perSignal.map((occ) => occ[0]);
  const out = [];
  for (const occ of perSignal) {
    if (MUTATION === "evidence-first-only") {
      out.push(occ[0]);
      continue;
    }
    const chosen = occ.slice(0, MAX_EVIDENCE_PER_SIGNAL);
    for (const anchor of firsts) {
      let near = occ[0];
      for (const h of occ) if (byPos(h, anchor) <= 0) near = h;
      if (!chosen.includes(near)) chosen.push(near);
    }
    out.push(...chosen);
  }
  return out;
}

function uniqSorted(hits) {
  const seen = new Map();
  for (const h of hits) seen.set(`${h.source}:${h.offset}`, h);
  return [...seen.values()].sort(byPos);
}

// Firings: {entry, key, matched: Set of signal ids, evidence, versions, unknown, point, partial}
export function evaluate(entries, sigIndex, hits, printed) {
  const bySig = new Map();
  for (const h of hits) {
    for (const s of h.signals) {
      let l = bySig.get(s);
      if (l === undefined) bySig.set(s, (l = []));
      l.push(h);
    }
  }
  const firings = [];
  entries.forEach((e, ei) => {
    const rule = e.match;
    const ids = new Map(e.signals.map((s) => [s.id, sigIndex.get(`${ei}\u0000${s.id}`)]));
    const weak = rule.weak || [];
    const seenSig = (s) => (bySig.get(ids.get(s)) || []).length > 0;
    if (![...rule.all, ...rule.any, ...weak].some(seenSig)) return;
    const [vetoed, unknown] = checkVersions(rule.versions, printed);
    if (vetoed) return;
    const before = firings.length;
    const scoped = new Map();
    const perRank = rule.scope === "rank" ? MUTATION !== "scope-rank-log-wide" : MUTATION === "scope-log-per-rank";
    for (const [sid, gi] of ids) {
      for (const h of bySig.get(gi) || []) {
        const key = perRank ? h.key : "log";
        let occ = scoped.get(key);
        if (occ === undefined) scoped.set(key, (occ = new Map()));
        let l = occ.get(sid);
        if (l === undefined) occ.set(sid, (l = []));
        l.push(h);
      }
    }
    for (const [key, occ] of scoped) {
      const has = (s) => (occ.get(s) || []).length > 0;
      if (MUTATION !== "none-ignored" && rule.none.some(has)) continue;
      if (MUTATION === "none-log-wide" && rule.none.some(seenSig)) continue;
      if (rule.all.some((s) => !has(s))) continue;
      const presentAny = rule.any.filter(has);
      if (rule.any.length && !presentAny.length) continue;
      const window = rule.scope === "rank" && MUTATION !== "window-ignored" ? rule.window_lines : null;
      const pos = MUTATION === "window-file-lines" ? (h) => h.line : (h) => h.rankLine;
      const groups = rule.all.map((s) => occ.get(s).map((h) => [pos(h), h]));
      if (presentAny.length) groups.push(presentAny.flatMap((s) => occ.get(s).map((h) => [pos(h), h])));
      const chosen = minWindow(groups, window);
      if (chosen === null) continue;
      const point = chosen.reduce((a, b) => (MUTATION === "point-earliest-chosen" ? byPos(b, a) < 0 : byPos(b, a) > 0) ? b : a);
      const matched = new Set(rule.all);
      let evidence;
      if (window === null || window === undefined) {
        presentAny.forEach((s) => matched.add(s));
        evidence = nearEvidence([...rule.all, ...presentAny].map((s) => occ.get(s)));
      } else {
        const lo = Math.min(...chosen.map(pos));
        const hi = Math.max(...chosen.map(pos));
        let inWin = presentAny.filter((s) => occ.get(s).some((h) => lo <= pos(h) && pos(h) <= hi));
        if (!inWin.length) inWin = presentAny.slice(0, 1);
        inWin.forEach((s) => matched.add(s));
        evidence = [...rule.all, ...inWin]
          .flatMap((s) => occ.get(s))
          .filter((h) => lo <= pos(h) && pos(h) <= hi)
          .slice(0, MAX_EVIDENCE_PER_SIGNAL * Math.max(1, matched.size));
        if (!evidence.length) evidence = chosen;
      }
      firings.push({
        entry: e,
        key,
        matched,
        evidence: uniqSorted(evidence),
        versions: unknown ? "unknown" : "ok",
        unknown,
        point,
        partial: false,
      });
    }
    if (firings.length === before && e.role === "root-cause") {
      const p = partial(e, ids, bySig, unknown);
      if (p !== null) firings.push(p);
    }
  });
  return firings;
}

// A root-cause entry whose rule did not fire but some of whose positive or weak signals were
// seen (and none of its vetoing ones): a hypothesis.
function partial(e, ids, bySig, unknown) {
  const rule = e.match;
  const weak = rule.weak || [];
  const got = (s) => bySig.get(ids.get(s)) || [];
  if (MUTATION !== "none-ignored" && rule.none.some((s) => got(s).length)) return null;
  const seen = [...rule.all, ...rule.any, ...weak].filter((s) => got(s).length);
  if (MUTATION !== "hypothesis-from-all-only" && !seen.some((s) => rule.any.includes(s) || weak.includes(s))) return null;
  const evidence = uniqSorted(seen.flatMap((s) => got(s).slice(0, MAX_EVIDENCE_PER_SIGNAL)));
  return {
    entry: e,
    key: "log",
    matched: new Set(seen),
    evidence,
    versions: unknown ? "unknown" : "ok",
    unknown,
    point: evidence[0],
    partial: true,
  };
}
