# SPDX-License-Identifier: Apache-2.0
"""fn.clahe, as DALI documents it (OpenCV's algorithm): checked against a numpy CLAHE written here
from that description: the image extended by mirroring (edge not repeated) to a multiple of the
tile grid when a side does not divide, 256-bin tile histograms clipped at
int(clip_limit * area / 256) with the excess spread over every bin and the remainder one by one
in steps of 256 / remainder, each tile's map its running sum scaled to 0..255, and every pixel
the bilinear blend, in float32, of the four surrounding tiles' maps."""

import math

import numpy as np
import pytest

import sluice.fn as fn
from sluice.pipeline import Pipeline

f32 = np.float32


def ref_plane(img, tx, ty, clip):
    """CLAHE of one uint8 plane (h, w)"""
    h, w = img.shape
    if h % ty or w % tx:  # both sides extended when either does not divide
        ext = np.pad(img, ((0, ty - h % ty), (0, tx - w % tx)), mode="reflect")
    else:
        ext = img
    th, tw = ext.shape[0] // ty, ext.shape[1] // tx
    area = th * tw
    limit = max(int(float(f32(clip)) * area / 256), 1) if clip > 0 else 0
    luts = np.zeros((ty, tx, 256), np.uint8)
    scale = f32(255) / f32(area)
    for j in range(ty):
        for i in range(tx):
            hist = np.bincount(ext[j * th:(j + 1) * th, i * tw:(i + 1) * tw].ravel(),
                               minlength=256).astype(np.int64)
            if limit:
                clipped = int(np.maximum(hist - limit, 0).sum())
                hist = np.minimum(hist, limit) + clipped // 256
                rest = clipped % 256
                if rest:
                    step = max(256 // rest, 1)
                    k = 0
                    while k < 256 and rest > 0:
                        hist[k] += 1
                        k += step
                        rest -= 1
            cdf = np.cumsum(hist)
            luts[j, i] = np.clip(np.rint(cdf.astype(f32) * scale), 0, 255).astype(np.uint8)
    out = np.zeros_like(img)
    itw, ith = f32(1) / f32(tw), f32(1) / f32(th)
    for y in range(h):
        tyf = f32(y) * ith - f32(0.5)
        t1 = math.floor(tyf)
        ya = f32(tyf - f32(t1))
        ya1 = f32(1) - ya
        y1, y2 = max(t1, 0), min(t1 + 1, ty - 1)
        for x in range(w):
            txf = f32(x) * itw - f32(0.5)
            s1 = math.floor(txf)
            xa = f32(txf - f32(s1))
            xa1 = f32(1) - xa
            x1, x2 = max(s1, 0), min(s1 + 1, tx - 1)
            v = img[y, x]
            top = f32(f32(luts[y1, x1, v]) * xa1) + f32(f32(luts[y1, x2, v]) * xa)
            bottom = f32(f32(luts[y2, x1, v]) * xa1) + f32(f32(luts[y2, x2, v]) * xa)
            r = f32(f32(top * ya1) + f32(bottom * ya))
            out[y, x] = np.clip(np.rint(r), 0, 255)
    return out


def run(imgs, layout="HWC", **kw):
    p = Pipeline(batch_size=len(imgs), num_threads=2, device_id=None)
    with p:
        x = fn.external_source(source=lambda: imgs, layout=layout)
        p.set_outputs(fn.clahe(x, **kw))
    (out,) = p.run()
    return [np.array(out.at(i)) for i in range(len(imgs))]


def low_contrast(shape, seed):
    rng = np.random.default_rng(seed)
    base = rng.integers(70, 140, shape)
    ramp = np.linspace(0, 40, shape[1])[None, :, None] if len(shape) == 3 else \
        np.linspace(0, 40, shape[1])[None, :]
    return np.clip(base + ramp, 0, 255).astype(np.uint8)


@pytest.mark.parametrize("shape,tx,ty,clip", [
    ((64, 64), 8, 8, 2.0),       # tiles divide the image
    ((50, 37), 4, 3, 3.0),       # neither divides: both sides mirrored out
    ((48, 37), 4, 3, 1.0),       # only the width does not divide: the height is extended too
    ((31, 29), 1, 1, 40.0),      # one tile: clipping rarely bites
    ((40, 40), 5, 2, 0.0),       # clip_limit 0: no clipping (plain adaptive equalization)
    ((9, 11), 6, 7, 2.5),        # tiles of a pixel or two
])
def test_gray_against_the_reference(shape, tx, ty, clip):
    img = low_contrast(shape, seed=shape[0])
    got = run([img[..., None]], tiles_x=tx, tiles_y=ty, clip_limit=clip)[0]
    assert got.shape == shape + (1,) and got.dtype == np.uint8
    assert np.array_equal(got[..., 0], ref_plane(img, tx, ty, clip))
    hw = run([img], layout="HW", tiles_x=tx, tiles_y=ty, clip_limit=clip)[0]
    assert np.array_equal(hw, got[..., 0])


def test_rgb_per_channel_against_the_reference():
    img = low_contrast((33, 45, 3), seed=3)
    got = run([img], tiles_x=4, tiles_y=4, clip_limit=2.0, luma_only=False)[0]
    for c in range(3):
        assert np.array_equal(got[..., c], ref_plane(img[..., c], 4, 4, 2.0)), c


def test_clahe_raises_the_contrast_of_a_dull_image_and_clipping_limits_it():
    img = low_contrast((64, 64, 1), seed=5)
    gentle, strong = run([img, img], tiles_x=8, tiles_y=8, clip_limit=1.5)[0], \
        run([img], tiles_x=8, tiles_y=8, clip_limit=8.0)[0]
    assert img.std() < gentle.std() < strong.std()


M = np.array([[0.412453, 0.357580, 0.180423], [0.212671, 0.715160, 0.072169],
              [0.019334, 0.119193, 0.950227]])
WHITE = np.array([0.950456, 1.0, 1.088754])


def lab(rgb):
    c = rgb / 255.0
    lin = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    t = lin @ M.T / WHITE
    f = np.where(t > 216 / 24389, np.cbrt(t), 841 / 108 * t + 16 / 116)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]),
                     200 * (f[..., 1] - f[..., 2])], -1)


