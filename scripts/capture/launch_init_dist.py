# Minimal rendezvous: init the default process group from env:// and barrier.
import os, sys
from datetime import timedelta
sys.argv = [a for a in sys.argv if not a.startswith("--local_rank")]
import torch, deepspeed
t = int(os.environ.get("DIST_TIMEOUT", "20"))
deepspeed.init_distributed(dist_backend="gloo", timeout=timedelta(seconds=t))
torch.distributed.barrier()
print(f"rank {torch.distributed.get_rank()} ok", flush=True)
