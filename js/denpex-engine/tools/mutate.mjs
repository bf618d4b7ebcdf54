// The vector mutation harness: replay the conformance vectors through this engine with each
// deliberate misreading of the spec (../mutation.js) switched on, one at a time, and report
// which of them no vector catches.
//   node mutate.mjs PACK.json VECTORS.json [--only a,b] [--jobs N]
// Prints one JSON object: {baseline, mutations: [{name, rule, caught, crashed, failures,
// example}], survivors}; exit 1 when the unmutated engine fails a vector or a mutation survives.

import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { MUTATIONS } from "../mutation.js";

const args = process.argv.slice(2);
const opt = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args.splice(i, 2)[1] : null;
};
const only = opt("--only");
const jobs = Math.max(1, parseInt(opt("--jobs") || "2", 10));
const [packPath, vecPath] = args;
const conformance = fileURLToPath(new URL("./conformance.mjs", import.meta.url));

function replay(mutation) {
  return new Promise((resolve) => {
    const env = { ...process.env };
    delete env.DENPEX_MUTATION;
    if (mutation) env.DENPEX_MUTATION = mutation;
    const child = spawn(process.execPath, [conformance, packPath, vecPath], { env });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.on("close", (code) => {
      let parsed = null;
      try {
        parsed = JSON.parse(out);
      } catch {
        parsed = null;
      }
      resolve({ code, parsed, err: err.slice(-2000) });
    });
  });
}

const baseline = await replay(null);
const names = only ? only.split(",") : Object.keys(MUTATIONS);
for (const n of names) if (!(n in MUTATIONS)) throw new Error(`unknown mutation ${n}`);
const results = new Array(names.length);
let next = 0;
async function worker() {
  while (next < names.length) {
    const i = next++;
    const name = names[i];
    const r = await replay(name);
    const failures = r.parsed ? r.parsed.failures : [];
    const crashed = r.parsed === null;
    const f = failures[0];
    results[i] = {
      name,
      rule: MUTATIONS[name],
      caught: crashed ? r.code !== 0 : failures.length > 0,
      crashed,
      failures: failures.length,
      example: crashed ? r.err.split("\n").filter(Boolean).slice(-1)[0] || null : f ? `${f.name}: ${f.problems[0]}` : null,
    };
  }
}
await Promise.all(Array.from({ length: Math.min(jobs, names.length) }, worker));
const survivors = results.filter((r) => !r.caught).map((r) => r.name);
const base = baseline.parsed ? baseline.parsed.failures : [{ name: "(baseline)", problems: [baseline.err] }];
console.log(JSON.stringify({ baseline: { failures: base }, mutations: results, survivors }, null, 1));
process.exit(base.length || survivors.length ? 1 : 0);
