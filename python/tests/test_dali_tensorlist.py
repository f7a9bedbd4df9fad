# SPDX-License-Identifier: Apache-2.0
"""What pipe.run() hands out, used as DALI's TensorListCPU/GPU are: len(), iteration, indexing,
at(), as_array(), as_tensor(), as_reshaped_tensor(), as_cpu(), layout(), dtype, shape() of a list
and of a sample, compared with numpy."""

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.types as types

RNG = np.random.default_rng(3)


def run(samples, **kw):
    p = sluice.Pipeline(batch_size=len(samples), num_threads=1, device_id=None)
    with p:
        p.set_outputs(fn.external_source(source=lambda: samples, **kw))
    (out,) = p.run()
    return p, out


def test_dense_batch():
    samples = [RNG.integers(0, 9, (4, 5, 3), dtype=np.uint8) for _ in range(3)]
    p, tl = run(samples, layout="HWC")
    assert len(tl) == 3 and tl.dtype == types.UINT8 and tl.layout() == "HWC"
    assert tl.is_dense_tensor()
    assert repr(tl) == "TensorListCPU(3 samples, dtype=UINT8, shape=(3, 4, 5, 3), layout='HWC')"
    np.testing.assert_array_equal(tl.as_array(), np.stack(samples))
    np.testing.assert_array_equal(np.asarray(tl.as_tensor()), np.stack(samples))
    assert tl.as_cpu() is tl
    assert tl.shape() == [[4, 5, 3]] * 3
    for i, t in enumerate(tl):
        assert t.shape() == [4, 5, 3] and t.layout() == "HWC"
        np.testing.assert_array_equal(np.array(t), samples[i])
        np.testing.assert_array_equal(tl.at(i), samples[i])
    np.testing.assert_array_equal(np.array(tl[-1]), samples[-1])
    assert [np.array(t).sum() for t in tl[1:]] == [s.sum() for s in samples[1:]]
    r = tl.as_reshaped_tensor([3, 60])
    np.testing.assert_array_equal(np.array(r), np.stack(samples).reshape(3, 60))
    assert tl.data_ptr() == tl.as_tensor().data_ptr()
    with pytest.raises(ValueError):
        tl.as_reshaped_tensor([7, 7])
    with pytest.raises(IndexError):
        tl[3]


def test_ragged_batch():
    samples = [RNG.random((n, 2), dtype=np.float32) for n in (1, 3, 2)]
    p, tl = run(samples)
    assert not tl.is_dense_tensor()
    assert tl.shape() == [[1, 2], [3, 2], [2, 2]]
    assert repr(tl) == "TensorListCPU(3 samples, dtype=FLOAT, shapes=[(1, 2), (3, 2), (2, 2)])"
    for i in range(3):
        np.testing.assert_array_equal(tl.at(i), samples[i])
    with pytest.raises(ValueError, match="different shapes"):
        tl.as_array()
