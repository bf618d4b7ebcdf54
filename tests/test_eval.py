"""`denpex-kb eval`: corpus case parsing, per-case scoring, aggregates and the baseline gate.

Every case file written here (in tmp_path) is COMPOSED for the test: a made-up header around
the body of a log from tests/logs/, whose engine verdict tests/logs/*.expect.json pins
(oom-rank3-watchdog-rest: confident cuda-oom-during-step on rank 3; two-independent-failures:
confident disk-full-enospc; healthy-zero2-save-deepspeed-launcher: no match).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from denpex_kb import engine as engine_mod
from denpex_kb import evaluation as ev
from denpex_kb.cli import main
from denpex_kb.corpus import CorpusError, load_cases, parse_case, split_of

HERE = Path(__file__).parent
LOGS = HERE / "logs"
CORPUS = HERE / "corpus"
OOM = (LOGS / "oom-rank3-watchdog-rest.log").read_bytes()
TWO = (LOGS / "two-independent-failures.log").read_bytes()
HEALTHY = (LOGS / "healthy-zero2-save-deepspeed-launcher.log").read_bytes()


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def header(cid: str, **fields: str) -> bytes:
    """A composed case header; the url (and so the split) is derived from the case id."""
    url = fields.pop("url", f"https://example.invalid/composed/{cid}")
    values = {
        "url": url,
        "expect": "none",
        "covered": "yes",
        "phase": "memory",
        "evidence": "composed for tests/test_eval.py",
        "split": split_of(url),
        **fields,
    }
    return "".join(f"#corpus {k}: {v}\n" for k, v in values.items()).encode()


def write_case(root: Path, cid: str, body: bytes, **fields: str) -> Path:
    head = header(cid, **fields)
    split = next(ln for ln in head.decode().splitlines() if ln.startswith("#corpus split: "))
    path = root / split.split(": ", 1)[1] / f"{cid}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(head + body)
    return path


# --- parsing -------------------------------------------------------------------------------------


def test_parse_case_keeps_the_body_byte_for_byte(tmp_path: Path) -> None:
    body = b"\n# a comment line of the log\r\nrank0: boom \xff\n#corpusless\n"
    path = write_case(tmp_path, "ds-1-body", body, expect="cuda-oom-during-step", rank="3")
    case = parse_case(path)
    assert case.body == body
    assert (case.id, case.expect, case.rank, case.covered) == (
        "ds-1-body",
        "cuda-oom-during-step",
        3,
        True,
    )
    assert case.split == split_of(case.url) and case.note is None


def test_malformed_header_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "dev" / "bad.log"
    path.parent.mkdir()
    path.write_bytes(header("bad").replace(b"#corpus phase: ", b"#corpus phase ") + b"log\n")
    with pytest.raises(CorpusError) as exc:
        parse_case(path)
    assert f"{path}:4: malformed header line; expected '#corpus KEY: VALUE'" in exc.value.problems
    assert f"{path}:6: missing key 'phase'" in exc.value.problems


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"colour": "red"}, ":7: unknown key 'colour'"),
        ({"covered": "maybe"}, ":3: covered: 'maybe' is not 'yes' or 'no'"),
        ({"phase": "training"}, ":4: phase: 'training' is not one of"),
        ({"rank": "-1"}, ":7: rank: '-1' is not a non-negative integer"),
        ({"expect": "Not_Kebab"}, ":2: expect: 'Not_Kebab' is not a kebab-case entry id"),
        ({"evidence": ""}, ":5: evidence: empty value"),
    ],
)
def test_bad_values_are_errors(tmp_path: Path, change: dict[str, str], message: str) -> None:
    path = write_case(tmp_path, "c", b"log\n", **change)
    with pytest.raises(CorpusError) as exc:
        parse_case(path)
    assert any(p.startswith(str(path)) and message in p for p in exc.value.problems), exc.value


def test_split_must_follow_the_url_hash_and_the_folder(tmp_path: Path) -> None:
    url = "https://example.invalid/composed/split"
    wrong = "dev" if split_of(url) == "holdout" else "holdout"
    path = tmp_path / split_of(url) / "c.log"
    path.parent.mkdir()
    path.write_bytes(header("c", url=url, split=wrong) + b"log\n")
    with pytest.raises(CorpusError) as exc:
        parse_case(path)
    assert any(f"url hashes to {split_of(url)!r}" in p for p in exc.value.problems)
    assert any(f"the file is in {split_of(url)}/" in p for p in exc.value.problems)


def test_a_file_without_header_or_with_a_late_header_line_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "plain.log").write_bytes(b"just a log\n")
    write_case(tmp_path, "late", b"log\n#corpus note: too late\n")
    with pytest.raises(CorpusError) as exc:
        load_cases([tmp_path])
    assert any("plain.log:1: no '#corpus' header" in p for p in exc.value.problems)
    assert any("late.log:8: a '#corpus' line after the log began" in p for p in exc.value.problems)


def test_duplicate_case_ids_across_folders(tmp_path: Path) -> None:
    write_case(tmp_path / "a", "same", b"x\n")
    write_case(tmp_path / "b", "same", b"x\n")
    with pytest.raises(CorpusError) as exc:
        load_cases([tmp_path / "a", tmp_path / "b"])
    assert any("case id 'same' also used by" in p for p in exc.value.problems)


def test_cli_corpus_error_is_one_line_per_problem_then_exit_2(tmp_path: Path) -> None:
    (tmp_path / "plain.log").write_bytes(b"just a log\n")
    code, out, err = run("eval", str(tmp_path))
    assert code == 2 and out == ""
    assert err.splitlines() == [
        f"{tmp_path / 'plain.log'}:1: no '#corpus' header (not a corpus case)",
        "denpex-kb: error: corpus is invalid (1 problem(s))",
    ]


# --- the report adapter and classification -------------------------------------------------------


def test_hypotheses_of_both_report_versions() -> None:
    old = {
        "verdict": "match",
        "root_cause": {"id": "a", "confidence": 0.8},
        "candidates": [
            {"id": "a", "role": "root-cause", "confidence": 0.8},
            {"id": "w", "role": "collateral", "confidence": 0.9},
            {"id": "b", "role": "root-cause", "confidence": 0.4},
        ],
    }
    assert ev.hypotheses(old) == ["a", "b"] and ev.is_confident(old)
    assert ev.top_confidence(old) == 0.8
    new = {
        "verdict": "differential",
        "root_cause": None,
        "differential": [{"id": "x", "confidence": 0.55}, {"id": "y"}],
        "probable": [{"id": "z"}, {"id": "x"}],
        "candidates": [{"id": "q", "role": "root-cause"}],
    }
    assert ev.hypotheses(new) == ["x", "y", "z", "q"] and not ev.is_confident(new)
    assert ev.top_confidence(new) == 0.55
    assert ev.is_confident({"verdict": "confident", "root_cause": {"id": "x"}})
    assert ev.hypotheses({"verdict": "none"}) == [] and ev.top_confidence({}) is None


@pytest.mark.parametrize(
    ("expect", "verdict", "hyps", "outcome"),
    [
        ("a", "match", ["a", "b"], "right-confident"),
        ("b", "confident", ["a", "b"], "confident-wrong"),
        ("a", "differential", ["a", "b"], "right-top1"),
        ("c", "probable", ["a", "b", "c", "d"], "top3"),
        ("d", "probable", ["a", "b", "c", "d"], "wrong"),
        ("d", "no-match", ["a"], "abstain"),
        ("d", "none", [], "abstain"),
        ("none", "none", [], "right-none"),
        ("none", "differential", ["a"], "right-none"),
        ("none", "match", ["a"], "false-positive"),
    ],
)
def test_classify(expect: str, verdict: str, hyps: list[str], outcome: str) -> None:
    confident = verdict in ("match", "confident")
    assert ev.classify(expect, verdict, confident, hyps) == outcome


# --- scoring real engine reports on composed cases -----------------------------------------------


def composed_corpus(root: Path) -> Path:
    write_case(root, "oom-right", OOM, expect="cuda-oom-during-step", rank="3")
    write_case(root, "oom-rank-wrong", OOM, expect="cuda-oom-during-step", rank="1")
    write_case(root, "two-wrong", TWO, expect="cuda-oom-during-step", phase="checkpoint")
    write_case(root, "healthy-ok", HEALTHY, phase="healthy")
    write_case(root, "oom-fp", OOM, phase="healthy")
    write_case(root, "healthy-missed", HEALTHY, expect="cuda-oom-during-step")
    write_case(root, "not-in-kb", HEALTHY, expect="no-such-entry-yet", covered="no")
    return root


def test_outcomes_and_aggregates(tmp_path: Path) -> None:
    run = ev.evaluate_cases(load_cases([composed_corpus(tmp_path)]))
    got = {r.id: r.outcome for r in run.results}
    assert got == {
        "oom-right": "right-confident",
        "oom-rank-wrong": "right-confident",
        "two-wrong": "confident-wrong",
        "healthy-ok": "right-none",
        "oom-fp": "false-positive",
        "healthy-missed": "abstain",
        "not-in-kb": "abstain",
    }
    groups = ev.group_rates(run.results)
    overall = groups["overall"]["all"]
    assert (overall.n, overall.top1, overall.abstain, overall.confident_wrong) == (7, 3, 2, 2)
    assert groups["coverage"]["uncovered"].n == 1 and groups["coverage"]["none"].n == 2
    assert groups["phase"]["healthy"].confident_wrong == 1
    assert ev.rank_accuracy(run.results) == (1, 2)
    pairs = {(c.expected, c.got): c.cases for c in ev.confusion(run.results)}
    assert pairs == {
        ("cuda-oom-during-step", "disk-full-enospc"): ("two-wrong",),
        ("cuda-oom-during-step", "none"): ("healthy-missed",),
        ("no-such-entry-yet", "none"): ("not-in-kb",),
        ("none", "cuda-oom-during-step"): ("oom-fp",),
    }
    bands, unbanded = ev.calibration(run.results)
    banded = [r for r in run.results if r.confidence is not None]
    assert sum(b.n for b in bands) == len(banded) and unbanded == len(run.results) - len(banded)
    right = sum(r.got == r.expect for r in banded)
    assert sum(b.right for b in bands) == right


def test_engine_and_pack_are_loaded_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"pack": 0, "engine": 0}
    real_load, real_engine = engine_mod.load_rulepack, engine_mod.Engine

    def load(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls["pack"] += 1
        return real_load(*args, **kwargs)

    def make(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls["engine"] += 1
        return real_engine(*args, **kwargs)

    monkeypatch.setattr(engine_mod, "load_rulepack", load)
    monkeypatch.setattr(engine_mod, "Engine", make)
    run = ev.evaluate_cases(load_cases([composed_corpus(tmp_path)]))
    assert len(run.results) == 7 and calls == {"pack": 1, "engine": 1}


def test_cli_text_and_json(tmp_path: Path) -> None:
    composed_corpus(tmp_path)
    code, out, _ = run("eval", str(tmp_path))
    assert code == 0
    assert "confident-wrong" in out and "CALIBRATION" in out
    assert "cuda-oom-during-step -> disk-full-enospc: two-wrong" in out
    assert "INITIATING RANK  1/2 right" in out
    code, out, _ = run("eval", str(tmp_path), "--format", "json", "--split", "dev")
    assert code == 0
    doc = json.loads(out)
    assert doc["format"] == "denpex-eval" and doc["baseline"] is None
    assert {c["split"] for c in doc["cases"]} <= {"dev"}
    assert doc["rates"]["overall"]["all"]["n"] == len(doc["cases"])


def test_covered_yes_for_an_unknown_entry_warns(tmp_path: Path) -> None:
    write_case(tmp_path, "stale", HEALTHY, expect="renamed-entry", covered="yes")
    code, _, err = run("eval", str(tmp_path))
    assert code == 0
    assert "covered: yes, but the knowledge base has no entry 'renamed-entry'" in err


# --- the baseline gate ---------------------------------------------------------------------------


def test_bless_then_gate_detects_a_regression(tmp_path: Path) -> None:
    corpus = composed_corpus(tmp_path / "corpus")
    baseline = tmp_path / "corpus" / "baseline.json"
    code, _, err = run("eval", str(corpus), "--baseline", str(baseline), "--bless")
    assert code == 0 and "blessed 7 case(s)" in err
    assert sorted(p.name for p in baseline.parent.iterdir()) == ["baseline.json", "dev", "holdout"]
    blessed = json.loads(baseline.read_text())
    assert blessed["cases"]["two-wrong"]["outcome"] == "confident-wrong"
    assert run("eval", str(corpus), "--baseline", str(baseline))[0] == 0

    # Doctor the baseline: two-wrong "was right", healthy-ok "was wrong", oom-right is "new".
    blessed["cases"]["two-wrong"]["outcome"] = "right-confident"
    blessed["cases"]["healthy-ok"]["outcome"] = "false-positive"
    del blessed["cases"]["oom-right"]
    baseline.write_text(json.dumps(blessed))
    code, out, _ = run("eval", str(corpus), "--baseline", str(baseline))
    assert code == 1
    assert "1 regression(s), 1 improved" in out
    assert "REGRESSION two-wrong: right-confident -> confident-wrong" in out
    assert "REGRESSION oom-right" not in out and "REGRESSION healthy-ok" not in out
    code, out, _ = run("eval", str(corpus), "--baseline", str(baseline), "--format", "json")
    assert code == 1
    assert [x["id"] for x in json.loads(out)["baseline"]["regressions"]] == ["two-wrong"]
    # --summary: the same figures and exit code, and no case id anywhere.
    code, out, _ = run("eval", str(corpus), "--baseline", str(baseline), "--summary")
    assert code == 1
    assert "RATES" in out and "CALIBRATION" in out and "1 regression(s), 1 improved" in out
    assert not [c for c in blessed["cases"] if c in out] and "CONFUSION" not in out
    assert run("eval", str(corpus), "--summary", "--format", "json")[0] == 2


def test_baseline_errors(tmp_path: Path) -> None:
    write_case(tmp_path, "healthy-ok", HEALTHY, phase="healthy")
    missing = tmp_path / "nope.json"
    code, _, err = run("eval", str(tmp_path), "--baseline", str(missing))
    assert code == 2 and "does not exist; create it with --bless" in err
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "denpex-eval-baseline", "cases": {"x": {"outcome": "great"}}}')
    code, _, err = run("eval", str(tmp_path), "--baseline", str(bad))
    assert code == 2 and "case 'x' has no valid outcome" in err
    code, _, err = run("eval", str(tmp_path), "--bless")
    assert code == 2 and "--bless needs --baseline FILE" in err


def test_the_committed_corpus_passes_its_baseline() -> None:
    baseline = CORPUS / "baseline.json"
    ev.read_baseline(baseline)  # the committed baseline is always well formed
    if not any(CORPUS.rglob("*.log")):
        pytest.skip("tests/corpus has no cases yet")
    code, out, err = run("eval", str(CORPUS), "--baseline", str(baseline))
    assert code == 0, out + err


def test_thread_key_and_cited_threads(tmp_path: Path) -> None:
    key = ev.thread_key
    assert key("https://github.com/microsoft/DeepSpeed/issues/12#issuecomment-9") == key(
        "https://github.com/deepspeedai/DeepSpeed/issues/12"
    )
    assert key("https://github.com/a/b/issues/1") != key("https://github.com/a/b/issues/12")
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "e.yaml").write_text(
        'references:\n  - url: "https://github.com/microsoft/DeepSpeed/issues/7"\n'
        "note: see https://github.com/a/b/issues/3).\n",
        encoding="utf-8",
    )
    cited = ev.cited_threads(tmp_path)
    assert key("https://github.com/deepspeedai/DeepSpeed/issues/7") in cited
    assert key("https://github.com/a/b/issues/3") in cited
    assert key("https://github.com/a/b/issues/4") not in cited


ENOSPC = b"OSError: [Errno 28] No space left on device\n"
NO_VERDICT = {"verdict": "none", "root_cause": None, "differential": [], "probable": []}


def enospc_case(cid: str, split: str, url: str, covered: bool = True):  # noqa: ANN201
    """A composed case whose body is one ENOSPC line, expecting disk-full-enospc."""
    from denpex_kb.corpus import Case

    return Case(
        id=cid,
        path=Path(f"{split}/{cid}.log"),
        url=url,
        expect="disk-full-enospc",
        covered=covered,
        phase="checkpoint",
        evidence="x",
        split=split,
        rank=None,
        note=None,
        body=ENOSPC,
    )


def test_cited_cases_are_reported_apart() -> None:
    ids = frozenset({"disk-full-enospc"})
    case = enospc_case("c1", "holdout", "https://github.com/a/b/issues/3")
    seen = ev.score(case, NO_VERDICT, ids, frozenset({ev.thread_key(case.url)}))
    unseen = ev.score(case, NO_VERDICT, ids, frozenset())
    assert (seen.exposure, unseen.exposure) == ("holdout, cited by kb", "holdout, never cited")


def test_threads_seen_by_authors_count_as_cited(tmp_path: Path) -> None:
    (tmp_path / ev.SEEN_FILE).write_text(
        "# comment\nhttps://github.com/microsoft/DeepSpeed/issues/5 # seen in a search excerpt\n",
        encoding="utf-8",
    )
    seen = ev.seen_threads([tmp_path, tmp_path / "missing"])
    assert seen == {ev.thread_key("https://github.com/deepspeedai/DeepSpeed/issues/5")}


# --- proposed ids resolved through the survey ------------------------------------------------------

SURVEY_HEAD = "url\tproject\ttitle\tcause\tentry\testablished_by\n"


def survey_kb(root: Path, threads: str, causes: str) -> Path:
    """A composed kb folder holding only a survey (relabel reads nothing else)."""
    (root / "survey").mkdir(parents=True)
    (root / "survey" / "threads-t.tsv").write_text(SURVEY_HEAD + threads, encoding="utf-8")
    (root / "survey" / "causes.tsv").write_text(causes, encoding="utf-8")
    return root


def test_proposed_ids_resolve_through_the_survey(tmp_path: Path) -> None:
    u = "https://example.invalid/composed/"
    kb = survey_kb(
        tmp_path / "kb",
        f"{u}a\tp\tt\tsurvey-words-a\t-\treporter\n"
        f"{u}b\tp\tt\tsurvey-words-b\t-\treporter\n"
        f"{u}c\tp\tt\tsurvey-words-c\t-\treporter\n",
        "survey-words-a\tentry-a\n"  # the survey row's label: reaches the case by its URL
        "label-b\tentry-b\n"  # the case's own label
        f"{u}c\tentry-c\n"  # the thread's URL beats the label's mapping
        "label-c\tentry-b\n"
        "label-d\tout-of-scope\n",  # a class is not an entry
    )
    corpus = tmp_path / "corpus"
    write_case(corpus, "a", HEALTHY, url=f"{u}a", expect="label-a", covered="no")
    write_case(corpus, "b", HEALTHY, url=f"{u}b", expect="label-b", covered="no")
    write_case(corpus, "c", HEALTHY, url=f"{u}c", expect="label-c", covered="no")
    write_case(corpus, "d", HEALTHY, url=f"{u}d", expect="label-d", covered="no")
    write_case(corpus, "e", HEALTHY, url=f"{u}a", expect="entry-b")  # names an entry: kept
    write_case(corpus, "f", HEALTHY, url=f"{u}b")  # expect none: kept
    ids = frozenset({"entry-a", "entry-b", "entry-c"})
    pairs, notes = ev.relabel(load_cases([corpus]), kb, ids)
    got = {c.id: (c.expect, label) for c, label in pairs}
    assert got == {
        "a": ("entry-a", "label-a"),
        "b": ("entry-b", "label-b"),
        "c": ("entry-c", "label-c"),
        "d": ("label-d", None),
        "e": ("entry-b", None),
        "f": ("none", None),
    }
    assert notes == []


def test_a_broken_survey_costs_only_the_resolution(tmp_path: Path) -> None:
    kb = survey_kb(tmp_path / "kb", "", "no tab here\n")
    write_case(tmp_path / "corpus", "a", HEALTHY, expect="label-a", covered="no")
    pairs, notes = ev.relabel(load_cases([tmp_path / "corpus"]), kb, frozenset({"x"}))
    assert [(c.expect, label) for c, label in pairs] == [("label-a", None)]
    assert len(notes) == 1 and "causes.tsv:1" in notes[0]
    assert ev.relabel(load_cases([tmp_path / "corpus"]), tmp_path / "nokb", frozenset())[1] == []


def test_a_resolved_label_reaches_json_and_the_summary_counts_it() -> None:
    ids = frozenset({"disk-full-enospc"})

    def case(cid: str):  # noqa: ANN202
        return enospc_case(cid, "dev", f"https://example.invalid/composed/{cid}", covered=False)

    resolved = ev.score(case("r"), NO_VERDICT, ids, label="proposed-enospc-id")
    plain = ev.score(case("p"), NO_VERDICT, ids)
    run = ev.EvalRun((resolved, plain), {"content_hash": "sha256:x", "kb_version": "0"}, ())
    cases = {c["id"]: c for c in ev.to_json(run, None)["cases"]}
    assert (cases["r"]["label"], cases["p"]["label"]) == ("proposed-enospc-id", None)
    assert cases["r"]["expect"] == "disk-full-enospc"  # scored against the entry, not the label
    for summary in (True, False):
        text = ev.render_text(run, None, summary=summary)
        assert "1 case(s) propose an id that the survey" in text
    alone = ev.EvalRun((plain,), run.rulepack, ())
    assert "propose an id" not in ev.render_text(alone, None, summary=True)
