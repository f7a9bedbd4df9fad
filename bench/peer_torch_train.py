# SPDX-License-Identifier: Apache-2.0
"""PyTorch peer of bench_train_cpu.sh: one epoch of the seed workload on the CPU -- the
DataLoader of peer_dataloader.py (2 worker processes, PIL decode, the same JPEG bytes, x/255, one-hot)
feeding the seed's MLP 784-1024-1024-10 (tanh, log-softmax, loss -mean(sum(logp * onehot))) trained
with plain SGD lr 0.001, batch 200. Weights start from numpy RandomState(0) drawn in the seed's order
(per layer w = 0.1*randn(in, out), then b = 0.1*randn(out)), i.e. the very values sluice starts from.
The main process runs torch with --threads intra-op threads (default: the core count, as sluice's
OpenBLAS; Debian's torch 1.13 starts with 1 here); the DataLoader workers use 1 each.
Run with Debian's /usr/bin/python3.

usage: /usr/bin/python3 bench/peer_torch_train.py TRAIN_JPEGS [TEST_JPEGS] [--epochs 1] [--threads T]
       [--workers 2] [--device cpu|cuda]   (cuda: the model on the GPU, batches copied there from
       pinned memory inside the compute time; loss.item() synchronises every step)
Prints one JSON object per run: per epoch seconds, samples/s, mean loss, the time the training loop
waited on the DataLoader iterator, the time in forward/backward/step, the workers' decode thread-
seconds, and (with TEST_JPEGS) test accuracy, measured after the epoch's clock stops."""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_dataloader import make_loader  # noqa: E402

SIZES = [784, 1024, 1024, 10]


def init_params(seed=0, device="cpu"):
    rs = np.random.RandomState(seed)
    params = []
    for m, n in zip(SIZES[:-1], SIZES[1:]):
        w = (0.1 * rs.randn(m, n)).astype(np.float32)
        b = (0.1 * rs.randn(n)).astype(np.float32)
        params += [torch.tensor(w, device=device, requires_grad=True),
                   torch.tensor(b, device=device, requires_grad=True)]
    return params


def forward(params, x):
    h = x
    for i in range(0, len(params) - 2, 2):
        h = torch.tanh(h @ params[i] + params[i + 1])
    logits = h @ params[-2] + params[-1]
    return logits - torch.logsumexp(logits, dim=1, keepdim=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("train")
    ap.add_argument("test", nargs="?")
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--lr", type=float, default=0.001)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    params = init_params(0, dev)
    opt = torch.optim.SGD(params, lr=a.lr)
    pin = dev.type == "cuda"
    loader = make_loader(a.train, a.batch, a.workers, pin_memory=pin)
    test = (make_loader(a.test, 1000, a.workers, shuffle=False, one_hot=False, pin_memory=pin)
            if a.test else None)
    epochs = []
    for epoch in range(a.epochs):
        t0 = time.perf_counter()
        wait = compute = decode = loss_sum = 0.0
        n = steps = 0
        tw = time.perf_counter()
        for x, y, dt in loader:
            tc = time.perf_counter()
            wait += tc - tw
            x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
            opt.zero_grad(set_to_none=True)
            loss = -(forward(params, x) * y).sum(dim=1).mean()
            loss.backward()
            opt.step()
            loss_sum += loss.item()
            tw = time.perf_counter()
            compute += tw - tc
            decode += float(dt.sum())
            n += x.shape[0]
            steps += 1
        s = time.perf_counter() - t0
        r = {"epoch": epoch, "seconds": s, "samples_per_s": n / s, "loss": loss_sum / steps,
             "wait_s": wait, "compute_s": compute, "decode_s": decode}
        if test is not None:
            correct = total = 0
            with torch.no_grad():
                for x, y, _ in test:
                    x, y = x.to(dev), y.to(dev)
                    correct += int((forward(params, x).argmax(dim=1) == y).sum())
                    total += x.shape[0]
            r["accuracy"] = correct / total
        epochs.append(r)
    print(json.dumps({"peer": "torch", "torch": torch.__version__, "device": str(dev),
                      "threads": torch.get_num_threads(), "workers": a.workers,
                      "epochs": epochs}))


if __name__ == "__main__":
    main()
