// Step 4, scan: which signals a line's content matches. The Python engine (engine/scan.py)
// prefilters whole blocks with Hyperscan or RE2 and checks only the lines reported; JavaScript
// has no linear-time multi-pattern engine, so this one checks every line, one bounded line at a
// time (see rules.js on why patterns never run on more than one capped line).
//
// A cheap prefilter: each pattern's required literal (the longest run of plain characters that
// every match must contain, when one can be read off the pattern safely) is looked up with
// String.prototype.includes first; the regex runs only on lines that contain it.

import { compile, search } from "./rules.js";

const SPECIAL = new Set("\\^$.|?*+()[]{}".split(""));

// The literal runs every match of `pattern` must contain, or [] when the pattern has a
// top-level alternation or is too complex to read safely. Quantified atoms, groups and classes
// break a run; an escaped punctuation character is literal.
export function requiredLiterals(pattern) {
  const runs = [];
  let cur = "";
  let depth = 0;
  const flush = () => {
    if (cur) runs.push(cur);
    cur = "";
  };
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    const next = pattern[i + 1];
    const quantified = (j) => {
      const q = pattern[j];
      return q === "?" || q === "*" || q === "+" || q === "{";
    };
    if (c === "\\") {
      const d = next;
      if (d === undefined) return [];
      if (/[A-Za-z0-9]/.test(d)) {
        // a class escape (\d \s \w \b ...) or a hex/unicode escape: not literal
        if (d === "x" || d === "u") return [];
        flush();
        i++;
        continue;
      }
      if (quantified(i + 2)) {
        flush();
        i++;
        continue;
      }
      if (depth === 0) cur += d;
      i++;
      continue;
    }
    if (c === "|") {
      if (depth === 0) return [];
      continue;
    }
    if (c === "(") {
      flush();
      depth++;
      continue;
    }
    if (c === ")") {
      depth--;
      if (quantified(i + 1)) flush();
      flush();
      continue;
    }
    if (c === "[") {
      flush();
      let j = i + 1;
      if (pattern[j] === "^") j++;
      if (pattern[j] === "]") j++;
      while (j < pattern.length && pattern[j] !== "]") j += pattern[j] === "\\" ? 2 : 1;
      i = j;
      continue;
    }
    if (c === "{") {
      flush();
      while (i < pattern.length && pattern[i] !== "}") i++;
      continue;
    }
    if (SPECIAL.has(c)) {
      flush();
      continue;
    }
    if (depth > 0) continue;
    if (quantified(i + 1)) {
      flush();
      continue;
    }
    cur += c;
  }
  flush();
  return runs;
}

export class SignalScanner {
  // patterns: [[pattern, ignoreCase], ...] in global signal order
  constructor(patterns) {
    this.items = patterns.map(([p, ic], gi) => {
      const lits = ic ? [] : requiredLiterals(p);
      const lit = lits.reduce((a, b) => (b.length > a.length ? b : a), "");
      return { gi, rx: compile(p, ic), lit: lit.length >= 3 ? lit : null };
    });
  }

  // Global indices of the signals the content matches (ascending).
  match(content) {
    let out = null;
    for (const it of this.items) {
      if (it.lit !== null && !content.includes(it.lit)) continue;
      if (search(it.rx, content) !== null) (out || (out = [])).push(it.gi);
    }
    return out;
  }
}
