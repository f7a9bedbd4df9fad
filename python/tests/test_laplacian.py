# SPDX-License-Identifier: Apache-2.0
"""fn.laplacian against a reference written here: scipy's 1-D convolution (mode "mirror", which is
reflect-101) of the windows built by DALI's documented rule (the smoothing window of n taps is the
binomial coefficients of n, the derivative window of n taps is [1, -2, 1] convolved with the
smoothing window of n - 2), summed over the partial derivatives with their factors. The argument
forms are those of DALI programs: literals, per-sample tensors (fn.random.uniform, an external
source), normalized_kernel, dtype; the layouts images, channel-first images, sequences and
volumes; and DALI's errors."""

import numpy as np
import pytest
import scipy.ndimage

import sluice.fn as fn
import sluice.types as types
from sluice import errors, pipeline_def


def smooth(n):
    k = np.array([1.0])
    for _ in range(n - 1):
        k = np.convolve(k, [1.0, 1.0])
    return k


def deriv(n):
    return np.convolve([1.0, -2.0, 1.0], smooth(n - 2))


def spread(v, k):
    v = np.asarray(v, np.float64).reshape(-1)
    return [v[0]] * k if len(v) == 1 else list(v)


def reference(x, first, k, window, smoothing, scale, normalized):
    """x with k spatial axes from dim `first`; window/smoothing/scale: one or one per axis
    (smoothing None: each partial smooths with its own window_size, as DALI)."""
    w = spread(window, k)
    s = None if smoothing is None else spread(smoothing, k)
    f = spread(scale, k)
    x = x.astype(np.float64)
    acc = np.zeros(x.shape)
    for t in range(k):
        sizes = [int(w[t]) if u == t else int(w[t] if s is None else s[u]) for u in range(k)]
        part = x
        for u in range(k):
            kern = deriv(sizes[u]) if u == t else smooth(sizes[u])
            part = scipy.ndimage.convolve1d(part, kern, axis=first + u, mode="mirror")
        factor = 2.0 ** (-sum(sizes) + k + 2) if normalized else f[t]
        acc += factor * part
    return acc


def to_type(a, dtype):
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return np.clip(np.rint(a), info.min, info.max).astype(dtype)
    return a.astype(dtype)


def run(make, xs, layout, args=(), batch=None):
    """make(x, *arg_nodes) on samples xs (one pipeline run per batch); args: per-sample lists of
    arrays fed as argument inputs"""
    batch = batch or len(xs)

    @pipeline_def(batch_size=batch, num_threads=3, device_id=None, seed=7)
    def pipe():
        x = fn.external_source(source=lambda info: xs[info.idx_in_epoch % len(xs)], batch=False,
                               layout=layout)
        extra = [fn.external_source(source=lambda info, a=a: a[info.idx_in_epoch % len(a)],
                                    batch=False) for a in args]
        return make(x, *extra)

    p = pipe()
    got = []
    for _ in range(len(xs) // batch):
        out = p.run()
        out = out if isinstance(out, (list, tuple)) else [out]
        got.append([[np.array(o.at(i)) for i in range(batch)] for o in out])
    return [sum((g[j] for g in got), []) for j in range(len(got[0]))]


# (shape, layout, first spatial dim, spatial axes)
CASES = [
    ((14, 17, 3), "HWC", 0, 2),
    ((3, 14, 17), "CHW", 1, 2),
    ((13, 11), "HW", 0, 2),
    ((19,), "", 0, 1),
    ((6, 9, 8), "", 0, 3),
    ((4, 12, 10, 3), "FHWC", 1, 2),
    ((4, 3, 12, 10), "FCHW", 2, 2),
    ((6, 7, 8, 2), "DHWC", 0, 3),
    ((3, 5, 6, 7, 2), "FDHWC", 1, 3),
    ((2, 3, 5, 6, 7), "CFDHW", 2, 3),
]


@pytest.mark.parametrize("shape,layout,first,k", CASES)
def test_layouts_per_sample_windows_and_scales(shape, layout, first, k):
    """window_size, smoothing_size and scale as per-sample tensors, one value or one per axis"""
    rng = np.random.default_rng(len(layout) * 7 + k)
    n = 4
    xs = [rng.integers(0, 255, shape).astype(np.uint8) for _ in range(n)]
    per_axis = len(layout) % 2 == 0  # the samples of one batch share their argument's ndim
    wins = [np.array(2 * rng.integers(1, 6, size=(k,) if per_axis else ()) + 1, np.int32)
            for i in range(n)]
    smooths = [np.array(2 * rng.integers(0, 6, size=() if per_axis else (k,)) + 1, np.int32)
               for i in range(n)]
    scales = [np.array(rng.uniform(0.001, 0.01, size=(k,)), np.float32) for _ in range(n)]
    (got,) = run(lambda x, w, s, f: fn.laplacian(x, window_size=w, smoothing_size=s, scale=f,
                                                 dtype=types.FLOAT),
                 xs, layout, (wins, smooths, scales))
    for i in range(n):
        want = reference(xs[i], first, k, wins[i], smooths[i], scales[i].astype(np.float64),
                         False)
        assert got[i].dtype == np.float32 and got[i].shape == xs[i].shape
        np.testing.assert_allclose(got[i], want, rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int32, np.int64, np.float32])
