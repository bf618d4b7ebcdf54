# A training script whose argparse does NOT accept --local_rank (the common mistake).
import argparse

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=1)
args = p.parse_args()
print("parsed", args, flush=True)
