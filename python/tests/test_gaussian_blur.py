# SPDX-License-Identifier: Apache-2.0
"""fn.gaussian_blur over the layouts DALI takes, against the test's own separable convolution in
double (scipy's convolve1d, 'mirror' = reflect-101, on the spatial axes only): volumes (DHWC,
DHW), a layout-less 3-d input (all three axes spatial, not HWC), images (HWC, HW), channels first
(CWH, CHW), sequences (FHWC, FCHW, FDHWC, CFDHW); one sigma or window for every axis or one per
axis (outermost first); sigma and window_size as per-sample inputs; DALI's rules for a window
from sigma and a sigma from a window; and the errors, which name the op, the sample, the axis or
the layout."""

import numpy as np
import pytest
from scipy.ndimage import convolve1d

import sluice.fn as fn
import sluice.types as types
from sluice import errors, pipeline_def

CASES = [  # shape, layout, leading non-spatial dims, spatial axes
    ((6, 9, 11, 3), "DHWC", 0, 3),
    ((6, 9, 11), "", 0, 3),
    ((9, 11, 3), "HWC", 0, 2),
    ((9, 11), "HW", 0, 2),
    ((3, 11, 9), "CWH", 1, 2),
    ((3, 9, 11), "CHW", 1, 2),
    ((4, 9, 11, 3), "FHWC", 1, 2),
    ((4, 3, 9, 11), "FCHW", 2, 2),
    ((3, 5, 8, 7, 3), "FDHWC", 1, 3),
    ((3, 4, 5, 8, 7), "CFDHW", 2, 3),
]


def kernel(sigma, window):
    r = (window - 1) // 2
    k = np.arange(-r, r + 1, dtype=np.float64)
    w = np.exp(-k * k / (2 * sigma * sigma))
    return w / w.sum()


def axis_params(sigma, window, naxes):
    """Per-axis (sigma, window) as DALI derives them."""
    sg = np.broadcast_to(np.asarray(0.0 if sigma is None else sigma, np.float64), (naxes,))
    ws = np.broadcast_to(np.asarray(0 if window is None else window, np.int64), (naxes,))
    out = []
    for s, w in zip(sg, ws):
        if w == 0:
            w = 2 * int(np.ceil(np.float32(s) * np.float32(3))) + 1
        if s == 0:
            s = 0.3 * ((w - 1) // 2 - 1) + 0.8
        out.append((float(s), int(w)))
    return out


def reference(x, sigma, window, skip, naxes):
    y = x.astype(np.float64)
    for a, (s, w) in reversed(list(enumerate(axis_params(sigma, window, naxes)))):
        y = convolve1d(y, kernel(s, w), axis=skip + a, mode="mirror")
    return y


def random_shapes(rng, shape, n):
    return [tuple(int(rng.integers(1, e + 1)) for e in shape) for _ in range(n)]


def run(xs, layout, **kw):
    @pipeline_def(batch_size=len(xs), num_threads=3, device_id=None)
    def pipe():
        src = fn.external_source(source=lambda: xs, layout=layout or None)
        return fn.gaussian_blur(src, **kw)

    (out,) = pipe().run()
    assert out.layout() == layout
    return [np.array(out.at(i)) for i in range(len(xs))]


@pytest.mark.parametrize("shape,layout,skip,naxes", CASES)
@pytest.mark.parametrize("sigma,window", [(1.0, None), (None, 5), ([1.0, 2.0, 3.0], [7, 5, 9]),
                                          (1.0, [3, 5, 9]), (None, 11)])
def test_layouts_against_separable_reference(shape, layout, skip, naxes, sigma, window):
    rng = np.random.default_rng(abs(hash((layout, str(sigma), str(window)))) % 2**32)
    xs = [rng.integers(0, 256, s).astype(np.uint8) for s in random_shapes(rng, shape, 4)]
    sigma = sigma[:naxes] if isinstance(sigma, list) else sigma
    window = window[:naxes] if isinstance(window, list) else window
    kw = {k: v for k, v in (("sigma", sigma), ("window_size", window)) if v is not None}
    got = run(xs, layout, **kw)
    for x, g in zip(xs, got):
        ref = reference(x, sigma, window, skip, naxes)
        assert g.dtype == np.uint8 and g.shape == x.shape
        assert np.abs(g.astype(np.float64) - ref).max() <= 0.5 + 1e-3
    # float output of the same input: within float rounding
    got = run(xs, layout, dtype=types.FLOAT, **kw)
    for x, g in zip(xs, got):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, reference(x, sigma, window, skip, naxes), atol=2e-3)