def test_literal_windows_normalized_and_dtypes(dtype):
    """literal per-axis windows, normalized_kernel, the input's type kept (saturated)"""
    rng = np.random.default_rng(3)
    xs = [rng.integers(0, 200, (9 + i, 12, 3)).astype(dtype) for i in range(3)]
    (a, b, c, d) = run(lambda x: (fn.laplacian(x, window_size=[5, 3], smoothing_size=[1, 7],
                                               normalized_kernel=True),
                                  fn.laplacian(x, window_size=7, scale=[0.25, 0.5]),
                                  fn.laplacian(x),
                                  fn.laplacian(x, window_size=[3, 9], normalized_kernel=True)),
                       xs, "HWC")
    for i, x in enumerate(xs):
        for got, want in ((a[i], reference(x, 0, 2, [5, 3], [1, 7], 1, True)),
                          (b[i], reference(x, 0, 2, 7, None, [0.25, 0.5], False)),
                          (c[i], reference(x, 0, 2, 3, None, 1, False)),
                          (d[i], reference(x, 0, 2, [3, 9], None, 1, True))):
            assert got.dtype == dtype
            if np.issubdtype(dtype, np.integer):
                assert np.abs(got.astype(np.float64) - to_type(want, dtype)).max() <= 1
            else:
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-2)


