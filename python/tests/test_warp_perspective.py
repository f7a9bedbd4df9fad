# SPDX-License-Identifier: Apache-2.0
"""fn.experimental.warp_perspective, as DALI's: a 3x3 projective map per sample (argument,
per-sample op output or second input), pixel_origin corner or center, inverse_map, size, the
three filters and the five border modes, HWC / CHW / FHWC / FCHW and uint8 / uint16 / int16 /
float. Checked against border rows written out by hand, the identity and whole-pixel shifts
(exact), a numpy reference of the projective sampling written here, and (where OpenCV is
installed) cv2.warpPerspective. Misuses are errors naming the op."""

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.types as types
from sluice import pipeline_def

INTERP = {"nn": types.INTERP_NN, "linear": types.INTERP_LINEAR, "cubic": types.INTERP_CUBIC}


def warp(samples, layout="HWC", matrix=None, matrix_input=None, **kw):
    """The op's outputs for the samples (one batch); matrix_input: per-sample 3x3 arrays fed as
    the second input."""
    n = len(samples)

    @pipeline_def(batch_size=n, num_threads=2, device_id=None)
    def pipe():
        x = fn.external_source(source=lambda: samples, layout=layout)
        if matrix is not None:
            kw["matrix"] = matrix
        if matrix_input is not None:
            m = fn.external_source(source=lambda: matrix_input)
            return fn.experimental.warp_perspective(x, m, **kw)
        return fn.experimental.warp_perspective(x, **kw)

    p = pipe()
    p.build()
    (out,) = p.run()
    return [np.array(out.at(i)) for i in range(n)]


def border_index(p, n, mode):
    p = np.asarray(p)
    if mode == "replicate":
        return np.clip(p, 0, n - 1)
    if mode == "reflect":
        q = np.mod(p, 2 * n)
        return np.where(q >= n, 2 * n - 1 - q, q)
    if mode == "reflect_101":
        if n == 1:
            return np.zeros_like(p)
        q = np.mod(p, 2 * n - 2)
        return np.where(q >= n, 2 * n - 2 - q, q)
    if mode == "wrap":
        return np.mod(p, n)
    return np.where((p >= 0) & (p < n), p, -1)


def cubic_weights(t):
    a = -0.75
    x = t + 1
    w0 = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    w1 = ((a + 2) * t - (a + 3)) * t * t + 1
    x = 1 - t
    w2 = ((a + 2) * x - (a + 3)) * x * x + 1
    return [w0, w1, w2, 1 - w0 - w1 - w2]


def ref_warp(img, m, out_hw, interp="linear", border="constant", fill=0.0, inverse=True,
             origin="corner"):
    """numpy: an HWC image through the projective map m (destination -> source)."""
    img = img.astype(np.float64)
    h, w, c = img.shape
    m = np.asarray(m, np.float64).reshape(3, 3)
    if not inverse:
        m = np.linalg.inv(m)
    oh, ow = out_hw
    ys, xs = np.mgrid[0:oh, 0:ow].astype(np.float64)
    off = 0.5 if origin == "corner" else 0.0
    pts = np.stack([xs + off, ys + off, np.ones_like(xs)])
    q = np.tensordot(m, pts, axes=1)
    sx, sy = q[0] / q[2] - off, q[1] / q[2] - off
    fill = np.broadcast_to(np.asarray(fill, np.float64), (c,))

    def px(iy, ix):
        yy, xx = border_index(iy, h, border), border_index(ix, w, border)
        inside = (yy >= 0) & (xx >= 0)
        v = img[np.where(inside, yy, 0), np.where(inside, xx, 0)]
        return np.where(inside[..., None], v, fill)

    if interp == "nn":
        return px(np.floor(sy + 0.5).astype(np.int64), np.floor(sx + 0.5).astype(np.int64))
    x0, y0 = np.floor(sx), np.floor(sy)
    ax, ay = (sx - x0)[..., None], (sy - y0)[..., None]
    ix, iy = x0.astype(np.int64), y0.astype(np.int64)
    if interp == "linear":
        top = px(iy, ix) + ax * (px(iy, ix + 1) - px(iy, ix))
        bot = px(iy + 1, ix) + ax * (px(iy + 1, ix + 1) - px(iy + 1, ix))
        return top + ay * (bot - top)
    wx, wy = cubic_weights(ax), cubic_weights(ay)
    out = 0
    for r in range(4):
        row = sum(wx[k] * px(iy - 1 + r, ix - 1 + k) for k in range(4))
        out = out + wy[r] * row
    return out


def to_type(v, dtype):
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return np.clip(np.round(v), info.min, info.max).astype(dtype)
    return v.astype(dtype)


