// Run the engine over many logs and print a summary of each report (for the agreement test
// against the Python engine, tests/test_js_engine.py).
//   node batch.mjs MANIFEST.json
// MANIFEST: {pack: PATH, cases: [{id, sources: [{name, path} | {name, text}], isFile}], full}
// (full: print whole reports instead of summaries). A
// source given by path is read as bytes and decompressed by magic (gzip) as the engine's
// read step does. Prints {id: summary | {error}}.

import { readFileSync } from "node:fs";
import { Analysis, openSource } from "../index.js";

const manifest = JSON.parse(readFileSync(process.argv[2], "utf8"));
const pack = JSON.parse(readFileSync(manifest.pack, "utf8"));

export function summarise(r) {
  const ids = (xs) => xs.map((c) => c.id);
  return {
    verdict: r.verdict,
    root_cause: r.root_cause ? r.root_cause.id : null,
    differential: ids(r.differential),
    probable: ids(r.probable),
    consequences: ids(r.consequences),
    ruled_out: ids(r.ruled_out),
    candidates: r.candidates.map((c) => [c.id, c.confidence, c.hypothesis, c.shadowed_by, c.ranks]),
    initiating_rank: r.initiating_rank,
    initiating_host: r.initiating_host,
    initiating_basis: r.initiating_basis,
    collateral: r.collateral.map((c) => [c.id, c.ranks, c.count]),
    evidence: r.root_cause ? r.root_cause.evidence.map((e) => [e.file, e.line, e.rank, e.host]) : [],
    unrecognised: r.unrecognised_errors.map((e) => [e.file, e.line, e.rank, e.declined_by ?? null]),
    cut_traceback: r.cut_traceback,
    versions: r.versions,
    facts: Object.fromEntries(Object.entries(r.facts).map(([k, v]) => [k, v.count])),
    notes: r.notes,
    inputs: r.inputs.map((i) => [i.file, i.lines, i.bytes]),
  };
}

const out = {};
for (const c of manifest.cases) {
  try {
    const a = new Analysis(pack);
    for (const s of c.sources) {
      let data = s.text;
      let warnings = [];
      if (s.path !== undefined) {
        const got = await openSource(s.name, new Uint8Array(readFileSync(s.path)));
        data = got.bytes;
        warnings = got.warnings;
      }
      a.addSource(s.name, data, { isFile: c.isFile !== false, warnings });
    }
    const report = a.finish();
    out[c.id] = manifest.full ? report : summarise(report);
  } catch (exc) {
    out[c.id] = { error: String(exc && exc.stack ? exc.stack : exc) };
  }
}
console.log(JSON.stringify(out));
