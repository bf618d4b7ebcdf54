"""Score the engine on the labelled corpus: per-case outcomes, rates, calibration, confusion, and
a regression gate against a committed baseline of per-case outcomes.

    cases = corpus.load_cases([Path("tests/corpus")])
    run = evaluate_cases(cases)                # loads the rule pack and builds the engine once
    print(render_text(run, None))

The JSON form is documented in docs/eval-format.md.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from .corpus import NONE, Case

# --- The one place that reads the engine's report ----------------------------------------------
# Report format 1.0 has verdict "match"/"no-match", a root_cause and ranked candidates; the next
# one has verdict "confident"/"differential"/"probable"/"none" with `differential` and `probable`
# lists. Everything below goes through these three functions.

CONFIDENT_VERDICTS = frozenset({"match", "confident"})
ABSTAIN_VERDICTS = frozenset({"none", "no-match"})


def is_confident(report: dict[str, Any]) -> bool:
    """The engine names a root cause without hedging."""
    return report.get("verdict") in CONFIDENT_VERDICTS


def _ranked(report: dict[str, Any]) -> list[dict[str, Any]]:
    rc = report.get("root_cause")
    out: list[dict[str, Any]] = [rc] if rc else []
    out += report.get("differential") or []
    out += report.get("probable") or []
    excluded = {c["id"] for c in report.get("ruled_out") or []}
    excluded |= {c["id"] for c in report.get("consequences") or []}
    out += [
        c
        for c in report.get("candidates") or []
        if c.get("role") == "root-cause" and c["id"] not in excluded
    ]
    return out


def hypotheses(report: dict[str, Any]) -> list[str]:
    """The entry ids the report offers as the cause, best first, each once."""
    return list(dict.fromkeys(d["id"] for d in _ranked(report)))


def top_confidence(report: dict[str, Any]) -> float | None:
    """The confidence of the first hypothesis, where the report gives one."""
    ranked = _ranked(report)
    if not ranked:
        return None
    top = ranked[0]["id"]
    return next((d["confidence"] for d in ranked if d["id"] == top and "confidence" in d), None)


# --- Per-case outcomes ---------------------------------------------------------------------------

OUTCOMES: tuple[str, ...] = (
    "right-confident",  # confident, and the root cause is the expected entry
    "right-top1",  # not confident, the first hypothesis is the expected entry
    "top3",  # the expected entry is second or third
    "abstain",  # no confident verdict and the expected entry not offered (verdict none/no-match)
    "confident-wrong",  # confident about another entry
    "wrong",  # hedged, and the expected entry not in the first three
    "right-none",  # expect: none, and the engine is not confident
    "false-positive",  # expect: none, and the engine is confident about something
)
RIGHT: frozenset[str] = frozenset({"right-confident", "right-top1", "right-none"})
TOP_N = 3


@dataclass(frozen=True)
class CaseResult:
    id: str
    path: str
    split: str
    phase: str
    expect: str
    coverage: str
    """covered (expect is an entry of the knowledge base evaluated), uncovered, or none."""
    verdict: str
    confident: bool
    hypotheses: tuple[str, ...]
    confidence: float | None
    outcome: str
    rank_expected: int | None
    rank_got: int | None
    cited: bool = False
    """The case's thread is cited by an entry: its author read it, so the case no longer
    measures generalisation (reported apart, see `exposure`)."""
    label: str | None = None
    """The id the case file proposes, when it names no entry and the survey resolved it to the
    entry in `expect` (see `relabel`)."""

    @property
    def exposure(self) -> str:
        return f"{self.split}, {'cited by kb' if self.cited else 'never cited'}"

    @property
    def got(self) -> str:
        """What the engine answers: its first hypothesis, or none."""
        return self.hypotheses[0] if self.hypotheses else NONE

    @property
    def right(self) -> bool:
        return self.outcome in RIGHT

    @property
    def top1(self) -> bool:
        return self.right

    @property
    def top3(self) -> bool:
        if not self.expect_failure:
            return self.right
        return self.expect in self.hypotheses[:TOP_N]

    @property
    def expect_failure(self) -> bool:
        return self.expect != NONE


def classify(expect: str, verdict: str, confident: bool, hyps: list[str]) -> str:
    """The outcome of one case (see OUTCOMES)."""
    if expect == NONE:
        return "false-positive" if confident else "right-none"
    first = hyps[0] if hyps else None
    if confident:
        return "right-confident" if first == expect else "confident-wrong"
    if first == expect:
        return "right-top1"
    if expect in hyps[:TOP_N]:
        return "top3"
    return "abstain" if verdict in ABSTAIN_VERDICTS else "wrong"


def coverage_of(expect: str, kb_ids: frozenset[str]) -> str:
    if expect == NONE:
        return "none"
    return "covered" if expect in kb_ids else "uncovered"


def score(
    case: Case,
    report: dict[str, Any],
    kb_ids: frozenset[str],
    cited: frozenset[str] = frozenset(),
    label: str | None = None,
) -> CaseResult:
    """One case's result from the engine's report on its body. `cited`: thread URLs the
    knowledge base cites (normalised by thread_key); `label`: the id the case file proposed,
    when `relabel` resolved it."""
    hyps = hypotheses(report)
    verdict = str(report.get("verdict"))
    confident = is_confident(report)
    return CaseResult(
        id=case.id,
        path=str(case.path),
        split=case.split,
        phase=case.phase,
        expect=case.expect,
        coverage=coverage_of(case.expect, kb_ids),
        verdict=verdict,
        confident=confident,
        hypotheses=tuple(hyps),
        confidence=top_confidence(report),
        outcome=classify(case.expect, verdict, confident, hyps),
        rank_expected=case.rank,
        rank_got=report.get("initiating_rank"),
        cited=thread_key(case.url) in cited,
        label=label,
    )


def relabel(
    cases: Iterable[Case], kb_dir: Path, kb_ids: frozenset[str]
) -> tuple[list[tuple[Case, str | None]], list[str]]:
    """Each case, with `expect` resolved through the survey (`survey.covering_entry`) where the
    case proposes an id that is not an entry, paired with the proposed label (None when the
    case names an entry, `none`, or nothing the survey resolves). Entries get written under
    other ids than a collector proposed; the survey's mapping is where that is recorded, so
    no case file (holdout ones included) has to be reopened. A broken survey costs only the
    resolution (one warning)."""
    from .survey import SurveyError, covering_entry

    cases = list(cases)
    folder = kb_dir / "survey"
    if not folder.is_dir():
        return [(c, None) for c in cases], []
    try:
        resolve = covering_entry(folder, kb_ids)
    except (SurveyError, OSError, UnicodeDecodeError) as exc:
        return [(c, None) for c in cases], [f"{folder}: not used to resolve labels: {exc}"]
    out: list[tuple[Case, str | None]] = []
    for c in cases:
        target = None if c.expect == NONE or c.expect in kb_ids else resolve(c.expect, c.url)
        out.append((replace(c, expect=target), c.expect) if target else (c, None))
    return out, []


_URL = re.compile(r"https?://[^\s\"'<>)\]`]+")
# Repositories that moved: one thread, two addresses.
_MOVED = (("github.com/microsoft/deepspeed/", "github.com/deepspeedai/deepspeed/"),)


def thread_key(url: str) -> str:
    """A URL reduced to the thread it names (scheme, fragment, query, case and a moved
    repository's old owner do not matter)."""
    u = url.strip().rstrip(".,;:").split("#", 1)[0].split("?", 1)[0].rstrip("/").lower()
    u = u.split("://", 1)[-1].removeprefix("www.")
    for old, new in _MOVED:
        u = u.replace(old, new)
    return u


SEEN_FILE = "seen-by-authors.txt"


def seen_threads(corpus_roots: Iterable[Path]) -> frozenset[str]:
    """Threads an entry or rule author saw without citing them (a search result's excerpt),
    listed one URL per line in `seen-by-authors.txt` at the corpus root (# starts a comment):
    they count as cited."""
    out: set[str] = set()
    for root in sorted(set(corpus_roots)):
        path = root / SEEN_FILE
        if not path.is_file():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            url = line.split(" #", 1)[0].strip()
            if url and not url.startswith("#"):
                out.add(thread_key(url))
    return frozenset(out)


def cited_threads(kb_dir: Path) -> frozenset[str]:
    """Every URL the entries' YAML mentions (references, example sources, signal sources)."""
    out: set[str] = set()
    for path in sorted(kb_dir.rglob("*.yaml")):
        for m in _URL.finditer(path.read_text(encoding="utf-8", errors="replace")):
            out.add(thread_key(m.group(0)))
    return frozenset(out)


# --- Running the engine --------------------------------------------------------------------------


@dataclass(frozen=True)
class EvalRun:
    results: tuple[CaseResult, ...]
    rulepack: dict[str, Any]
    warnings: tuple[str, ...]


def _warnings(cases: Iterable[Case], kb_ids: frozenset[str]) -> list[str]:
    return [
        f"{c.path}: covered: yes, but the knowledge base has no entry {c.expect!r}"
        for c in cases
        if c.covered and c.expect != NONE and c.expect not in kb_ids
    ]


def evaluate_cases(cases: list[Case], kb_dir: Path | None = None) -> EvalRun:
    """Run the engine on every case body; the rule pack and engine are built once.

    Raises engine.RulesError (no usable rule pack) and engine.InputError (unreadable body)."""
    from .engine import Engine, load_rulepack, suggest_related

    pack = load_rulepack(None, kb_dir)
    engine = Engine(pack)
    kb_ids = frozenset(e["id"] for e in pack["entries"])

    def report_of(case: Case) -> dict:
        # the same steps as `denpex-kb match`: rules, then the text index's clear winner
        report = engine.analyse_bytes(case.body, name=str(case.path))
        suggest_related(report, str(kb_dir) if kb_dir else None, pack=pack)
        return report

    from .kb import default_kb_dir

    kb_root = Path(kb_dir) if kb_dir else default_kb_dir()
    cited = cited_threads(kb_root)
    cited |= seen_threads({c.path.parent.parent for c in cases})
    labelled, notes = relabel(cases, kb_root, kb_ids)
    results = tuple(score(c, report_of(c), kb_ids, cited, label) for c, label in labelled)
    info = {"content_hash": pack["content_hash"], "kb_version": pack["kb_version"]}
    return EvalRun(results, info, tuple(_warnings(cases, kb_ids) + notes))


# --- Aggregates ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rates:
    n: int
    top1: int
    top3: int
    abstain: int
    confident_wrong: int

    def rate(self, count: int) -> float | None:
        return count / self.n if self.n else None


def rates(results: Iterable[CaseResult]) -> Rates:
    rs = list(results)
    return Rates(
        n=len(rs),
        top1=sum(r.top1 for r in rs),
        top3=sum(r.top3 for r in rs),
        abstain=sum(r.outcome == "abstain" for r in rs),
        confident_wrong=sum(r.outcome in ("confident-wrong", "false-positive") for r in rs),
    )


GROUPS: tuple[str, ...] = ("split", "exposure", "phase", "coverage")


def group_rates(results: tuple[CaseResult, ...]) -> dict[str, dict[str, Rates]]:
    """Rates overall ({"overall": {"all": ...}}) and per split, phase and coverage."""
    out: dict[str, dict[str, Rates]] = {"overall": {"all": rates(results)}}
    for key in GROUPS:
        by: dict[str, list[CaseResult]] = defaultdict(list)
        for r in results:
            by[getattr(r, key)].append(r)
        out[key] = {k: rates(v) for k, v in sorted(by.items())}
    return out


@dataclass(frozen=True)
class Band:
    lo: float
    hi: float
    n: int
    right: int
    """Cases in the band whose first hypothesis is the expected entry."""


BAND_EDGES: tuple[float, ...] = (0.0, 0.5, 0.7, 0.9, 1.0)


def _band(confidence: float) -> int:
    inner = BAND_EDGES[1:-1]
    return next((i for i, hi in enumerate(inner) if confidence < hi), len(inner))


def calibration(results: Iterable[CaseResult]) -> tuple[list[Band], int]:
    """Cases by the confidence of their first hypothesis ([lo, hi), the last band closed), and
    the number of cases with no hypothesis (or none with a confidence)."""
    n = [0] * (len(BAND_EDGES) - 1)
    right = [0] * len(n)
    unbanded = 0
    for r in results:
        if r.confidence is None:
            unbanded += 1
            continue
        i = _band(r.confidence)
        n[i] += 1
        right[i] += r.got == r.expect
    bands = [Band(BAND_EDGES[i], BAND_EDGES[i + 1], n[i], right[i]) for i in range(len(n))]
    return bands, unbanded


def rank_accuracy(results: Iterable[CaseResult]) -> tuple[int, int]:
    """(right, n) over the cases that state their initiating rank."""
    ranked = [r for r in results if r.rank_expected is not None]
    return sum(r.rank_got == r.rank_expected for r in ranked), len(ranked)


@dataclass(frozen=True)
class Confusion:
    expected: str
    got: str
    cases: tuple[str, ...]


def confusion(results: Iterable[CaseResult]) -> list[Confusion]:
    """expected -> got for every case whose answer is not the expected one (a hedged answer on
    an `expect: none` case is right and not listed); most frequent pair first."""
    pairs: dict[tuple[str, str], list[str]] = defaultdict(list)
    for r in results:
        got = r.got if r.expect_failure or not r.right else NONE
        if got != r.expect:
            pairs[(r.expect, got)].append(r.id)
    order = sorted(pairs.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return [Confusion(e, g, tuple(ids)) for (e, g), ids in order]


# --- Baseline and regression gate ----------------------------------------------------------------

BASELINE_FORMAT = "denpex-eval-baseline"


class BaselineError(Exception):
    """The baseline file cannot be read or is malformed; the message says why."""


@dataclass(frozen=True)
class Change:
    id: str
    was: str
    now: str


@dataclass(frozen=True)
class Comparison:
    baseline: str
    regressions: tuple[Change, ...]
    """Right in the baseline, not right now: these fail the gate."""
    improved: tuple[Change, ...]
    missing: tuple[str, ...]
    """In the baseline (of a split evaluated) but not evaluated now."""


def read_baseline(path: Path) -> dict[str, dict[str, str]]:
    """{case id: {"split": ..., "outcome": ...}} from a baseline file."""
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise BaselineError(f"baseline {path} does not exist; create it with --bless") from None
    except OSError as exc:
        raise BaselineError(f"cannot read baseline {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise BaselineError(f"baseline {path} is not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != BASELINE_FORMAT:
        raise BaselineError(f"baseline {path} is not a {BASELINE_FORMAT} file")
    cases = data.get("cases")
    if not isinstance(cases, dict):
        raise BaselineError(f"baseline {path} is not a {BASELINE_FORMAT} file")
    for cid, rec in cases.items():
        if not isinstance(rec, dict) or rec.get("outcome") not in OUTCOMES or "split" not in rec:
            raise BaselineError(f"baseline {path}: case {cid!r} has no valid outcome")
    return cases


def compare(
    results: tuple[CaseResult, ...], baseline: dict[str, dict[str, str]], name: str
) -> Comparison:
    now = {r.id: r for r in results}
    regressions, improved = [], []
    for cid, r in sorted(now.items()):
        was = baseline.get(cid, {}).get("outcome")
        if was is None:
            continue  # a new case: fine
        if was in RIGHT and not r.right:
            regressions.append(Change(cid, was, r.outcome))
        elif was not in RIGHT and r.right:
            improved.append(Change(cid, was, r.outcome))
    splits = {r.split for r in results}
    missing = sorted(c for c, rec in baseline.items() if c not in now and rec["split"] in splits)
    return Comparison(name, tuple(regressions), tuple(improved), tuple(missing))


def baseline_bytes(results: Iterable[CaseResult]) -> bytes:
    cases = {r.id: {"split": r.split, "outcome": r.outcome} for r in results}
    doc = {"format": BASELINE_FORMAT, "format_version": 1, "cases": dict(sorted(cases.items()))}
    return (json.dumps(doc, indent=2) + "\n").encode()


def write_baseline(path: Path, results: Iterable[CaseResult]) -> None:
    """Replace the baseline atomically: a temp file in the same folder, then os.replace."""
    data = baseline_bytes(results)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --- Output --------------------------------------------------------------------------------------

EVAL_FORMAT = "denpex-eval"
EVAL_FORMAT_VERSION = "1.0"


def _case_json(r: CaseResult) -> dict[str, Any]:
    d = asdict(r)
    d["hypotheses"] = list(r.hypotheses[:TOP_N])
    d.update(got=r.got, right=r.right, top3=r.top3)
    return d


def _rates_json(x: Rates) -> dict[str, Any]:
    d: dict[str, Any] = asdict(x)
    for k in ("top1", "top3", "abstain", "confident_wrong"):
        d[f"{k}_rate"] = x.rate(getattr(x, k))
    return d


def to_json(run: EvalRun, comparison: Comparison | None) -> dict[str, Any]:
    """The whole evaluation as a JSON-ready dict (docs/eval-format.md)."""
    bands, unbanded = calibration(run.results)
    right, n = rank_accuracy(run.results)
    groups = group_rates(run.results)
    return {
        "format": EVAL_FORMAT,
        "format_version": EVAL_FORMAT_VERSION,
        "rulepack": run.rulepack,
        "cases": [_case_json(r) for r in run.results],
        "rates": {g: {k: _rates_json(v) for k, v in by.items()} for g, by in groups.items()},
        "initiating_rank": {"n": n, "right": right, "rate": right / n if n else None},
        "calibration": {"bands": [asdict(b) for b in bands], "no_confidence": unbanded},
        "verdicts": {
            k: {"n": n, "right": right} for k, (right, n) in verdict_precision(run.results).items()
        },
        "confusion": [asdict(c) for c in confusion(run.results)],
        "baseline": asdict(comparison) if comparison else None,
        "warnings": list(run.warnings),
    }


def _pct(count: int, n: int) -> str:
    return f"{100 * count / n:5.1f}%" if n else "    -"


def _cases_text(results: tuple[CaseResult, ...]) -> list[str]:
    out = ["CASES"]
    width = max((len(r.id) for r in results), default=0)
    for r in sorted(results, key=lambda r: (r.split, r.id)):
        conf = f" {r.confidence:.2f}" if r.confidence is not None else ""
        out.append(
            f"  {r.outcome:<15} {r.split:<7} {r.id:<{width}}  expect {r.expect}, "
            f"got {r.got} ({r.verdict}{conf})"
        )
    return out


def _rates_text(results: tuple[CaseResult, ...]) -> list[str]:
    out = [f"{'RATES':<32} {'n':>4}  {'top-1':>6}  {'top-3':>6}  {'abstain':>7}  conf-wrong"]
    for group, by in group_rates(results).items():
        for key, x in by.items():
            label = "overall" if group == "overall" else f"{group} {key}"
            out.append(
                f"  {label:<30} {x.n:>4}  {_pct(x.top1, x.n)}  {_pct(x.top3, x.n)}  "
                f"{_pct(x.abstain, x.n):>7}  {_pct(x.confident_wrong, x.n):>10}"
            )
    return out


def verdict_precision(results: Iterable[CaseResult]) -> dict[str, tuple[int, int]]:
    """Per verdict: (cases where the first answer is right, cases with that verdict). For the
    confident verdict this is the figure the report's exit code 0 promises (>= 97%)."""
    out: dict[str, list[int]] = {}
    for r in results:
        right_first = r.got == r.expect if r.expect_failure else not r.confident
        cell = out.setdefault(r.verdict, [0, 0])
        cell[0] += int(right_first)
        cell[1] += 1
    return {k: (v[0], v[1]) for k, v in sorted(out.items())}


def _calibration_text(results: tuple[CaseResult, ...]) -> list[str]:
    bands, unbanded = calibration(results)
    out = ["VERDICTS (how often the first answer is right, by verdict)"]
    for verdict, (right, n) in verdict_precision(results).items():
        out.append(f"  {verdict:<13} n {n:>4}  right {_pct(right, n)}")
    out.append("")
    out.append("CALIBRATION (confidence of the first hypothesis; right = it is the expected entry)")
    for i, b in enumerate(bands):
        close = "]" if i == len(bands) - 1 else ")"
        out.append(f"  [{b.lo:.1f}, {b.hi:.1f}{close}  n {b.n:>4}  right {_pct(b.right, b.n)}")
    out.append(f"  no hypothesis  n {unbanded:>4}")
    return out


def _comparison_text(c: Comparison) -> list[str]:
    out = [f"BASELINE {c.baseline}: {len(c.regressions)} regression(s), {len(c.improved)} improved"]
    out += [f"  REGRESSION {x.id}: {x.was} -> {x.now}" for x in c.regressions]
    out += [f"  improved   {x.id}: {x.was} -> {x.now}" for x in c.improved]
    if c.missing:
        out.append(f"  in the baseline but not evaluated: {', '.join(c.missing)}")
    return out


def render_text(run: EvalRun, comparison: Comparison | None, summary: bool = False) -> str:
    """The evaluation for a terminal. `summary`: the figures only, without a case id (no
    per-case list, no confusion, regressions as a count), so that measuring the holdout split
    shows nothing its authors could tune on."""
    res = run.results
    splits = Counter(r.split for r in res)
    head = ", ".join(f"{k} {v}" for k, v in sorted(splits.items()))
    out = [
        f"{len(res)} case(s) ({head or 'none'}); rule pack {run.rulepack['content_hash']} "
        f"(kb {run.rulepack['kb_version']})",
        "",
    ]
    relabelled = sum(r.label is not None for r in res)
    if relabelled:
        out[-1:] = [
            f"{relabelled} case(s) propose an id that the survey (kb/survey) now maps to an "
            "entry: scored against that entry",
            "",
        ]
    if res:
        out += ([] if summary else _cases_text(res) + [""]) + _rates_text(res) + [""]
        right, n = rank_accuracy(res)
        out.append(
            f"INITIATING RANK  {right}/{n} right {_pct(right, n)}"
            if n
            else "INITIATING RANK  no case states its rank"
        )
        out += [""] + _calibration_text(res) + [""]
        if not summary:
            out.append("CONFUSION (expected -> got: cases)")
            out += [f"  {c.expected} -> {c.got}: {', '.join(c.cases)}" for c in confusion(res)]
            out.append("")
    if comparison is not None:
        out += (
            [
                f"BASELINE {comparison.baseline}: {len(comparison.regressions)} regression(s), "
                f"{len(comparison.improved)} improved"
            ]
            if summary
            else _comparison_text(comparison)
        )
    return "\n".join(out).rstrip("\n") + "\n"
