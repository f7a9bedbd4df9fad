# SPDX-License-Identifier: Apache-2.0
"""sluice.auto_aug.augmentations, each at fixed magnitude bins and signs, against references
written here in numpy: the warps by their source-point formulas (pixel centres at +0.5, bilinear,
fill 128), PIL's enhance formulas (brightness, contrast about the grey mean, colour in YIQ,
sharpness by its 3x3 kernel), posterize, solarize, solarize_add, invert, OpenCV's
equalization, auto_contrast. Also per-sample bins (an op output), the parameter tables of the
`@augmentation` decorator, and its errors."""

import warnings

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.types as types
from sluice import pipeline_def
from sluice.auto_aug import augmentations as a
from sluice.auto_aug.core import Policy, augmentation, signed_bin

BINS = 11


def images(n=4, seed=1, lo=0, hi=256):
    rng = np.random.default_rng(seed)
    return [rng.integers(lo, hi, (int(rng.integers(5, 24)), int(rng.integers(5, 24)), 3))
            .astype(np.uint8) for _ in range(n)]


def run(make, xs, extra=()):
    @pipeline_def(batch_size=len(xs), num_threads=2, device_id=None, seed=5)
    def pipe():
        x = fn.external_source(source=lambda: xs, layout="HWC")
        srcs = [fn.external_source(source=lambda e=e: e) for e in extra]
        return make(x, *srcs)

    (out,) = pipe().run()
    return [np.array(out.at(i)) for i in range(len(xs))]


def magnitude(rng_lo, rng_hi, b, sign=0):
    m = np.linspace(rng_lo, rng_hi, BINS, dtype=np.float32)[b]
    return -m if sign else m


def call(aug, b, sign=None, **kw):
    """aug at bin b (and a fixed sign) inside a pipeline"""
    def make(x, *extra):
        mb = b if sign is None else signed_bin(b, random_sign=types.Constant(np.int32(sign)))
        return aug(x, magnitude_bin=mb, num_magnitude_bins=BINS, **kw)
    return make


def bilinear(x, sx, sy, fill=128.0):
    """x (H, W, C) sampled at source points (sx, sy), as warp_affine does"""
    h, w, _ = x.shape
    fx, fy = sx - 0.5, sy - 0.5
    x0, y0 = np.floor(fx), np.floor(fy)
    ax, ay = (fx - x0)[..., None], (fy - y0)[..., None]
    x0, y0 = x0.astype(np.int64), y0.astype(np.int64)
    v = x.astype(np.float64)

    def px(yy, xx):
        inside = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
        out = np.full(yy.shape + (x.shape[2],), fill)
        out[inside] = v[yy[inside], xx[inside]]
        return out

    a_, b_, c_, d_ = px(y0, x0), px(y0, x0 + 1), px(y0 + 1, x0), px(y0 + 1, x0 + 1)
    top = a_ + ax * (b_ - a_)
    bot = c_ + ax * (d_ - c_)
    return top + ay * (bot - top)


def warp_ref(x, inv):
    """destination (x, y) samples the source at inv @ (x + 0.5, y + 0.5, 1)"""
    h, w, _ = x.shape
    dy, dx = np.mgrid[0:h, 0:w].astype(np.float64) + 0.5
    sx = inv[0][0] * dx + inv[0][1] * dy + inv[0][2]
    sy = inv[1][0] * dx + inv[1][1] * dy + inv[1][2]
    return bilinear(x, sx, sy)


def u8(v):
    return np.clip(np.rint(v), 0, 255).astype(np.uint8)


def close(got, want, tol=1):
    assert got.shape == want.shape and got.dtype == np.uint8
    d = np.abs(got.astype(np.int64) - want.astype(np.int64))
    assert d.max() <= tol, "max difference %d" % d.max()


@pytest.mark.parametrize("b, sign", [(4, 0), (9, 1), (0, 0)])
def test_shears(b, sign):
    xs = images()
    s = float(magnitude(0, 0.3, b, sign))
    for aug, inv in ((a.shear_x, [[1, -s, 0], [0, 1, 0]]), (a.shear_y, [[1, 0, 0], [-s, 1, 0]])):
        got = run(call(aug, b, sign), xs)
        for x, g in zip(xs, got):
            close(g, u8(warp_ref(x, inv)))


