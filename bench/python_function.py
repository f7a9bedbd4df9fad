# SPDX-License-Identifier: Apache-2.0
"""fn.python_function's speed against the same numpy function called from a plain Python loop
and from a torch DataLoader with worker processes, on 224x224x3 uint8 images.

    /usr/bin/python3 bench/python_function.py [--images 512] [--runs 3]

Every side applies f to the same pre-made images (no decoding: the function is the work) and
hands out batches of 32; sluice's side is external_source -> python_function, run with the
pipeline's default thread count, then 2 and 15 threads, and an external_source-only pipeline
gives the cost around the function. Prints images/s (median of the runs, interleaved) and the
load average."""

import argparse
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
os.environ.setdefault("SLUICE_LIBRARY", os.path.join(HERE, "..", "build", "libsluice.so"))

import sluice  # noqa: E402
import sluice.fn as fn  # noqa: E402

B = 32


def f(x):
    """a typical numpy augmentation: contrast and brightness, then clip (numpy releases the GIL
    inside its array loops)"""
    y = x.astype(np.float32)
    y *= 1.3
    y -= 20.0
    np.clip(y, 0, 255, out=y)
    return y.astype(np.uint8)


def images(n):
    rng = np.random.default_rng(0)
    return [rng.integers(0, 255, (224, 224, 3), dtype=np.uint8) for _ in range(n)]


def plain_loop(imgs):
    t = time.perf_counter()
    for k in range(0, len(imgs), B):
        np.stack([f(x) for x in imgs[k:k + B]])
    return len(imgs) / (time.perf_counter() - t)


def dataloader(imgs, workers):
    import torch.utils.data as tud

    class DS(tud.Dataset):
        def __len__(self):
            return len(imgs)

        def __getitem__(self, i):
            return f(imgs[i])

    dl = tud.DataLoader(DS(), batch_size=B, num_workers=workers, persistent_workers=False)
    t = time.perf_counter()
    for _ in dl:
        pass
    return len(imgs) / (time.perf_counter() - t)


def pipeline(imgs, threads, with_function=True):
    @sluice.pipeline_def(batch_size=B, num_threads=threads, device_id=None)
    def pipe():
        x = fn.external_source(source=lambda info: imgs[info.idx_in_epoch % len(imgs)],
                               batch=False, layout="HWC")
        return fn.python_function(x, function=f) if with_function else x

    p = pipe()
    p.build()
    p.run()  # the first batch: start-up
    t = time.perf_counter()
    for _ in range(len(imgs) // B - 1):
        p.run()
    rate = (len(imgs) - B) / (time.perf_counter() - t)
    p.close()
    return rate


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", type=int, default=512)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    imgs = images(a.images)
    default_threads = sluice.Pipeline(batch_size=B, device_id=None).num_threads
    sides = {
        "plain loop": lambda: plain_loop(imgs),
        "DataLoader, 2 workers": lambda: dataloader(imgs, 2),
        "sluice python_function, %d threads (default)" % default_threads:
            lambda: pipeline(imgs, None),
        "sluice python_function, 2 threads": lambda: pipeline(imgs, 2),
        "sluice python_function, 15 threads": lambda: pipeline(imgs, 15),
        "sluice external_source only, 2 threads": lambda: pipeline(imgs, 2, False),
    }
    got = {k: [] for k in sides}
    for _ in range(a.runs):
        for k, run in sides.items():
            got[k].append(run())
    print("load average: %.2f %.2f %.2f, %d CPUs" % (os.getloadavg() + (os.cpu_count(),)))
    base = statistics.median(got["plain loop"])
    for k, v in got.items():
        m = statistics.median(v)
        print("%-48s %8.0f images/s  (x%.2f the plain loop)" % (k, m, m / base))


if __name__ == "__main__":
    main()
