// denpex-kb's matching engine in JavaScript: a second implementation of the rule pack
// (docs/rule-pack-format.md), written against the Python engine (denpex_kb/engine/) as the
// reference. ES modules, no build step, no dependency; runs in browsers (a Web Worker) and Node.
//
//   import { diagnose } from "./index.js";
//   const report = diagnose(pack, [{ name: "train.log", data: bytesOrString }]);
//
// Steps, one module each: read -> normalise -> attribute -> facts -> scan -> evaluate ->
// diagnose -> explain. The report has the shape of `denpex-kb match --format json`
// (docs/report-format.md), less the CLI's text-index suggestions (`related`).

export { Analysis, diagnose, MAX_ACTIVE_RANK_PREFIXES, MAX_HITS_PER_SIGNAL, MAX_UNEXPLAINED } from "./analyse.js";
export { attributeAll, formatTime } from "./attribute.js";
export { MAX_LINE_CHARS } from "./normalise.js";
export { openSource, InputError } from "./read.js";
export { loadRulepack } from "./rules.js";
