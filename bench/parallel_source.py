# SPDX-License-Identifier: Apache-2.0
"""fn.external_source(parallel=True) against the same source run serially, on a slow numpy
per-sample source (DALI's parallel external source, sample mode).

    /usr/bin/python3 bench/parallel_source.py [--batches 24] [--runs 3] [--workers 2] [--io-ms 0]

The source makes each 128x128x3 uint8 sample from its SampleInfo alone (a seeded generator, then
float32 arithmetic held in Python-level loops so that it keeps the GIL, as much Python data code
does): the serial pipeline calls it on its CPU stage thread, the parallel one in --workers worker
processes (fork). --io-ms adds a wait of that many milliseconds to each sample (time.sleep: a
read from a slow disk or the network), which worker processes overlap whatever the load on the
CPUs. Batches of 16; samples/s over --batches batches after a first one (the workers'
start is not counted), median of --runs interleaved runs; both sides' batches are checked equal.
Prints the load average too: the figure moves with what else the machine runs."""

import argparse
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
os.environ.setdefault("SLUICE_LIBRARY", os.path.join(HERE, "..", "build", "libsluice.so"))

import sluice.fn as fn  # noqa: E402
from sluice import pipeline_def  # noqa: E402

B = 16


IO_S = 0.0


def slow_sample(info):
    """A slow sample: 40 passes of float work over rows, in Python-level loops (the GIL held)."""
    if IO_S:
        time.sleep(IO_S)
    rng = np.random.default_rng(info.idx_in_epoch)
    img = rng.integers(0, 255, (128, 128, 3), dtype=np.uint8).astype(np.float32)
    for _ in range(40):
        for r in range(0, 128, 8):
            img[r:r + 8] = np.sqrt(img[r:r + 8] * 1.01 + 1.0) * 15.9
    return np.clip(img, 0, 255).astype(np.uint8)


def one_run(parallel, workers, batches):
    @pipeline_def(batch_size=B, num_threads=2, device_id=None, py_num_workers=workers,
                  py_start_method="fork")
    def p():
        return fn.external_source(slow_sample, batch=False, parallel=parallel)
    pipe = p()
    pipe.build()
    pipe.run()  # the start (and the workers') not counted
    t0 = time.perf_counter()
    last = None
    for _ in range(batches):
        (out,) = pipe.run()
        last = out.as_array().copy()
    dt = time.perf_counter() - t0
    pipe.close()
    return batches * B / dt, last


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, default=24)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--io-ms", type=float, default=0.0)
    a = ap.parse_args()
    global IO_S
    IO_S = a.io_ms / 1000.0
    rates = {False: [], True: []}
    for _ in range(a.runs):
        got = {}
        for par in (False, True):
            r, got[par] = one_run(par, a.workers, a.batches)
            rates[par].append(r)
        assert (got[False] == got[True]).all(), "the parallel batches differ from the serial"
    s, p = statistics.median(rates[False]), statistics.median(rates[True])
    print("serial external_source:              %8.1f samples/s" % s)
    print("parallel, %d worker processes (fork): %8.1f samples/s  (%.2fx)" % (a.workers, p, p / s))
    print("load average: %.1f %.1f %.1f" % os.getloadavg())


if __name__ == "__main__":
    main()
