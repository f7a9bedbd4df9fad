# SPDX-License-Identifier: Apache-2.0
"""water, sphere, jitter, paste, color_space_conversion, laplacian and
jpeg_compression_distortion against references written here: the displacement formulas with
nearest and linear sampling in numpy, the colour matrices, a numpy canvas, scipy's convolution
with reflect-101 borders, and libjpeg's own cjpeg / djpeg tools."""

import os
import shutil
import subprocess

import numpy as np
import pytest
import scipy.ndimage

import sluice.fn as fn
import sluice.types as types
from sluice import errors, pipeline_def


def run(make, xs, layout="HWC", threads=3, batch=None, seed=9, extra=()):
    batch = batch or len(xs)

    @pipeline_def(batch_size=batch, num_threads=threads, device_id=None, seed=seed)
    def pipe():
        srcs = [fn.external_source(source=lambda info: xs[info.idx_in_epoch % len(xs)],
                                   batch=False, layout=layout)]
        srcs += [fn.external_source(source=lambda info, e=e: e[info.idx_in_epoch % len(e)],
                                    batch=False) for e in extra]
        return make(*srcs)

    p = pipe()
    got = []
    for _ in range(len(xs) // batch):
        out = p.run()
        out = out if isinstance(out, (list, tuple)) else [out]
        got.append([[np.array(o.at(i)) for i in range(batch)] for o in out])
    return [sum((g[k] for g in got), []) for k in range(len(got[0]))]


def images(n=3, dtype=np.uint8, c=3, seed=1):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 255, (rng.integers(5, 30), rng.integers(5, 30), c)).astype(dtype)
            for _ in range(n)]


def sample(x, sx, sy, linear, fill):
    """x (H, W, C) at points (sx, sy) (H, W) float32: pixel (i, j) covers [j, j + 1) x [i, i + 1)."""
    h, w, c = x.shape
    inside = (sx >= 0) & (sy >= 0) & (sx < w) & (sy < h)
    out = np.empty((h, w, c), np.float64)
    out[...] = fill
    if not linear:
        ix, iy = sx.astype(np.int64), sy.astype(np.int64)
        out[inside] = x[iy[inside], ix[inside]]
        return out
    fx, fy = sx - np.float32(0.5), sy - np.float32(0.5)
    x0, y0 = np.floor(fx), np.floor(fy)
    ax, ay = (fx - x0).astype(np.float64), (fy - y0).astype(np.float64)
    x0, y0 = x0.astype(np.int64), y0.astype(np.int64)
    x1, y1 = np.clip(x0 + 1, 0, w - 1), np.clip(y0 + 1, 0, h - 1)
    x0, y0 = np.clip(x0, 0, w - 1), np.clip(y0, 0, h - 1)
    v = x.astype(np.float64)
    top = v[y0, x0] + ax[..., None] * (v[y0, x1] - v[y0, x0])
    bot = v[y1, x0] + ax[..., None] * (v[y1, x1] - v[y1, x0])
    res = top + ay[..., None] * (bot - top)
    out[inside] = res[inside]
    return out


def to_type(v, dtype):
    if np.dtype(dtype).kind == "f":
        return v.astype(dtype)
    info = np.iinfo(dtype)
    return np.clip(np.rint(v), info.min, info.max).astype(dtype)


@pytest.mark.parametrize("linear", [False, True])
def test_water(linear):
    xs = images()
    kw = dict(ampl_x=3.0, ampl_y=2.0, freq_x=0.3, freq_y=0.2, phase_x=0.5, phase_y=1.0,
              fill_value=7.0, interp_type=types.INTERP_LINEAR if linear else types.INTERP_NN)
    (got,) = run(lambda x: fn.water(x, **kw), xs)
    for x, g in zip(xs, got):
        h, w, _ = x.shape
        yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)  # DALI: at the integer coordinates
        sx = (xx + 3.0 * np.sin(0.3 * yy + 0.5)).astype(np.float32)
        sy = (yy + 2.0 * np.cos(0.2 * xx + 1.0)).astype(np.float32)
        want = to_type(sample(x, sx, sy, linear, 7.0), np.uint8)
        if linear:
            assert np.abs(g.astype(int) - want.astype(int)).max() <= 1
        else:
            np.testing.assert_array_equal(g, want)


