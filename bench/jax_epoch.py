# SPDX-License-Identifier: Apache-2.0
"""The seed's JAX training loop (examples/model.py's update) fed by sluice.plugin.jax: seconds per
epoch on every GPU of the machine (sharding), the first epoch (compile) reported apart, and test
accuracy after each. Compare with the same loop fed from NumPy arrays
(jax_reference.py "shard", which does no decoding): sluice decodes every JPEG, every epoch.

    PYTHONPATH=python:examples python3 bench/jax_epoch.py --data data [--epochs 5]"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "python"), os.path.join(HERE, "..", "examples")]

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec  # noqa: E402

import sluice.fn as fn  # noqa: E402
import sluice.types as types  # noqa: E402
from model import accuracy, init_model, update  # noqa: E402
from sluice.plugin.jax import data_iterator  # noqa: E402


def threads_arg(v):
    return None if v == "auto" else int(v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="data")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--threads", type=threads_arg, default=None,
                    help="CPU threads per pipeline (default, or auto: the library's choice)")
    ap.add_argument("--prefetch", type=int, default=2, help="prefetch_queue_depth")
    ap.add_argument("--affine", type=int, default=1, choices=(0, 1),
                    help="the mixed decoders' affine (1, the default: the pool's threads pinned)")
    args = ap.parse_args()
    mesh = Mesh(np.array(jax.devices()).reshape(-1, 1), ("batch", "model"))
    sharding = NamedSharding(mesh, PartitionSpec("batch"))

    @data_iterator(output_map=["images", "labels"], reader_name="r", sharding=sharding)
    def training(data_path, num_shards, shard_id):
        jpegs, labels = fn.readers.caffe2(path=data_path, random_shuffle=True, name="r",
                                          num_shards=num_shards, shard_id=shard_id)
        images = fn.decoders.image(jpegs, device="mixed", output_type=types.GRAY,
                                   affine=bool(args.affine))
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, std=[255.0],
                                          output_layout="CHW")
        return fn.reshape(images, shape=[784]), fn.one_hot(labels.gpu(), num_classes=10)

    @data_iterator(output_map=["images", "labels"], reader_name="r")
    def validation(data_path):
        jpegs, labels = fn.readers.caffe2(path=data_path, name="r")
        images = fn.decoders.image(jpegs, device="mixed", output_type=types.GRAY,
                                   affine=bool(args.affine))
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, std=[255.0],
                                          output_layout="CHW")
        return fn.reshape(images, shape=[784]), labels.gpu()

    train = training(batch_size=200, num_threads=args.threads,
                     prefetch_queue_depth=args.prefetch,
                     data_path=os.path.join(args.data, "training"))
    val = validation(batch_size=200, num_threads=args.threads,
                     data_path=os.path.join(args.data, "testing"))
    model = init_model()
    for epoch in range(args.epochs):
        t0 = time.perf_counter()
        steps = 0
        copies = train._it.copies
        for batch in train:
            model = update(model, batch)
            steps += 1
        copies = train._it.copies - copies
        jax.block_until_ready(model)
        dt = time.perf_counter() - t0
        acc = accuracy(jax.tree.map(lambda x: jax.device_put(x, jax.devices()[0]), model), val)
        print("sluice-fed jax devices=%d threads=%d affine=%d epoch %d %.3fs steps %d copied %d "
              "acc %.4f" % (jax.device_count(), train._it.num_threads, args.affine, epoch, dt,
                            steps, copies, acc), flush=True)


if __name__ == "__main__":
    main()
