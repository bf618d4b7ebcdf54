// PEP 440 versions and specifiers, the part the pack's version conditions use (as
// `packaging` evaluates them with prereleases=True): ==, !=, <, <=, >, >=, ~= and ==X.*,
// comma-separated. Used by evaluate.js.

const VERSION = new RegExp(
  "^v?(?:([0-9]+)!)?([0-9]+(?:\\.[0-9]+)*)" +
    "(?:[-_.]?(alpha|a|beta|b|preview|pre|c|rc)[-_.]?([0-9]+)?)?" +
    "(?:-([0-9]+)|[-_.]?(post|rev|r)[-_.]?([0-9]+)?)?" +
    "(?:[-_.]?(dev)[-_.]?([0-9]+)?)?" +
    "(?:\\+([a-z0-9]+(?:[-_.][a-z0-9]+)*))?$",
  "i",
);

const PRE = { alpha: "a", a: "a", beta: "b", b: "b", c: "rc", pre: "rc", preview: "rc", rc: "rc" };

export function parseVersion(s) {
  const m = VERSION.exec(String(s).trim());
  if (m === null) return null;
  const release = m[2].split(".").map(Number);
  const pre = m[3] ? [PRE[m[3].toLowerCase()], Number(m[4] || 0)] : null;
  let post = null;
  if (m[5] !== undefined) post = Number(m[5]);
  else if (m[6] !== undefined) post = Number(m[7] || 0);
  const dev = m[8] ? Number(m[9] || 0) : null;
  const local = m[10] ? m[10].toLowerCase().split(/[-_.]/).map((p) => (/^[0-9]+$/.test(p) ? Number(p) : p)) : null;
  return { epoch: Number(m[1] || 0), release, pre, post, dev, local };
}

function cmpNum(a, b) {
  return a < b ? -1 : a > b ? 1 : 0;
}

function cmpRelease(a, b) {
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const c = cmpNum(a[i] || 0, b[i] || 0);
    if (c) return c;
  }
  return 0;
}

const PRE_ORDER = { a: 0, b: 1, rc: 2 };

function preKey(v) {
  // dev-only releases sort before pre-releases; a final release after them
  if (v.pre === null && v.post === null && v.dev !== null) return [-1, 0];
  if (v.pre === null) return [3, 0];
  return [PRE_ORDER[v.pre[0]], v.pre[1]];
}

function cmpLocal(a, b) {
  if (a === null && b === null) return 0;
  if (a === null) return -1;
  if (b === null) return 1;
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) {
    if (i >= a.length) return -1;
    if (i >= b.length) return 1;
    const x = a[i];
    const y = b[i];
    if (typeof x === typeof y) {
      const c = typeof x === "number" ? cmpNum(x, y) : x < y ? -1 : x > y ? 1 : 0;
      if (c) return c;
    } else return typeof x === "number" ? 1 : -1; // numbers sort after strings
  }
  return 0;
}

export function compareVersions(a, b, withLocal = true) {
  let c = cmpNum(a.epoch, b.epoch) || cmpRelease(a.release, b.release);
  if (c) return c;
  const pa = preKey(a);
  const pb = preKey(b);
  c = cmpNum(pa[0], pb[0]) || cmpNum(pa[1], pb[1]);
  if (c) return c;
  c = cmpNum(a.post === null ? -1 : a.post, b.post === null ? -1 : b.post);
  if (c) return c;
  c = cmpNum(a.dev === null ? Infinity : a.dev, b.dev === null ? Infinity : b.dev);
  if (c) return c;
  return withLocal ? cmpLocal(a.local, b.local) : 0;
}

const isPre = (v) => v.pre !== null || v.dev !== null;
const base = (v) => ({ epoch: v.epoch, release: v.release, pre: null, post: null, dev: null, local: null });
const pub = (v) => ({ ...v, local: null });

const SPEC = /^\s*(~=|===|==|!=|<=|>=|<|>)\s*([^\s,;]+)\s*$/;

// One specifier as a predicate on parsed versions, or null when it is invalid.
function parseOne(text) {
  const m = SPEC.exec(text);
  if (m === null) return null;
  const op = m[1];
  const vs = m[2];
  if ((op === "==" || op === "!=") && vs.endsWith(".*")) {
    const pv = parseVersion(vs.slice(0, -2));
    if (pv === null || pv.local !== null) return null;
    const prefix = pv.release;
    const eq = (v) => {
      if (v.epoch !== pv.epoch) return false;
      const r = v.release;
      for (let i = 0; i < prefix.length; i++) if ((r[i] || 0) !== prefix[i]) return false;
      return true;
    };
    return op === "==" ? eq : (v) => !eq(v);
  }
  if (op === "===") return null; // arbitrary equality: not used by the pack
  const sv = parseVersion(vs);
  if (sv === null) return null;
  switch (op) {
    case ">=":
      return (v) => compareVersions(pub(v), sv) >= 0;
    case "<=":
      return (v) => compareVersions(pub(v), sv) <= 0;
    case "<":
      return (v) => {
        if (!(compareVersions(v, sv) < 0)) return false;
        if (!isPre(sv) && isPre(v) && compareVersions(base(v), base(sv)) === 0) return false;
        return true;
      };
    case ">":
      return (v) => {
        if (!(compareVersions(v, sv) > 0)) return false;
        if (sv.post === null && v.post !== null && compareVersions(base(v), base(sv)) === 0) return false;
        if (v.local !== null && compareVersions(base(v), base(sv)) === 0) return false;
        return true;
      };
    case "==":
      return (v) => compareVersions(sv.local === null ? pub(v) : v, sv) === 0;
    case "!=":
      return (v) => compareVersions(sv.local === null ? pub(v) : v, sv) !== 0;
    case "~=": {
      if (sv.release.length < 2) return null;
      const prefix = sv.release.slice(0, -1);
      return (v) => {
        if (compareVersions(pub(v), sv) < 0) return false;
        if (v.epoch !== sv.epoch) return false;
        for (let i = 0; i < prefix.length; i++) if ((v.release[i] || 0) !== prefix[i]) return false;
        return true;
      };
    }
    default:
      return null;
  }
}

// A specifier set ("<0.19.1,>=0.17.1") as a predicate on version strings, or null if invalid.
export function specifierSet(text) {
  const parts = text.split(",").filter((p) => p.trim() !== "");
  const preds = parts.map(parseOne);
  if (preds.some((p) => p === null)) return null;
  return (v) => preds.every((p) => p(v));
}