def test_water_as_dalis_test_checks_it():
    # DALI's test_water compares fn.water with OpenCV's remap at x + dx(y) - 0.5 (OpenCV's
    # pixel centres are whole numbers); on a noise image half a pixel off is far off
    cv2 = pytest.importorskip("cv2")
    x = np.random.default_rng(3).integers(0, 255, (43, 101, 3)).astype(np.uint8)
    ax, ay, fx, fy, px, py = 2.0, 3.0, 0.06, 0.08, 0.2, 0.5
    (got,) = run(lambda a: fn.water(a, ampl_x=ax, ampl_y=ay, freq_x=fx, freq_y=fy, phase_x=px,
                                    phase_y=py, interp_type=types.INTERP_LINEAR), [x])
    h, w, _ = x.shape
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    mx = (xx + ax * np.sin(fx * yy + px) - 0.5).astype(np.float32)
    my = (yy + ay * np.cos(fy * xx + py) - 0.5).astype(np.float32)
    want = cv2.remap(x, mx, my, cv2.INTER_LINEAR)
    inner = (slice(4, -4), slice(4, -4))  # OpenCV fills outside with 0, sluice repeats edges
    d = np.abs(got[0][inner].astype(int) - want[inner].astype(int))
    # OpenCV's remap weighs in steps of 1/32 of a pixel: a few levels apart at most; at the
    # pixel centre (half a pixel off) the mean alone was about 40
    assert d.mean() < 1.5 and d.max() <= 8, (d.mean(), d.max())


def test_sphere_and_mask():
    xs = images(4, np.float32)
    masks = [np.array(m, np.int32) for m in (1, 0, 1, 1)]
    (got,) = run(lambda x, m: fn.sphere(x, mask=m), xs, extra=(masks,))
    for x, g, m in zip(xs, got, masks):
        if not m:
            np.testing.assert_array_equal(g, x)
            continue
        h, w, _ = x.shape
        mx, my = np.float32(w * 0.5), np.float32(h * 0.5)
        r = np.float32(int(max(mx, my)))
        yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
        tx, ty = xx + np.float32(0.5) - mx, yy + np.float32(0.5) - my
        rad = np.sqrt(tx * tx + ty * ty) / r
        np.testing.assert_array_equal(g, sample(x, mx + rad * tx, my + rad * ty, False, 0.0)
                                      .astype(np.float32))


def test_jitter_moves_within_the_window_and_repeats():
    xs = images(4, np.uint8)
    a = run(lambda x: fn.jitter(x, nDegree=3, fill_value=255), xs, threads=1, batch=4)[0]
    b = run(lambda x: fn.jitter(x, nDegree=3, fill_value=255), xs, threads=3, batch=2)[0]
    for x, g, g2 in zip(xs, a, b):
        np.testing.assert_array_equal(g, g2)  # the same at any thread count and batch size
        h, w, _ = x.shape
        pad = np.pad(x.astype(int), ((1, 1), (1, 1), (0, 0)), constant_values=255)
        ok = np.zeros((h, w), bool)
        for dy in (-1, 0, 1):
            for dx in (-1, 0, 1):
                ok |= (pad[1 + dy:1 + dy + h, 1 + dx:1 + dx + w] == g).all(axis=2)
        assert ok.all()
        assert (g != x).any()


def test_paste():
    xs = images(3)
    ratios = [np.array(r, np.float32) for r in (1.0, 1.5, 2.25)]
    (got,) = run(lambda x, r: fn.paste(x, ratio=r, paste_x=0.25, paste_y=1.0,
                                       fill_value=[1, 2, 3], min_canvas_size=12.0),
                 xs, extra=(ratios,))
    for x, g, r in zip(xs, got, ratios):
        h, w, _ = x.shape
        oh, ow = max(int(np.floor(h * float(r))), 12), max(int(np.floor(w * float(r))), 12)
        want = np.empty((oh, ow, 3), np.uint8)
        want[...] = [1, 2, 3]
        y0, x0 = int(1.0 * (oh - h)), int(0.25 * (ow - w))
        want[y0:y0 + h, x0:x0 + w] = x
        np.testing.assert_array_equal(g, want)