def test_layoutless_3d_is_a_volume_not_hwc():
    # DALI: an input without a layout is all spatial axes, so (D, H, W) blurs along all three
    x = np.zeros((5, 7, 3), np.float32)
    x[2, 3, 1] = 1000.0
    (got,) = run([x], "", sigma=1.0)
    np.testing.assert_allclose(got, reference(x, 1.0, None, 0, 3), atol=1e-3)
    assert got[2, 3, 0] > 0 and got[2, 3, 2] > 0  # the last axis is blurred too


def test_per_sample_sigma_and_window():
    rng = np.random.default_rng(7)
    xs = [rng.uniform(0, 255, s).astype(np.float32)
          for s in random_shapes(rng, (5, 10, 12, 3), 5)]

    @pipeline_def(batch_size=5, num_threads=3, device_id=None, seed=11)
    def pipe():
        src = fn.external_source(source=lambda: xs, layout="FHWC")
        sigma = fn.random.uniform(range=[0.5, 3], shape=[2])
        window = fn.cast(fn.random.uniform(range=[1, 5], shape=[1]), dtype=types.INT32) * 2 + 1
        return (fn.gaussian_blur(src, sigma=sigma), fn.gaussian_blur(src, window_size=window),
                fn.gaussian_blur(src, sigma=sigma, window_size=window), sigma, window)

    a, b, c, sigma, window = pipe().run()
    for i, x in enumerate(xs):
        s, w = np.array(sigma.at(i)).tolist(), np.array(window.at(i)).tolist()
        np.testing.assert_allclose(np.array(a.at(i)), reference(x, s, None, 1, 2), atol=2e-3)
        np.testing.assert_allclose(np.array(b.at(i)), reference(x, None, w, 1, 2), atol=2e-3)
        np.testing.assert_allclose(np.array(c.at(i)), reference(x, s, w, 1, 2), atol=2e-3)


def test_one_sized_extents():
    for shape, layout in [((1, 10, 6), "DHW"), ((10, 1, 3), "HWC"), ((1, 10), "HW")]:
        x = np.random.default_rng(8).uniform(0, 9, shape).astype(np.float32)
        naxes = len(layout) - ("C" in layout)
        (got,) = run([x], layout, sigma=2.0, window_size=5)
        np.testing.assert_allclose(got, reference(x, 2.0, 5, 0, naxes), atol=1e-4)


@pytest.mark.parametrize("shape,layout,kw,match", [
    ((4, 5, 6, 3), "DHCW", {"sigma": 1.0}, r"layout \"DHCW\": 'C' between the spatial axes"),
    ((4, 5, 6, 3), "HFWC", {"sigma": 1.0}, r"layout \"HFWC\": 'F' between the spatial axes"),
    ((3, 2, 4, 5, 5), "FCCHW", {"sigma": 1.0}, "more than two leading 'F' or 'C'"),
    ((2, 3, 3, 3, 3, 3), "FWXYZC", {"sigma": 1.0}, r"layout \"FWXYZC\" has 4 spatial axes"),
    ((2, 3, 3, 3), "", {"sigma": 1.0}, "a layout-less input is all spatial axes: 1 to 3 dims"),
    ((9, 8, 3), "HWC", {"sigma": 0.0}, "sample 0: sigma and window_size of axis 0 are both 0"),
    ((9, 8, 3), "HWC", {"sigma": -1.0}, "sample 0: sigma -1 of axis 0 is negative"),
    ((9, 8, 3), "HWC", {"window_size": 4}, "sample 0: window_size 4 of axis 0 is even"),
    ((9, 8, 3), "HWC", {"sigma": [1.0, 2.0, 3.0]},
     "sample 0: sigma has 3 values for 2 spatial axes"),
    ((9, 8, 3), "HWC", {"window_size": [3, 5, 7, 9]}, "window_size has 4 values"),
])
def test_errors(shape, layout, kw, match):
    x = np.zeros(shape, np.uint8)
    with pytest.raises(errors.Error, match="gaussian_blur: .*" + match):
        run([x], layout, **kw)


