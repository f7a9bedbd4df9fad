# SPDX-License-Identifier: Apache-2.0
"""fn.shapes, fn.cast_like, fn.reinterpret, fn.constant and types.Constant against numpy, and
uint32 / uint64 tensors through external_source, cast and arithmetic."""

import numpy as np
import pytest

import sluice.fn as fn
import sluice.types as types
from sluice import errors, pipeline_def

DTYPES = [np.uint8, np.int8, np.uint16, np.int16, np.int32, np.int64, np.uint32, np.uint64,
          np.float16, np.float32, np.float64, np.bool_]


def run(make, batch, *sources):
    @pipeline_def(batch_size=batch, num_threads=2, device_id=None)
    def pipe():
        return make(*[fn.external_source(source=s, **o) for s, o in sources])

    out = pipe().run()
    out = out if isinstance(out, (list, tuple)) else [out]
    return [[np.array(o.at(i)) for i in range(batch)] for o in out]


def samples(rng, dtype, shapes):
    return [rng.integers(0, 100, s).astype(dtype) for s in shapes]


@pytest.mark.parametrize("dtype", [types.INT64, types.INT32, types.UINT32, types.UINT64,
                                   types.FLOAT])
def test_shapes(dtype):
    rng = np.random.default_rng(1)
    shp = [(3, 4, 2), (0, 5, 1), (7, 1, 3)]
    x = samples(rng, np.uint8, shp)
    (got,) = run(lambda a: fn.shapes(a, dtype=dtype), 3, (lambda: x, {}))
    for g, s in zip(got, shp):
        assert g.dtype == np.dtype(types.np_name(dtype))
        assert g.tolist() == list(s)


def test_shapes_of_scalars_and_bad_dtype():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        return fn.shapes(fn.random.uniform())

    (out,) = pipe().run()
    assert np.array(out.at(0)).shape == (0,)
    with pytest.raises(errors.Error, match="shapes: dtype bool cannot hold extents"):
        run(lambda a: fn.shapes(a, dtype=types.BOOL), 1, (lambda: [np.zeros(2)], {}))


