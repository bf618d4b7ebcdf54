"""A small DeepSpeed training run on CPU (gloo), healthy or with one injected rank failure.

usage (under the deepspeed launcher or torchrun, or one process with RANK/WORLD_SIZE/MASTER_*):
    train_case.py [--stage S] [--steps N] [--save DIR] [--load] [--verbose] [--dump-state]
                  [--fail raise|kill|hang] [--fail-rank R] [--fail-step K]
--save DIR   save a checkpoint after the last step; with --load, load it back and train one
             more step
--fail       at step K, rank R raises ValueError / SIGKILLs itself / sleeps, *before* its
             backward pass, so the other ranks block in ZeRO's gradient collective
--verbose    DeepSpeed logs at INFO and prints every step (steps_per_print=1) and its timers
"""

import argparse
import os
import signal
import sys
import time

import deepspeed
import torch

sys.argv = [a for a in sys.argv if not a.startswith("--local_rank")]
p = argparse.ArgumentParser()
p.add_argument("--stage", type=int, default=2)
p.add_argument("--steps", type=int, default=3)
p.add_argument("--save")
p.add_argument("--load", action="store_true")
p.add_argument("--verbose", action="store_true")
p.add_argument("--dump-state", action="store_true")
p.add_argument("--fail", choices=["raise", "kill", "hang"])
p.add_argument("--fail-rank", type=int, default=1)
p.add_argument("--fail-step", type=int, default=2)
args = p.parse_args()

if args.verbose:
    # worker processes log at WARNING by default; the launcher's --log_level applies to itself
    from deepspeed.utils import set_log_level_from_string

    set_log_level_from_string("info")
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8))
cfg = {
    "train_micro_batch_size_per_gpu": 2,
    "gradient_accumulation_steps": 1,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}},
    "scheduler": {
        "type": "WarmupLR",
        "params": {"warmup_min_lr": 0, "warmup_max_lr": 1e-3, "warmup_num_steps": 2},
    },
    "gradient_clipping": 1.0,
    "zero_optimization": {"stage": args.stage},
}
if args.verbose:
    cfg.update(steps_per_print=1, wall_clock_breakdown=True)
if args.dump_state:
    cfg["dump_state"] = True
engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
rank = engine.global_rank
print(
    f"[rank {rank}] world_size={engine.world_size} dp_world_size={engine.dp_world_size} "
    f"backend={torch.distributed.get_backend()} zero_stage={engine.zero_optimization_stage()}",
    flush=True,
)
g = torch.Generator().manual_seed(1000 + rank)


def train_step(step):
    x = torch.randn(2, 64, generator=g)
    loss = engine(x).pow(2).mean()
    if args.fail and rank == args.fail_rank and step == args.fail_step:
        if args.fail == "raise":
            raise ValueError(f"simulated failure on rank {rank} at step {step}")
        if args.fail == "kill":
            print(
                f"[rank {rank}] sending SIGKILL to myself at step {step} (simulated OOM kill)",
                flush=True,
            )
            os.kill(os.getpid(), signal.SIGKILL)
        print(f"[rank {rank}] hanging at step {step} (simulated stuck rank)", flush=True)
        time.sleep(3600)
    engine.backward(loss)
    engine.step()
    print(f"[rank {rank}] step {step} loss {loss.item():.4f}", flush=True)


for step in range(args.steps):
    train_step(step)
if args.save:
    tag = f"global_step{args.steps}"
    engine.save_checkpoint(args.save, tag=tag)
    print(f"[rank {rank}] saved checkpoint {tag}", flush=True)
    if args.load:
        path, _ = engine.load_checkpoint(args.save, tag=tag)
        print(f"[rank {rank}] loaded checkpoint from {path}", flush=True)
        train_step(args.steps)
torch.distributed.barrier()
print(f"[rank {rank}] finished OK", flush=True)
