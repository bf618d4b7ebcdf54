"""Rule conformance vectors: the evaluation rules of docs/rule-pack-format.md, each checked on
a composed log with entries made for the purpose.

An entry example checks that one entry of the knowledge base fires on its log; it cannot say
which rank started the failure, which point won, what the score is, or that a misread window
bound makes no difference. These vectors do. Each one brings its own entries (complete pack
entries, made by `_entry`), which replace the pack's entries; the pack's globals stay. A
consumer evaluates its sources with them and checks what `expect` lists (semantics in
`RULE_SEMANTICS`). Every log here is composed (`provenance`), written for the rule it checks;
no line is quoted from a real program.

Each vector names the rule it pins (`rule`); js/denpex-engine/tools/mutate.mjs switches on
deliberate misreadings of those rules one at a time and requires that each makes a vector fail
(tests/test_mutations.py).
"""

from __future__ import annotations

import copy
from typing import Any

RULE_SEMANTICS = (
    "For each rule vector: replace the pack's entries by the vector's `entries` (keep the "
    "globals), read `sources` in order as one log (name null: a stream, no file-name rank; "
    "else a file of that name), and produce the report. Then check each member that `expect` "
    "lists: `verdict`, `root_cause` (the root cause's id or null), `initiating_rank`, "
    "`initiating_host`, `initiating_basis` equal the report's, `consequences` the sorted ids "
    "of the report's consequences, `unrecognised_lines` the line numbers of the report's "
    "unrecognised errors, in order; every id in `fired` is a "
    "candidate that is not a hypothesis; no id in `not_fired` is; for each id in "
    "`candidates`, that candidate (not a hypothesis) has the listed members: `confidence`, "
    "`specificity`, `shadowed_by`, `ranks`, `matched_signals` (sorted), `evidence_lines` (the "
    "line numbers of its cited evidence, in order) and `evidence_count` (how many lines it "
    "cites)."
)

PROVENANCE = "composed for the rule it checks (no real program printed these lines)"


def _entry(
    eid: str,
    signals: dict[str, str],
    *,
    all_: tuple[str, ...] = (),
    any_: tuple[str, ...] = (),
    none: tuple[str, ...] = (),
    scope: str = "rank",
    window_lines: int | None = None,
    fatal: bool = True,
    versions: tuple[tuple[str, str], ...] = (),
    role: str = "root-cause",
    explains: tuple[tuple[str, str], ...] = (),
) -> dict[str, Any]:
    """A complete pack entry (every member the pack schema requires) for a rule vector."""
    return {
        "id": eid,
        "title": f"rule vector entry {eid}",
        "summary": "An entry made for a rule conformance vector; it describes no real failure.",
        "framework": "deepspeed",
        "phase": "init",
        "failure_class": "crash",
        "severity": "high",
        "role": role,
        "page": f"entries/{eid}.html",
        "fix": {"steps": ["Nothing to fix: a conformance vector."], "workaround": None},
        "verify": {"command": "true", "expected": "nothing"},
        "look_alikes": [],
        "checklist": [],
        "signals": [
            {"id": sid, "pattern": pat, "ignore_case": False, "description": f"signal {sid}"}
            for sid, pat in signals.items()
        ],
        "match": {
            "scope": scope,
            "all": list(all_),
            "any": list(any_),
            "none": list(none),
            "window_lines": window_lines,
            "fatal": fatal,
            "versions": [{"package": p, "specifier": s} for p, s in versions],
            "weak": [],
            "facts": [],
            "explains": [{"id": i, "link": link} for i, link in explains],
        },
    }


def _stream(*lines: str) -> list[dict[str, Any]]:
    return [{"name": None, "log": "".join(line + "\n" for line in lines)}]


ELASTIC_SIGKILL = [
    "Traceback (most recent call last):",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
    "=" * 40,
    "train.py FAILED",
    "-" * 40,
    "Failures:",
    "  <NO_OTHER_FAILURES>",
    "-" * 40,
    "Root Cause (first observed failure):",
    "[0]:",
    "  time      : 2026-11-29_19:14:15",
    "  host      : node-a",
    "  rank      : 3 (local_rank: 3)",
    "  exitcode  : -9 (pid: 4242)",
    "  error_file: <N/A>",
    "  traceback : Signal 9 (SIGKILL) received by PID 4242",
    "=" * 40,
]


