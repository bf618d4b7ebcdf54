#!/usr/bin/env python3
"""Reproduce DeepSpeed's FastFileWriter file-descriptor leak (0.17.1 <= deepspeed < 0.19.1).

Run it with the Python of the environment you want to test:

    python ffw_leak_repro.py                  # 10 rotated saves of 4 MiB in a temporary folder
    python ffw_leak_repro.py --tmpfs-mb 16    # (root) on a 16 MiB tmpfs: the real ENOSPC

Each save goes through deepspeed.io.FastFileWriter (the FastPersist writer behind
"checkpoint": {"writer": {"type": "fast"}}) and the checkpoint from --keep saves ago is deleted,
as a training job's rotation does. After each save it prints the number of deleted-but-open
fds this process holds (what `lsof +L1` would list), the space the file system reports used
(df) and the space the folder's files take (du). On a leaky release every save leaves one fd
open on a deleted file: df grows by one checkpoint per save while du stays flat, until the disk
is full. On a fixed release the count stays at 0.

The last line is the verdict: LEAKS or NO LEAK. The exit code is 0 when the installed
DeepSpeed behaves as expected for its version (leaks on 0.17.1-0.19.0, not from 0.19.1 on),
1 when it does not, 2 when the reproduction could not run.

Needs: DeepSpeed and torch, libaio-dev (the async_io op is JIT-built on first use, about 3 min),
a C++ compiler. Works on a CPU-only machine: it uses an mlock'ed buffer from the aio handle
instead of a CUDA-pinned tensor, and the generic C++ utils op where the CPU accelerator has none.
These stand-ins touch neither the writer's file handling nor the leak.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import shutil
import subprocess
import sys
import tempfile
import time

LEAKY = ("0.17.1", "0.19.1")  # affected: LEAKY[0] <= version < LEAKY[1]


def vtuple(v: str) -> tuple[int, ...]:
    parts = []
    for p in v.split("+")[0].split("."):
        digits = "".join(ch for ch in p if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts + [0] * (3 - len(parts)))


def deleted_open_fds(folder: str) -> int:
    n = 0
    for e in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            t = os.readlink(f"/proc/self/fd/{e}")
            if t.startswith(folder) and t.endswith("(deleted)"):
                n += 1
    return n


def df_used_mib(folder: str) -> float:
    st = os.statvfs(folder)
    return (st.f_blocks - st.f_bfree) * st.f_frsize / 2**20


def du_mib(folder: str) -> float:
    total = 0
    for name in os.listdir(folder):
        with contextlib.suppress(FileNotFoundError):
            total += os.stat(os.path.join(folder, name)).st_blocks * 512
    return total / 2**20


@contextlib.contextmanager
def workdir(args: argparse.Namespace):
    if args.tmpfs_mb:
        if os.geteuid() != 0:
            sys.exit("ffw_leak_repro: --tmpfs-mb needs root (it mounts a tmpfs)")
        d = tempfile.mkdtemp(prefix="ffw-repro-tmpfs-")
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={args.tmpfs_mb}m", "tmpfs", d], check=True
        )
        try:
            yield d
        finally:
            # the leaked fds keep the tmpfs busy until this process exits: detach it lazily
            subprocess.run(["umount", "-l", d], check=False)
            os.rmdir(d)
    elif args.dir:
        os.makedirs(args.dir, exist_ok=True)
        yield os.path.abspath(args.dir)
    else:
        d = tempfile.mkdtemp(prefix="ffw-repro-")
        try:
            yield d
        finally:
            shutil.rmtree(d, ignore_errors=True)


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--saves", type=int, help="number of saves (default 10; 200 with --tmpfs-mb)")
    p.add_argument(
        "--keep", type=int, default=2, help="checkpoints kept by the rotation (default 2)"
    )
    p.add_argument(
        "--mb", type=int, default=4, help="checkpoint size in MiB (default 4; 2 with --tmpfs-mb)"
    )
    p.add_argument("--dir", help="folder to save into (default: a new temporary folder)")
    p.add_argument("--tmpfs-mb", type=int, metavar="N", help="(root) save into a fresh N MiB tmpfs")
    p.add_argument(
        "--expect",
        choices=["auto", "leak", "no-leak"],
        default="auto",
        help="expected behaviour (default: from the installed DeepSpeed version)",
    )
    args = p.parse_args()
    saves = args.saves or (200 if args.tmpfs_mb else 10)
    mb = args.mb if args.mb != 4 or not args.tmpfs_mb else 2
    if saves <= args.keep + 1:
        p.error(f"--saves must exceed --keep + 1 to see rotation ({saves} <= {args.keep + 1})")

    # torch's JIT runs the first `ninja` on PATH: use this environment's (as an activated venv
    # would), so that the op is not rebuilt by a different ninja version than the one that built it
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    try:
        import deepspeed
        import deepspeed.io.fast_file_writer as ffw_mod
        import torch
        from deepspeed.io import FastFileWriter, FastFileWriterConfig
        from deepspeed.ops.op_builder import AsyncIOBuilder
        from deepspeed.ops.op_builder.utils import UtilsBuilder as GenericUtils
    except ImportError as e:
        print(f"ffw_leak_repro: cannot import DeepSpeed's FastFileWriter: {e}", file=sys.stderr)
        print("VERDICT: NOT RUN (DeepSpeed >= 0.17.1 with deepspeed.io.FastFileWriter is needed)")
        return 2

    ver = deepspeed.__version__
    leaky_version = vtuple(LEAKY[0]) <= vtuple(ver) < vtuple(LEAKY[1])
    expect_leak = {"auto": leaky_version, "leak": True, "no-leak": False}[args.expect]
    print(
        f"deepspeed {ver}, torch {torch.__version__}: expected {'LEAKS' if expect_leak else 'NO LEAK'} "
        f"(the leak is in {LEAKY[0]} <= deepspeed < {LEAKY[1]})",
        flush=True,
    )

    if not AsyncIOBuilder().is_compatible(verbose=False):
        print("VERDICT: NOT RUN (the async_io op cannot be built here: install libaio-dev)")
        return 2
    if "NotImplemented" in type(ffw_mod.UtilsBuilder()).__name__:
        ffw_mod.UtilsBuilder = GenericUtils  # CPU accelerator: use the generic C++ utils op
    t_build = time.time()
    aio = (
        AsyncIOBuilder()
        .load(verbose=False)
        .aio_handle(
            block_size=1 << 20,
            queue_depth=8,
            single_submit=False,
            overlap_events=False,
            intra_op_parallelism=1,
        )
    )
    pinned = aio.new_cpu_locked_tensor(8 << 20, torch.empty(0, dtype=torch.uint8))
    cfg = FastFileWriterConfig(
        dnvme_handle=aio,
        pinned_tensor=pinned,
        double_buffer=True,
        num_parallel_writers=1,
        writer_rank=0,
    )
    if time.time() - t_build > 5:
        print(f"(ops built or loaded in {time.time() - t_build:.0f}s)", flush=True)

    enospc_at = None
    with workdir(args) as d:
        where = f"{args.tmpfs_mb} MiB tmpfs" if args.tmpfs_mb else d
        print(f"{saves} saves of {mb} MiB into {where}, keeping the last {args.keep}", flush=True)
        df0 = df_used_mib(d)
        print(
            f"{'save':>4}  {'deleted-but-open fds':>20}  {'df used +MiB':>12}  {'du MiB':>7}",
            flush=True,
        )
        fds = 0
        for i in range(saves):
            path = os.path.join(d, f"ckpt_{i:04d}.pt")
            try:
                w = FastFileWriter(file_path=path, config=cfg)
                torch.save({"step": i, "w": torch.full((mb << 18,), float(i))}, f=w)
                w.close()
                w = None
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
                enospc_at = i
                print(f"save {i}: OSError: [Errno {e.errno}] {e.strerror}", flush=True)
                w = None  # the failed writer's __del__ complains now, not after the verdict
                break
            if i - args.keep >= 0:
                os.unlink(os.path.join(d, f"ckpt_{i - args.keep:04d}.pt"))
            fds = deleted_open_fds(d)
            print(f"{i:4d}  {fds:20d}  {df_used_mib(d) - df0:12.1f}  {du_mib(d):7.1f}", flush=True)
        df_growth, du_now = df_used_mib(d) - df0, du_mib(d)
        fds = deleted_open_fds(d)
        if enospc_at is not None:
            subprocess.run(["df", "-h", d], check=False)
            print(f"$ du -sh: {du_now:.1f} MiB in {len(os.listdir(d))} files", flush=True)

    leaks = fds > 0
    detail = (
        f"{fds} deleted-but-open fds after {enospc_at if enospc_at is not None else saves} saves; "
        f"df grew {df_growth:.0f} MiB while du is {du_now:.0f} MiB"
    )
    if enospc_at is not None:
        detail += f"; ENOSPC (Errno 28) at save {enospc_at} on a {args.tmpfs_mb} MiB tmpfs"
    as_expected = leaks == expect_leak
    print(
        f"VERDICT: {'LEAKS' if leaks else 'NO LEAK'} - deepspeed {ver}: {detail} - "
        f"{'as expected' if as_expected else 'NOT as expected'} for this version"
    )
    return 0 if as_expected else 1


if __name__ == "__main__":
    sys.exit(main())
