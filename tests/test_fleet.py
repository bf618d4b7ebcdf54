"""`denpex-kb fleet`: many jobs through the local pool and Ray give the reports `match` gives one
by one; re-runs, crashes and bad jobs; suspect nodes, unknown-error clusters; the HTML page.

The fleet (built once per session, over 450 jobs) is made of the project's logs with known
answers: tests/logs cases (expect.json), the captured healthy runs (no candidate), every entry
example of the loaded knowledge base (expect match/no-match; captured, public and composed
ones), the captured runs no example cites, plus jobs composed here (marked `composed` in their
manifest meta): hardware failures planted on one host in three jobs, single hardware failures
on other hosts, one invented unknown error in three jobs with different pids, paths and numbers,
and corrupt or unreadable jobs. Composed lines use message formats quoted by the kb/ entries
(Xid 79 and ECC from kb/hardware/, the NCCL watchdog line from tests/logs/compose.py); the
unknown error is invented on purpose (no entry may know it).
"""

from __future__ import annotations

import gzip
import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from denpex_kb import fleet
from denpex_kb.engine import load_rulepack
from denpex_kb.fleet.aggregate import aggregate, mask_error
from denpex_kb.fleet.analyse import match_report
from denpex_kb.fleet.store import RecordLog, iter_records
from denpex_kb.kb import load_kb

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "tests" / "logs"
KB = ROOT / "kb"
CLI = [sys.executable, "-m", "denpex_kb"]
VOLATILE = ("analysed_at", "seconds", "worker")

XID = "NVRM: Xid (PCI:0000:{bus}:00): 79, GPU has fallen off the bus."  # kb/hardware quote
XID_GPU = "NVRM: GPU 0000:{bus}:00.0: GPU has fallen off the bus."
WATCHDOG = (
    "[rank{r}]:[E1129 10:5{m}:01.000000 {pid} ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, "
    "NumelOut=9801523, Timeout(ms)=600000) ran for 600020 milliseconds before timing out."
)
BANNER = (
    "[rank0]:[2026-11-29 10:12:09,120] [INFO] [logging.py:107:log_dist] [Rank 0] DeepSpeed info: "
    "version={v}, git-hash=unknown, git-branch=unknown"
)
UNKNOWN = (
    "RuntimeError: FlashShard: checksum mismatch for /mnt/data/run-{run}/shard_{k:05d}.bin "
    "(pid {pid}, offset 0x{off:x}, expected 0x{exp:08x})"
)
SUSPECT = "gpu-node-07"


def _hw_job(host: str, other: str, bus: str, version: str) -> str:
    return "\n".join(
        [
            f"{host}: " + BANNER.format(v=version),
            f"{host}: [Sat Nov 29 10:40:01 2026] " + XID.format(bus=bus),
            f"{host}: [Sat Nov 29 10:40:01 2026] " + XID_GPU.format(bus=bus),
            f"{other}: " + WATCHDOG.format(r=3, m=0, pid=4242),
            f"{other}: " + WATCHDOG.format(r=2, m=1, pid=4243),
        ]
    )


def _unknown_job(i: int) -> str:
    host, rank = f"worker-{i + 2}", 3 * i + 1
    line = UNKNOWN.format(
        run=1000 + 77 * i, k=17 + i, pid=48213 + 991 * i, off=0x7F3A2C00 + i, exp=0xABCD * (i + 1)
    )
    return "\n".join(
        [
            f"{host}: [rank{rank}]: Traceback (most recent call last):",
            f'{host}: [rank{rank}]:   File "/home/u{i}/train.py", line {200 + i}, in <module>',
            f"{host}: [rank{rank}]: {line}",
        ]
    )


