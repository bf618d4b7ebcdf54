"""Fact extractors: the environment evidence a log carries besides its error lines.

These are data exported into the rule pack (`globals.facts`), so every consumer of the pack
extracts the same facts: `df -h`/`df -i` tables, `lsof` listings of deleted files, `ulimit`,
`free`, `nvidia-smi` memory, kernel OOM-killer and Xid records, the DeepSpeed config it prints,
CUDA-OOM numbers, the path a failing system call names and NCCL's `Last error:`. Each extractor is
one RE2 pattern with named groups, each group typed (int, size or str). The semantics, including
tables whose kind is decided by their header line, are in docs/rule-pack-format.md ("Facts").
"""

from __future__ import annotations

from typing import Any

# A number with an optional binary unit as df -h, free -h and torch print them: 35G, 1.5T, 20.00
# MiB, 512K, 0B, 7.8Gi. Converted to bytes (powers of 1024) by the "size" type.
_SIZE = r"[0-9][0-9.,]*(?: ?[KMGTPE]i?B?|B)?"
# c10 format_size: "512 bytes", "20.00 MiB", "1.38 GiB".
_TORCH_SIZE = r"[0-9][0-9.]* ?(?:bytes|[KMGTPE]iB)"
_DF_ROW = (
    r"^(?P<filesystem>\S+)\s+(?:[a-z][a-z0-9.]*\s+)?(?P<size>{n})\s+(?P<used>{n})\s+"
    r"(?P<avail>{n})\s+(?P<use_pct>[0-9]{{1,3}})%\s+(?P<mount>/\S*)\s*$"
)

TABLES: list[dict[str, Any]] = [
    {
        "id": "df-blocks",
        "fact": "df_blocks",
        "description": "df, df -h, df -k, df -B1, df -T: a row of the block-usage table",
        "header": r"^Filesystem\s+(?:Type\s+)?(?:Size|1K-blocks|1B-blocks|[0-9]+[KMG]?-blocks)\s+Used\s+Avail(?:able)?\s+(?:Use|Capacity)%\s+Mounted on",
        "row": _DF_ROW.format(n=_SIZE),
        "types": {"size": "size", "used": "size", "avail": "size", "use_pct": "int"},
        "max_rows": 200,
    },
    {
        "id": "df-inodes",
        "fact": "df_inodes",
        "description": "df -i, df -ih: a row of the inode-usage table",
        "header": r"^Filesystem\s+(?:Type\s+)?Inodes\s+IUsed\s+IFree\s+IUse%\s+Mounted on",
        "row": _DF_ROW.format(n=_SIZE)
        .replace("size>", "inodes>", 1)
        .replace("used>", "iused>", 1)
        .replace("avail>", "ifree>", 1),
        "types": {"inodes": "size", "iused": "size", "ifree": "size", "use_pct": "int"},
        "max_rows": 200,
    },
    {
        # The header has only GPU columns, so `nvidia-smi topo -m` (which adds CPU/NUMA
        # affinity columns and PHB/NV# cells) is never read as this table.
        "id": "nvidia-smi-topo-p2p",
        "fact": "gpu_p2p",
        "description": "nvidia-smi topo -p2p r (read) or w (write): a row of the P2P status matrix (X, OK, CNS, GNS, TNS, NS, DR, U)",
        "header": r"^\s*GPU0(?:\s+GPU[0-9]+)+\s*$",
        "row": r"^\s*GPU(?P<index>[0-9]+)\s+(?P<status>(?:(?:X|OK|CNS|GNS|TNS|NS|DR|U)\s+)*(?:X|OK|CNS|GNS|TNS|NS|DR|U))\s*$",
        "types": {"index": "int"},
        "max_rows": 64,
    },
]

