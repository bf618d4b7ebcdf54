// Replay the conformance vectors (`denpex-kb export-rules --vectors`) through this engine.
//   node conformance.mjs PACK.json VECTORS.json
// Prints one JSON object: {vectors, attribution, rules, failures: [{name, problems}]}; exit 1
// on any failure. The checks are the ones the vectors' `semantics`, `attribution_semantics` and
// `rules_semantics` state.

import { readFileSync } from "node:fs";
import { attributeAll, diagnose } from "../index.js";

const [packPath, vecPath] = process.argv.slice(2);
const pack = JSON.parse(readFileSync(packPath, "utf8"));
const vec = JSON.parse(readFileSync(vecPath, "utf8"));
const failures = [];
if (vec.rulepack_hash !== pack.content_hash) failures.push({ name: "(file)", problems: ["rulepack_hash differs from the pack's content_hash"] });

export function checkVector(v) {
  const report = diagnose(pack, [{ name: "example.log", data: v.log, isFile: false }]);
  const cands = new Map(report.candidates.filter((c) => !c.hypothesis).map((c) => [c.id, c]));
  const problems = [];
  if (v.expect === "match") {
    if (!cands.has(v.entry)) problems.push("did not fire");
    else {
      const texts = cands.get(v.entry).evidence.map((e) => e.text);
      for (const s of v.evidence) if (!texts.some((t) => t.includes(s))) problems.push(`evidence ${JSON.stringify(s)} not cited`);
    }
  } else if (cands.has(v.entry) && !cands.get(v.entry).shadowed_by) problems.push("fired on a no-match example");
  if (v.expect_top) {
    let top = report.root_cause ? report.root_cause.id : null;
    const hyps = [...report.differential, ...report.probable];
    if (top === null && hyps.length) top = hyps[0].id;
    if (top === null && report.candidates.length) top = report.candidates[0].id;
    if (top !== v.expect_top) problems.push(`top is ${top}, expected ${v.expect_top}`);
  }
  return problems;
}

for (const v of vec.vectors) {
  const problems = checkVector(v);
  if (problems.length) failures.push({ name: v.name, problems });
}
for (const av of vec.attribution || []) {
  const got = attributeAll(pack, av.sources.map((s) => ({ name: s.name, log: s.log })));
  const problems = [];
  for (const ex of av.expect) {
    const rec = (got[ex.source] || [])[ex.line - 1];
    if (!rec) {
      problems.push(`source ${ex.source} line ${ex.line}: no such line`);
      continue;
    }
    for (const [k, want] of Object.entries(ex)) {
      if (k === "source" || k === "line") continue;
      if (rec[k] !== want) problems.push(`source ${ex.source} line ${ex.line}: ${k} is ${JSON.stringify(rec[k])}, expected ${JSON.stringify(want)}`);
    }
  }
  if (problems.length) failures.push({ name: `attribution/${av.name}`, problems });
}
// Rule vectors (`rules`, semantics in `rules_semantics`): the vector's entries replace the
// pack's, the globals stay; the listed members of `expect` are checked.
export function checkRuleVector(rv) {
  const rpack = { ...pack, entries: rv.entries };
  const files = rv.sources.map((s) => ({ name: s.name === null ? "<stream>" : s.name, data: s.log, isFile: s.name !== null }));
  const report = diagnose(rpack, files);
  const exp = rv.expect;
  const problems = [];
  const fired = new Map(report.candidates.filter((c) => !c.hypothesis).map((c) => [c.id, c]));
  const got = {
    verdict: report.verdict,
    root_cause: report.root_cause ? report.root_cause.id : null,
    initiating_rank: report.initiating_rank,
    initiating_host: report.initiating_host,
    initiating_basis: report.initiating_basis,
    consequences: report.consequences.map((c) => c.id).sort(),
    unrecognised_lines: report.unrecognised_errors.map((e) => e.line),
  };
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  for (const [k, have] of Object.entries(got)) if (k in exp && !same(exp[k], have)) problems.push(`${k} is ${JSON.stringify(have)}, expected ${JSON.stringify(exp[k])}`);
  for (const id of exp.fired || []) if (!fired.has(id)) problems.push(`${id} did not fire`);
  for (const id of exp.not_fired || []) if (fired.has(id)) problems.push(`${id} fired`);
  for (const [id, want] of Object.entries(exp.candidates || {})) {
    const c = fired.get(id);
    if (!c) {
      problems.push(`${id} did not fire`);
      continue;
    }
    const have = {
      confidence: c.confidence,
      specificity: c.specificity,
      shadowed_by: c.shadowed_by,
      ranks: c.ranks,
      matched_signals: [...c.matched_signals].sort(),
      evidence_lines: c.evidence.map((e) => e.line),
      evidence_count: c.evidence.length,
    };
    for (const [k, w] of Object.entries(want)) if (!same(have[k], w)) problems.push(`${id}: ${k} is ${JSON.stringify(have[k])}, expected ${JSON.stringify(w)}`);
  }
  return problems;
}

for (const rv of vec.rules || []) {
  let problems;
  try {
    problems = checkRuleVector(rv);
  } catch (e) {
    problems = [`error: ${e && e.message}`];
  }
  if (problems.length) failures.push({ name: `rules/${rv.name}`, problems });
}
console.log(JSON.stringify({ vectors: vec.vectors.length, attribution: (vec.attribution || []).length, rules: (vec.rules || []).length, failures }, null, 1));
process.exit(failures.length ? 1 : 0);
