# SPDX-License-Identifier: Apache-2.0
"""fn.erase against numpy: regions as lists and per-sample inputs, several regions, axes and
axis_names, normalized and centered anchors, regions clipped at the borders, per-channel fill
values, every dtype, empty samples, and the errors."""

import numpy as np
import pytest

import sluice.fn as fn
from sluice import errors, pipeline_def


def rnd(v):
    return int(np.floor(v + 0.5)) if v >= 0 else -int(np.floor(-v + 0.5))


def ref(x, dims, regions, fill, chan=None):
    out = x.copy()
    for start, length in regions:
        idx = [slice(None)] * x.ndim
        for d, a, n in zip(dims, start, length):
            lo, hi = rnd(a), rnd(a + n)
            idx[d] = slice(min(max(lo, 0), x.shape[d]), min(max(hi, 0), x.shape[d]))
        if len(fill) > 1:
            shape = [1] * x.ndim
            shape[chan] = -1
            out[tuple(idx)] = np.array(fill[:x.shape[chan]], np.float64).astype(x.dtype).reshape(
                shape)
        else:
            out[tuple(idx)] = np.array(fill[0]).astype(x.dtype)
    return out


def run(make, xs, layout="HWC", *extra):
    @pipeline_def(batch_size=len(xs), num_threads=3, device_id=None)
    def pipe():
        srcs = [fn.external_source(source=lambda: xs, layout=layout)]
        srcs += [fn.external_source(source=lambda e=e: e) for e in extra]
        return make(*srcs)

    (out,) = pipe().run()
    return [np.array(out.at(i)) for i in range(len(xs))]


DTYPES = [np.uint8, np.int8, np.uint16, np.int16, np.int32, np.int64, np.uint32, np.uint64,
          np.float16, np.float32, np.float64, np.bool_]


@pytest.mark.parametrize("dtype", DTYPES)
def test_two_regions_every_dtype(dtype):
    rng = np.random.default_rng(1)
    xs = [rng.integers(1, 100, (10, 12, 3)).astype(dtype) for _ in range(2)]
    got = run(lambda x: fn.erase(x, anchor=[1, 2, 6, 8], shape=[3, 4, 10, 10], fill_value=7), xs)
    for x, g in zip(xs, got):
        # axis_names "HW": anchor (y, x), shape (h, w); the second region runs off the border
        np.testing.assert_array_equal(g, ref(x, [0, 1], [((1, 2), (3, 4)), ((6, 8), (10, 10))],
                                             [7]))


def test_per_sample_normalized_centered_per_channel():
    rng = np.random.default_rng(2)
    xs = [rng.integers(0, 255, (h, w, 3)).astype(np.uint8) for h, w in ((20, 30), (11, 7))]
    anc = [np.array([0.5, 0.5], np.float32), np.array([0.1, 0.9], np.float32)]
    shp = [np.array([0.3, 0.2], np.float32), np.array([0.5, 0.5], np.float32)]
    got = run(lambda x, a, s: fn.erase(x, anchor=a, shape=s, normalized=True,
                                       centered_anchor=True, fill_value=[10, 20, 30]),
              xs, "HWC", anc, shp)
    for x, g, a, s in zip(xs, got, anc, shp):
        h, w = x.shape[:2]
        ln = (float(s[0]) * h, float(s[1]) * w)
        st = (float(a[0]) * h - ln[0] / 2, float(a[1]) * w - ln[1] / 2)
        np.testing.assert_array_equal(g, ref(x, [0, 1], [(st, ln)], [10, 20, 30], 2))


def test_axes_and_chw():
    x = [np.arange(3 * 5 * 6, dtype=np.float32).reshape(3, 5, 6)]
    got = run(lambda a: fn.erase(a, anchor=[2], shape=[3], axes=[2], fill_value=[-1, -2, -3]),
              x, "CHW")
    np.testing.assert_array_equal(got[0], ref(x[0], [2], [((2,), (3,))], [-1, -2, -3], 0))
    got = run(lambda a: fn.erase(a, shape=[2, 2], axis_names="HW"), x, "CHW")  # anchor 0
    np.testing.assert_array_equal(got[0], ref(x[0], [1, 2], [((0, 0), (2, 2))], [0]))


def test_empty_samples_and_no_regions():
    xs = [np.zeros((0, 4, 3), np.uint8), np.ones((2, 2, 3), np.uint8)]
    got = run(lambda a: fn.erase(a, anchor=[0, 0], shape=[1, 1]), xs)
    assert got[0].shape == (0, 4, 3)
    assert got[1][0, 0].tolist() == [0, 0, 0] and got[1][1, 1].tolist() == [1, 1, 1]
    got = run(lambda a: fn.erase(a), xs)
    np.testing.assert_array_equal(got[1], xs[1])


def test_errors():
    xs = [np.zeros((4, 4, 3), np.uint8)]
    with pytest.raises(errors.Error, match="erase: sample 0: shape has 3 values and anchor 2"):
        run(lambda a: fn.erase(a, anchor=[0, 0], shape=[1, 1, 1]), xs)
    with pytest.raises(errors.Error, match="erase: sample 0: region 0: shape -1 along dimension"):
        run(lambda a: fn.erase(a, shape=[-1, 1]), xs)
    with pytest.raises(errors.Error, match="erase: axis_names \"HW\": 'H' is not in the input's"):
        run(lambda a: fn.erase(a, shape=[1, 1]), xs, "")
    with pytest.raises(errors.Error, match="erase: sample 0: fill_value has 2 values for 3 "
                                           "channels"):
        run(lambda a: fn.erase(a, shape=[1, 1], fill_value=[1, 2]), xs)
    with pytest.raises(errors.Error, match="erase: give normalized, or normalized_anchor"):
        run(lambda a: fn.erase(a, shape=[1, 1], normalized=True, normalized_shape=True), xs)


def test_fill_value_per_sample():
    """fill_value as another op's output (DALI's tensor argument): one value, or one per channel,
    chosen per sample; with the ops API form too (the argument given at the call)."""
    rng = np.random.default_rng(5)
    xs = [rng.integers(1, 100, (6, 7, 3)).astype(np.int16) for _ in range(3)]
    fills = [np.float32([-5]), np.float32([1, 2, 3]), np.float32([250.5, 0, -1])]
    got = run(lambda x, f: fn.erase(x, anchor=[1, 2], shape=[3, 4], fill_value=f), xs, "HWC",
              fills)
    for x, g, f in zip(xs, got, fills):
        np.testing.assert_array_equal(g, ref(x, [0, 1], [((1, 2), (3, 4))], f.tolist(), 2))
    from sluice import ops
    erase = ops.Erase(anchor=[0, 0], shape=[2, 2], fill_value=None)
    got = run(lambda x, f: erase(x, fill_value=f), xs, "HWC", fills)
    for x, g, f in zip(xs, got, fills):
        np.testing.assert_array_equal(g, ref(x, [0, 1], [((0, 0), (2, 2))], f.tolist(), 2))
    # a sample with too few values for its channels, or none, is named
    with pytest.raises(errors.Error, match="erase: sample 1: fill_value has 2 values for 3 "
                                           "channels"):
        run(lambda x, f: fn.erase(x, shape=[1, 1], fill_value=f), xs[:2], "HWC",
            [np.float32([1]), np.float32([1, 2])])
    with pytest.raises(errors.Error, match="erase: sample 0: fill_value has 0 values"):
        run(lambda x, f: fn.erase(x, shape=[1, 1], fill_value=f), xs[:1], "HWC",
            [np.zeros(0, np.float32)])