def rgb(lab_px):
    fy = (lab_px[..., 0] + 16) / 116
    f = np.stack([lab_px[..., 1] / 500 + fy, fy, fy - lab_px[..., 2] / 200], -1)
    d = 6 / 29
    t = np.where(f > d, f ** 3, 3 * d * d * (f - 4 / 29)) * WHITE
    lin = t @ np.linalg.inv(M).T
    c = np.where(lin <= 0.0031308, 12.92 * lin, 1.055 * np.abs(lin) ** (1 / 2.4) - 0.055)
    return np.clip(np.rint(c * 255), 0, 255)


def test_rgb_luma_only_equalizes_the_lightness_and_keeps_the_colour():
    rng = np.random.default_rng(6)
    img = np.clip(low_contrast((40, 48, 3), seed=7).astype(int) +
                  rng.integers(-30, 30, (1, 1, 3)), 0, 255).astype(np.uint8)
    got = run([img], tiles_x=4, tiles_y=5, clip_limit=2.0)[0]
    src = lab(img.astype(np.float64))
    l8 = np.clip(np.rint(src[..., 0] * 255 / 100), 0, 255).astype(np.uint8)
    want_l8 = ref_plane(l8, 4, 5, 2.0)
    want = rgb(np.stack([want_l8.astype(np.float64) * 100 / 255, src[..., 1], src[..., 2]], -1))
    diff = np.abs(got.astype(int) - want)
    # float32 in the op, float64 here: a pixel whose L* lands on a rounding tie may take the next
    # level, which the tile maps can stretch; all others agree within a level
    assert (diff > 1).mean() < 0.01 and np.median(diff) == 0, (diff.max(), (diff > 1).mean())
    out_lab = lab(got.astype(np.float64))
    assert np.abs(out_lab[..., 1:] - src[..., 1:]).mean() < 1.5  # the colour kept
    assert out_lab[..., 0].std() > src[..., 0].std() * 1.3         # the lightness stretched
    gray = np.repeat(img[..., :1], 3, axis=2)
    g = run([gray], tiles_x=4, tiles_y=5, clip_limit=2.0)[0].astype(int)
    assert np.abs(g - g[..., :1]).max() <= 1  # a gray image stays gray


@pytest.mark.parametrize("make,kw,message", [
    (lambda: np.zeros((8, 8, 1), np.float32), {}, "input of type float32 .uint8 only"),
    (lambda: np.zeros((8, 8, 4), np.uint8), {}, "sample 0: 4 channels .1 or 3."),
    (lambda: np.zeros((8, 8, 1), np.uint8), dict(bins=128), "bins = 128: 256 only"),
    (lambda: np.zeros((8, 8, 1), np.uint8), dict(tiles_x=0), "tiles_x = 0"),
])
def test_refusals(make, kw, message):
    args = dict(tiles_x=2, tiles_y=2, clip_limit=2.0)
    args.update(kw)
    with pytest.raises(Exception, match=message):
        run([make()], **args)


def test_required_arguments():
    p = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with p:
        x = fn.external_source(source=lambda: [np.zeros((4, 4, 1), np.uint8)], layout="HWC")
        with pytest.raises(TypeError, match="missing required argument 'clip_limit'"):
            fn.clahe(x, tiles_x=2, tiles_y=2)
        p.set_outputs(fn.clahe(x, tiles_x=2, tiles_y=2, clip_limit=2.0))
    assert p.run()[0].at(0).shape == (4, 4, 1)
