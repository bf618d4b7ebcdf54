"""The matching engine: entry examples, conformance vectors, multi-rank logs, healthy runs, CLI."""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from denpex_kb import rulepack as rp
from denpex_kb.cli import main
from denpex_kb.engine import Engine
from denpex_kb.engine.scan import deanchor, make_prefilter
from denpex_kb.kb import load_kb
from denpex_kb.schemas import load_schema, strict_schema

HERE = Path(__file__).parent
LOGS = HERE / "logs"
FIXTURE = HERE / "fixtures" / "kb"
ROOT = HERE.parent
BUNDLED = Path(os.environ.get("DENPEX_TEST_KB") or ROOT / "kb")
# Our own reports pass the strict form (closed objects and vocabularies), not only the open one.
REPORT_SCHEMA = strict_schema(load_schema("report"))


@pytest.fixture(scope="module")
def engine(pack: dict) -> Engine:
    return Engine(pack)


def check_example(engine: Engine, entry_id: str, expect: str, evidence, expect_top, log: str):  # noqa: ANN001, ANN201
    """Problems (empty when the example gives its expected outcome), per the vector semantics."""
    report = engine.analyse_bytes(log.encode("utf-8"), name="example.log")
    jsonschema.validate(report, REPORT_SCHEMA)
    cands = {c["id"]: c for c in report["candidates"] if not c["hypothesis"]}
    problems = []
    if expect == "match":
        if entry_id not in cands:
            problems.append("did not fire")
        else:
            texts = [ev["text"] for ev in cands[entry_id]["evidence"]]
            problems += [
                f"evidence {s!r} not cited" for s in evidence if not any(s in t for t in texts)
            ]
    elif entry_id in cands and not cands[entry_id]["shadowed_by"]:
        problems.append("fired on a no-match example")
    if expect_top:
        top = report["root_cause"]["id"] if report["root_cause"] else None
        hyps = report["differential"] + report["probable"]
        if top is None and hyps:
            top = hyps[0]["id"]  # the leading hypothesis of a differential or probable verdict
        if top is None and report["candidates"]:
            top = report["candidates"][0]["id"]  # a collateral entry leads when no root cause
        if top != expect_top:
            problems.append(f"top is {top}, expected {expect_top}")
    return problems


def _examples():  # noqa: ANN202
    try:
        entries = load_kb(BUNDLED).entries
    except Exception:  # noqa: BLE001 - reported by test_bundled_kb_loads instead
        return [pytest.param(None, None, id="kb-does-not-load")]
    return [
        pytest.param(e.id, ex.name, id=f"{e.id}/{ex.name}") for e in entries for ex in e.examples
    ]


def test_bundled_kb_loads() -> None:
    load_kb(BUNDLED)


@pytest.mark.parametrize(("entry_id", "name"), _examples())
def test_every_entry_example(kb, engine: Engine, entry_id: str, name: str) -> None:  # noqa: ANN001
    if entry_id is None:
        pytest.fail("the bundled knowledge base does not load")
    ex = next(x for x in kb.get(entry_id).examples if x.name == name)
    assert check_example(engine, entry_id, ex.expect, ex.evidence, ex.expect_top, ex.log) == []


def test_fixture_conformance_vectors(tmp_path: Path) -> None:
    """Export pack + vectors through the CLI, load the pack as a consumer would, replay."""
    out, vec = tmp_path / "pack.json", tmp_path / "vectors.json"
    args = ["export-rules", "--kb", str(FIXTURE), "-o", str(out), "--vectors", str(vec)]
    assert CliRunner().invoke(main, args).exit_code == 0
    pack = rp.load_pack(out)
    vectors = json.loads(vec.read_bytes())
    assert vectors["rulepack_hash"] == pack["content_hash"]
    eng = Engine(pack)
    assert len(vectors["vectors"]) == 4
    for v in vectors["vectors"]:
        args = (v["entry"], v["expect"], v["evidence"], v["expect_top"], v["log"])
        assert check_example(eng, *args) == [], v["name"]


def test_bundled_conformance_vectors(kb, pack: dict, engine: Engine) -> None:  # noqa: ANN001
    vectors = rp.build_vectors(kb, pack)["vectors"]
    assert vectors
    failing = {
        v["name"]: p
        for v in vectors
        if (
            p := check_example(
                engine, v["entry"], v["expect"], v["evidence"], v["expect_top"], v["log"]
            )
        )
    }
    assert failing == {}


def _log_cases() -> list[Path]:
    return sorted(p for p in LOGS.glob("*.expect.json"))


def test_there_are_at_least_eight_multi_rank_logs() -> None:
    assert len(_log_cases()) >= 8


