// Step 3, attribute: which rank and host printed a line, and when. Mirrors
// denpex_kb/engine/attribute.py; everything comes from the pack's `globals` (line prefixes,
// rank markers, file-name ranks, process lines, weak rank markers, timestamps, torchelastic's
// ChildFailedError summary). Spec: docs/rule-pack-format.md, "Reading a log".

import { decode, utf8Length } from "./read.js";
import { Normaliser } from "./normalise.js";
import { compile, loadRulepack, matchStart, search } from "./rules.js";
import { MUTATION } from "./mutation.js";

const MONTHS = { Jan: 1, Feb: 2, Mar: 3, Apr: 4, May: 5, Jun: 6, Jul: 7, Aug: 8, Sep: 9, Oct: 10, Nov: 11, Dec: 12 };
export const LOOKBACK_BYTES = 8192;
// Every timestamp format the pack knows has HH:MM; a line without two digits, a colon and two
// digits cannot have a time, so the patterns are not run on it (a speed-up only).
const MAYBE_TIME = /[0-9][0-9]:[0-9][0-9]/;

export function shortHost(host) {
  return host ? host.split(".", 1)[0] : host;
}

function group(m, n) {
  const v = n === undefined ? undefined : m[n];
  return v === undefined ? null : v;
}

export class Attributor {
  constructor(g) {
    this.prefixes = g.line_prefixes.map((p) => ({
      rx: compile(p.pattern, false, "y"),
      groups: p.groups,
      kind: p.rank_kind,
      level: p.level || 0,
    }));
    this.maxPrefixes = g.max_prefixes_per_line;
    this.innermost = (g.prefix_rank || "outermost") === "innermost" && MUTATION !== "prefix-outermost-rank";
    this.markers = g.rank_markers.map((p) => ({ rx: compile(p.pattern), groups: p.groups }));
    this.fileRanks = g.file_name_ranks.map((p) => ({
      rx: compile(p.pattern),
      groups: p.groups,
      kind: p.rank_kind,
      whole: p.pattern.includes("/"),
    }));
    this.timestamps = g.timestamps.map((p) => ({ rx: compile(p.pattern), groups: p.groups }));
    this.processes = (g.process_lines || []).map((p) => ({
      rx: compile(p.pattern),
      groups: p.groups,
      id: p.id,
      subject: p.subject,
      kind: p.rank_kind,
      literals: p.literals || null,
    }));
    this.weakMarkers = (g.weak_rank_markers || []).map((p) => ({ rx: compile(p.pattern), groups: p.groups }));
  }

  // {content, prefix, rank, kind, host, via}
  strip(text) {
    let rank = null;
    let kind = null;
    let host = null;
    let rest = text;
    let level = -1;
    for (let n = 0; n < this.maxPrefixes; n++) {
      let found = null;
      for (const p of this.prefixes) {
        const m = matchStart(p.rx, rest);
        if (m !== null && m[0].length > 0) {
          found = [m, p];
          break;
        }
      }
      if (found === null) break;
      const [m, p] = found;
      if (p.level < level && MUTATION !== "prefix-levels-ignored") break; // a node-level prefix inside a process-level one is text
      level = p.level;
      if ("rank" in p.groups && (rank === null || this.innermost)) {
        rank = parseInt(m[p.groups.rank], 10);
        kind = p.kind;
      }
      if ("host" in p.groups && host === null) host = group(m, p.groups.host);
      rest = rest.slice(m[0].length);
    }
    const content = rest;
    let via = rank !== null ? "prefix" : null;
    if (rank === null && MUTATION !== "rank-marker-ignored") {
      for (const mk of this.markers) {
        const m = search(mk.rx, content);
        if (m !== null) {
          rank = parseInt(m[mk.groups.rank], 10);
          kind = "global";
          via = "marker";
          break;
        }
      }
    }
    return { content, prefix: text.slice(0, text.length - content.length), rank, kind, host, via };
  }

