# SPDX-License-Identifier: Apache-2.0
"""fn.experimental.filter and fn.experimental.equalize (and their plain names fn.filter,
fn.equalize) against references written here: a numpy correlation with each border rule padded by
numpy's own np.pad modes, and OpenCV's histogram-equalization formula in numpy. Layouts HW, HWC,
CHW and sequences, per-sample filters and anchors, the fill value input, mode "valid", every
input type, empty samples, and the errors."""

import numpy as np
import pytest

import sluice.fn as fn
import sluice.types as types
from sluice import errors, pipeline_def

PAD = {"reflect_101": "reflect", "reflect_1001": "symmetric", "wrap": "wrap", "clamp": "edge",
       "constant": "constant"}


def run(make, *inputs, layout="HWC", threads=3):
    n = len(inputs[0])

    @pipeline_def(batch_size=n, num_threads=threads, device_id=None)
    def pipe():
        srcs = [fn.external_source(source=lambda x=x: x, layout=layout if k == 0 else None)
                for k, x in enumerate(inputs)]
        return make(*srcs)

    (out,) = pipe().run()
    return [np.array(out.at(i)) for i in range(n)]


def correlate(x, k, anchor=(-1, -1), border="reflect_101", fill=0, valid=False):
    """x (H, W) float64; k (r, s): the output of the same size (or the valid part)"""
    r, s = k.shape
    if valid:
        h, w = x.shape[0] - r + 1, x.shape[1] - s + 1
        return sum(k[i, j] * x[i:i + h, j:j + w] for i in range(r) for j in range(s))
    ay = r // 2 if anchor[0] == -1 else anchor[0]
    ax = s // 2 if anchor[1] == -1 else anchor[1]
    pads = ((ay, r - 1 - ay), (ax, s - 1 - ax))
    kw = {"constant_values": fill} if border == "constant" else {}
    if border == "reflect_101" and min(x.shape) == 1:
        p = np.pad(x, pads, "edge")  # one row or column reflects onto itself
    else:
        p = np.pad(x, pads, PAD[border], **kw)
    h, w = x.shape
    return sum(k[i, j] * p[i:i + h, j:j + w] for i in range(r) for j in range(s))


def per_channel(x, f, layout):
    """applies f (2D -> 2D) to every plane of x in layout"""
    if layout == "HW":
        return f(x)
    if layout == "HWC":
        return np.stack([f(x[..., c]) for c in range(x.shape[2])], axis=2)
    if layout == "CHW":
        return np.stack([f(x[c]) for c in range(x.shape[0])])
    return np.stack([per_channel(fr, f, layout[1:]) for fr in x])


def store(v, dtype):
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return np.clip(np.rint(v), info.min, info.max).astype(dtype)
    return v.astype(dtype)


def rng_images(rng, shape_fn, n, dtype=np.uint8):
    out = []
    for _ in range(n):
        x = rng.integers(0, 200, shape_fn(rng))
        out.append(x.astype(dtype))
    return out


@pytest.mark.parametrize("border", sorted(PAD))
def test_filter_borders_per_sample_filters(border):
    rng = np.random.default_rng(3)
    xs = rng_images(rng, lambda r: (r.integers(1, 20), r.integers(1, 20), 3), 5)
    ks = [rng.standard_normal((r, s)).astype(np.float32) / 4
          for r, s in ((3, 3), (1, 5), (4, 2), (5, 5), (2, 1))]
    got = run(lambda x, k: fn.experimental.filter(x, k, border=border, dtype=types.FLOAT), xs, ks)
    for x, k, g in zip(xs, ks, got):
        want = per_channel(x.astype(np.float64), lambda p: correlate(p, k.astype(np.float64),
                                                                     border=border), "HWC")
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-3)
        assert g.dtype == np.float32 and g.shape == x.shape


