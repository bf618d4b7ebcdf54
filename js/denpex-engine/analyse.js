// The analysis run (Python: denpex_kb/engine/analyse.py): every source read once; each line
// normalised, attributed, checked for facts and signals; then evaluate, diagnose, explain.

import { decode, utf8Length } from "./read.js";
import { Normaliser } from "./normalise.js";
import { Attributor, ElasticParser, ElasticSummary, LookBack, ProcessMap } from "./attribute.js";
import { FactCollector } from "./facts.js";
import { SignalScanner } from "./scan.js";
import { compile, loadRulepack, search } from "./rules.js";
import { evaluate } from "./evaluate.js";
import { buildCandidates, diagnose as diagnoseCandidates } from "./diagnose.js";
import { explain } from "./explain.js";
import { cutNote, firstCut, tailOf } from "./cuttrace.js";
import { markDeclined, unfiredErrors } from "./unfired.js";
import { MUTATION } from "./mutation.js";

export const MAX_ACTIVE_RANK_PREFIXES = 64;
export const MAX_UNEXPLAINED = 256;
export const MAX_HITS_PER_SIGNAL = 512;
const WORLD_SIZE = /dist_world_size=([0-9]+)/;

function scopeKey(rank, kind, host) {
  return `rank\u0000${rank}\u0000${kind === "local" ? host ?? "" : ""}`;
}

export class Analysis {
  constructor(pack) {
    this.pack = loadRulepack(pack);
    const g = this.pack.globals;
    this.g = g;
    this.entries = this.pack.entries;
    this.scoring = g.scoring;
    this.sigIndex = new Map();
    this.sigEntry = new Map();
    this.windowSignals = new Set();
    const sigPatterns = [];
    this.entries.forEach((e, ei) => {
      for (const s of e.signals) {
        const gi = sigPatterns.length;
        this.sigIndex.set(`${ei}\u0000${s.id}`, gi);
        sigPatterns.push([s.pattern, s.ignore_case]);
        const rule = e.match;
        if (rule.all.includes(s.id) || rule.any.includes(s.id) || (rule.weak || []).includes(s.id)) {
          if (!this.sigEntry.has(gi)) this.sigEntry.set(gi, new Set());
          this.sigEntry.get(gi).add(e.id);
        }
        if (rule.window_lines && rule.scope === "rank") this.windowSignals.add(gi);
      }
    });
    this.scanner = new SignalScanner(sigPatterns);
    this.banners = g.version_banners.map((b) => ({ rx: compile(b.pattern), pkg: b.package, gi: b.groups.version }));
    this.boilerplate = g.boilerplate.map((b) => compile(b.pattern));
    this.exceptionRx = compile(g.exception_line);
    this.salientRx = compile(g.salient_line);
    this.normaliser = new Normaliser(g.ansi_escape);
    this.attr = new Attributor(g);
    // state over the whole log
    this.hits = [];
    this.printed = new Map();
    this.summary = new ElasticSummary();
    this.inputs = [];
    this.names = [];
    this.seenRanks = new Set();
    this.world = null; // the largest dist_world_size= seen
    this.unexplained = [];
    this.tails = []; // [source, last bytes, lines, longer than those bytes]: cut tracebacks
    this.pmap = new ProcessMap();
    this.facts = new FactCollector(g.facts);
    this.hitCounts = new Map();
    this.hitsDropped = 0;
    this.warnings = [];
  }

  keepHit(key, sigs) {
    let keep = false;
    for (const s of sigs) {
      const k = `${key}\u0001${s}`;
      const n = (this.hitCounts.get(k) || 0) + 1;
      this.hitCounts.set(k, n);
      if (n <= MAX_HITS_PER_SIGNAL) keep = true;
    }
    if (!keep) this.hitsDropped++;
    return keep;
  }

