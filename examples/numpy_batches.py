# SPDX-License-Identifier: Apache-2.0
"""Batches of a sluice pipeline as NumPy arrays: the seed's validation pipeline over a Caffe2 LMDB,
plus a pipeline fed by Python code through fn.external_source. Usage:

    python3 examples/numpy_batches.py [LMDB]     (default: the LMDB fixture in tests/fixtures)
"""

import os
import sys

import numpy as np

import sluice.fn as fn
import sluice.types as types
from sluice import pipeline_def
from sluice.plugin.numpy import DALIGenericIterator

HERE = os.path.dirname(os.path.abspath(__file__))


@pipeline_def(batch_size=64, num_threads=2, device_id=None)
def mnist(path):
    jpegs, labels = fn.readers.caffe2(path=path, name="reader")
    images = fn.decoders.image(jpegs, output_type=types.GRAY)
    images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, std=[255.0], output_layout="CHW")
    return images, labels


@pipeline_def(batch_size=4, num_threads=2, device_id=None)
def squares():
    # each sample made by Python: (3, 3) arrays holding the sample's index, then squared
    x = fn.external_source(source=lambda info: np.full((3, 3), info.idx_in_epoch, np.float32),
                           batch=False)
    return x * x


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "tests", "fixtures",
                                                               "caffe2-fmnist-256")
    it = DALIGenericIterator([mnist(path)], ["images", "labels"], reader_name="reader")
    counts = np.zeros(10, np.int64)
    for batch in it:
        images, labels = batch["images"], batch["labels"]
        assert images.shape[1:] == (1, 28, 28) and images.dtype == np.float32
        assert 0.0 <= images.min() and images.max() <= 1.0
        counts += np.bincount(labels.reshape(-1), minlength=10)
    print("%d batches of %s; label counts %s" % (len(it), images.shape, counts.tolist()))
    assert counts.sum() == len(it) * 64

    pipe = squares()
    (out,) = pipe.run()
    a = np.from_dlpack(out)  # no copy: a view of the pipeline's buffer
    print("external_source batch:", a[:, 0, 0].tolist())
    assert a[:, 0, 0].tolist() == [0.0, 1.0, 4.0, 9.0]


if __name__ == "__main__":
    main()
