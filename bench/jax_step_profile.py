# SPDX-License-Identifier: Apache-2.0
"""Where a step of the sluice-fed JAX loop goes (bench/jax_epoch.py's loop): the time the iterator
waits for the library's batch, its own bookkeeping, the library's DLPack exports,
jax.dlpack.from_dlpack, the global array, and the jitted update's dispatch, per step over an epoch
(epochs after the first).

    PYTHONPATH=python:examples python3 bench/jax_step_profile.py --data data"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "python"), os.path.join(HERE, "..", "examples")]

import jax  # noqa: E402
import jax.dlpack  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec  # noqa: E402

import sluice.fn as fn  # noqa: E402
import sluice.types as types  # noqa: E402
from sluice import _c  # noqa: E402
import sluice.plugin.jax as sj  # noqa: E402
from model import init_model, update  # noqa: E402


class Timed:
    def __init__(self, f):
        self.f, self.s, self.n = f, 0.0, 0

    def __call__(self, *a, **k):
        t = time.perf_counter()
        try:
            return self.f(*a, **k)
        finally:
            self.s += time.perf_counter() - t
            self.n += 1


def import_cost(it, n):
    """The hand-over of one batch (held: the pipeline idles), n times, both ways, alternated in
    blocks: export, import, global array; microseconds per output."""
    taken = it._it.take()
    b = taken[0].value
    devs = it._jax_devices
    fast = sj._fast_import[0]
    for block in range(3):
        for way in ("jaxlib", "from_dlpack"):
            sj._fast_import[0] = fast if way == "jaxlib" else None
            t = time.perf_counter()
            for _ in range(n):
                parts = [[sj._Export(sj.c_export(b, o, 0), sj._dl_device(devs[0]))]
                         for o in range(2)]
                out = it._assemble(lambda o, d: parts[o][d], 1, exported=True)
                del out, parts
            us = 1e6 * (time.perf_counter() - t) / (2 * n)
            print("imports block %d %-11s %.1f us per output (export + import + global array)"
                  % (block, way, us), flush=True)
    sj._fast_import[0] = fast


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="data")
    ap.add_argument("--threads", type=lambda v: None if v == "auto" else int(v), default=None,
                    help="CPU threads per pipeline (default, or auto: the library's choice)")
    ap.add_argument("--cache", type=int, default=0,
                    help="the decoder's cache_size (MB): from epoch 1 on, no decoding")
    ap.add_argument("--imports", type=int, default=0,
                    help="instead: N hand-overs of one held batch, jaxlib's import against "
                         "jax.dlpack.from_dlpack, us per output")
    args = ap.parse_args()
    mesh = Mesh(np.array(jax.devices()).reshape(-1, 1), ("batch", "model"))
    sharding = NamedSharding(mesh, PartitionSpec("batch"))

    @sj.data_iterator(output_map=["images", "labels"], reader_name="r", sharding=sharding)
    def training(data_path, num_shards, shard_id):
        jpegs, labels = fn.readers.caffe2(path=data_path, random_shuffle=True, name="r",
                                          num_shards=num_shards, shard_id=shard_id)
        images = fn.decoders.image(jpegs, device="mixed", output_type=types.GRAY,
                                   cache_size=args.cache)
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, std=[255.0],
                                          output_layout="CHW")
        return fn.reshape(images, shape=[784]), fn.one_hot(labels.gpu(), num_classes=10)

    if args.imports:
        return import_cost(training(batch_size=200, num_threads=args.threads,
                                    data_path=os.path.join(args.data, "training")), args.imports)
    it = training(batch_size=200, num_threads=args.threads,
                  data_path=os.path.join(args.data, "training"))
    wait = Timed(_c.lib.sl_iter_next)  # the library's time: taking the batch,
    slices = Timed(_c.lib.sl_iter_wait)  # and waiting for it (in slices)
    _c.lib.sl_iter_next, _c.lib.sl_iter_wait = wait, slices
    nxt = Timed(it._it.take)
    it._it.take = nxt
    ex = Timed(sj.c_export)
    sj.c_export = ex
    dl = Timed(jax.dlpack.from_dlpack)
    sj.jax.dlpack.from_dlpack = dl
    mk = Timed(jax.make_array_from_single_device_arrays)
    sj.jax.make_array_from_single_device_arrays = mk
    upd = Timed(update)
    model = init_model()
    if os.environ.get("NO_GC"):  # to see what the cyclic garbage collector costs the loop
        import gc
        gc.collect()
        gc.freeze()
        gc.disable()
    for epoch in range(4):
        for t in (wait, slices, nxt, ex, dl, mk, upd):
            t.s = t.n = 0
        t0 = time.perf_counter()
        for batch in it:
            model = upd(model, batch)
        jax.block_until_ready(model)
        dt = time.perf_counter() - t0
        steps = upd.n
        us = lambda t: 1e6 * t.s / max(1, steps)  # noqa: E731
        print("cache %d threads %d epoch %d %.3fs, per step %.0f us: library wait %.0f, "
              "take() beyond it %.0f, exports %.0f (%d), from_dlpack %.0f (%d), make_array %.0f, "
              "update dispatch %.0f, rest %.0f"
              % (args.cache, it._it.num_threads, epoch, dt, 1e6 * dt / steps, us(wait) + us(slices),
                 us(nxt) - us(wait) - us(slices), us(ex), ex.n, us(dl), dl.n, us(mk), us(upd),
                 1e6 * dt / steps - us(nxt) - us(ex) - us(dl) - us(mk) - us(upd)), flush=True)


if __name__ == "__main__":
    main()
