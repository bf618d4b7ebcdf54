// Step 8, explain: the JSON report (the shape of `denpex-kb match --format json`, see
// docs/report-format.md) from the diagnosis. Mirrors denpex_kb/engine/explain.py.

import { earliest, minBy, orderKey, sortBy } from "./diagnose.js";
import { cpLength, cpSlice, cpTail, pyStrip } from "./normalise.js";
import { MUTATION } from "./mutation.js";

export const EVIDENCE_TEXT_MAX = 2000;
export const MAX_EVIDENCE = 12;

function ev(h, names) {
  let text = h.text;
  if (text.length > EVIDENCE_TEXT_MAX && cpLength(text) > EVIDENCE_TEXT_MAX) {
    const half = EVIDENCE_TEXT_MAX / 2;
    text = `${cpSlice(text, half)} … ${cpTail(text, half)}`;
  }
  return {
    file: names[h.source],
    line: h.line,
    rank: h.rank,
    host: h.host,
    text,
    rank_via: h.rank !== null && h.rankVia !== undefined ? h.rankVia : null,
  };
}

const isFor = (o) => o.state === "holds" && (o.effect === "favour" || o.effect === "require");
const isAgainst = (o) => (o.state === "holds" && o.effect === "veto") || (o.state === "fails" && o.effect === "require");

function outcomeJson(o, names) {
  return {
    fact: o.condition.fact,
    effect: o.effect,
    state: o.state,
    tell: o.condition.tell || "",
    lines: o.records.slice(0, 4).map((f) => ({ file: names[f.source], line: f.line, rank: f.rank, text: f.text })),
  };
}

function numSort(a, b) {
  return a - b;
}

export function candJson(c, names) {
  const e = c.entry;
  const matched = new Set();
  for (const f of c.firings) for (const m of f.matched) matched.add(m);
  return {
    id: e.id,
    title: e.title,
    role: e.role,
    confidence: c.confidence,
    url: e.page,
    phase: e.phase,
    severity: e.severity,
    summary: e.summary,
    fix: { steps: e.fix.steps, workaround: e.fix.workaround },
    verify: { command: e.verify.command, expected: e.verify.expected },
    matched_signals: [...matched].sort(),
    versions_checked: c.unknownVersions ? "unknown" : "ok",
    shadowed_by: c.shadowedBy,
    hypothesis: c.partial,
    specificity: c.specificity,
    ranks: [...new Set(c.evidence.map((h) => h.rank).filter((r) => r !== null))].sort(numSort),
    evidence: c.evidence.slice(0, MUTATION === "evidence-no-cap" ? Infinity : MAX_EVIDENCE).map((h) => ev(h, names)),
    facts_for: c.outcomes.filter(isFor).map((o) => outcomeJson(o, names)),
    facts_against: c.outcomes.filter(isAgainst).map((o) => outcomeJson(o, names)),
    facts_unknown: c.outcomes.filter((o) => o.state === "unknown").map((o) => outcomeJson(o, names)),
    caused_by: c.consequenceOf,
  };
}

function readOnlyChecks(c) {
  return (c.entry.checklist || [])
    .filter((i) => i.read_only)
    .map((i) => ({ entry: c.id, check: i.check, command: i.command, shows: i.shows }));
}

function tellApart(hyps) {
  const seen = new Set();
  const out = [];
  for (const c of hyps) {
    for (const item of readOnlyChecks(c).slice(0, 3)) {
      if (!seen.has(item.command)) {
        seen.add(item.command);
        out.push(item);
      }
    }
  }
  return out;
}

function tells(hyps) {
  const ids = new Set(hyps.map((c) => c.id));
  return hyps.flatMap((c) =>
    (c.entry.look_alikes || []).filter((la) => ids.has(la.id)).map((la) => ({ entry: c.id, versus: la.id, tell: la.tell })),
  );
}

function itemJson(i) {
  return { rank: i.rank, local_rank: i.local_rank, host: i.host, exitcode: i.exitcode, signal: i.signal, time: i.time };
}

function slowRankNote(rank) {
  return (
    `Rank ${rank} reported no timeout while every other rank timed out waiting for it: rank ` +
    `${rank} is the slow rank, still busy (tokenising, loading, writing a checkpoint) or ` +
    `stuck outside the collective the others were in, unless it died without output (no ` +
    `kill is recorded here). Read its last lines before the timeouts; raise the timeout ` +
    `(deepspeed.init_distributed(timeout=...) or the Trainer's ddp_timeout) or move the ` +
    `slow work before init or onto every rank.`
  );
}