  fileRank(name) {
    if (MUTATION === "file-name-rank-ignored") return [null, null];
    const norm = name.replaceAll("\\", "/");
    const base = norm.slice(norm.lastIndexOf("/") + 1);
    for (const f of this.fileRanks) {
      const m = search(f.rx, f.whole && MUTATION !== "file-name-rank-base-name-only" ? norm : base);
      if (m !== null) return [parseInt(m[f.groups.rank], 10), f.kind];
    }
    return [null, null];
  }

  // What the first process-line pattern finds in the content: {pattern, subject, pid, host,
  // device, rank, kind}, or null. Only lines holding one of a pattern's literals are tried.
  process(content) {
    for (const p of this.processes) {
      if (p.literals && !p.literals.some((lit) => content.includes(lit))) continue;
      const m = search(p.rx, content);
      if (m === null) continue;
      const get = (name) => (name in p.groups ? group(m, p.groups[name]) : null);
      const dev = get("device");
      const rank = get("rank");
      return {
        pattern: p.id,
        subject: p.subject,
        pid: parseInt(get("pid") || "0", 10),
        host: get("host"),
        device: dev !== null ? parseInt(dev, 10) : null,
        rank: rank !== null ? parseInt(rank, 10) : null,
        kind: rank !== null ? p.kind : null,
      };
    }
    return null;
  }

  weakRank(content) {
    for (const w of this.weakMarkers) {
      const m = search(w.rx, content);
      if (m !== null) return parseInt(m[w.groups.rank], 10);
    }
    return null;
  }

  // [sortable seconds, year seen] of the first timestamp in text, else [null, null].
  timestamp(text, defaultYear) {
    if (!MAYBE_TIME.test(text)) return [null, null];
    for (const t of this.timestamps) {
      const m = search(t.rx, text);
      if (m === null) continue;
      const gr = t.groups;
      const num = (name) => {
        if (!(name in gr)) return 0;
        const v = m[gr[name]];
        return v ? parseInt(v, 10) : 0;
      };
      const year = "year" in gr ? num("year") : null;
      const y = year !== null ? year : defaultYear || 2000;
      const fb = "fraction" in gr ? m[gr.fraction] : undefined;
      const frac = fb ? parseFloat(`0.${fb}`) : 0;
      let month = 0;
      if ("month_name" in gr) month = MONTHS[m[gr.month_name] || ""] || 1;
      const d = days(y, month || num("month"), num("day"));
      const secs = d * 86400 + num("hour") * 3600 + num("minute") * 60 + num("second") + frac;
      return [secs, year];
    }
    return [null, null];
  }
}

// Days since 0000-03-01 (proleptic Gregorian), tolerant of out-of-range input.
export function days(y, mo, d) {
  mo = Math.min(Math.max(mo, 1), 12);
  if (mo <= 2) {
    y -= 1;
    mo += 12;
  }
  return 365 * y + Math.floor(y / 4) - Math.floor(y / 100) + Math.floor(y / 400) + Math.floor((153 * (mo - 3) + 2) / 5) + d;
}

// A sortable time as YYYY-MM-DDTHH:MM:SS.mmm (milliseconds rounded), for the vectors.
export function formatTime(ts) {
  if (ts === null || ts === undefined) return null;
  const millis = Math.round(ts * 1000);
  const dayNo = Math.floor(millis / 86400000);
  const rem = millis - dayNo * 86400000;
  const ms = Date.UTC(2000, 0, 1) + (dayNo - days(2000, 1, 1)) * 86400000 + rem;
  const iso = new Date(ms).toISOString();
  return iso.slice(0, 23);
}

// The time of each line of one source: its own, else the look-back (the last line with a time
// among the lines that begin at most LOOKBACK_BYTES before it). Every line is examined once, in
// order, so the work is linear in the size of the source.
export class LookBack {
  constructor(attr) {
    this.attr = attr;
    this.year = null;
    this.last = null;
    this.lastAt = -1;
  }

  // The line's own time, recording it; `at` is the line's byte offset.
  own(text, at) {
    const [ts, y] = this.attr.timestamp(text, MUTATION === "year-default-2000" ? null : this.year);
    if (ts !== null) {
      if (y !== null) this.year = y;
      this.last = ts;
      this.lastAt = at;
    }
    return ts;
  }

