"""Export the knowledge base as a rule pack: one portable, deterministic JSON file.

The rule pack is what every consumer of denpex-kb loads, our own matching engine included
(`denpex_kb.engine` reads the exported file, never the YAML). Its format is documented in
docs/rule-pack-format.md and described by schemas/rulepack.schema.json.

Determinism: keys are sorted, entries are ordered by id, signals keep their order in the entry,
nothing depends on time, locale or the file system order. The content hash is the SHA-256 of the
canonical serialisation (see `canonical_bytes`) of the pack with the `content_hash` member removed.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from . import __version__
from . import model as m
from .attribution_vectors import ATTRIBUTION_VECTORS
from .factspec import facts_section
from .rule_vectors import RULE_SEMANTICS, rule_vectors

FORMAT = "denpex-rulepack"
FORMAT_VERSION = "1.3"
DIALECT = "re2"
DEFAULT_OUTPUT = Path("denpex-rules.json")
VECTORS_FORMAT = "denpex-rulepack-vectors"

# --------------------------------------------------------------------------------------------
# Global definitions the engine needs besides the entries. Every pattern here is written in the
# common subset of RE2, Python `re` and JavaScript `RegExp` (flag "u"): no named groups (their
# syntax differs between the three), no lookaround, no backreferences, no inline flags. Groups
# are therefore numbered, and `groups` maps each group's name to its number.
# --------------------------------------------------------------------------------------------

LINE_PREFIXES: list[dict[str, Any]] = [
    {
        "id": "openmpi-tag-output",
        "level": 0,
        "description": "OpenMPI mpirun --tag-output: [jobid,rank]<stream>:",
        "pattern": r"^\[([0-9]+),([0-9]+)\]<(stdout|stderr|stddiag)>: ?",
        "groups": {"job": 1, "rank": 2, "stream": 3},
        "rank_kind": "global",
        "example": "[1,3]<stderr>:Traceback (most recent call last):",
    },
    {
        "id": "torchrun-rank",
        "level": 1,
        "description": "torchrun (torch >= 2.2) with --tee/--redirects or local-ranks-filter: [rankN]:",
        "pattern": r"^\[rank([0-9]+)\]: ?",
        "groups": {"rank": 1},
        "rank_kind": "global",
        "example": "[rank3]: Traceback (most recent call last):",
    },
    {
        "id": "torchrun-role-local-rank",
        "level": 1,
        "description": "torchrun/torchelastic --tee prefix [<role><local_rank>]:, role 'default' unless set",
        "pattern": r"^\[(default|trainer|worker)([0-9]+)\]: ?",
        "groups": {"role": 1, "rank": 2},
        "rank_kind": "local",
        "example": "[default3]:Traceback (most recent call last):",
    },
    {
        "id": "srun-label",
        "level": 0,
        "description": "Slurm srun --label: the task id, a colon and a space",
        "pattern": r"^ {0,4}([0-9]+): ",
        "groups": {"rank": 1},
        "rank_kind": "global",
        "example": "3: Traceback (most recent call last):",
    },
    {
        "id": "pdsh-host",
        "level": 0,
        "description": (
            "pdsh (DeepSpeed's multi-node launcher) prefixes every line with the host name and "
            "': '. To avoid taking 'error: ' or 'note: ' for a host, the name must contain a digit "
            "or be 'localhost'."
        ),
        "pattern": r"^(localhost|[a-z0-9][a-z0-9._-]*[0-9][a-z0-9._-]*): ",
        "groups": {"host": 1},
        "rank_kind": None,
        "example": "worker-7: [rank3]: Traceback (most recent call last):",
    },
]

# Rank markers inside a line (not stripped): the first match attributes the line to a rank when
# no prefix did.
RANK_MARKERS: list[dict[str, Any]] = [
    {
        "id": "deepspeed-log-dist",
        "description": "DeepSpeed log_dist(): '[Rank N] message' after the logger header",
        "pattern": r"\[Rank ([0-9]+)\] ",
        "groups": {"rank": 1},
        "example": "[2025-01-01 10:00:00,123] [INFO] [logging.py:107:log_dist] [Rank 0] DeepSpeed info: version=0.16.4, git-hash=unknown, git-branch=unknown",
    },
    {
        "id": "c10d-process-group",
        "description": "ProcessGroupNCCL messages: '[PG ID 0 PG GUID 0(default_pg) Rank 3] ...'",
        "pattern": r"\[PG [^\]]{0,200} Rank ([0-9]+)\]",
        "groups": {"rank": 1},
        "example": "[PG ID 0 PG GUID 0(default_pg) Rank 3] Watchdog caught collective operation timeout",
    },
]

FILE_NAME_RANKS: list[dict[str, Any]] = [
    {
        "id": "torchelastic-log-dir",
        "description": "torchelastic --log-dir layout: .../attempt_<n>/<local_rank>/stdout.log or stderr.log",
        "pattern": r"attempt_[0-9]+/([0-9]+)/(stdout|stderr)\.log$",
        "groups": {"rank": 1},
        "rank_kind": "local",
        "example": "logs/none_abc/attempt_0/3/stderr.log",
    },
    {
        "id": "rank-in-name",
        "description": (
            "a file per rank, the rank number last before the extensions: rank3.log, "
            "train-rank-3.out, rank_03.txt.gz, log.rank3"
        ),
        "pattern": r"(^|[^A-Za-z0-9])[Rr]ank[-_.]?([0-9]+)(\.[A-Za-z0-9]+)*$",
        "groups": {"rank": 2},
        "rank_kind": "global",
        "example": "job-1234-rank-3.log",
    },
]

TIMESTAMPS: list[dict[str, Any]] = [
    {
        "id": "python-logging",
        "description": (
            "ISO 8601 date and time, with 'T' or a space between them, an optional fraction after "
            "',' or '.' (DeepSpeed's and Python logging's asctime [YYYY-MM-DD HH:MM:SS,mmm], "
            "dmesg --time-format iso, NCCL's WARN timestamp); a UTC offset after it is ignored"
        ),
        "pattern": r"([0-9]{4})-([0-9]{2})-([0-9]{2})[ T]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:[,.]([0-9]{1,9}))?",
        "groups": {
            "year": 1,
            "month": 2,
            "day": 3,
            "hour": 4,
            "minute": 5,
            "second": 6,
            "fraction": 7,
        },
        "example": "[2026-11-29 19:14:23,456] [INFO] [launch.py:162:main] WORLD INFO DICT",
    },
    {
        "id": "torchelastic-summary",
        "description": "time field of torchelastic's ChildFailedError summary: YYYY-MM-DD_HH:MM:SS",
        "pattern": r"([0-9]{4})-([0-9]{2})-([0-9]{2})_([0-9]{2}):([0-9]{2}):([0-9]{2})",
        "groups": {"year": 1, "month": 2, "day": 3, "hour": 4, "minute": 5, "second": 6},
        "example": "  time      : 2026-11-29_19:14:15",
    },
    {
        "id": "glog",
        "description": (
            "glog and c10 (torch's C++ logging, c10/util/Logging.cpp): [IWEF] then month and day "
            "then HH:MM:SS.fraction, no year. glog pads the month to two digits (W1129, E0622); "
            "c10's own logger prints (month * 100 + day) unpadded, so June 22 is E622"
        ),
        "pattern": r"(?:^|\[)([IWEF])([0-9]{1,2})([0-9]{2}) ([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{1,9})",
        "groups": {
            "level": 1,
            "month": 2,
            "day": 3,
            "hour": 4,
            "minute": 5,
            "second": 6,
            "fraction": 7,
        },
        "example": "W1129 19:14:16.352000 21941 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 21944 closing signal SIGTERM",
    },
    {
        "id": "hf-examples",
        "description": (
            "transformers' example scripts (examples/pytorch/*/run_*.py: logging.basicConfig with "
            "datefmt '%m/%d/%Y %H:%M:%S'): MM/DD/YYYY HH:MM:SS"
        ),
        "pattern": r"(?:^|[^0-9/])([0-9]{2})/([0-9]{2})/([0-9]{4}) ([0-9]{2}):([0-9]{2}):([0-9]{2})",
        "groups": {"month": 1, "day": 2, "year": 3, "hour": 4, "minute": 5, "second": 6},
        "example": "06/22/2024 12:34:56 - INFO - __main__ - Training/evaluation parameters",
    },
    {
        "id": "dmesg-ctime",
        "description": (
            "dmesg -T (util-linux sys-utils/dmesg.c, strftime '[%a %b %e %H:%M:%S %Y] ', English "
            "names; %e pads the day with a space)"
        ),
        "pattern": (
            r"\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
            r" {1,2}([0-9]{1,2}) ([0-9]{2}):([0-9]{2}):([0-9]{2}) ([0-9]{4})\]"
        ),
        "groups": {"month_name": 1, "day": 2, "hour": 3, "minute": 4, "second": 5, "year": 6},
        "example": "[Sat Jun 22 12:34:56 2024] NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.",
    },
]

# Lines that name an OS process id (the program that prints them is known), used to attribute
# lines that carry no rank prefix: a pid -> rank map is learnt from the lines of the same log.
PROCESS_LINES: list[dict[str, Any]] = [
    {
        "id": "nccl-debug",
        "description": (
            "NCCL_DEBUG output (NVIDIA/nccl src/debug.cc): an optional timestamp (NCCL >= 2.26 "
            "puts '[%F %T] ' before WARN lines by default), then hostname:pid:tid [cudaDev], the "
            "hostname cut at its first dot; the pid is the printing process. Only the lines "
            "that matter and are rare: every WARN ('[file:line [(func)]] NCCL WARN') and the "
            "INFO line each rank prints when a communicator is ready ('comm 0x... rank R nranks "
            "N cudaDev D ... - Init COMPLETE', src/init.cc, with the function name first in "
            "recent releases). Other INFO lines (thousands per rank) are not process lines."
        ),
        "pattern": (
            r"^(?:\[[^\]]{1,64}\] )?([^ :\[\]]+):([0-9]+):([0-9]+) \[([0-9]+)\] "
            r"(?:(?:[^ ]+ ){0,3}NCCL WARN |NCCL INFO (?:[A-Za-z]+ )?comm 0x[0-9a-f]+ rank [0-9]+ "
            r"nranks [0-9]+ cudaDev [0-9]+ .*- Init COMPLETE)"
        ),
        "groups": {"host": 1, "pid": 2, "tid": 3, "device": 4},
        "literals": ["NCCL WARN ", "- Init COMPLETE"],
        "subject": "self",
        "rank_kind": None,
        "example": "gpu2-ru7:2143:2561 [1] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device",
    },
    {
        "id": "deepspeed-launch-spawn",
        "description": (
            "DeepSpeed's per-node launcher (deepspeed/launcher/launch.py, v0.13.2 and later) logs "
            "each worker it starts with its command line, which ends in --local_rank=N unless "
            "--no_local_rank is given"
        ),
        "pattern": r"process ([0-9]+) spawned with command: \[.*'--local_rank=([0-9]+)'",
        "groups": {"pid": 1, "rank": 2},
        "literals": ["spawned with command: "],
        "subject": "other",
        "rank_kind": "local",
        "example": "[2026-11-29 19:14:05,120] [INFO] [launch.py:272:main] process 21944 spawned with command: ['/usr/bin/python', '-u', 'train.py', '--local_rank=1', '--deepspeed']",
    },
]

# Weak rank markers: a line that names a rank-specific file. Used only when nothing else gives
# the line a rank (the number is the data-parallel rank, equal to the global rank only without
# model or pipeline parallelism).
WEAK_RANK_MARKERS: list[dict[str, Any]] = [
    {
        "id": "deepspeed-zero-shard",
        "description": (
            "DeepSpeed ZeRO checkpoint shards (deepspeed/runtime/engine.py _get_zero_ckpt_prefix "
            "and _get_ckpt_name): [bf16_]zero_pp_rank_<dp_rank>_mp_rank_<mp:02d>_optim_states.pt "
            "or ..._model_states.pt"
        ),
        "pattern": r"(?:^|[^A-Za-z0-9])(?:bf16_)?zero_pp_rank_([0-9]+)_mp_rank_[0-9]{2,}_(?:optim|model)_states\.pt",
        "groups": {"rank": 1},
        "example": "FileNotFoundError: [Errno 2] No such file or directory: '/ckpt/global_step100/bf16_zero_pp_rank_5_mp_rank_00_optim_states.pt'",
    },
]

ANSI_ESCAPE = r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]"

# The last line of a Python traceback (the exception raised), after the prefix is stripped:
# `ValueError: ...`, `torch.distributed.DistBackendError: ...`, `KeyboardInterrupt`. A line like
# this that no signal explains is an error the knowledge base does not know; the engine reports
# it instead of guessing, and takes its rank as the likely initiator when no entry fires.
EXCEPTION_LINE = (
    r"^(?:[A-Za-z_][A-Za-z0-9_]*\.)*[A-Z][A-Za-z0-9_]*(?:Error|Exception|Interrupt)(?:: |:?$)"
)

# Other lines that report an error without being a Python exception: NCCL's WARN records
# (`host:pid:tid [dev] file:line NCCL WARN ...`, src/debug.cc), CUDA runtime errors as torch
# prints them, compiler diagnostics (`file:line:col: error: ...`, gcc/nvcc), ninja's `FAILED:`,
# the shell's `Segmentation fault`/`Bus error (core dumped)`. Unexplained, they are reported with
# the exception lines and sent to the text index when no entry fires (1.1).
SALIENT_LINE = (
    r" NCCL WARN |CUDA error: |: (?:fatal )?error: |^FAILED: |Segmentation fault|"
    r"Bus error \(core dumped\)"
)

# Whole lines (anchored at both ends) that are never evidence, even when a signal matches them.
BOILERPLATE: list[dict[str, Any]] = [
    {
        "id": "tqdm-progress",
        "description": "tqdm progress bars",
        "pattern": r"^ *[0-9]{1,3}%\|[^|]{0,200}\| *[0-9.]+[kMG]?/[0-9.?]+[kMG]? \[[^\]]*\] *$",
        "example": " 42%|████▏     | 420/1000 [01:23<01:55,  5.03it/s]",
    },
    {
        "id": "torchrun-omp-banner",
        "description": "torchrun's OMP_NUM_THREADS banner",
        "pattern": r"^Setting OMP_NUM_THREADS environment variable for each process.*$",
        "example": "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, ...",
    },
    {
        "id": "python-deprecation-warning",
        "description": "FutureWarning / DeprecationWarning lines",
        "pattern": r"^\S+\.py:[0-9]+: (FutureWarning|DeprecationWarning): .*$",
        "example": "/x/torch/distributed/c10d_logger.py:83: FutureWarning: `torch.distributed.all_gather_into_tensor` is deprecated.",
    },
]

VERSION_BANNERS: list[dict[str, Any]] = [
    {
        "id": "deepspeed-info",
        "package": "deepspeed",
        "description": "deepspeed.initialize() log_dist at rank 0 (deepspeed/__init__.py)",
        "pattern": r"DeepSpeed info: version=([0-9][0-9A-Za-z.+]*)",
        "groups": {"version": 1},
        "example": "[Rank 0] DeepSpeed info: version=0.19.0, git-hash=unknown, git-branch=unknown",
    },
    {
        "id": "ds-report-deepspeed",
        "package": "deepspeed",
        "description": "ds_report (deepspeed/env_report.py)",
        "pattern": r"^deepspeed info \.+ ([0-9][0-9A-Za-z.+]*)",
        "groups": {"version": 1},
        "example": "deepspeed info ................... 0.19.0, unknown, unknown",
    },
    {
        "id": "ds-report-torch",
        "package": "torch",
        "description": "ds_report (deepspeed/env_report.py)",
        "pattern": r"^torch version \.+ ([0-9][0-9A-Za-z.+]*)",
        "groups": {"version": 1},
        "example": "torch version .................... 2.13.0+cpu",
    },
    {
        "id": "collect-env-torch",
        "package": "torch",
        "description": "python -m torch.utils.collect_env",
        "pattern": r"^PyTorch version: ([0-9][0-9A-Za-z.+]*)",
        "groups": {"version": 1},
        "example": "PyTorch version: 2.4.0+cu121",
    },
    {
        "id": "ds-report-cuda",
        "package": "cuda",
        "description": "ds_report: the CUDA version torch was built with",
        "pattern": r"^torch cuda version \.+ ([0-9][0-9.]*)",
        "groups": {"version": 1},
        "example": "torch cuda version ............... 12.1",
    },
    {
        "id": "collect-env-cuda",
        "package": "cuda",
        "description": "python -m torch.utils.collect_env",
        "pattern": r"^CUDA used to build PyTorch: ([0-9][0-9.]*)",
        "groups": {"version": 1},
        "example": "CUDA used to build PyTorch: 12.1",
    },
    {
        "id": "nccl-version",
        "package": "nccl",
        "description": "NCCL_DEBUG=INFO banner, and torch's NCCL error messages",
        "pattern": r"NCCL version ([0-9]+\.[0-9]+\.[0-9]+)",
        "groups": {"version": 1},
        "example": "node-1:1234:1234 [0] NCCL INFO NCCL version 2.21.5+cuda12.4",
    },
    {
        "id": "hf-env-transformers",
        "package": "transformers",
        "description": "transformers-cli env",
        "pattern": r"^- `transformers` version: ([0-9][0-9A-Za-z.+]*)",
        "groups": {"version": 1},
        "example": "- `transformers` version: 4.46.0",
    },
    {
        "id": "hf-env-accelerate",
        "package": "accelerate",
        "description": "accelerate env",
        "pattern": r"^- `Accelerate` version: ([0-9][0-9A-Za-z.+]*)",
        "groups": {"version": 1},
        "example": "- `Accelerate` version: 1.0.1",
    },
]

# torchelastic's ChildFailedError summary (torch/distributed/elastic/multiprocessing/errors).
ELASTIC_SUMMARY: dict[str, Any] = {
    "description": (
        "The block torchrun prints when a worker fails. 'Root Cause (first observed failure)' is "
        "the failure the agent observed first (observation time, not failure time); 'Failures' "
        "lists the others. Each item starts with '[i]:' and has indented fields."
    ),
    "patterns": {
        "root_cause_header": r"^Root Cause \(first observed failure\):",
        "failures_header": r"^Failures:",
        "item_start": r"^\[([0-9]+)\]:$",
        "field_time": r"^ +time +: (.*)$",
        "field_host": r"^ +host +: (\S+)",
        "field_rank": r"^ +rank +: ([0-9]+) \(local_rank: ([0-9]+)\)",
        "field_exitcode": r"^ +exitcode +: (-?[0-9]+) \(pid: ([0-9]+)\)(?: +\((SIG[A-Z0-9]+)\))?",
        "field_error_file": r"^ +error_file: (.*)$",
        "field_traceback": r"^ +traceback +: (.*)$",
        "separator": r"^(={20,}|-{20,})$",
    },
    "example": (
        "Root Cause (first observed failure):\n[0]:\n  time      : 2026-11-29_19:02:59\n"
        "  host      : localhost\n  rank      : 1 (local_rank: 1)\n"
        "  exitcode  : -9 (pid: 19537)  (SIGKILL)\n  error_file: <N/A>\n"
        "  traceback : Signal 9 (SIGKILL) received by PID 19537\n"
    ),
}

# Scoring constants (documented in docs/rule-pack-format.md, "Score and verdict").
SCORING: dict[str, Any] = {
    "base": 60,
    "per_signal": 10,
    "max": 95,
    "version_unknown_penalty": 10,
    "version_known_bonus": 5,
    "shadowed_factor_percent": 50,
    "threshold": 50,
    "scale": 100,
    "partial_base": 40,
    "fact_favour": 15,
}


def globals_section() -> dict[str, Any]:
    return {
        "ansi_escape": ANSI_ESCAPE,
        "exception_line": EXCEPTION_LINE,
        "salient_line": SALIENT_LINE,
        "line_prefixes": LINE_PREFIXES,
        "max_prefixes_per_line": 3,
        "prefix_rank": "innermost",
        "process_lines": PROCESS_LINES,
        "weak_rank_markers": WEAK_RANK_MARKERS,
        "rank_markers": RANK_MARKERS,
        "file_name_ranks": FILE_NAME_RANKS,
        "timestamps": TIMESTAMPS,
        "boilerplate": BOILERPLATE,
        "version_banners": VERSION_BANNERS,
        "elastic_summary": ELASTIC_SUMMARY,
        "scoring": SCORING,
        "facts": facts_section(),
    }


def page_path(entry: m.Entry) -> str:
    """Hub page of an entry, relative to the site root (the hub is built without directory
    URLs so that it works from file://; equals denpex_kb.site.page_url)."""
    return f"entries/{entry.id}.html"


def _entry_rule(e: m.Entry) -> dict[str, Any]:
    rule = e.match
    return {
        "id": e.id,
        "title": e.title,
        "summary": e.summary,
        "framework": e.framework,
        "phase": e.phase,
        "failure_class": e.failure_class,
        "severity": e.severity,
        "role": rule.role,
        "page": page_path(e),
        "fix": {"steps": list(e.fix.steps), "workaround": e.fix.workaround},
        "verify": {"command": e.verify.command, "expected": e.verify.expected},
        "look_alikes": [{"id": la.id, "tell": la.tell} for la in e.look_alikes],
        "checklist": [
            {"check": c.check, "command": c.command, "shows": c.shows, "read_only": c.read_only}
            for c in e.checklist
        ],
        "signals": [
            {
                "id": s.id,
                "pattern": s.pattern,
                "ignore_case": s.ignore_case,
                "description": s.description,
            }
            for s in e.signals
        ],
        "match": {
            "scope": rule.scope,
            "all": list(rule.all),
            "any": list(rule.any),
            "none": list(rule.none),
            "window_lines": rule.window_lines,
            "fatal": rule.fatal,
            "versions": [{"package": v.package, "specifier": v.specifier} for v in rule.versions],
            "weak": list(rule.weak),
            "facts": [dict(f) for f in rule.facts],
            "explains": [dict(x) for x in rule.explains],
        },
    }


def canonical_bytes(obj: Any) -> bytes:
    """Canonical JSON: sorted keys, no insignificant whitespace, UTF-8, no ASCII escaping.

    For the pack (strings, integers, booleans, null; no floats) this equals RFC 8785 (JCS).
    """
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8"
    )


