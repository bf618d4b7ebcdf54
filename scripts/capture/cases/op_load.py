import importlib
import sys

name = sys.argv[1]
mod = importlib.import_module("deepspeed.ops.op_builder")
b = getattr(mod, name)()
print("builder:", type(b).__module__ + "." + type(b).__name__, flush=True)
m = b.load()
print("loaded:", m)
