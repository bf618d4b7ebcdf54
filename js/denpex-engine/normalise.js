// Step 2, normalise: one raw line -> the text the rules are matched against. Mirrors
// denpex_kb/engine/normalise.py: NULs dropped, a carriage-return progress bar keeps its last
// non-blank segment, ANSI escapes removed, the line capped at MAX_LINE_CHARS code points (the
// cap also bounds the cost of every JavaScript regex run on the line; see rules.js).

import { compile } from "./rules.js";
import { MUTATION } from "./mutation.js";

export const MAX_LINE_CHARS = 64 * 1024;

// Python's str.isspace() set, for "blank" (str.strip()) exactly as the Python engine has it.
const PY_SPACE = "\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const BLANK = new RegExp(`^[${PY_SPACE}]*$`, "u");
const STRIP = new RegExp(`^[${PY_SPACE}]+|[${PY_SPACE}]+$`, "gu");

export function pyStrip(s) {
  return s.replace(STRIP, "");
}

// The first n code points of s (JavaScript strings count UTF-16 units).
export function cpSlice(s, n) {
  if (s.length <= n) return s;
  let units = 0;
  let cps = 0;
  while (units < s.length && cps < n) {
    const c = s.charCodeAt(units);
    units += c >= 0xd800 && c <= 0xdbff && units + 1 < s.length ? 2 : 1;
    cps++;
  }
  return s.slice(0, units);
}

export function cpLength(s) {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

// The last `n` code points of s.
export function cpTail(s, n) {
  const total = cpLength(s);
  if (total <= n) return s;
  const head = cpSlice(s, total - n);
  return s.slice(head.length);
}

export class Normaliser {
  constructor(ansiPattern) {
    this.ansi = new RegExp(compile(ansiPattern).source, "gu");
  }

  // What the Python engine does to a whole block before splitting it: ANSI escapes, then NULs.
  blockLevel(raw) {
    if (raw.includes("\x1b") && MUTATION !== "ansi-kept") raw = raw.replace(this.ansi, "");
    if (raw.includes("\x00")) raw = raw.replaceAll("\x00", "");
    return raw;
  }

  // raw: one line (no \n) after blockLevel().
  line(raw) {
    let text = raw;
    if (text.includes("\x00")) text = text.replaceAll("\x00", "");
    if (text.includes("\r")) {
      const segs = text.split("\r").filter((s) => !BLANK.test(s));
      text = segs.length ? segs[MUTATION === "cr-first-segment" ? 0 : segs.length - 1] : "";
    }
    if (text.includes("\x1b") && MUTATION !== "ansi-kept") text = text.replace(this.ansi, "");
    if (text.length > MAX_LINE_CHARS) text = cpSlice(text, MAX_LINE_CHARS);
    return text;
  }
}