def rule_vectors() -> list[dict[str, Any]]:
    v: list[dict[str, Any]] = []

    def add(name: str, rule: str, description: str, entries, sources, expect) -> None:  # noqa: ANN001
        v.append(
            {
                "name": name,
                "rule": rule,
                "description": description,
                "provenance": PROVENANCE,
                "entries": sorted(entries, key=lambda e: e["id"]),
                "sources": sources,
                "expect": expect,
            }
        )

    add(
        "all-and-any-overlap-counts-once",
        "How an entry fires: matched signals are a set",
        "Signal a is listed in both all and any: two matched signals, score 0.70, not 0.80.",
        [
            _entry(
                "rv-overlap", {"a": "rvsig alpha", "b": "rvsig beta"}, all_=("a", "b"), any_=("a",)
            )
        ],
        _stream("rvsig alpha", "rvsig beta"),
        {
            "verdict": "confident",
            "root_cause": "rv-overlap",
            "candidates": {
                "rv-overlap": {"confidence": 0.7, "specificity": 2, "matched_signals": ["a", "b"]}
            },
        },
    )
    add(
        "window-bounds-are-inclusive",
        "How an entry fires, step 4: window_lines",
        "a and b lie 3 lines apart: window_lines 3 fires (the bound is inclusive), "
        "window_lines 2 does not.",
        [
            _entry(
                "rv-win-3",
                {"a": "rvsig wa", "b": "rvsig wb"},
                all_=("a",),
                any_=("b",),
                window_lines=3,
            ),
            _entry(
                "rv-win-2",
                {"c": "rvsig wc", "d": "rvsig wd"},
                all_=("c",),
                any_=("d",),
                window_lines=2,
            ),
        ],
        _stream(
            "rvsig wa", "filler", "filler", "rvsig wb", "rvsig wc", "filler", "filler", "rvsig wd"
        ),
        {"fired": ["rv-win-3"], "not_fired": ["rv-win-2"]},
    )
    add(
        "window-counts-the-rank-s-own-lines",
        "How an entry fires, step 4: window positions",
        "In one file, rank 0's two lines are 4 file lines apart but adjacent among rank 0's "
        "lines: window_lines 2 fires on rank 0.",
        [
            _entry(
                "rv-win-rank",
                {"a": "rvsig ra", "b": "rvsig rb"},
                all_=("a",),
                any_=("b",),
                window_lines=2,
            )
        ],
        _stream(
            "[rank0]: rvsig ra",
            "[rank1]: filler one",
            "[rank1]: filler two",
            "[rank1]: filler three",
            "[rank0]: rvsig rb",
        ),
        {"fired": ["rv-win-rank"], "candidates": {"rv-win-rank": {"ranks": [0]}}},
    )
    add(
        "none-vetoes-its-own-scope-group",
        "How an entry fires, step 1: none",
        "The vetoing signal occurs on rank 1 only: the entry fires on rank 0, not on rank 1.",
        [_entry("rv-none", {"a": "rvsig na", "n": "rvsig veto"}, any_=("a",), none=("n",))],
        _stream("[rank0]: rvsig na", "[rank1]: rvsig na", "[rank1]: rvsig veto"),
        {"fired": ["rv-none"], "candidates": {"rv-none": {"ranks": [0], "evidence_lines": [1]}}},
    )
    add(
        "scope-log-joins-ranks-scope-rank-does-not",
        "How an entry fires: scope",
        "a and b on different ranks: scope log fires, scope rank does not.",
        [
            _entry(
                "rv-scope-log", {"a": "rvsig la", "b": "rvsig lb"}, all_=("a", "b"), scope="log"
            ),
            _entry("rv-scope-rank", {"c": "rvsig kc", "d": "rvsig kd"}, all_=("c", "d")),
        ],
        _stream("[rank0]: rvsig la", "[rank1]: rvsig lb", "[rank0]: rvsig kc", "[rank1]: rvsig kd"),
        {"fired": ["rv-scope-log"], "not_fired": ["rv-scope-rank"], "root_cause": "rv-scope-log"},
    )
    add(
        "version-conditions-hold-fail-unknown",
        "How an entry fires, step 5: versions",
        "The log prints DeepSpeed 0.15.0rc1: >=0.14 holds (pre-releases included), <0.12 fails "
        "(the entry does not fire), a condition on transformers is unknown (fires, -0.10).",
        [
            _entry(
                "rv-ver-holds", {"a": "rvsig va"}, any_=("a",), versions=(("deepspeed", ">=0.14"),)
            ),
            _entry(
                "rv-ver-fails", {"b": "rvsig vb"}, any_=("b",), versions=(("deepspeed", "<0.12"),)
            ),
            _entry(
                "rv-ver-unknown",
                {"c": "rvsig vc"},
                any_=("c",),
                versions=(("transformers", ">=4.0"),),
            ),
        ],
        _stream("DeepSpeed info: version=0.15.0rc1", "rvsig va", "rvsig vb", "rvsig vc"),
        {
            "fired": ["rv-ver-holds", "rv-ver-unknown"],
            "not_fired": ["rv-ver-fails"],
            "candidates": {
                "rv-ver-holds": {"confidence": 0.65},
                "rv-ver-unknown": {"confidence": 0.5},
            },
        },
    )
    add(
        "point-is-the-latest-chosen-occurrence",
        "How an entry fires: the point; Diagnosis step 4: the earliest point",
        "Entry A (all a1, a2) is satisfied only at line 3, entry B at line 2: B is the root "
        "cause, though A's first line is earlier.",
        [
            _entry("rv-point-a", {"a1": "rvsig pa1", "a2": "rvsig pa2"}, all_=("a1", "a2")),
            _entry("rv-point-b", {"b": "rvsig pb"}, any_=("b",)),
        ],
        _stream("rvsig pa1", "rvsig pb", "rvsig pa2"),
        {"root_cause": "rv-point-b", "fired": ["rv-point-a", "rv-point-b"]},
    )
    add(
        "fatal-entries-first",
        "Diagnosis step 4: fatal",
        "A non-fatal entry fires first, a fatal one later: the fatal one is the root cause.",
        [
            _entry("rv-fatal-no", {"g": "rvsig gwarn"}, any_=("g",), fatal=False),
            _entry("rv-fatal-yes", {"f": "rvsig ffatal"}, any_=("f",)),
        ],
        _stream("rvsig gwarn", "rvsig ffatal"),
        {"root_cause": "rv-fatal-yes", "verdict": "confident"},
    )
    add(
        "below-threshold-is-never-the-root",
        "Diagnosis step 4: threshold",
        "Two unknown version conditions: 0.60 - 0.20 = 0.40 < 0.50: fired, but no root cause; "
        "the verdict is probable.",
        [
            _entry(
                "rv-threshold",
                {"t": "rvsig tlow"},
                any_=("t",),
                versions=(("torch", ">=1.0"), ("transformers", ">=1.0")),
            )
        ],
        _stream("rvsig tlow"),
        {
            "verdict": "probable",
            "root_cause": None,
            "fired": ["rv-threshold"],
            "candidates": {"rv-threshold": {"confidence": 0.4}},
        },
    )
    add(
        "shadowing",
        "Diagnosis step 2: shadowing",
        "Both entries match line 1; the second also matches line 2 (specificity 2 > 1): the "
        "first is shadowed (0.60 halved), the second is the root cause.",
        [
            _entry("rv-shadow-big", {"s": "rvsig shared", "x": "rvsig extra"}, all_=("s", "x")),
            _entry("rv-shadow-small", {"s": "rvsig shared"}, any_=("s",)),
        ],
        _stream("rvsig shared", "rvsig extra"),
        {
            "root_cause": "rv-shadow-big",
            "candidates": {"rv-shadow-small": {"shadowed_by": "rv-shadow-big", "confidence": 0.3}},
        },
    )
    add(
        "several-ranks-union-of-signals",
        "Score: an entry firing on several ranks",
        "Rank 0 matches u1, rank 1 matches u2: matched signals and specificity are the union (2).",
        [_entry("rv-union", {"u1": "rvsig uone", "u2": "rvsig utwo"}, any_=("u1", "u2"))],
        _stream("[rank0]: rvsig uone", "[rank1]: rvsig utwo"),
        {
            "candidates": {
                "rv-union": {
                    "specificity": 2,
                    "confidence": 0.7,
                    "matched_signals": ["u1", "u2"],
                    "ranks": [0, 1],
                }
            }
        },
    )
    add(
        "evidence-first-three-and-the-nearest-before",
        "How an entry fires: evidence without a window",
        "Signal e1 on lines 1-5, e2 on line 6: e1's first three lines, and its last line before "
        "e2's first; e2's line.",
        [
            _entry(
                "rv-evidence", {"e1": "rvsig eone", "e2": "rvsig etwo"}, all_=("e1",), any_=("e2",)
            )
        ],
        _stream(*["rvsig eone"] * 5, "rvsig etwo"),
        {"candidates": {"rv-evidence": {"evidence_lines": [1, 2, 3, 5, 6]}}},
    )
    add(
        "evidence-cites-twelve",
        "Score: evidence, cited",
        "The entry fires on 14 ranks, one line each: 14 evidence lines, 12 cited, 14 ranks.",
        [_entry("rv-cap", {"c": "rvsig cap"}, any_=("c",))],
        _stream(*[f"[rank{r}]: rvsig cap" for r in range(14)]),
        {"candidates": {"rv-cap": {"evidence_count": 12, "ranks": list(range(14))}}},
    )
    add(
        "initiating-rank-is-the-point-s-rank",
        "Initiating rank: with a root cause",
        "Rank 0 sees i1 first but completes the rule last (line 4); rank 2 completes it at line "
        "3: the initiating rank is 2.",
        [_entry("rv-init-point", {"i1": "rvsig ione", "i2": "rvsig itwo"}, all_=("i1", "i2"))],
        _stream(
            "[rank0]: rvsig ione",
            "[rank2]: rvsig ione",
            "[rank2]: rvsig itwo",
            "[rank0]: rvsig itwo",
        ),
        {"initiating_rank": 2, "initiating_basis": "earliest-root-cause-evidence"},
    )
    add(
        "initiating-rank-sigkill-beats-an-unrecognised-error",
        "Initiating rank: without a root cause",
        "Nothing fires; rank 1 raises an error no entry knows; torchelastic says rank 3 was "
        "killed by SIGKILL: rank 3, basis sigkill-in-torchelastic-summary.",
        [_entry("rv-quiet", {"q": "rvsig never printed"}, any_=("q",))],
        _stream("[rank1]: ValueError: rv boom", *ELASTIC_SIGKILL),
        {
            "verdict": "none",
            "initiating_rank": 3,
            "initiating_host": "node-a",
            "initiating_basis": "sigkill-in-torchelastic-summary",
        },
    )
    collateral = _entry(
        "rv-watchdog", {"w": "rvsig watchdog timeout"}, any_=("w",), role="collateral"
    )
    reports = [
        "[rank0]: rvsig watchdog timeout",
        "[rank1]: rvsig watchdog timeout",
        "[rank3]: rvsig watchdog timeout",
    ]
    add(
        "initiating-rank-absent-from-collateral-reports",
        "Initiating rank: every rank but one",
        "Ranks 0, 1 and 3 report a collateral timeout, rank 2 none (world size 4, the highest "
        "rank plus one): rank 2.",
        [collateral],
        _stream(*reports),
        {
            "verdict": "none",
            "initiating_rank": 2,
            "initiating_basis": "absent-from-collateral-reports",
        },
    )
    add(
        "initiating-rank-unrecognised-error-beats-absence",
        "Initiating rank: without a root cause (order of the rules)",
        "As above, and rank 1 also raises an error no entry knows: rank 1, basis "
        "earliest-unrecognised-error.",
        [collateral],
        _stream(*reports, "[rank1]: ValueError: rv boom"),
        {
            "verdict": "none",
            "initiating_rank": 1,
            "initiating_basis": "earliest-unrecognised-error",
        },
    )
    add(
        "unrecognised-error-matched-by-an-unfired-signal",
        "Unrecognised errors: a signal whose entry did not fire",
        "Rank 1 raises an error that one signal of an all-of rule matches; the rule's second "
        "signal is never printed, so nothing fires: the line is an unrecognised error and rank "
        "1 the initiating rank.",
        [_entry("rv-pair", {"a": "rvsig pone", "b": "rvsig ptwo"}, all_=("a", "b"))],
        _stream("[rank0]: step 1 done", "[rank1]: ValueError: rvsig pone broke"),
        {
            "verdict": "none",
            "unrecognised_lines": [2],
            "initiating_rank": 1,
            "initiating_basis": "earliest-unrecognised-error",
        },
    )
    add(
        "initiating-rank-root-evidence-over-torchelastic",
        "Initiating rank: with a root cause",
        "The root cause's point is on rank 2; torchelastic's first observed failure is rank 3 "
        "(exit code 1, no SIGKILL): rank 2, from the evidence.",
        [_entry("rv-root", {"r": "rvsig rootfail"}, any_=("r",))],
        _stream(
            "[rank2]: rvsig rootfail",
            *[
                line.replace("-9 (pid: 4242)", "1 (pid: 4242)").replace(
                    "Signal 9 (SIGKILL) received by PID 4242", "<N/A>"
                )
                for line in ELASTIC_SIGKILL
            ],
        ),
        {
            "root_cause": "rv-root",
            "initiating_rank": 2,
            "initiating_basis": "earliest-root-cause-evidence",
        },
    )
    add(
        "initiating-rank-from-the-leading-hypothesis",
        "Initiating rank: without a root cause (earliest-hypothesis-evidence)",
        "Only the any signal of an entry is seen (its all signal is not): a hypothesis, the "
        "verdict probable, the rank its line's.",
        [_entry("rv-hyp", {"h1": "rvsig hone", "h2": "rvsig htwo"}, all_=("h1",), any_=("h2",))],
        _stream("[rank4]: rvsig htwo"),
        {
            "verdict": "probable",
            "not_fired": ["rv-hyp"],
            "initiating_rank": 4,
            "initiating_basis": "earliest-hypothesis-evidence",
        },
    )
    add(
        "only-all-signals-is-no-hypothesis",
        "Hypotheses: an entry that saw only all signals is not one",
        "Only the all signal (context, such as a banner) is seen: no hypothesis, verdict none.",
        [
            _entry(
                "rv-ctx", {"c1": "rvsig context", "c2": "rvsig cfail"}, all_=("c1",), any_=("c2",)
            )
        ],
        _stream("rvsig context"),
        {"verdict": "none", "not_fired": ["rv-ctx"]},
    )
    add(
        "consequences-and-their-link",
        "Diagnosis step 3: consequences",
        "The cause explains two entries with link same-rank: the one on the cause's rank is its "
        "consequence, the one on another rank is not.",
        [
            _entry(
                "rv-cause",
                {"c": "rvsig cause"},
                any_=("c",),
                explains=(("rv-effect-other", "same-rank"), ("rv-effect-same", "same-rank")),
            ),
            _entry("rv-effect-same", {"e": "rvsig effect one"}, any_=("e",)),
            _entry("rv-effect-other", {"e": "rvsig effect two"}, any_=("e",)),
        ],
        _stream("[rank0]: rvsig cause", "[rank0]: rvsig effect one", "[rank1]: rvsig effect two"),
        {"root_cause": "rv-cause", "consequences": ["rv-effect-same"]},
    )
    add(
        "boilerplate-is-never-evidence",
        "Reading a log, step 9: boilerplate",
        "The signal matches a FutureWarning line, which is boilerplate: nothing fires.",
        [_entry("rv-boilerplate", {"b": "rvsig deprecated"}, any_=("b",))],
        _stream("/x/y.py:12: FutureWarning: rvsig deprecated"),
        {"verdict": "none", "not_fired": ["rv-boilerplate"]},
    )
    return copy.deepcopy(v)