def test_filter_anchor_and_fill_value_inputs():
    rng = np.random.default_rng(4)
    xs = rng_images(rng, lambda r: (r.integers(4, 15), r.integers(4, 15)), 3)
    ks = [rng.random((3, 4)).astype(np.float32) for _ in xs]
    fills = [np.array(v, np.uint8) for v in (7, 0, 250)]
    anchors = [np.array(a, np.int32) for a in ([0, 0], [2, 3], [1, -1])]
    got = run(lambda x, k, f, a: fn.experimental.filter(x, k, f, anchor=a, border="constant",
                                                        dtype=types.FLOAT),
              xs, ks, fills, anchors, layout="HW")
    for x, k, f, a, g in zip(xs, ks, fills, anchors, got):
        a = (a[0], 4 // 2 if a[1] == -1 else a[1])
        want = correlate(x.astype(np.float64), k.astype(np.float64), a, "constant", int(f))
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint16, np.int16, np.float16,
                                   np.float32])
def test_filter_every_type_rounds_and_saturates(dtype):
    rng = np.random.default_rng(5)
    xs = [rng.integers(0, 100, (9, 11, 2)).astype(dtype) for _ in range(2)]
    k = np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]], np.float32)  # sharpen: over and under
    got = run(lambda x, kk: fn.experimental.filter(x, kk), xs, [k, k * 2])
    for x, kk, g in zip(xs, (k, k * 2), got):
        want = per_channel(x.astype(np.float64), lambda p: correlate(p, kk.astype(np.float64)),
                           "HWC")
        assert g.dtype == dtype
        if np.issubdtype(dtype, np.integer):
            # float32 sums may round a .5 the other way
            assert np.abs(g.astype(np.int64) - store(want, dtype).astype(np.int64)).max() <= 1
        else:
            np.testing.assert_allclose(g.astype(np.float64), want, rtol=2e-3, atol=0.1)


def test_filter_chw_sequences_and_valid_mode():
    rng = np.random.default_rng(6)
    xs = [rng.integers(0, 255, (2, 3, 8, 9)).astype(np.uint8) for _ in range(2)]
    ks = [rng.random((3, 3)).astype(np.float32) / 9 for _ in xs]
    got = run(lambda x, k: fn.experimental.filter(x, k, mode="valid", dtype=types.FLOAT), xs, ks,
              layout="FCHW")
    for x, k, g in zip(xs, ks, got):
        assert g.shape == (2, 3, 6, 7)
        want = per_channel(x.astype(np.float64), lambda p: correlate(p, k.astype(np.float64),
                                                                     valid=True), "FCHW")
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-3)
    # the plain name is the same operator
    got2 = run(lambda x, k: fn.filter(x, k, mode="valid", dtype=types.FLOAT), xs, ks,
               layout="FCHW")
    for a, b in zip(got, got2):
        np.testing.assert_array_equal(a, b)


def test_filter_empty_samples_and_thread_counts():
    rng = np.random.default_rng(7)
    xs = [np.zeros((0, 5, 3), np.uint8), rng.integers(0, 255, (6, 0, 3)).astype(np.uint8),
          rng.integers(0, 255, (7, 6, 3)).astype(np.uint8)]
    ks = [np.ones((3, 3), np.float32) / 9] * 3
    a = run(lambda x, k: fn.experimental.filter(x, k), xs, ks, threads=1)
    b = run(lambda x, k: fn.experimental.filter(x, k), xs, ks, threads=4)
    assert a[0].shape == (0, 5, 3) and a[1].shape == (6, 0, 3)
    for p, q in zip(a, b):
        np.testing.assert_array_equal(p, q)


