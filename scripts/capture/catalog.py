"""The capture cases: one function per log, registered with @case.

A case name is the log's file name without `.log`; entries cite `captured/<name>.log`, so a
name never changes. Each function runs DeepSpeed through the Ctx helpers (which record every
command for the .meta.json sidecar) and returns the output that becomes the log.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

from capture import (
    CaseFailed,
    Ctx,
    Output,
    Skip,
    case,
    free_port,
    has_libaio_dev,
    trim_middle,
)

# --------------------------------------------------------------------------- ops (run first:
# the timing case measures the async_io build, which every FastFileWriter case then reuses)


@case(
    "ops-jit-build-timing-async-io-utils",
    "ops",
    "JIT build time of the async_io and generic utils ops (run on an empty op cache)",
    needs=("libaio",),
    expect_rc="zero",
    slow=True,
)
def _(ctx: Ctx) -> Output:
    if not has_libaio_dev():
        raise Skip("needs libaio-dev (apt-get install -y libaio-dev)")
    if list(ctx.ext_dir.glob("async_io/*.so")):
        raise Skip(
            f"async_io is already built in {ctx.ext_dir}: delete that folder to measure a build"
        )
    return ctx.python("jit_build_timing.py", timeout=1200)


def _no_libaio() -> None:
    if has_libaio_dev():
        raise Skip("needs libaio-dev absent (apt-get remove -y libaio-dev, then reinstall it)")


@case(
    "ops-ds-report-no-libaio",
    "ops",
    "ds_report when libaio-dev is not installed: async_io [NO]",
    needs=("no-libaio",),
    expect_rc="zero",
)
def _(ctx: Ctx) -> Output:
    _no_libaio()
    return ctx.run([ctx.bin("ds_report")])


@case(
    "ops-jit-async-io-no-libaio",
    "ops",
    "JIT load of async_io without libaio-dev: RuntimeError",
    needs=("no-libaio",),
)
def _(ctx: Ctx) -> Output:
    _no_libaio()
    return ctx.python("op_load.py", "AsyncIOBuilder")


@case(
    "ops-ds-report-cpu-only",
    "ops",
    "ds_report on a CPU-only machine (CPU accelerator op list)",
    needs=("libaio",),
    expect_rc="zero",
)
def _(ctx: Ctx) -> Output:
    if not has_libaio_dev():
        raise Skip("needs libaio-dev installed (the report shows async_io [OKAY])")
    return ctx.run([ctx.bin("ds_report")])


@case(
    "ops-ds-report-force-cuda",
    "ops",
    "DS_ACCELERATOR=cuda ds_report without CUDA: nvcc [FAIL]",
    expect_rc="any",
)
def _(ctx: Ctx) -> Output:
    return ctx.run([ctx.bin("ds_report")], env={"DS_ACCELERATOR": "cuda"})


@case(
    "ops-jit-fused-adam-force-cuda",
    "ops",
    "JIT fused_adam under DS_ACCELERATOR=cuda with no GPU: found no CUDA devices",
)
def _(ctx: Ctx) -> Output:
    return ctx.python("op_load.py", "FusedAdamBuilder", env={"DS_ACCELERATOR": "cuda"})


@case(
    "ops-jit-fused-adam-force-cuda-arch",
    "ops",
    "JIT fused_adam with TORCH_CUDA_ARCH_LIST set but no CUDA: CUDA_HOME not set",
)
def _(ctx: Ctx) -> Output:
    return ctx.python(
        "op_load.py",
        "FusedAdamBuilder",
        env={"DS_ACCELERATOR": "cuda", "TORCH_CUDA_ARCH_LIST": "8.0"},
    )


@case(
    "ops-jit-cpu-adam-force-cuda",
    "ops",
    "JIT cpu_adam under DS_ACCELERATOR=cuda: builds with a 'cuda is missing' warning",
    expect_rc="zero",
)
def _(ctx: Ctx) -> Output:
    ext = ctx.state / f"ext-ds{ctx.version}-cuda"  # the CUDA-side cpu_adam has other sources
    return ctx.python(
        "op_load.py",
        "CPUAdamBuilder",
        env={"DS_ACCELERATOR": "cuda", "TORCH_EXTENSIONS_DIR": str(ext)},
        timeout=900,
    )


@case("ops-jit-cpu-adam-no-compiler", "ops", "JIT cpu_adam with CXX pointing at a missing compiler")
def _(ctx: Ctx) -> Output:
    ext = ctx.fresh("ext-nocompiler")
    cxx = "/usr/local/bin/g++-missing"
    return ctx.python(
        "op_load.py",
        "CPUAdamBuilder",
        env={"CXX": cxx, "CC": cxx, "TORCH_EXTENSIONS_DIR": str(ext)},
    )


@case(
    "ops-jit-cpu-adam-optimizer-no-compiler",
    "ops",
    "DeepSpeedCPUAdam() with CXX pointing at a missing compiler: build error, then __del__ "
    "AttributeError 'ds_opt_adam'",
)
def _(ctx: Ctx) -> Output:
    ext = ctx.fresh("ext-nocompiler")
    cxx = "/usr/local/bin/g++-missing"
    return ctx.python(
        "cpu_adam_optimizer.py",
        env={"CXX": cxx, "CC": cxx, "TORCH_EXTENSIONS_DIR": str(ext)},
    )


def _pip_subs(ctx: Ctx) -> None:
    ctx.subs += [("https://pypi.org/simple", "<package-index>")]
    for line in (os.environ.get("PIP_FIND_LINKS") or "/opt/wheels").split():
        ctx.subs.append((line, "<local-wheels>"))


def _local_index(text: str) -> str:
    import re

    return re.sub(r"file://[^\s',]+", "<local-index>", text)


@case(
    "ops-pip-ds-build-cpu-adam-no-torch",
    "ops",
    "DS_BUILD_CPU_ADAM=1 pip install deepspeed in a venv without torch (isolated build)",
    needs=("network",),
)
def _(ctx: Ctx) -> Output:
    venv = ctx.fresh("venv-build")
    ctx.subs.append((str(venv), "<venv-build>"))
    _pip_subs(ctx)
    ctx.sh("python3", "-m", "venv", venv)
    ctx.sh(venv / "bin" / "pip", "uninstall", "-q", "-y", "setuptools")
    r = ctx.run(
        [str(venv / "bin" / "pip"), "install", "--no-cache-dir", "deepspeed==0.19.0"],
        env={"DS_BUILD_CPU_ADAM": "1"},
    )
    r.text = _local_index(r.text)
    return r


@case(
    "ops-pip-ds-build-cpu-adam-no-compiler",
    "ops",
    "DS_BUILD_CPU_ADAM=1 pip install deepspeed (with torch) and a missing compiler",
    needs=("network",),
    slow=True,
)
def _(ctx: Ctx) -> Output:
    venv = ctx.work / "venv-build-torch"
    ctx.subs.append((str(venv), "<venv-build>"))
    _pip_subs(ctx)
    if not (venv / "lib" / "python3.11" / "site-packages" / "wheel").exists():
        # torch, setuptools and wheel present: pip takes the legacy, non-isolated setup.py path
        ctx.sh("python3", "-m", "venv", venv)
        ctx.sh(venv / "bin" / "pip", "install", "-q", "torch==2.13.0", "setuptools", "wheel")
    cxx = "/usr/local/bin/g++-missing"
    r = ctx.run(
        [
            str(venv / "bin" / "pip"),
            "install",
            "--no-cache-dir",
            "--force-reinstall",
            "--no-deps",
            "deepspeed==0.19.0",
        ],
        env={"DS_BUILD_CPU_ADAM": "1", "CXX": cxx, "CC": cxx},
    )
    r.text = trim_middle(
        _local_index(r.text),
        12,
        40,
        "setuptools build_py 'copying ...' and package-discovery warnings",
    )
    return r


# --------------------------------------------------------------------------- config errors

CONFIG_CASES = {
    "batch-mismatch": "train_batch_size != micro * grad_acc * world_size",
    "bf16-and-fp16": "bf16 and fp16 both enabled",
    "duplicate-key": "a key given twice in the config file",
    "fp16-on-cpu": "fp16 on the CPU accelerator: 'Type fp16 is not supported on your device'",
    "grad-acc-not-divisible": "train_batch_size not divisible by micro batch * world size",
    "json-syntax": "config file with a syntax error (hjson decode error)",
    "lamb-on-cpu": "Lamb optimizer on CPU: op not implemented on CPU backend",
    "missing-config-file": "config path that does not exist",
    "no-batch-size": "no batch size keys at all",
    "no-optimizer-backward": "no optimizer in config or code, then engine.backward",
    "nvme-offload-no-path": "ZeRO-3 offload_param to nvme without nvme_path",
    "offload-client-optimizer": "ZeRO-Offload with a client torch optimizer (ZeRORuntimeException)",
    "unknown-optimizer": "optimizer type that does not exist",
    "unknown-scheduler": "scheduler type that does not exist",
    "untested-client-optimizer": "ZeRO-2 with an untested client optimizer (SGD)",
    "zero-bad-key": "unknown key in zero_optimization (pydantic extra_forbidden)",
    "zero-stage-4": "zero_optimization.stage 4 (pydantic enum error)",
}


def _config_case(key: str):
    def fn(ctx: Ctx) -> Output:
        return ctx.python("cfg_case.py", key.replace("-", "_"), single=True)

    return fn


for _key, _desc in CONFIG_CASES.items():
    case(f"config-{_key}", "config", f"deepspeed.initialize, single CPU process: {_desc}")(
        _config_case(_key)
    )


# --------------------------------------------------------------------------- checkpoints


@case(
    "ckpt-zero2-ws2-save-ok-deepspeed-launcher",
    "ckpt",
    "ZeRO-2 checkpoint saved by 2 ranks under the deepspeed launcher (healthy save)",
    expect_rc="zero",
)
def _(ctx: Ctx) -> Output:
    d = ctx.fresh("ck_z2")
    return ctx.deepspeed(2, "ckpt_case.py", "save", str(d), "2")


@case(
    "ckpt-zero2-ws2-saved-load-ws1-dp-mismatch",
    "ckpt",
    "ZeRO-2 checkpoint saved at world size 2, loaded at 1 (deepspeed launcher): DP world size mismatch",
)
def _(ctx: Ctx) -> Output:
    d = ctx.ensure_checkpoint("ck_z2", nproc=2, stage=2)
    return ctx.deepspeed(1, "ckpt_case.py", "load", str(d), "2")


def _mismatch(stage: int):
    def fn(ctx: Ctx) -> Output:
        d = ctx.ensure_checkpoint(f"ck_z{stage}", nproc=2, stage=stage)
        return ctx.python("ckpt_case.py", "load", str(d), str(stage), single=True)

    return fn


for _stage in (1, 3):
    case(
        f"ckpt-zero{_stage}-ws2-saved-load-ws1-dp-mismatch",
        "ckpt",
        f"ZeRO-{_stage} checkpoint saved at world size 2, loaded by one process: DP world size mismatch",
    )(_mismatch(_stage))


@case(
    "ckpt-load-missing-tag",
    "ckpt",
    "load_checkpoint with a tag that does not exist: bare AssertionError",
)
def _(ctx: Ctx) -> Output:
    d = ctx.ensure_checkpoint("ck_ws1", nproc=1, stage=2)
    return ctx.python("ckpt_case.py", "load", str(d), "2", "global_step999", single=True)


@case(
    "ckpt-load-no-latest",
    "ckpt",
    "load_checkpoint(tag=None) on a folder without 'latest': warning, None",
    expect_rc="zero",
)
def _(ctx: Ctx) -> Output:
    d = ctx.fresh("ck_nolatest")
    return ctx.python("ckpt_case.py", "load", str(d), "2", single=True)


MODEL = "global_step2/mp_rank_00_model_states.pt"
OPTIM = "global_step2/zero_pp_rank_0_mp_rank_00_optim_states.pt"


def _damaged(fixture: str, hidden: int, target: str, how: str, name: str | None = None):
    def fn(ctx: Ctx) -> Output:
        src = ctx.ensure_checkpoint(fixture, nproc=1, stage=2, hidden=hidden)
        d = ctx.copy_checkpoint(src, name or "ck_damaged")
        f = d / target
        size = f.stat().st_size
        if how == "truncate":
            os.truncate(f, size // 2)
        elif how == "zero":
            f.write_bytes(b"\0" * size)
        else:
            f.unlink()
        return ctx.python("ckpt_case.py", "load", str(d), "2", single=True, env={"H": str(hidden)})

    return fn


for _name, _args, _desc in [
    (
        "ckpt-load-truncated-model-states",
        ("ck_ws1", 64, MODEL, "truncate"),
        "model states file (21 KB) cut in half: OSError Errno 22 from PyTorchFileReader",
    ),
    (
        "ckpt-load-truncated-optim-states",
        ("ck_ws1", 64, OPTIM, "truncate"),
        "optimizer states file cut in half: OSError Errno 22",
    ),
    (
        "ckpt-load-truncated-model-states-big",
        ("ck_ws1_big", 2048, MODEL, "truncate"),
        "600 KB model states file cut in half: failed finding central directory",
    ),
    (
        "ckpt-load-truncated-optim-states-big",
        ("ck_ws1_big", 2048, OPTIM, "truncate"),
        "1.8 MB optimizer states file cut in half: failed finding central directory",
    ),
    (
        "ckpt-load-zero-filled-model-states",
        ("ck_ws1", 64, MODEL, "zero"),
        "model states file zero-filled at the right size: KeyError filename 'storages' not found",
    ),
    (
        "ckpt-load-missing-optim-file",
        ("ck_ws1", 64, OPTIM, "delete", "ck_missing_optim"),
        "optimizer states shard deleted: FileNotFoundError",
    ),
]:
    case(_name, "ckpt", f"load a damaged ws1 ZeRO-2 checkpoint: {_desc}")(_damaged(*_args))


def _zero_to_fp32(ctx: Ctx, *, incomplete: bool, hf_hub: bool) -> Output:
    src = ctx.ensure_checkpoint("ck_z2", nproc=2, stage=2)
    d = ctx.copy_checkpoint(src, "ck_z2_incomplete" if incomplete or not hf_hub else "ck_z2_fp32")
    if incomplete:
        (d / "global_step2" / "zero_pp_rank_1_mp_rank_00_optim_states.pt").unlink()
    out = ctx.fresh("fp32_out")
    env = {"PYTHONPATH": ctx.hf_hub_path()} if hf_hub else {}
    return ctx.run([ctx.py, str(d / "zero_to_fp32.py"), ".", str(out)], cwd=d, env=env)


@case(
    "ckpt-zero-to-fp32-incomplete",
    "ckpt",
    "zero_to_fp32.py on a ws2 ZeRO-2 folder missing one optimizer shard: ValueError",
)
def _(ctx: Ctx) -> Output:
    return _zero_to_fp32(ctx, incomplete=True, hf_hub=True)


@case(
    "ckpt-zero-to-fp32-no-hf-hub",
    "ckpt",
    "zero_to_fp32.py (0.19.0) without huggingface_hub: ModuleNotFoundError by default",
)
def _(ctx: Ctx) -> Output:
    return _zero_to_fp32(ctx, incomplete=False, hf_hub=False)


@case(
    "ckpt-zero-to-fp32-ok",
    "ckpt",
    "zero_to_fp32.py on a healthy ws2 ZeRO-2 folder",
    expect_rc="zero",
)
def _(ctx: Ctx) -> Output:
    return _zero_to_fp32(ctx, incomplete=False, hf_hub=True)


# --------------------------------------------------------------------------- launchers (2 ranks)


@case(
    "launcher-ds-raise-rank1",
    "launcher",
    "deepspeed launcher, 2 ranks: rank 1 raises, rank 0 gets a gloo error",
)
def _(ctx: Ctx) -> Output:
    return ctx.deepspeed(2, "ckpt_case.py", "raise_rank1", str(ctx.work / "x"), "2")


@case(
    "launcher-ds-sigkill-rank1",
    "launcher",
    "deepspeed launcher, 2 ranks: rank 1 is SIGKILLed (rc -9)",
)
def _(ctx: Ctx) -> Output:
    return ctx.deepspeed(2, "ckpt_case.py", "kill_rank1", str(ctx.work / "x"), "2")


@case(
    "launcher-ds-hang-rank1-gloo-timeout",
    "launcher",
    "deepspeed launcher, 2 ranks: rank 1 hangs, rank 0's barrier times out after 15 s (gloo)",
)
def _(ctx: Ctx) -> Output:
    return ctx.deepspeed(
        2,
        "ckpt_case.py",
        "hang_rank1",
        str(ctx.work / "x"),
        "2",
        env={"DIST_TIMEOUT": "15"},
        timeout=300,
    )


@case(
    "launcher-torchrun-raise-rank1",
    "launcher",
    "torchrun, 2 ranks: rank 1 raises; ChildFailedError Root Cause",
)
def _(ctx: Ctx) -> Output:
    return ctx.torchrun(2, "ckpt_case.py", "raise_rank1", str(ctx.work / "x"), "2")


@case(
    "launcher-torchrun-sigkill-rank1",
    "launcher",
    "torchrun, 2 ranks: rank 1 SIGKILLed; Root Cause exitcode -9",
)
def _(ctx: Ctx) -> Output:
    return ctx.torchrun(2, "ckpt_case.py", "kill_rank1", str(ctx.work / "x"), "2")


@case(
    "launcher-torchrun-raise-rank1-with-record",
    "launcher",
    "torchrun, 2 ranks, @record on main(): Root Cause carries the error file and traceback",
)
def _(ctx: Ctx) -> Output:
    return ctx.torchrun(2, "ckpt_case_record.py", "raise_rank1", str(ctx.work / "x"), "2")


# --------------------------------------------------------------------------- new multi-rank failures


@case(
    "launcher-ds-4ranks-raise-rank2-mid-training",
    "launcher",
    "deepspeed launcher, 4 ranks, ZeRO-2: rank 2 raises at step 2 before backward; "
    "ranks 0,1,3 block in the gradient collective until the launcher kills them",
)
def _(ctx: Ctx) -> Output:
    return ctx.deepspeed(
        4,
        "train_case.py",
        "--stage",
        "2",
        "--steps",
        "4",
        "--fail",
        "raise",
        "--fail-rank",
        "2",
        "--fail-step",
        "2",
        timeout=300,
    )


@case(
    "launcher-torchrun-4ranks-sigkill-rank1-mid-training",
    "launcher",
    "torchrun, 4 ranks, ZeRO-2: rank 1 SIGKILLs itself at step 2 before backward; the others "
    "block in a gloo collective; Root Cause names rank 1",
)
def _(ctx: Ctx) -> Output:
    return ctx.torchrun(
        4,
        "train_case.py",
        "--stage",
        "2",
        "--steps",
        "4",
        "--fail",
        "kill",
        "--fail-rank",
        "1",
        "--fail-step",
        "2",
        timeout=300,
    )


@case(
    "launcher-ds-each-rank-log-4ranks-raise-rank2",
    "launcher",
    "deepspeed --enable_each_rank_log DIR, 4 ranks: rank 2 raises at step 2; launcher output in the "
    ".log, each rank's output in <case>/<timestamp>_rankN.log",
)
def _(ctx: Ctx) -> Output:
    logdir = ctx.fresh("each_rank_log")
    r = ctx.deepspeed(
        4,
        "train_case.py",
        "--stage",
        "2",
        "--steps",
        "4",
        "--fail",
        "raise",
        "--fail-rank",
        "2",
        "--fail-step",
        "2",
        launcher_args=("--enable_each_rank_log", str(logdir)),
        timeout=300,
    )
    r.extra_files = {p.name: p.read_text(errors="replace") for p in sorted(logdir.glob("*.log"))}
    if len(r.extra_files) != 4:
        raise Skip(f"expected 4 per-rank files in {logdir}, found {sorted(r.extra_files)}")
    return r


# --------------------------------------------------------------------------- disk full (root)


@case(
    "disk-engine-save-checkpoint-enospc",
    "disk",
    "engine.save_checkpoint into a full 16 MiB ext4: basic_ios::clear / unexpected pos",
    needs=("root", "mount"),
)
def _(ctx: Ctx) -> Output:
    with ctx.ext4(16, "-m", "0") as mnt:
        return ctx.python("save_loop.py", str(mnt / "ckpt"), "100", single=True)


@case(
    "disk-engine-save-checkpoint-inode-exhaustion",
    "disk",
    "engine.save_checkpoint on ext4 with 64 inodes: ENOSPC while df -h shows room (df -i 100 %)",
    needs=("root", "mount"),
)
def _(ctx: Ctx) -> Output:
    with ctx.ext4(32, "-N", "64") as mnt:
        return ctx.python("save_loop.py", str(mnt / "ckpt"), "100", "64", single=True)


def _torch_save_full(mode: str):
    def fn(ctx: Ctx) -> Output:
        with ctx.ext4(8, "-m", "0") as mnt:
            return ctx.python("torch_save_full.py", str(mnt), mode)

    return fn


for _mode, _desc in [
    ("path", "by path: basic_ios::clear, then unexpected pos"),
    ("fileobj", "to an open file object: OSError Errno 28"),
    ("legacy", "legacy format: write(): fd N failed with No space left on device"),
]:
    case(
        f"disk-torch-save-enospc-{_mode}",
        "disk",
        f"plain torch.save of 16 MiB into an 8 MiB ext4 {_desc}",
        needs=("root", "mount"),
    )(_torch_save_full(_mode))


# --------------------------------------------------------------------------- FastFileWriter leak


def _ffw(ctx: Ctx, d: Path | str, n: int, keep: int, mb: int, **kw) -> Output:
    ctx.ensure_ops("async_io", "utils")
    return ctx.python("ffw_leak.py", str(d), str(n), str(keep), str(mb), **kw)


@case(
    "ffw-fd-leak-rotation-v0.19.0",
    "ffw",
    "FastFileWriter + rotation on 0.19.0, plain folder: one deleted-but-open fd per save",
    needs=("libaio",),
    expect_rc="zero",
)
def _(ctx: Ctx) -> Output:
    ctx.fresh("plain/v190")
    return _ffw(ctx, ctx.work / "plain/v190", 20, 2, 4)


@case(
    "ffw-fd-leak-rotation-v0.19.1-fixed",
    "ffw",
    "the same on 0.19.1: no deleted-but-open fds",
    venv="0.19.1",
    needs=("libaio",),
    expect_rc="zero",
)
def _(ctx: Ctx) -> Output:
    ctx.fresh("plain/v191")
    return _ffw(ctx, ctx.work / "plain/v191", 20, 2, 4)


@case(
    "ffw-rotation-full-disk-silent-corruption-v0.19.0",
    "ffw",
    "0.19.0 on a 64 MiB ext4: the disk fills, saves keep 'succeeding', checkpoints are zero-filled",
    needs=("root", "mount", "libaio"),
)
def _(ctx: Ctx) -> Output:
    ctx.ensure_ops("async_io", "utils")
    with ctx.ext4(64) as mnt:
        return _ffw(ctx, mnt / "ckpt", 30, 2, 4, env={"VERIFY": "1"})


@case(
    "ffw-rotation-small-disk-ok-v0.19.1",
    "ffw",
    "0.19.1 on the same 64 MiB ext4, 40 saves: no growth",
    venv="0.19.1",
    needs=("root", "mount", "libaio"),
    expect_rc="zero",
)
def _(ctx: Ctx) -> Output:
    ctx.ensure_ops("async_io", "utils")
    with ctx.ext4(64) as mnt:
        return _ffw(ctx, mnt / "ckpt", 40, 2, 4)


@case(
    "ffw-rotation-enospc-oserror28-v0.19.0",
    "ffw",
    "0.19.0 on a 16 MiB ext4 (-m 0), 2 MiB saves: OSError Errno 28 from _unaligned_drain",
    needs=("root", "mount", "libaio"),
)
def _(ctx: Ctx) -> Output:
    ctx.ensure_ops("async_io", "utils")
    with ctx.ext4(16, "-b", "4096", "-m", "0") as mnt:
        return _ffw(ctx, mnt / "ckpt", 3000, 2, 2, env={"QUIET": "1"})


@case(
    "ffw-rotation-enospc-same-disk-ok-v0.19.1",
    "ffw",
    "0.19.1 on the same 16 MiB ext4, 300 saves: no failure",
    venv="0.19.1",
    needs=("root", "mount", "libaio"),
    expect_rc="zero",
)
def _(ctx: Ctx) -> Output:
    ctx.ensure_ops("async_io", "utils")
    with ctx.ext4(16, "-b", "4096", "-m", "0") as mnt:
        return _ffw(ctx, mnt / "ckpt", 300, 2, 2, env={"QUIET": "1"})


@case(
    "ffw-rotation-tmpfs-enospc-v0.19.0",
    "ffw",
    "0.19.0 on a 16 MiB tmpfs: OSError Errno 28 after a few saves",
    needs=("root", "mount", "libaio"),
)
def _(ctx: Ctx) -> Output:
    ctx.ensure_ops("async_io", "utils")
    with ctx.tmpfs(16) as mnt:
        return _ffw(ctx, mnt / "ckpt", 3000, 2, 2, env={"QUIET": "1"})


@case(
    "ffw-rotation-tmpfs-ok-v0.19.1",
    "ffw",
    "0.19.1 on a 16 MiB tmpfs, 300 saves: no failure",
    venv="0.19.1",
    needs=("root", "mount", "libaio"),
    expect_rc="zero",
)
def _(ctx: Ctx) -> Output:
    ctx.ensure_ops("async_io", "utils")
    with ctx.tmpfs(16) as mnt:
        return _ffw(ctx, mnt / "ckpt", 300, 2, 2, env={"QUIET": "1"})


@case(
    "ffw-emfile-ulimit64-v0.19.0",
    "ffw",
    "0.19.0 under ulimit -n 64: OSError Errno 24 Too many open files",
    needs=("libaio",),
)
def _(ctx: Ctx) -> Output:
    d = ctx.fresh("emfile190")
    return _ffw(ctx, d, 100, 2, 1, env={"QUIET": "1"}, nofile=64)


@case(
    "ffw-emfile-ulimit64-ok-v0.19.1",
    "ffw",
    "0.19.1 under ulimit -n 64: 100 saves, no failure",
    venv="0.19.1",
    needs=("libaio",),
    expect_rc="zero",
)
def _(ctx: Ctx) -> Output:
    d = ctx.fresh("emfile191")
    return _ffw(ctx, d, 100, 2, 1, env={"QUIET": "1"}, nofile=64)


@case(
    "ffw-direct-cpu-utilsbuilder-not-implemented",
    "ffw",
    "FastFileWriter on the CPU accelerator without the shim: UtilsBuilder not implemented on CPU",
    needs=("libaio",),
)
def _(ctx: Ctx) -> Output:
    ctx.ensure_ops("async_io")
    return ctx.python("ffw_no_shim.py")


CROSS = {"CROSS_SIZE": "1", "CROSS_RANK": "0"}


@case(
    "ffw-engine-writer-keyerror-CROSS_SIZE",
    "ffw",
    "checkpoint.writer type fast without the deepspeed launcher: KeyError 'CROSS_SIZE'",
)
def _(ctx: Ctx) -> Output:
    return ctx.python("engine_writer.py", str(ctx.fresh("eng_x")), "4", "2", single=True)


@case(
    "ffw-engine-writer-attributeerror-dp_rank",
    "ffw",
    "checkpoint.writer with data_parallel unset: 'UniversalParallelInfo' has no attribute 'dp_rank'",
)
def _(ctx: Ctx) -> Output:
    return ctx.python(
        "engine_writer.py",
        str(ctx.fresh("eng_x")),
        "4",
        "2",
        single=True,
        env={**CROSS, "DP_UNIT": "unset"},
    )


@case(
    "ffw-engine-writer-pin-memory-cpu-only",
    "ffw",
    "checkpoint.writer on a CPU-only torch: pin_memory() 'Cannot access accelerator device'",
    needs=("libaio",),
)
def _(ctx: Ctx) -> Output:
    ctx.ensure_ops("async_io")
    return ctx.python("engine_writer.py", str(ctx.fresh("eng_x")), "4", "2", single=True, env=CROSS)


@case(
    "ffw-engine-writer-fd-leak-v0.19.0",
    "ffw",
    "engine FastPersist writer (CPU shims) on 0.19.0: 2 deleted-but-open fds per save",
    needs=("libaio",),
    expect_rc="any",
)
def _(ctx: Ctx) -> Output:
    ctx.ensure_ops("async_io", "utils")
    return ctx.python(
        "engine_writer.py",
        str(ctx.fresh("eng_ckpt")),
        "6",
        "2",
        "--cpu-shim",
        single=True,
        env=CROSS,
    )


@case(
    "ffw-engine-writer-full-disk-v0.19.0",
    "ffw",
    "engine FastPersist writer on 0.19.0, 64 MiB ext4: df 100 % while du is tiny, no exception",
    needs=("root", "mount", "libaio"),
    expect_rc="any",
)
def _(ctx: Ctx) -> Output:
    ctx.ensure_ops("async_io", "utils")
    with ctx.ext4(64) as mnt:
        return ctx.python(
            "engine_writer.py", str(mnt / "ckpt"), "12", "2", "--cpu-shim", single=True, env=CROSS
        )


@case(
    "ffw-engine-writer-v0.19.1-load-assert",
    "ffw",
    "engine FastPersist writer on 0.19.1: no leak; load_checkpoint of its files: bare AssertionError",
    venv="0.19.1",
    needs=("libaio",),
)
def _(ctx: Ctx) -> Output:
    ctx.ensure_ops("async_io", "utils")
    return ctx.python(
        "engine_writer.py", str(ctx.fresh("eng191")), "4", "2", "--cpu-shim", single=True, env=CROSS
    )


@case(
    "ffw-launcher-2ranks-tmpfs-enospc-v0.19.0",
    "ffw",
    "engine FastPersist writer (CPU shims) under the deepspeed launcher, 2 ranks, ZeRO-1, 24 MiB "
    "tmpfs with rotation on 0.19.0: leaked fds fill it, a save fails with ENOSPC",
    needs=("root", "mount", "libaio"),
)
def _(ctx: Ctx) -> Output:
    ctx.ensure_ops("async_io", "utils")
    with ctx.tmpfs(24) as mnt:
        return ctx.deepspeed(
            2, "engine_writer.py", str(mnt / "ckpt"), "40", "2", "--cpu-shim", timeout=400
        )


# --------------------------------------------------------------------------- healthy runs


def _healthy_train(nproc: int, launcher: str, *extra: str):
    def fn(ctx: Ctx) -> Output:
        args = ["--verbose", *extra]
        if "--save" in extra:
            i = args.index("--save")
            args[i + 1] = str(ctx.fresh(args[i + 1]))
        if launcher == "deepspeed":
            return ctx.deepspeed(nproc, "train_case.py", *args, timeout=400)
        if launcher == "torchrun":
            return ctx.torchrun(nproc, "train_case.py", *args, timeout=400)
        return ctx.python("train_case.py", *args, single=True, timeout=400)

    return fn


for _name, _n, _launcher, _extra, _desc in [
    (
        "healthy-ds-launcher-zero0-2ranks",
        2,
        "deepspeed",
        ("--stage", "0", "--steps", "4"),
        "deepspeed launcher, 2 ranks, ZeRO-0, 4 steps, steps_per_print=1 and timers",
    ),
    (
        "healthy-ds-launcher-zero1-2ranks",
        2,
        "deepspeed",
        ("--stage", "1", "--steps", "4"),
        "deepspeed launcher, 2 ranks, ZeRO-1, 4 steps",
    ),
    (
        "healthy-ds-launcher-zero2-2ranks-ckpt-save-load",
        2,
        "deepspeed",
        ("--stage", "2", "--steps", "3", "--save", "hk_z2", "--load"),
        "deepspeed launcher, 2 ranks, ZeRO-2: train, save_checkpoint, load_checkpoint, train on",
    ),
    (
        "healthy-ds-launcher-zero3-2ranks-ckpt-save-load",
        2,
        "deepspeed",
        ("--stage", "3", "--steps", "3", "--save", "hk_z3", "--load"),
        "deepspeed launcher, 2 ranks, ZeRO-3: train, save, load, train on",
    ),
    (
        "healthy-torchrun-zero2-4ranks-ckpt-save-load",
        4,
        "torchrun",
        ("--stage", "2", "--steps", "3", "--save", "hk_tr", "--load"),
        "torchrun, 4 ranks, ZeRO-2: train, save, load, train on",
    ),
    (
        "healthy-single-zero1-dump-state",
        1,
        "python",
        ("--stage", "1", "--steps", "3", "--dump-state"),
        "one process (RANK/WORLD_SIZE env), ZeRO-1 with dump_state: the full config printout",
    ),
]:
    case(_name, "healthy", _desc, healthy=True, expect_rc="zero")(
        _healthy_train(_n, _launcher, *_extra)
    )


@case(
    "healthy-ds-report",
    "healthy",
    "ds_report on this machine (CPU accelerator; async_io compatible)",
    healthy=True,
    expect_rc="zero",
    needs=("libaio",),
)
def _(ctx: Ctx) -> Output:
    if not has_libaio_dev():
        raise Skip("needs libaio-dev installed (otherwise ds_report prints libaio warnings)")
    return ctx.run([ctx.bin("ds_report")])


@case(
    "healthy-ffw-rotation-v0.19.1",
    "healthy",
    "FastFileWriter with rotation on the fixed 0.19.1: 20 saves, 0 deleted-but-open fds",
    venv="0.19.1",
    healthy=True,
    expect_rc="zero",
    needs=("libaio",),
)
def _(ctx: Ctx) -> Output:
    d = ctx.fresh("plain/healthy191")
    return _ffw(ctx, d, 20, 2, 4)


# --------------------------------------------------------------------------- launcher set-up errors
# Folded in from the former build_launch_cases.sh and gap_cases.sh. These cases keep the fixed
# ports of the original run: entries quote lines that carry them (`port: 29633`,
# `(127.0.0.1, 29655)`, `--master_port 29713`). They call the launcher with the absolute path
# of the case script, so the logs show `<scripts>/...` as the original ones do.


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def _need_port(port: int) -> None:
    if not _port_free(port):
        raise Skip(f"port {port} is in use here; the log and the entries quoting it need that port")


def _hostfiles(ctx: Ctx) -> Path:
    """A work folder holding the two hostfiles; the launcher is run from it (relative names)."""
    d = ctx.fresh("launch")
    (d / "hostfile-bad").write_text("worker-0 slots=2\nworker-1 2\n")
    (d / "hostfile-unreachable").write_text(
        "worker-unreachable-0 slots=2\nworker-unreachable-1 slots=2\n"
    )
    return d


@case(
    "launcher-ds-unrecognized-local-rank",
    "launcher",
    "deepspeed launcher, 2 ranks, a script whose argparse rejects the --local_rank=N it appends",
)
def _(ctx: Ctx) -> Output:
    _need_port(29611)
    argv = [ctx.bin("deepspeed"), "--num_gpus", "2", "--master_port", "29611"]
    argv += [ctx.script("launch_argparse_strict.py"), "--epochs", "1"]
    return ctx.run(argv, cwd=ctx.fresh("launch"), timeout=300)


@case(
    "launcher-torch-distributed-launch-unrecognized-local-rank",
    "launcher",
    "python -m torch.distributed.launch, 2 ranks: the script's argparse rejects --local-rank=N",
)
def _(ctx: Ctx) -> Output:
    _need_port(29677)
    argv = [ctx.py, "-m", "torch.distributed.launch", "--nproc_per_node", "2"]
    argv += ["--master_port", "29677", ctx.script("launch_argparse_strict.py")]
    return ctx.run(argv, cwd=ctx.fresh("launch"), timeout=300)


@case(
    "launcher-ds-hostfile-bad-entry",
    "launcher",
    "deepspeed --hostfile with a line without slots=: ValueError bad entry",
)
def _(ctx: Ctx) -> Output:
    d = _hostfiles(ctx)
    argv = [
        ctx.bin("deepspeed"),
        "--hostfile",
        "hostfile-bad",
        ctx.script("launch_argparse_strict.py"),
    ]
    return ctx.run(argv, cwd=d)


@case(
    "launcher-ds-hostfile-ssh-unreachable",
    "launcher",
    "deepspeed --hostfile naming hosts that do not resolve: the ssh check fails (RuntimeError)",
    needs=("ssh",),
)
def _(ctx: Ctx) -> Output:
    if not shutil.which("ssh"):
        raise Skip("needs the ssh client (the launcher's reachability check runs ssh)")
    d = _hostfiles(ctx)
    argv = [ctx.bin("deepspeed"), "--hostfile", "hostfile-unreachable"]
    return ctx.run([*argv, ctx.script("launch_argparse_strict.py")], cwd=d, timeout=300)


@case(
    "launcher-ds-pdsh-not-installed",
    "launcher",
    "deepspeed with a 2-node hostfile and --no_ssh_check, pdsh absent: launcher 'pdsh' not installed",
    needs=("no-pdsh",),
)
def _(ctx: Ctx) -> Output:
    if shutil.which("pdsh"):
        raise Skip("needs pdsh absent (the case shows the launcher without it)")
    d = _hostfiles(ctx)
    argv = [ctx.bin("deepspeed"), "--hostfile", "hostfile-unreachable", "--no_ssh_check"]
    argv += ["--master_addr", "10.0.0.1", ctx.script("launch_argparse_strict.py")]
    return ctx.run(argv, cwd=d)


@case(
    "launcher-ds-no-gpu-resources",
    "launcher",
    "DS_ACCELERATOR=cuda deepspeed on a node where torch sees no GPU: no GPU resources available",
)
def _(ctx: Ctx) -> Output:
    argv = [ctx.bin("deepspeed"), ctx.script("launch_argparse_strict.py")]
    return ctx.run(argv, cwd=ctx.fresh("launch"), env={"DS_ACCELERATOR": "cuda"})


@contextlib.contextmanager
def _hold_port(port: int) -> Iterator[None]:
    """Keep the port bound and listening for the whole run (the driver holds the socket)."""
    s = socket.socket()
    try:
        s.bind(("0.0.0.0", port))
    except OSError as e:
        s.close()
        raise Skip(f"port {port} is already taken here ({e}); the entries quote port {port}") from e
    s.listen()
    try:
        yield
    finally:
        s.close()


@case(
    "launcher-ds-master-port-in-use",
    "launcher",
    "deepspeed launcher, 2 ranks, --master_port 29633 held by another socket for the whole run: "
    "rank 0's TCPStore server fails with EADDRINUSE",
)
def _(ctx: Ctx) -> Output:
    with _hold_port(29633):
        argv = [ctx.bin("deepspeed"), "--num_gpus", "2", "--master_port", "29633"]
        argv.append(ctx.script("launch_init_dist.py"))
        return ctx.run(argv, cwd=ctx.fresh("launch"), timeout=300)


@case(
    "launcher-torchrun-master-port-in-use",
    "launcher",
    "torchrun, 2 ranks, --master_port 29633 held by another socket for the whole run: the agent's "
    "TCPStore fails with EADDRINUSE",
)
def _(ctx: Ctx) -> Output:
    with _hold_port(29633):
        argv = [ctx.bin("torchrun"), "--nproc_per_node", "2", "--master_port", "29633"]
        argv.append(ctx.script("launch_init_dist.py"))
        return ctx.run(argv, cwd=ctx.fresh("launch"), timeout=300)


@case(
    "rendezvous-tcpstore-connect-timeout",
    "launcher",
    "RANK=1 of 2 with nobody listening on MASTER_PORT 29655, 10 s timeout: TCPStore client "
    "connect timeout (DistNetworkError)",
)
def _(ctx: Ctx) -> Output:
    _need_port(29655)
    env = {
        "RANK": "1",
        "LOCAL_RANK": "0",
        "WORLD_SIZE": "2",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": "29655",
        "DIST_TIMEOUT": "10",
    }
    return ctx.python("launch_init_dist.py", env=env, cwd=ctx.fresh("launch"), timeout=300)


@case(
    "launcher-ds-hostfile-not-found",
    "launcher",
    "bash -x job script: deepspeed --hostfile=FILE that does not exist; warns and runs on the "
    "local node only (exit 0)",
    expect_rc="zero",
)
def _(ctx: Ctx) -> Output:
    _need_port(29713)
    d = ctx.fresh("launch")  # holds no hostfile_job4242
    cmd = f"deepspeed --hostfile=hostfile_job4242 --master_port 29713 {ctx.script('launch_init_dist.py')}"
    return ctx.run(["bash", "-xc", cmd], cwd=d, timeout=300)


@case(
    "config-amp-and-zero",
    "config",
    "deepspeed.initialize, single CPU process: amp (apex O1) together with ZeRO-2; the assertion "
    "fires before apex is imported",
)
def _(ctx: Ctx) -> Output:
    return ctx.python("amp_zero_case.py", single=True)


# --------------------------------------------------------------------------- init / ZeRO misuse
# Folded in from the former build_init_zero_cases.sh: init_zero_case.py CASE, one process.


def _has_modules(ctx: Ctx, *mods: str) -> None:
    code = "import importlib.util as u, sys; sys.exit(any(u.find_spec(m) is None for m in sys.argv[1:]))"
    if subprocess.run([ctx.py, "-c", code, *mods]).returncode != 0:
        raise Skip(
            f"needs {' and '.join(mods)} in {ctx.venv} (the captured log used transformers 5.24.0 "
            f"and accelerate 1.15.0: {ctx.venv}/bin/pip install transformers==5.24.0 "
            "accelerate==1.15.0)"
        )


def _init_zero(key: str, *mods: str):
    def fn(ctx: Ctx) -> Output:
        if mods:
            _has_modules(ctx, *mods)
        return ctx.python("init_zero_case.py", key, single=True, env={"WORKDIR": str(ctx.work)})

    return fn


for _name, _key, _mods, _desc in [
    (
        "config-gas-derived-zero",
        "gas_derived_zero",
        (),
        "train_batch_size 2 < micro batch 4: derived gradient_accumulation_steps 0",
    ),
    (
        "config-hf-auto-values-direct",
        "hf_auto_values_direct",
        (),
        "an HF config with 'auto' batch values passed straight to deepspeed.initialize: TypeError",
    ),
    (
        "init-zero3-load-state-dict-partitioned",
        "zero3_load_state_dict_partitioned",
        (),
        "load_state_dict of a full state dict into a model built under zero.Init: size mismatch",
    ),
    (
        "init-zero3-forward-before-engine",
        "zero3_forward_before_engine",
        (),
        "forward of a zero.Init model outside the engine: 'weight' must be 2-D",
    ),
    (
        "zero-zero3-state-dict-saved-empty",
        "zero3_state_dict_saved_empty",
        (),
        "torch.save(engine.module.state_dict()) under ZeRO-3 saves empty tensors; loading fails",
    ),
    (
        "zero-zero2-reentrant-shared-param",
        "zero2_reentrant_shared_param",
        (),
        "ZeRO-2, one Linear in two reentrant checkpoints: parameter has already been reduced",
    ),
    (
        "init-hf-trainer-config-mismatch",
        "hf_trainer_config_mismatch",
        ("transformers", "accelerate"),
        "transformers TrainingArguments vs a DeepSpeed config with other values: ValueError",
    ),
    (
        "init-hf-config-trailing-comma",
        "hf_config_trailing_comma",
        ("accelerate",),
        "accelerate HfDeepSpeedConfig on a config with a trailing comma: JSONDecodeError",
    ),
]:
    _group = _name.split("-", 1)[0]
    case(_name, _group, f"single CPU process: {_desc}", needs=_mods)(_init_zero(_key, *_mods))


# --------------------------------------------------------------------------- pipeline parallelism
# pipe_case.py CASE, one process. The original run set DS_ACCELERATOR=cpu, so these logs do not
# start with the 'Setting accelerator to CPU' warning; the cases set it too.

CPU = {"DS_ACCELERATOR": "cpu"}


def _pipe(key: str):
    def fn(ctx: Ctx) -> Output:
        return ctx.python("pipe_case.py", key, single=True, env=CPU)

    return fn


for _name, _key, _rc, _desc in [
    ("pipe-zero2-incompatible", "zero2", "nonzero", "PipelineModule + ZeRO-2: AssertionError"),
    ("pipe-zero3-incompatible", "zero3", "nonzero", "PipelineModule + ZeRO-3: AssertionError"),
    (
        "pipe-num-stages-not-dividing-world-size",
        "stages",
        "nonzero",
        "num_stages=2 at world size 1: RuntimeError num_stages must divide world size",
    ),
    (
        "pipe-engine-forward-pipelineerror",
        "forward",
        "nonzero",
        "engine(x) on a PipelineEngine: PipelineError, only train_batch() is accessible",
    ),
    (
        "pipe-ok-zero1-train-batch",
        "ok",
        "zero",
        "the control run: PipelineModule + ZeRO-1, two train_batch() calls",
    ),
]:
    case(_name, "pipe", f"pipeline engine, one CPU process: {_desc}", expect_rc=_rc)(_pipe(_key))


# --------------------------------------------------------------------------- DataLoader workers


def _dataloader(key: str):
    def fn(ctx: Ctx) -> Output:
        return ctx.python("dataloader_case.py", key)

    return fn


for _name, _key, _rc, _desc in [
    (
        "data-dataloader-worker-sigkill",
        "sigkill",
        "nonzero",
        "a worker SIGKILLs itself (as the OOM killer would): worker exited unexpectedly",
    ),
    (
        "data-dataloader-worker-exit-code-1",
        "exit",
        "nonzero",
        "a worker calls os._exit(1): exited unexpectedly with exit code 1",
    ),
    ("data-dataloader-ok", "ok", "zero", "the control run: no failure"),
]:
    case(_name, "data", f"torch DataLoader, 2 workers: {_desc}", expect_rc=_rc)(_dataloader(_key))


# --------------------------------------------------------------------------- universal checkpoint
# ucp_case.py: a ZeRO-2 checkpoint saved by 2 ranks in <workdir>/ck_ucp, converted with
# ds_to_universal, loaded by one process. DS_ACCELERATOR=cpu as in the original run.


def _ucp_save(ctx: Ctx, log: bool) -> Output:
    d = ctx.fresh("ck_ucp")
    argv = [ctx.bin("deepspeed"), "--num_gpus", "2", "--master_port", str(free_port())]
    argv += [ctx.script("ucp_case.py"), "save", str(d), "2"]
    r = ctx.run(argv, env=CPU, timeout=400, log=log)
    if not log and (r.rc != 0 or not (d / "global_step2").is_dir()):
        raise CaseFailed(f"could not save the fixture checkpoint {d}:\n{r.text[-3000:]}")
    return r


def _ucp_fixture(ctx: Ctx) -> Path:
    d = ctx.work / "ck_ucp"
    if not (d / "latest").exists():
        _ucp_save(ctx, log=False)
    return d


def _to_universal(ctx: Ctx, d: Path, inject: bool, log: bool = True) -> Output:
    out = d / "global_step2_universal"
    if out.exists():
        shutil.rmtree(out)
    (d / "latest_universal").unlink(missing_ok=True)
    argv = [ctx.py, "-m", "deepspeed.checkpoint.ds_to_universal"]
    argv += ["--input_folder", str(d / "global_step2"), "--output_folder", str(out)]
    if inject:
        argv.append("--inject_missing_state")
    return ctx.run(argv, env=CPU, log=log)


@case(
    "ckpt-ucp-zero2-ws2-save-ok",
    "ckpt",
    "ucp_case.py save: ZeRO-2 checkpoint saved by 2 ranks (deepspeed --num_gpus 2), the fixture "
    "of the universal-checkpoint cases",
    expect_rc="zero",
)
def _(ctx: Ctx) -> Output:
    return _ucp_save(ctx, log=True)


@case(
    "ckpt-ds-to-universal-missing-universal-info",
    "ckpt",
    "ds_to_universal on a plain ZeRO-2 checkpoint without --inject_missing_state: AssertionError",
)
def _(ctx: Ctx) -> Output:
    return _to_universal(ctx, _ucp_fixture(ctx), inject=False)


@case(
    "ckpt-ds-to-universal-inject-ok",
    "ckpt",
    "ds_to_universal --inject_missing_state on the same checkpoint: converts",
    expect_rc="zero",
)
def _(ctx: Ctx) -> Output:
    return _to_universal(ctx, _ucp_fixture(ctx), inject=True)


@case(
    "ckpt-universal-load-ws1-ok",
    "ckpt",
    "the converted universal checkpoint (saved at world size 2) loaded by one process with "
    "checkpoint.load_universal, then one step",
    expect_rc="zero",
)
def _(ctx: Ctx) -> Output:
    d = _ucp_fixture(ctx)
    if not (d / "global_step2_universal").is_dir():
        r = _to_universal(ctx, d, inject=True, log=False)
        if r.rc != 0:
            raise CaseFailed(f"ds_to_universal failed on {d}:\n{r.text[-3000:]}")
    return ctx.python("ucp_case.py", "load", str(d), "2", "universal", single=True, env=CPU)


# -- collectives that differ across ranks (TORCH_DISTRIBUTED_DEBUG=DETAIL)

DETAIL = {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"}


@case(
    "comm-torchrun-detail-collective-shape-mismatch",
    "comm",
    "torchrun, 2 gloo ranks, TORCH_DISTRIBUTED_DEBUG=DETAIL: all_reduce of 4 vs 6 elements",
)
def _(ctx: Ctx) -> Output:
    return ctx.torchrun(2, "collective_mismatch.py", "shape", env=DETAIL)


@case(
    "comm-torchrun-detail-collective-op-mismatch",
    "comm",
    "torchrun, 2 gloo ranks, TORCH_DISTRIBUTED_DEBUG=DETAIL: all_reduce on rank 0, broadcast on rank 1",
)
def _(ctx: Ctx) -> Output:
    return ctx.torchrun(2, "collective_mismatch.py", "op", env=DETAIL)


# -- Megatron-DeepSpeed preprocessed (.bin/.idx) datasets

MEGATRON_DS_COMMIT = "4efb479d5317ce9b86096b9d8e3e8030b0b5263b"


def _megatron_ds(ctx: Ctx) -> Path:
    """A Megatron-DeepSpeed source tree at MEGATRON_DS_COMMIT: $MEGATRON_DS_SRC or <state>/megatron-ds.

    Make one with: git -C <clone of deepspeedai/Megatron-DeepSpeed> archive <commit> megatron tools
    | tar -x -C <state>/megatron-ds. The venv also needs transformers and six (megatron imports them).
    """
    src = Path(os.environ.get("MEGATRON_DS_SRC", str(ctx.state / "megatron-ds")))
    if not (src / "megatron" / "data" / "indexed_dataset.py").is_file():
        raise Skip(f"needs a Megatron-DeepSpeed checkout ({MEGATRON_DS_COMMIT[:7]}) at {src}")
    ctx.subs.append((str(src), "<megatron-ds>"))
    return src


def _megatron_indexed(mode: str):
    def fn(ctx: Ctx) -> Output:
        src = _megatron_ds(ctx)
        return ctx.python("megatron_indexed.py", str(src), str(ctx.work / f"mi-{mode}"), mode)

    return fn


for _mode, _desc in (
    ("missing", "--data-path without the _text_document suffix: Dataset does not exist"),
    ("empty-infer", "0-byte .idx/.bin, --data-impl infer: Unknown dataset implementation: None"),
    ("mmap-as-cached", "mmap data read with --data-impl cached: Index file doesn't match"),
    ("lfs-pointer", "Git LFS pointer as the .idx, --data-impl mmap: Index file doesn't match"),
):
    case(
        f"data-megatron-indexed-{_mode}",
        "data",
        f"Megatron-DeepSpeed get_indexed_dataset_: {_desc}",
    )(_megatron_indexed(_mode))


# -- DeepSpeed <= 0.11.1 under pydantic 2 (needs .capture/venv-ds0.10.3, see the README)


@case(
    "ops-import-ds0.10.3-pydantic2",
    "ops",
    "import deepspeed 0.10.3 after pydantic was upgraded to 2.x: FieldInfo has no attribute 'required'",
    venv="0.10.3",
)
def _(ctx: Ctx) -> Output:
    return ctx.run([ctx.py, "-c", "import deepspeed"], single=True)


# -- ZeRO-1/2 optimizer-offload gradient norm on DeepSpeed 0.16.4 (needs .capture/venv-ds0.16.4,
# see the README): the two failures of complete_grad_norm_calculation_for_cpu_offload, each with
# the same run minus its trigger as a healthy counterpart. One process, ZeRO-2, a client AdamW.


def _zero12_offload(mode: str):
    def fn(ctx: Ctx) -> Output:
        ctx.ensure_ops("deepspeed_shm_comm")  # else the first case's log holds its build
        return ctx.python("zero12_offload_step.py", mode, single=True, timeout=400)

    return fn


for _name, _mode, _healthy, _desc in (
    (
        "zero-zero2-offload-bf16-inf-loss-ds0.16.4",
        "inf-loss",
        False,
        "ZeRO-2 + offload_optimizer cpu, bf16, one process: the third step's loss times inf; "
        "scaled_global_norm stacks the integer -1 marker: vector_norm 'Got Long'",
    ),
    (
        "healthy-single-zero2-offload-bf16-ds0.16.4",
        "finite-loss",
        True,
        "the same ZeRO-2 + offload_optimizer + bf16 run with every loss finite: 3 steps",
    ),
    (
        "zero-zero2-offload-unused-param-ds0.16.4",
        "unused-param",
        False,
        "ZeRO-2 + offload_optimizer cpu, ignore_unused_parameters false, a Linear the forward "
        "never calls: 'This assert indicates that your module has parameters that'",
    ),
    (
        "healthy-single-zero2-offload-strict-unused-check-ds0.16.4",
        "all-params-used",
        True,
        "the same ZeRO-2 + offload_optimizer + ignore_unused_parameters false run with every "
        "Linear in the forward: 3 steps",
    ),
):
    case(
        _name,
        "healthy" if _healthy else "zero",
        _desc,
        venv="0.16.4",
        healthy=_healthy,
        expect_rc="zero" if _healthy else "nonzero",
    )(_zero12_offload(_mode))


# --------------------------------------------------------------------------- build and launcher
# environment: a script started without a launcher, a launcher flag that overrides the
# environment, a JIT build without ninja


@case(
    "launch-no-launcher-mpi4py-missing",
    "launcher",
    "deepspeed.init_distributed() in a script started with plain python (no RANK/WORLD_SIZE/"
    "MASTER_*/LOCAL_RANK) and no mpi4py: MPI discovery fails with ModuleNotFoundError",
)
def _(ctx: Ctx) -> Output:
    return ctx.python("launch_init_dist.py", cwd=ctx.fresh("launch"))


@case(
    "launch-no-launcher-master-addr-empty",
    "launcher",
    "deepspeed.init_distributed() with all five variables present but MASTER_ADDR empty (a job "
    "script whose address lookup printed nothing): torch's env:// check rejects it",
)
def _(ctx: Ctx) -> Output:
    env = {
        "RANK": "0",
        "LOCAL_RANK": "0",
        "WORLD_SIZE": "1",
        "MASTER_ADDR": "",
        "MASTER_PORT": str(free_port()),
    }
    return ctx.python("launch_init_dist.py", cwd=ctx.fresh("launch"), env=env)


@case(
    "launch-torch-env-rendezvous-master-addr-unset",
    "launcher",
    "torch.distributed.init_process_group(init_method='env://') with RANK and WORLD_SIZE set but "
    "no MASTER_ADDR/MASTER_PORT: ValueError ... MASTER_ADDR expected, but not set",
)
def _(ctx: Ctx) -> Output:
    env = {"RANK": "0", "WORLD_SIZE": "1"}
    return ctx.python("launch_torch_env_init.py", cwd=ctx.fresh("launch"), env=env)


@case(
    "launcher-ds-num-gpus-ignores-cuda-visible-devices",
    "launcher",
    "CUDA_VISIBLE_DEVICES=1 deepspeed --num_gpus 1: the launcher prints that it ignores the "
    "variable and starts the rank on device 0",
    expect_rc="zero",
)
def _(ctx: Ctx) -> Output:
    _need_port(29641)
    argv = [ctx.bin("deepspeed"), "--num_gpus", "1", "--master_port", "29641"]
    argv.append(ctx.script("launch_show_visible_devices.py"))
    return ctx.run(argv, cwd=ctx.fresh("launch"), env={"CUDA_VISIBLE_DEVICES": "1"}, timeout=300)


@case(
    "ops-jit-cpu-adam-no-ninja",
    "ops",
    "JIT cpu_adam with no ninja on PATH: DeepSpeed's 'ninja not being installed' RuntimeError "
    "(chained to torch's verify_ninja_availability)",
)
def _(ctx: Ctx) -> Output:
    ext = ctx.fresh("ext-noninja")
    env = {"PATH": "/nonexistent", "TORCH_EXTENSIONS_DIR": str(ext)}
    return ctx.python("op_load.py", "CPUAdamBuilder", env=env)


@case(
    "ops-jit-cpu-adam-2ranks-slow-build-failure",
    "ops",
    "torchrun, 2 ranks load cpu_adam into one fresh TORCH_EXTENSIONS_DIR; the compiler is a wrapper "
    "that runs g++ after 20 s with a forced missing -include, so the build fails while the other "
    "rank waits on torch's lock file: that rank then cannot open the .so that was never written",
)
def _(ctx: Ctx) -> Output:
    ext = ctx.fresh("ext-2ranks-slowfail")
    tools = ctx.fresh("slow-cxx")
    cxx = tools / "g++-slow-fail"
    cxx.write_text(
        "#!/bin/sh\n"
        "# capture helper: a compile that fails after 20 s (a real g++ error)\n"
        "sleep 20\n"
        'exec g++ "$@" -include /nonexistent/capture-forced-error.h\n'
    )
    cxx.chmod(0o755)
    argv = [ctx.bin("torchrun"), "--nproc_per_node", "2", "--master_port", str(free_port())]
    argv += [ctx.script("op_load.py"), "CPUAdamBuilder"]
    env = {"CXX": str(cxx), "CC": str(cxx), "TORCH_EXTENSIONS_DIR": str(ext)}
    return ctx.run(argv, cwd=ctx.fresh("launch"), env=env, timeout=400)


# --------------------------------------------------------------------------- inference v2 (FastGen)


@case(
    "init-fastgen-flatten-missing-lm-head",
    "init",
    "DeepSpeed-Inference v2 flatten_inference_model on a Llama-2 non-transformer container filled "
    "without lm_head.weight (a tied-embedding checkpoint); CPU stand-ins for the transform hooks, "
    "the CUDA-only ragged_utils op and the flat buffer's device (the last two used only after the "
    "failing metadata pass)",
    venv="0.19.5",
)
def _(ctx: Ctx) -> Output:
    return ctx.python("fastgen_flatten_missing_tensor.py")


@case(
    "comms-logger-unlisted-op-exits",
    "comm",
    "comms logger with prof_all on a timed op that calc_bw_log has no row for (monitored_barrier): "
    "'wrong comm_op specified' and exit status 0 in the middle of the script",
    venv="0.19.5",
    expect_rc="zero",
)
def _(ctx: Ctx) -> Output:
    return ctx.python("comms_logger_unlisted_op.py")


def _pip_metadata_no_torch(version: str):  # noqa: ANN202
    def fn(ctx: Ctx) -> Output:
        venv = ctx.fresh("venv-notorch")
        ctx.sh("python3", "-m", "venv", venv)
        ctx.sh(venv / "bin" / "pip", "install", "-q", "setuptools", "wheel")
        out = ctx.fresh("pip-metadata") / "pip.log"
        script = Path(__file__).resolve().parent / "pip_metadata_without_torch.sh"
        r = ctx.run(["bash", str(script), str(venv / "bin" / "python"), version, str(out)])
        return Output(out.read_text(), r.rc)

    return fn


for _v in ("0.11.0", "0.13.0", "0.13.1"):
    case(
        f"pip-metadata-no-torch-ds{_v}",
        "ops",
        f"pip's metadata step for the deepspeed=={_v} sdist with a Python that has no torch "
        "(pip_metadata_without_torch.sh: --no-build-isolation, --no-binary :all:); the "
        "sidecar's versions are the capture venv's, the logged run's are on the log's last line",
        needs=("network",),
        venv="0.19.5",  # unused by the case (its own venv has no torch); recorded in the sidecar
        expect_rc="any",  # the script records pip's own exit code in the log's last line
    )(_pip_metadata_no_torch(_v))