def build_fleet(root: Path) -> tuple[Path, dict[str, dict]]:
    """The fleet's files under root/, a manifest, and the known answer per job id."""
    kb = load_kb(KB)
    known: dict[str, dict] = {}
    lines: list[dict] = []
    day = 0

    def add(jid: str, path: Path, answer: dict, provenance: str) -> None:
        nonlocal day
        day += 1
        t = f"2026-11-{1 + day % 28:02d}T{day % 24:02d}:00:00Z"  # spread over four weeks
        lines.append(
            {"id": jid, "paths": [str(path)], "time": t, "meta": {"provenance": provenance}}
        )
        known[jid] = answer

    jobs = root / "jobs"
    jobs.mkdir(parents=True)
    for exp_file in sorted(LOGS.glob("*.expect.json")):
        exp = json.loads(exp_file.read_text())
        name = exp_file.name.removesuffix(".expect.json")
        src = ROOT / exp["log"] if "log" in exp else exp_file.with_name(name)
        dst = jobs / "cases" / src.name
        dst.parent.mkdir(exist_ok=True)
        (shutil.copytree if src.is_dir() else shutil.copy)(src, dst)
        add(
            f"case/{name}",
            dst,
            {"verdict": exp["verdict"], "root_cause": exp["root_cause"]},
            exp.get("provenance", "captured"),
        )
    for log in sorted((LOGS / "healthy").glob("*.log")):
        dst = jobs / "healthy" / log.name
        dst.parent.mkdir(exist_ok=True)
        shutil.copy(log, dst)
        add(f"healthy/{log.name}", dst, {"no_candidates": True}, "captured")
    cited = set()
    for e in kb.entries:
        for ex in e.examples:
            if ex.log_file:
                cited.add(Path(ex.log_file).name)
            dst = jobs / "examples" / f"{e.id}--{ex.name}.log"
            dst.parent.mkdir(exist_ok=True)
            dst.write_text(ex.log, "utf-8")
            add(
                f"example/{e.id}/{ex.name}",
                dst,
                {"entry": e.id, "expect": ex.expect},
                ex.provenance,
            )
    for log in sorted((KB / "captured").glob("*.log")):
        if log.name not in cited:
            dst = jobs / "captured" / log.name
            dst.parent.mkdir(exist_ok=True)
            shutil.copy(log, dst)
            add(f"captured/{log.name}", dst, {}, "captured")
    planted = jobs / "planted"
    planted.mkdir()
    for i, (host, other, bus) in enumerate(
        [
            (SUSPECT, "gpu-node-03", "2b"),
            (SUSPECT, "gpu-node-04", "3c"),
            (SUSPECT, "gpu-node-05", "2b"),
            ("gpu-node-02", "gpu-node-03", "4d"),
            ("gpu-node-11", "gpu-node-04", "1a"),
        ]
    ):
        p = planted / f"hw-{i}.log"
        p.write_text(_hw_job(host, other, bus, "0.16.4") + "\n")
        add(
            f"planted/hw-{i}",
            p,
            {"root_cause": "gpu-fallen-off-bus-xid79", "host": host},
            "composed",
        )
    for i in range(3):
        d = planted / f"unknown-{i}"
        d.mkdir()
        (d / f"train-rank{3 * i + 1}.log").write_text(_unknown_job(i) + "\n")
        (d / f"train-rank{3 * i + 2}.log").write_text("step 10 loss 2.31\n")
        add(f"planted/unknown-{i}", d, {"verdict": "none", "unknown": True}, "composed")
    bad = jobs / "bad"
    bad.mkdir()
    (bad / "gone.log").symlink_to(bad / "does-not-exist.log")
    add("bad/broken-symlink", bad / "gone.log", {"error": True}, "composed")
    (bad / "corrupt.log.gz").write_bytes(gzip.compress(b"x" * 10000)[:20] + b"\x00garbage" * 50)
    add("bad/corrupt-gzip", bad / "corrupt.log.gz", {"warning": True}, "composed")
    fifo_dir = bad / "fifo-only"
    fifo_dir.mkdir()
    os.mkfifo(fifo_dir / "rank0.log")
    add("bad/fifo-only-folder", fifo_dir, {"error": True}, "composed")
    manifest = root / "manifest.jsonl"
    manifest.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return manifest, known


@pytest.fixture(scope="session")
def pack() -> dict:
    return load_rulepack(None, KB)


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    root = tmp_path_factory.mktemp("fleet")
    manifest, known = build_fleet(root)
    return root, manifest, known, fleet.discover([], manifest)


@pytest.fixture(scope="session")
def pool_run(built, pack):  # noqa: ANN001, ANN201
    root, _, _, jobs = built
    out = root / "pool" / "records.jsonl"
    summary = fleet.run_fleet(jobs, out, pack, str(KB), workers=2, engine="local")
    return out, summary


def _by_job(path: Path) -> dict[str, dict]:
    return {r["job"]: r for r in iter_records(path)}


