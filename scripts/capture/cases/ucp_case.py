# Universal-checkpoint round trip on CPU: save with ZeRO at world size 2, convert, load at world size 1.
# usage:
#   deepspeed --num_gpus 2 --master_port P ucp_case.py save DIR STAGE
#   python -m deepspeed.checkpoint.ds_to_universal --input_folder DIR/global_step2 \
#          --output_folder DIR/global_step2_universal [--inject_missing_state]
#   (single process env RANK=0 ... ) python ucp_case.py load DIR STAGE [universal]
import sys

import deepspeed
import torch

sys.argv = [a for a in sys.argv if not a.startswith("--local_rank")]
mode, d, stage = sys.argv[1], sys.argv[2], int(sys.argv[3])
universal = len(sys.argv) > 4 and sys.argv[4] == "universal"
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
cfg = {
    "train_micro_batch_size_per_gpu": 2,
    "gradient_accumulation_steps": 1,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}},
    "zero_optimization": {"stage": stage},
}
if universal:
    cfg["checkpoint"] = {"load_universal": True}
engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
rank = engine.global_rank
print(
    f"[rank {rank}] world_size={engine.world_size} dp_world_size={engine.dp_world_size} universal={universal}",
    flush=True,
)
if mode == "save":
    for _step in range(2):
        loss = engine(torch.randn(2, 64)).sum()
        engine.backward(loss)
        engine.step()
    engine.save_checkpoint(d, tag="global_step2")
    print(f"[rank {rank}] saved", flush=True)
else:
    path, client = engine.load_checkpoint(d)
    print(
        f"[rank {rank}] load_checkpoint returned path={path} global_steps={engine.global_steps}",
        flush=True,
    )
    loss = engine(torch.randn(2, 64)).sum()
    engine.backward(loss)
    engine.step()
    print(f"[rank {rank}] one step after load OK, loss={loss.item():.4f}", flush=True)
