"""Load Megatron-DeepSpeed .bin/.idx datasets the way pretraining does (gpt_dataset.get_indexed_dataset_).

Usage: megatron_indexed.py MEGATRON_DS_SRC WORKDIR MODE
  missing         --data-path names a prefix with no .bin/.idx (impl infer)
  empty-infer     0-byte .idx and .bin (an interrupted preprocessing run), impl infer
  mmap-as-cached  a valid mmap dataset read with --data-impl cached
  lfs-pointer     a Git LFS pointer file in place of the .idx, impl mmap
  ok              a valid mmap dataset read with impl infer
MEGATRON_DS_SRC is a checkout of deepspeedai/Megatron-DeepSpeed (megatron/ and tools/).
"""

import os
import sys


def build_mmap(prefix: str) -> None:
    import numpy as np
    import torch
    from megatron.data.indexed_dataset import MMapIndexedDatasetBuilder

    builder = MMapIndexedDatasetBuilder(prefix + ".bin", dtype=np.uint16)
    for doc in ([5, 6, 7, 8], [9, 10, 11], [12, 13, 14, 15, 16]):
        builder.add_item(torch.tensor(doc, dtype=torch.int64))
        builder.end_document()
    builder.finalize(prefix + ".idx")


def main() -> None:
    src, work, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    sys.path.insert(0, src)
    from megatron.data.gpt_dataset import get_indexed_dataset_

    os.makedirs(work, exist_ok=True)
    prefix = os.path.join(work, "corpus_text_document")
    for ext in (".bin", ".idx"):
        if os.path.exists(prefix + ext):
            os.remove(prefix + ext)
    impl = "infer"
    if mode == "missing":
        prefix = os.path.join(work, "corpus")  # the _text_document suffix left out
    elif mode == "empty-infer":
        open(prefix + ".bin", "wb").close()
        open(prefix + ".idx", "wb").close()
    elif mode == "mmap-as-cached":
        build_mmap(prefix)
        impl = "cached"
    elif mode == "lfs-pointer":
        build_mmap(prefix)
        with open(prefix + ".idx", "w") as f:
            f.write(
                "version https://git-lfs.github.com/spec/v1\n"
                "oid sha256:" + "0" * 64 + "\nsize 1234\n"
            )
        impl = "mmap"
    elif mode == "ok":
        build_mmap(prefix)
    else:
        raise SystemExit(f"unknown mode {mode}")
    get_indexed_dataset_(prefix, impl, True)


if __name__ == "__main__":
    main()