def content_hash(pack: dict[str, Any]) -> str:
    body = {k: v for k, v in pack.items() if k != "content_hash"}
    return "sha256:" + hashlib.sha256(canonical_bytes(body)).hexdigest()


def build_pack(kb: m.KnowledgeBase) -> dict[str, Any]:
    """The rule pack of a loaded (validated) knowledge base, as a JSON-ready dict."""
    pack: dict[str, Any] = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "kb_version": __version__,
        "dialect": DIALECT,
        "globals": globals_section(),
        "entries": [_entry_rule(e) for e in sorted(kb.entries, key=lambda e: e.id)],
    }
    pack["content_hash"] = content_hash(pack)
    return pack


def dumps(obj: Any) -> bytes:
    """The file form: sorted keys, 2-space indent, UTF-8, one trailing newline."""
    return (json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def build_vectors(kb: m.KnowledgeBase, pack: dict[str, Any]) -> dict[str, Any]:
    """Every example of every entry, with the verdict a conforming engine must reproduce."""
    vectors = []
    for e in sorted(kb.entries, key=lambda e: e.id):
        for ex in e.examples:
            vectors.append(
                {
                    "name": f"{e.id}/{ex.name}",
                    "entry": e.id,
                    "expect": ex.expect,
                    "expect_top": ex.expect_top,
                    "evidence": list(ex.evidence),
                    "provenance": ex.provenance,
                    "log": ex.log,
                }
            )
    return {
        "format": VECTORS_FORMAT,
        "format_version": FORMAT_VERSION,
        "rulepack_hash": pack["content_hash"],
        "semantics": (
            "Run the log through the engine with the rule pack whose content_hash is "
            "rulepack_hash. expect=match: the entry fires (is among the candidates) and every "
            "evidence string is a substring of a cited evidence line of that entry. "
            "expect=no-match: the entry does not fire (a hypothesis is not a firing), or "
            "fires only shadowed by a more specific entry. expect_top: that entry is the "
            "report's root cause; with none, the first hypothesis of a differential or "
            "probable verdict; with none either, the first candidate."
        ),
        "vectors": vectors,
        "attribution_semantics": (
            "Attribute every line of every source of the log (sources in order, one log) per "
            "docs/rule-pack-format.md 'Reading a log'. For each expect item, the line `line` of "
            "source `source` has each listed member: rank, rank_kind, host, rank_via, and time "
            "as YYYY-MM-DDTHH:MM:SS.mmm (milliseconds rounded; null: no time)."
        ),
        # a copy: a caller that edits the vectors must not change the next export
        "attribution": copy.deepcopy(ATTRIBUTION_VECTORS),
        "rules_semantics": RULE_SEMANTICS,
        "rules": rule_vectors(),
    }


# --------------------------------------------------------------------------------------------
# Validation, as a consumer would do it.
# --------------------------------------------------------------------------------------------


@cache
def rulepack_schema() -> dict[str, Any]:
    """The published rule pack schema: it reads every 1.x pack (open, see `denpex_kb.schemas`)."""
    from .schemas import load_schema

    return load_schema("rulepack")


@cache
def strict_rulepack_schema() -> dict[str, Any]:
    """The strict form: what a pack of this version (or an older minor) must pass."""
    from .schemas import strict_schema

    return strict_schema(rulepack_schema())


SCHEMA_ID_BASE = "https://denpex-kb.invalid/schemas/"


def schema_id(name: str, version: str) -> str:
    """The `$id` of the published schema `name` for format `version` (MAJOR.MINOR)."""
    return f"{SCHEMA_ID_BASE}{name}/{version}"


def _version_problem(pack: Any) -> tuple[str | None, bool]:
    """(one line saying why this engine cannot read `pack` at all, or None; whether the pack
    is of a newer minor version than this engine's, so that only the open schema applies)."""
    if not isinstance(pack, dict):
        return "$: a rule pack is a JSON object", False
    if pack.get("format") != FORMAT:
        return f"$.format: not a denpex rule pack (format is not {FORMAT!r})", False
    ver = pack.get("format_version")
    m_ = re.fullmatch(r"([0-9]+)\.([0-9]+)", ver) if isinstance(ver, str) else None
    if m_ is None:
        return f"$.format_version: {ver!r} is not MAJOR.MINOR", False
    own_major, own_minor = (int(x) for x in FORMAT_VERSION.split("."))
    major, minor = int(m_.group(1)), int(m_.group(2))
    if major != own_major:
        return (
            f"$.format_version: rule pack format {ver} is not supported: this engine reads "
            f"format {own_major}.x (written for {FORMAT_VERSION}); use a denpex-kb release "
            f"that reads format {major}.x",
            False,
        )
    return None, minor > own_minor


class RulePackError(ValueError):
    """The rule pack is not valid; `problems` lists every finding as 'json.path: message'."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


def _all_patterns(pack: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(location, pattern, ignore_case) of every regex in the pack."""
    out: list[tuple[str, str, bool]] = []
    g = pack["globals"]
    out.append(("globals.ansi_escape", g["ansi_escape"], False))
    out.append(("globals.exception_line", g["exception_line"], False))
    out.append(("globals.salient_line", g["salient_line"], False))
    for i, t in enumerate(g["facts"]["tables"]):
        out.append((f"globals.facts.tables[{i}].header", t["header"], False))
        out.append((f"globals.facts.tables[{i}].row", t["row"], False))
    for i, x in enumerate(g["facts"]["lines"]):
        out.append((f"globals.facts.lines[{i}].pattern", x["pattern"], False))
    for key in (
        "line_prefixes",
        "rank_markers",
        "file_name_ranks",
        "timestamps",
        "boilerplate",
        "version_banners",
        "process_lines",
        "weak_rank_markers",
    ):
        for i, item in enumerate(g.get(key, [])):
            out.append((f"globals.{key}[{i}].pattern", item["pattern"], False))
    for key, val in sorted(g["elastic_summary"]["patterns"].items()):
        if isinstance(val, str):  # a later minor version's non-pattern member: not ours
            out.append((f"globals.elastic_summary.patterns.{key}", val, False))
    for i, e in enumerate(pack["entries"]):
        for j, s in enumerate(e["signals"]):
            out.append((f"entries[{i}].signals[{j}].pattern", s["pattern"], s["ignore_case"]))
    return out


def validate_pack(pack: Any) -> None:
    """Raise RulePackError unless `pack` is a valid rule pack (schema + semantic checks).

    A pack of another major version, or not a rule pack at all, is refused with one problem
    (one line) before the schema runs."""
    import jsonschema

    from .kb import compile_re2

    refusal, newer_minor = _version_problem(pack)
    if refusal is not None:
        raise RulePackError([refusal])
    problems: list[str] = []
    # A pack of a later minor version may carry members and values this engine does not know
    # (the compatibility policy): the published, open schema. Ours or older: the strict form,
    # where an unknown member is a producer's mistake (a typo), not an addition.
    schema = rulepack_schema() if newer_minor else strict_rulepack_schema()
    validator = jsonschema.Draft202012Validator(schema)
    for err in sorted(validator.iter_errors(pack), key=lambda e: list(e.absolute_path)):
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path)
        problems.append(f"${where}: {err.message[:300]}")
    if problems:
        raise RulePackError(problems)

    seen: set[str] = set()
    for i, e in enumerate(pack["entries"]):
        if e["id"] in seen:
            problems.append(f"$.entries[{i}].id: duplicate entry id {e['id']!r}")
        seen.add(e["id"])
        sig_ids = [s["id"] for s in e["signals"]]
        if len(set(sig_ids)) != len(sig_ids):
            problems.append(f"$.entries[{i}].signals: duplicate signal id")
        rule = e["match"]
        if not rule["all"] and not rule["any"]:
            problems.append(f"$.entries[{i}].match: needs 'all' or 'any'")
        for clause in ("all", "any", "none"):
            for sid in rule[clause]:
                if sid not in sig_ids:
                    problems.append(f"$.entries[{i}].match.{clause}: unknown signal {sid!r}")
        for j, v in enumerate(rule["versions"]):
            from packaging.specifiers import InvalidSpecifier, SpecifierSet

            try:
                SpecifierSet(v["specifier"])
            except InvalidSpecifier:
                problems.append(
                    f"$.entries[{i}].match.versions[{j}].specifier: invalid {v['specifier']!r}"
                )
    ids = [e["id"] for e in pack["entries"]]
    if ids != sorted(ids):
        problems.append("$.entries: not ordered by id")
    for i, e in enumerate(pack["entries"]):
        for la in e["look_alikes"]:
            if la["id"] not in seen:
                problems.append(f"$.entries[{i}].look_alikes: unknown entry {la['id']!r}")
    for where, pat, icase in _all_patterns(pack):
        try:
            re.compile(pat, re.IGNORECASE if icase else 0)
        except re.error as exc:
            problems.append(f"$.{where}: does not compile in Python re: {exc}")
            continue
        reason = compile_re2(pat, icase)
        if reason:
            problems.append(f"$.{where}: does not compile in RE2: {reason}")
    if content_hash(pack) != pack["content_hash"]:
        problems.append("$.content_hash: does not match the content")
    if problems:
        raise RulePackError(problems)


def load_pack(path: str | Path, validate: bool = True) -> dict[str, Any]:
    data = json.loads(Path(path).read_bytes())
    if validate:
        validate_pack(data)
    return data


def write_atomic(path: Path, data: bytes) -> None:
    """Write via a temporary file in the same folder and rename: never a half-written file
    (with the user's umask; see `denpex_kb.atomic`)."""
    from .atomic import write_file

    write_file(Path(path), data)


def export(kb: m.KnowledgeBase, output: Path, vectors: Path | None = None) -> dict[str, Any]:
    """Build, validate and write the pack (and optionally the conformance vectors)."""
    pack = build_pack(kb)
    validate_pack(pack)
    write_atomic(output, dumps(pack))
    if vectors is not None:
        write_atomic(vectors, dumps(build_vectors(kb, pack)))
    return pack
