# SPDX-License-Identifier: Apache-2.0
"""sluice.math (DALI's nvidia.dali.math, the library's math.* ops) against numpy: every function
on float and integer inputs with DALI's result types, integer min/max/clamp/pow/abs computed in the
promoted type, Python numbers and types.Constant as operands, numpy-style broadcasting, empty
samples, and the errors."""

import numpy as np
import pytest

import sluice.fn as fn
import sluice.math as dmath
import sluice.types as types
from sluice import errors, pipeline_def

FLOAT_FUNCS = {
    "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "cbrt": np.cbrt, "exp": np.exp,
    "log": np.log, "log2": np.log2, "log10": np.log10, "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh,
    "cosh": np.cosh, "tanh": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh,
    "atanh": np.arctanh, "fabs": np.fabs, "floor": np.floor, "ceil": np.ceil,
}


def run(make, *xs):
    @pipeline_def(batch_size=len(xs[0]), num_threads=2, device_id=None)
    def pipe():
        return make(*[fn.external_source(source=lambda x=x: x) for x in xs])

    out = pipe().run()
    out = out if isinstance(out, (list, tuple)) else [out]
    return [[np.array(o.at(i)) for i in range(len(xs[0]))] for o in out]


@pytest.mark.parametrize("name", sorted(FLOAT_FUNCS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16, np.uint8])
def test_float_functions(name, dtype):
    rng = np.random.default_rng(1)
    lo, hi = {"acosh": (1, 5), "asin": (-1, 1), "acos": (-1, 1), "atanh": (-0.99, 0.99),
              "log": (0.01, 50), "log2": (0.01, 50), "log10": (0.01, 50), "sqrt": (0, 50),
              "rsqrt": (0.01, 50), "exp": (-5, 5), "sinh": (-5, 5), "cosh": (-5, 5)}.get(
                  name, (-20, 20))
    if np.dtype(dtype).kind in "iu":
        lo, hi = max(int(np.ceil(lo)), 0 if dtype == np.uint8 else -20), int(np.floor(hi))
        if name in ("atanh",):
            lo, hi = 0, 0
        xs = [rng.integers(lo, hi, (3, 4), endpoint=True).astype(dtype) for _ in range(2)]
    else:
        xs = [rng.uniform(lo, hi, (3, 4)).astype(dtype) for _ in range(2)]
    (got,) = run(lambda x: getattr(dmath, name)(x), xs)
    out_t = dtype if np.dtype(dtype).kind == "f" else np.float32
    for x, g in zip(xs, got):
        assert g.dtype == np.dtype(out_t)
        with np.errstate(divide="ignore"):
            want = FLOAT_FUNCS[name](x.astype(np.float64)).astype(out_t)
        if out_t == np.float64:  # numpy's and the C library's double functions part in an ulp
            np.testing.assert_allclose(g, want, rtol=4e-16, atol=0)
        else:  # computed in double and rounded once: float32 results match exactly
            np.testing.assert_array_equal(g, want)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint16, np.float32, np.int64])
def test_abs_keeps_type(dtype):
    neg = -128 if dtype == np.int8 else 7 if np.dtype(dtype).kind == "u" else -7
    x = [np.array([neg, 0, 5, 3], dtype)]
    (got,) = run(lambda a: dmath.abs(a), x)
    assert got[0].dtype == np.dtype(dtype)
    assert got[0].tolist() == np.abs(x[0]).tolist()  # int8 -128 stays -128, as it wraps


def test_min_max_clamp_pow_types_and_values():
    rng = np.random.default_rng(2)
    a = [rng.integers(0, 255, (4, 5)).astype(np.uint8) for _ in range(3)]
    b = [rng.integers(-100, 100, (4, 5)).astype(np.int16) for _ in range(3)]
    f = [rng.uniform(-3, 3, (4, 5)).astype(np.float32) for _ in range(3)]
    mn, mx, cl, cl8, pw, fp, at, p2 = run(lambda x, y, z: (
        dmath.min(x, y), dmath.max(y, z), dmath.clamp(x, 50, 200),
        dmath.clamp(x, types.Constant(50, dtype=types.UINT8), types.Constant(200, dtype=types.UINT8)),
        dmath.pow(y, 2), dmath.fpow(x, 0.5), dmath.atan2(z, y), dmath.pow(2, types.Constant(3))),
        a, b, f)
    for i in range(3):
        assert mn[i].dtype == np.int16 and mn[i].tolist() == np.minimum(a[i].astype(np.int16),
                                                                         b[i]).tolist()
        assert mx[i].dtype == np.float32
        np.testing.assert_array_equal(mx[i], np.maximum(b[i].astype(np.float32), f[i]))
        assert cl[i].dtype == np.int32 and cl[i].tolist() == np.clip(a[i], 50, 200).tolist()
        assert cl8[i].dtype == np.uint8 and cl8[i].tolist() == np.clip(a[i], 50, 200).tolist()
        assert pw[i].dtype == np.int32 and pw[i].tolist() == (b[i].astype(np.int32) ** 2).tolist()
        assert fp[i].dtype == np.float32
        np.testing.assert_array_equal(fp[i], np.power(a[i].astype(np.float64), np.float64(
            np.float32(0.5))).astype(np.float32))
        np.testing.assert_array_equal(at[i], np.arctan2(f[i].astype(np.float64),
                                                        b[i].astype(np.float64)).astype(np.float32))
        assert p2[i].shape == () and int(p2[i]) == 8


def test_integer_pow_wraps_and_negative_exponents():
    x = [np.array([3, -1, 1, 2, 0], np.int32)]
    e = [np.array([21, -3, -5, -1, 4], np.int32)]
    (got,) = run(lambda a, b: dmath.pow(a, b), x, e)
    want = [(3 ** 21) % 2 ** 32, -1, 1, 0, 0]
    want = [w - 2 ** 32 if w >= 2 ** 31 else w for w in want]
    assert got[0].tolist() == want


def test_broadcasting():
    img = [np.arange(2 * 3 * 3, dtype=np.float32).reshape(2, 3, 3),
           np.arange(4 * 1 * 3, dtype=np.float32).reshape(4, 1, 3)]
    per_channel = [np.array([1.0, 10.0, 100.0], np.float32)] * 2
    scalar = [np.array([5.0], np.float32), np.array([0.5], np.float32)]
    a, b = run(lambda x, c, s: (dmath.min(x, c), dmath.max(s, x)), img, per_channel, scalar)
    for i in range(2):
        np.testing.assert_array_equal(a[i], np.minimum(img[i], per_channel[i]))
        np.testing.assert_array_equal(b[i], np.maximum(scalar[i], img[i]))


def test_empty_samples():
    x = [np.zeros((0, 3), np.float32), np.ones((2, 0), np.float32)]
    (got,) = run(lambda a: dmath.sqrt(a), x)
    assert got[0].shape == (0, 3) and got[1].shape == (2, 0)


def test_errors():
    x = [np.zeros((2, 3), np.float32)]
    y = [np.zeros((4,), np.float32)]
    with pytest.raises(errors.Error, match="math.min: sample 0: input 1's extent 4 at dimension 1 "
                                           "does not broadcast against 3"):
        run(lambda a, b: dmath.min(a, b), x, y)
    with pytest.raises(errors.ArgumentTypeError, match="math.max: at least one argument must be "
                                                       "an op output"):
        dmath.max(1, 2)
    with pytest.raises(errors.Error, match="fn.math.sqrt takes 1 input, got 2"):
        run(lambda a: fn.math.sqrt(a, a), x)