  // Add one input: name (as reports show it), data (Uint8Array already decompressed, or a
  // string), isFile: false for a pasted text or stdin (no file-name rank). onProgress(done,
  // total) is called every few thousand lines, with UTF-16 positions.
  addSource(name, data, { isFile = true, onProgress = null, warnings = [] } = {}) {
    const si = this.names.length;
    this.names.push(name);
    this.warnings.push(...warnings);
    const text = decode(data);
    const attr = this.attr;
    const [fileRank, fileKind] = isFile && name !== null ? attr.fileRank(name) : [null, null];
    const parser = new ElasticParser(this.g, this.summary);
    const lookback = new LookBack(attr);
    const rankLines = new Map(); // prefix literal -> lines seen with it since first tracked
    const unexplainedSeen = new Set();
    let offset = 0;
    let lineNo = 0;
    let pos = 0;
    const n = text.length;
    let nextProgress = 0;
    // Byte offsets count the input's own bytes (an undecodable byte is one byte, not the three
    // of its U+FFFD): lines are found at the same \n in the bytes and in the text.
    const bytes = typeof data === "string" ? null : data;
    let bpos = 0;
    while (pos < n) {
      const nl = text.indexOf("\n", pos);
      const end = nl === -1 ? n : nl;
      const whole = text.slice(pos, end);
      const raw = this.normaliser.blockLevel(whole);
      pos = nl === -1 ? n : nl + 1;
      lineNo++;
      const at = offset;
      let len;
      if (bytes !== null) {
        const bnl = bytes.indexOf(10, bpos);
        const bend = bnl === -1 ? bytes.length : bnl;
        len = bend - bpos - (whole.length - raw.length); // NUL and ANSI bytes are ASCII
        bpos = bend + 1;
      } else len = utf8Length(raw);
      offset += len + (nl === -1 ? 0 : 1);
      if (onProgress && pos >= nextProgress) {
        onProgress(pos, n);
        nextProgress = pos + (1 << 20);
      }
      this.line(si, raw, at, lineNo, fileRank, fileKind, parser, lookback, rankLines, unexplainedSeen);
      for (const [lit, c] of rankLines) if (raw.startsWith(lit)) rankLines.set(lit, c + 1);
    }
    if (onProgress) onProgress(n, n);
    let lines = 0;
    for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) lines++;
    if (offset && !lines) lines = 1;
    this.inputs.push({ file: name, lines, bytes: offset });
    const [tail, windowed] = tailOf(data);
    this.tails.push([si, tail, lines, windowed]);
  }

  line(si, raw, at, lineNo, fileRank, fileKind, parser, lookback, rankLines, unexplainedSeen) {
    const attr = this.attr;
    const text = this.normaliser.line(raw);
    const a = attr.strip(text);
    const content = a.content;
    const item = parser.feed(content, lineNo);
    let { rank, kind, host, via } = a;
    if (MUTATION === "file-name-rank-before-marker" && via === "marker" && fileRank !== null) rank = null;
    if (rank === null && fileRank !== null) {
      rank = fileRank;
      kind = fileKind;
      via = "file-name";
    }
    if (rank === null && item !== null && item.rank !== null) {
      rank = item.rank;
      kind = "global";
      host = host || item.host;
      via = "elastic-summary";
    }
    const proc = content ? attr.process(content) : null;
    if (proc !== null) this.pmap.learn(proc, rank, kind, host);
    const late = rank === null ? { process: proc, weakRank: attr.weakRank(content) } : { process: null, weakRank: null };
    let ts = lookback.own(text, at);
    if (ts === null) ts = lookback.before(at);
    for (const b of this.banners) {
      const m = search(b.rx, content);
      if (m !== null) {
        if (!this.printed.has(b.pkg)) this.printed.set(b.pkg, new Set());
        this.printed.get(b.pkg).add(m[b.gi]);
      }
    }
    const w = WORLD_SIZE.exec(content);
    if (w !== null) this.world = Math.max(this.world ?? 0, parseInt(w[1], 10));
    if (rank !== null) this.seenRanks.add(rank);
    if (content) this.facts.observe(si, content, lineNo, rank, a.rank, text);
    const sigs = content ? this.scanner.match(content) : null;
    const exc = !!content && !sigs && search(this.exceptionRx, content) !== null;
    if (exc || (!sigs && content && search(this.salientRx, content) !== null)) {
      const ukey = `${rank}\u0000${host}\u0000${exc}`;
      if (!unexplainedSeen.has(ukey) && this.unexplained.length < MAX_UNEXPLAINED) {
        unexplainedSeen.add(ukey);
        this.unexplained.push({
          source: si,
          offset: at,
          line: lineNo,
          rankLine: lineNo - 1,
          key: rank !== null ? `rank\u0000${rank}\u0000${host ?? ""}` : `stream\u0000${si}`,
          rank,
          host,
          time: ts,
          text,
          signals: [],
          rankVia: via,
          ...late,
        });
      }
      return;
    }
    if (!sigs || (MUTATION !== "boilerplate-is-evidence" && this.boilerplate.some((rx) => search(rx, content) !== null))) return;
    let rankLine = lineNo - 1;
    if (a.prefix && rank !== null && sigs.some((s) => this.windowSignals.has(s))) {
      const lit = a.prefix.replace(/[\s\x1c-\x1f\x85\xa0]+$/u, "");
      if (raw.startsWith(lit)) {
        if (rankLines.has(lit)) rankLine = rankLines.get(lit);
        else if (rankLines.size < MAX_ACTIVE_RANK_PREFIXES) {
          rankLines.set(lit, 0);
          rankLine = 0;
        }
      }
    }
    const key = rank !== null ? scopeKey(rank, kind, host) : `stream\u0000${si}`;
    if (!this.keepHit(key, sigs)) return;
    this.hits.push({ source: si, offset: at, line: lineNo, rankLine, key, rank, host, time: ts, text, signals: sigs, rankVia: via, ...late });
  }

  resolveRanks() {
    this.pmap.learnElastic(this.summary);
    for (const h of [...this.hits, ...this.unexplained]) {
      if (h.rank !== null) continue;
      const got = h.process !== null && MUTATION !== "pid-map-ignored" ? this.pmap.resolve(h.process, h.host) : null;
      let rank;
      let kind;
      if (got !== null) {
        [rank, kind, h.host, h.rankVia] = got;
      } else if (h.weakRank !== null) {
        [rank, kind, h.rankVia] = [h.weakRank, "global", "shard"];
      } else continue;
      h.rank = rank;
      h.key = scopeKey(rank, kind, h.host);
      this.seenRanks.add(rank);
    }
  }

  // The report (call once, after every source was added).
  finish() {
    this.resolveRanks();
    const firings = evaluate(this.entries, this.sigIndex, this.hits, this.printed);
    const cands = buildCandidates(firings, this.hits, this.sigEntry);
    const unfired =
      MUTATION === "unfired-signal-explains"
        ? []
        : unfiredErrors(
            this.hits,
            this.sigEntry,
            new Set(cands.map((c) => c.id)),
            MAX_UNEXPLAINED - this.unexplained.length,
            (t) => this.attr.strip(t).content,
            this.exceptionRx,
            this.salientRx,
          );
    this.unexplained.push(...unfired);
    const diag = diagnoseCandidates(cands, this.facts.records, this.scoring);
    const report = explain(
      diag,
      this.summary,
      this.names,
      this.world,
      this.seenRanks,
      this.unexplained,
    );
    markDeclined(report, unfired, this.names, this.sigEntry);
    report.cut_traceback = null;
    if (diag.root === null) {
      const content = (t) => this.attr.strip(this.normaliser.line(this.normaliser.blockLevel(t))).content;
      const isError = (c) => search(this.exceptionRx, c) !== null || search(this.salientRx, c) !== null;
      report.cut_traceback = firstCut(this.tails, content, isError, this.names);
      if (report.cut_traceback !== null) report.notes.push(cutNote(report.cut_traceback));
    }
    const versions = {};
    for (const k of [...this.printed.keys()].sort()) versions[k] = [...this.printed.get(k)].sort();
    report.versions = versions;
    report.facts = this.facts.asJson();
    report.hits_beyond_cap = this.hitsDropped;
    report.inputs = this.inputs;
    report.warnings = this.warnings;
    report.rulepack = {
      content_hash: this.pack.content_hash,
      kb_version: this.pack.kb_version,
      format_version: this.pack.format_version,
    };
    report.scanner = "javascript"; // no multi-pattern prefilter: every line is checked
    report.format = "denpex-report";
    report.format_version = "1.3";
    return report;
  }
}

// One call: files are [{name, data, isFile}] (data: decompressed Uint8Array or string; isFile
// defaults to true when a name is given). A pasted text: [{name: "<text>", data, isFile: false}].
export function diagnose(pack, files) {
  const a = new Analysis(pack);
  for (const f of files) a.addSource(f.name, f.data, { isFile: f.isFile ?? f.name !== null });
  return a.finish();
}
