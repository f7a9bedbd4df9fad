# SPDX-License-Identifier: Apache-2.0
"""global_order=True in the Python iterators: the same global batches (images flipped at random,
labels) for one pipeline of 24 and for three of 8 (shards 0..2), over two epochs of the 256-record
fixture; and a checkpoint of the three resumes on the one."""

import numpy as np

import sluice.fn as fn
import sluice.types as types
from conftest import LMDB
from sluice import pipeline_def
from sluice.plugin.numpy import DALIGenericIterator


@pipeline_def(num_threads=2, device_id=None, seed=5)
def shard(path, num_shards, shard_id):
    jpegs, labels = fn.readers.caffe2(path=path, num_shards=num_shards, shard_id=shard_id,
                                      random_shuffle=True, name="r")
    images = fn.decoders.image(jpegs, output_type=types.GRAY)
    return fn.flip(images, horizontal=fn.random.coin_flip()), labels


def iterator(n, checkpoint=None):
    pipes = [shard(LMDB, n, i, batch_size=24 // n) for i in range(n)]
    return DALIGenericIterator(pipes, ["images", "labels"], reader_name="r", global_order=True,
                               checkpoint=checkpoint)


def steps(it, count):
    out = []
    while len(out) < count:
        for b in it:
            out.append((b["images"].copy(), b["labels"].copy()))
            if len(out) == count:
                break
    return out


def test_same_global_batches():
    one = iterator(1)
    assert len(one) == 11
    ref = steps(one, 22)
    three = iterator(3)
    assert len(three) == 11
    got = steps(three, 22)
    for k, ((a, la), (b, lb)) in enumerate(zip(ref, got)):
        assert a.shape == (24, 28, 28, 1) and b.shape == a.shape, k
        assert a.tobytes() == b.tobytes(), k
        assert np.array_equal(la, lb), k
    # DALI's order differs on three shards (each reads its own)
    dali = [shard(LMDB, 3, i, batch_size=8) for i in range(3)]
    first = next(iter(DALIGenericIterator(dali, ["images", "labels"], reader_name="r")))
    assert first["images"].tobytes() != ref[0][0].tobytes()


def test_resume_on_another_count():
    ref = steps(iterator(1), 22)
    three = iterator(3)
    steps(three, 4)
    ck = three.checkpoints()[0] if isinstance(three.checkpoints(), list) else three.checkpoints()
    rest = steps(iterator(1, checkpoint=ck), 18)
    for k, (a, b) in enumerate(zip(ref[4:], rest)):
        assert a[0].tobytes() == b[0].tobytes(), k + 4
