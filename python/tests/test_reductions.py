# SPDX-License-Identifier: Apache-2.0
"""fn.reductions.* against numpy: every reduction over all axes, given axes (negative too),
axis_names, axes=[] and keep_dims; DALI's default output types and dtype; exact integer sums that
wrap to a narrow dtype; variance and std_dev around a given mean with ddof; every input dtype;
empty and 0-d samples; and the errors."""

import numpy as np
import pytest

import sluice.fn as fn
import sluice.types as types
from sluice import errors, pipeline_def

INTS = [np.uint8, np.int8, np.uint16, np.int16, np.int32, np.int64, np.uint32, np.uint64]
FLOATS = [np.float16, np.float32, np.float64]


def run(make, xs, layout=None):
    @pipeline_def(batch_size=len(xs), num_threads=3, device_id=None)
    def pipe():
        kw = {"layout": layout} if layout else {}
        return make(fn.external_source(source=lambda: xs, **kw))

    out = pipe().run()
    out = out if isinstance(out, (list, tuple)) else [out]
    return [[np.array(o.at(i)) for i in range(len(xs))] for o in out], out


def data(rng, dtype, shapes):
    if np.dtype(dtype).kind == "f":
        return [rng.uniform(-50, 50, s).astype(dtype) for s in shapes]
    info = np.iinfo(dtype)
    lo, hi = max(int(info.min), -1000), min(int(info.max), 1000)
    return [rng.integers(lo, hi, s, endpoint=True).astype(dtype) for s in shapes]


SHAPES = [(4, 5, 3), (1, 7, 3), (6, 2, 3)]


@pytest.mark.parametrize("dtype", INTS + FLOATS)
def test_every_reduction_every_dtype(dtype):
    rng = np.random.default_rng(11)
    xs = data(rng, dtype, SHAPES)
    (s, me, mn, mx, msq, rms), _ = run(lambda x: (
        fn.reductions.sum(x), fn.reductions.mean(x), fn.reductions.min(x), fn.reductions.max(x),
        fn.reductions.mean_square(x), fn.reductions.rms(x)), xs)
    kind = np.dtype(dtype).kind
    sum_t = {"u": np.uint64, "i": np.int64}.get(kind, np.float32 if dtype == np.float16 else dtype)
    for i, x in enumerate(xs):
        x64 = x.astype(np.float64)
        assert s[i].shape == () and s[i].dtype == np.dtype(sum_t)
        if kind in "ui":
            assert int(s[i]) == int(x.astype(sum_t).sum(dtype=sum_t))
        else:
            np.testing.assert_allclose(s[i], x64.sum(), rtol=1e-6)
        assert me[i].dtype == np.float32
        np.testing.assert_allclose(me[i], x64.mean(), rtol=1e-6, atol=1e-6)
        assert mn[i].dtype == x.dtype and mn[i] == x.min() and mx[i] == x.max()
        np.testing.assert_allclose(msq[i], (x64 ** 2).mean(), rtol=1e-6)
        np.testing.assert_allclose(rms[i], np.sqrt((x64 ** 2).mean()), rtol=1e-6)


@pytest.mark.parametrize("axes,keep", [([0], False), ([-1], True), ([0, 1], False),
                                       ([2, 0], True), ([], False)])
def test_axes_and_keep_dims(axes, keep):
    rng = np.random.default_rng(12)
    xs = data(rng, np.float32, SHAPES)
    (s, mn, me), out = run(lambda x: (fn.reductions.sum(x, axes=axes, keep_dims=keep),
                                      fn.reductions.min(x, axes=axes, keep_dims=keep),
                                      fn.reductions.mean(x, axes=axes, keep_dims=keep)),
                           xs, layout="HWC")
    ax = tuple(a % 3 for a in axes)
    for i, x in enumerate(xs):
        x64 = x.astype(np.float64)
        np.testing.assert_allclose(s[i], x64.sum(axis=ax, keepdims=keep), rtol=1e-5, atol=1e-4)
        np.testing.assert_array_equal(mn[i], x.min(axis=ax, keepdims=keep) if ax else x)
        np.testing.assert_allclose(me[i], x64.mean(axis=ax, keepdims=keep) if ax else x64,
                                   rtol=1e-5, atol=1e-5)
    want = "HWC" if keep else "".join(c for k, c in enumerate("HWC") if k not in ax)
    assert out[0].layout() == want


def test_axis_names():
    rng = np.random.default_rng(13)
    xs = data(rng, np.uint8, SHAPES)
    (m, mx), _ = run(lambda x: (fn.reductions.mean(x, axis_names="HW"),
                                fn.reductions.max(x, axis_names="C", keep_dims=True)), xs, "HWC")
    for i, x in enumerate(xs):
        np.testing.assert_allclose(m[i], x.astype(np.float64).mean(axis=(0, 1)), rtol=1e-6)
        np.testing.assert_array_equal(mx[i], x.max(axis=2, keepdims=True))


