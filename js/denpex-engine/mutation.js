// Deliberate misreadings of the rule pack format, for the mutation harness only
// (tools/mutate.mjs): each names one rule of docs/rule-pack-format.md read the wrong way. The
// harness runs the conformance vectors with one of them switched on at a time
// (DENPEX_MUTATION=<name> in Node) and requires that every one makes a vector fail: a rule that
// no vector checks is a rule a second implementation may get wrong unnoticed.
//
// Off by default, and always off in a browser (no process.env): MUTATION is null and every
// switch is one comparison with null.

const env = globalThis.process && globalThis.process.env ? globalThis.process.env.DENPEX_MUTATION : undefined;
export const MUTATION = env ? env : null;

// name -> the misreading (the rule it breaks)
export const MUTATIONS = {
  "cr-first-segment": "a line with carriage returns keeps its first non-blank segment, not its last (step 2)",
  "ansi-kept": "ANSI escapes are not removed (step 2)",
  "prefix-outermost-rank": "prefix_rank innermost is ignored: the outermost prefix gives the rank (step 3)",
  "prefix-levels-ignored": "a lower-level prefix after a higher-level one is stripped too (step 3)",
  "rank-marker-ignored": "rank markers are not looked for (step 4)",
  "file-name-rank-ignored": "file names give no rank (step 5)",
  "file-name-rank-base-name-only": "a file-name pattern with '/' is searched in the base name only (step 5)",
  "file-name-rank-before-marker": "a file-name rank wins over a rank marker in the line (steps 4-5)",
  "elastic-dash-closes-section": "a '-' separator closes the torchelastic summary section, not only the item (step 6)",
  "pid-map-ignored": "process lines give no rank through the pid or device map (step 7)",
  "lookback-none": "a line without a time of its own has none (step 10 look-back)",
  "lookback-unbounded": "the look-back has no 8 KiB bound (step 10)",
  "year-default-2000": "a time without a year always takes 2000, never the year of an earlier line (step 10)",
  "boilerplate-is-evidence": "boilerplate lines count for signals (step 9)",
  "all-any-counted-twice": "a signal in both all and any counts twice among the matched signals",
  "window-exclusive": "window_lines bounds are exclusive (span < W fits, not span <= W)",
  "window-ignored": "window_lines is ignored",
  "window-file-lines": "window positions are the file's line numbers, not the rank's own lines",
  "none-ignored": "none signals do not veto",
  "none-log-wide": "a none signal anywhere in the log vetoes every scope group",
  "scope-log-per-rank": "scope log is evaluated per rank",
  "scope-rank-log-wide": "scope rank is evaluated over the whole log",
  "version-fail-ignored": "a failing version condition does not stop the entry",
  "version-unknown-fails": "an unknown version condition (package not printed) stops the entry",
  "version-prerelease-excluded": "pre-releases do not satisfy a specifier",
  "point-earliest-chosen": "a firing's point is its earliest chosen occurrence, not its latest",
  "fatal-ignored": "fatal: false entries compete with fatal ones for the root",
  "threshold-ignored": "an entry below the threshold can be the root",
  "shadowing-ignored": "no entry is shadowed",
  "specificity-largest-firing": "an entry firing on several ranks counts the signals of its largest firing, not the union",
  "evidence-first-only": "a firing cites only the first line of each signal",
  "evidence-no-cap": "every evidence line is cited, not the first 12",
  "init-first-evidence": "with a root cause, the initiating rank is its first evidence line's, not its point's",
  "init-sigkill-ignored": "a SIGKILL in the torchelastic summary does not name the initiating rank",
  "init-absent-over-unrecognised": "a rank absent from the collateral reports wins over the earliest unrecognised error",
  "init-absent-ignored": "a rank absent from the collateral reports is never the initiating rank",
  "init-elastic-over-evidence": "with a root cause, torchelastic's first observed failure names the initiating rank",
  "init-hypothesis-ignored": "without a root cause, the leading hypothesis's evidence never names the initiating rank",
  "hypothesis-from-all-only": "an entry that saw only all signals becomes a hypothesis",
  "explains-ignored": "match.explains makes no consequence",
  "unfired-signal-explains": "an error line a signal matched is never an unrecognised error, even when none of that signal's entries fired",
  "explains-link-ignored": "an explains link same-rank holds whatever the ranks (read as log)",
};

if (MUTATION !== null && !(MUTATION in MUTATIONS)) throw new Error(`unknown DENPEX_MUTATION ${MUTATION}`);