# Single-line extractors. A fact name may come from several extractors (other wordings).
LINES: list[dict[str, Any]] = [
    {
        "id": "lsof-deleted",
        "fact": "deleted_open_file",
        "description": "lsof / lsof +L1 / ls -l /proc/PID/fd: a file that is deleted but still open",
        "pattern": r"(?P<path>/\S+) \(deleted\)\s*$",
        "types": {},
    },
    {
        "id": "ulimit-nofile",
        "fact": "ulimit_nofile",
        "description": "ulimit -a: the open-files limit",
        "pattern": r"^open files\s+\((?:-n|descriptors)\)\s+(?P<value>[0-9]+|unlimited)\s*$",
        "types": {},
    },
    {
        "id": "free-mem",
        "fact": "host_memory",
        "description": "free / free -h: the Mem: row",
        "pattern": rf"^Mem:\s+(?P<total>{_SIZE})\s+(?P<used>{_SIZE})\s+(?P<free>{_SIZE})",
        "types": {"total": "size", "used": "size", "free": "size"},
    },
    {
        "id": "nvidia-smi-memory",
        "fact": "gpu_memory",
        "description": "nvidia-smi: the memory column of a GPU row",
        "pattern": r"\|\s+(?P<used>[0-9]+)MiB\s*/\s*(?P<total>[0-9]+)MiB\s+\|",
        "types": {"used": "int", "total": "int"},
    },
    {
        "id": "kernel-oom-kill",
        "fact": "kernel_oom_kill",
        "description": "kernel OOM killer record (dmesg, journalctl -k, /var/log/kern.log)",
        "pattern": r"(?:Out of memory|Memory cgroup out of memory): Killed process (?P<pid>[0-9]+) \((?P<comm>[^)]*)\)",
        "types": {"pid": "int"},
    },
    {
        "id": "nvidia-xid",
        "fact": "gpu_xid",
        "description": "NVIDIA driver Xid record",
        "pattern": r"NVRM: Xid \(PCI:(?P<pci>[0-9A-Fa-f:.]+)\): (?P<xid>[0-9]+)",
        "types": {"xid": "int"},
    },
    {
        "id": "ds-checkpoint-writer-json",
        "fact": "ds_checkpoint_writer",
        "description": 'DeepSpeed config (printed `json = {...}` dump or a pasted ds_config): a "writer" section',
        "pattern": r'"writer"\s*:\s*\{',
        "types": {},
    },
    {
        "id": "ds-checkpoint-writer-print",
        "fact": "ds_checkpoint_writer",
        "description": "DeepSpeedEngine configuration print: checkpoint_config with a writer dict",
        "pattern": r"checkpoint_config \.+ \{.*'writer': \{",
        "types": {},
    },
    {
        "id": "ds-zero-stage-print",
        "fact": "ds_zero_stage",
        "description": "DeepSpeedEngine configuration print: zero_optimization_stage",
        "pattern": r"zero_optimization_stage \.+ (?:ZeroStageEnum\.[a-z_]+ ?)?(?P<stage>[0-3])\b",
        "types": {"stage": "int"},
    },
    {
        "id": "cuda-oom-torch21",
        "fact": "cuda_oom",
        "description": "torch >= 2.1 CUDA OOM message: requested, total, free, reserved but unallocated",
        "pattern": rf"Tried to allocate (?P<requested>{_TORCH_SIZE})\. GPU (?P<gpu>[0-9]+) has a total capacity of (?P<total>{_TORCH_SIZE}) of which (?P<free>{_TORCH_SIZE}) is free\.(?:.*? and (?P<reserved_unallocated>{_TORCH_SIZE}) is reserved by PyTorch but unallocated)?",
        "types": {
            "requested": "size",
            "gpu": "int",
            "total": "size",
            "free": "size",
            "reserved_unallocated": "size",
        },
    },
    {
        "id": "cuda-oom-torch1",
        "fact": "cuda_oom",
        "description": "torch < 2.1 CUDA OOM message: requested, total, allocated, free, reserved",
        "pattern": rf"Tried to allocate (?P<requested>{_TORCH_SIZE}) \(GPU (?P<gpu>[0-9]+); (?P<total>{_TORCH_SIZE}) total capacity; (?P<allocated>{_TORCH_SIZE}) already allocated; (?P<free>{_TORCH_SIZE}) free; (?P<reserved>{_TORCH_SIZE}) reserved in total by PyTorch\)",
        "types": {
            "requested": "size",
            "gpu": "int",
            "total": "size",
            "allocated": "size",
            "free": "size",
            "reserved": "size",
        },
    },
    {
        "id": "nvidia-smi-gpu-name",
        "fact": "gpu_model",
        "description": "nvidia-smi: the index and name of a GPU row (driver 4xx-5xx table layout)",
        "pattern": r"\|\s+(?P<index>[0-9]+)\s+(?P<name>[A-Za-z][^|]*?)\s+(?:On|Off)\s+\|\s+[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9]",
        "types": {"index": "int"},
    },
    {
        "id": "nvidia-smi-list",
        "fact": "gpu_model",
        "description": "nvidia-smi -L: GPU N: <name> (UUID: GPU-...)",
        "pattern": r"^GPU (?P<index>[0-9]+): (?P<name>[^(]+?) \(UUID: GPU-",
        "types": {"index": "int"},
    },
    {
        "id": "ds-report-op",
        "fact": "ds_op",
        "description": "ds_report's op table (DeepSpeed v0.5.0-v0.19.x): op ..... [YES|NO] ..... [OKAY|NO]",
        "pattern": r"^(?P<op>[a-z][a-z0-9_]*) \.+ \[(?P<installed>YES|NO)\] \.+ \[(?P<compatible>OKAY|NO)\]",
        "types": {},
    },
    {
        "id": "ds-report-ninja",
        "fact": "ds_op",
        "description": "ds_report: the ninja row (compatible OKAY, or FAIL when ninja is missing)",
        "pattern": r"^(?P<op>ninja) \.+ \[(?P<compatible>OKAY|FAIL)\]",
        "types": {},
    },
    {
        "id": "error-path-errno",
        "fact": "error_path",
        "description": "the path a failing Python system call names: [Errno N] message: 'path'",
        "pattern": r"\[Errno (?P<errno>[0-9]+)\] [^:']+: '(?P<path>/[^']*)'",
        "types": {"errno": "int"},
    },
    {
        "id": "error-path-dev-shm",
        "fact": "error_path",
        "description": "a /dev/shm segment named by NCCL or torch in an error",
        "pattern": r"(?P<path>/dev/shm/[A-Za-z0-9._-]+)",
        "types": {},
    },
]