def test_translations_in_pixels_and_relative():
    xs = images()
    o = float(magnitude(0, 250, 1, 1))  # -25 pixels
    got = run(call(a.translate_x_no_shape, 1, 1), xs)
    for x, g in zip(xs, got):
        close(g, u8(warp_ref(x, [[1, 0, -o], [0, 1, 0]])))
    got = run(call(a.translate_y_no_shape, 1, 0), xs)
    for x, g in zip(xs, got):
        close(g, u8(warp_ref(x, [[1, 0, 0], [0, 1, -o * -1]])))
    # relative to each image's shape: a fifth of its width / height
    tx = a.translate_x.augmentation(mag_range=(0, 0.5))
    ty = a.translate_y.augmentation(mag_range=(0, 0.5))
    r = float(np.linspace(0, 0.5, BINS, dtype=np.float32)[4])
    for aug, sign, inv in ((tx, 0, lambda h, w: [[1, 0, -np.float32(r) * w], [0, 1, 0]]),
                           (ty, 1, lambda h, w: [[1, 0, 0], [0, 1, np.float32(r) * h]])):
        got = run(lambda x: call(aug, 4, sign, shape=fn.shapes(x))(x), xs)
        for x, g in zip(xs, got):
            close(g, u8(warp_ref(x, inv(*x.shape[:2]))))


def test_rotate_keeps_the_size():
    xs = images()
    deg = float(magnitude(0, 30, 7, 1))
    got = run(call(a.rotate, 7, 1), xs)
    for x, g in zip(xs, got):
        h, w, _ = x.shape
        t = np.deg2rad(deg)
        cs, sn = np.cos(t), np.sin(t)
        ox, oy = w / 2, h / 2
        inv = [[cs, -sn, w / 2 - cs * ox + sn * oy], [sn, cs, h / 2 - sn * ox - cs * oy]]
        close(g, u8(warp_ref(x, inv)))


def test_fill_value_none_clamps_and_nearest():
    xs = images(2)
    got = run(call(a.translate_x_no_shape, 10, 0, fill_value=None,
                   interp_type=types.INTERP_NN), xs)
    for x, g in zip(xs, got):  # shifted right by 250: every pixel is the left column
        np.testing.assert_array_equal(g, np.repeat(x[:, :1], x.shape[1], axis=1))


def yiq_saturation(x, s):
    yiq = np.array([[.299, .587, .114], [.596, -.274, -.321], [.211, -.523, .311]],
                   np.float32).astype(np.float64)
    m = np.linalg.inv(yiq) @ np.diag([1, s, s]) @ yiq
    return x.astype(np.float64) @ m.T


@pytest.mark.parametrize("b, sign", [(3, 0), (8, 1)])
def test_enhance_ops(b, sign):
    xs = images(seed=2)
    p = 1 + float(magnitude(0, 0.9, b, sign))
    for x, g in zip(xs, run(call(a.brightness, b, sign), xs)):
        close(g, u8(x.astype(np.float64) * p))
    for x, g in zip(xs, run(call(a.contrast, b, sign), xs)):
        grey = float((x.reshape(-1, 3).mean(0) * [0.299, 0.587, 0.114]).sum())
        close(g, u8(grey + (x.astype(np.float64) - grey) * p))
    for x, g in zip(xs, run(call(a.color, b, sign), xs)):
        close(g, u8(yiq_saturation(x, p)))
    k = a.sharpness_kernel(np.float32(magnitude(0, 0.9, b, sign)))
    for x, g in zip(xs, run(call(a.sharpness, b, sign), xs)):
        pad = np.pad(x.astype(np.float64), ((1, 1), (1, 1), (0, 0)), "reflect")
        h, w, _ = x.shape
        want = sum(k[i, j] * pad[i:i + h, j:j + w] for i in range(3) for j in range(3))
        close(g, u8(want))


def test_sharpness_kernel_matches_pil_smooth_filter():
    # PIL's SMOOTH kernel (1 1 1 / 1 5 1 / 1 1 1, / 13) blended with the identity: magnitude 1
    # doubles the image less its blur, -1 is the blur
    k = a.sharpness_kernel(1.0)
    assert np.isclose(k.sum(), 1) and np.isclose(k[1, 1], 2 - 5 / 13)
    np.testing.assert_allclose(a.sharpness_kernel(-1.0),
                               np.array([[1, 1, 1], [1, 5, 1], [1, 1, 1]]) / 13, rtol=1e-6)


@pytest.mark.parametrize("b", [0, 2, 6, 10])
def test_posterize_solarize_invert(b):
    xs = images(seed=3)
    bits = int(min(max(np.round(magnitude(0, 4, b)), 1), 8))
    mask = 255 ^ (2 ** (8 - bits) - 1)
    for x, g in zip(xs, run(call(a.posterize, b), xs)):
        np.testing.assert_array_equal(g, x & mask)
    t = magnitude(256, 0, b)
    for x, g in zip(xs, run(call(a.solarize, b), xs)):
        np.testing.assert_array_equal(g, np.where(x < t, x, 255 - x))
    shift = int(magnitude(0, 110, b))
    for x, g in zip(xs, run(call(a.solarize_add, b), xs)):
        np.testing.assert_array_equal(g, np.where(x < 128, x.astype(np.int32) + shift, x))
    for x, g in zip(xs, run(call(a.invert, None), xs)):
        np.testing.assert_array_equal(g, 255 - x)
    for x, g in zip(xs, run(call(a.identity, None), xs)):
        np.testing.assert_array_equal(g, x)


