# SPDX-License-Identifier: Apache-2.0
"""PyTorch peer of bench_pipeline_cpu.sh and the data half of peer_torch_train.py: the
seed's training pipeline as a PyTorch user writes it -- a map-style Dataset over the very JPEG bytes
sluice reads (exported once from the Caffe2 LMDB by build/export_jpegs), PIL decode to GRAY, x/255
as float32 reshaped to 784, one-hot labels of 10, a DataLoader with 2 worker processes, shuffled,
batch 200. Run with Debian's /usr/bin/python3 (it has torch, PIL and numpy).

usage: /usr/bin/python3 bench/peer_dataloader.py JPEGS_FILE [--batch 200] [--workers 2] [--epochs 1]
Prints one JSON object: per-epoch seconds and samples/s (from creating the epoch's iterator to the
last batch: worker start-up included, as every epoch of a non-persistent DataLoader), the time the
main process waited on the iterator, and the workers' decode+normalise thread-seconds."""
import argparse
import io
import json
import struct
import sys
import time

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset


def load_jpegs(path):
    """(blob, offsets, lengths, labels) of an export_jpegs file."""
    blob = open(path, "rb").read()
    if blob[:8] != b"SLJPEGS1":
        sys.exit(f"{path}: not an export_jpegs file")
    (n,) = struct.unpack_from("<I", blob, 8)
    off = np.empty(n, np.int64)
    ln = np.empty(n, np.int64)
    lab = np.empty(n, np.int64)
    p = 12
    for i in range(n):
        lab[i], ln[i] = struct.unpack_from("<iI", blob, p)
        off[i] = p + 8
        p += 8 + ln[i]
    return blob, off, ln, lab


class JpegDataset(Dataset):
    """Sample i: (x float32 (784,) = pixel/255, y float32 (10,) one-hot [or the int label],
    seconds spent decoding and normalising it)."""

    def __init__(self, path, num_classes=10, one_hot=True):
        self.blob, self.off, self.len, self.lab = load_jpegs(path)
        self.num_classes = num_classes
        self.one_hot = one_hot

    def __len__(self):
        return len(self.off)

    def __getitem__(self, i):
        t0 = time.perf_counter()
        o = int(self.off[i])
        img = Image.open(io.BytesIO(self.blob[o:o + int(self.len[i])])).convert("L")
        x = np.asarray(img, dtype=np.uint8).reshape(784).astype(np.float32) / np.float32(255.0)
        x = torch.from_numpy(x)
        t1 = time.perf_counter()
        if self.one_hot:
            y = torch.zeros(self.num_classes, dtype=torch.float32)
            y[int(self.lab[i])] = 1.0
        else:
            y = int(self.lab[i])
        return x, y, t1 - t0


def make_loader(path, batch, workers, shuffle=True, one_hot=True, seed=0, pin_memory=False):
    ds = JpegDataset(path, one_hot=one_hot)
    g = torch.Generator()
    g.manual_seed(seed)
    return DataLoader(ds, batch_size=batch, shuffle=shuffle, num_workers=workers, generator=g,
                      pin_memory=pin_memory)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("jpegs")
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=1)
    a = ap.parse_args()
    loader = make_loader(a.jpegs, a.batch, a.workers)
    epochs = []
    for _ in range(a.epochs):
        t0 = time.perf_counter()
        wait = decode = 0.0
        n = 0
        tw = time.perf_counter()
        for x, y, dt in loader:
            wait += time.perf_counter() - tw
            n += x.shape[0]
            decode += float(dt.sum())
            tw = time.perf_counter()
        s = time.perf_counter() - t0
        epochs.append({"seconds": s, "samples": n, "samples_per_s": n / s, "wait_s": wait,
                       "decode_s": decode})
    print(json.dumps({"peer": "torch DataLoader", "torch": torch.__version__, "workers": a.workers,
                      "batch": a.batch, "epochs": epochs}))


if __name__ == "__main__":
    main()
