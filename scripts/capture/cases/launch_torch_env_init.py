# Plain torch: init the default process group from env:// (no DeepSpeed, no MPI discovery),
# so a missing RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT reaches torch's own check.
# usage: python launch_torch_env_init.py
import torch
import torch.distributed as dist

print(f"torch {torch.__version__}", flush=True)
dist.init_process_group(backend="gloo", init_method="env://")
dist.barrier()
print(f"rank {dist.get_rank()} ok", flush=True)
