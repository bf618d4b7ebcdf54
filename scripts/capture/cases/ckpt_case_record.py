"""ckpt_case.py with torchelastic's @record on main(), so that torchrun's ChildFailedError
summary carries each failed rank's error file and traceback.

usage (under torchrun): ckpt_case_record.py MODE DIR [STAGE]   MODE: raise_rankN | kill_rankN
"""

import os
import re
import signal
import sys

import deepspeed
import torch
from torch.distributed.elastic.multiprocessing.errors import record

sys.argv = [a for a in sys.argv if not a.startswith("--local_rank")]
mode, d = sys.argv[1], sys.argv[2]
stage = int(sys.argv[3]) if len(sys.argv) > 3 else 2
m = re.fullmatch(r"(raise|kill)_rank(\d+)", mode)
fail, fail_rank = (m.group(1), int(m.group(2))) if m else (None, -1)


@record
def main():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
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
            print(f"[rank {rank}] sending SIGKILL to myself (simulated OOM kill)", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
    # the surviving ranks reach a collective and wait for the dead peer
    torch.distributed.barrier()
    print(f"[rank {rank}] done", flush=True)


if __name__ == "__main__":
    main()