def check_rule_vector(vector: dict[str, Any], report: dict[str, Any]) -> list[str]:
    """The problems of `report` against the vector's `expect` (RULE_SEMANTICS); [] when it
    conforms."""
    exp = vector["expect"]
    problems: list[str] = []
    fired = {c["id"]: c for c in report["candidates"] if not c["hypothesis"]}
    root = report["root_cause"]["id"] if report["root_cause"] else None
    got = {
        "verdict": report["verdict"],
        "root_cause": root,
        "initiating_rank": report["initiating_rank"],
        "initiating_host": report["initiating_host"],
        "initiating_basis": report["initiating_basis"],
        "consequences": sorted(c["id"] for c in report["consequences"]),
        "unrecognised_lines": [e["line"] for e in report["unrecognised_errors"]],
    }
    for k, have in got.items():
        if k in exp and exp[k] != have:
            problems.append(f"{k} is {have!r}, expected {exp[k]!r}")
    for eid in exp.get("fired", []):
        if eid not in fired:
            problems.append(f"{eid} did not fire")
    for eid in exp.get("not_fired", []):
        if eid in fired:
            problems.append(f"{eid} fired")
    for eid, want in exp.get("candidates", {}).items():
        c = fired.get(eid)
        if c is None:
            problems.append(f"{eid} did not fire")
            continue
        have_c = {
            "confidence": c["confidence"],
            "specificity": c["specificity"],
            "shadowed_by": c["shadowed_by"],
            "ranks": c["ranks"],
            "matched_signals": sorted(c["matched_signals"]),
            "evidence_lines": [e["line"] for e in c["evidence"]],
            "evidence_count": len(c["evidence"]),
        }
        for k, w in want.items():
            if have_c[k] != w:
                problems.append(f"{eid}: {k} is {have_c[k]!r}, expected {w!r}")
    return problems
