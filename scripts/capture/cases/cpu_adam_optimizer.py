"""Construct DeepSpeedCPUAdam, which JIT-builds the cpu_adam op in its constructor.

When the build fails, the half-built optimizer's __del__ later prints
"AttributeError: 'DeepSpeedCPUAdam' object has no attribute 'ds_opt_adam'".
"""

import torch
from deepspeed.ops.adam import DeepSpeedCPUAdam

model = torch.nn.Linear(4, 4)
opt = DeepSpeedCPUAdam(model.parameters(), lr=1e-3)
print("created:", type(opt).__name__, flush=True)
