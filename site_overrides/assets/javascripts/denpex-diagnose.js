// "Diagnose a log": the page's UI around the JavaScript engine (assets/denpex/engine.js, built
// from js/denpex-engine/) and the rule pack the hub ships (assets/denpex/rulepack.js).
//
// The log never leaves the page: it is read and diagnosed in a Web Worker made from a Blob of
// the engine's own source (a worker script file cannot be loaded from file://; a Blob worker
// can), so a file of tens of MB does not freeze the page. Where no worker can be made, the same
// engine runs in the page itself. Every text from the log or the pack is inserted as text
// (textContent), never as HTML.
/* global denpexEngineFactory */
(function () {
  "use strict";
  const root = document.getElementById("dx-diagnose");
  if (!root) return;
  const PACK = self.DENPEX_RULEPACK;
  const script = document.currentScript;
  // The site root, from this script's own URL (assets/javascripts/denpex-diagnose.js).
  const SITE = script && script.src ? script.src.replace(/assets\/javascripts\/denpex-diagnose\.js(\?.*)?$/, "") : "";

  // ------------------------------------------------------------------------------------------
  // DOM helpers (text only)
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else e.setAttribute(k, v);
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      e.append(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    }
    return e;
  }

  // Entry text uses `code` spans; show them as code, everything else as text.
  function inline(text) {
    const parts = String(text || "").split("`");
    return parts.map((p, i) => (i % 2 ? el("code", { text: p }) : document.createTextNode(p)));
  }

  function entryLink(c) {
    return el("a", { href: SITE + c.url, class: "dx-entry-link" }, c.title);
  }

  function codeBlock(text) {
    const pre = el("pre", { class: "dx-cmd" }, el("code", { text }));
    const btn = el("button", { type: "button", class: "dx-copy md-button", title: "Copy to clipboard" }, "Copy");
    btn.addEventListener("click", () => {
      const done = () => {
        btn.textContent = "Copied";
        setTimeout(() => (btn.textContent = "Copy"), 1500);
      };
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(text).then(done, () => selectText(pre));
      } else selectText(pre);
    });
    return el("div", { class: "dx-cmd-wrap" }, pre, btn);
  }

  function selectText(node) {
    const r = document.createRange();
    r.selectNodeContents(node);
    const s = window.getSelection();
    s.removeAllRanges();
    s.addRange(r);
  }

  // ------------------------------------------------------------------------------------------
  // Input UI
  const paste = el("textarea", {
    id: "dx-paste",
    class: "dx-paste",
    rows: "10",
    spellcheck: "false",
    placeholder: "Paste a traceback or a whole log here (it is diagnosed as soon as it is pasted)",
    "aria-label": "Log text",
  });
  const runBtn = el("button", { type: "button", id: "dx-run", class: "md-button md-button--primary" }, "Diagnose the text");
  const fileInput = el("input", { type: "file", id: "dx-files", multiple: "multiple", class: "dx-file" });
  const dirInput = el("input", { type: "file", id: "dx-folder", class: "dx-file", webkitdirectory: "", multiple: "multiple" });
  const drop = el(
    "div",
    { id: "dx-drop", class: "dx-drop", tabindex: "0" },
    el("strong", {}, "Drop log files or a folder here"),
    " (one file per rank or per node; .gz is read too), or ",
    el("label", { class: "dx-pick" }, "choose files", fileInput),
    " or ",
    el("label", { class: "dx-pick" }, "a folder", dirInput),
    ".",
  );
  const progress = el("progress", { id: "dx-progress", max: "1", value: "0", hidden: "" });
  const status = el("p", { id: "dx-status", class: "dx-status", role: "status" }, "Nothing is uploaded: the diagnosis runs in this page.");
  const result = el("div", { id: "dx-result", class: "dx-result", "aria-live": "polite" });
  root.append(paste, el("div", { class: "dx-actions" }, runBtn), drop, progress, status, result);
  root.dataset.state = "idle";

  if (!PACK || !self.DenpexEngine) {
    status.textContent = "The rule pack or the engine did not load: this page needs assets/denpex/ of the hub.";
    root.dataset.state = "error";
    return;
  }

  // ------------------------------------------------------------------------------------------
  // Running the engine: in a worker made from the engine's source, else in the page
  function workerMain() {
    /* global DenpexEngine */
    self.postMessage({ ready: true });
    self.onmessage = async (ev) => {
      const { pack, inputs } = ev.data;
      try {
        const a = new DenpexEngine.Analysis(pack);
        const total = inputs.reduce((n, i) => n + (i.size || 1), 0);
        let before = 0;
        for (const inp of inputs) {
          let data = inp.text;
          let warnings = [];
          if (data === undefined) {
            const opened = await DenpexEngine.openSource(inp.name, new Uint8Array(await inp.file.arrayBuffer()));
            data = opened.bytes;
            warnings = opened.warnings;
          }
          const size = inp.size || 1;
          a.addSource(inp.name, data, {
            isFile: inp.isFile,
            warnings,
            onProgress: (d, t) => self.postMessage({ progress: (before + (t ? (d / t) * size : size)) / total, name: inp.name }),
          });
          before += size;
        }
        self.postMessage({ report: a.finish() });
      } catch (exc) {
        self.postMessage({ error: String((exc && exc.message) || exc) });
      }
    };
  }

  let worker = null;
  let workerBroken = false;
  function getWorker() {
    if (worker || workerBroken) return worker;
    try {
      const src =
        "const DenpexEngine = (" + denpexEngineFactory.toString() + ")();\n(" + workerMain.toString() + ")();\n";
      // From file:// Chromium refuses a blob: worker ("Not allowed to load local resource")
      // but runs a data: one (an opaque origin, which is all the engine needs); over http(s)
      // a blob: worker is the usual choice.
      const url =
        location.protocol === "file:"
          ? "data:text/javascript;charset=utf-8," + encodeURIComponent(src)
          : URL.createObjectURL(new Blob([src], { type: "text/javascript" }));
      // the browser's own Worker: on file:// the hub's iframe-worker shim (for Material's
      // search) replaces window.Worker, and main.html keeps the native one for this page
      const NativeWorker = "DenpexNativeWorker" in self ? self.DenpexNativeWorker : self.Worker;
      if (typeof NativeWorker !== "function") throw new Error("no Worker in this browser");
      worker = new NativeWorker(url);
      worker.dxReady = false;
    } catch (exc) {
      workerBroken = true;
      worker = null;
    }
    return worker;
  }

  async function runInPage(inputs, onProgress) {
    const E = self.DenpexEngine;
    const a = new E.Analysis(PACK);
    for (const inp of inputs) {
      let data = inp.text;
      let warnings = [];
      if (data === undefined) {
        const opened = await E.openSource(inp.name, new Uint8Array(await inp.file.arrayBuffer()));
        data = opened.bytes;
        warnings = opened.warnings;
      }
      a.addSource(inp.name, data, { isFile: inp.isFile, warnings });
      onProgress(inputs.indexOf(inp) + 1, inputs.length);
    }
    return a.finish();
  }

  let running = 0;
  let started = 0;
  function run(inputs) {
    const token = ++running;
    started = performance.now();
    root.dataset.state = "running";
    progress.hidden = false;
    progress.value = 0;
    status.textContent = `Reading ${describe(inputs)} in this browser…`;
    const finish = (report, how) => {
      if (token !== running) return;
      progress.value = 1;
      progress.hidden = true;
      render(report, inputs, how);
      root.dataset.state = "done";
    };
    const fail = (msg) => {
      if (token !== running) return;
      progress.hidden = true;
      status.textContent = `Could not diagnose: ${msg}`;
      root.dataset.state = "error";
    };
    const inPage = () =>
      runInPage(inputs, (d, t) => (progress.value = d / t)).then(
        (r) => finish(r, "in this page"),
        (e) => fail(String((e && e.message) || e)),
      );
    const w = getWorker();
    if (!w) return inPage();
    // A worker the browser refuses to start may fail silently: without a word from it in a few
    // seconds, run in the page.
    const watchdog = setTimeout(() => {
      if (!w.dxReady && token === running) {
        w.terminate();
        worker = null;
        workerBroken = true;
        inPage();
      }
    }, 5000);
    w.onmessage = (ev) => {
      w.dxReady = true;
      clearTimeout(watchdog);
      if (token !== running) return;
      const m = ev.data;
      if (m.ready) return;
      if (m.progress !== undefined) {
        progress.value = m.progress;
        status.textContent = `Reading ${m.name}: ${Math.round(m.progress * 100)}%`;
      } else if (m.report) finish(m.report, "in a background worker");
      else if (m.error) fail(m.error);
    };
    w.onerror = (ev) => {
      // a worker that cannot start here (a browser policy): run in the page instead
      ev.preventDefault();
      clearTimeout(watchdog);
      worker = null;
      workerBroken = true;
      inPage();
    };
    w.postMessage({ pack: PACK, inputs });
  }

  function describe(inputs) {
    if (inputs.length === 1) {
      const i = inputs[0];
      return i.text !== undefined ? "the pasted text" : `${i.name} (${fmtBytes(i.size)})`;
    }
    return `${inputs.length} files (${fmtBytes(inputs.reduce((n, i) => n + (i.size || 0), 0))})`;
  }

  function fmtBytes(n) {
    if (n < 1024) return `${n} bytes`;
    if (n < 1 << 20) return `${(n / 1024).toFixed(1)} KiB`;
    return `${(n / (1 << 20)).toFixed(1)} MiB`;
  }

  function runText() {
    const text = paste.value;
    if (!text.trim()) {
      status.textContent = "Paste a log first.";
      return;
    }
    run([{ name: "<text>", text, isFile: false, size: text.length }]);
  }

  function runFiles(files) {
    const inputs = [...files]
      .filter((f) => f && !f.name.startsWith("."))
      .map((f) => ({ name: f.dxPath || f.webkitRelativePath || f.name, file: f, isFile: true, size: f.size }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    if (!inputs.length) {
      status.textContent = "No files to read.";
      return;
    }
    run(inputs);
  }

  runBtn.addEventListener("click", runText);
  paste.addEventListener("paste", () => setTimeout(runText, 0));
  paste.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) runText();
  });
  fileInput.addEventListener("change", () => runFiles(fileInput.files));
  dirInput.addEventListener("change", () => runFiles(dirInput.files));
  for (const t of ["dragenter", "dragover"]) {
    drop.addEventListener(t, (ev) => {
      ev.preventDefault();
      drop.classList.add("dx-drop--over");
    });
  }
  drop.addEventListener("dragleave", () => drop.classList.remove("dx-drop--over"));
  drop.addEventListener("drop", async (ev) => {
    ev.preventDefault();
    drop.classList.remove("dx-drop--over");
    const items = ev.dataTransfer.items ? [...ev.dataTransfer.items] : [];
    const entries = items.map((i) => (i.webkitGetAsEntry ? i.webkitGetAsEntry() : null)).filter(Boolean);
    if (entries.some((e) => e.isDirectory)) runFiles(await walk(entries));
    else runFiles(ev.dataTransfer.files);
  });

  // The files of dropped folders, each with its path from the dropped item (as a folder walk
  // names them, so file-name ranks such as attempt_0/3/stderr.log are seen).
  async function walk(entries) {
    const out = [];
    const visit = async (entry) => {
      if (entry.isFile) {
        const f = await new Promise((res, rej) => entry.file(res, rej));
        f.dxPath = entry.fullPath.replace(/^\//, "");
        out.push(f);
      } else if (entry.isDirectory) {
        const reader = entry.createReader();
        for (;;) {
          const batch = await new Promise((res, rej) => reader.readEntries(res, rej));
          if (!batch.length) break;
          for (const e of batch) if (!e.name.startsWith(".")) await visit(e);
        }
      }
    };
    for (const e of entries) await visit(e);
    return out;
  }

  // ------------------------------------------------------------------------------------------
  // The report
  const VERDICTS = {
    confident: "Root cause",
    differential: "Differential: the evidence fits more than one entry",
    probable: "Probable cause",
    none: "No entry of the knowledge base matched",
  };
  const BASIS = {
    "earliest-root-cause-evidence": "the earliest line of the root cause's evidence",
    "torchelastic-first-observed-failure": "torchelastic's first observed failure",
    "sigkill-in-torchelastic-summary": "killed by SIGKILL, as torchelastic's summary reports",
    "earliest-unrecognised-error": "the earliest error no entry explains",
    "absent-from-collateral-reports": "the only rank missing from the collateral reports",
    "earliest-hypothesis-evidence": "the first ranked line of the leading hypothesis",
  };

  function evidenceTable(evidence) {
    if (!evidence || !evidence.length) return null;
    return el(
      "table",
      { class: "dx-evidence" },
      el("thead", {}, el("tr", {}, el("th", {}, "line"), el("th", {}, "rank"), el("th", {}, "text"))),
      el(
        "tbody",
        {},
        evidence.map((e) =>
          el(
            "tr",
            {},
            el("td", { class: "dx-loc" }, `${e.file}:${e.line}`),
            el("td", { class: "dx-rank" }, e.rank === null ? "–" : String(e.rank) + (e.host ? ` (${e.host})` : "")),
            el("td", {}, el("code", { text: e.text })),
          ),
        ),
      ),
    );
  }

  function factList(title, outcomes) {
    if (!outcomes || !outcomes.length) return null;
    return el(
      "div",
      { class: "dx-facts" },
      el("strong", {}, title),
      el(
        "ul",
        {},
        outcomes.map((o) =>
          el("li", {}, inline(o.tell || o.fact), o.lines.length ? el("div", {}, o.lines.map((l) => el("code", { text: `${l.file}:${l.line}: ${l.text}` }))) : null),
        ),
      ),
    );
  }

  function card(c, opts) {
    const steps = c.fix.steps || [];
    // A hypothesis of a differential: what to do once it is settled, folded away.
    const fixParts = [
      steps.length ? el("h4", {}, "Fix") : null,
      steps.length ? el("ol", { class: "dx-fix" }, steps.map((s) => el("li", {}, inline(s)))) : null,
      c.fix.workaround ? el("p", {}, el("strong", {}, "Workaround: "), inline(c.fix.workaround)) : null,
      c.verify && c.verify.command ? el("h4", {}, "Verify") : null,
      c.verify && c.verify.command ? codeBlock(c.verify.command) : null,
      c.verify && c.verify.expected ? el("p", { class: "dx-expected" }, "Expected: ", inline(c.verify.expected)) : null,
    ];
    const fix = opts.primary ? fixParts : [el("details", { class: "dx-fix-details" }, el("summary", {}, "Fix and verify, if this is the one"), fixParts)];
    return el(
      "section",
      { class: `dx-card${opts.primary ? " dx-card--primary" : ""}`, "data-entry": c.id },
      el(
        "h3",
        {},
        opts.rank ? el("span", { class: "dx-rankno" }, `${opts.rank}. `) : null,
        entryLink(c),
      ),
      el(
        "p",
        { class: "dx-meta" },
        el("code", { text: c.id }),
        ` · confidence ${c.confidence.toFixed(2)} · ${c.phase} · ${c.severity}`,
        c.hypothesis ? " · hypothesis (the rule did not fire in full)" : "",
        c.ranks.length ? ` · ranks ${c.ranks.join(", ")}` : "",
      ),
      el("p", { class: "dx-card-summary" }, inline(c.summary)),
      fix,
      el("h4", {}, "Evidence"),
      evidenceTable(c.evidence),
      factList("Facts for it", c.facts_for),
      factList("Facts against it", c.facts_against),
      factList("Facts that could not be checked (not in the log)", c.facts_unknown),
      el("p", {}, el("a", { href: SITE + c.url }, "Read the entry →")),
    );
  }

  function commands(title, items) {
    if (!items || !items.length) return null;
    return el(
      "div",
      { class: "dx-commands" },
      el("h3", {}, title),
      items.map((i) => el("div", { class: "dx-command" }, el("p", {}, el("code", { text: i.entry }), ": ", inline(i.check)), codeBlock(i.command), i.shows ? el("p", { class: "dx-expected" }, inline(i.shows)) : null)),
    );
  }

  function render(report, inputs, how) {
    result.textContent = "";
    const byId = new Map(PACK.entries.map((e) => [e.id, e]));
    const linkId = (id) => {
      const e = byId.get(id);
      return e ? el("a", { href: SITE + e.page }, e.title) : el("code", { text: id });
    };
    result.append(el("h2", { id: "dx-verdict", class: `dx-verdict dx-verdict--${report.verdict}`, "data-verdict": report.verdict }, VERDICTS[report.verdict] || report.verdict));
    const init = el(
      "p",
      { id: "dx-initiating", class: "dx-initiating" },
      el("strong", {}, "Initiating rank: "),
      report.initiating_rank === null
        ? "not determined"
        : `${report.initiating_rank}${report.initiating_host ? ` on ${report.initiating_host}` : ""}`,
      report.initiating_basis ? ` (${BASIS[report.initiating_basis] || report.initiating_basis})` : "",
    );
    init.dataset.rank = report.initiating_rank === null ? "" : String(report.initiating_rank);
    result.append(init);
    if (report.root_cause) result.append(card(report.root_cause, { primary: true }));
    if (report.differential.length) {
      result.append(
        el("p", {}, "The evidence fits each of these entries; run the read-only commands below to tell them apart (or paste their output with the log and diagnose again)."),
        el("ol", { id: "dx-differential", class: "dx-differential" }, report.differential.map((c) => el("li", { "data-entry": c.id }, entryLink(c), ` (confidence ${c.confidence.toFixed(2)}${c.hypothesis ? ", hypothesis" : ""})`))),
      );
      result.append(commands("Tell them apart (read-only commands)", report.tell_apart));
      if (report.tells.length) {
        result.append(el("h3", {}, "Documented tells"), el("ul", {}, report.tells.map((t) => el("li", {}, el("code", { text: t.entry }), " vs ", el("code", { text: t.versus }), ": ", inline(t.tell)))));
      }
      report.differential.forEach((c, i) => result.append(card(c, { rank: i + 1 })));
    }
    if (report.probable.length) {
      report.probable.forEach((c) => result.append(card(c, { primary: true })));
      result.append(commands("Confirm it (read-only commands)", report.confirm));
    }
    if (report.collateral.length) {
      result.append(
        el("h3", {}, "Collateral (consequences of the failure, not its cause)"),
        el(
          "table",
          { id: "dx-collateral", class: "dx-collateral" },
          el("thead", {}, el("tr", {}, el("th", {}, "entry"), el("th", {}, "ranks"), el("th", {}, "lines"))),
          el(
            "tbody",
            {},
            report.collateral.map((c) => el("tr", { "data-entry": c.id }, el("td", {}, linkId(c.id)), el("td", {}, c.ranks.join(", ") || "–"), el("td", {}, String(c.count)))),
          ),
        ),
      );
    }
    if (report.consequences.length) {
      result.append(el("h3", {}, "Consequences"), el("ul", {}, report.consequences.map((c) => el("li", {}, linkId(c.id), " — caused by ", linkId(c.caused_by)))));
    }
    if (report.ruled_out.length) {
      result.append(el("h3", {}, "Ruled out by facts in the log"), el("ul", {}, report.ruled_out.map((c) => el("li", {}, linkId(c.id), ": ", c.facts_against.map((o) => inline(o.tell)))))); 
    }
    if (report.unrecognised_errors.length) {
      result.append(el("h3", {}, "Errors no entry recognises"), evidenceTable(report.unrecognised_errors));
      // The hub's own search on the first of them: the entries whose text is closest (what
      // `denpex-kb match` lists as related entries), with the search's own judgement.
      const first = report.unrecognised_errors[0].text.trim().slice(0, 200);
      result.append(el("p", { class: "dx-related" }, el("a", { id: "dx-search-error", href: SITE + "index.html?q=" + encodeURIComponent(first) }, "Search the hub for this error"), " (text similarity: a hint, not a diagnosis)"));
    }
    if (report.notes.length) result.append(el("h3", {}, "Notes"), el("ul", { class: "dx-notes" }, report.notes.map((n) => el("li", {}, n))));
    if (report.warnings && report.warnings.length) result.append(el("ul", { class: "dx-warnings" }, report.warnings.map((n) => el("li", {}, n))));
    const others = report.candidates.filter((c) => c.role === "root-cause" && c.id !== (report.root_cause || {}).id && !report.differential.concat(report.probable).some((h) => h.id === c.id));
    if (others.length) {
      result.append(el("details", {}, el("summary", {}, `Other entries that matched (${others.length})`), el("ul", {}, others.map((c) => el("li", {}, linkId(c.id), ` (confidence ${c.confidence.toFixed(2)}${c.shadowed_by ? `, shadowed by ${c.shadowed_by}` : ""}${c.hypothesis ? ", hypothesis" : ""})`)))));
    }
    const json = JSON.stringify(report, null, 2);
    const dl = el("a", { class: "md-button", download: "denpex-report.json", href: URL.createObjectURL(new Blob([json], { type: "application/json" })) }, "Download the report (JSON)");
    result.append(
      el("details", { class: "dx-json" }, el("summary", {}, "The report as JSON (the shape of denpex-kb match --format json)"), el("pre", {}, el("code", { id: "dx-report-json", text: json }))),
      el("p", {}, dl),
    );
    const lines = report.inputs.reduce((n, i) => n + i.lines, 0);
    const secs = ((performance.now() - started) / 1000).toFixed(1);
    result.querySelector("#dx-verdict").scrollIntoView({ block: "start" });
    status.textContent = `Read ${describe(inputs)}: ${lines.toLocaleString("en-US")} line${lines === 1 ? "" : "s"} in ${secs} s, diagnosed ${how}, rule pack ${report.rulepack.content_hash.slice(0, 19)}…; nothing left this page.`;
  }

  // Text handed over by the hub's search box (denpex-search.js, on a multi-line paste): in
  // sessionStorage, or in the URL fragment where storage is refused. Read once, then removed;
  // it never leaves the browser.
  (function takeHandOff() {
    const KEY = "denpex-diagnose-text";
    const HASH = "#dx-text=";
    let text = null;
    try {
      text = sessionStorage.getItem(KEY);
      if (text !== null) sessionStorage.removeItem(KEY);
    } catch (exc) {
      text = null;
    }
    if (text === null && location.hash.startsWith(HASH)) {
      try {
        text = decodeURIComponent(location.hash.slice(HASH.length));
      } catch (exc) {
        text = null;
      }
      history.replaceState(null, "", location.href.split("#")[0]);
    }
    if (text && text.trim()) {
      paste.value = text;
      runText();
    }
  })();
})();