@pytest.mark.parametrize("src", DTYPES)
@pytest.mark.parametrize("dst", [np.uint8, np.int16, np.uint32, np.uint64, np.float32])
def test_cast_like(src, dst):
    vals = np.array([-300.6, -2.5, -1.0, 0.0, 0.5, 1.5, 2.5, 70000.4, 3e9], np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        x = [vals.astype(src) if np.dtype(src).kind == "f" else
             np.clip(vals, np.iinfo(src).min, np.iinfo(src).max).astype(src)
             if np.dtype(src).kind != "b" else vals.astype(bool)]
    like = [np.zeros((2, 2), dst)]
    (got,) = run(lambda a, b: fn.cast_like(a, b), 1, (lambda: x, {}), (lambda: like, {}))
    # the reference: round half to even, saturate to the type's range (NaN would be 0)
    v = x[0].astype(np.float64)
    if np.dtype(dst).kind in "iu":
        info = np.iinfo(dst)
        want = np.clip(np.rint(v), float(info.min), float(info.max))
        want = np.array([int(w) if w < 2 ** 63 else info.max for w in want.tolist()], object)
        assert got[0].dtype == np.dtype(dst)
        assert [int(g) for g in got[0].tolist()] == [int(w) for w in want.tolist()]
    else:
        np.testing.assert_array_equal(got[0], v.astype(dst))


def test_reinterpret():
    rng = np.random.default_rng(2)
    x = [rng.integers(0, 255, (4, 8)).astype(np.uint8),
         rng.integers(0, 255, (2, 16)).astype(np.uint8)]
    outs = run(lambda a: (fn.reinterpret(a, dtype=types.UINT32),
                          fn.reinterpret(a, dtype=types.FLOAT, shape=[-1]),
                          fn.reinterpret(a, rel_shape=[0.5, 2.0], layout="AB"),
                          fn.reinterpret(a, dtype=types.INT16, shape=[2, -1])), 2,
               (lambda: x, {}))
    for i, a in enumerate(x):
        np.testing.assert_array_equal(outs[0][i], a.view(np.uint32))
        np.testing.assert_array_equal(outs[1][i].view(np.uint32), a.reshape(-1).view(np.uint32))
        np.testing.assert_array_equal(outs[3][i], a.reshape(-1).view(np.int16).reshape(2, -1))
    assert outs[2][0].shape == (2, 16) and outs[2][1].shape == (1, 32)
    for i, a in enumerate(x):
        assert outs[2][i].reshape(-1).tolist() == a.reshape(-1).tolist()


def test_reinterpret_errors():
    x = [np.zeros((2, 3), np.uint8)]
    with pytest.raises(errors.Error, match="reinterpret: sample 0: the last extent, 3 uint8 "
                                           "values, is no whole number of uint32 values"):
        run(lambda a: fn.reinterpret(a, dtype=types.UINT32), 1, (lambda: x, {}))
    with pytest.raises(errors.Error, match="reinterpret: sample 0: the sample has 6 bytes, the "
                                           "shape asks for 4 uint8 values"):
        run(lambda a: fn.reinterpret(a, shape=[2, 2]), 1, (lambda: x, {}))
    with pytest.raises(errors.Error, match="reinterpret: src_dims is not supported"):
        run(lambda a: fn.reinterpret(a, src_dims=[0]), 1, (lambda: x, {}))


def test_constant_and_types_constant():
    @pipeline_def(batch_size=3, num_threads=1, device_id=None)
    def pipe():
        return (fn.constant(idata=[1, 2, 3, 4, 5, 6], shape=[2, 3], layout="HW"),
                fn.constant(fdata=2.5, shape=[2, 2], dtype=types.FLOAT64),
                fn.constant(idata=[7, 8]),
                types.Constant(np.arange(6, dtype=np.uint16).reshape(3, 2)),
                types.Constant(1.25),
                types.Constant([4000000000], dtype=types.UINT32))

    out = pipe().run()
    for i in range(3):
        a, b, c, d, e, f = (np.array(o.at(i)) for o in out)
        assert a.dtype == np.int32 and a.tolist() == [[1, 2, 3], [4, 5, 6]]
        assert b.dtype == np.float64 and b.tolist() == [[2.5, 2.5], [2.5, 2.5]]
        assert c.tolist() == [7, 8] and c.dtype == np.int32
        assert d.tolist() == [[0, 1], [2, 3], [4, 5]] and d.dtype == np.uint16  # kept
        assert e.shape == () and float(e) == 1.25 and e.dtype == np.float32
        assert f.dtype == np.uint32 and f.tolist() == [4000000000]
    assert out[0].layout() == "HW"


def test_constant_errors():
    def fails(make, match):
        @pipeline_def(batch_size=1, num_threads=1, device_id=None)
        def pipe():
            return make()

        with pytest.raises(errors.Error, match=match):
            pipe().run()

    fails(lambda: fn.constant(shape=[2]), "constant: give exactly one of idata and fdata")
    fails(lambda: fn.constant(idata=[1, 2, 3], shape=[2, 2]),
          "constant: idata has 3 values, the shape 4")
    fails(lambda: fn.constant(idata=[1], shape=[-2]), "constant: shape: extent -2")
    fails(lambda: fn.constant(idata=[1, 2], layout="HW"), 'constant: layout "HW" for 1 dims')


def test_uint32_uint64_through_ops():
    x = [np.array([0, 1, 4000000000], np.uint32)]
    y = [np.array([2 ** 64 - 1, 5, 2 ** 40], np.uint64)]
    outs = run(lambda a, b: (a, b, a + a, fn.cast(b, dtype=types.FLOAT64),
                             fn.cast(a, dtype=types.UINT64), a * 2), 1,
               (lambda: x, {}), (lambda: y, {}))
    assert outs[0][0].dtype == np.uint32 and outs[0][0].tolist() == x[0].tolist()
    assert outs[1][0].dtype == np.uint64 and outs[1][0].tolist() == y[0].tolist()
    assert outs[2][0].dtype == np.uint32
    assert outs[2][0].tolist() == (x[0] + x[0]).tolist()  # wraps as uint32 arithmetic does
    np.testing.assert_array_equal(outs[3][0], y[0].astype(np.float64))
    assert outs[4][0].dtype == np.uint64 and outs[4][0].tolist() == x[0].tolist()
    # uint32 with an int32 constant: DALI's promotion gives int64
    assert outs[5][0].dtype == np.int64 and outs[5][0].tolist() == [0, 2, 8000000000]
