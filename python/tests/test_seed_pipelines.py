# SPDX-License-Identifier: Apache-2.0
"""The seed's pipelines written in Python give the same batches, byte for byte, and the same record
keys as the same pipeline text run by `sluice run --dump --trace`."""

import glob
import os

import numpy as np
import pytest

import sluice.fn as fn
import sluice.types as types
from conftest import LMDB, PIPELINES, run_tool
from sluice import pipeline_def
from sluice.plugin.numpy import DALIGenericIterator

image_size = 28
num_classes = 10


def training(data_path, num_shards, shard_id):
    jpegs, labels = fn.readers.caffe2(path=data_path, random_shuffle=True,
                                      name="mnist_caffe2_reader", num_shards=num_shards,
                                      shard_id=shard_id)
    images = fn.decoders.image(jpegs, device="mixed", output_type=types.GRAY)
    images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, std=[255.0],
                                      output_layout="CHW")
    images = fn.reshape(images, shape=[image_size * image_size])
    labels = labels.gpu()
    labels = fn.one_hot(labels, num_classes=num_classes)
    return images, labels


def read_trace(path):
    # the first line is the "# epoch\tstep\tdevice\tslot\tkey" header
    rows = [line.rstrip("\n").split("\t") for line in open(path) if not line.startswith("#")]
    return [(int(e), int(s), int(d), int(k), key) for e, s, d, k, key in rows]


@pytest.mark.parametrize("devices", [1, 2])
def test_training_pipeline_matches_text(tmp_path, devices):
    B = 32
    run_tool("run", os.path.join(PIPELINES, "seed_training_sharding.py"), "--arg",
             "data_path=" + LMDB, "--arg", "image_size=28", "--arg", "num_classes=10",
             "--devices", "cpu:%d" % devices, "--batch-size", B * devices, "--epochs", 2,
             "--seed", 7, "--dump", tmp_path / "dump", "--trace", tmp_path / "trace")
    trace = read_trace(tmp_path / "trace")
    pipes = [pipeline_def(training, batch_size=B, num_threads=2, device_id=None, seed=7)(
        data_path=LMDB, num_shards=devices, shard_id=d) for d in range(devices)]
    it = DALIGenericIterator(pipes, ["images", "labels"], reader_name="mnist_caffe2_reader")
    assert len(it) == 256 // (B * devices) + (256 % (B * devices) > 0)
    steps = []
    for epoch in range(2):
        for step, batch in enumerate(it):
            for name in ("images", "labels"):
                want = np.concatenate([np.load(tmp_path / "dump" / ("%s_%d_%d_%d.npy" % (
                    name, epoch, step, d))) for d in range(devices)])
                assert batch[name].dtype == want.dtype
                assert batch[name].shape == want.shape
                assert batch[name].tobytes() == want.tobytes(), (name, epoch, step)
            steps.append((epoch, step))
        assert step + 1 == len(it)
    # as many steps as the text's run traced, and as many dumps
    assert steps == sorted({(e, s) for e, s, _, _, _ in trace})
    n_dumps = len(glob.glob(str(tmp_path / "dump" / "images_*.npy")))
    assert n_dumps == len(steps) * devices


def test_validation_pipeline_keys_match_trace(tmp_path):
    run_tool("run", os.path.join(PIPELINES, "seed_validation.py"), "--arg", "data_path=" + LMDB,
             "--arg", "image_size=28", "--devices", "cpu", "--batch-size", 50, "--epochs", 1,
             "--dump", tmp_path / "dump", "--trace", tmp_path / "trace")
    trace = read_trace(tmp_path / "trace")

    @pipeline_def(batch_size=50, num_threads=2, device_id=None)
    def validation(data_path):
        jpegs, labels = fn.readers.caffe2(path=data_path, random_shuffle=False,
                                          name="mnist_caffe2_reader")
        images = fn.decoders.image(jpegs, device="mixed", output_type=types.GRAY)
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, std=[255.0],
                                          output_layout="CHW")
        images = fn.reshape(images, shape=[image_size * image_size])
        labels = labels.gpu()
        return images, labels

    pipe = validation(LMDB)
    pipe.build()
    assert pipe.reader_meta("mnist_caffe2_reader")["epoch_size"] == 256
    steps = (256 + 49) // 50
    for step in range(steps):
        images, labels = pipe.run()
        want_keys = [key for e, s, d, k, key in trace if s == step]
        assert images.keys() == want_keys
        for name, out in (("images", images), ("labels", labels)):
            want = np.load(tmp_path / "dump" / ("%s_0_%d_0.npy" % (name, step)))
            assert np.from_dlpack(out).tobytes() == want.tobytes()
            assert out.as_array().shape == want.shape