def test_dtype_and_wrapping_integer_sums():
    xs = [np.full((10, 10), 200, np.uint8), np.full((3,), -100, np.int8)]
    (a, b, c, d), _ = run(lambda x: (fn.reductions.sum(x, dtype=types.UINT8),
                                     fn.reductions.sum(x, dtype=types.FLOAT),
                                     fn.reductions.mean(x, dtype=types.INT32),
                                     fn.reductions.sum(x, dtype=types.INT16)), xs[:1])
    assert a[0].dtype == np.uint8 and int(a[0]) == (200 * 100) % 256  # accumulated in uint8
    assert b[0].dtype == np.float32 and float(b[0]) == 20000.0
    assert c[0].dtype == np.int32 and int(c[0]) == 200
    assert d[0].dtype == np.int16 and int(d[0]) == 20000
    big = [np.array([2 ** 62, 2 ** 62, 2 ** 62], np.int64)]
    (s,), _ = run(lambda x: fn.reductions.sum(x), big)
    assert s[0].dtype == np.int64 and int(s[0]) == -(2 ** 62)  # 3 * 2^62 wraps in int64


@pytest.mark.parametrize("ddof", [0, 1])
def test_variance_and_std_dev(ddof):
    rng = np.random.default_rng(14)
    xs = data(rng, np.int16, SHAPES)
    (v, sd, va), _ = run(lambda x: (
        fn.reductions.variance(x, fn.reductions.mean(x, axes=[0, 1]), axes=[0, 1], ddof=ddof),
        fn.reductions.std_dev(x, fn.reductions.mean(x), ddof=ddof),
        fn.reductions.variance(x, fn.reductions.mean(x, axes=[]), axes=[])), xs)
    for i, x in enumerate(xs):
        x64 = x.astype(np.float64)
        mean = x64.mean(axis=(0, 1)).astype(np.float32).astype(np.float64)
        want = ((x64 - mean) ** 2).sum(axis=(0, 1)) / max(x64.shape[0] * x64.shape[1] - ddof, 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            np.testing.assert_allclose(v[i], want, rtol=1e-5)
        m_all = np.float64(np.float32(x64.mean()))
        np.testing.assert_allclose(sd[i], np.sqrt(((x64 - m_all) ** 2).sum() / (x64.size - ddof)),
                                   rtol=1e-5)
        assert v[i].dtype == np.float32 and va[i].shape == x.shape and not va[i].any()


def test_empty_and_scalar_samples():
    xs = [np.zeros((0, 3), np.float32), np.ones((2, 3), np.float32)]
    (s, m), _ = run(lambda x: (fn.reductions.sum(x, axes=[0]), fn.reductions.mean(x)), xs)
    assert s[0].tolist() == [0, 0, 0] and s[1].tolist() == [2, 2, 2]
    assert np.isnan(m[0]) and float(m[1]) == 1.0

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        u = fn.random.uniform(range=[0, 4], seed=5)
        return u, fn.reductions.sum(u), fn.reductions.max(u)

    u, s, mx = pipe().run()
    for i in range(2):
        assert np.array(s.at(i)).shape == () and float(s.at(i)) == float(u.at(i))
        assert float(mx.at(i)) == float(u.at(i))


def test_errors():
    xs = [np.zeros((0, 3), np.float32)]
    with pytest.raises(errors.Error, match="reductions.min: sample 0: reduces an empty extent"):
        run(lambda x: fn.reductions.min(x), xs)
    ys = [np.zeros((2, 3), np.float32)]
    with pytest.raises(errors.Error, match="reductions.sum: axes: 2 is no dimension of a 2-d"):
        run(lambda x: fn.reductions.sum(x, axes=[2]), ys)
    with pytest.raises(errors.Error, match="reductions.sum: give axes or axis_names, not both"):
        run(lambda x: fn.reductions.sum(x, axes=[0], axis_names="H"), ys)
    with pytest.raises(errors.Error, match="reductions.mean: axis_names \"W\": 'W' is not in"):
        run(lambda x: fn.reductions.mean(x, axis_names="W"), ys)
    with pytest.raises(errors.Error, match="reductions.variance: the mean input is int32"):
        run(lambda x: fn.reductions.variance(x, fn.cast(x, dtype=types.INT32)), ys)
    with pytest.raises(errors.Error, match="reductions.std_dev: sample 0: the mean input has 6 "
                                           "values, the result 1"):
        run(lambda x: fn.reductions.std_dev(x, x), ys)
    with pytest.raises(errors.Error, match="reductions.sum: axes: dimension 0 is named twice"):
        run(lambda x: fn.reductions.sum(x, axes=[0, -2]), ys)
