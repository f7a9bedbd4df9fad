# SPDX-License-Identifier: Apache-2.0
"""fn.grid_mask (DALI's GridMask augmentation) compared with the formula written here in numpy:
in tile units a pixel (x, y) sits at u = (x cos a - y sin a - shift_x) / tile,
v = (x sin a + y cos a - shift_y) / tile and is zeroed where frac(u) < ratio and frac(v) < ratio
(both in float32, as DALI's kernel); constant and per-sample arguments, several types."""

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.types as types


def reference(img, tile, ratio, angle, sx, sy):
    h, w = img.shape[:2]
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    t = np.float32(tile)
    ca, sa = np.float32(np.cos(np.float32(angle))) / t, np.float32(np.sin(np.float32(angle))) / t
    u = (-np.float32(sx) / t - y * sa) + x * ca
    v = (-np.float32(sy) / t + y * ca) + x * sa
    keep = (u - np.floor(u) >= np.float32(ratio)) | (v - np.floor(v) >= np.float32(ratio))
    return img * keep[:, :, None].astype(img.dtype)


def images(dtype, n=3):
    rng = np.random.default_rng(7)
    return [(rng.integers(1, 200, (40 + 7 * i, 61 - 5 * i, 3))).astype(dtype) for i in range(n)]


@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.int16])
@pytest.mark.parametrize("tile,ratio,angle,sx,sy", [
    (10, 0.5, 0.0, 0.0, 0.0), (17, 0.3, 0.7, 0.0, 0.0), (9, 0.6, -1.2, 3.5, -2.0)])
def test_constant_arguments_match_the_formula(dtype, tile, ratio, angle, sx, sy):
    data = images(dtype)
    pipe = sluice.Pipeline(batch_size=3, num_threads=2, device_id=None)
    with pipe:
        x = fn.external_source(source=lambda: data, layout="HWC")
        pipe.set_outputs(fn.grid_mask(x, tile=tile, ratio=ratio, angle=angle, shift_x=sx,
                                      shift_y=sy))
    pipe.build()
    (out,) = pipe.run()
    assert out.layout() == "HWC"
    for i in range(3):
        want = reference(data[i], tile, ratio, angle, sx, sy)
        got = np.asarray(out.at(i))
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, want)
        assert (got == 0).any() and (got != 0).any()


def test_per_sample_arguments():
    data = images(np.uint8)
    pipe = sluice.Pipeline(batch_size=3, num_threads=2, device_id=None, seed=3)
    with pipe:
        x = fn.external_source(source=lambda: data, layout="HWC")
        tile = fn.cast(fn.random.uniform(range=(8, 20)), dtype=types.INT32)
        ratio = fn.random.uniform(range=(0.3, 0.7))
        angle = fn.random.uniform(range=(-3.0, 3.0))
        pipe.set_outputs(fn.grid_mask(x, tile=tile, ratio=ratio, angle=angle), tile, ratio,
                         angle)
    pipe.build()
    out, tiles, ratios, angles = pipe.run()
    for i in range(3):
        want = reference(data[i], int(tiles.at(i)), float(ratios.at(i)), float(angles.at(i)),
                         0, 0)
        np.testing.assert_array_equal(out.at(i), want)


def test_refuses_bad_input_and_tile():
    pipe = sluice.Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        x = fn.external_source(source=lambda: [np.zeros((4, 4), np.uint8)])
        pipe.set_outputs(fn.grid_mask(x))
    pipe.build()
    with pytest.raises(sluice.InvalidArgumentError, match="HWC images"):
        pipe.run()
    pipe = sluice.Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        x = fn.external_source(source=lambda: [np.zeros((4, 4, 3), np.uint8)], layout="HWC")
        pipe.set_outputs(fn.grid_mask(x, tile=0))
    with pytest.raises(sluice.InvalidArgumentError, match="tile 0"):
        pipe.build()
        pipe.run()
