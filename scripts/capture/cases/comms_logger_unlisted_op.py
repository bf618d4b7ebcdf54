# The comms logger's bandwidth table has no row for some timed ops (monitored_barrier, all_to_all,
# the *_object ops; all_reduce_coalesced before 0.10.0). Log one with prof_all and see what happens.
# usage: python comms_logger_unlisted_op.py   (single process, gloo, MASTER_* set here)
import os

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29531")
for k, v in (("RANK", "0"), ("WORLD_SIZE", "1"), ("LOCAL_RANK", "0")):
    os.environ.setdefault(k, v)

import deepspeed  # noqa: E402
import deepspeed.comm as dist  # noqa: E402
import torch  # noqa: E402

deepspeed.init_distributed(dist_backend="gloo")
dist.configure(enabled=True, prof_all=True, verbose=False)
dist.all_reduce(torch.ones(4))
print("step 1: all_reduce logged", flush=True)
dist.monitored_barrier()
print("step 2: after monitored_barrier (not reached when the logger exits)", flush=True)
