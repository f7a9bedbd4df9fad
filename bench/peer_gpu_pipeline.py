# SPDX-License-Identifier: Apache-2.0
"""Peer for bench/gpu_pipeline.sh: PyTorch DataLoader (16 workers, PIL) over the same JPEG bytes as
the seed pipeline. The JPEGs are taken out of the Caffe2 LMDB file (data.mdb) by their markers
(FFD8FF ... FFD9; 28x28 records sit whole in their pages), decoded with PIL as grayscale and scaled
to float /255, batch 200, with the one-hot labels left out (PIL decoding is the cost measured)."""
import io
import re
import sys
import time

import numpy as np
import torch
from PIL import Image


class Jpegs(torch.utils.data.Dataset):
    def __init__(self, blobs):
        self.blobs = blobs

    def __len__(self):
        return len(self.blobs)

    def __getitem__(self, i):
        img = Image.open(io.BytesIO(self.blobs[i])).convert("L")
        return torch.from_numpy(np.asarray(img, dtype=np.float32) / 255.0).reshape(784)


def main():
    raw = open(sys.argv[1], "rb").read()
    found = [m.group(0) for m in re.finditer(rb"\xff\xd8\xff.*?\xff\xd9", raw, re.S)]
    blobs = []
    for b in found:  # drop marker-like byte runs that are not whole JPEGs
        try:
            Image.open(io.BytesIO(b)).load()
            blobs.append(b)
        except Exception:
            pass
    print(f"peer: {len(blobs)} JPEGs from {sys.argv[1]} ({len(found) - len(blobs)} false matches dropped)")
    loader = torch.utils.data.DataLoader(Jpegs(blobs), batch_size=200, shuffle=True, num_workers=16,
                                         persistent_workers=True, prefetch_factor=4)
    for epoch in range(3):
        t0, n = time.perf_counter(), 0
        for x in loader:
            n += x.shape[0]
        dt = time.perf_counter() - t0
        print(f"peer epoch {epoch}: {n} samples in {dt:.3f} s, {n / dt:.0f} samples/s")


if __name__ == "__main__":
    main()
