# ZeRO-2 with optimizer offload on one CPU process (gloo): the two ways the offload gradient-norm
# code of ZeRO-1/2 (complete_grad_norm_calculation_for_cpu_offload) fails at engine.step(), and
# the same runs without their trigger.
# usage: python zero12_offload_step.py MODE   (RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 MASTER_ADDR/PORT set
# by the caller). Meant for DeepSpeed 0.16.4 (.capture/venv-ds0.16.4):
#   inf-loss         bf16; steps 1-2 train, step 3's loss is multiplied by inf, so every gradient
#                    is non-finite and the norm's integer -1 marker reaches torch's vector norm
#                    ("Got Long", DeepSpeed 0.13.2-0.17.0)
#   finite-loss      the same run, every loss finite (healthy)
#   unused-param     fp32, ignore_unused_parameters false, a Linear the forward never calls: the
#                    assertion at the first step
#   all-params-used  the same config, the forward calls every Linear (healthy)
import sys

import deepspeed
import torch

MODE = sys.argv[1]
STEPS = 3
torch.manual_seed(0)


class TwoLayers(torch.nn.Module):
    def __init__(self, skip_b: bool):
        super().__init__()
        self.a = torch.nn.Linear(8, 8)
        self.b = torch.nn.Linear(8, 8)
        self.skip_b = skip_b  # b stays trainable but gets no gradient: its hook never fires

    def forward(self, x):
        h = torch.relu(self.a(x))
        if not self.skip_b:
            h = self.b(h)
        return h.float().pow(2).mean()


bf16 = MODE in ("inf-loss", "finite-loss")
cfg = {
    "train_micro_batch_size_per_gpu": 2,
    "steps_per_print": 1,
    # a client torch AdamW instead of DeepSpeedCPUAdam: no cpu_adam JIT build (about a minute);
    # the norm code under test is the same for both optimizers
    "zero_force_ds_cpu_optimizer": False,
    "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}},
}
if bf16:
    cfg["bf16"] = {"enabled": True}
else:
    cfg["zero_optimization"]["ignore_unused_parameters"] = False

model = TwoLayers(skip_b=MODE == "unused-param")
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
engine, *_ = deepspeed.initialize(model=model, optimizer=opt, config=cfg)

for step in range(1, STEPS + 1):
    x = torch.randn(2, 8, dtype=torch.bfloat16 if bf16 else torch.float32)
    loss = engine(x)
    if MODE == "inf-loss" and step == 3:
        loss = loss * float("inf")  # stands in for a diverged step: inf/NaN in every gradient
    print(f"step {step}: loss {loss.item():.4f}", flush=True)
    engine.backward(loss)
    engine.step()
print(f"done: {STEPS} optimizer steps", flush=True)