def test_border_modes_by_hand():
    row = np.float32([[10, 20, 30, 40, 50]])[..., None]  # one row, abcde
    shift = [1, 0, -7, 0, 1, 0, 0, 0, 1]  # destination x looks at source x - 7
    want = {"constant": [5] * 7 + [10, 20, 30],
            "replicate": [10] * 7 + [10, 20, 30],
            "reflect": [40, 50, 50, 40, 30, 20, 10, 10, 20, 30],     # ..de|edcba|abcde
            "reflect_101": [20, 30, 40, 50, 40, 30, 20, 10, 20, 30],  # ..dcb|abcde
            "wrap": [40, 50, 10, 20, 30, 40, 50, 10, 20, 30]}         # ..de|abcde
    for mode, expect in want.items():
        for interp in INTERP.values():
            (out,) = warp([row], matrix=shift, size=[1, 10], border_mode=mode,
                          fill_value=5.0, interp_type=interp)
            assert out[0, :, 0].tolist() == expect, (mode, interp, out[0, :, 0])


@pytest.mark.parametrize("interp", ["nn", "linear", "cubic"])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int16, np.float32])
def test_identity_and_whole_pixel_shift_are_exact(interp, dtype):
    rng = np.random.default_rng(3)
    img = rng.integers(0, 200, (9, 11, 3)).astype(dtype)
    (same,) = warp([img], matrix=np.eye(3).ravel().tolist(), interp_type=INTERP[interp])
    assert same.dtype == dtype and np.array_equal(same, img)
    m = [1, 0, 2, 0, 1, -3, 0, 0, 1]  # (x, y) <- (x + 2, y - 3)
    (out,) = warp([img], matrix=m, interp_type=INTERP[interp], border_mode="replicate")
    want = img[np.clip(np.arange(9) - 3, 0, 8)][:, np.clip(np.arange(11) + 2, 0, 10)]
    assert np.array_equal(out, want)


def random_projective(rng):
    m = np.eye(3) + rng.uniform(-0.08, 0.08, (3, 3))
    m[2] = [rng.uniform(-0.003, 0.003), rng.uniform(-0.003, 0.003), 1]
    m[0, 2], m[1, 2] = rng.uniform(-5, 5), rng.uniform(-5, 5)
    return m.astype(np.float32)


@pytest.mark.parametrize("interp", ["nn", "linear", "cubic"])
@pytest.mark.parametrize("border", ["constant", "replicate", "reflect", "reflect_101", "wrap"])
def test_vs_numpy_reference(interp, border):
    rng = np.random.default_rng(11)
    imgs = [rng.uniform(0, 255, (rng.integers(20, 40), rng.integers(20, 40), 3)).astype(np.float32)
            for _ in range(3)]
    mats = [random_projective(rng) for _ in imgs]
    outs = warp(imgs, matrix_input=mats, interp_type=INTERP[interp], border_mode=border,
                fill_value=[7.0, 8.0, 9.0], size=[25, 30])
    for img, m, out in zip(imgs, mats, outs):
        want = ref_warp(img, m, (25, 30), interp, border, [7, 8, 9])
        assert out.shape == (25, 30, 3)
        np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-2)


def test_layouts_sequences_inverse_map_and_origin():
    rng = np.random.default_rng(5)
    hwc = rng.integers(0, 255, (16, 20, 2)).astype(np.uint8)
    m = random_projective(rng)
    base = ref_warp(hwc, m, (16, 20), fill=0)
    (out,) = warp([hwc], matrix=m.ravel().tolist())
    assert np.abs(out.astype(int) - to_type(base, np.uint8).astype(int)).max() <= 1
    (chw,) = warp([np.ascontiguousarray(hwc.transpose(2, 0, 1))], layout="CHW",
                  matrix=m.ravel().tolist())
    assert np.array_equal(chw.transpose(1, 2, 0), out)
    seq = np.stack([hwc, 255 - hwc])
    (fhwc,) = warp([seq], layout="FHWC", matrix=m.ravel().tolist())
    (second,) = warp([255 - hwc], matrix=m.ravel().tolist())
    assert np.array_equal(fhwc[0], out) and np.array_equal(fhwc[1], second)
    (fchw,) = warp([np.ascontiguousarray(seq.transpose(0, 3, 1, 2))], layout="FCHW",
                   matrix=m.ravel().tolist())
    assert np.array_equal(fchw.transpose(0, 2, 3, 1), fhwc)
    # inverse_map=False: the map from source to destination, inverted
    inv = np.linalg.inv(m.astype(np.float64)).astype(np.float32)
    (fwd,) = warp([hwc.astype(np.float32)], matrix=inv.ravel().tolist(), inverse_map=False)
    (direct,) = warp([hwc.astype(np.float32)], matrix=m.ravel().tolist())
    np.testing.assert_allclose(fwd, direct, atol=1e-2)
    # pixel_origin="center": (0, 0) is the first pixel's centre
    (ctr,) = warp([hwc.astype(np.float32)], matrix=m.ravel().tolist(), pixel_origin="center")
    np.testing.assert_allclose(ctr, ref_warp(hwc, m, (16, 20), origin="center"), atol=1e-2)