export function explain(diag, summary, names, worldSize, seenRanks, unexplained) {
  unexplained = unexplained || [];
  const candidates = diag.candidates;
  const root = diag.root;
  const lead = diag.hypotheses.length ? diag.hypotheses[0] : null;
  const notes = [];
  // A collateral entry standing in as the probable cause is reported as that, not twice.
  const collateral = candidates.filter((c) => c.role === "collateral" && !diag.hypotheses.includes(c));
  earliest(candidates.filter((c) => c.role === "root-cause" && c.first === null));

  const ordered = root ? [root] : [...diag.hypotheses];
  const rest = sortBy(
    candidates.filter((c) => !ordered.includes(c)),
    (c) => [
      c.role !== "root-cause" ? 1 : 0,
      c.shadowedBy !== null ? 1 : 0,
      -c.confidence,
      ...(c.first ? [c.first.source, c.first.offset] : [0, 0]),
      c.id,
    ],
  );
  ordered.push(...rest);

  const roots = summary.rootCauses;
  const elasticRoot = roots.length ? roots[0] : null;
  let initRank = null;
  let initHost = null;
  let basis = null;
  if (root !== null) {
    const first = MUTATION === "init-first-evidence" ? root.evidence[0] : root.first;
    initRank = first.rank;
    initHost = first.host;
    if (initRank === null) {
      const before = root.evidence.filter(
        (h) => h.rank !== null && (h.source < first.source || (h.source === first.source && h.offset <= first.offset)),
      );
      if (before.length) {
        const b = before[before.length - 1];
        initRank = b.rank;
        initHost = b.host || initHost;
      }
    }
    basis = "earliest-root-cause-evidence";
    if ((initRank === null || MUTATION === "init-elastic-over-evidence") && elasticRoot !== null && elasticRoot.rank !== null) {
      initRank = elasticRoot.rank;
      initHost = elasticRoot.host;
      basis = "torchelastic-first-observed-failure";
    }
    for (const other of diag.independent) {
      if (other !== root) {
        const r = other.first ? other.first.rank : null;
        notes.push(`Another root-cause failure, probably independent: ${other.id}${r !== null ? ` on rank ${r}` : ""}.`);
      }
    }
  } else {
    const harmless = collateral.filter((c) => c.entry.match.fatal === false);
    if (collateral.length && harmless.length === collateral.length && !unexplained.length && !lead) {
      notes.push(
        `Only lines that are harmless on their own were recognised (${collateral.map((c) => c.id).join(", ")}): ` +
          "nothing in this log shows a failure. If the run did fail, its error is not in what was pasted.",
      );
    } else if (collateral.length) {
      notes.push(
        `No root-cause entry matched: only collateral errors (${collateral.map((c) => c.id).join(", ")}` +
          (unexplained.length
            ? "). The error that started it is one the knowledge base does not know (see the unrecognised errors)."
            : "). The initiating rank's own error is not in the knowledge base, or it printed none: it was slow or " +
              "hung (the others timed out waiting for it), it was killed before it could print, or its log is not " +
              "included."),
      );
    }
    const killed = summary.items.filter((i) => i.rank !== null && (i.signal === "SIGKILL" || i.exitcode === -9) && MUTATION !== "init-sigkill-ignored");
    if (killed.length) {
      const k = minBy(killed, (i) => [i.section !== "root_cause" ? 1 : 0, i.line]);
      initRank = k.rank;
      initHost = k.host;
      basis = "sigkill-in-torchelastic-summary";
      notes.push(
        `Rank ${k.rank}${k.host ? ` on ${k.host}` : ""} was killed by SIGKILL (exitcode -9): it left no ` +
          "traceback; it is the likely initiator.",
      );
    }
    const reporting = new Set();
    for (const c of collateral) {
      for (const h of c.evidence) if (h.rank !== null) reporting.add(h.rank);
      for (const f of c.firings) for (const h of f.evidence) if (h.rank !== null) reporting.add(h.rank);
    }
    const all = new Set([...seenRanks, ...reporting]);
    const known = worldSize || (all.size ? Math.max(...all) + 1 : 0);
    const raised = new Set(unexplained.map((h) => h.rank).filter((r) => r !== null));
    if (collateral.length && reporting.size && known) {
      const absent = [];
      for (let r = 0; r < known; r++) if (!reporting.has(r) && !raised.has(r)) absent.push(r);
      if (absent.length && absent.length < known) {
        notes.push(
          `Ranks absent from the collateral reports (their own output is missing): ${absent.slice(0, 64).join(", ")}` +
            `${absent.length > 64 ? " ..." : ""}.`,
        );
        if (initRank === null && absent.length === 1 && MUTATION !== "init-absent-ignored") {
          initRank = absent[0];
          basis = "absent-from-collateral-reports";
          if (!killed.length) notes.push(slowRankNote(absent[0]));
        }
      }
    }
    if (unexplained.length) {
      const same = new Set(unexplained.map((u) => u.source)).size === 1;
      const first = minBy(unexplained, (h) => orderKey(h, same));
      const where = first.rank !== null ? `rank ${first.rank}` : names[first.source];
      notes.push(
        `The earliest error no entry recognises is on ${where}: ${cpSlice(pyStrip(first.text), 300)} ` +
          `(${names[first.source]}:${first.line}). It is probably where the failure started; see the related entries, if any.`,
      );
      if ((basis === null || (basis === "absent-from-collateral-reports" && MUTATION !== "init-absent-over-unrecognised")) && first.rank !== null) {
        initRank = first.rank;
        initHost = first.host;
        basis = "earliest-unrecognised-error";
      }
    }
    if (basis === null && lead !== null && lead.first !== null && MUTATION !== "init-hypothesis-ignored") {
      const ranked = lead.evidence.filter((h) => h.rank !== null);
      if (lead.first.rank !== null || ranked.length) {
        const h = lead.first.rank !== null ? lead.first : ranked[0];
        initRank = h.rank;
        initHost = h.host;
        basis = "earliest-hypothesis-evidence";
      }
    }
    if (elasticRoot !== null && elasticRoot.rank !== null && basis === null) {
      initRank = elasticRoot.rank;
      initHost = elasticRoot.host;
      basis = "torchelastic-first-observed-failure";
    }
  }
  if (elasticRoot !== null && elasticRoot.rank !== null && initRank !== null && elasticRoot.rank !== initRank) {
    notes.push(
      `torchelastic's summary names rank ${elasticRoot.rank} as the first observed failure; that is when the ` +
        `agent noticed an exit, not when the failure began. The evidence points at rank ${initRank} (${basis}).`,
    );
  }
  const collJson = sortBy(collateral, (c) => [c.id]).map((c) => {
    const ranks = new Set();
    const lines = new Set();
    for (const f of c.firings) {
      for (const h of f.evidence) {
        if (h.rank !== null) ranks.add(h.rank);
        lines.add(`${h.source}:${h.offset}`);
      }
    }
    return { id: c.id, title: c.entry.title, ranks: [...ranks].sort(numSort), count: lines.size };
  });
  const hyps = diag.hypotheses.map((c) => candJson(c, names));
  const sameU = new Set(unexplained.map((u) => u.source)).size === 1;
  return {
    verdict: diag.verdict,
    root_cause: diag.root ? candJson(diag.root, names) : null,
    differential: diag.verdict === "differential" ? hyps : [],
    probable: diag.verdict === "probable" ? hyps : [],
    tell_apart: tellApart(diag.hypotheses),
    tells: tells(diag.hypotheses),
    confirm: diag.verdict === "probable" ? tellApart(diag.hypotheses.slice(0, 1)) : [],
    consequences: diag.consequences.map((c) => candJson(c, names)),
    ruled_out: diag.ruledOut.map((c) => candJson(c, names)),
    candidates: ordered.map((c) => candJson(c, names)),
    initiating_rank: initRank,
    initiating_host: initHost,
    initiating_basis: basis,
    collateral: collJson,
    torchelastic: summary.items.length
      ? {
          root_cause: elasticRoot ? itemJson(elasticRoot) : null,
          failures: summary.items.filter((i) => i.section === "failures").map(itemJson),
        }
      : null,
    unrecognised_errors: diag.root === null ? sortBy(unexplained, (h) => orderKey(h, sameU)).map((h) => ev(h, names)) : [],
    notes,
    probable_basis: diag.verdict === "probable" ? "rules" : null,
  };
}
