# SPDX-License-Identifier: Apache-2.0
"""The Python iterators against `sluice run` on the same pipeline: samples/s of the seed's
training pipeline over the converted Fashion-MNIST, and the iterator's own cost per batch (the
time next() takes beyond waiting for and taking the library's batch: ctypes calls, the tensor objects, the
framework's DLPack import), for sluice.plugin.numpy, .pytorch and, where JAX is installed and
the pipelines are on GPUs, .jax (one global jax.Array per output, sharded over the devices).

    PYTHONPATH=python python3 bench/python_iterator.py --data data [--devices cpu|all]
        [--epochs 3] [--tool build/sluice]

Prints one line per consumer; the first epoch is a warm-up and is left out."""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))

from sluice import _c  # noqa: E402
import sluice.fn as fn  # noqa: E402
import sluice.types as types  # noqa: E402
from sluice import pipeline_def  # noqa: E402


@pipeline_def
def seed_training(data_path, num_shards, shard_id):
    jpegs, labels = fn.readers.caffe2(path=data_path, random_shuffle=True,
                                      name="mnist_caffe2_reader", num_shards=num_shards,
                                      shard_id=shard_id)
    images = fn.decoders.image(jpegs, device="mixed", output_type=types.GRAY)
    images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, std=[255.0],
                                      output_layout="CHW")
    images = fn.reshape(images, shape=[784])
    labels = fn.one_hot(labels.gpu(), num_classes=10)
    return images, labels


class Timed:
    """Wraps a library call to sum the time spent inside it."""

    def __init__(self, f):
        self.f, self.seconds = f, 0.0

    def __call__(self, *a):
        t = time.perf_counter()
        try:
            return self.f(*a)
        finally:
            self.seconds += time.perf_counter() - t


def gpu_ids(spec):
    if spec.startswith("cpu"):
        n = int(spec.split(":")[1]) if ":" in spec else 1
        return [None] * n
    if spec == "all":
        import ctypes
        n = ctypes.c_int()
        ctypes.CDLL("libcudart.so").cudaGetDeviceCount(ctypes.byref(n))
        return list(range(n.value))
    return [int(x) for x in spec.split(",")]


def run_python(kind, args, devices):
    n = len(devices)
    threads = args.threads or max(1, (os.cpu_count() or 2) // n)
    pipes = [seed_training(os.path.join(args.data, "training"), n, i, batch_size=args.batch // n,
                           num_threads=threads, device_id=d, seed=0)
             for i, d in enumerate(devices)]
    kw = {}
    if kind == "torch":
        import torch
        from sluice.plugin.pytorch import DALIGenericIterator
        sync = torch.cuda.synchronize if devices[0] is not None else (lambda: None)
    elif kind == "jax":
        import jax
        import numpy as np
        from jax.sharding import Mesh, NamedSharding, PartitionSpec
        from sluice.plugin.jax import DALIGenericIterator
        local = jax.local_devices()
        if devices[0] is None or len(local) != n:
            return None, None  # JAX sees other devices than these pipelines
        kw["sharding"] = NamedSharding(Mesh(np.array(local), ("batch",)), PartitionSpec("batch"))
        sync = lambda: None  # noqa: E731  (the arrays are made when next() returns)
    else:
        from sluice.plugin.numpy import DALIGenericIterator
        sync = lambda: None  # noqa: E731
    it = DALIGenericIterator(pipes, ["images", "labels"], reader_name="mnist_caffe2_reader", **kw)
    # the library's time: the wait for the batch (in slices, sl_iter_wait) and taking it
    timed = Timed(_c.lib.sl_iter_next)
    waited = Timed(_c.lib.sl_iter_wait)
    _c.lib.sl_iter_next, _c.lib.sl_iter_wait = timed, waited
    rates, costs = [], []
    try:
        for epoch in range(args.epochs):
            timed.seconds = waited.seconds = 0.0
            steps = samples = 0
            t0 = time.perf_counter()
            for batch in it:
                steps += 1
                first = batch[0] if isinstance(batch, list) else batch
                samples += len(first["labels"]) * (n if isinstance(batch, list) else 1)
            sync()
            dt = time.perf_counter() - t0
            if epoch > 0:
                rates.append(samples / dt)
                costs.append((dt - timed.seconds - waited.seconds) / steps * 1e6)
    finally:
        _c.lib.sl_iter_next, _c.lib.sl_iter_wait = timed.f, waited.f
    return rates, costs


def run_tool(args):
    out = subprocess.run([args.tool, "run", os.path.join(ROOT, "tests", "fixtures", "pipelines",
                                                         "seed_training_sharding.py"),
                          "--arg", "data_path=" + os.path.join(args.data, "training"), "--arg",
                          "image_size=28", "--arg", "num_classes=10", "--devices", args.devices,
                          "--batch-size", str(args.batch), "--epochs", str(args.epochs),
                          "--json"] + (["--threads", str(args.threads)] if args.threads else []),
                         capture_output=True, text=True, check=True).stdout
    doc = json.loads(out)
    return [e["samples_per_s"] for e in doc["epochs"][1:]]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=os.path.join(ROOT, "data"))
    ap.add_argument("--devices", default="cpu")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--tool", default=os.path.join(ROOT, "build", "sluice"))
    args = ap.parse_args()
    devices = gpu_ids(args.devices)
    tool = run_tool(args)
    print("sluice run:          %s samples/s" % ", ".join("%.0f" % r for r in tool))
    kinds = ["numpy", "torch"]
    try:
        import jax  # noqa: F401
        kinds.append("jax")
    except ImportError:
        pass
    for kind in kinds:
        rates, costs = run_python(kind, args, devices)
        if rates is None:
            print("python %-6s iter:  skipped (JAX's devices are not these)" % kind)
            continue
        print("python %-6s iter:  %s samples/s (%.0f%% of sluice run); own cost per batch %s us"
              % (kind, ", ".join("%.0f" % r for r in rates),
                 100 * (sum(rates) / len(rates)) / (sum(tool) / len(tool)),
                 ", ".join("%.0f" % c for c in costs)))


if __name__ == "__main__":
    main()
