"""Regenerate the composed multi-rank test logs in this folder (python tests/logs/compose.py).

Every line uses a real message format: torch ProcessGroupNCCL watchdog and c10d lines, the
CUDA caching allocator's OOM message, torchelastic's ChildFailedError summary and the deepspeed
launcher's sigkill_handler lines, as printed in kb/captured/launcher-*.log and in the public logs
quoted by the kb/ entries. Pids, times, sizes and paths are invented. Logs that were captured
from real runs are copied from kb/captured/ (see README.md); they are not produced here.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
CAPTURED = HERE.parent.parent / "kb" / "captured"


def watchdog(rank: int, t: str, seq: int = 808) -> list[str]:
    return [
        f"[rank{rank}]:[E1129 {t} ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught collective "
        f"operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=9801523, "
        f"NumelOut=9801523, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.",
        f"[rank{rank}]:[E1129 {t} ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank "
        f"{rank}] Exception (either an error or timeout) detected by watchdog at work: {seq}, last "
        f"enqueued NCCL work: {seq + 3}, last completed NCCL work: {seq - 1}.",
    ]


def oom(rank: int, gpu: int) -> list[str]:
    p = f"[rank{rank}]: "
    return [
        p + "Traceback (most recent call last):",
        p + '  File "/workspace/train.py", line 212, in <module>',
        p + "    engine.backward(loss)",
        p
        + '  File "/opt/conda/lib/python3.11/site-packages/deepspeed/runtime/engine.py", line 2298, in backward',
        p + "    self.optimizer.backward(loss, retain_graph=retain_graph)",
        p
        + f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.39 GiB. GPU {gpu} has a "
        "total capacity of 79.32 GiB of which 2.40 GiB is free. Process 105400 has 76.92 GiB memory "
        "in use. Of the allocated memory 73.28 GiB is allocated by PyTorch, and 1.59 GiB is reserved "
        "by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation "
        "for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
    ]


def banner(ranks: int) -> list[str]:
    out = [
        "W1129 10:12:01.000000 4242 torch/distributed/run.py:874] *****************************************",
        "W1129 10:12:01.000000 4242 torch/distributed/run.py:874] Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed. ",
    ]
    out.append(
        "[rank0]:[2026-11-29 10:12:09,120] [INFO] [logging.py:107:log_dist] [Rank 0] DeepSpeed info: version=0.16.4, git-hash=unknown, git-branch=unknown"
    )
    for r in range(ranks):
        out.append(
            f"[rank{r}]:[2026-11-29 10:12:10,{100 + r:03d}] [INFO] [comm.py:652:init_distributed] cdb=None"
        )
    for step in range(1, 4):
        out.append(
            f"[rank0]:[2026-11-29 10:{13 + step}:00,000] [INFO] [logging.py:107:log_dist] [Rank 0] step={step * 10}, skipped=0, lr=[1e-05], mom=[(0.9, 0.999)]"
        )
    return out


def summary(items: list[dict], root: dict, width: int = 60) -> list[str]:
    def item(i: int, d: dict) -> list[str]:
        sig = f"  ({d['signal']})" if d.get("signal") else " "
        return [
            f"[{i}]:",
            f"  time      : {d['time']}",
            f"  host      : {d['host']}",
            f"  rank      : {d['rank']} (local_rank: {d['rank']})",
            f"  exitcode  : {d['exitcode']} (pid: {d['pid']}){sig}",
            f"  error_file: {d.get('error_file', '<N/A>')}",
            f"  traceback : {d['traceback']}",
        ]

    out = [
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "=" * width,
        "train.py FAILED",
        "-" * width,
        "Failures:",
    ]
    for i, d in enumerate(items, 1):
        out += item(i, d)
    out += ["-" * width, "Root Cause (first observed failure):"]
    out += item(0, root)
    out += ["=" * width]
    return out


def write(name: str, lines: list[str], expect: dict) -> None:
    (HERE / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    (HERE / (name + ".expect.json")).write_text(json.dumps(expect, indent=2) + "\n")


def main() -> None:
    # 1. CUDA OOM on rank 3, NCCL watchdog timeouts on the other ranks.
    lines = banner(4) + oom(3, 3)
    for r in (0, 1, 2):
        lines += watchdog(r, f"10:26:0{r}.90388191{r}")
    lines.append(
        "W1129 10:26:05.352000 4242 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 5001 closing signal SIGTERM"
    )
    write(
        "oom-rank3-watchdog-rest.log",
        lines,
        {
            "provenance": "composed",
            "verdict": "match",
            "root_cause": "cuda-oom-during-step",
            "initiating_rank": 3,
            "collateral_include": ["nccl-watchdog-timeout"],
            "collateral_ranks": {"nccl-watchdog-timeout": [0, 1, 2]},
            "versions": {"deepspeed": ["0.16.4"]},
        },
    )

    # 2. The torchelastic summary names rank 0 (its error file is older than the observation of
    # the kill), but rank 2 was SIGKILLed by the host OOM killer and printed nothing.
    lines = banner(4)
    for r in (0, 1, 3):
        lines += watchdog(r, f"10:36:0{r}.10000000{r}")
    lines += [
        "E1129 10:36:09.151000 4242 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) local_rank: 0 (pid: 5000) of binary: /opt/conda/bin/python3",
    ]
    wd = "torch.distributed.DistBackendError: [Rank 0] Watchdog caught collective operation timeout"
    items = [
        dict(time="2026-11-29_10:36:09", host="node-1", rank=1, exitcode=1, pid=5001, traceback=wd),
        dict(
            time="2026-11-29_10:36:09",
            host="node-1",
            rank=2,
            exitcode=-9,
            pid=5002,
            signal="SIGKILL",
            traceback="Signal 9 (SIGKILL) received by PID 5002",
        ),
        dict(time="2026-11-29_10:36:09", host="node-1", rank=3, exitcode=1, pid=5003, traceback=wd),
    ]
    root = dict(
        time="2026-11-29_10:36:00",
        host="node-1",
        rank=0,
        exitcode=1,
        pid=5000,
        error_file="/tmp/torchelastic_x/attempt_0/0/error.json",
        traceback=wd,
    )
    lines += summary(items, root)
    write(
        "elastic-names-collateral-rank-initiator-sigkilled.log",
        lines,
        {
            "provenance": "composed",
            "verdict": "no-match",
            "root_cause": None,
            "initiating_rank": 2,
            "initiating_basis": "sigkill-in-torchelastic-summary",
            "collateral_include": [
                "nccl-watchdog-timeout",
                "torchelastic-childfailederror-summary",
            ],
            "notes_include": ["killed by SIGKILL", "names rank 0 as the first observed failure"],
        },
    )

    # 3. Two independent failures: ENOSPC on rank 1 during a save, later CUDA OOM on rank 6.
    lines = banner(8)
    lines += [
        "[rank1]: Traceback (most recent call last):",
        '[rank1]:   File "/opt/conda/lib/python3.11/site-packages/torch/serialization.py", line 652, in save',
        "[rank1]:     with _open_zipfile_writer(f) as opened_zipfile:",
        "[rank1]: RuntimeError: [enforce fail at inline_container.cc:603] . unexpected pos 1474682432 vs 1474682320",
        "[rank1]: OSError: [Errno 28] No space left on device",
    ]
    lines += oom(6, 6)
    write(
        "two-independent-failures.log",
        lines,
        {
            "provenance": "composed",
            "verdict": "match",
            "root_cause": "disk-full-enospc",
            "initiating_rank": 1,
            "candidates_include": ["disk-full-enospc", "cuda-oom-during-step"],
            "notes_include": ["Another root-cause failure"],
        },
    )

    # 4. Only collateral: watchdog timeouts from every rank but 5; rank 5's output is missing.
    lines = banner(8)
    for r in (0, 1, 2, 3, 4, 6, 7):
        lines += watchdog(r, f"11:00:0{r}.20000000{r}")
    write(
        "collateral-only-rank5-silent.log",
        lines,
        {
            "provenance": "composed",
            "verdict": "no-match",
            "root_cause": None,
            "initiating_rank": 5,
            "collateral_include": ["nccl-watchdog-timeout"],
            "notes_include": ["probably missing", "absent from the collateral reports"],
        },
    )

    # 5. Interleaved and partly garbled: ANSI colour, a carriage-return progress bar, NULs,
    # invalid UTF-8, CRLF endings, an over-long line; the OOM on rank 2 must still be found.
    raw: list[bytes] = [line.encode() for line in banner(4)]
    raw.append(
        b"\x1b[32m[rank1]: 10%|\xe2\x96\x88         | 10/100 [00:10<01:30,  1.00it/s]\r[rank1]: 11%|\xe2\x96\x88         | 11/100 [00:11<01:29,  1.00it/s]\x1b[0m"
    )
    raw.append(b"[rank0]: garbage \xff\xfe\x00\x00 bytes \xc3\x28 here")
    raw.append(b"[rank3]: " + b"x" * 300_000)
    for line in oom(2, 2):
        b = line.encode()
        b = b.replace(b"CUDA out of memory", b"\x1b[1;31mCUDA out of memory\x1b[0m")
        raw.append(b + b"\r")
        raw.append(b"[rank0]: step\x00 0.1")
    for r in (0, 1, 3):
        raw += [w.encode() + b"\r" for w in watchdog(r, f"12:00:0{r}.30000000{r}")]
    (HERE / "garbled-interleaved.log").write_bytes(b"\n".join(raw) + b"\n")
    (HERE / "garbled-interleaved.log.expect.json").write_text(
        json.dumps(
            {
                "provenance": "composed",
                "verdict": "match",
                "root_cause": "cuda-oom-during-step",
                "initiating_rank": 2,
                "evidence_include": ["CUDA out of memory. Tried to allocate 3.39 GiB"],
                "collateral_include": ["nccl-watchdog-timeout"],
            },
            indent=2,
        )
        + "\n"
    )

    # 6. A folder of per-rank files (no prefixes): rank 2 OOMs first, the others time out.
    folder = HERE / "per-rank-folder"
    folder.mkdir(exist_ok=True)
    for r in range(4):
        body = [f"[2026-11-29 13:00:0{r},000] [INFO] [comm.py:652:init_distributed] cdb=None"]
        if r == 2:
            body.append(
                "[2026-11-29 13:10:00,000] [INFO] [logging.py:107:log_dist] [Rank 2] step=40"
            )
            body += [line.split("]: ", 1)[1] for line in oom(2, 2)]
        else:
            body.append(
                f"[2026-11-29 13:20:0{r},500] [INFO] [logging.py:107:log_dist] [Rank {r}] step=40"
            )
            body += [w.split("]:", 1)[1] for w in watchdog(r, f"13:20:1{r}.000000000")]
        (folder / f"train-rank{r}.log").write_text("\n".join(body) + "\n")
    (HERE / "per-rank-folder.expect.json").write_text(
        json.dumps(
            {
                "provenance": "composed",
                "verdict": "match",
                "root_cause": "cuda-oom-during-step",
                "initiating_rank": 2,
                "collateral_include": ["nccl-watchdog-timeout"],
                "collateral_ranks": {"nccl-watchdog-timeout": [0, 1, 3]},
            },
            indent=2,
        )
        + "\n"
    )

    # 7. Captured logs (real runs by scripts/capture/), copied with their expectations; the .gz
    # is the captured torchrun run where rank 1 was SIGKILLed.
    captured = {
        "launcher-torchrun-sigkill-rank1.log.gz": {
            "provenance": "captured: kb/captured/launcher-torchrun-sigkill-rank1.log, gzipped",
            "verdict": "no-match",
            "root_cause": None,
            "initiating_rank": 1,
            "initiating_basis": "sigkill-in-torchelastic-summary",
            "collateral_include": ["torchelastic-childfailederror-summary"],
            "notes_include": ["killed by SIGKILL"],
        },
        "launcher-torchrun-raise-rank1.log": {
            "provenance": "captured: kb/captured/launcher-torchrun-raise-rank1.log",
            "verdict": "no-match",
            "root_cause": None,
            "initiating_rank": 1,
            "collateral_include": ["torchelastic-childfailederror-summary"],
            "notes_include": ["only collateral errors"],
        },
        "healthy-zero2-save-deepspeed-launcher.log": {
            "provenance": "captured: kb/captured/ckpt-zero2-ws2-save-ok-deepspeed-launcher.log",
            "verdict": "no-match",
            "root_cause": None,
            "initiating_rank": None,
        },
    }
    sources = {
        "launcher-torchrun-sigkill-rank1.log.gz": "launcher-torchrun-sigkill-rank1.log",
        "launcher-torchrun-raise-rank1.log": "launcher-torchrun-raise-rank1.log",
        "healthy-zero2-save-deepspeed-launcher.log": "ckpt-zero2-ws2-save-ok-deepspeed-launcher.log",
    }
    for name, expect in captured.items():
        src = CAPTURED / sources[name]
        if name.endswith(".gz"):
            with gzip.GzipFile(HERE / name, "wb", mtime=0) as gz:
                gz.write(src.read_bytes())
        else:
            shutil.copyfile(src, HERE / name)
        (HERE / (name + ".expect.json")).write_text(json.dumps(expect, indent=2) + "\n")


if __name__ == "__main__":
    main()