def ycbcr(rgb):
    r, g, b = (rgb[..., k] for k in range(3))
    f = np.float32
    y = f(0.299) * r + f(0.587) * g + f(0.114) * b
    cb = f(-0.16873589) * r + f(-0.33126411) * g + f(0.5) * b + f(0.5)
    cr = f(0.5) * r + f(-0.41868759) * g + f(-0.08131241) * b + f(0.5)
    return np.stack([y, cb, cr], -1)


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_color_space_conversion(dtype):
    xs = images(2, dtype) if dtype == np.uint8 else [x / np.float32(255) for x in images(2, dtype)]
    scale = np.float32(255 if dtype == np.uint8 else 1)
    outs = run(lambda x: (fn.color_space_conversion(x, image_type=types.RGB,
                                                    output_type=types.YCbCr),
                          fn.color_space_conversion(x, image_type=types.RGB,
                                                    output_type=types.GRAY),
                          fn.color_space_conversion(x, image_type=types.RGB,
                                                    output_type=types.BGR),
                          fn.color_space_conversion(
                              fn.color_space_conversion(x, image_type=types.RGB,
                                                        output_type=types.YCbCr),
                              image_type=types.YCbCr, output_type=types.RGB)), xs)
    for i, x in enumerate(xs):
        v = x.astype(np.float32) / scale
        want = ycbcr(v)
        np.testing.assert_array_equal(outs[0][i], to_type(want * scale, dtype))
        np.testing.assert_array_equal(outs[1][i], to_type(want[..., :1] * scale, dtype))
        np.testing.assert_array_equal(outs[2][i], x[..., ::-1])
        back = outs[3][i].astype(np.float64)
        assert np.abs(back - x.astype(np.float64)).max() <= (3 if dtype == np.uint8 else 1e-2)


def test_laplacian_default_is_opencv_ksize3():
    rng = np.random.default_rng(5)
    xs = [rng.uniform(-10, 10, (9, 13)).astype(np.float32),
          rng.uniform(-10, 10, (4, 6)).astype(np.float32)]
    k3 = np.array([[2, 0, 2], [0, -8, 0], [2, 0, 2]], np.float64)
    (got,) = run(lambda x: fn.laplacian(x), xs, layout="HW")
    for x, g in zip(xs, got):
        want = scipy.ndimage.convolve(x.astype(np.float64), k3, mode="mirror")
        np.testing.assert_allclose(g, want.astype(np.float32), rtol=1e-6, atol=1e-5)


def test_laplacian_windows_scale_channels_and_dtype():
    rng = np.random.default_rng(6)
    xs = [rng.integers(0, 255, (11, 12, 2)).astype(np.uint8)]
    (got, g8) = run(lambda x: (fn.laplacian(x, window_size=5, smoothing_size=[3, 1],
                                            scale=[0.5, 2.0], dtype=types.FLOAT),
                               fn.laplacian(x)), xs)
    def binom(n):
        k = np.array([1.0])
        for _ in range(n - 1):
            k = np.convolve(k, [1, 1])
        return k
    d5 = np.convolve([1, -2, 1], binom(3))
    x = xs[0].astype(np.float64)
    def along(a, k, axis):
        return scipy.ndimage.convolve1d(a, k[::-1], axis=axis, mode="mirror")
    ty = along(along(x, d5, 0), binom(1), 1)  # d/dy, smoothed along x by smoothing_size[1]
    tx = along(along(x, binom(3), 0), d5, 1)
    np.testing.assert_allclose(got[0], (0.5 * ty + 2.0 * tx).astype(np.float32), rtol=1e-6,
                               atol=1e-4)
    k3 = np.array([[2, 0, 2], [0, -8, 0], [2, 0, 2]], np.float64)
    for c in range(2):
        want = scipy.ndimage.convolve(x[..., c], k3, mode="mirror")
        np.testing.assert_array_equal(g8[0][..., c], np.clip(np.rint(want), 0, 255).astype(np.uint8))


@pytest.mark.skipif(not shutil.which("cjpeg") or not shutil.which("djpeg"),
                    reason="needs libjpeg's cjpeg and djpeg (libjpeg-turbo-progs)")