def test_kernels_of_an_impulse_windows_1_to_31():
    """an impulse gives the sum of the outer products of the windows, every size to 31, with
    window_size from fn.random.uniform as DALI programs draw it"""
    sizes = list(range(3, 33, 2))
    xs = []
    for w in sizes:
        a = np.zeros((w + 2, w + 2), np.float32)
        a[(w + 2) // 2, (w + 2) // 2] = 1
        xs.append(a)
    wins = [np.array(w, np.int32) for w in sizes]
    (smoothed, plain) = run(
        lambda x, w: (fn.laplacian(x, window_size=w, normalized_kernel=True, dtype=types.FLOAT),
                      fn.laplacian(x, window_size=w, smoothing_size=1)),
        xs, "HW", (wins,), batch=5)
    for i, w in enumerate(sizes):
        d, s = deriv(w), smooth(w)
        want = (np.outer(d, s) + np.outer(s, d)) * 2.0 ** (-2 * w + 4)
        np.testing.assert_allclose(smoothed[i][1:-1, 1:-1], want, rtol=1e-6, atol=1e-7)
        one = np.zeros(w)
        one[w // 2] = 1
        want = np.outer(d, one) + np.outer(one, d)
        np.testing.assert_allclose(plain[i][1:-1, 1:-1], want, rtol=1e-6, atol=1e-6)


def test_random_window_sizes_as_dali_programs_draw_them():
    """window_size = fn.random.uniform(..., dtype=INT32) * 2 + 1 per axis, scale from arithmetic
    on it; the op's windows checked against the drawn sizes, returned beside it"""
    rng = np.random.default_rng(11)
    xs = [rng.integers(0, 255, (4, 10, 9, 3)).astype(np.uint8) for _ in range(4)]

    def make(x):
        w = fn.random.uniform(range=[1, 8], shape=[2], dtype=types.INT32) * 2 + 1
        s = fn.random.uniform(range=[0, 8], shape=[2], dtype=types.INT32) * 2 + 1
        scale = 2.0 ** (-(w - 3))
        return fn.laplacian(x, window_size=w, smoothing_size=s, scale=scale,
                            dtype=types.FLOAT), w, s, scale

    got, ws, ss, scales = run(make, xs, "FHWC")
    for i in range(4):
        assert ws[i].shape == (2,) and np.all(ws[i] % 2 == 1)
        want = reference(xs[i], 1, 2, ws[i], ss[i], scales[i].astype(np.float64), False)
        np.testing.assert_allclose(got[i], want, rtol=1e-5, atol=1e-2)


def test_extent_one_and_empty_samples():
    xs = [np.arange(7, dtype=np.float32).reshape(1, 7), np.zeros((0, 4), np.float32),
          np.ones((5, 1), np.float32) * 3]
    (got,) = run(lambda x: fn.laplacian(x, window_size=5), xs, "HW")
    for x, g in zip(xs, got):
        assert g.shape == x.shape
        if x.size:
            np.testing.assert_allclose(g, reference(x, 0, 2, 5, None, 1, False), atol=1e-4)


def expect_error(match, make, xs=None, layout="HWC", args=()):
    xs = xs or [np.zeros((10, 10, 3), np.uint8)]
    with pytest.raises(errors.Error, match=match):
        run(make, xs, layout, args)


@pytest.mark.parametrize("shape,layout,match", [
    ((6, 6, 6, 3), "DHCW", r"Only channel-first or channel-last layouts are supported, got: DHCW\."),
    ((5, 6, 7, 3), "HFWC", r"For sequences, layout should begin with 'F' or 'C', got: HFWC\."),
    ((2, 3, 3, 3, 3, 3), "FWXYZC",
     r"Too many dimensions, found: 4 data axes, maximum supported is: 3\."),
    ((2, 3, 6, 3, 6), "FCHCW", r"Only channel-first or channel-last layouts are supported"),
    ((2, 3, 3, 6, 6), "FCCHW", r"Found more the one occurrence of 'F' or 'C' axes in layout"),
    ((5, 3), "CF", r"laplacian: layout \"CF\" has no spatial axes.*No spatial axes found in the "
                   r"layout"),
    ((2, 3, 4, 5), "", r"laplacian: a layout-less input is all spatial axes: 1 to 3 dims, not 4"),
])
def test_layout_errors(shape, layout, match):
    expect_error(match, lambda x: fn.laplacian(x), [np.zeros(shape, np.uint8)], layout)


def test_argument_errors_in_dalis_words():
    t = lambda v, dt=np.int32: [np.array(v, dt)]  # noqa: E731
    for w in (-3, 10, 33):
        expect_error(rf"laplacian: window_size {w}: Window size must be an odd integer between 3 "
                     r"and 31", lambda x, w=w: fn.laplacian(x, window_size=w))
        expect_error(rf"laplacian: sample 0: window_size {w}: Window size must be an odd integer "
                     rf"between 3 and 31, got {w} for sample: 0\.",
                     lambda x, w: fn.laplacian(x, window_size=w), args=(t(w),))
    for s in ([3, 6], -1, 33):
        expect_error(r"Smoothing window size must be an odd integer between 1 and 31",
                     lambda x, s=s: fn.laplacian(x, smoothing_size=s))
    expect_error(r"laplacian: sample 0: smoothing_size 6: Smoothing window size must be an odd "
                 r"integer between 1 and 31, got 6 for sample: 0\.",
                 lambda x, s: fn.laplacian(x, smoothing_size=s), args=(t(6),))
    for arg, v in (("window_size", [3, 7, 3]), ("scale", [1.0, 2.0, 3.0, 4.0, 5.0])):
        expect_error(rf'Argument "{arg}" expects either a single value or a list of 2 elements\. '
                     rf"{len(v)} given\.", lambda x, arg=arg, v=v: fn.laplacian(x, **{arg: v}))
        expect_error(rf"laplacian: sample 0: {arg} has {len(v)} values for 2 spatial axes.*"
                     rf"Argument {arg} for sample 0 is expected to have 1 or 2 elements, got: "
                     rf"{len(v)}\.", lambda x, a, arg=arg: fn.laplacian(x, **{arg: a}),
                     args=(t(v, np.float32 if arg == "scale" else np.int32),))
    expect_error(r"laplacian: normalized_kernel=True and scale: Parameter ``scale`` cannot be "
                 r"specified when ``normalized_kernel`` is set to True",
                 lambda x: fn.laplacian(x, normalized_kernel=True, scale=1.0))
    expect_error(r"laplacian: dtype uint16 for a uint8 input.*Output data type must be same as "
                 r"input, FLOAT or skipped",
                 lambda x: fn.laplacian(x, dtype=types.UINT16))
    expect_error(r"laplacian: bool input is not supported",
                 lambda x: fn.laplacian(x), [np.zeros((4, 4), np.bool_)], "HW")


def test_per_frame_windows_and_scales_on_sequences():
    """fn.per_frame: one window (or scale) per frame of each FHWC sequence, or one for all of a
    sample's frames (a frame count of 1); each frame is an image with its own values."""
    rng = np.random.default_rng(23)
    seqs = [rng.integers(0, 255, (3, 9, 11, 3)).astype(np.uint8),
            rng.integers(0, 255, (2, 7, 12, 3)).astype(np.uint8)]
    windows = [np.int32([[3, 5], [5, 3], [9, 7]]), np.int32([[7, 3]])]  # [y, x] per frame
    scales = [np.float32([0.5, 0.25, 0.125]), np.float32([0.75, 1.0])]

    @pipeline_def(batch_size=2, num_threads=2, device_id=None)
    def pipe():
        x = fn.external_source(source=lambda: seqs, layout="FHWC")
        w = fn.external_source(source=lambda: windows)
        f = fn.external_source(source=lambda: scales)
        return (fn.laplacian(x, window_size=fn.per_frame(w), dtype=types.FLOAT),
                fn.laplacian(x, scale=fn.per_frame(f), dtype=types.FLOAT))

    a, b = pipe().run()
    assert a.layout() == "FHWC" and b.layout() == "FHWC"
    for i, x in enumerate(seqs):
        got_a, got_b = np.array(a.at(i)), np.array(b.at(i))
        for f in range(x.shape[0]):
            w = windows[i][f if len(windows[i]) > 1 else 0]
            np.testing.assert_allclose(got_a[f], reference(x[f], 0, 2, w, None, 1, False),
                                       rtol=1e-5, atol=1e-2)
            want = reference(x[f], 0, 2, 3, None, float(scales[i][f]), False)
            np.testing.assert_allclose(got_b[f], want, rtol=1e-5, atol=1e-3)
