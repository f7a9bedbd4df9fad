# SPDX-License-Identifier: Apache-2.0
"""Batches/s of a CPU pipeline whose batches are small next to its thread count (the thread pool's
wake-up cost shows there): an external source of B random side x side x 3 uint8 images, resize to
3/4 of the side, gaussian_blur (window 5), flip, cast to float; T threads, 20 warm-up batches, then
300 timed.

    python3 bench/small_batches.py B T SIDE      e.g. 4 15 256 (fewer samples than threads)"""

import sys
import time

import numpy as np

import sluice
import sluice.fn as fn
import sluice.types as types


def main():
    batch, threads, side = (int(x) for x in sys.argv[1:4])
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 255, (side, side, 3), dtype=np.uint8) for _ in range(batch)]

    @sluice.pipeline_def(batch_size=batch, num_threads=threads, device_id=None,
                         prefetch_queue_depth=2)
    def pipe():
        x = fn.external_source(source=lambda: images, batch=True, layout="HWC")
        y = fn.resize(x, resize_x=side * 3 // 4, resize_y=side * 3 // 4)
        y = fn.gaussian_blur(y, window_size=5)
        y = fn.flip(y, horizontal=1)
        return fn.cast(y, dtype=types.FLOAT)

    p = pipe()
    p.build()
    for _ in range(20):
        p.run()
    n = 300
    t = time.perf_counter()
    for _ in range(n):
        p.run()
    print("%d batches/s" % (n / (time.perf_counter() - t)))


if __name__ == "__main__":
    main()
