# torch.save into a full filesystem: by path, by open file object, and by buffered file object.
import os
import sys
import traceback

import torch

d = sys.argv[1]
mode = sys.argv[2]
big = {"w": torch.randn(4 << 20)}  # 16 MiB
print("torch", torch.__version__, "mode", mode, flush=True)
try:
    if mode == "path":
        torch.save(big, os.path.join(d, "full_path.pt"))
    elif mode == "fileobj":
        with open(os.path.join(d, "full_fileobj.pt"), "wb") as f:
            torch.save(big, f)
    elif mode == "legacy":
        torch.save(big, os.path.join(d, "full_legacy.pt"), _use_new_zipfile_serialization=False)
except Exception:
    traceback.print_exc()
    sys.exit(1)
print("saved OK")