def unname_groups(pattern: str) -> tuple[str, dict[str, int]]:
    """The pattern with `(?P<name>` turned into plain groups, and {name: group number}: the
    pack's dialect must also run in JavaScript, which spells named groups differently, so the
    pack carries positional groups plus a map (as the version banners do)."""
    out: list[str] = []
    groups: dict[str, int] = {}
    n = 0
    i = 0
    in_class = False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(":
            if pattern.startswith("(?P<", i):
                end = pattern.index(">", i)
                n += 1
                groups[pattern[i + 4 : end]] = n
                out.append("(")
                i = end + 1
                continue
            if not pattern.startswith("(?", i):
                n += 1
        out.append(c)
        i += 1
    return "".join(out), groups


def _export(spec: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    out = dict(spec)
    for key in keys:
        out[key], groups = unname_groups(spec[key])
        if key != "header":
            out["groups"] = groups
    return out


def facts_section() -> dict[str, Any]:
    return {
        "tables": [_export(t, ("header", "row")) for t in TABLES],
        "lines": [_export(x, ("pattern",)) for x in LINES],
    }


def fact_fields() -> dict[str, set[str]]:
    """Every fact name and the fields its extractors can fill (for the loader's checks)."""
    out: dict[str, set[str]] = {}
    for spec in TABLES:
        out.setdefault(spec["fact"], set()).update(unname_groups(spec["row"])[1])
    for spec in LINES:
        out.setdefault(spec["fact"], set()).update(unname_groups(spec["pattern"])[1])
    return out
