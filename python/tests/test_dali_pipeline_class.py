# SPDX-License-Identifier: Apache-2.0
"""DALI's Pipeline class as programs use it: Pipeline.current() inside a definition,
exec_async/exec_pipelined=False, `with pipe:` + set_outputs(), the scheduling calls
(schedule_run, share_outputs, release_outputs, outputs), epoch_size(), and serialize(), which
sluice refuses with the reason."""

import numpy as np
import pytest

import sluice
import sluice.fn as fn
from conftest import LMDB
from sluice import Pipeline, pipeline_def


def test_current_inside_a_definition():
    seen = []

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=1)
    def pipe():
        cur = Pipeline.current()
        seen.append(cur)
        # DALI's examples shard by the pipeline's device
        jpegs, labels = fn.readers.caffe2(path=LMDB, shard_id=cur.device_id or 0, num_shards=1)
        return labels

    p = pipe()
    assert seen == [p] and Pipeline.current() is None
    p.build()
    (labels,) = p.run()
    assert len(labels) == 4


@pytest.mark.parametrize("exec_async,exec_pipelined", [(False, False), (False, True),
                                                       (True, False)])
def test_synchronous_executor_flags_give_the_same_batches(exec_async, exec_pipelined):
    def make(**kw):
        p = Pipeline(batch_size=8, num_threads=1, device_id=None, seed=5, **kw)
        with p:
            jpegs, labels = fn.readers.caffe2(path=LMDB, random_shuffle=True)
            p.set_outputs(labels, fn.random.uniform())
        p.build()
        return p

    a = make(exec_async=exec_async, exec_pipelined=exec_pipelined)
    b = make()
    assert a.exec_async == exec_async and a.exec_pipelined == exec_pipelined
    for _ in range(4):
        for x, y in zip(a.run(), b.run()):
            np.testing.assert_array_equal(x.as_array(), y.as_array())


def test_scheduling_calls():
    p = Pipeline(batch_size=4, num_threads=1, device_id=None, seed=2)
    with p:
        p.set_outputs(fn.external_source(source=lambda i: [np.full(2, i, np.int32)] * 4))
    p.schedule_run()
    (a,) = p.share_outputs()
    assert (a.as_array() == 0).all()
    p.release_outputs()
    p.schedule_run()
    (b,) = p.outputs()
    assert (b.as_array() == 1).all()
    (c,) = p.run()
    assert (c.as_array() == 2).all()


def test_epoch_size():
    p = Pipeline(batch_size=4, num_threads=1, device_id=None)
    with p:
        jpegs, labels = fn.readers.caffe2(path=LMDB, name="Reader")
        p.set_outputs(labels)
    p.build()
    assert p.epoch_size("Reader") == 256
    assert p.epoch_size() == {"Reader": 256}


def test_serialize_is_refused_with_the_reason():
    p = Pipeline(batch_size=1, device_id=None)
    with pytest.raises(sluice.NotSupportedError, match="serialize"):
        p.serialize()
    with pytest.raises(sluice.NotSupportedError, match="deserialize"):
        Pipeline.deserialize(serialized_pipeline=b"")


def test_read_only_properties():
    p = Pipeline(batch_size=6, num_threads=1, device_id=None, seed=3,
                 prefetch_queue_depth={"cpu_size": 3, "gpu_size": 2})
    with p:
        jpegs, labels = fn.readers.caffe2(path=LMDB)
        p.set_outputs(jpegs, labels)
    assert p.max_batch_size == 6 and p.num_outputs == 2
    assert (p.cpu_queue_size, p.gpu_queue_size) == (3, 2)
    assert not p.enable_checkpointing and not p.is_restored_from_checkpoint()
    p.build()
    p.run()
    q = Pipeline(batch_size=6, num_threads=1, device_id=None, seed=3, checkpoint=p.checkpoint())
    assert q.is_restored_from_checkpoint()


def test_default_cuda_stream_priority_is_checked_and_kept():
    """DALI's default_cuda_stream_priority: an int, kept on the pipeline (a CPU pipeline makes no
    stream, so any int builds there); anything else is refused where it is given."""
    p = Pipeline(batch_size=2, num_threads=1, device_id=None, default_cuda_stream_priority=-3)
    assert p.default_cuda_stream_priority == -3
    with p:
        p.set_outputs(fn.random.uniform())
    p.build()
    assert len(p.run()[0]) == 2
    for bad in ("high", 1.5, None, 2**40):
        with pytest.raises(sluice.errors.InvalidArgumentError, match="default_cuda_stream_priority"):
            Pipeline(batch_size=2, device_id=None, default_cuda_stream_priority=bad)


@pytest.mark.gpu
def test_default_cuda_stream_priority_on_the_gpu():
    """On a GPU pipeline the priority reaches its stream: -1 (within every recent GPU's range)
    runs, through an iterator too; one far outside the device's range fails the build, naming
    the argument."""
    from conftest import gpu_or_skip
    gpu_or_skip()
    from sluice.plugin.numpy import DALIGenericIterator

    def make(prio):
        p = Pipeline(batch_size=4, num_threads=2, device_id=0, seed=3,
                     default_cuda_stream_priority=prio)
        with p:
            jpegs, labels = fn.readers.caffe2(path=LMDB)
            p.set_outputs(fn.decoders.image(jpegs, device="mixed"), labels)
        return p

    p = make(-1)
    p.build()
    images, labels = p.run()
    assert len(images) == 4 and len(labels) == 4
    out = next(iter(DALIGenericIterator(make(-1), ["images", "labels"])))
    assert out["images"].shape[0] == 4
    with pytest.raises(sluice.errors.Error, match="default_cuda_stream_priority"):
        make(-1000).build()
