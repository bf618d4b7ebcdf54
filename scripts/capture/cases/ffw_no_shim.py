import os
import tempfile

# FastFileWriter on the CPU accelerator without any shim
import torch
from deepspeed.io import FastFileWriter, FastFileWriterConfig
from deepspeed.ops.op_builder import AsyncIOBuilder

aio = AsyncIOBuilder().load(verbose=False).aio_handle(1 << 20, 8, False, False, 1)
pinned = aio.new_cpu_locked_tensor(8 << 20, torch.empty(0, dtype=torch.uint8))
cfg = FastFileWriterConfig(
    dnvme_handle=aio,
    pinned_tensor=pinned,
    double_buffer=True,
    num_parallel_writers=1,
    writer_rank=0,
)
w = FastFileWriter(file_path=os.path.join(tempfile.gettempdir(), "ffw_no_shim.pt"), config=cfg)