@pytest.mark.parametrize(
    "expect_file", _log_cases(), ids=lambda p: p.name.removesuffix(".expect.json")
)
def test_multi_rank_log(engine: Engine, expect_file: Path) -> None:
    exp = json.loads(expect_file.read_text())
    # "log": a path from the repo root, for real captured runs kept in kb/captured/.
    target = (
        ROOT / exp["log"]
        if "log" in exp
        else expect_file.with_name(expect_file.name.removesuffix(".expect.json"))
    )
    report = engine.analyse_paths([str(target)])
    jsonschema.validate(report, REPORT_SCHEMA)
    assert report["verdict"] == exp["verdict"]
    if "probable" in exp:
        assert [p["id"] for p in report["probable"]] == [exp["probable"]]
    rc = report["root_cause"]
    assert (rc["id"] if rc else None) == exp["root_cause"]
    if "initiating_rank" in exp:
        assert report["initiating_rank"] == exp["initiating_rank"]
    if "initiating_basis" in exp:
        assert report["initiating_basis"] == exp["initiating_basis"]
    coll = {c["id"]: c for c in report["collateral"]}
    for cid in exp.get("collateral_include", []):
        assert cid in coll
    for cid, ranks in exp.get("collateral_ranks", {}).items():
        assert coll[cid]["ranks"] == ranks
    cands = [c["id"] for c in report["candidates"]]
    for cid in exp.get("candidates_include", []):
        assert cid in cands
    notes = " ".join(report["notes"])
    for s in exp.get("notes_include", []):
        assert s in notes
    for s in exp.get("evidence_include", []):
        assert any(s in ev["text"] for ev in rc["evidence"])
    for pkg, versions in exp.get("versions", {}).items():
        assert report["versions"][pkg] == versions
    if "unrecognised_ranks" in exp:
        assert [e["rank"] for e in report["unrecognised_errors"]] == exp["unrecognised_ranks"]


HEALTHY = sorted((LOGS / "healthy").glob("*.log"))


@pytest.mark.skipif(not HEALTHY, reason="no healthy logs captured yet (tests/logs/healthy/)")
@pytest.mark.parametrize("log", HEALTHY, ids=lambda p: p.name)
def test_healthy_log_has_zero_matches(engine: Engine, log: Path) -> None:
    report = engine.analyse_paths([str(log)])
    assert report["verdict"] == "none"
    assert report["candidates"] == []


def test_captured_healthy_run_has_zero_matches(engine: Engine) -> None:
    log = BUNDLED / "captured" / "ckpt-zero2-ws2-save-ok-deepspeed-launcher.log"
    report = engine.analyse_paths([str(log)])
    assert report["candidates"] == []
    assert report["verdict"] == "none"


def test_readme_example_is_the_fastfilewriter_entry(engine: Engine) -> None:
    report = engine.analyse_paths([str(ROOT / "examples" / "fastfilewriter-rotation-enospc.log")])
    assert report["root_cause"]["id"] == "fastfilewriter-fd-leak-enospc"
    assert report["initiating_rank"] == 0
    assert report["initiating_host"] == "worker-0"
    assert report["versions"]["deepspeed"] == ["0.19.0"]
    assert any("No space left on device" in e["text"] for e in report["root_cause"]["evidence"])
    assert {"nccl-watchdog-timeout"} <= {c["id"] for c in report["collateral"]}


# ----------------------------------------------------------------------------------------
# Engine mechanics, on the fixture pack
# ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fx() -> Engine:
    return Engine(rp.build_pack(load_kb(FIXTURE)))


@pytest.mark.parametrize("backend", ["re2", "hyperscan"])
def test_prefilters_agree(backend: str) -> None:
    if backend == "hyperscan":
        pytest.importorskip("hyperscan")
    pf = make_prefilter([("^Foo bar$", False), ("no space", True)], backend)
    block = b"x\n[rank1]: Foo bar\nxx NO SPACE left\nclean\n"
    assert pf.line_starts(block, 0, len(block)) == [2, 19]
    assert pf.line_starts(block, 2, len(block)) == [2, 19]


def test_deanchor() -> None:
    assert deanchor(r"^a[^$]b\^c$") == r"a[^$]b\^c"
    assert deanchor(r"(?:^|x)y[]^]") == r"(?:|x)y[]^]"


@pytest.mark.parametrize(
    ("prefix", "rank", "host"),
    [
        ("[rank3]: ", 3, None),
        ("[default3]:", 3, None),
        ("3: ", 3, None),
        ("worker-7: ", None, "worker-7"),
        ("worker-7: [rank5]: ", 5, "worker-7"),
        ("[1,6]<stderr>:", 6, None),
    ],
)
def test_prefixes_are_stripped_and_attributed(fx: Engine, prefix: str, rank, host) -> None:  # noqa: ANN001
    report = fx.analyse_bytes(f"{prefix}OSError: [Errno 28] No space left on device\n".encode())
    ev = report["root_cause"]["evidence"][0]
    assert (ev["rank"], ev["host"]) == (rank, host)


