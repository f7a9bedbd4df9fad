# SPDX-License-Identifier: Apache-2.0
"""DataNode and external_source as DALI has them: num_outputs=1 gives a list of one,
DataNode.shape() is each sample's shape (compared with numpy), and 0-d samples stay 0-d."""

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.types as types


def one_batch(outputs_fn, batch_size=3):
    p = sluice.Pipeline(batch_size=batch_size, num_threads=1, device_id=None, seed=1)
    with p:
        outs = outputs_fn()
        p.set_outputs(*outs)
    out = p.run()
    p.close()
    return out


RNG = np.random.default_rng(2)
SAMPLES = [RNG.random((2, 3, 4), dtype=np.float32), RNG.random((5, 1, 4), dtype=np.float32),
           RNG.random((1, 7, 4), dtype=np.float32)]


def test_num_outputs_one_is_a_list_of_one():
    got = []

    def define():
        outs = fn.external_source(source=lambda: (SAMPLES,), num_outputs=1)
        got.append(outs)
        return outs

    (x,) = one_batch(define)
    assert isinstance(got[0], list) and len(got[0]) == 1
    for i in range(3):
        np.testing.assert_array_equal(x.at(i), SAMPLES[i])


def test_without_num_outputs_one_node():
    def define():
        x = fn.external_source(source=lambda: SAMPLES)
        assert isinstance(x, sluice.DataNode)
        return (x,)
    one_batch(define)


def test_shape_as_numpy():
    (s64, s32) = one_batch(lambda: (fn.external_source(source=lambda: SAMPLES).shape(),
                                    fn.external_source(source=lambda: SAMPLES).shape(
                                        dtype=types.INT32)))
    assert s64.dtype == types.INT64 and s32.dtype == types.INT32
    for i in range(3):
        np.testing.assert_array_equal(s64.at(i), np.array(SAMPLES[i].shape))
        np.testing.assert_array_equal(s32.at(i), np.array(SAMPLES[i].shape))


def test_shape_of_an_op_output():
    imgs = [np.zeros((4, 6, 3), np.uint8), np.zeros((8, 2, 3), np.uint8), np.zeros((2, 2, 3),
                                                                                 np.uint8)]
    (s,) = one_batch(lambda: (fn.resize(fn.external_source(source=lambda: imgs, layout="HWC"),
                                        resize_shorter=4).shape(),))
    assert [list(s.at(i)) for i in range(3)] == [[4, 6, 3], [16, 4, 3], [4, 4, 3]]


def test_zero_d_samples_stay_zero_d():
    (x,) = one_batch(lambda: (fn.external_source(
        source=lambda: [np.float32(i) for i in range(3)]),))
    assert [x.at(i).shape for i in range(3)] == [(), (), ()]
    assert [float(x.at(i)) for i in range(3)] == [0.0, 1.0, 2.0]


def test_node_methods():
    def define():
        x = fn.external_source(source=lambda: SAMPLES)
        assert x.device == "cpu" and isinstance(x.name, str)
        assert x.gpu().device in ("cpu", "gpu")
        with pytest.raises(TypeError):
            bool(x)
        return (x + 1, -x, 2 * x - x / 4)
    a, b, c = one_batch(define)
    np.testing.assert_allclose(a.at(0), SAMPLES[0] + 1)
    np.testing.assert_allclose(b.at(1), -SAMPLES[1])
    np.testing.assert_allclose(c.at(2), 2 * SAMPLES[2] - SAMPLES[2] / 4, rtol=1e-6)
