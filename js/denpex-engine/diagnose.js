// Step 7, diagnose: from firings and hypotheses to a verdict. Mirrors
// denpex_kb/engine/diagnose.py; spec: docs/rule-pack-format.md, "Score" and "Diagnosis".

import { checkAll } from "./facts.js";
import { MUTATION } from "./mutation.js";

const byPos = (a, b) => a.source - b.source || a.offset - b.offset;

// Lexicographic comparison of arrays of numbers/strings.
export function cmpTuple(a, b) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    if (a[i] < b[i]) return -1;
    if (a[i] > b[i]) return 1;
  }
  return a.length - b.length;
}

export function minBy(items, key) {
  let best = null;
  let bestKey = null;
  for (const it of items) {
    const k = key(it);
    if (best === null || cmpTuple(k, bestKey) < 0) {
      best = it;
      bestKey = k;
    }
  }
  return best;
}

export function sortBy(items, key) {
  return items
    .map((it, i) => [key(it), i, it])
    .sort((a, b) => cmpTuple(a[0], b[0]) || a[1] - b[1])
    .map((x) => x[2]);
}

function matchedOf(c) {
  const s = new Set();
  for (const f of c.firings) for (const m of f.matched) s.add(m);
  return s;
}

function favours(c) {
  return c.outcomes.filter((o) => o.effect === "favour" && o.state === "holds");
}

export function score(c, sc) {
  const base = c.partial ? sc.partial_base : sc.base;
  let n = matchedOf(c).size;
  if (MUTATION === "all-any-counted-twice") n += [...matchedOf(c)].filter((s) => c.entry.match.all.includes(s) && c.entry.match.any.includes(s)).length;
  let s = base + sc.per_signal * (n - 1) + sc.fact_favour * favours(c).length;
  s = Math.min(s, sc.max);
  if (c.hasVersions && !c.unknownVersions) s += sc.version_known_bonus;
  s -= sc.version_unknown_penalty * c.unknownVersions;
  s = Math.min(Math.max(s, 0), sc.max);
  if (c.shadowedBy) s = Math.floor((s * sc.shadowed_factor_percent) / 100);
  return Math.round((s / sc.scale) * 100) / 100;
}

export function buildCandidates(firings, hits, sigEntry) {
  const grouped = new Map();
  for (const f of firings) {
    let l = grouped.get(f.entry.id);
    if (l === undefined) grouped.set(f.entry.id, (l = []));
    l.push(f);
  }
  const cands = new Map();
  for (const [eid, fs] of grouped) {
    const full = fs.filter((f) => !f.partial);
    const use = full.length ? full : fs;
    const seen = new Map();
    for (const f of use) for (const h of f.evidence) seen.set(`${h.source}:${h.offset}`, h);
    const e = use[0].entry;
    cands.set(eid, {
      entry: e,
      id: e.id,
      role: e.role,
      firings: use,
      specificity: Math.max(...use.map((f) => f.matched.size)),
      unknownVersions: Math.min(...use.map((f) => f.unknown)),
      hasVersions: e.match.versions.length > 0,
      shadowedBy: null,
      confidence: 0,
      first: null,
      evidence: [...seen.values()].sort(byPos),
      partial: !full.length,
      outcomes: [],
      ruledOut: null,
      consequenceOf: null,
      unsettled: false,
      co: new Set(),
    });
  }
  for (const h of hits) {
    const ids = new Set();
    for (const s of h.signals) for (const id of sigEntry.get(s) || []) if (cands.has(id)) ids.add(id);
    for (const a of ids) for (const b of ids) if (a !== b) cands.get(a).co.add(b);
  }
  return [...cands.values()];
}

function applyFacts(c, facts) {
  c.outcomes = checkAll(c.entry.match.facts || [], facts);
  for (const o of c.outcomes) {
    if ((o.effect === "veto" && o.state === "holds") || (o.effect === "require" && o.state === "fails")) {
      c.ruledOut = o;
      return;
    }
    if (o.effect === "require" && o.state === "unknown") c.unsettled = true;
  }
  if (c.partial && favours(c).length) c.partial = false;
  c.specificity = (MUTATION === "specificity-largest-firing" ? Math.max(...c.firings.map((f) => f.matched.size)) : matchedOf(c).size) + favours(c).length;
}

