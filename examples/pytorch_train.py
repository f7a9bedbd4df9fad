# SPDX-License-Identifier: Apache-2.0
"""Trains the seed's MLP (784-1024-1024-10, tanh, log-softmax, SGD) with PyTorch, fed by sluice.

The pipelines are the seed's: Fashion-MNIST JPEGs from a Caffe2 LMDB, decoded, normalised and
one-hot encoded by sluice, handed to torch through sluice.plugin.pytorch (no copy). Usage:

    make data && python3 examples/pytorch_train.py --data data [--device cpu|cuda] [--epochs 5]

It prints the seed's lines ("Epoch N: ... s", "Test set accuracy X"); `sluice train --devices cpu`
trains the same model in C on the same data to the same accuracies (within about 0.01)."""

import argparse
import os
import time

import numpy as np
import torch

import sluice.fn as fn
import sluice.types as types
from sluice import pipeline_def
from sluice.plugin.pytorch import DALIGenericIterator

image_size = 28
num_classes = 10


@pipeline_def
def training(data_path):
    jpegs, labels = fn.readers.caffe2(path=data_path, random_shuffle=True,
                                      name="mnist_caffe2_reader")
    images = fn.decoders.image(jpegs, device="mixed", output_type=types.GRAY)
    images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, std=[255.0],
                                      output_layout="CHW")
    images = fn.reshape(images, shape=[image_size * image_size])
    labels = fn.one_hot(labels.gpu(), num_classes=num_classes)
    return images, labels


@pipeline_def
def validation(data_path):
    jpegs, labels = fn.readers.caffe2(path=data_path, random_shuffle=False,
                                      name="mnist_caffe2_reader")
    images = fn.decoders.image(jpegs, device="mixed", output_type=types.GRAY)
    images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, std=[255.0],
                                      output_layout="CHW")
    images = fn.reshape(images, shape=[image_size * image_size])
    return images, labels.gpu()


def init_model(device, layers=(784, 1024, 1024, 10), scale=0.1):
    """The seed's initialisation: numpy RandomState(0), w then b per layer."""
    rng = np.random.RandomState(0)
    params = []
    for n_in, n_out in zip(layers[:-1], layers[1:]):
        w = torch.tensor(scale * rng.randn(n_in, n_out), dtype=torch.float32, device=device)
        b = torch.tensor(scale * rng.randn(n_out), dtype=torch.float32, device=device)
        params += [w.requires_grad_(), b.requires_grad_()]
    return params


def predict(params, x):
    for i in range(0, len(params) - 2, 2):
        x = torch.tanh(x @ params[i] + params[i + 1])
    out = x @ params[-2] + params[-1]
    return out - torch.logsumexp(out, dim=1, keepdim=True)


def accuracy(params, iterator):
    correct = 0
    with torch.no_grad():
        for batch in iterator:
            x, y = batch[0]["images"], batch[0]["labels"]
            correct += int((predict(params, x).argmax(1) == y.reshape(-1)).sum())
    return correct / iterator.size


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="data", help="holds training/ and testing/ (make data)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=200)
    ap.add_argument("--lr", type=float, default=0.001)
    ap.add_argument("--threads", type=int, default=None,
                    help="CPU threads per pipeline (default: chosen by sluice from the machine)")
    args = ap.parse_args()
    dev = torch.device(args.device)
    device_id = (dev.index or 0) if dev.type == "cuda" else None
    kw = dict(batch_size=args.batch_size, num_threads=args.threads, device_id=device_id, seed=0)
    train = DALIGenericIterator([training(os.path.join(args.data, "training"), **kw)],
                                ["images", "labels"], reader_name="mnist_caffe2_reader")
    val = DALIGenericIterator([validation(os.path.join(args.data, "testing"), **kw)],
                              ["images", "labels"], reader_name="mnist_caffe2_reader")
    print(f"Number of batches in training iterator = {len(train)}")
    print(f"Number of batches in validation iterator = {len(val)}")
    params = init_model(dev)
    for epoch in range(args.epochs):
        t0 = time.perf_counter()
        n = 0
        for batch in train:
            x, y = batch[0]["images"], batch[0]["labels"]
            loss = -torch.mean(torch.sum(predict(params, x) * y, dim=1))
            loss.backward()
            with torch.no_grad():
                for p in params:
                    p -= args.lr * p.grad
                    p.grad = None
            n += x.shape[0]
        if dev.type == "cuda":
            torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        print(f"Epoch {epoch}: {dt:.2f} s, {n / dt:.0f} samples/s")
        print(f"Test set accuracy {accuracy(params, val):.4f}", flush=True)


if __name__ == "__main__":
    main()