  before(at) {
    if (MUTATION === "lookback-none") return null;
    const bound = MUTATION === "lookback-unbounded" ? Infinity : LOOKBACK_BYTES;
    if (this.last !== null && at - this.lastAt >= 0 && at - this.lastAt <= bound) return this.last;
    return null;
  }
}

export class ElasticSummary {
  constructor() {
    this.items = [];
  }

  get rootCauses() {
    return this.items.filter((i) => i.section === "root_cause");
  }
}

// The members of globals.elastic_summary.patterns this engine reads: a later minor version of
// the format may add others (the compatibility policy), which it ignores.
export const SUMMARY_PATTERNS = [
  "failures_header", "field_error_file", "field_exitcode", "field_host", "field_rank",
  "field_time", "field_traceback", "item_start", "root_cause_header", "separator",
];

export class ElasticParser {
  constructor(g, summary) {
    const p = g.elastic_summary.patterns;
    this.rx = {};
    for (const k of SUMMARY_PATTERNS) this.rx[k] = compile(p[k], false, "y");
    this.summary = summary;
    this.section = null;
    this.current = null;
  }

  // Update the state with one line; return the item this line belongs to, if any.
  feed(content, line) {
    const match = (name) => matchStart(this.rx[name], content);
    if (match("root_cause_header")) {
      this.section = "root_cause";
      this.current = null;
      return null;
    }
    if (match("failures_header")) {
      this.section = "failures";
      this.current = null;
      return null;
    }
    if (this.section === null) return null;
    let m = match("item_start");
    if (m) {
      this.current = {
        section: this.section,
        index: parseInt(m[1], 10),
        line,
        rank: null,
        local_rank: null,
        host: null,
        exitcode: null,
        signal: null,
        time: null,
        error_file: null,
        traceback: null,
        pid: null,
      };
      this.summary.items.push(this.current);
      return this.current;
    }
    if (match("separator")) {
      if (content.startsWith("=") || MUTATION === "elastic-dash-closes-section") this.section = null;
      this.current = null;
      return null;
    }
    const cur = this.current;
    if (cur === null) return null;
    if ((m = match("field_rank"))) {
      cur.rank = parseInt(m[1], 10);
      cur.local_rank = parseInt(m[2], 10);
    } else if ((m = match("field_host"))) {
      cur.host = group(m, 1);
    } else if ((m = match("field_exitcode"))) {
      cur.exitcode = parseInt(m[1], 10);
      cur.signal = group(m, 3);
      cur.pid = parseInt(m[2], 10);
    } else if ((m = match("field_time"))) {
      cur.time = pyTrim(group(m, 1) || "");
    } else if ((m = match("field_error_file"))) {
      cur.error_file = pyTrim(group(m, 1) || "");
    } else if ((m = match("field_traceback"))) {
      cur.traceback = pyTrim(group(m, 1) || "");
    }
    return cur;
  }
}

function pyTrim(s) {
  return s.replace(/^[\s\x1c-\x1f\x85]+|[\s\x1c-\x1f\x85]+$/gu, "");
}

// pid -> rank (and NCCL's (host, cudaDev) -> rank) learnt from the lines of one log.
export class ProcessMap {
  constructor() {
    this.pids = new Map();
    this.devices = new Map();
  }

  static add(map, key, tuple) {
    let s = map.get(key);
    if (s === undefined) {
      s = new Map();
      map.set(key, s);
    }
    s.set(JSON.stringify(tuple), tuple);
  }

  learn(proc, rank, kind, host) {
    if (proc.rank !== null) {
      ProcessMap.add(this.pids, proc.pid, [proc.rank, proc.kind, shortHost(host)]);
    } else if (proc.subject === "self" && rank !== null) {
      const h = shortHost(proc.host || host);
      ProcessMap.add(this.pids, proc.pid, [rank, kind, h]);
      if (proc.device !== null && h) ProcessMap.add(this.devices, `${h}\u0000${proc.device}`, [rank, kind, h]);
    }
  }

