# SPDX-License-Identifier: Apache-2.0
"""An iterator over several pipelines, as DALI's: each pipeline keeps its own seed (its batches
are those it gives run alone), and settings the iterator cannot give each pipeline its own value
of (num_threads, prefetch_queue_depth) are refused when they differ, not taken from the first.
The global batch is the pipelines' batch_size times the shards, by the library's rule for a
decorator's batch_size (the one `sluice run` applies), and one that passes a C int is refused."""

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.types as types
from conftest import LMDB
from sluice import pipeline_def
from sluice.plugin.numpy import DALIGenericIterator


@pipeline_def(batch_size=8, num_threads=2, device_id=None)
def shuffled(shard_id, num_shards):
    jpegs, labels = fn.readers.caffe2(path=LMDB, random_shuffle=True, initial_fill=64,
                                      shard_id=shard_id, num_shards=num_shards, name="r")
    images = fn.decoders.image(jpegs, output_type=types.GRAY)
    return fn.flip(images, horizontal=fn.random.coin_flip()), labels


def alone(shard_id, seed, steps):
    p = shuffled(shard_id, 2, seed=seed)
    return [tuple(np.array(x.as_array()) for x in p.run()) for _ in range(steps)]


@pytest.mark.parametrize("seeds", [(11, 12), (12, 11), (5, 5)])
def test_each_pipeline_keeps_its_seed(seeds):
    steps = 6
    want = [alone(d, seeds[d], steps) for d in range(2)]
    it = DALIGenericIterator([shuffled(d, 2, seed=seeds[d]) for d in range(2)], ["x", "y"],
                             reader_name="r")
    for s in range(steps):
        step = next(it)
        for d in range(2):  # the global batch: device 0's 8 samples, then device 1's
            assert (step["x"][8 * d:8 * d + 8] == want[d][s][0]).all(), (s, d)
            assert (step["y"][8 * d:8 * d + 8] == want[d][s][1]).all(), (s, d)
    if seeds[0] != seeds[1]:  # the two seeds really give other batches
        assert any((a[1] != b[1]).any() for a, b in zip(want[0], alone(0, seeds[1], steps)))


def test_a_pipeline_without_seed_draws_its_own():
    pipes = [shuffled(0, 2, seed=11), shuffled(1, 2)]
    DALIGenericIterator(pipes, ["x", "y"], reader_name="r")
    assert pipes[0].seed == 11 and pipes[1].seed >= 0


def test_global_order_needs_one_seed():
    pipes = [shuffled(d, 2, seed=11 + d) for d in range(2)]
    with pytest.raises(sluice.Error, match="global order with pipelines of different seeds"):
        DALIGenericIterator(pipes, ["x", "y"], reader_name="r", global_order=True)


@pytest.mark.parametrize("arg, a, b", [("num_threads", 2, 3), ("prefetch_queue_depth", 2, 3)])
def test_settings_that_differ_are_refused(arg, a, b):
    pipes = [shuffled(0, 2, **{arg: a}), shuffled(1, 2, **{arg: b})]
    with pytest.raises(ValueError, match="the pipelines' %s differ" % arg):
        DALIGenericIterator(pipes, ["x", "y"], reader_name="r")


def test_global_batch_is_the_librarys():
    from sluice.plugin._iterator import LAYOUT_SHARDED, global_batch
    assert global_batch(8, 2, 2, LAYOUT_SHARDED) == 16
    assert global_batch(8, 1, 4, LAYOUT_SHARDED) == 32  # one of four processes' shards
    it = DALIGenericIterator([shuffled(d, 2, seed=3) for d in range(2)], ["x", "y"],
                             reader_name="r")
    assert next(it)["x"].shape[0] == 16
    with pytest.raises(sluice.errors.InvalidArgumentError,
                       match="batch_size=1073741824 over 4 devices is too large"):
        global_batch(2**30, 4, 4, LAYOUT_SHARDED)


class _ShardPipe(sluice.pipeline.Pipeline):
    """The legacy form DALI's PyTorch example uses: a Pipeline subclass with define_graph, one
    per shard, handed to the iterator without build()."""

    def __init__(self, shard_id, num_shards):
        super().__init__(batch_size=4, num_threads=2, device_id=None, seed=3)
        self.input = sluice.ops.readers.Caffe2(path=LMDB, shard_id=shard_id,
                                               num_shards=num_shards)

    def define_graph(self):
        jpegs, labels = self.input(name="Reader")
        return labels


def test_unbuilt_subclass_pipelines_are_traced():
    pipes = [_ShardPipe(d, 2) for d in range(2)]
    pipes[0].build()  # as the example: only the first is built (for epoch_size)
    it = DALIGenericIterator(pipes, ["label"], reader_name="Reader")
    steps = [np.array(step["label"]).ravel() for step in it]
    assert len(steps) > 1
    alone = [_ShardPipe(d, 2) for d in range(2)]
    for got in steps:  # the global batch: shard 0's 4 samples, then shard 1's
        want = np.concatenate([np.array(p.run()[0].as_array()).ravel() for p in alone])
        np.testing.assert_array_equal(got, want)
