# SPDX-License-Identifier: Apache-2.0
"""DALI's pipeline debug mode (sluice.pipeline.experimental.pipeline_def(debug=True)), in the
forms DALI's debug-mode tutorial uses: the definition runs at every run(), op outputs are
DataNodeDebug holding their batch (print it, .get() it, look at it with numpy), Python between
the ops may work out arguments from the data; the batches equal the standard mode's where the
ops are deterministic or seeded."""

import numpy as np
import pytest

import sluice.fn as fn
import sluice.types as types
from conftest import LMDB
from sluice import errors
from sluice.pipeline.experimental import pipeline_def
from sluice.tensors import TensorListCPU

seen = []


@pipeline_def(batch_size=4, num_threads=2, device_id=None, seed=3)
def rotated():
    jpegs, labels = fn.readers.caffe2(path=LMDB)
    images = fn.decoders.image(jpegs, output_type=types.GRAY)
    seen.append(images)
    flipped = fn.flip(images, horizontal=fn.random.coin_flip(seed=11))
    return fn.rotate(flipped, angle=10.0, fill_value=0) * 2, labels


def batches(pipe, n):
    pipe.build()
    return [[[np.array(t.at(i)) for i in range(len(t))] for t in pipe.run()] for _ in range(n)]


def test_debug_mode_gives_the_standard_modes_batches():
    seen.clear()
    debug = batches(rotated(debug=True), 3)
    assert len(seen) == 3  # the definition ran at every run()
    node = seen[-1]
    assert type(node).__name__ == "DataNodeDebug" and node.device == "cpu"
    data = node.get()
    assert isinstance(data, TensorListCPU) and len(data) == 4
    assert "DataNodeDebug" in repr(node) and "TensorListCPU" in repr(node)
    seen.clear()
    standard = batches(rotated(), 3)
    assert type(seen[0]).__name__ == "DataNode"  # traced once, symbolic
    for d, s in zip(debug, standard):
        for out_d, out_s in zip(d, s):
            for a, b in zip(out_d, out_s):
                np.testing.assert_array_equal(a, b)


def test_python_between_the_ops_sees_the_data_and_may_use_it():
    looked = []

    @pipeline_def(batch_size=3, num_threads=1, device_id=None, debug=True)
    def pipe():
        jpegs, labels = fn.readers.caffe2(path=LMDB, random_shuffle=True, seed=5)
        images = fn.decoders.image(jpegs, output_type=types.GRAY)
        arrays = [np.array(images.get().at(i)) for i in range(3)]
        looked.append([int(a.sum()) for a in arrays])
        # an argument worked out from this batch's data: the crop op is made again with it
        side = min(a.shape[0] for a in arrays) - len(looked) - 1
        return fn.crop(images, crop=(side, side)), images

    p = pipe()
    p.build()
    for it in range(1, 4):
        crops, images = p.run()
        for i in range(3):
            full = np.array(images.at(i))
            side = 28 - it - 1
            assert np.array(crops.at(i)).shape[:2] == (side, side)
            assert int(full.sum()) == looked[-1][i]  # what Python saw is what came out
    p.close()


def test_an_array_argument_worked_out_each_iteration_is_used():
    """A matrix computed in the definition (numpy, from the iteration) reaches the op each time:
    the op is made again when the array's values change, not only its shape."""
    k = []

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, debug=True)
    def pipe():
        k.append(len(k))
        x = fn.external_source(source=lambda: [np.arange(6, dtype=np.float32)] * 2)
        return x * types.Constant(np.full(6, len(k), np.float32))

    p = pipe()
    for it in range(1, 4):
        (y,) = p.run()
        np.testing.assert_array_equal(y.at(0), np.arange(6) * it)


def test_subscripts_expressions_and_copies_on_debug_nodes():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None, debug=True)
    def pipe():
        x = fn.external_source(source=lambda: [np.arange(12, dtype=np.int32).reshape(3, 4)] * 2)
        y = (x[1:, ::2] + 1).gpu().cpu()
        return y, -x

    y, n = pipe().run()
    np.testing.assert_array_equal(y.at(1), np.arange(12).reshape(3, 4)[1:, ::2] + 1)
    np.testing.assert_array_equal(n.at(0), -np.arange(12).reshape(3, 4))


def test_what_debug_mode_refuses():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None, debug=True)
    def p():
        jpegs, labels = fn.readers.caffe2(path=LMDB, name="Reader")
        return labels

    pipe = p()
    with pytest.raises(errors.NotSupportedError, match="epoch_size.. in debug mode"):
        pipe.epoch_size("Reader")

    @pipeline_def(enable_conditionals=True, batch_size=2, device_id=None)
    def conditional():
        return fn.random.uniform()

    with pytest.raises(errors.NotSupportedError, match="debug=True with enable_conditionals"):
        conditional(debug=True)

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, debug=True)
    def not_an_op():
        return np.zeros(3)

    with pytest.raises(errors.ArgumentTypeError, match="output 0 of the pipeline is a ndarray"):
        not_an_op().run()

    n = []

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, debug=True)
    def changing_reader():
        n.append(1)
        jpegs, labels = fn.readers.caffe2(path=LMDB, random_shuffle=len(n) > 1)
        return labels

    pipe = changing_reader()
    pipe.run()
    with pytest.raises(errors.InvalidArgumentError, match="the same ops in the same order"):
        pipe.run()


def test_an_ops_error_names_it():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None, debug=True)
    def pipe():
        x = fn.external_source(source=lambda: [np.zeros((4, 4, 3), np.uint8)] * 2, layout="HWC")
        return fn.crop(x, crop=(8, 8), out_of_bounds_policy="error")

    with pytest.raises(errors.Error, match="crop"):
        pipe().run()
