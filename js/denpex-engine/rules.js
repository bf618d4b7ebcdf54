// Step 0, rules: load a rule pack (an object parsed from dist/denpex-rules.json) and compile its
// patterns for JavaScript. Mirrors denpex_kb/engine/rules.py (loading) and the "Regular
// expressions" section of docs/rule-pack-format.md (dialect).
//
// Patterns are RE2 syntax restricted to the subset RE2, Python `re` and JavaScript share. Three
// constructs still mean something slightly different in JavaScript and are rewritten here so
// that a pattern matches exactly what RE2 matches: `.` (JavaScript also stops at U+2028/U+2029;
// RE2 only at \n), `\s` and `\S` (JavaScript's are Unicode-wide; RE2's are [\t\n\f\r ]).
//
// Catastrophic backtracking: JavaScript's engine backtracks; RE2 is linear. This engine only
// ever runs a pattern on one normalised line, which normalise.js caps at MAX_LINE_CHARS (64 Ki
// code points, the Python engine's cap), never on a whole block: the cost per line is bounded.

export const SUPPORTED_MAJOR = 1;

export class RulesError extends Error {}

const RE2_SPACE = "\\t\\n\\f\\r ";

// Rewrite an RE2-subset pattern so JavaScript (flag "u") gives RE2's meaning.
export function toJsSource(pattern) {
  let out = "";
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === "\\" && i + 1 < pattern.length) {
      const d = pattern[i + 1];
      if (d === "s") out += inClass ? RE2_SPACE : `[${RE2_SPACE}]`;
      else if (d === "S" && !inClass) out += `[^${RE2_SPACE}]`;
      else out += c + d;
      i++;
      continue;
    }
    if (inClass) {
      if (c === "]") inClass = false;
      out += c;
    } else if (c === "[") {
      inClass = true;
      out += c;
      if (pattern[i + 1] === "^") {
        out += "^";
        i++;
      }
      if (pattern[i + 1] === "]") {
        out += "\\]";
        i++;
      }
    } else if (c === ".") {
      out += "[^\\n]";
    } else {
      out += c;
    }
  }
  return out;
}

const CACHE = new Map();

// A compiled RegExp for a pack pattern. mode: "" (search), "y" (match at the start).
export function compile(pattern, ignoreCase = false, mode = "") {
  const key = `${ignoreCase ? "i" : ""}${mode}\u0000${pattern}`;
  let rx = CACHE.get(key);
  if (rx === undefined) {
    rx = new RegExp(toJsSource(pattern), `u${ignoreCase ? "i" : ""}${mode}`);
    CACHE.set(key, rx);
  }
  return rx;
}

// Search `text` (unanchored); returns the match array or null.
export function search(rx, text) {
  rx.lastIndex = 0;
  return rx.exec(text);
}

// Match anchored at the start of `text` (rx compiled with mode "y").
export function matchStart(rx, text) {
  rx.lastIndex = 0;
  return rx.exec(text);
}

// Check the pack's shape enough to run on it; returns the pack.
export function loadRulepack(pack) {
  if (typeof pack === "string") pack = JSON.parse(pack);
  if (!pack || pack.format !== "denpex-rulepack") {
    throw new RulesError("not a denpex rule pack (format is not \"denpex-rulepack\")");
  }
  const major = Number(String(pack.format_version || "").split(".")[0]);
  if (major !== SUPPORTED_MAJOR) {
    throw new RulesError(`rule pack format ${pack.format_version} is not supported (major 1 only)`);
  }
  if (pack.dialect !== "re2") throw new RulesError(`unknown regex dialect ${pack.dialect}`);
  if (typeof pack.globals !== "object" || !Array.isArray(pack.entries)) {
    throw new RulesError("rule pack has no globals or entries");
  }
  return pack;
}