def equalize_ref(p):
    hist = np.bincount(p.ravel(), minlength=256)
    lo = int(np.flatnonzero(hist)[0])
    if hist[lo] == p.size:
        return p.copy()
    scale = np.float32(255) / np.float32(p.size - hist[lo])
    lut = np.clip(np.rint((np.cumsum(hist) - hist[lo]).astype(np.float32) * scale), 0, 255)
    lut[:lo + 1] = 0
    return lut.astype(np.uint8)[p]


def test_equalize_and_auto_contrast():
    xs = images(seed=4, lo=40, hi=170)
    xs.append(np.full((6, 7, 3), 9, np.uint8))  # flat: auto_contrast leaves it
    for x, g in zip(xs, run(call(a.equalize, None), xs)):
        np.testing.assert_array_equal(g, np.stack([equalize_ref(x[..., c]) for c in range(3)],
                                                  axis=2))
    for x, g in zip(xs, run(call(a.auto_contrast, None), xs)):
        lo, hi = x.min(axis=(0, 1)), x.max(axis=(0, 1))
        spread = (hi - lo).astype(np.float32)
        scale = np.where(spread > 0, np.float32(255) / np.where(spread > 0, spread, 1), 1)
        want = np.where(spread > 0, (x.astype(np.float64) - lo) * scale, x)
        close(g, u8(want))


def test_per_sample_bins_and_signs():
    """bins and signs as op outputs: each sample its own parameter from the table"""
    xs = images(6, seed=5)
    bins = [np.array(v, np.int32) for v in (0, 3, 10, 5, 7, 1)]
    signs = [np.array(v, np.int32) for v in (0, 1, 1, 0, 1, 0)]

    def make(x, b, s):
        return a.brightness(x, magnitude_bin=signed_bin(b, random_sign=s), num_magnitude_bins=BINS)

    got = run(make, xs, (bins, signs))
    for x, g, b, s in zip(xs, got, bins, signs):
        close(g, u8(x.astype(np.float64) * (1 + magnitude(0, 0.9, int(b), int(s)))))
    got = run(lambda x, b: a.posterize(x, magnitude_bin=b, num_magnitude_bins=BINS), xs, (bins,))
    for x, g, b in zip(xs, got, bins):
        bits = int(min(max(np.round(magnitude(0, 4, int(b))), 1), 8))
        np.testing.assert_array_equal(g, x & (255 ^ (2 ** (8 - bits) - 1)))


def test_unsigned_bin_warns_and_draws_the_sign():
    xs = images(8, seed=6)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = run(call(a.brightness, 9), xs)
    assert any("signed_bin" in str(x.message) for x in w)
    m = float(magnitude(0, 0.9, 9))
    for x, g in zip(xs, got):
        up, down = u8(x.astype(np.float64) * (1 + m)), u8(x.astype(np.float64) * (1 - m))
        assert np.abs(g.astype(int) - up).max() <= 1 or np.abs(g.astype(int) - down).max() <= 1


def test_custom_augmentation_and_errors():
    @augmentation(mag_range=(0, 100), as_param=lambda m: np.uint8(m))
    def add(sample, v):
        return sample + v

    xs = images(2, hi=100)
    got = run(call(add, 5), xs)
    for x, g in zip(xs, got):
        np.testing.assert_array_equal(g, x + np.uint8(50))
    assert add.name == "add" and add.augmentation(name="plus").name == "plus"
    with pytest.raises(TypeError, match="applied to already decorated Augmentation"):
        augmentation(add)
    with pytest.raises(TypeError, match="accepts 1 positional argument"):
        augmentation(lambda sample: sample)
    with pytest.raises(ValueError, match="num_magnitude_bins"):
        run(lambda x: add(x, magnitude_bin=1), xs)
    with pytest.raises(ValueError, match="outside"):
        run(lambda x: add(x, magnitude_bin=11, num_magnitude_bins=BINS), xs)
    bad = augmentation(lambda s, p: s, mag_range=(0, 1), as_param=lambda m: [0] * int(m * 3),
                       name="bad")
    with pytest.raises(ValueError,
                       match="the same type and shape .*has shape \\(1,\\) and type int64"):
        run(lambda x: bad(x, magnitude_bin=types.Constant(np.int32(1)), num_magnitude_bins=3), xs)
    with pytest.raises(Exception, match="needs an argument.*shape"):
        run(call(a.translate_x, 1, 0), xs)


