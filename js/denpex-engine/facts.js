// Step 4, facts: typed environment evidence from the log (df tables, lsof, config prints,
// CUDA-OOM numbers, paths named by failing calls) and the entries' conditions over it. Mirrors
// denpex_kb/engine/facts.py; spec: docs/rule-pack-format.md, "Facts" and "Fact conditions".

import { compile, search } from "./rules.js";
import { cpSlice } from "./normalise.js";

export const MAX_RECORDS_PER_FACT = 64;
const UNITS = { "": 1, K: 2 ** 10, M: 2 ** 20, G: 2 ** 30, T: 2 ** 40, P: 2 ** 50, E: 2 ** 60 };
const SIZE = /^([0-9][0-9.,]*) ?(?:([KMGTPE])i?B?|B|bytes)?$/u;

export function parseSize(text) {
  const m = SIZE.exec(text.trim());
  if (m === null) return null;
  const raw = m[1].replaceAll(",", "");
  // Python's float(): digits with at most one dot
  if (!/^[0-9]*\.?[0-9]*$/.test(raw) || raw === "." || raw === "") return null;
  const value = Number(raw);
  if (!Number.isFinite(value)) return null;
  return Math.trunc(value * UNITS[m[2] || ""]);
}

function convert(value, kind) {
  if (kind === "int") return /^[0-9]+$/.test(value) ? parseInt(value, 10) : null;
  if (kind === "size") return parseSize(value);
  return value;
}

class Extractor {
  constructor(spec, pattern) {
    this.fact = spec.fact;
    this.types = spec.types || {};
    this.groups = spec.groups || {};
    this.rx = compile(pattern);
  }

  extract(content) {
    const m = search(this.rx, content);
    if (m === null) return null;
    const fields = {};
    for (const [name, gi] of Object.entries(this.groups)) {
      const v = m[gi];
      if (v === undefined) continue;
      const c = convert(v, this.types[name] || "str");
      if (c !== null) fields[name] = c;
    }
    return fields;
  }
}

export class FactCollector {
  constructor(spec) {
    this.tables = spec.tables.map((t) => [new Extractor(t, t.header), new Extractor(t, t.row), t.max_rows]);
    this.lines = spec.lines.map((s) => new Extractor(s, s.pattern));
    this.records = new Map();
    this.counts = new Map();
    this.header = new Map(); // source -> {ti, at, open, rank}
  }

  add(name, fields, si, line, rank, text) {
    this.counts.set(name, (this.counts.get(name) || 0) + 1);
    let recs = this.records.get(name);
    if (recs === undefined) this.records.set(name, (recs = []));
    if (recs.length < MAX_RECORDS_PER_FACT) recs.push({ name, fields, source: si, line, rank, text: cpSlice(text, 500) });
  }

  // Feed every line of a source in order. A table's rows are the lines right after its header
  // that match its row pattern (a table is contiguous: the first line that is not a row ends
  // it), at most max_rows of them. Returns "header", "row", "line" or null.
  observe(si, content, line, rank, prefixRank, text) {
    for (let ti = 0; ti < this.tables.length; ti++) {
      if (search(this.tables[ti][0].rx, content) !== null) {
        this.header.set(si, { ti, at: line, open: true, rank });
        return "header";
      }
    }
    const cur = this.header.get(si);
    if (cur !== undefined && cur.open) {
      const [, row, maxRows] = this.tables[cur.ti];
      if (line - cur.at <= maxRows) {
        const fields = row.extract(content);
        if (fields !== null) {
          this.add(row.fact, fields, si, line, prefixRank !== null ? prefixRank : cur.rank, text);
          return "row";
        }
      }
      cur.open = false;
    }
    let found = null;
    for (const ex of this.lines) {
      const fields = ex.extract(content);
      if (fields !== null) {
        this.add(ex.fact, fields, si, line, rank, text);
        found = "line";
      }
    }
    return found;
  }

  asJson() {
    const out = {};
    for (const name of [...this.records.keys()].sort()) {
      out[name] = {
        count: this.counts.get(name),
        records: this.records.get(name).map((f) => ({ fields: f.fields, source: f.source, line: f.line, rank: f.rank })),
      };
    }
    return out;
  }
}

// ---------------------------------------------------------------------------------------------
// Conditions

function operand(rec, v) {
  if (v !== null && typeof v === "object") {
    const parts = v.sum.map((f) => rec.fields[f]);
    if (parts.some((p) => !Number.isInteger(p))) return null;
    return parts.reduce((a, b) => a + b, 0);
  }
  return v;
}

// true/false, or null when the record lacks what the test needs
function testOne(rec, field, ops) {
  const value = rec.fields[field];
  if (value === undefined || value === null) return null;
  for (const [op, raw] of Object.entries(ops)) {
    let ok;
    if (op === "matches" || op === "not_matches") {
      const found = search(compile(raw), String(value)) !== null;
      ok = op === "matches" ? found : !found;
    } else {
      const other = operand(rec, raw);
      if (other === null || other === undefined) return null;
      if (op === "eq" || op === "ne") ok = (value === other) === (op === "eq");
      else if (!Number.isInteger(value) || !Number.isInteger(other)) return null;
      else if (op === "lt") ok = value < other;
      else if (op === "le") ok = value <= other;
      else if (op === "gt") ok = value > other;
      else if (op === "ge") ok = value >= other;
      else return null;
    }
    if (!ok) return false;
  }
  return true;
}

function passes(rec, tests) {
  let result = true;
  for (const [field, ops] of Object.entries(tests)) {
    const r = testOne(rec, field, ops);
    if (r === null) return null;
    result = result && r;
  }
  return result;
}

export function errorMountRecords(records, errorPaths) {
  let best = [];
  let bestLen = -1;
  for (const path of errorPaths) {
    for (const rec of records) {
      const mount = rec.fields.mount;
      if (typeof mount !== "string") continue;
      const under = path === mount || path.startsWith(`${mount.replace(/\/+$/, "")}/`);
      if (under && mount.length > bestLen) {
        best = [rec];
        bestLen = mount.length;
      } else if (under && mount.length === bestLen) best.push(rec);
    }
  }
  return best.length ? best : records;
}

// {condition, state: holds|fails|unknown, records, effect}
export function check(cond, facts) {
  let records = [...(facts.get(cond.fact) || [])];
  if (cond.select === "error-mount") {
    const paths = (facts.get("error_path") || []).map((f) => f.fields.path).filter((p) => typeof p === "string");
    records = errorMountRecords(records, paths);
  }
  const where = cond.where || {};
  const selected = records.filter((r) => passes(r, where) === true);
  const test = cond.test || {};
  const results = selected.map((r) => [r, passes(r, test)]).filter(([, ok]) => ok !== null);
  const out = (state, recs) => ({ condition: cond, state, records: recs, effect: cond.effect });
  if (!results.length) return out("unknown", []);
  const passing = results.filter(([, ok]) => ok).map(([r]) => r);
  if ((cond.quantifier || "any") === "all") {
    const state = passing.length === results.length ? "holds" : "fails";
    return out(state, state === "holds" ? results.map(([r]) => r) : []);
  }
  return out(passing.length ? "holds" : "fails", passing);
}

export function checkAll(conds, facts) {
  return conds.map((c) => check(c, facts));
}
