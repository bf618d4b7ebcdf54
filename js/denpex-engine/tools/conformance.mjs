// Replay the conformance vectors (`denpex-kb export-rules --vectors`) through this engine.
//   node conformance.mjs PACK.json VECTORS.json
// Prints one JSON object: {vectors, attribution, failures: [{name, problems}]}; exit 1 on any
// failure. The checks are the ones the vectors' `semantics` and `attribution_semantics` state.

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
console.log(JSON.stringify({ vectors: vec.vectors.length, attribution: (vec.attribution || []).length, failures }, null, 1));
process.exit(failures.length ? 1 : 0);