def test_fleet_is_large_and_labelled(built) -> None:  # noqa: ANN001
    _, _, known, jobs = built
    assert len(jobs) >= 200
    assert sum(1 for j in jobs if j.meta["provenance"] == "composed") >= 10


def test_pool_reports_equal_match_one_by_one(built, pool_run, pack) -> None:  # noqa: ANN001
    _, _, known, jobs = built
    out, summary = pool_run
    recs = _by_job(out)
    assert summary.analysed == len(jobs) == len(recs)
    for job in jobs:
        rec = recs[job.id]
        assert rec["pack_hash"] == pack["content_hash"]
        assert rec["job_time"] == job.time and rec["paths"] == list(job.paths)
        ans = known[job.id]
        if ans.get("error"):
            assert rec["status"] == "error" and rec["error"] and rec["report"] is None
            continue
        assert rec["status"] == "ok", (job.id, rec["error"])
        one = json.loads(json.dumps(match_report(pack, list(job.paths), str(KB))))
        assert rec["report"] == one, job.id
        rep = rec["report"]
        fired = {c["id"]: c for c in rep["candidates"] if not c["hypothesis"]}
        if "verdict" in ans:
            assert rep["verdict"] == ans["verdict"], job.id
        if "root_cause" in ans:
            assert (rep["root_cause"] or {}).get("id") == ans["root_cause"], job.id
        if ans.get("no_candidates"):
            assert rep["candidates"] == [], job.id
        if ans.get("expect") == "match":
            assert ans["entry"] in fired, job.id
        if ans.get("expect") == "no-match":
            assert ans["entry"] not in fired or fired[ans["entry"]]["shadowed_by"], job.id
        if ans.get("warning"):
            assert any("corrupt" in w for w in rep["warnings"]), rep["warnings"]


def test_a_sample_equals_the_cli_match_json(built, pool_run) -> None:  # noqa: ANN001
    """The CLI itself, one process per job, on one job of each kind."""
    _, _, _, jobs = built
    recs = _by_job(pool_run[0])
    sample = {}
    for j in jobs:
        kind = j.id.split("/", 1)[0] + j.meta["provenance"]
        if kind not in sample and recs[j.id]["status"] == "ok":
            sample[kind] = j
    assert len(sample) >= 6
    for j in sample.values():
        p = subprocess.run(
            [*CLI, "match", "--kb", str(KB), "--format", "json", *j.paths],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
        )
        assert p.returncode in (0, 1), p.stderr
        assert json.loads(p.stdout) == recs[j.id]["report"], j.id


def test_rerun_analyses_nothing_new(built, pool_run, pack) -> None:  # noqa: ANN001
    _, _, known, jobs = built
    out, _ = pool_run
    before = out.read_bytes()
    again = fleet.run_fleet(jobs, out, pack, str(KB), workers=2, engine="local")
    unreadable = [j for j, a in known.items() if a.get("error") and "symlink" in j]
    # Unreadable jobs (no content to key on) are tried again; everything else is skipped.
    assert again.analysed == len(unreadable)
    assert again.skipped == len(jobs) - len(unreadable)
    assert out.read_bytes().startswith(before)


def test_changed_log_is_analysed_again_and_wins(tmp_path: Path, pack) -> None:  # noqa: ANN001
    log = tmp_path / "jobs" / "a.log"
    log.parent.mkdir()
    log.write_text("step 1\n")
    jobs = fleet.discover([str(tmp_path / "jobs")])
    out = tmp_path / "records.jsonl"
    assert fleet.run_fleet(jobs, out, pack, str(KB), workers=1, engine="serial").analysed == 1
    log.write_text("[rank0]: " + UNKNOWN.format(run=1, k=1, pid=2, off=3, exp=4) + "\n")
    assert fleet.run_fleet(jobs, out, pack, str(KB), workers=1, engine="serial").analysed == 1
    latest = fleet.latest_records(out)
    assert len(latest) == 1 and latest["jobs/a.log"]["report"]["unrecognised_errors"]


