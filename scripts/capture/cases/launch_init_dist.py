# Minimal rendezvous: init the default process group from env:// and barrier.
# usage: python launch_init_dist.py   (RANK/WORLD_SIZE/MASTER_* from a launcher or the caller;
#        DIST_TIMEOUT seconds, default 20)
import os
import sys
from datetime import timedelta

import deepspeed
import torch

sys.argv = [a for a in sys.argv if not a.startswith("--local_rank")]
t = int(os.environ.get("DIST_TIMEOUT", "20"))
deepspeed.init_distributed(dist_backend="gloo", timeout=timedelta(seconds=t))
torch.distributed.barrier()
print(f"rank {torch.distributed.get_rank()} ok", flush=True)
