# engine.save_checkpoint N times (new tag each time, no rotation); print df/du/df -i when it fails.
# usage: save_loop.py CKPT_DIR N [H]
import subprocess
import sys
import time

import deepspeed
import torch

sys.argv = [a for a in sys.argv if not a.startswith("--local_rank")]
d, n = sys.argv[1], int(sys.argv[2])
H = int(sys.argv[3]) if len(sys.argv) > 3 else 2048
model = torch.nn.Sequential(torch.nn.Linear(64, H), torch.nn.ReLU(), torch.nn.Linear(H, 8))
cfg = {
    "train_micro_batch_size_per_gpu": 2,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}},
    "zero_optimization": {"stage": 2},
}
engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)


def show():
    for cmd in (["df", "-h", d], ["df", "-i", d], ["du", "-sh", d]):
        print("$", " ".join(cmd).replace(d, "<ckpt_dir>"), flush=True)
        subprocess.run(cmd)


t0 = time.time()
try:
    for i in range(n):
        loss = engine(torch.randn(2, 64)).sum()
        engine.backward(loss)
        engine.step()
        engine.save_checkpoint(d, tag=f"global_step{i}")
        print(f"saved global_step{i} ({time.time() - t0:.1f}s)", flush=True)
finally:
    show()