function shadow(cands) {
  const byId = new Map(cands.map((c) => [c.id, c]));
  for (const c of cands) {
    c.shadowedBy = null;
    if (c.role !== "root-cause" || MUTATION === "shadowing-ignored") continue;
    const better = [...c.co]
      .map((o) => byId.get(o))
      .filter((o) => o && o.role === "root-cause" && o.ruledOut === null && !o.partial && o.specificity > c.specificity);
    if (better.length) {
      better.sort((a, b) => b.specificity - a.specificity || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
      c.shadowedBy = better[0].id;
    }
  }
}

function ranksOf(c) {
  return c.evidence.map((h) => [h.rank, h.host]);
}

function link(cause, effect, kind) {
  if (kind === "log") return true;
  if (kind === "same-rank") {
    const cr = new Set(ranksOf(cause).map(([r]) => r).filter((r) => r !== null));
    const er = new Set(ranksOf(effect).map(([r]) => r).filter((r) => r !== null));
    return [...cr].some((r) => er.has(r)) || !cr.size || !er.size;
  }
  const ch = new Set(ranksOf(cause).map(([, h]) => h).filter((h) => h));
  const eh = new Set(ranksOf(effect).map(([, h]) => h).filter((h) => h));
  return [...ch].some((h) => eh.has(h)) || !ch.size || !eh.size;
}

function consequences(cands) {
  const byId = new Map(cands.map((c) => [c.id, c]));
  for (const cause of cands) {
    if (cause.ruledOut !== null || cause.partial || MUTATION === "explains-ignored") continue;
    for (const ex of cause.entry.match.explains || []) {
      const eff = byId.get(ex.id);
      if (!eff || eff === cause || eff.consequenceOf || eff.ruledOut !== null) continue;
      if (link(cause, eff, MUTATION === "explains-link-ignored" ? "log" : ex.link || "log")) eff.consequenceOf = cause.id;
    }
  }
}

// Python's order_key: within one source by position, else by time (lines without one last).
export function orderKey(h, sameSource) {
  if (sameSource || h.time === null) return [sameSource ? 0 : 1, h.source, h.offset];
  return [0, h.time, h.source, h.offset];
}

export function earliest(cands) {
  if (!cands.length) return null;
  const srcs = new Set();
  for (const c of cands) for (const h of c.evidence) srcs.add(h.source);
  const same = srcs.size === 1;
  for (const c of cands) {
    let points = c.firings.map((f) => f.point).filter((p) => p);
    if (!points.length) points = c.evidence;
    c.first = minBy(points, (h) => orderKey(h, same));
  }
  return minBy(cands, (c) => [...orderKey(c.first, same), -c.confidence, c.id]);
}

function related(a, b) {
  const la = new Set((a.entry.look_alikes || []).map((x) => x.id));
  const lb = new Set((b.entry.look_alikes || []).map((x) => x.id));
  return a.co.has(b.id) || b.co.has(a.id) || la.has(b.id) || lb.has(a.id);
}

function rankHypotheses(cs) {
  earliest(cs);
  return sortBy(cs, (c) => [
    -c.specificity,
    -c.confidence,
    ...(c.first ? [c.first.source, c.first.offset] : [0, 0]),
    c.id,
  ]);
}

// Collateral entries that fired on a signal they list as weak: with no root cause in sight
// they stand in for the cause the paste left out (docs/rule-pack-format.md, "Hypotheses").
function standIns(cands) {
  const stand = cands.filter((c) => {
    if (c.role !== "collateral" || c.partial || c.ruledOut !== null) return false;
    const weak = new Set(c.entry.match.weak || []);
    for (const m of matchedOf(c)) if (weak.has(m)) return true;
    return false;
  });
  return stand.length ? rankHypotheses(stand) : [];
}

// facts: Map fact name -> records
export function diagnose(cands, facts, scoring) {
  for (const c of cands) applyFacts(c, facts);
  shadow(cands);
  consequences(cands);
  for (const c of cands) c.confidence = score(c, scoring);
  const threshold = scoring.threshold / scoring.scale;
  const live = cands.filter((c) => c.role === "root-cause" && c.ruledOut === null && c.consequenceOf === null);
  const fired = live.filter((c) => !c.partial && !c.shadowedBy);
  const confident = fired.filter((c) => c.confidence >= threshold || MUTATION === "threshold-ignored");
  let root = earliest(confident.filter((c) => c.entry.match.fatal !== false || MUTATION === "fatal-ignored"));
  root = root || earliest(confident);
  earliest(cands.filter((c) => c.role === "collateral"));
  const ruled = cands.filter((c) => c.ruledOut !== null);
  const conseq = cands.filter((c) => c.consequenceOf !== null);
  const d = (verdict, r, hyps, independent) => ({
    verdict,
    root: r,
    hypotheses: hyps,
    independent,
    consequences: conseq,
    ruledOut: ruled,
    candidates: cands,
  });
  if (root !== null) {
    const rivals = live.filter((c) => c !== root && !c.shadowedBy && related(root, c) && c.specificity >= root.specificity);
    const others = confident.filter((c) => c !== root && !rivals.includes(c));
    if (rivals.length) return d("differential", null, rankHypotheses([root, ...rivals]), others);
    if (root.unsettled) return d("probable", null, [root], others);
    return d("confident", root, [], others);
  }
  const pool = live.filter((c) => !c.shadowedBy);
  if (!pool.length) {
    const stand = standIns(cands);
    return stand.length ? d("probable", null, stand.slice(0, 1), []) : d("none", null, [], []);
  }
  const hyps = rankHypotheses(pool);
  const top = hyps[0];
  const close = hyps.slice(1).filter((c) => c.specificity >= top.specificity && related(top, c));
  if (close.length) return d("differential", null, [top, ...close], []);
  return d("probable", null, [top], []);
}
