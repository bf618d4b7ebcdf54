// denpex-kb hub: search that takes error text as it comes.
//
// Material's search sends the text of the search box to its lunr worker, whose query syntax
// turns error text into operators: a `"` makes words required, a leading `-` forbids a word
// (`return code = -9`), `:` names a field, `~ ^ *` are modifiers, and a pasted traceback becomes
// one long line that matches nothing. Material 9 has no query hook in the page, so this script
// wraps the Worker class before Material's bundle creates its search worker, and only for that
// worker:
//
//   query   -> cleaned here first: plain words only, the last exception line of a multi-line
//              paste, at most MAX_TERMS of the most distinctive words of a long one;
//   results -> re-ranked here: pages holding the query's words as one run (the error line as
//              the hub quotes it) above pages that only share words; pages far below the best
//              dropped; and when no page holds the distinctive words, a plain "no good match"
//              instead of a long list.
//
// The box also searches on any paste (context menu, middle click, drop: the `input` event,
// which Material does not watch), and a multi-line paste or a traceback gets an offer to open
// the Diagnose page with the whole text, handed over in sessionStorage (or, where storage is
// refused, in the URL fragment): nothing leaves the browser. Every regular expression here that
// reads pasted text is RE2-compatible (no lookaround, no backreferences) and linear.
//
// The logic is exposed as self.DenpexSearch so that tests can call it directly.
(function () {
  "use strict";

  // Message types of Material's search worker protocol (SearchMessageType).
  const SETUP = 0;
  const QUERY = 2;
  const RESULT = 3;

  const MAX_TERMS = 10; // words sent to lunr from a long input
  const LONG_INPUT = 160; // characters: above this, a single line is distilled too
  const MAX_FOCUS = 240; // characters of the chosen line that are searched for
  const JUDGE_TERMS = 12; // words of a long or pasted line that are searched for and judged
  const KEEP_RATIO = 0.12; // results scoring below this share of the best are dropped
  const HANDOFF_KEY = "denpex-diagnose-text"; // read by denpex-diagnose.js
  const HANDOFF_HASH = "#dx-text=";

  // Words lunr's English stop-word filter removes from the index (lunr 2.3.9,
  // lunr.stopWordFilter; the hub's search pipeline keeps that filter). Sent with Material's
  // trailing wildcard they would only match unrelated longer words (`no*` -> `node`).
  const STOP_WORDS = new Set(
    (
      "a able about across after all almost also am among an and any are as at be because been " +
      "but by can cannot could dear did do does either else ever every for from get got had has " +
      "have he her hers him his how however i if in into is it its just least let like likely " +
      "may me might most must my neither no nor not of off often on only or other our own rather " +
      "said say says she should since so some than that the their them then there these they " +
      "this tis to too twas us wants was we were what when where which while who whom why will " +
      "with would yet you your"
    ).split(" "),
  );

  // Exception names that only wrap or report another failure: a traceback's last line is often
  // one of these, and the line that names the real error comes before it.
  const WRAPPERS = new Set(["childfailederror", "calledprocesserror", "subprocess.calledprocesserror"]);

  // ------------------------------------------------------------------------------------------
  // Words

  const NON_WORD = /[^\p{L}\p{N}_.]+/u;
  const DIGITS = /^[0-9]+$/;

  // Split text into lower-case words the way the hub's index separator does for error text:
  // letters, digits and `_` stay together, a dot stays only between digits (`0.19.1`, `20.00`,
  // `python3.10`), everything else separates.
  function words(text) {
    const out = [];
    for (const t of String(text).toLowerCase().split(NON_WORD)) {
      if (!t) continue;
      if (!t.includes(".")) {
        out.push(t);
        continue;
      }
      const parts = t.split(".");
      let cur = "";
      for (let i = 0; i < parts.length; i++) {
        const p = parts[i];
        if (cur && i > 0 && /[0-9]$/.test(cur) && /^[0-9]/.test(p)) cur += "." + p;
        else {
          if (cur) out.push(cur);
          cur = p;
        }
      }
      if (cur) out.push(cur);
    }
    return out;
  }

  function htmlText(html) {
    return String(html || "")
      .replace(/<[^>]*>/g, " ")
      .replace(/&lt;/g, "<")
      .replace(/&gt;/g, ">")
      .replace(/&quot;/g, '"')
      .replace(/&#0?39;/g, "'")
      .replace(/&amp;/g, "&");
  }

  // ------------------------------------------------------------------------------------------
  // The hub's pages, from the documents Material hands its worker

  // Built from Material's documents in slices while the browser is idle (a page that is
  // never searched pays little), or all at once when a query needs it first.
  const hub = { ready: false, stop: STOP_WORDS, pages: new Map(), df: new Map(), vocab: [], n: 0 };
  let todo = []; // pages whose words are not read yet

  function pageOf(location) {
    return String(location).split("#")[0];
  }

  function setup(data) {
    const docs = (data && data.docs) || [];
    const cfg = (data && data.config) || {};
    hub.stop = (cfg.pipeline || []).includes("stopWordFilter") ? STOP_WORDS : new Set();
    hub.pages = new Map();
    hub.df = new Map();
    hub.ready = false;
    for (const d of docs) {
      const key = pageOf(d.location);
      let p = hub.pages.get(key);
      if (!p) hub.pages.set(key, (p = { docs: [], seq: null, set: null, pos: null }));
      p.docs.push(d);
    }
    todo = [...hub.pages.values()];
    hub.n = hub.pages.size;
    const slice = (deadline) => {
      while (todo.length && deadline.timeRemaining() > 2) readPage(todo.pop());
      if (todo.length) idle(slice);
      else finish();
    };
    idle(slice);
  }

  function idle(fn) {
    if (typeof requestIdleCallback === "function") requestIdleCallback(fn, { timeout: 4000 });
    else setTimeout(() => fn({ timeRemaining: () => 8 }), 20);
  }

  function readPage(p) {
    const seq = [];
    for (const d of p.docs) {
      // a gap between documents, so that a run never spans two of them
      if (seq.length) seq.push("");
      // stop words are not in the index: runs are counted without them
      for (const w of words(htmlText(d.title) + " \n " + htmlText(d.text))) if (!hub.stop.has(w)) seq.push(w);
    }
    p.seq = seq;
    p.set = new Set(seq);
    p.set.delete("");
    for (const w of p.set) hub.df.set(w, (hub.df.get(w) || 0) + 1);
  }

  function finish() {
    if (hub.ready) return;
    hub.vocab = [...hub.df.keys()].sort();
    hub.ready = true;
  }

  // Everything read now (a query arrived before the idle slices were done).
  function ensure() {
    if (hub.ready || !hub.pages.size) return hub.ready;
    while (todo.length) readPage(todo.pop());
    finish();
    return true;
  }

  // word -> positions on the page, made when a page is first judged
  function posOf(p) {
    if (!p.pos) {
      p.pos = new Map();
      p.seq.forEach((w, i) => {
        if (!w) return;
        const l = p.pos.get(w);
        if (l) l.push(i);
        else p.pos.set(w, [i]);
      });
    }
    return p.pos;
  }

  function idf(w) {
    const df = hub.df.get(w) || 0;
    return Math.log(1 + hub.n / (df || 1));
  }

  // Is some indexed word `w` or longer, starting with `w`? (binary search in the sorted list)
  function prefixKnown(w) {
    let lo = 0;
    let hi = hub.vocab.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (hub.vocab[mid] < w) lo = mid + 1;
      else hi = mid;
    }
    return lo < hub.vocab.length && hub.vocab[lo].startsWith(w);
  }

  // ------------------------------------------------------------------------------------------
  // From what the user pasted or typed to the words lunr gets

  const EXC_NAME = /[A-Za-z_][A-Za-z0-9_.]*(?:Error|Exception|Interrupt|Exit|Warning|Failure)\b/g;
  const LEAD_BRACKETS = /^(?:\s*\[[^\]\n]{0,200}\]:?)+\s*/;
  const TRACEBACK = /Traceback \(most recent call last\)|\bFile "[^"\n]{1,500}", line [0-9]+/;
  const ERRORISH = /\b(?:error|errno|fatal|failed|failure|killed|abort|aborted|exception|not found|denied|unable|cannot|refused|timed out|timeout|exits with)\b/i;

  function stripPrefix(line) {
    return line.replace(LEAD_BRACKETS, "").trim();
  }

  function isWrapper(name) {
    const n = name.toLowerCase();
    return WRAPPERS.has(n) || WRAPPERS.has(n.split(".").pop());
  }

  // The exception line of a traceback-like text: the last line that starts with an exception
  // name and is not only a wrapper (a wrapper's line is used when nothing else is there).
  function exceptionLine(lines) {
    // Python's "Exception ignored in: ..." reports (a __del__ failing at exit, after the real
    // error) are left out, up to and including their exception line.
    const ignored = [];
    let skipping = false;
    for (const l of lines) {
      const s = stripPrefix(l);
      if (s.startsWith("Exception ignored in")) skipping = true;
      ignored.push(skipping);
      EXC_NAME.lastIndex = 0;
      const m = EXC_NAME.exec(s);
      if (skipping && m && m.index === 0) skipping = false;
    }
    let wrapper = null;
    for (let i = lines.length - 1; i >= 0; i--) {
      if (ignored[i]) continue;
      const s = stripPrefix(lines[i]);
      EXC_NAME.lastIndex = 0;
      const m = EXC_NAME.exec(s);
      if (!m || m.index !== 0) continue;
      if (!isWrapper(m[0])) return s;
      if (wrapper === null) wrapper = s;
    }
    return wrapper;
  }

  // The one line of a multi-line text that search should use.
  function focusLine(text) {
    const lines = String(text)
      .split(/\r?\n|\r/)
      .map((l) => l.trimEnd())
      .filter((l) => l.trim());
    if (!lines.length) return "";
    const exc = exceptionLine(lines);
    if (exc) return exc;
    for (let i = lines.length - 1; i >= 0; i--) if (ERRORISH.test(lines[i])) return stripPrefix(lines[i]);
    return stripPrefix(lines[lines.length - 1]);
  }

  // A long single line (a traceback flattened by the search box, a log line with a long
  // argument list): from its last exception name on, if it has one.
  function focusOfLongLine(line) {
    let last = -1;
    EXC_NAME.lastIndex = 0;
    for (let m = EXC_NAME.exec(line); m; m = EXC_NAME.exec(line)) if (!isWrapper(m[0])) last = m.index;
    return last >= 0 ? line.slice(last) : stripPrefix(line);
  }

  // A path names a place on the user's machine; only its last part (a file name) can be in
  // the hub.
  function dropDirectories(line) {
    return line
      .split(/(\s+)/)
      .map((t) => {
        const i = t.lastIndexOf("/");
        const path = i >= 0 && i < t.length - 1 && t.indexOf("/") !== i; // `[1/3]` is no path
        return path ? t.slice(i + 1) : t;
      })
      .join("");
  }

  function known(w) {
    return !hub.ready || hub.df.has(w);
  }

  // prepare(raw, {pasted}) -> the query lunr gets, and what the results are judged by:
  //   words: sent to lunr (Material adds its trailing wildcard to each);
  //   terms: the words a good page must hold (no stop words: the index has none);
  //   prefix: terms that are only the start of indexed words (the user is typing one).
  function prepare(raw, opts) {
    const text = String(raw || "");
    if (text.trim()) ensure();
    const trimmed = text.trim();
    const multiline = /[\r\n]/.test(trimmed);
    const traceback = TRACEBACK.test(text);
    const pasted = !!(opts && opts.pasted);
    let focus = trimmed;
    let distilled = false;
    if (multiline) {
      focus = focusLine(text);
      distilled = true;
    } else if (focus.length > LONG_INPUT || traceback) {
      focus = focusOfLongLine(focus);
      distilled = true;
    }
    if (distilled) {
      // an error message says what went wrong first; a compiler command line follows
      focus = dropDirectories(focus);
      if (focus.length > MAX_FOCUS) focus = focus.slice(0, MAX_FOCUS);
    }
    const ws = words(focus);
    const typing = !pasted && !distilled;
    const out = [];
    const unknown = [];
    const prefix = new Set();
    ws.forEach((w, i) => {
      // In text taken from a log, numbers are line numbers, pids, times and sizes.
      if (distilled && DIGITS.test(w) && ws.length > 6) return;
      // a lone letter (`can't` -> `t`) would match every word that starts with it
      if (w.length === 1 && !DIGITS.test(w) && ws.length > 1) return;
      if (hub.stop.has(w)) {
        if (!distilled) out.push(w); // as typed: Material's own handling of them is kept
        return;
      }
      if (known(w)) out.push(w);
      else if ((typing && i === ws.length - 1) || (w.length >= 4 && prefixKnown(w))) {
        out.push(w);
        prefix.add(w);
      } else unknown.push(w);
    });
    // a message says what went wrong first (a command line, a list of flags may follow): the
    // words it starts with are searched for and judged, the most distinctive of them sent
    const all = [...new Set(out)].slice(0, distilled ? JUDGE_TERMS : undefined);
    let kept = all;
    if (kept.length > MAX_TERMS && hub.ready) {
      const best = new Set(
        kept
          .filter((w) => !hub.stop.has(w))
          .map((w, i) => [w, idf(w), i])
          .sort((a, b) => b[1] - a[1] || b[2] - a[2])
          .slice(0, MAX_TERMS)
          .map((x) => x[0]),
      );
      kept = kept.filter((w) => best.has(w));
    }
    return {
      raw: text,
      focus,
      words: kept,
      // judged in order: the hub quotes an error line as a line
      terms: all.filter((w) => !hub.stop.has(w)),
      prefix: [...prefix],
      unknown,
      lunr: kept.join(" "),
      multiline,
      traceback,
      distilled,
      pasted,
    };
  }

  // ------------------------------------------------------------------------------------------
  // Judging and ordering what lunr found

  function positions(page, w, isPrefix) {
    const pos = posOf(page);
    if (!isPrefix) return pos.get(w) || [];
    const out = [];
    for (const [k, l] of pos) if (k.startsWith(w)) out.push(...l);
    return out;
  }

  // The run of consecutive query terms found as consecutive words in `seq`-positions that
  // carries the most weight: [weight, length].
  // A number on the page may sit inside the run (a line number, a size): the query's own
  // numbers are left out of long queries.
  function bestRun(pos, terms, prefix, seq) {
    let best = [0, 0];
    let prev = new Map(); // position -> [weight, length] of the run ending there
    for (const w of terms) {
      const cur = new Map();
      const wt = idf(w);
      for (const p of pos(w, prefix.has(w))) {
        const [pw, pl] = prev.get(p - 1) || (DIGITS.test(seq[p - 1] || "") && prev.get(p - 2)) || [0, 0];
        const r = [pw + wt, pl + 1];
        cur.set(p, r);
        if (r[0] > best[0]) best = r;
      }
      prev = cur;
    }
    return best;
  }

  // judge(prepared, groups) -> {groups, good, best, scored}: Material's result groups (one per
  // page) re-ordered and trimmed, and whether any page is a good answer.
  //
  // A page holds the query when one run of consecutive words on it carries at least RUN_SHARE
  // of the query's weight (idf): the error line as the hub quotes it, not the same words
  // scattered over prose. Those pages come first, each group in lunr's order. Some page is a
  // good answer when the first holds the query, or when it holds CLEAR_SHARE of it and lunr
  // scores it CLEAR_MARGIN times above the next page, or when a few typed keywords (at most
  // KEYWORDS) are all on the first page.
  const RUN_SHARE = 0.6;
  const CLEAR_SHARE = 0.25;
  const CLEAR_MARGIN = 2;
  const KEYWORDS = 4;
  // One traceback frame and nothing else, in a function many pages name (`step`, `forward`):
  // every traceback through it has that frame, so it names no failure, however many pages
  // quote it. A rare function (`_exec_reduce_grads`) is still searched as usual.
  const FRAME_ONLY = /^\s*File "[^"\n]+", line \d+, in (\S+)\s*$/;
  const COMMON_SHARE = 0.05;
  function genericFrame(q) {
    const m = FRAME_ONLY.exec(q.raw || "");
    if (!m || !hub.ready || !hub.n) return false;
    const ws = words(m[1]).filter((w) => w.length > 1);
    return ws.length > 0 && ws.every((w) => (hub.df.get(w) || 0) >= COMMON_SHARE * hub.n);
  }
  function judge(q, groups) {
    if (genericFrame(q)) return { groups: groups.slice(0, 3), good: false, best: null, scored: [], frame: true };
    const terms = q.terms || [];
    if (!hub.ready || !terms.length || !groups.length) {
      // nothing found for words the hub has, or only words it does not have
      const none = (terms.length > 0 && !groups.length) || (!terms.length && q.unknown.length > 0);
      return { groups, good: !none, best: null, scored: [] };
    }
    const prefix = new Set(q.prefix || []);
    const total = terms.reduce((n, w) => n + idf(w), 0);
    const scored = groups.map((items, i) => {
      const page = hub.pages.get(pageOf(items[0].location));
      const score = Math.max(...items.map((it) => it.score || 0));
      if (!page) return { items, i, score, share: 0, exact: false, every: false, whole: false };
      const [weight, len] = bestRun((w, p) => positions(page, w, p), terms, prefix, page.seq);
      const share = total ? weight / total : 0;
      const need = Math.min(terms.length, 2);
      const exact = len >= need && share >= RUN_SHARE - 1e-9;
      const every = terms.every((w) => positions(page, w, prefix.has(w)).length > 0);
      return { items, i, score, share, exact, every, whole: len === terms.length };
    });
    const top = Math.max(...scored.map((s) => s.score));
    scored.sort((a, b) => b.exact - a.exact || b.score - a.score || a.i - b.i);
    const best = scored[0];
    const second = scored.length > 1 ? scored[1].score : 0;
    // or one page far ahead of the rest that holds a good part of the line, or (a few
    // keywords, typed) a page that has every one of them
    const good =
      best.exact ||
      (best.share >= CLEAR_SHARE && best.score >= CLEAR_MARGIN * second) ||
      (!q.distilled && !q.pasted && terms.length <= KEYWORDS && best.every);
    let keep = scored.filter((s) => s.exact || s.score >= KEEP_RATIO * top);
    if (!good) keep = keep.slice(0, 3);
    // Material's Enter key opens the result with the highest data-md-score: keep the scores in
    // the order shown
    let ceiling = Infinity;
    const out = keep.map((s) => {
      const cap = Math.min(s.score, ceiling * 0.999);
      const k = s.score > 0 ? cap / s.score : 1;
      if (cap > 0) ceiling = cap;
      return s.items.map((it) => Object.assign({}, it, { score: (it.score || 0) * k }));
    });
    return { groups: out, good, best, scored };
  }
  // ------------------------------------------------------------------------------------------
  // The page: wrap the Worker class for Material's search worker

  const api = { words, prepare, judge, setup, focusLine, hub, HANDOFF_KEY, HANDOFF_HASH };
  self.DenpexSearch = api;
  if (typeof document === "undefined") return;

  const Base = self.Worker;
  const input = document.querySelector("input.md-search__input");
  if (typeof Base !== "function" || !input) return;

  const pending = []; // prepared queries in the order sent; the worker answers in order
  let pasted = null; // {text, value}: the last paste, as pasted and as the box shows it

  class DenpexSearchWorker extends Base {
    constructor(url, options) {
      super(url, options);
      this.dxSearch = /workers\/search\.[^/]*\.js/.test(String(url));
    }

    postMessage(message, ...rest) {
      if (this.dxSearch && message && typeof message === "object") {
        try {
          if (message.type === SETUP) setup(message.data);
        } catch (exc) {
          console.warn("denpex-search: results will not be judged:", exc);
        }
        if (message.type === QUERY) {
          let q = null;
          try {
            const value = String(message.data || "");
            const fromPaste = !!pasted && pasted.value === value;
            q = prepare(fromPaste ? pasted.text : value, { pasted: fromPaste });
            q.value = value;
            message = { type: QUERY, data: q.lunr };
          } catch (exc) {
            console.warn("denpex-search: query left as typed:", exc);
            q = null;
          }
          pending.push(q); // one per query, so that results stay paired with their query
        }
      }
      return super.postMessage(message, ...rest);
    }

    addEventListener(type, listener, options) {
      if (!this.dxSearch || type !== "message" || typeof listener !== "function") {
        return super.addEventListener(type, listener, options);
      }
      const wrapped = (ev) => {
        const msg = ev.data;
        if (!msg || msg.type !== RESULT) return listener.call(this, ev);
        const q = pending.shift() || null;
        let data = msg.data;
        let verdict = null;
        try {
          if (q && data && Array.isArray(data.items)) {
            verdict = judge(q, data.items);
            data = Object.assign({}, data, { items: verdict.groups });
          }
        } catch (exc) {
          console.warn("denpex-search: results left as found:", exc);
        }
        listener.call(this, { type: "message", data: { type: RESULT, data }, target: this });
        annotate(q, verdict);
      };
      return super.addEventListener(type, wrapped, options);
    }
  }
  self.Worker = DenpexSearchWorker;

  // ------------------------------------------------------------------------------------------
  // Search on any paste, and the note under the result count

  const kick = () => input.dispatchEvent(new KeyboardEvent("keyup", { bubbles: true }));

  input.addEventListener("paste", (ev) => {
    const text = ev.clipboardData ? ev.clipboardData.getData("text/plain") : "";
    if (!text || !/[\r\n]/.test(text.trim())) return; // a one-line paste: the input event follows
    // A single-line box would glue the lines together: show the line that is searched for, keep
    // the whole text for the Diagnose page.
    ev.preventDefault();
    const q = prepare(text, { pasted: true });
    const shown = q.focus.length > 300 ? q.focus.slice(0, 300) : q.focus;
    input.value = shown;
    pasted = { text, value: shown };
    input.dispatchEvent(new InputEvent("input", { bubbles: true, inputType: "insertFromPaste" }));
  });

  input.addEventListener("input", (ev) => {
    if (pasted && input.value !== pasted.value) pasted = null;
    if (ev.inputType === "insertFromPaste" && !pasted && input.value.length > 0) {
      pasted = { text: input.value, value: input.value };
    }
    // Material reads the box on keyup only; a context-menu or middle-click paste, a drop or an
    // input method change the value without one.
    kick();
  });

  function diagnoseHref() {
    const a = document.querySelector('a[href$="diagnose.html"]');
    return a ? a.href : null;
  }

  function handOff(text) {
    const href = diagnoseHref();
    if (!href) return;
    try {
      sessionStorage.setItem(HANDOFF_KEY, text);
      location.assign(href);
    } catch (exc) {
      location.assign(href.split("#")[0] + HANDOFF_HASH + encodeURIComponent(text));
    }
  }

  function note() {
    let n = document.getElementById("dx-search-note");
    if (!n) {
      const meta = document.querySelector(".md-search-result__meta");
      if (!meta) return null;
      n = document.createElement("div");
      n.id = "dx-search-note";
      n.className = "dx-search-note";
      n.setAttribute("role", "status");
      meta.after(n);
    }
    return n;
  }

  function annotate(q, verdict) {
    const n = note();
    if (!n) return;
    n.replaceChildren();
    n.hidden = true;
    n.dataset.state = "";
    // the box value these results answer (tests wait for it)
    n.dataset.query = q ? q.value : "";
    if (!q || !q.raw.trim()) return;
    const meta = document.querySelector(".md-search-result__meta");
    const parts = [];
    if (verdict && !verdict.good) {
      n.dataset.state = "no-good-match";
      if (meta) meta.textContent = "No good match";
      const p = document.createElement("p");
      p.className = "dx-search-none";
      p.textContent = verdict.frame
        ? "No entry in this hub matches this error text: a traceback frame alone names no failure. Search for the exception line (the last line of the traceback), or paste the whole traceback."
        : verdict.groups.length
          ? "No entry in this hub matches this error text well: the pages below share only some of its words."
          : "No entry in this hub matches this error text.";
      parts.push(p);
    } else if (verdict && verdict.best && verdict.best.exact) {
      n.dataset.state = "exact";
    }
    if (q.distilled) {
      const p = document.createElement("p");
      p.className = "dx-search-focus";
      p.append("Searched for: ");
      const c = document.createElement("code");
      c.textContent = q.words.join(" ");
      p.append(c);
      parts.push(p);
    }
    const href = diagnoseHref();
    if ((q.multiline || q.traceback) && href) {
      const p = document.createElement("p");
      p.className = "dx-search-diagnose";
      const lines = q.raw.split("\n").length;
      p.append(
        q.traceback ? "This looks like a traceback" : `This is ${lines} lines of log`,
        ": the Diagnose page reads all of it, in this browser. ",
      );
      const b = document.createElement("button");
      b.type = "button";
      b.className = "dx-search-handoff";
      b.textContent = "Diagnose the pasted text";
      const text = q.raw;
      b.addEventListener("click", () => handOff(text));
      p.append(b);
      parts.push(p);
    }
    if (parts.length) {
      n.append(...parts);
      n.hidden = false;
    }
  }
})();
