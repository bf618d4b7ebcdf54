"""What a fleet run is made of: jobs, found in a folder tree, a glob or a manifest.

A job is what `denpex-kb match` takes in one call: a log file (any compression `match` reads), or
a folder of per-rank (or per-node) files. Discovery decides where one job ends and the next
begins; it never reads a log, only names and `stat`.
"""

from __future__ import annotations

import fnmatch
import glob
import hashlib
import json
import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

HASH_PIECE = 1 << 20


class JobError(Exception):
    """The inputs cannot be turned into jobs (a missing manifest, a bad manifest line)."""


@dataclass(frozen=True)
class Job:
    id: str  # unique in a run; the key of its records
    paths: tuple[str, ...]  # what `match` is given: one file or one folder (or several)
    time: str | None = None  # ISO 8601 UTC, when the manifest gives it (else the newest mtime)
    meta: dict = field(default_factory=dict, compare=False, hash=False)

    def to_json(self) -> dict:
        return {"id": self.id, "paths": list(self.paths), "time": self.time, "meta": self.meta}

    @classmethod
    def from_json(cls, d: dict) -> Job:
        return cls(d["id"], tuple(d["paths"]), d.get("time"), d.get("meta") or {})


def _visible(name: str) -> bool:
    return not name.startswith(".")


def job_files(job: Job) -> list[Path]:
    """Every regular file of the job, in the order `match` reads them (folders walked sorted)."""
    out: list[Path] = []
    for p in job.paths:
        path = Path(p)
        if path.is_dir():
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if _visible(d))
                out.extend(Path(root) / f for f in sorted(files) if _visible(f))
        else:
            out.append(path)
    return out


def content_hash(job: Job) -> tuple[str, int, float | None]:
    """sha256 over the job's files (name relative to the job, then bytes), the bytes on disk and
    the newest mtime. Raises OSError when a file cannot be read."""
    h = hashlib.sha256(b"denpex-fleet-job 1\0")
    total = 0
    newest: float | None = None
    for path in job_files(job):
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            h.update(os.fsencode(path.name) + b"\0special\0")
            continue
        newest = st.st_mtime if newest is None else max(newest, st.st_mtime)
        h.update(os.fsencode(path.name) + b"\0" + str(st.st_size).encode() + b"\0")
        with open(path, "rb") as f:
            while piece := f.read(HASH_PIECE):
                h.update(piece)
                total += len(piece)
    return h.hexdigest(), total, newest


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------------------------------------
def _is_job_folder(folder: Path, names: list[str], dirs: list[str], rank_of: Callable) -> bool:
    """A folder of per-rank files (most of its files carry a rank in their name, per the pack's
    file-name rules, and at least two different ranks) or a torchelastic --log-dir
    (attempt_<n>/ inside) is one job."""
    if any(d.startswith("attempt_") and d[8:].isdigit() for d in dirs):
        return True
    files = [n for n in names if (folder / n).is_file()]
    ranks = [r for r in (rank_of(n) for n in files) if r is not None]
    return len(set(ranks)) >= 2 and 2 * len(ranks) > len(files)


def _walk_auto(root: Path, rank_of: Callable, keep: Callable) -> Iterable[tuple[str, Path]]:
    base = root.name or root.resolve().name
    for cur, dirs, files in os.walk(root):
        here = Path(cur)
        dirs[:] = sorted(d for d in dirs if _visible(d))
        files = sorted(f for f in files if _visible(f))
        rel = here.relative_to(root).as_posix()
        jid = base if rel == "." else f"{base}/{rel}"
        if _is_job_folder(here, files, dirs, rank_of):
            dirs[:] = []
            yield jid, here
            continue
        for f in files:
            if keep(f):
                yield f"{jid}/{f}", here / f


def _walk_depth(root: Path, depth: int, keep: Callable) -> Iterable[tuple[str, Path]]:
    """Every file or folder exactly `depth` levels below the root is one job."""
    level = [root]
    for _ in range(depth):
        nxt: list[Path] = []
        for d in level:
            if d.is_dir():
                try:
                    nxt.extend(sorted(p for p in d.iterdir() if _visible(p.name)))
                except OSError:
                    continue
        level = nxt
    base = root.name or root.resolve().name
    for p in level:
        if p.is_dir() or keep(p.name):
            yield f"{base}/{p.relative_to(root).as_posix()}", p


def read_manifest(path: Path) -> list[Job]:
    """JSON Lines, one job a line: {"id": ..., "paths": [...] or "path": ..., "time": ISO 8601,
    optional "meta": {...}}. Relative paths are relative to the manifest's folder. Blank lines
    and lines starting with '#' are ignored."""
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise JobError(f"cannot read manifest {path}: {getattr(exc, 'strerror', exc)}") from None
    jobs = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            d = json.loads(line)
            paths = d["paths"] if "paths" in d else [d["path"]]
            if (
                not isinstance(paths, list)
                or not paths
                or not all(isinstance(p, str) for p in paths)
            ):
                raise ValueError("paths must be a non-empty list of strings")
            paths = [str(p if os.path.isabs(p) else path.parent / p) for p in paths]
            jid = str(d.get("id") or paths[0])
            t = d.get("time")
            if t is not None:
                t = iso(datetime.fromisoformat(str(t).replace("Z", "+00:00")).timestamp())
            meta = d.get("meta") or {}
            if not isinstance(meta, dict):
                raise ValueError("meta must be an object")
        except (ValueError, KeyError, TypeError) as exc:
            raise JobError(f"{path}:{n}: bad manifest line ({exc})") from None
        jobs.append(Job(jid, tuple(paths), t, meta))
    return jobs


def discover(
    inputs: list[str],
    manifest: Path | None = None,
    depth: int | None = None,
    rank_of: Callable[[str], int | None] | None = None,
    include: list[str] | None = None,
) -> list[Job]:
    """Jobs from folders (walked: auto layout, or every entry `depth` levels down), globs (each
    match a job), files (a job each) and a manifest. In a walked folder, a file is a job only
    when its name matches one of `include` (fnmatch patterns; default: every file). A job's id
    is its path below the folder, after the folder's name. Ids are unique: a repeated id is an
    error, since it would mix two jobs' records."""
    rank = rank_of or (lambda n: None)

    def keep(name: str) -> bool:
        return not include or any(fnmatch.fnmatch(name, pat) for pat in include)

    jobs: list[Job] = read_manifest(manifest) if manifest is not None else []
    for inp in inputs:
        if any(c in inp for c in "*?["):
            matches = sorted(glob.glob(inp, recursive=True))
            if not matches:
                raise JobError(f"{inp}: no file or folder matches")
            jobs.extend(Job(m, (m,)) for m in matches)
            continue
        p = Path(inp)
        if p.is_dir():
            found = _walk_depth(p, depth, keep) if depth else _walk_auto(p, rank, keep)
            jobs.extend(Job(jid, (str(fp),)) for jid, fp in sorted(found))
        elif p.exists() or p.is_symlink():
            jobs.append(Job(inp, (inp,)))
        else:
            raise JobError(f"{inp}: no such file or folder")
    seen: set[str] = set()
    for j in jobs:
        if j.id in seen:
            raise JobError(f"job id {j.id!r} appears twice; give each job its own id")
        seen.add(j.id)
    return jobs