def test_per_sample_matrix_and_size():
    rng = np.random.default_rng(9)
    imgs = [rng.uniform(0, 1, (12, 14, 1)).astype(np.float32) for _ in range(2)]
    mats = [random_projective(rng) for _ in imgs]
    sizes = [np.float32([10, 9]), np.float32([13, 15])]

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        x = fn.external_source(source=lambda: imgs, layout="HWC")
        m = fn.external_source(source=lambda: mats)
        s = fn.external_source(source=lambda: sizes)
        return fn.experimental.warp_perspective(x, matrix=m, size=s)

    p = pipe()
    p.build()
    (out,) = p.run()
    for i in range(2):
        want = ref_warp(imgs[i], mats[i], tuple(int(v) for v in sizes[i]))
        np.testing.assert_allclose(np.array(out.at(i)), want, atol=1e-4)


def test_vs_opencv():
    cv2 = pytest.importorskip("cv2")
    rng = np.random.default_rng(21)
    # a smooth image: OpenCV samples at 1/32 pixel and weighs in 1/1024ths, which moves sharp
    # edges by a level or more (DALI's own test allows a mean error of 1 on uint8)
    ys, xs = np.mgrid[0:48, 0:64]
    img = np.stack([128 + 100 * np.sin(xs / 7 + k) * np.cos(ys / 5) for k in range(3)], -1)
    img = img.round().astype(np.uint8)
    m = random_projective(rng)
    shift = np.float32([[1, 0, 0.5], [0, 1, 0.5], [0, 0, 1]])
    cv_m = np.linalg.inv(shift) @ m @ shift  # OpenCV's origin is the first pixel's centre
    for interp, cv_interp in (("linear", cv2.INTER_LINEAR), ("cubic", cv2.INTER_CUBIC)):
        (out,) = warp([img], matrix=m.ravel().tolist(), interp_type=INTERP[interp],
                      border_mode="reflect_101")
        want = cv2.warpPerspective(img, cv_m, (64, 48), flags=cv_interp | cv2.WARP_INVERSE_MAP,
                                   borderMode=cv2.BORDER_REFLECT_101)
        diff = np.abs(out.astype(int) - want.astype(int))
        assert diff.mean() < 0.3 and diff.max() <= 2, (interp, diff.mean(), diff.max())


def failing(make):
    with pytest.raises(sluice.Error) as e:
        make()
    return str(e.value)


def test_misuses_are_named():
    img = [np.zeros((4, 4, 3), np.float32)]
    eye = np.eye(3, dtype=np.float32)
    cases = [
        (lambda: warp(img, matrix=eye.ravel().tolist(), matrix_input=[eye]),
         "Matrix input and `matrix` argument should not be provided at the same time"),
        (lambda: warp(img, matrix_input=[eye.astype(np.int16)]),
         "Transformation matrix can be provided only as float32 values. Got int16."),
        (lambda: warp(img, matrix_input=[np.ones((3, 4), np.float32)]),
         "Expected a uniform list of 3x3 matrices. Instead got data with shape: {3, 4}"),
        (lambda: warp(img, matrix=eye.ravel().tolist(), border_mode="foo"),
         "Unknown border mode: foo"),
        (lambda: warp(img, matrix=[1.0, 2.0]), "matrix wants 9 values"),
        (lambda: warp(img, matrix=eye.ravel().tolist(), pixel_origin="middle"),
         "pixel_origin middle"),
        (lambda: warp([np.zeros((4, 4, 3), np.float64)], matrix=eye.ravel().tolist()),
         "input type float64"),
        (lambda: warp([np.zeros((4, 4), np.float32)], layout="HW", matrix=eye.ravel().tolist()),
         "must be HWC, CHW, FHWC or FCHW"),
        (lambda: warp(img, matrix=[0.0] * 9, inverse_map=False), "not invertible"),
        (lambda: warp(img, matrix=eye.ravel().tolist(), fill_value=[1.0, 2.0]),
         "fill_value has 2 values for 3 channels"),
        (lambda: warp(img), "give the matrix"),
    ]
    for make, msg in cases:
        got = failing(make)
        assert "experimental.warp_perspective" in got and msg in got, (msg, got)
