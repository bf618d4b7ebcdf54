"""Save N checkpoints through DeepSpeed's FastFileWriter (FastPersist) with rotation and
report, after each save, how many deleted-but-open fds the process holds, the file system's
used space (statvfs, what df shows) and the apparent size of the folder (what du shows).

usage: python ffw_leak.py DIR N KEEP MB
Env: VERIFY=1   torch.load each checkpoint right after saving it
     QUIET=1    print every 50th save only (and the first failed load)
Runs on a CPU-only machine: see the two substitutions below.
"""

import os
import subprocess
import sys
import time
import traceback

import deepspeed
import deepspeed.io.fast_file_writer as ffw_mod
import torch
from deepspeed.io import FastFileWriter, FastFileWriterConfig
from deepspeed.ops.op_builder import AsyncIOBuilder

# On the CPU accelerator deepspeed.ops.op_builder.UtilsBuilder is a NotImplementedBuilder and
# FastFileWriter.__init__ loads it. Use the generic C++ utils op instead (JIT-built).
from deepspeed.ops.op_builder.utils import UtilsBuilder as _GenericUtils

ffw_mod.UtilsBuilder = _GenericUtils

d, n, keep, mb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
quiet, verify = bool(os.environ.get("QUIET")), bool(os.environ.get("VERIFY"))
os.makedirs(d, exist_ok=True)
print(
    f"deepspeed {deepspeed.__version__} torch {torch.__version__} dir={d} n={n} keep={keep} ckpt={mb}MiB",
    flush=True,
)

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
# page-aligned, mlock'ed CPU buffer from the aio handle: the CPU stand-in for a CUDA-pinned
# tensor (torch.Tensor.pin_memory() raises on a CPU-only torch)
pinned = aio.new_cpu_locked_tensor(8 << 20, torch.empty(0, dtype=torch.uint8))
cfg = FastFileWriterConfig(
    dnvme_handle=aio,
    pinned_tensor=pinned,
    double_buffer=True,
    num_parallel_writers=1,
    writer_rank=0,
)


def deleted_fds():
    count = 0
    try:
        ents = os.listdir("/proc/self/fd")
    except OSError as e:
        return f"?({e.strerror})"
    for e in ents:
        try:
            t = os.readlink(f"/proc/self/fd/{e}")
        except OSError:
            continue
        if t.startswith(os.path.abspath(d)) and t.endswith("(deleted)"):
            count += 1
    return count


def usage():
    try:
        names = os.listdir(d)
    except OSError:
        return -1, -1, -1
    st = os.statvfs(d)
    used = (st.f_blocks - st.f_bfree) * st.f_frsize >> 20
    du = sum(os.path.getsize(os.path.join(d, f)) for f in names) >> 20
    return len(names), used, du


def show(cmds):
    for cmd in cmds:
        print("$", " ".join(cmd).replace(d, "<ckpt_dir>"), flush=True)
        subprocess.run(cmd)


t0 = time.time()
shown_fail = False
for i in range(n):
    path = os.path.join(d, f"ckpt_{i:03d}.pt")
    try:
        w = FastFileWriter(file_path=path, config=cfg)
        torch.save(obj={"step": i, "w": torch.full((mb << 18,), float(i))}, f=w)
        w.close()
        del w
    except BaseException:
        print(f"save {i} FAILED after {time.time() - t0:.1f}s", flush=True)
        traceback.print_exc()
        sys.stderr.flush()
        print(f"deleted-but-open fds under {d}: {deleted_fds()}", flush=True)
        show((["df", "-h", d], ["du", "-sh", d], ["ls", "-l", d]))
        sys.exit(1)
    if i - keep >= 0:
        os.unlink(os.path.join(d, f"ckpt_{i - keep:03d}.pt"))
    files, used, du = usage()
    msg = ""
    if verify:
        try:
            torch.load(path, weights_only=True)
            msg = " load=ok"
        except Exception as e:
            msg = f" load=FAIL({type(e).__name__})"
    first_fail = "FAIL" in msg and not shown_fail
    if not quiet:
        print(
            f"save {i:3d}: files={files} deleted_open_fds={deleted_fds()!s:>3} fs_used={used}MiB du={du}MiB{msg}",
            flush=True,
        )
    elif i % 50 == 0 or first_fail:
        print(
            f"save {i:3d}: deleted_open_fds={deleted_fds()!s:>3} fs_used={used}MiB du={du}MiB{msg}",
            flush=True,
        )
    shown_fail = shown_fail or first_fail

print(
    f"{n} saves done in {time.time() - t0:.1f}s; state while the process is still alive:",
    flush=True,
)
show((["df", "-h", d], ["du", "-sh", d], ["du", "-sh", "--apparent-size", d], ["ls", "-ls", d]))
print("$ ls -l /proc/<pid>/fd | grep -c deleted  ->", deleted_fds(), flush=True)
subprocess.run(f"ls -l /proc/{os.getpid()}/fd | grep deleted | tail -3", shell=True)
last = os.path.join(d, f"ckpt_{n - 1:03d}.pt")
print(f"$ torch.load(<ckpt_dir>/ckpt_{n - 1:03d}.pt)", flush=True)
sd = torch.load(last)
print("last checkpoint loads OK: step", sd["step"], "value", float(sd["w"][0]))
