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
