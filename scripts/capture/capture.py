#!/usr/bin/env python3
"""Regenerate the captured DeepSpeed logs of denpex-kb by running DeepSpeed for real (CPU only).

    python scripts/capture/capture.py --list
    python scripts/capture/capture.py CASE [CASE...]      # names or fnmatch patterns ("ffw-*")
    python scripts/capture/capture.py --all [--group G]

Each case writes <out>/<case>.log (the output, sanitised, nothing else) and
<out>/<case>.meta.json (command lines, versions, date, exit code). Failure cases go to
kb/captured/, healthy runs to tests/logs/healthy/. See scripts/capture/README.md for the setup
(one venv per DeepSpeed version under .capture/) and for the timings.

This file runs with any Python >= 3.11 and imports nothing outside the standard library: the
cases themselves run in the DeepSpeed venvs.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import fnmatch
import json
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CASES = HERE / "cases"
DEFAULT_STATE = REPO / ".capture"
VERSIONS = ("0.19.0", "0.19.1", "0.16.4")  # venvs shown as <venv-dsX>


class Skip(Exception):
    """A case cannot run here (not root, a package present or missing, no venv)."""


class CaseFailed(Exception):
    """A case ran but its output is not what the case is meant to capture."""


# --------------------------------------------------------------------------- running things


@dataclass
class Step:
    argv: list[str]
    cwd: str
    env: dict[str, str]
    rc: int
    seconds: float
    logged: bool


@dataclass
class Output:
    """What a case hands back: the log text (raw), its exit code, and extra files."""

    text: str
    rc: int
    extra_files: dict[str, str] = field(default_factory=dict)  # name -> raw text


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def is_root() -> bool:
    return os.geteuid() == 0


def has_libaio_dev() -> bool:
    return Path("/usr/include/libaio.h").exists()


class Ctx:
    """Everything a case needs: venv, paths, a runner that records each command, mounts."""

    def __init__(self, state: Path, case: Case, verbose: bool):
        self.state = state
        self.case = case
        self.verbose = verbose
        self.version = case.venv
        self.venv = state / f"venv-ds{self.version}"
        self.ext_dir = state / f"ext-ds{self.version}"
        self.work = state / "work"
        self.tmp = self.work / "tmp"
        self.mnt = self.work / "mnt" / case.name  # per case: cases may run side by side
        self.steps: list[Step] = []
        self.subs: list[tuple[str, str]] = []  # extra (path, placeholder) pairs
        if not (self.venv / "bin" / "python").exists():
            raise Skip(f"no venv {self.venv} (see scripts/capture/README.md, 'Setup')")
        for d in (self.work, self.tmp, self.ext_dir):
            d.mkdir(parents=True, exist_ok=True)
        link = self.work / "scripts"
        if not link.is_symlink() or link.resolve() != CASES:
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(CASES)

    # -- paths
    @property
    def py(self) -> str:
        return str(self.venv / "bin" / "python")

    def bin(self, name: str) -> str:
        return str(self.venv / "bin" / name)

    def script(self, name: str) -> str:
        """Absolute path of a case script, through the work/scripts link (shown as <scripts>)."""
        return str(self.work / "scripts" / name)

    def fresh(self, name: str) -> Path:
        """An empty folder under the work dir (shown as <workdir>/name)."""
        p = self.work / name
        if p.exists():
            shutil.rmtree(p)
        p.mkdir(parents=True)
        return p

    # -- environment
    def env(self, extra: dict[str, str] | None = None, single: bool = False) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(
                (
                    "VIRTUAL_ENV",
                    "PYTHON",
                    "TORCH_EXTENSIONS",
                    "DS_",
                    "RANK",
                    "LOCAL_RANK",
                    "WORLD_SIZE",
                    "MASTER_",
                    "CROSS_",
                    "CUDA_",
                )
            )
        }
        env["PATH"] = f"{self.venv / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}"
        env["VIRTUAL_ENV"] = str(self.venv)
        env["TORCH_EXTENSIONS_DIR"] = str(self.ext_dir)
        env["TMPDIR"] = str(self.tmp)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        if single:
            env.update(
                RANK="0",
                LOCAL_RANK="0",
                WORLD_SIZE="1",
                MASTER_ADDR="127.0.0.1",
                MASTER_PORT=str(free_port()),
            )
        env.update(extra or {})
        return env

    def run(
        self,
        argv: list[str],
        *,
        env: dict[str, str] | None = None,
        single: bool = False,
        cwd: Path | None = None,
        timeout: float = 600,
        log: bool = True,
        nofile: int | None = None,
    ) -> Output:
        """Run a command, stdout and stderr interleaved as a terminal shows them."""
        full_env = self.env(env, single=single)
        cwd = cwd or self.work

        def limits() -> None:
            if nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        t0 = time.monotonic()
        if self.verbose:
            print(f"    $ {' '.join(argv)}", file=sys.stderr)
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=full_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=limits,
        )
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
            out += f"\n[capture: killed after {timeout}s timeout]\n".encode()
        finally:
            # nothing the case started may outlive it (launchers, stuck ranks)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        shown_env = {k: v for k, v in (env or {}).items()}
        if single:
            shown_env.update(
                RANK="0",
                LOCAL_RANK="0",
                WORLD_SIZE="1",
                MASTER_ADDR="127.0.0.1",
                MASTER_PORT="<free port>",
            )
        if nofile is not None:
            shown_env["<ulimit -n>"] = str(nofile)
        self.steps.append(
            Step(
                list(argv),
                str(cwd),
                shown_env,
                proc.returncode,
                round(time.monotonic() - t0, 1),
                log,
            )
        )
        return Output(out.decode("utf-8", errors="replace"), proc.returncode)

    def sh(self, *argv: str | Path, timeout: float = 600) -> None:
        """A setup command whose output is not part of the log; it must succeed."""
        r = self.run([str(a) for a in argv], log=False, timeout=timeout)
        if r.rc != 0:
            raise CaseFailed(f"setup command failed ({r.rc}): {' '.join(map(str, argv))}\n{r.text}")

    def python(self, script: str, *args: str, **kw) -> Output:
        return self.run([self.py, self.script(script), *args], **kw)

    def deepspeed(
        self, nproc: int, script: str, *args: str, launcher_args: tuple[str, ...] = (), **kw
    ) -> Output:
        argv = [
            self.bin("deepspeed"),
            "--num_gpus",
            str(nproc),
            "--master_port",
            str(free_port()),
            *launcher_args,
            f"scripts/{script}",
            *args,
        ]
        return self.run(argv, **kw)

    def torchrun(self, nproc: int, script: str, *args: str, **kw) -> Output:
        argv = [
            self.bin("torchrun"),
            "--nproc_per_node",
            str(nproc),
            "--master_port",
            str(free_port()),
            f"scripts/{script}",
            *args,
        ]
        return self.run(argv, **kw)

    # -- mounts (root only)
    @contextlib.contextmanager
    def _mounted(self, kind: str, size_mb: int, mkfs: tuple[str, ...] = ()) -> Iterator[Path]:
        if not is_root():
            raise Skip(
                f"needs root to mount a {kind} of {size_mb} MiB (run as root, or skip this case)"
            )
        self._umount()
        self.mnt.mkdir(parents=True, exist_ok=True)
        img = self.work / "mnt" / f"{self.case.name}.img"
        if kind == "ext4":
            img.unlink(missing_ok=True)
            self.sh("truncate", "-s", f"{size_mb}M", img)
            self.sh("mkfs.ext4", "-q", "-F", *mkfs, img)
            self.sh("mount", "-o", "loop", img, self.mnt)
        else:
            self.sh("mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", self.mnt)
        try:
            yield self.mnt
        finally:
            self._umount()
            img.unlink(missing_ok=True)

    def ext4(self, size_mb: int, *mkfs: str):
        return self._mounted("ext4", size_mb, mkfs)

    def tmpfs(self, size_mb: int):
        return self._mounted("tmpfs", size_mb)

    def _umount(self) -> None:
        while self.mnt.is_mount():
            if subprocess.run(["umount", str(self.mnt)], capture_output=True).returncode != 0:
                time.sleep(1)
                subprocess.run(["umount", "-l", str(self.mnt)], capture_output=True)

    # -- one-time preparations shared between cases (kept in the work dir)
    def ensure_ops(self, *ops: str) -> None:
        """JIT-build ops once per venv (async_io needs libaio-dev; about 3.5 min; the CPU
        accelerator's deepspeed_shm_comm about 1-2 min)."""
        if "async_io" in ops and not has_libaio_dev():
            raise Skip("needs libaio-dev (apt-get install -y libaio-dev) for the async_io op")
        missing = [op for op in ops if not list(self.ext_dir.glob(f"{op}/*.so"))]
        for op in missing:
            self._clear_stale_lock(self.ext_dir / op)
        if missing:
            print(
                f"    preparing: JIT-building {', '.join(missing)} for deepspeed {self.version} "
                f"(one time, cached in {self.ext_dir})",
                file=sys.stderr,
            )
            loaders = {
                "async_io": "from deepspeed.ops.op_builder import AsyncIOBuilder as B",
                "utils": "from deepspeed.ops.op_builder.utils import UtilsBuilder as B",
                # built by the first deepspeed.initialize of a venv; prebuilt so that its
                # compiler lines stay out of that case's log
                "deepspeed_shm_comm": "from deepspeed.ops.op_builder.cpu import "
                "ShareMemCommBuilder as B",
            }
            for op in missing:
                self.sh(self.py, "-c", f"{loaders[op]}; B().load(verbose=False)", timeout=3600)

    @staticmethod
    def _clear_stale_lock(build_dir: Path) -> None:
        """torch's JIT waits forever on the `lock` file of a build that was killed: remove it
        when no process is working in that folder."""
        lock = build_dir / "lock"
        if not lock.exists():
            return
        for proc in Path("/proc").iterdir():
            with contextlib.suppress(OSError):
                if proc.name.isdigit() and Path(os.readlink(proc / "cwd")) == build_dir:
                    return  # a ninja build is running there
        print(f"    removing the stale JIT lock {lock}", file=sys.stderr)
        lock.unlink(missing_ok=True)

    def ensure_checkpoint(self, name: str, *, nproc: int, stage: int, hidden: int = 64) -> Path:
        """A ZeRO checkpoint (tag global_step2) saved once by ckpt_case.py, reused by load cases."""
        d = self.work / name
        if not (d / "latest").exists():
            if d.exists():
                shutil.rmtree(d)
            env = {"H": str(hidden)}
            if nproc == 1:
                r = self.python(
                    "ckpt_case.py", "save", str(d), str(stage), env=env, single=True, log=False
                )
            else:
                r = self.deepspeed(
                    nproc, "ckpt_case.py", "save", str(d), str(stage), env=env, log=False
                )
            if r.rc != 0 or not (d / "latest").exists():
                raise CaseFailed(f"could not save the fixture checkpoint {d}:\n{r.text[-3000:]}")
        return d

    def copy_checkpoint(self, src: Path, name: str) -> Path:
        dst = self.work / name
        if dst.exists():
            shutil.rmtree(dst)
        shutil.copytree(src, dst)
        return dst

    def hf_hub_path(self) -> str:
        """huggingface_hub installed next to (not into) the venv, for zero_to_fp32.py."""
        target = self.state / "extra-hfhub"
        if not (target / "huggingface_hub").exists():
            self.sh(self.py, "-m", "pip", "install", "-q", "--target", target, "huggingface_hub")
        return str(target)


# --------------------------------------------------------------------------- sanitising


def python_base_prefix(venv: Path) -> str | None:
    cfg = venv / "pyvenv.cfg"
    if cfg.exists():
        for line in cfg.read_text().splitlines():
            if line.startswith("home"):
                return str(Path(line.split("=", 1)[1].strip()).parent)
    return None


def sanitise(text: str, ctx: Ctx) -> str:
    """Replace the machine's paths with the placeholders used in kb/captured/."""
    text = text.replace("\r\n", "\n")
    # ds_report and the op builders colour their output even into a pipe; the kb logs are plain
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    pairs: list[tuple[str, str]] = list(ctx.subs)
    for v in VERSIONS:
        venv = ctx.state / f"venv-ds{v}"
        pairs += [(str(venv), f"<venv-ds{v}>"), (str(venv.resolve()), f"<venv-ds{v}>")]
        pairs += [
            (str(ctx.state / f"ext-ds{v}{sfx}"), "<torch_extensions_dir>") for sfx in ("", "-cuda")
        ]
    pairs += [
        (str(ctx.work / "scripts"), "<scripts>"),
        (str(CASES), "<scripts>"),
        (str(ctx.mnt), "<mnt>"),
        (str(ctx.tmp), "<tmp>"),
        (str(ctx.work), "<workdir>"),
        (str(ctx.state), "<state>"),
        (str(REPO), "<repo>"),
    ]
    base = python_base_prefix(ctx.venv)
    if base:
        pairs.append((base, "<python>"))
    # pip's temporary build folders live under TMPDIR
    text = re.sub(re.escape(str(ctx.tmp)) + r"/pip-[\w-]+", "<pip-tmp>", text)
    for path, placeholder in sorted(set(pairs), key=lambda p: -len(p[0])):
        if path and path != "/":
            text = text.replace(path, placeholder)
    return text


_VOLATILE = [
    (r"\d{4}-\d\d-\d\d[ _]\d\d:\d\d:\d\d(,\d+)?", "<ts>"),
    (r"\b[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ ", "<glog> "),
    (r"\b\d{8,14}_rank", "<ts>_rank"),
    (r"(pid|PID|[Pp]rocess|subprocess|Killing subprocess)([ :=]+)\d+", r"\1\2<pid>"),
    (r"master_port[= ]\d+", "master_port=<port>"),
    (r"\]:\d+", "]:<port>"),
    (r"0x[0-9a-f]{6,}", "<addr>"),
    (r"\d+(\.\d+)? ?s\b", "<secs>"),
    (r"\d+\.\d+(it/s|s/it)", "<rate>"),
    (r'("<scripts>/[\w.]+", line )\d+', r"\1<n>"),
    (r"/dev/loop\d+", "/dev/loopN"),
    (r"torchelastic_\w+/none_\w+", "torchelastic_<tmp>"),
    (r"[A-Z][a-z]{2} [ \d]\d \d\d:\d\d", "<date>"),
    (r"fs_used=\d+MiB", "fs_used=<n>MiB"),
    (r"^/dev/vda .*$", "<host disk>"),
    (r"eta \d+:\d+:\d+", "eta <t>"),
    (r"<pip-tmp>/(\w+?)_[0-9a-f]{32}", r"<pip-tmp>/\1_<hash>"),
    (r"\[\.\.\. \d+ lines of", "[... N lines of"),  # our own elision marker
    (r"[\d.]+/[\d.]+ [kMG]?B [\d.]+ [kMG]?B/s", "<progress>"),
    (r"total \d+(\.\d+)?s?", "total <n>"),
    (r"(Time to load \w+ op: )[\d.]+ seconds", r"\1<secs>"),  # JIT op load
    (r"used = [\d.]+ GB, percent = [\d.]+%", "used = <n> GB, percent = <n>%"),  # see_memory_usage
    (r"(RunningAvgSamplesPerSec|CurrSamplesPerSec)=[\d.e+-]+", r"\1=<rate>"),  # throughput timer
]


def normalise_volatile(text: str) -> str:
    """Mask what legitimately changes from run to run (times, pids, ports, addresses), and the
    source lines of our own case scripts that tracebacks quote (they follow the script's layout)."""
    for pat, rep in _VOLATILE:
        text = re.sub(pat, rep, text, flags=re.M)
    text = re.sub(r'(File "<scripts>/[^"]+", line <n>, in [^\n]*\n)([^\n]*\n)', r"\1<src>\n", text)
    text = re.sub(r"^(\[rank\d+\]: )?\s*[~^]+\s*$", r"\1<carets>", text, flags=re.M)
    return text


# --------------------------------------------------------------------------- writing


def atomic_write(path: Path, data: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_dir(path: Path, files: dict[str, str]) -> None:
    """Replace a folder of files as a whole: build it beside, then swap."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    for name, data in files.items():
        atomic_write(tmp / name, data)
    os.chmod(tmp, 0o755)
    old = None
    if path.exists():
        old = path.with_name(f".{path.name}.old.{os.getpid()}")
        os.replace(path, old)
    os.replace(tmp, path)
    if old:
        shutil.rmtree(old)


def versions(venv: Path) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, platform, json; print(json.dumps({"
        "'deepspeed': m.version('deepspeed'), 'torch': m.version('torch'), "
        "'python': platform.python_version()}))"
    )
    out = subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True)
    return json.loads(out.stdout) if out.returncode == 0 else {}


def trim_middle(text: str, head: int, tail: int, what: str) -> str:
    lines = text.splitlines(keepends=True)
    if len(lines) <= head + tail + 1:
        return text
    cut = len(lines) - head - tail
    return "".join(lines[:head] + [f"[... {cut} lines of {what} elided ...]\n"] + lines[-tail:])


# --------------------------------------------------------------------------- the cases


@dataclass
class Case:
    name: str
    group: str
    desc: str
    fn: Callable[[Ctx], Output]
    venv: str = "0.19.0"
    needs: tuple[str, ...] = ()  # shown by --list: root, mount, libaio, no-libaio, network
    healthy: bool = False
    expect_rc: str = "nonzero"  # "zero", "nonzero" or "any"
    slow: bool = False


REGISTRY: dict[str, Case] = {}


def case(name: str, group: str, desc: str, **kw) -> Callable[[Callable[[Ctx], Output]], Callable]:
    def deco(fn: Callable[[Ctx], Output]) -> Callable[[Ctx], Output]:
        if name in REGISTRY:
            raise ValueError(f"duplicate case {name}")
        REGISTRY[name] = Case(name, group, desc, fn, **kw)
        return fn

    return deco


def _load_case_modules() -> None:
    """catalog.py registers every case through @case; it imports this module as `capture`."""
    sys.modules.setdefault("capture", sys.modules[__name__])
    sys.path.insert(0, str(HERE))
    import catalog  # noqa: F401


# --------------------------------------------------------------------------- driver


def select(patterns: list[str], group: str | None) -> list[Case]:
    chosen: list[Case] = []
    for pat in patterns or ["*"]:
        hits = [c for c in REGISTRY.values() if fnmatch.fnmatchcase(c.name, pat)]
        if not hits:
            raise SystemExit(f"capture.py: no case matches {pat!r} (see --list)")
        chosen += [c for c in hits if c not in chosen]
    if group:
        chosen = [c for c in chosen if c.group == group]
    return chosen


def run_case(c: Case, args: argparse.Namespace) -> str:
    out_dir = Path(args.healthy_out if c.healthy else args.out)
    ctx = Ctx(Path(args.state), c, args.verbose)
    started = _dt.datetime.now(_dt.UTC).replace(microsecond=0)
    t0 = time.monotonic()
    result = c.fn(ctx)
    seconds = round(time.monotonic() - t0, 1)
    log = sanitise(result.text, ctx)
    if c.expect_rc == "zero" and result.rc != 0:
        raise CaseFailed(f"expected exit code 0, got {result.rc}; last lines:\n{log[-2500:]}")
    if c.expect_rc == "nonzero" and result.rc == 0:
        raise CaseFailed(f"expected a failure, got exit code 0; last lines:\n{log[-2500:]}")
    if c.healthy and re.search(r"Traceback|Error|FAILED|exits with return code = [^0]", log):
        raise CaseFailed(f"a healthy run printed an error:\n{log[-2500:]}")
    ver = versions(ctx.venv)
    meta = {
        "case": c.name,
        "description": c.desc,
        "group": c.group,
        "kind": "healthy" if c.healthy else "failure",
        "exit_code": result.rc,
        "date": started.isoformat().replace("+00:00", "Z"),
        "duration_s": seconds,
        "versions": ver,
        "needs": list(c.needs),
        "commands": [
            {
                "argv": [sanitise(a, ctx) for a in s.argv],
                "cwd": sanitise(s.cwd, ctx),
                "env": {k: sanitise(v, ctx) for k, v in s.env.items()},
                "exit_code": s.rc,
                "seconds": s.seconds,
                "output": "logged" if s.logged else "setup (not logged)",
            }
            for s in ctx.steps
        ],
        "produced_by": f"scripts/capture/capture.py {c.name}",
        "machine": {"cpus": os.cpu_count(), "root": is_root(), "libaio_dev": has_libaio_dev()},
    }
    if result.extra_files:
        meta["rank_logs"] = f"{c.name}/"
        atomic_write_dir(
            out_dir / c.name, {k: sanitise(v, ctx) for k, v in result.extra_files.items()}
        )
    atomic_write(out_dir / f"{c.name}.log", log)
    atomic_write(
        out_dir / f"{c.name}.meta.json", json.dumps(meta, indent=2, ensure_ascii=False) + "\n"
    )
    return f"rc={result.rc} {seconds}s -> {(out_dir / c.name).relative_to(REPO) if out_dir.is_relative_to(REPO) else out_dir / c.name}.log"


def compare(c: Case, args: argparse.Namespace) -> str:
    out_dir = Path(args.healthy_out if c.healthy else args.out)
    new, old = out_dir / f"{c.name}.log", Path(args.compare) / f"{c.name}.log"
    if not new.exists() or not old.exists():
        return "missing " + ("new" if not new.exists() else "reference")
    a, b = new.read_text(), old.read_text()
    if a == b:
        return "identical"
    na, nb = normalise_volatile(a), normalise_volatile(b)
    if na == nb:
        return "same modulo volatile fields"

    def lines(t: str) -> list[str]:  # concurrent ranks interleave, and split each other's lines
        return sorted(x for x in re.split(r"\n|(?=\[rank ?\d+\])", t) if x.strip())

    if lines(na) == lines(nb):
        return "same modulo volatile fields and the interleaving of concurrent ranks"
    import difflib

    diff = difflib.unified_diff(
        normalise_volatile(b).splitlines(),
        normalise_volatile(a).splitlines(),
        "reference",
        "new",
        n=0,
        lineterm="",
    )
    return "DIFFERS:\n" + "\n".join(list(diff)[:40])


def main(argv: list[str] | None = None) -> int:
    _load_case_modules()
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("cases", nargs="*", metavar="CASE", help="case names or fnmatch patterns")
    p.add_argument("--list", action="store_true", help="list the cases and what each needs")
    p.add_argument("--all", action="store_true", help="run every case")
    p.add_argument("--group", help="only cases of this group (config, ckpt, launcher, ...)")
    p.add_argument("--out", default=str(REPO / "kb" / "captured"), help="where failure logs go")
    p.add_argument(
        "--healthy-out",
        default=str(REPO / "tests" / "logs" / "healthy"),
        help="where healthy-run logs go",
    )
    p.add_argument(
        "--state",
        default=str(DEFAULT_STATE),
        help="venvs, JIT op caches and scratch space (default .capture/)",
    )
    p.add_argument(
        "--compare",
        metavar="DIR",
        help="after each case, compare its log with DIR/<case>.log modulo times and pids",
    )
    p.add_argument("--compare-only", action="store_true", help="compare without running")
    p.add_argument("-v", "--verbose", action="store_true", help="print each command")
    args = p.parse_args(argv)

    if args.list:
        for c in REGISTRY.values():
            needs = ",".join(c.needs) or "-"
            print(f"{c.name:58} {c.group:9} ds{c.venv}  needs={needs:18} {c.desc}")
        return 0
    if not args.cases and not args.all and not args.group:
        p.error("name cases, or use --all / --group / --list")
    chosen = select(args.cases, args.group)

    def on_term(signum, frame):  # unwind, so that the running case's process group is killed
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    failed = skipped = 0
    for i, c in enumerate(chosen, 1):
        print(f"[{i}/{len(chosen)}] {c.name}", flush=True)
        if args.compare_only:
            print("    " + compare(c, args).replace("\n", "\n    "))
            continue
        try:
            print("    " + run_case(c, args), flush=True)
        except Skip as e:
            skipped += 1
            print(f"    SKIPPED: {e}", flush=True)
            continue
        except CaseFailed as e:
            failed += 1
            print(f"    FAILED (nothing written): {e}", flush=True)
            continue
        if args.compare:
            print("    " + compare(c, args).replace("\n", "\n    "), flush=True)
    if args.compare_only:
        print(f"done: {len(chosen)} compared")
        return 0
    print(f"done: {len(chosen) - failed - skipped} written, {skipped} skipped, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
