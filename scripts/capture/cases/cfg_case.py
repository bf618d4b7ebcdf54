import json
import os

# usage: python cfg_case.py CASE   (single process; RANK/WORLD_SIZE/MASTER_* set by caller)
import sys
import tempfile

import deepspeed
import torch

case = sys.argv[1]
model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
base = {
    "train_micro_batch_size_per_gpu": 2,
    "gradient_accumulation_steps": 1,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}},
}
client_opt = None
if case == "batch_mismatch":
    cfg = dict(
        base, train_batch_size=8, train_micro_batch_size_per_gpu=3, gradient_accumulation_steps=1
    )
elif case == "no_batch_size":
    cfg = {"optimizer": base["optimizer"]}
elif case == "unknown_optimizer":
    cfg = dict(base, optimizer={"type": "AdamWW", "params": {"lr": 1e-3}})
elif case == "offload_client_optimizer":
    cfg = {
        "train_micro_batch_size_per_gpu": 2,
        "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}},
    }
    client_opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
elif case == "untested_client_optimizer":
    cfg = {"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 2}}
    client_opt = torch.optim.SGD(model.parameters(), lr=1e-3)
elif case == "bf16_and_fp16":
    cfg = dict(base, bf16={"enabled": True}, fp16={"enabled": True})
elif case == "zero_bad_key":
    cfg = dict(base, zero_optimization={"stage": 2, "offload_optimizer_device": "cpu"})
elif case == "zero_stage_4":
    cfg = dict(base, zero_optimization={"stage": 4})
elif case == "fp16_on_cpu":
    cfg = dict(base, fp16={"enabled": True})
elif case == "missing_config_file":
    cfg = "/nonexistent/ds_config.json"
elif case == "json_syntax":
    open(os.path.join(tempfile.gettempdir(), "bad_ds_config.json"), "w").write(
        '{"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": }\n'
    )
    cfg = os.path.join(tempfile.gettempdir(), "bad_ds_config.json")
elif case == "no_optimizer_backward":
    open(os.path.join(tempfile.gettempdir(), "trailing_comma_ds_config.json"), "w").write(
        '{"train_micro_batch_size_per_gpu": 2,}\n'
    )
    cfg = os.path.join(tempfile.gettempdir(), "trailing_comma_ds_config.json")
elif case == "duplicate_key":
    open(os.path.join(tempfile.gettempdir(), "dup_ds_config.json"), "w").write(
        '{"train_micro_batch_size_per_gpu": 2, "train_micro_batch_size_per_gpu": 4}\n'
    )
    cfg = os.path.join(tempfile.gettempdir(), "dup_ds_config.json")
elif case == "lamb_on_cpu":
    cfg = dict(base, optimizer={"type": "Lamb", "params": {"lr": 1e-3}})
elif case == "adam_on_cpu":
    cfg = dict(base, optimizer={"type": "Adam", "params": {"lr": 1e-3}})
elif case == "unknown_scheduler":
    cfg = dict(base, scheduler={"type": "CosineWarmup", "params": {}})
elif case == "nvme_offload_no_path":
    cfg = dict(base, zero_optimization={"stage": 3, "offload_param": {"device": "nvme"}})
elif case == "offload_param_stage2":
    cfg = dict(base, zero_optimization={"stage": 2, "offload_param": {"device": "cpu"}})
elif case == "grad_acc_not_divisible":
    cfg = dict(
        base, train_batch_size=7, train_micro_batch_size_per_gpu=2, gradient_accumulation_steps=None
    )
    del cfg["gradient_accumulation_steps"]
else:
    raise SystemExit(f"unknown case {case}")
print("CASE", case, "config:", json.dumps(cfg) if isinstance(cfg, dict) else cfg, flush=True)
engine, opt, _, _ = deepspeed.initialize(
    model=model,
    model_parameters=model.parameters() if client_opt is None else None,
    optimizer=client_opt,
    config=cfg,
)
print("initialize OK:", type(engine.optimizer).__name__, flush=True)
x = torch.randn(2, 16)
loss = engine(x).sum()
engine.backward(loss)
engine.step()
print("step OK", flush=True)
