"""JIT-build the async_io op and the generic C++ utils op (what FastFileWriter needs on CPU)
and print how long each took. A cached op only takes a load: run it on an empty
TORCH_EXTENSIONS_DIR to measure the build."""

import time

from deepspeed.ops.op_builder import AsyncIOBuilder
from deepspeed.ops.op_builder.utils import UtilsBuilder

t0 = time.time()
AsyncIOBuilder().load(verbose=False)
t1 = time.time()
print(f"async_io build s {t1 - t0:.1f}", flush=True)
UtilsBuilder().load(verbose=False)
t2 = time.time()
print(f"utils build s {t2 - t1:.1f}", flush=True)
print("total", t2 - t0, flush=True)
