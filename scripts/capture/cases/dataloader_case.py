# Capture real torch DataLoader worker-death messages (CPU only, no GPU, no DeepSpeed needed).
# usage: python dataloader_case.py CASE
# CASE:
#   sigkill   the worker that loads item 8 sends SIGKILL to itself (what the kernel OOM killer does)
#   exit      the worker that loads item 8 calls os._exit(1) (a native library aborting the process)
#   ok        no failure (the control run)
import os
import signal
import sys

import torch
from torch.utils.data import DataLoader, Dataset

case = sys.argv[1]


class Toy(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        info = torch.utils.data.get_worker_info()
        if info is not None and i == 8:
            if case == "sigkill":
                os.kill(os.getpid(), signal.SIGKILL)
            elif case == "exit":
                os._exit(1)
        return torch.full((4,), float(i))


print(f"torch {torch.__version__} case={case}", flush=True)
loader = DataLoader(Toy(), batch_size=2, num_workers=2)
for step, batch in enumerate(loader):
    if step % 8 == 0:
        print(f"step {step} batch sum {batch.sum().item():.1f}", flush=True)
print("epoch done", flush=True)