def test_kill_halfway_then_restart_loses_and_duplicates_nothing(built, tmp_path: Path) -> None:  # noqa: ANN001
    root, _, known, jobs = built
    examples = tmp_path / "examples"
    examples.mkdir()
    for f in sorted((root / "jobs" / "examples").iterdir())[:150]:
        os.link(f, examples / f.name)
    out = tmp_path / "out"
    cmd = [*CLI, "fleet", str(examples), "--kb", str(KB), "-o", str(out), "-j", "2"]
    total = len(list(examples.iterdir()))
    proc = subprocess.Popen(
        cmd, cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    rec = out / "records.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline:
        n = rec.read_bytes().count(b"\n") if rec.exists() else 0
        if n >= 40 or proc.poll() is not None:
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    finished = rec.read_bytes()
    finished = finished[: finished.rfind(b"\n") + 1]
    n_before = finished.count(b"\n")
    assert 40 <= n_before < total, "the run was not killed half-way"
    with open(rec, "ab") as f:  # as if killed in the middle of writing the next record
        f.write(b'{"format":"denpex-fleet-record","job":"examples/torn')
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    data = rec.read_bytes()
    assert data.startswith(finished)
    ids = [r["job"] for r in iter_records(rec)]
    assert data.count(b"\n") == len(ids) == total
    assert len(set(ids)) == total
    assert f"{total - n_before} analysed" in p.stdout


@pytest.mark.skipif(
    multiprocessing.get_start_method() != "fork", reason="the patch reaches workers by fork"
)
def test_a_dead_worker_costs_only_its_job(tmp_path: Path, pack) -> None:  # noqa: ANN001
    from denpex_kb.fleet import analyse

    jobs = [fleet.Job(f"j{i}", (str(LOGS / "oom-rank3-watchdog-rest.log"),)) for i in range(6)]
    jobs[2] = fleet.Job("die", ("/proc/self/die-now",))
    real = analyse.analyse_job

    def dying(pk, job, *a, **kw):  # noqa: ANN001, ANN202
        if job.id == "die":
            os._exit(9)
        return real(pk, job, *a, **kw)

    try:
        analyse.analyse_job = dying  # the forked workers inherit the patch
        s = fleet.run_fleet(jobs, tmp_path / "r.jsonl", pack, str(KB), workers=2, engine="local")
    finally:
        analyse.analyse_job = real
    recs = _by_job(tmp_path / "r.jsonl")
    assert set(recs) == {j.id for j in jobs}
    assert recs["die"]["status"] == "error" and "died" in recs["die"]["error"]
    assert all(recs[f"j{i}"]["status"] == "ok" for i in (0, 1, 3, 4, 5))
    assert s.errors == 1


def test_torn_tail_is_cut_on_open(tmp_path: Path) -> None:
    p = tmp_path / "r.jsonl"
    p.write_bytes(b'{"job":"a","cache_key":"k1"}\n{"job":"b","cach')
    with RecordLog(p) as log:
        assert log.known_for("a") == {"k1"} and not log.known_for("b")
        log.append({"job": "b", "cache_key": "k2"})
    assert [r["job"] for r in iter_records(p)] == ["a", "b"]


def test_a_second_run_on_the_same_records_is_refused(tmp_path: Path) -> None:
    from denpex_kb.fleet.store import RecordsBusy

    p = tmp_path / "r.jsonl"
    with RecordLog(p):
        with pytest.raises(RecordsBusy):
            RecordLog(p)
    RecordLog(p).close()  # free again once the first run closed it


def test_suspect_nodes_flag_the_planted_host_only(built, pool_run, pack) -> None:  # noqa: ANN001
    agg = aggregate(list(iter_records(pool_run[0])), pack)
    hosts = [h["host"] for h in agg["suspect_nodes"]]
    assert hosts == [SUSPECT]
    h = agg["suspect_nodes"][0]
    assert sorted(h["jobs"]) == ["planted/hw-0", "planted/hw-1", "planted/hw-2"]
    assert h["entries"] == {"gpu-fallen-off-bus-xid79": 3}
    assert all("NVRM: Xid" in e["text"] or "fallen off" in e["text"] for e in h["evidence"])
    assert all(e["text"].startswith(SUSPECT) for e in h["evidence"])


def test_unknown_errors_cluster_across_jobs(built, pool_run, pack) -> None:  # noqa: ANN001
    agg = aggregate(list(iter_records(pool_run[0])), pack)
    mine = [c for c in agg["unknown_clusters"] if "FlashShard" in c["pattern"]]
    assert len(mine) == 1, [c["pattern"] for c in mine]
    c = mine[0]
    assert sorted(c["jobs"]) == ["planted/unknown-0", "planted/unknown-1", "planted/unknown-2"]
    assert "/mnt/data" not in c["pattern"] and "48213" not in c["pattern"]
    assert agg["unknown_clusters"][0]["job_count"] >= 3  # ranked by jobs
    texts = {e["text"] for e in c["examples"]}
    assert len(texts) == 3  # three different raw lines, one cluster


def test_mask_keeps_what_tells_errors_apart() -> None:
    a = mask_error("node1: [rank3]: OSError: [Errno 28] No space left on device: '/ckpt/x/1.pt'")
    b = mask_error("n9: [rank12]: OSError: [Errno 28] No space left on device: '/d/2.pt'")
    c = mask_error("n9: [rank12]: KeyError: 'optimizer_state'")
    assert a == b != c
    assert mask_error("x 0xdeadbeef 4f3a9c01e2 12345678") == "x <HEX> <HEX> <N>"


def test_aggregate_periods_phases_and_versions(built, pool_run, pack) -> None:  # noqa: ANN001
    agg = aggregate(list(iter_records(pool_run[0])), pack)
    _, _, known, jobs = built
    ok = len(jobs) - sum(1 for a in known.values() if a.get("error"))
    assert agg["analysed_ok"] == ok == sum(agg["verdicts"].values())
    assert sum(r["jobs"] for r in agg["by_day"]) == len(jobs)
    assert len(agg["by_week"]) >= 4
    # shares are rounded to 4 places: the sum is 1 within the rounding of each
    assert abs(sum(agg["shares"].values()) - 1) <= len(agg["shares"]) * 0.00005 + 1e-9
    assert agg["catch_all"] >= 3
    hw = next(r for r in agg["by_phase"] if r["phase"] == "hardware")
    assert hw["confident"] >= 5
    assert {e["job"] for e in agg["errors"]} == {j for j, a in known.items() if a.get("error")}


def test_version_only_failures_from_synthetic_records() -> None:
    def rec(job: str, ver: str, cause: str | None) -> dict:
        rc = {"id": cause, "title": cause, "phase": "zero"} if cause else None
        return {
            "job": job,
            "status": "ok",
            "job_time": "2026-11-02T00:00:00Z",
            "report": {
                "verdict": "confident" if cause else "none",
                "root_cause": rc,
                "probable": [],
                "differential": [],
                "candidates": [],
                "unrecognised_errors": [],
                "versions": {"deepspeed": [ver]},
            },
        }

    recs = [rec(f"a{i}", "0.16.4", "x") for i in range(3)]
    recs += [rec(f"b{i}", "0.17.0", None) for i in range(3)] + [rec("c", "0.17.0", "y")]
    agg = aggregate(recs)
    rows = agg["version_only_failures"]["deepspeed"]
    assert [r["id"] for r in rows] == ["x"]
    assert rows[0]["seen_on"] == {"0.16.4": 3} and rows[0]["never_on"] == {"0.17.0": 4}


def test_ray_reports_equal_the_pool(built, pool_run, pack, tmp_path: Path) -> None:  # noqa: ANN001
    """First run: the fleet starts (and stops) a local Ray itself. Re-run: on a Ray the caller
    already connected to, as against a cluster address in production."""
    ray = pytest.importorskip("ray", reason="the 'ray' extra is not installed")
    _, _, _, jobs = built
    out = tmp_path / "ray.jsonl"
    s = fleet.run_fleet(jobs, out, pack, str(KB), workers=2, engine="ray")
    assert s.analysed == len(jobs) and not ray.is_initialized()
    pool, got = _by_job(pool_run[0]), _by_job(out)
    assert set(pool) == set(got)
    for jid, r in got.items():
        p = pool[jid]
        assert {k: v for k, v in r.items() if k not in VOLATILE} == {
            k: v for k, v in p.items() if k not in VOLATILE
        }, jid
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        again = fleet.run_fleet(jobs, out, pack, str(KB), workers=2, engine="ray")
        assert ray.is_initialized()  # not the fleet's to shut down
    finally:
        ray.shutdown()
    assert again.analysed == sum(1 for r in got.values() if not r["cache_key"])


def test_cli_fleet_on_a_folder_tree(tmp_path: Path) -> None:
    out = tmp_path / "out"
    p = subprocess.run(
        [
            *CLI,
            "fleet",
            str(LOGS),
            "--kb",
            str(KB),
            "--include",
            "*.log",
            "--include",
            "*.gz",
            "-o",
            str(out),
            "-j",
            "2",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    ids = {r["job"] for r in iter_records(out / "records.jsonl")}
    assert "logs/per-rank-folder" in ids  # a folder of per-rank files is one job
    assert "logs/oom-rank3-watchdog-rest.log" in ids and "logs/healthy/healthy-ds-report.log" in ids
    assert not any(i.endswith(".json") or i.endswith(".md") for i in ids)
    for name in ("report.md", "report.json", "report.html"):
        assert (out / name).stat().st_size > 0
    bad = subprocess.run([*CLI, "fleet"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


def test_html_report_is_offline_in_chromium(built, pool_run, pack, tmp_path: Path) -> None:  # noqa: ANN001
    from playwright.sync_api import sync_playwright

    hub = "file:///nonexistent/site/"  # links are never fetched by opening the page
    paths = fleet.write_reports(tmp_path, pool_run[0], pack, hub=hub)
    assert f'href="{hub}entries/gpu-fallen-off-bus-xid79.html"' in paths["html"].read_text()
    chromium = os.environ.get("DENPEX_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    blocked: list[str] = []
    errors: list[str] = []
    with sync_playwright() as pw:
        b = pw.chromium.launch(
            executable_path=chromium,
            headless=True,
            args=[
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--no-first-run",
            ],
        )
        try:
            ctx = b.new_context(viewport={"width": 1280, "height": 900})

            def route(r) -> None:  # noqa: ANN001
                if r.request.url.startswith(("file:", "data:", "blob:", "about:")):
                    r.continue_()
                else:
                    blocked.append(r.request.url)
                    r.abort("internetdisconnected")

            ctx.route("**/*", route)
            page = ctx.new_page()
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(paths["html"].as_uri())
            assert page.locator("svg").count() >= 3
            assert page.locator("svg rect").count() > 10
            assert SUSPECT in page.locator("body").inner_text()
            assert page.locator("header").evaluate("e => getComputedStyle(e).backgroundColor") == (
                "rgb(63, 81, 181)"  # the hub's primary colour (Material indigo)
            )
            (ROOT / "test-artifacts").mkdir(exist_ok=True)
            page.screenshot(path=str(ROOT / "test-artifacts" / "fleet-report.png"), full_page=False)
        finally:
            b.close()
    assert blocked == [] and errors == []


def test_discovery_layouts(tmp_path: Path, pack) -> None:  # noqa: ANN001
    t = tmp_path / "logs"
    (t / "day1" / "job-a").mkdir(parents=True)
    for r in range(3):
        (t / "day1" / "job-a" / f"train-rank{r}.log").write_text("x\n")
    (t / "day1" / "job-b" / "attempt_0" / "0").mkdir(parents=True)
    (t / "day1" / "job-b" / "attempt_0" / "0" / "stderr.log").write_text("x\n")
    (t / "day1" / "single-rank1.log").write_text("x\n")  # one rank file: a job of its own
    (t / "day1" / "notes.txt").write_text("x\n")
    (t / ".hidden.log").write_text("x\n")
    rank_of = fleet.rank_in_name(pack)
    ids = [j.id for j in fleet.discover([str(t)], rank_of=rank_of, include=["*.log"])]
    assert ids == ["logs/day1/job-a", "logs/day1/job-b", "logs/day1/single-rank1.log"]
    depth = [j.id for j in fleet.discover([str(t)], depth=2)]
    assert depth == [
        "logs/day1/job-a",
        "logs/day1/job-b",
        "logs/day1/notes.txt",
        "logs/day1/single-rank1.log",
    ]
    globbed = fleet.discover([str(t / "day1" / "job-*")])
    assert [Path(j.id).name for j in globbed] == ["job-a", "job-b"]
    m = tmp_path / "m.jsonl"
    m.write_text(
        '# jobs\n{"id": "j1", "path": "logs/day1/job-a", "time": "2026-11-29T10:00:00+01:00"}\n'
    )
    (j1,) = fleet.discover([], m)
    assert j1.paths == (str(tmp_path / "logs" / "day1" / "job-a"),)
    assert j1.time == "2026-11-29T09:00:00Z"
    with pytest.raises(fleet.JobError, match="appears twice"):
        fleet.discover([str(t / "day1" / "notes.txt")] * 2)
    m.write_text('{"id": "j1", "paths": []}\n')
    with pytest.raises(fleet.JobError, match="m.jsonl:1"):
        fleet.discover([], m)
