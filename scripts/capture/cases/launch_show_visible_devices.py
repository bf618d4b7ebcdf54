# Print what the launcher handed this rank, then exit 0.
# usage: deepspeed [--num_gpus N] launch_show_visible_devices.py
import os
import sys

sys.argv = [a for a in sys.argv if not a.startswith("--local_rank")]
keys = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "CUDA_VISIBLE_DEVICES")
print("rank env: " + " ".join(f"{k}={os.environ.get(k, '<unset>')}" for k in keys), flush=True)