@pytest.mark.parametrize("shape,layout,kw,sentence", [
    ((4, 5, 6, 3), "DHCW", {"sigma": 1.0},
     r"Only channel-first or channel-last layouts are supported, got: DHCW\."),
    ((4, 5, 6, 3), "HFWC", {"sigma": 1.0},
     r"For sequences, layout should begin with 'F' or 'C', got: HFWC\."),
    ((3, 2, 4, 5, 5), "FCCHW", {"sigma": 1.0},
     r"Found more the one occurrence of 'F' or 'C' axes in layout: FCCHW\."),
    ((2, 3, 3, 3, 3, 3), "FWXYZC", {"sigma": 1.0},
     r"Too many dimensions, found: 4 data axes, maximum supported is: 3\."),
    ((9, 8, 3), "HWC", {"sigma": -1.0},
     r"`sigma` must have non-negative values, got -1 for sample: 0, axis: 0\."),
    ((9, 8, 3), "HWC", {"window_size": -11},
     r"`window_size` must have non-negative values, got -11 for sample: 0, axis : 0\."),
    ((9, 8, 3), "HWC", {"sigma": 0.0},
     r"`sigma` and `window_size` shouldn't be 0 at the same time for sample: 0, axis: 0\."),
    ((9, 8, 3), "HWC", {"window_size": 2}, r"Kernel window should have odd length, got: 2\."),
    ((9, 8, 3), "HWC", {"window_size": 2},
     r"Even or non-centered windows are not supported yet, got window with even length: 2 for "
     r"sample 0\."),
])
def test_errors_carry_dalis_sentences(shape, layout, kw, sentence):
    """Each error names the op (and sample) and ends with DALI's own sentence, which DALI's tests
    match; both devices refuse alike."""
    x = np.zeros(shape, np.uint8)
    for device in ("cpu", "gpu"):
        @pipeline_def(batch_size=1, num_threads=1, device_id=None)
        def pipe():
            src = fn.external_source(source=lambda: [x], layout=layout)
            return fn.gaussian_blur(src.gpu() if device == "gpu" else src, **kw)

        with pytest.raises(RuntimeError, match="gaussian_blur: .*" + sentence):
            pipe().run()


def test_per_frame_sigma_and_window_size_on_sequences():
    """fn.per_frame: one sigma (or window) per frame of each FHWC sequence, or one for all of a
    sample's frames (a frame count of 1); each frame is blurred as an image with its own value."""
    rng = np.random.default_rng(21)
    seqs = [rng.uniform(0, 255, (3, 9, 11, 3)).astype(np.float32),
            rng.uniform(0, 255, (2, 7, 12, 3)).astype(np.float32)]
    sigmas = [np.float32([0.7, 1.5, 2.5]), np.float32([3.0])]
    windows = [np.int32([[3, 5], [5, 3], [9, 1]]), np.int32([[3, 7], [5, 1]])]  # [y, x] per frame

    @pipeline_def(batch_size=2, num_threads=2, device_id=None)
    def pipe():
        x = fn.external_source(source=lambda: seqs, layout="FHWC")
        s = fn.external_source(source=lambda: sigmas)
        w = fn.external_source(source=lambda: windows)
        return (fn.gaussian_blur(x, sigma=fn.per_frame(s)),
                fn.gaussian_blur(x, window_size=fn.per_frame(w)))

    a, b = pipe().run()
    assert a.layout() == "FHWC" and b.layout() == "FHWC"
    for i, x in enumerate(seqs):
        got_a, got_b = np.array(a.at(i)), np.array(b.at(i))
        assert got_a.shape == x.shape and got_b.shape == x.shape
        for f in range(x.shape[0]):
            s = float(sigmas[i][f if len(sigmas[i]) > 1 else 0])
            np.testing.assert_allclose(got_a[f], reference(x[f], s, None, 0, 2), atol=2e-3)
            w = windows[i][f].tolist()
            np.testing.assert_allclose(got_b[f], reference(x[f], None, w, 0, 2), atol=2e-3)
    # the frames differ in blur: frame 0 is not blurred as frame 2 (sigma 2.5) is
    assert not np.allclose(np.array(a.at(0))[0], reference(seqs[0][0], 2.5, None, 0, 2),
                           atol=1e-2)


def test_a_per_frame_argument_needs_frames_in_the_input():
    """As DALI: a per-frame argument on an input without frames is refused, in DALI's words."""
    x = np.zeros((3, 8, 8), np.uint8)

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def pipe():
        src = fn.external_source(source=lambda: [x], layout="CHW")
        w = fn.external_source(source=lambda: [np.int32([3, 5])])
        return fn.gaussian_blur(src, window_size=fn.per_frame(w))

    with pytest.raises(RuntimeError, match="gaussian_blur: argument window_size is given per "
                                           "frame, but input 0 has no frames: Tensor input for "
                                           "argument window_size is specified per frame .*"
                                           "Got layout `CHW` that does not contain frames"):
        pipe().run()