@pytest.mark.parametrize("channels", [3, 1])
def test_jpeg_compression_distortion_is_libjpegs_round_trip(tmp_path, channels):
    xs = images(2, np.uint8, channels, seed=3)
    qs = [np.array(q, np.int32) for q in (10, 80)]
    (got,) = run(lambda x, q: fn.jpeg_compression_distortion(x, quality=q), xs, extra=(qs,))
    for k, (x, g, q) in enumerate(zip(xs, got, qs)):
        h, w, c = x.shape
        src = tmp_path / ("in%d.pnm" % k)
        kind = b"P6" if c == 3 else b"P5"
        src.write_bytes(kind + b"\n%d %d\n255\n" % (w, h) + x.tobytes())
        # baseline (8-bit) quantization tables, as DALI's encoder (OpenCV's) asks libjpeg for
        jpg = subprocess.run(["cjpeg", "-quality", str(int(q)), "-baseline", str(src)],
                             capture_output=True, check=True).stdout
        pnm = subprocess.run(["djpeg", "-pnm"], input=jpg, capture_output=True, check=True).stdout
        want = np.frombuffer(pnm[-h * w * c:], np.uint8).reshape(h, w, c)
        np.testing.assert_array_equal(g, want)
        assert (g != x).any()


def test_jpeg_compression_distortion_of_sequences():
    # FHWC: every frame as that frame alone, at its sample's quality (as DALI's test checks it,
    # against the distortion of each frame sliced out)
    rng = np.random.default_rng(5)
    seqs = [rng.integers(0, 255, (4, 24, 32, 3)).astype(np.uint8) for _ in range(2)]
    frames = [f for s in seqs for f in s]
    qs = [np.array(q, np.int32) for q in (15, 70)]
    (got,) = run(lambda x, q: fn.jpeg_compression_distortion(x, quality=q), seqs, layout="FHWC",
                 extra=(qs,))
    fq = [q for q in qs for _ in range(4)]
    (alone,) = run(lambda x, q: fn.jpeg_compression_distortion(x, quality=q), frames,
                   extra=(fq,))
    for k, g in enumerate(got):
        assert g.shape == seqs[k].shape
        for f in range(4):
            np.testing.assert_array_equal(g[f], alone[4 * k + f])


def test_errors():
    xs = images(1)
    with pytest.raises(errors.Error, match="jpeg_compression_distortion: quality 0"):
        run(lambda x: fn.jpeg_compression_distortion(x, quality=0), xs)
    with pytest.raises(errors.Error, match="paste: fill_value has 2 values for n_channels 3"):
        run(lambda x: fn.paste(x, ratio=2.0, fill_value=[1, 2]), xs)
    # DALI's own sentences, which DALI's tests match, after sluice's naming of the op and sample
    with pytest.raises(errors.Error, match="paste: sample 0: ratio 0.5: ratio of less than 1 is "
                                           "not supported"):
        run(lambda x: fn.paste(x, ratio=0.5, fill_value=[1, 2, 3]), xs)
    for arg in ("paste_x", "paste_y"):
        for v in (-0.1, 1.1):
            with pytest.raises(RuntimeError, match="paste: sample 0: %s %g: %s must be in range "
                                                   r"\[0, 1\]" % (arg, v, arg)):
                run(lambda x: fn.paste(x, ratio=2.0, fill_value=0, **{arg: v}), xs)
    with pytest.raises(RuntimeError, match="paste: sample 0: min_canvas_size -1: "
                                           "min_canvas_size_ of less than 0 is not supported"):
        run(lambda x: fn.paste(x, ratio=1.1, fill_value=0, min_canvas_size=-1.0), xs)
    with pytest.raises(ValueError, match="paste: the input is 4-d, not HWC images: The number of "
                                         "dimensions 4 does not match any of the allowed layouts"):
        run(lambda x: fn.paste(x, ratio=2, fill_value=0), [np.zeros((5, 6, 7, 8), np.uint8)],
            layout="")
    with pytest.raises(errors.Error, match="color_space_conversion: sample 0: 3 channels; the "
                                           "image_type has 1"):
        run(lambda x: fn.color_space_conversion(x, image_type=types.GRAY,
                                                output_type=types.RGB), xs)
    with pytest.raises(errors.Error, match="laplacian: window_size 4"):
        run(lambda x: fn.laplacian(x, window_size=4), xs)
    with pytest.raises(errors.Error, match="jitter: nDegree 0"):
        run(lambda x: fn.jitter(x, nDegree=0), xs)
    with pytest.raises(errors.Error, match="water: the input is 1-d"):
        run(lambda x: fn.water(x), [np.zeros(4, np.uint8)], layout="")