def test_gzip_stdin_crlf_nul_ansi_and_long_lines(fx: Engine) -> None:
    from denpex_kb.engine.read import Source

    body = (
        b"\xff\xfe garbage\r\n" + b"y" * 2_000_000 + b"\r\n"
        b"\x1b[31mOSError: [Errno 28] No space\x00 left on \x1b[0mdevice\r\n"
    )
    stream = io.BufferedReader(io.BytesIO(gzip.compress(body)))
    from denpex_kb.engine.read import open_source  # noqa: F401 - gzip detection is in the reader

    report = fx.analyse([Source("<stdin>", None)], streams=[_gunzip(stream)])
    assert report["root_cause"]["id"] == "fixture-disk-full"
    ev = report["root_cause"]["evidence"][0]
    assert ev["line"] == 3
    assert ev["text"] == "OSError: [Errno 28] No space left on device"


def _gunzip(stream: io.BufferedReader):  # noqa: ANN202
    head = stream.peek(2)[:2]
    return gzip.GzipFile(fileobj=stream) if head == b"\x1f\x8b" else stream


def test_gz_file_is_detected_by_magic(fx: Engine, tmp_path: Path) -> None:
    f = tmp_path / "rank4.log.gz"
    f.write_bytes(gzip.compress(b"ok\nOSError: [Errno 28] No space left on device\n"))
    report = fx.analyse_paths([str(f)])
    assert report["root_cause"]["id"] == "fixture-disk-full"
    assert report["initiating_rank"] == 4


def test_none_signal_vetoes_and_version_unknown(fx: Engine) -> None:
    log = b"OSError: [Errno 28] No space left on device\nDisk quota exceeded\n"
    report = fx.analyse_bytes(log)
    assert report["candidates"] == []


def test_cli_match_exit_codes_and_formats(tmp_path: Path) -> None:
    r = CliRunner()
    log = tmp_path / "rank2.log"
    log.write_text("OSError: [Errno 28] No space left on device\n")
    res = r.invoke(main, ["match", "--kb", str(FIXTURE), "--format", "json", str(log)])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    jsonschema.validate(report, REPORT_SCHEMA)
    assert report["initiating_rank"] == 2  # from the file name
    res = r.invoke(main, ["match", "--kb", str(FIXTURE), "--format", "markdown", str(log)])
    assert res.exit_code == 0 and "**Root cause:** `fixture-disk-full`" in res.stdout
    healthy = tmp_path / "ok.log"
    healthy.write_text("all good\n")
    assert r.invoke(main, ["match", "--kb", str(FIXTURE), str(healthy)]).exit_code == 1
    res = r.invoke(main, ["match", "--kb", str(FIXTURE), str(tmp_path / "missing.log")])
    assert res.exit_code == 2 and "no such file" in res.stderr
    res = r.invoke(main, ["match", "--kb", str(FIXTURE), "-"], input="Disk quota exceeded\n")
    assert res.exit_code == 0 and "fixture-quota" in res.stdout


def test_a_warning_before_a_crash_is_not_blamed_for_it(engine: Engine, kb) -> None:  # noqa: ANN001
    # A start-up warning (fatal: false) and a later CUDA OOM on another rank: the OOM is the
    # root cause even though the warning comes first; alone, the warning is still reported.
    assert not kb.get("load-checkpoint-no-latest-file").match.fatal
    warning = (
        "[rank0]:[2026-11-29 10:00:01,000] [WARNING] [engine.py:3132:load_checkpoint] Unable to find "
        "latest file at /ckpt/latest, if trying to load latest checkpoint please ensure this file "
        "exists or pass an explicit checkpoint tag when loading a checkpoint.\n"
    )
    oom = (
        "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 3 "
        "has a total capacity of 79.19 GiB of which 4.75 MiB is free.\n"
    )
    both = engine.analyse_bytes((warning + oom).encode(), name="run.log")
    assert both["root_cause"]["id"] == "cuda-oom-during-step"
    assert both["initiating_rank"] == 3
    alone = engine.analyse_bytes(warning.encode(), name="run.log")
    assert alone["root_cause"]["id"] == "load-checkpoint-no-latest-file"


def test_window_lines_count_the_lines_of_one_rank(tmp_path: Path) -> None:
    """window_lines is measured in the lines of the rank, not of the interleaved file."""
    kb_dir = tmp_path / "kb"
    shutil.copytree(FIXTURE, kb_dir)
    entry = kb_dir / "checkpoint" / "fixture-disk-full.yaml"
    text = entry.read_text().replace(
        "  all: [enospc]\n  none: [edquot]\n", "  all: [enospc, edquot]\n  window_lines: 3\n"
    )
    entry.write_text(text)

    eng = Engine(rp.build_pack(load_kb(kb_dir)))
    other = "".join(f"[rank1]: step {i}\n" for i in range(6))
    near = "[rank0]: No space left on device\n" + other + "[rank0]: Disk quota exceeded\n"
    far = (
        "[rank0]: No space left on device\n"
        + other.replace("rank1", "rank0")
        + "[rank0]: Disk quota exceeded\n"
    )
    ids = lambda rep: [c["id"] for c in rep["candidates"]]  # noqa: E731
    assert "fixture-disk-full" in ids(eng.analyse_bytes(near.encode()))
    assert "fixture-disk-full" not in ids(eng.analyse_bytes(far.encode()))