@pytest.mark.parametrize("make, inputs, layout, msg", [
    (lambda x, k: fn.experimental.filter(x, k, border="mirror"), "u8", "HWC", "border"),
    (lambda x, k: fn.experimental.filter(x, k, mode="full"), "u8", "HWC", "mode"),
    (lambda x, k: fn.experimental.filter(x, k, dtype=types.INT32), "u8", "HWC", "dtype"),
    (lambda x, k: fn.experimental.filter(x, k), "f64filter", "HWC", "float32"),
    (lambda x, k: fn.experimental.filter(x, k), "i32", "HWC", "int32"),
    (lambda x, k: fn.experimental.filter(x, k), "u8", "HWCD", "layout"),
    (lambda x, k: fn.experimental.filter(x, k, anchor=[5, 0]), "u8", "HWC", "anchor"),
    (lambda x, k: fn.experimental.filter(x, k, mode="valid"), "small", "HWC", "valid"),
])
def test_filter_errors_name_the_op_and_argument(make, inputs, layout, msg):
    x = np.zeros((4, 4, 3), np.uint8)
    k = np.ones((3, 3), np.float32)
    if inputs == "f64filter":
        k = k.astype(np.float64)
    if inputs == "i32":
        x = x.astype(np.int32)
    if inputs == "small":
        x = np.zeros((2, 4, 3), np.uint8)
    if layout == "HWCD":
        x = x[..., None]
    with pytest.raises(errors.Error) as e:
        run(make, [x], [k], layout=layout)
    assert "filter" in str(e.value) and msg in str(e.value)


def equalize_ref(p):
    """OpenCV's equalizeHist on one uint8 plane"""
    hist = np.bincount(p.ravel(), minlength=256)
    lo = int(np.flatnonzero(hist)[0]) if p.size else 0
    if p.size == 0 or hist[lo] == p.size:
        return p.copy()
    scale = np.float32(255) / np.float32(p.size - hist[lo])
    cdf = np.cumsum(hist).astype(np.int64) - hist[lo]
    lut = np.clip(np.rint((cdf.astype(np.float32) * scale)), 0, 255).astype(np.uint8)
    lut[:lo + 1] = 0
    return lut[p]


@pytest.mark.parametrize("layout", ["HWC", "HW", "CHW", "FHWC", "FCHW", "FHW"])
def test_equalize_every_layout(layout):
    rng = np.random.default_rng(8)
    shapes = {"HWC": (13, 17, 3), "HW": (20, 9), "CHW": (3, 12, 10), "FHWC": (2, 9, 8, 3),
              "FCHW": (3, 2, 7, 6), "FHW": (2, 11, 5)}
    xs = []
    for k in range(4):
        # narrow and shifted value ranges, as real images have
        lo = int(rng.integers(0, 120))
        xs.append(rng.integers(lo, lo + 1 + 30 * k, shapes[layout]).astype(np.uint8))
    xs.append(np.full(shapes[layout], 77, np.uint8))  # one value: left alone
    got = run(lambda x: fn.experimental.equalize(x), xs, layout=layout)
    for x, g in zip(xs, got):
        np.testing.assert_array_equal(g, per_channel(x, equalize_ref, layout))
    got2 = run(lambda x: fn.equalize(x), xs, layout=layout)
    for a, b in zip(got, got2):
        np.testing.assert_array_equal(a, b)


def test_equalize_empty_and_errors():
    xs = [np.zeros((0, 4, 3), np.uint8), np.arange(48, dtype=np.uint8).reshape(4, 4, 3)]
    got = run(lambda x: fn.experimental.equalize(x), xs)
    assert got[0].shape == (0, 4, 3)
    np.testing.assert_array_equal(got[1], per_channel(xs[1], equalize_ref, "HWC"))
    with pytest.raises(errors.Error) as e:
        run(lambda x: fn.experimental.equalize(x), [np.zeros((4, 4, 3), np.float32)])
    assert "equalize" in str(e.value) and "uint8" in str(e.value)
    with pytest.raises(errors.Error) as e:
        run(lambda x: fn.experimental.equalize(x), [np.zeros((4,), np.uint8)], layout="W")
    assert "equalize" in str(e.value) and "layout" in str(e.value)
