# Capture real DeepSpeed pipeline-parallel errors on a CPU-only machine.
# usage (one process, no launcher):
#   RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29611 \
#     python pipe_case.py CASE
# CASE:
#   zero2         PipelineModule(num_stages=1) + ZeRO stage 2 -> AssertionError in PipelineEngine
#   zero3         same with ZeRO stage 3
#   stages        PipelineModule(num_stages=2) at world size 1 -> RuntimeError num_stages must divide
#   forward       healthy pipeline engine, then engine(x) / engine.backward / engine.step -> PipelineError
#   ok            healthy pipeline engine, train_batch() twice (the control run)
import sys

import deepspeed
import torch
from deepspeed.pipe import PipelineModule

case = sys.argv[1]
torch.manual_seed(0)
deepspeed.init_distributed()

num_stages = 2 if case == "stages" else 1
layers = [torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)]
model = PipelineModule(layers=layers, num_stages=num_stages, loss_fn=torch.nn.MSELoss())

stage = {"zero2": 2, "zero3": 3}.get(case, 1)
cfg = {
    "train_micro_batch_size_per_gpu": 2,
    "gradient_accumulation_steps": 2,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}},
    "zero_optimization": {"stage": stage},
}
engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
print(
    f"[rank {engine.global_rank}] pipeline engine ready: stages={engine.num_stages} zero={stage}",
    flush=True,
)


def batches():
    while True:
        yield torch.randn(2, 16), torch.randn(2, 4)


if case == "forward":
    out = engine(torch.randn(2, 16))
elif case == "ok":
    it = batches()
    for step in range(2):
        loss = engine.train_batch(data_iter=it)
        print(f"[rank {engine.global_rank}] step {step} loss {loss.item():.4f}", flush=True)
