"""Engine-level FastPersist: deepspeed.initialize with "checkpoint": {"writer": {"type": "fast"}},
then save_checkpoint N times with rotation (delete the tag folder from KEEP saves ago).

usage: python engine_writer.py CKPT_DIR N KEEP [--cpu-shim]
Env: DP_UNIT  writer.data_parallel value (default "replica"; "unset" leaves the key out)
--cpu-shim    CPU-only stand-ins: an mlock'ed aio buffer instead of pin_memory(), and the
              generic utils op instead of the CPU accelerator's NotImplementedBuilder
"""

import os
import shutil
import subprocess
import sys

import deepspeed
import torch

sys.argv = [a for a in sys.argv if not a.startswith("--local_rank")]
d, n, keep = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if "--cpu-shim" in sys.argv:
    # CPU-only shims: torch CPU builds cannot pin_memory(), and the CPU accelerator maps UtilsBuilder to NotImplemented.
    import deepspeed.io.fast_file_writer as ffw_mod
    from deepspeed.ops.op_builder.utils import UtilsBuilder as _GenericUtils

    ffw_mod.UtilsBuilder = _GenericUtils
    from deepspeed.ops.op_builder import AsyncIOBuilder
    from deepspeed.runtime.model_checkpointing import writer_factory as wf
    from deepspeed.runtime.swap_tensor.constants import (
        AIO_BLOCK_SIZE,
        AIO_INTRA_OP_PARALLELISM,
        AIO_OVERLAP_EVENTS,
        AIO_QUEUE_DEPTH,
        AIO_SINGLE_SUBMIT,
    )

    def _setup_for_aio(self, aio_config):
        self._dnvme_handle = (
            AsyncIOBuilder()
            .load()
            .aio_handle(
                block_size=aio_config[AIO_BLOCK_SIZE],
                queue_depth=aio_config[AIO_QUEUE_DEPTH],
                single_submit=aio_config[AIO_SINGLE_SUBMIT],
                overlap_events=aio_config[AIO_OVERLAP_EVENTS],
                intra_op_parallelism=aio_config[AIO_INTRA_OP_PARALLELISM],
            )
        )
        self._io_buffer = self._dnvme_handle.new_cpu_locked_tensor(
            self._io_buffer_size, torch.empty(0, dtype=torch.uint8)
        )

    wf.CheckpointWriterFactory._setup_for_aio = _setup_for_aio
model = torch.nn.Sequential(
    torch.nn.Linear(512, 512), torch.nn.Linear(512, 512)
)  # ~1 MiB fp32 params
cfg = {
    "train_micro_batch_size_per_gpu": 1,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}},
    "zero_optimization": {"stage": 1},
    "checkpoint": {"writer": {"type": "fast", "io_buffer_size": 8 << 20}},
}
if os.environ.get("DP_UNIT", "replica") != "unset":
    cfg["checkpoint"]["writer"]["data_parallel"] = os.environ.get("DP_UNIT", "replica")
engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
print("checkpoint engine:", type(engine.checkpoint_engine).__name__, flush=True)


def deleted():
    c = 0
    for e in os.listdir("/proc/self/fd"):
        try:
            t = os.readlink("/proc/self/fd/" + e)
        except OSError:
            continue
        c += t.endswith("(deleted)")
    return c


multi = engine.world_size > 1  # under a launcher: rank-prefixed lines, rank 0 rotates
pre = f"[rank {engine.global_rank}] " if multi else ""
for i in range(n):
    loss = engine(torch.randn(1, 512)).sum()
    engine.backward(loss)
    engine.step()
    engine.save_checkpoint(d, tag=f"step{i}")
    old = os.path.join(d, f"step{i - keep}")
    if multi:
        torch.distributed.barrier()
    if i - keep >= 0 and engine.global_rank == 0:
        shutil.rmtree(old)
    if multi:
        torch.distributed.barrier()
    st = os.statvfs(d)
    print(
        f"{pre}save {i}: tags={sorted(x for x in os.listdir(d) if x.startswith('step'))} deleted_open_fds={deleted()} fs_used={(st.f_blocks - st.f_bfree) * st.f_frsize >> 20}MiB",
        flush=True,
    )
if engine.global_rank == 0:
    for cmd in (["df", "-h", d], ["du", "-sh", d]):
        print("$", " ".join(cmd).replace(d, "<ckpt_dir>"), flush=True)
        subprocess.run(cmd)
print(f"{pre}$ engine.load_checkpoint(<ckpt_dir>, tag='step{n - 1}')", flush=True)
print(f"{pre}loaded:", engine.load_checkpoint(d, tag=f"step{n - 1}")[0] is not None, flush=True)