def test_mag_to_param_param_device_and_resets():
    # DALI's names: mag_to_param (as_param is the older one), param_device "cpu", "gpu", "auto"
    @augmentation(mag_range=(0, 10), mag_to_param=lambda m: np.float32([m, m + 1]))
    def param(sample, p):
        return p

    assert param.mag_to_param(3.0).tolist() == [3.0, 4.0] and param.as_param is param.mag_to_param
    x = types.Constant(np.uint8(7))

    def outputs(aug):
        @pipeline_def(batch_size=2, num_threads=1, device_id=None)
        def pipe():
            return aug(x, magnitude_bin=2, num_magnitude_bins=6), aug(x.gpu(), magnitude_bin=2,
                                                                       num_magnitude_bins=6)
        p = pipe()
        p.build()
        return p.run()

    for device, want in (("cpu", (False, False)), ("gpu", (True, True)), ("auto", (False, True))):
        cpu_sample, gpu_sample = outputs(param.augmentation(param_device=device))
        assert (isinstance(cpu_sample, sluice.TensorListGPU),
                isinstance(gpu_sample, sluice.TensorListGPU)) == want, device
        got = cpu_sample.as_cpu() if want[0] else cpu_sample
        assert np.array(got.at(0)).tolist() == [4.0, 5.0]
    reset = param.augmentation(param_device="gpu", mag_to_param=None)
    assert reset.param_device == "gpu" and reset.mag_to_param is np.array
    assert param.augmentation(param_device=None).param_device == "cpu"
    with pytest.raises(TypeError, match="mag_to_param or its older name as_param"):
        augmentation(lambda s, p: s, mag_to_param=np.array, as_param=np.array)
    with pytest.raises(ValueError, match="param_device 'tpu'"):
        param.augmentation(param_device="tpu")


def test_unused_kwargs_named():
    from sluice.auto_aug.core._args import UnusedArgException, forbid_unused_kwargs

    @augmentation
    def one(sample, _, a):
        return sample

    forbid_unused_kwargs([one], {"a": 1}, "scheme")
    with pytest.raises(UnusedArgException, match="The kwarg `b` is not used"):
        forbid_unused_kwargs([one], {"a": 1, "b": 2}, "scheme")
    with pytest.raises(UnusedArgException, match="The kwargs `b, c` are not used"):
        forbid_unused_kwargs([one], {"b": 2, "c": 3}, "scheme")


def test_policy_checks():
    with pytest.raises(ValueError, match="num_magnitude_bins"):
        Policy("p", 0, [])
    with pytest.raises(TypeError, match="triple"):
        Policy("p", 3, [[(a.invert, 0.5)]])
    with pytest.raises(ValueError, match="probability"):
        Policy("p", 3, [[(a.invert, 1.5, None)]])
    with pytest.raises(ValueError, match="magnitude 3"):
        Policy("p", 3, [[(a.rotate, 0.5, 3)]])
    with pytest.raises(TypeError, match="not an augmentation"):
        Policy("p", 3, [[(lambda x: x, 0.5, 1)]])
    # two augmentations of one name are numbered apart
    r1, r2 = a.rotate.augmentation((0, 10)), a.rotate.augmentation((0, 20))
    p = Policy("p", 3, [[(r1, 0.5, 1)], [(r2, 0.5, 2), (a.invert, 1.0, None)]])
    assert sorted(p.augmentations) == ["0__rotate", "1__rotate", "2__invert"]
    assert "Policy(name='p'" in repr(p)


def test_subscript_by_an_op_output():
    """`table[idx]` with idx an op output: the parameter lookup the augmentations make"""
    from sluice import errors
    table = np.arange(24, dtype=np.float32).reshape(4, 3, 2)
    idx = [np.array(v, np.int32) for v in (3, 0, -1, 2)]
    xs = images(4)
    got = run(lambda x, i: types.Constant(table)[i], xs, (idx,))
    for g, i in zip(got, idx):
        np.testing.assert_array_equal(g, table[int(i)])
    got = run(lambda x, i: types.Constant(table)[1:, i], xs, ([np.int64(k % 3) for k in range(4)],))
    for k, g in enumerate(got):
        np.testing.assert_array_equal(g, table[1:, k % 3])
    with pytest.raises(errors.Error, match="tensor_subscript: sample 1: index 4 of dim 0"):
        run(lambda x, i: types.Constant(table)[i], xs, ([np.int32(0), np.int32(4)] * 2,))
    with pytest.raises(errors.Error, match="one integer per sample"):
        run(lambda x, i: types.Constant(table)[i], xs, ([np.array([0, 1], np.int32)] * 4,))
    got = run(lambda x, i: types.Constant(table)[i, i % 3], xs, (idx,))  # two op outputs
    for g, i in zip(got, idx):
        np.testing.assert_array_equal(g, table[int(i), int(i) % 3])
