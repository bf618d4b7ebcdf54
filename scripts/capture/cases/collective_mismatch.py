"""Two gloo ranks that issue different collectives, for TORCH_DISTRIBUTED_DEBUG=DETAIL captures.

Usage (under torchrun --nproc_per_node 2): collective_mismatch.py MODE
  shape  both ranks all_reduce, but rank 1's tensor has another length
  op     rank 0 all_reduces while rank 1 broadcasts
  ok     both ranks all_reduce the same tensor (the healthy control)
"""

import sys

import torch
import torch.distributed as dist


def main() -> None:
    mode = sys.argv[1]
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if mode == "shape":
        t = torch.ones(4 if rank == 0 else 6)
        dist.all_reduce(t)
    elif mode == "op":
        t = torch.ones(4)
        if rank == 0:
            dist.all_reduce(t)
        else:
            dist.broadcast(t, src=0)
    elif mode == "ok":
        t = torch.ones(4)
        dist.all_reduce(t)
        print(f"rank {rank}: all_reduce ok, sum={t.sum().item()}", flush=True)
    else:
        raise SystemExit(f"unknown mode {mode}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
