# Capture init/zero-phase misuse failures on a CPU-only machine (single process, gloo).
# usage: python init_zero_case.py CASE   (RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 MASTER_ADDR/PORT set by caller)
# Cases reproduce what users hit; each one ends in the real exception DeepSpeed/torch/transformers raise.
import json
import os
import sys

import deepspeed
import torch

case = sys.argv[1]
torch.manual_seed(0)
OPT = {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}}


def mlp():
    return torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


class TinyLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(32, 16)
        self.proj = torch.nn.Linear(16, 16)

    def forward(self, ids):
        return self.proj(self.embed(ids)).sum()


class SharedBlock(torch.nn.Module):
    """One Linear applied twice, each application in its own reentrant checkpoint."""

    def __init__(self):
        super().__init__()
        self.shared = torch.nn.Linear(16, 16)
        self.head = torch.nn.Linear(16, 4)

    def forward(self, x):
        from torch.utils.checkpoint import checkpoint

        h = checkpoint(self.shared, x, use_reentrant=True)
        h = checkpoint(self.shared, torch.relu(h), use_reentrant=True)
        return self.head(h).sum()


def z3(extra=None):
    cfg = {
        "train_micro_batch_size_per_gpu": 2,
        "gradient_accumulation_steps": 1,
        "optimizer": OPT,
        "zero_optimization": {"stage": 3},
    }
    cfg.update(extra or {})
    return cfg


print("CASE", case, flush=True)
if case == "gas_derived_zero":
    cfg = {"train_batch_size": 2, "train_micro_batch_size_per_gpu": 4, "optimizer": OPT}
    print("config:", json.dumps(cfg), flush=True)
    deepspeed.initialize(model=mlp(), model_parameters=mlp().parameters(), config=cfg)
elif case == "hf_auto_values_direct":
    cfg = {
        "train_batch_size": "auto",
        "train_micro_batch_size_per_gpu": "auto",
        "gradient_accumulation_steps": "auto",
        "optimizer": OPT,
    }
    print("config:", json.dumps(cfg), flush=True)
    m = mlp()
    deepspeed.initialize(model=m, model_parameters=m.parameters(), config=cfg)
elif case == "zero3_load_state_dict_partitioned":
    full = mlp().state_dict()  # e.g. a checkpoint written by a non-ZeRO run
    with deepspeed.zero.Init(config_dict_or_path=z3()):
        m = mlp()
    print(
        "weight shape under zero.Init:",
        tuple(m[0].weight.shape),
        "ds_shape:",
        tuple(m[0].weight.ds_shape),
        flush=True,
    )
    m.load_state_dict(full)
elif case == "zero3_forward_before_engine":
    with deepspeed.zero.Init(config_dict_or_path=z3()):
        m = TinyLM()
    m(torch.tensor([[1, 2, 3]]))
elif case == "zero3_state_dict_saved_empty":
    m = mlp()
    engine, _, _, _ = deepspeed.initialize(model=m, model_parameters=m.parameters(), config=z3())
    path = os.path.join(os.environ.get("WORKDIR", "/tmp"), "zero3_module_state_dict.pt")
    torch.save(engine.module.state_dict(), path)
    print("saved", path, {k: tuple(v.shape) for k, v in torch.load(path).items()}, flush=True)
    fresh = mlp()
    fresh.load_state_dict(torch.load(path))
elif case == "zero2_reentrant_shared_param":
    cfg = {
        "train_micro_batch_size_per_gpu": 2,
        "gradient_accumulation_steps": 1,
        "optimizer": OPT,
        "zero_optimization": {"stage": 2},
    }
    m = SharedBlock()
    engine, _, _, _ = deepspeed.initialize(model=m, model_parameters=m.parameters(), config=cfg)
    x = torch.randn(2, 16, requires_grad=True)
    loss = engine(x)
    engine.backward(loss)
    engine.step()
    print("step OK", flush=True)
elif case == "hf_trainer_config_mismatch":
    from transformers import TrainingArguments

    cfg = {
        "train_micro_batch_size_per_gpu": 4,
        "gradient_accumulation_steps": "auto",
        "train_batch_size": "auto",
        "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}},
        "zero_optimization": {"stage": 2},
    }
    args = TrainingArguments(
        output_dir=os.environ.get("WORKDIR", "/tmp") + "/hf_out",
        per_device_train_batch_size=8,
        learning_rate=5e-5,
        deepspeed=cfg,
        report_to=[],
    )
    print("TrainingArguments OK; Trainer.train() would now call deepspeed_init()", flush=True)
    # the exact call transformers' deepspeed_init() makes before deepspeed.initialize()
    args.hf_deepspeed_config.trainer_config_finalize(args, mlp(), 100)
elif case == "hf_config_trailing_comma":
    # hjson (DeepSpeed) accepts a trailing comma; the HF side parses the same file with strict json
    from accelerate.utils.deepspeed import HfDeepSpeedConfig

    path = os.path.join(os.environ.get("WORKDIR", "/tmp"), "trailing_comma_ds_config.json")
    open(path, "w").write(
        '{\n  "train_micro_batch_size_per_gpu": "auto",\n  "gradient_accumulation_steps": "auto",\n}\n'
    )
    HfDeepSpeedConfig(path)
else:
    raise SystemExit(f"unknown case {case}")
print("no error", flush=True)
