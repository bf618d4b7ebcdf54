"""Conformance vectors for line attribution (rank, host, time), exported with the entry vectors.

Every log here is composed by hand from real message formats (named in `provenance`); the
expected values are written by hand from docs/rule-pack-format.md, never computed by the engine.
"""

from __future__ import annotations

from typing import Any

_SPAWN = (
    "[2026-11-29 19:59:35,{ms}] [INFO] [launch.py:272:main] process {pid} spawned with command: "
    "['/usr/bin/python3', '-u', 'train.py', '--local_rank={lr}', '--deepspeed']"
)
_FILLER = "x" * 8200  # a line longer than the 8 KiB look-back

ATTRIBUTION_VECTORS: list[dict[str, Any]] = [
    {
        "name": "innermost-prefix",
        "description": (
            "Nested launcher prefixes: the innermost rank wins, the outermost host is kept, a "
            "node-level prefix after a process-level one is the line's own text."
        ),
        "provenance": (
            "composed; formats: srun --label ('0: '), pdsh ('host: '), torchrun '[rankN]:' "
            "and '[defaultN]:' as in kb/captured/ and globals.line_prefixes"
        ),
        "sources": [
            {
                "name": None,
                "log": (
                    "0: [rank3]: Traceback (most recent call last):\n"
                    "0: [rank3]: OSError: [Errno 28] No space left on device\n"
                    "worker-7: [rank5]: OSError: [Errno 28] No space left on device\n"
                    "worker-7: [default2]:OSError: [Errno 28] No space left on device\n"
                    "[rank3]: 12: OSError: [Errno 28] No space left on device\n"
                    "1: OSError: [Errno 28] No space left on device\n"
                ),
            }
        ],
        "expect": [
            {"source": 0, "line": 1, "rank": 3, "rank_kind": "global", "host": None},
            {"source": 0, "line": 2, "rank": 3, "rank_kind": "global", "host": None},
            {"source": 0, "line": 3, "rank": 5, "rank_kind": "global", "host": "worker-7"},
            {"source": 0, "line": 4, "rank": 2, "rank_kind": "local", "host": "worker-7"},
            {"source": 0, "line": 5, "rank": 3, "rank_kind": "global", "host": None},
            {"source": 0, "line": 6, "rank": 1, "rank_kind": "global", "host": None},
        ],
    },
    {
        "name": "pid-from-launcher-spawn",
        "description": (
            "An NCCL line without a rank prefix takes the local rank of the worker that DeepSpeed's "
            "launcher spawned with the same pid; the host is NCCL's own."
        ),
        "provenance": (
            "composed; spawn line as printed by deepspeed/launcher/launch.py (v0.19.0, see "
            "kb/captured/launcher-ds-4ranks-raise-rank2-mid-training.log); NCCL WARN line from "
            "https://github.com/NVIDIA/nccl/issues/290"
        ),
        "sources": [
            {
                "name": None,
                "log": (
                    _SPAWN.format(ms="263", pid=2142, lr=0)
                    + "\n"
                    + _SPAWN.format(ms="278", pid=2143, lr=1)
                    + "\n"
                    + "gpu2-ru7:2143:2561 [1] include/shm.h:28 NCCL WARN Call to posix_fallocate "
                    "failed : No space left on device\n"
                    "gpu2-ru7:2999:2561 [1] include/shm.h:28 NCCL WARN Call to posix_fallocate "
                    "failed : No space left on device\n"
                ),
            }
        ],
        "expect": [
            {"source": 0, "line": 1, "rank": None, "host": None},
            {
                "source": 0,
                "line": 3,
                "rank": 1,
                "rank_kind": "local",
                "host": "gpu2-ru7",
                "rank_via": "pid",
            },
            {"source": 0, "line": 4, "rank": None, "host": None},
        ],
    },
    {
        "name": "pid-and-device-from-prefixed-nccl",
        "description": (
            "A rank prefix on an NCCL line teaches pid -> rank and (host, cudaDev) -> rank; later "
            "unprefixed NCCL lines (another file too: the map is per log) resolve by pid, else by "
            "device; a pid seen with two ranks resolves nothing."
        ),
        "provenance": (
            "composed; NCCL WARN lines from https://github.com/NVIDIA/nccl/issues/290, 'Init "
            "COMPLETE' lines in NCCL 2.12's format (src/init.cc; a real one in "
            "https://github.com/huggingface/transformers/issues/11658) under torchrun's "
            "'[rankN]:' prefix; a plain INFO line teaches nothing"
        ),
        "sources": [
            {
                "name": None,
                "log": (
                    "[rank4]:gpu2-ru7:2144:2556 [2] NCCL INFO comm 0x7ff1ec001060 rank 4 "
                    "nranks 8 cudaDev 2 busId 3d000 - Init COMPLETE\n"
                    "[rank0]:gpu2-ru7:77:80 [0] NCCL INFO comm 0x7ff1ec001070 rank 0 nranks 8 "
                    "cudaDev 0 busId 1a000 - Init COMPLETE\n"
                    "[rank1]:gpu2-ru7:77:81 [1] NCCL INFO comm 0x7ff1ec001080 rank 1 nranks 8 "
                    "cudaDev 1 busId 1b000 - Init COMPLETE\n"
                    "[rank5]:gpu2-ru7:91:92 [3] NCCL INFO Channel 00 : 5[3] -> 6[4] via P2P/IPC\n"
                ),
            },
            {
                "name": "nccl-debug.txt",
                "log": (
                    "gpu2-ru7:2144:2556 [2] include/shm.h:28 NCCL WARN Call to posix_fallocate "
                    "failed : No space left on device\n"
                    "gpu2-ru7.cluster:3001:3002 [2] include/shm.h:28 NCCL WARN Call to "
                    "posix_fallocate failed : No space left on device\n"
                    "gpu2-ru7:77:79 [5] include/shm.h:28 NCCL WARN Call to posix_fallocate "
                    "failed : No space left on device\n"
                    "gpu2-ru7:91:95 [3] include/shm.h:28 NCCL WARN Call to posix_fallocate "
                    "failed : No space left on device\n"
                ),
            },
        ],
        "expect": [
            {"source": 0, "line": 1, "rank": 4, "host": None, "rank_via": "prefix"},
            {"source": 1, "line": 1, "rank": 4, "host": "gpu2-ru7", "rank_via": "pid"},
            {"source": 1, "line": 2, "rank": 4, "host": "gpu2-ru7.cluster", "rank_via": "device"},
            {"source": 1, "line": 3, "rank": None, "host": None},
            {"source": 1, "line": 4, "rank": None, "host": None},
        ],
    },
    {
        "name": "pid-from-torchelastic-summary",
        "description": "torchelastic's ChildFailedError item gives pid -> global rank.",
        "provenance": (
            "composed; summary block as in globals.elastic_summary.example (torch "
            "distributed/elastic/multiprocessing/errors); NCCL line format from NVIDIA/nccl "
            "src/debug.cc"
        ),
        "sources": [
            {
                "name": None,
                "log": (
                    "node-1:19537:19600 [1] include/shm.h:28 NCCL WARN Call to posix_fallocate "
                    "failed : No space left on device\n"
                    "Root Cause (first observed failure):\n"
                    "[0]:\n"
                    "  time      : 2026-11-29_19:02:59\n"
                    "  host      : node-1\n"
                    "  rank      : 1 (local_rank: 1)\n"
                    "  exitcode  : -9 (pid: 19537)  (SIGKILL)\n"
                    "  error_file: <N/A>\n"
                    "  traceback : Signal 9 (SIGKILL) received by PID 19537\n"
                ),
            }
        ],
        "expect": [
            {"source": 0, "line": 1, "rank": 1, "rank_kind": "global", "host": "node-1"},
        ],
    },
    {
        "name": "shard-name",
        "description": (
            "A ZeRO shard file name gives a rank only when nothing else does (rank_via shard)."
        ),
        "provenance": (
            "composed; shard names as built by deepspeed/runtime/engine.py "
            "(_get_zero_ckpt_prefix, _get_rank_zero_ckpt_name); CPython's OSError text"
        ),
        "sources": [
            {
                "name": None,
                "log": (
                    "OSError: [Errno 28] No space left on device: "
                    "'/ckpt/global_step100/bf16_zero_pp_rank_5_mp_rank_00_optim_states.pt'\n"
                    "[rank2]: OSError: [Errno 28] No space left on device: "
                    "'/ckpt/global_step100/zero_pp_rank_5_mp_rank_00_optim_states.pt'\n"
                ),
            }
        ],
        "expect": [
            {"source": 0, "line": 1, "rank": 5, "rank_kind": "global", "rank_via": "shard"},
            {"source": 0, "line": 2, "rank": 2, "rank_via": "prefix"},
        ],
    },
    {
        "name": "timestamps",
        "description": (
            "Every timestamp format; a line without one takes the last one of the complete lines "
            "that begin in the 8192 bytes before it; glog/c10 take the year of the last dated "
            "timestamp taken in the file."
        ),
        "provenance": (
            "composed; c10 '[E626 06:24:44.903881913 ...' from "
            "https://github.com/XPixelGroup/BasicSR/issues/737; glog 'W1129' from "
            "kb/captured/; NCCL WARN timestamp from https://github.com/pytorch/ci-infra/pull/490; "
            "transformers examples' datefmt (examples/pytorch/text-classification/run_glue.py); "
            "dmesg -T (util-linux sys-utils/dmesg.c); ISO with T and comma "
            "(dmesg --time-format iso)"
        ),
        "sources": [
            {
                "name": None,
                "log": (
                    "[2024-06-22 12:34:56,123] [INFO] [launch.py:272:main] WORLD INFO DICT\n"
                    "[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog "
                    "caught collective operation timeout\n"
                    "E0622 12:34:56.789012 1234 ProcessGroupNCCL.cpp:1] x\n"
                    "06/22/2024 12:34:56 - INFO - __main__ - Training/evaluation parameters\n"
                    "[Sun Jun  2 01:02:03 2024] NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off "
                    "the bus.\n"
                    "2024-06-22T12:34:56,123456+02:00 kernel: x\n"
                    "[2026-04-22 21:34:20] gpu2-ru7:202016:202235 [0] misc/shmutils.cc:88 NCCL "
                    "WARN Error: failed to extend /dev/shm/nccl-WU88OE to 9637892 bytes, error: "
                    "No space left on device (28)\n"
                    "OSError: [Errno 28] No space left on device\n"
                    + _FILLER
                    + "\n"
                    + "OSError: [Errno 28] No space left on device\n"
                ),
            }
        ],
        "expect": [
            {"source": 0, "line": 1, "time": "2024-06-22T12:34:56.123"},
            {"source": 0, "line": 2, "time": "2024-06-26T06:24:44.904", "rank": 1},
            {"source": 0, "line": 3, "time": "2024-06-22T12:34:56.789"},
            {"source": 0, "line": 4, "time": "2024-06-22T12:34:56.000"},
            {"source": 0, "line": 5, "time": "2024-06-02T01:02:03.000"},
            {"source": 0, "line": 6, "time": "2024-06-22T12:34:56.123"},
            {"source": 0, "line": 7, "time": "2026-04-22T21:34:20.000", "rank": None},
            {"source": 0, "line": 8, "time": "2026-04-22T21:34:20.000"},
            {"source": 0, "line": 10, "time": None},
        ],
    },
    {
        "name": "carriage-returns-and-ansi",
        "description": (
            "A line with carriage returns is what a terminal shows: its last non-blank "
            "segment (a trailing \\r and blank segments dropped); ANSI escapes are removed "
            "before the prefix is looked for."
        ),
        "provenance": (
            "composed; a progress line redrawn with \\r as tqdm-style bars do, and a torchrun "
            "'[rankN]:' prefix coloured with ANSI SGR escapes (ESC [ 1;31m ... ESC [ 0m)"
        ),
        "sources": [
            {
                "name": None,
                "log": (
                    "[rank1]: saving 10%\r[rank2]: OSError: [Errno 28] No space left on device\r\n"
                    "[rank4]: OSError: [Errno 28] No space left on device\r   \r\n"
                    "\x1b[1;31m[rank3]:\x1b[0m OSError: [Errno 28] No space left on device\n"
                ),
            }
        ],
        "expect": [
            {"source": 0, "line": 1, "rank": 2, "rank_via": "prefix"},
            {"source": 0, "line": 2, "rank": 4, "rank_via": "prefix"},
            {"source": 0, "line": 3, "rank": 3, "rank_kind": "global", "rank_via": "prefix"},
        ],
    },
    {
        "name": "file-name-ranks",
        "description": (
            "Several files: torchelastic's attempt_N/R/stderr.log gives the local rank R (the "
            "pattern has a '/': searched in the whole path), a rank-N base name the global rank "
            "N; a rank marker in the line wins over the file name; a stream has no file-name "
            "rank."
        ),
        "provenance": (
            "composed; file names as torchelastic's log_dir layout and per-rank log files "
            "(globals.file_name_ranks), marker as DeepSpeed's log_dist '[Rank N] '"
        ),
        "sources": [
            {"name": "run/attempt_0/3/stderr.log", "log": "loading checkpoint\n"},
            {
                "name": "logs/train-rank-5.out",
                "log": (
                    "loading checkpoint\n[Rank 2] OSError: [Errno 28] No space left on device\n"
                ),
            },
            {"name": None, "log": "rank7.log: loading checkpoint\n"},
        ],
        "expect": [
            {"source": 0, "line": 1, "rank": 3, "rank_kind": "local", "rank_via": "file-name"},
            {"source": 1, "line": 1, "rank": 5, "rank_kind": "global", "rank_via": "file-name"},
            {"source": 1, "line": 2, "rank": 2, "rank_kind": "global", "rank_via": "marker"},
            {"source": 2, "line": 1, "rank": None},
        ],
    },
    {
        "name": "torchelastic-summary-sections",
        "description": (
            "In a summary section, a '-' separator closes only the item: the next '[i]:' opens "
            "an item whose lines take its rank; a '=' separator closes the section, after "
            "which '[i]:' opens nothing."
        ),
        "provenance": (
            "composed; field layout of torch.distributed.elastic's ChildFailedError summary "
            "(globals.elastic_summary.example), items separated here by a '-' line"
        ),
        "sources": [
            {
                "name": None,
                "log": (
                    "Failures:\n"
                    "[1]:\n"
                    "  host      : node-b\n"
                    "  rank      : 5 (local_rank: 1)\n"
                    "  error_file: OSError: [Errno 28] No space left on device\n"
                    "----------------------------------------\n"
                    "[2]:\n"
                    "  rank      : 6 (local_rank: 2)\n"
                    "  error_file: OSError: [Errno 28] No space left on device\n"
                    "========================================\n"
                    "[3]:\n"
                    "  error_file: OSError: [Errno 28] No space left on device\n"
                ),
            }
        ],
        "expect": [
            {"source": 0, "line": 5, "rank": 5, "host": "node-b", "rank_via": "elastic-summary"},
            {"source": 0, "line": 9, "rank": 6, "rank_via": "elastic-summary"},
            {"source": 0, "line": 12, "rank": None},
        ],
    },
]