  learnElastic(summary) {
    for (const i of summary.items) {
      if (i.pid !== null && i.rank !== null) ProcessMap.add(this.pids, i.pid, [i.rank, "global", shortHost(i.host)]);
    }
  }

  // [rank, kind, host, "pid"|"device"] for a line printed by the process it names, or null.
  resolve(proc, host) {
    if (proc.subject !== "self") return null;
    const h = shortHost(proc.host || host);
    let cands = [...(this.pids.get(proc.pid) || new Map()).values()];
    if (h) cands = cands.filter((c) => c[2] === null || c[2] === undefined || c[2] === h);
    const one = onlyOne(cands);
    if (one !== null) return [one[0], one[1], host || proc.host || one[2], "pid"];
    if (proc.device !== null && h) {
      const o = onlyOne([...(this.devices.get(`${h}\u0000${proc.device}`) || new Map()).values()]);
      if (o !== null) return [o[0], o[1], host || proc.host, "device"];
    }
    return null;
  }
}

function onlyOne(cands) {
  for (const kind of ["global", "local"]) {
    const ofKind = cands
      .filter((c) => c[1] === kind)
      .sort((a, b) => a[0] - b[0] || ((a[2] || "") < (b[2] || "") ? -1 : (a[2] || "") > (b[2] || "") ? 1 : 0));
    const distinct = new Set(ofKind.map((c) => (kind === "global" ? String(c[0]) : `${c[0]}\u0000${c[2]}`)));
    if (distinct.size === 1) return ofKind[0];
    if (ofKind.length) return null;
  }
  return null;
}

// Rank, host and time of every line of every source, per "Reading a log" (the attribution
// conformance vectors). sources: [{name (null for a stream), log}].
export function attributeAll(pack, sources) {
  const g = loadRulepack(pack).globals;
  const attr = new Attributor(g);
  const norm = new Normaliser(g.ansi_escape);
  const pmap = new ProcessMap();
  const summary = new ElasticSummary();
  const out = [];
  const pending = [];
  for (const src of sources) {
    const [fileRank, fileKind] = src.name !== null ? attr.fileRank(src.name) : [null, null];
    const parser = new ElasticParser(g, summary);
    const lookback = new LookBack(attr);
    const lines = [];
    const text = decode(src.log);
    let pos = 0;
    let offset = 0;
    let n = 0;
    while (pos < text.length) {
      const nl = text.indexOf("\n", pos);
      const end = nl === -1 ? text.length : nl;
      const raw = norm.blockLevel(text.slice(pos, end));
      pos = nl === -1 ? text.length : nl + 1;
      n++;
      const at = offset;
      offset += utf8Length(raw) + (nl === -1 ? 0 : 1);
      const line = norm.line(raw);
      const a = attr.strip(line);
      const item = parser.feed(a.content, n);
      let { rank, kind, host, via } = a;
      if (MUTATION === "file-name-rank-before-marker" && via === "marker" && fileRank !== null) rank = null;
      if (rank === null && fileRank !== null) [rank, kind, via] = [fileRank, fileKind, "file-name"];
      if (rank === null && item !== null && item.rank !== null) {
        [rank, kind, host, via] = [item.rank, "global", host || item.host, "elastic-summary"];
      }
      const proc = a.content ? attr.process(a.content) : null;
      if (proc !== null) pmap.learn(proc, rank, kind, host);
      let ts = lookback.own(line, at);
      if (ts === null) ts = lookback.before(at);
      const rec = { line: n, rank, rank_kind: kind, host, rank_via: via, time: formatTime(ts) };
      lines.push(rec);
      if (rank === null) pending.push([rec, proc, attr.weakRank(a.content)]);
    }
    out.push(lines);
  }
  pmap.learnElastic(summary);
  for (const [rec, proc, weak] of pending) {
    const got = proc !== null && MUTATION !== "pid-map-ignored" ? pmap.resolve(proc, rec.host) : null;
    if (got !== null) [rec.rank, rec.rank_kind, rec.host, rec.rank_via] = got;
    else if (weak !== null) [rec.rank, rec.rank_kind, rec.rank_via] = [weak, "global", "shard"];
  }
  return out;
}
