"""DeepSpeed-Inference v2 (FastGen) parameter flattening with a checkpoint tensor missing.

Fills DeepSpeed's Llama-2 non-transformer container the way populate_model_parameters does
(set_dependency per checkpoint tensor name), then calls the real flatten_inference_model.
Without `lm_head.weight` (a tied-embedding checkpoint) the unembedding container is never
finalised. Run with `--with-lm-head` for the control, which completes the whole flattening.

Three stand-ins, because this machine has no GPU: the model's transform_* hooks wrap the tensor
as an InferenceParameter unchanged (the real ones shard/cast it); the CUDA-only ragged_utils op
(loaded at the top of flatten_inference_model, used only after the metadata pass) is replaced by
a buffer view; and flat_model_helpers' get_accelerator, read only for the device of the flat
buffer after the metadata pass, names "cpu" (DeepSpeed's CPU accelerator answers device index 0,
which torch.empty reads as CUDA). The failure is raised in the metadata pass, before the last
two are used. Nothing of the flattening logic itself is replaced.
"""

import sys

import deepspeed
import torch
from deepspeed.inference.v2.inference_parameter import InferenceParameter
from deepspeed.inference.v2.model_implementations import flat_model_helpers
from deepspeed.inference.v2.model_implementations.llama_v2.container import (
    Llama2NonTransformerContainer,
)


class _BufferViewOp:
    @staticmethod
    def allocate_view_on(tensor, buffer, offset):
        n = tensor.numel() * tensor.element_size()
        return buffer[offset : offset + n].view(tensor.dtype).view(tensor.shape)

    def load(self):
        return self


class _CPUDevice:
    @staticmethod
    def current_device():
        return "cpu"


class _StandInModel:
    def transform_embedding_param(self, p):
        return InferenceParameter.initialize(p)

    def transform_unembed_param(self, p):
        return InferenceParameter.initialize(p)

    def transform_norm_param(self, p):
        return InferenceParameter.initialize(p)


def main() -> None:
    flat_model_helpers.RaggedUtilsBuilder = _BufferViewOp
    flat_model_helpers.get_accelerator = _CPUDevice
    print(f"deepspeed {deepspeed.__version__} torch {torch.__version__}", flush=True)
    shapes = {
        "model.embed_tokens.weight": (32, 8),
        "model.norm.weight": (8,),
        "lm_head.weight": (32, 8),
    }
    names = ["model.embed_tokens.weight", "model.norm.weight"]
    if "--with-lm-head" in sys.argv:
        names.append("lm_head.weight")
    print(f"checkpoint tensors: {names}", flush=True)
    container = Llama2NonTransformerContainer(_StandInModel())
    for name in names:
        container.set_dependency(name, torch.randn(*shapes[name], dtype=torch.float16))
    buffer, metadata = flat_model_helpers.flatten_inference_model([], container, "Llama2Policy")
    print(f"flatten_inference_model: done, flat buffer of {buffer.numel()} bytes", flush=True)


if __name__ == "__main__":
    main()
