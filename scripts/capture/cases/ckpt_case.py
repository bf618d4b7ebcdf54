"""Tiny ZeRO training run with an injected failure or a checkpoint save/load.

usage (under a launcher, or one process with RANK/WORLD_SIZE/MASTER_* set):
    ckpt_case.py MODE DIR [STAGE] [TAG]
MODE: save | load | raise_rankN | kill_rankN | hang_rankN
  raise_rankN  rank N raises ValueError after step 1; the others wait in a barrier
  kill_rankN   rank N sends SIGKILL to itself after step 1 (an OOM-killer stand-in)
  hang_rankN   rank N sleeps after step 1 (a stuck rank); set DIST_TIMEOUT=S to bound the wait
Env: H (hidden width, default 64), DIST_TIMEOUT (seconds for init_distributed).
"""

import os
import re
import signal
import sys
import time

import deepspeed
import torch

sys.argv = [a for a in sys.argv if not a.startswith("--local_rank")]
mode, d = sys.argv[1], sys.argv[2]
stage = int(sys.argv[3]) if len(sys.argv) > 3 else 2
tag = sys.argv[4] if len(sys.argv) > 4 else None
m = re.fullmatch(r"(raise|kill|hang)_rank(\d+)", mode)
fail, fail_rank = (m.group(1), int(m.group(2))) if m else (None, -1)
torch.manual_seed(0)
if os.environ.get("DIST_TIMEOUT"):
    from datetime import timedelta

    deepspeed.init_distributed(timeout=timedelta(seconds=int(os.environ["DIST_TIMEOUT"])))
H = int(os.environ.get("H", "64"))
model = torch.nn.Sequential(torch.nn.Linear(64, H), torch.nn.ReLU(), torch.nn.Linear(H, 8))
cfg = {
    "train_micro_batch_size_per_gpu": 2,
    "gradient_accumulation_steps": 1,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}},
    "zero_optimization": {"stage": stage},
}
engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
rank = engine.global_rank
print(
    f"[rank {rank}] world_size={engine.world_size} dp_world_size={engine.dp_world_size} "
    f"backend={torch.distributed.get_backend()}",
    flush=True,
)
for step in range(2):
    loss = engine(torch.randn(2, 64)).sum()
    engine.backward(loss)
    engine.step()
    if rank == fail_rank and step == 1:
        if fail == "raise":
            raise ValueError(f"simulated failure on rank {rank} at step 1")
        if fail == "hang":
            print(f"[rank {rank}] hanging (simulated stuck rank)", flush=True)
            time.sleep(3600)
        if fail == "kill":
            print(f"[rank {rank}] sending SIGKILL to myself (simulated OOM kill)", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
if mode == "save":
    engine.save_checkpoint(d, tag=tag or "global_step2")
    print(f"[rank {rank}] saved", flush=True)
elif mode == "load":
    path, client = engine.load_checkpoint(d, tag=tag)
    print(f"[rank {rank}] load_checkpoint returned path={path}", flush=True)
else:
    # the surviving ranks reach a collective and wait for the dead peer
    torch.distributed.barrier()
    print(f"[rank {rank}] done", flush=True)
