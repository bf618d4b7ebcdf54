# usage: python amp_zero_case.py   (single process; RANK/WORLD_SIZE/MASTER_* set by the caller)
# "amp" (apex) together with ZeRO stage 2 in the DeepSpeed config.
import json

import deepspeed
import torch

model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
cfg = {
    "train_micro_batch_size_per_gpu": 2,
    "gradient_accumulation_steps": 1,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}},
    "amp": {"enabled": True, "opt_level": "O1"},
    "zero_optimization": {"stage": 2},
}
print("CASE amp_and_zero config:", json.dumps(cfg), flush=True)
engine, opt, _, _ = deepspeed.initialize(
    model=model, model_parameters=model.parameters(), config=cfg
)
print("initialized", type(opt).__name__, flush=True)
