# SPDX-License-Identifier: Apache-2.0
"""crop_mirror_normalize (and crop) of volumes and of sequences of volumes, against numpy slicing
written here: DHWC / CDHW / FDHWC inputs with crop_d or a 3-element crop and crop_pos_z (literal
and per sample), out_of_bounds_policy on the depth axis, output layouts among DALI's (DHWC,
CDHW, FDHWC, FCDHW), a sequence cropped along its frames (crop_d on FHWC, as DALI does), and
DALI's errors for the crop arguments and layouts."""

import numpy as np
import pytest

import sluice.fn as fn
import sluice.types as types
from sluice import errors, pipeline_def


def run(make, xs, layout, args=(), batch=None):
    batch = batch or len(xs)

    @pipeline_def(batch_size=batch, num_threads=3, device_id=None, seed=5)
    def pipe():
        x = fn.external_source(source=lambda info: xs[info.idx_in_epoch % len(xs)], batch=False,
                               layout=layout)
        extra = [fn.external_source(source=lambda info, a=a: a[info.idx_in_epoch % len(a)],
                                    batch=False) for a in args]
        return make(x, *extra)

    p = pipe()
    got, layouts = [], None
    for _ in range(len(xs) // batch):
        out = p.run()
        out = out if isinstance(out, (list, tuple)) else [out]
        layouts = [o.layout() for o in out]
        got.append([[np.array(o.at(i)) for i in range(batch)] for o in out])
    return [sum((g[k] for g in got), []) for k in range(len(got[0]))], layouts


def anchor(pos, n, ext):
    return int(np.floor(np.float32(pos) * np.float32(n - ext) + np.float32(0.5)))


def reference(x, lay, olay, window, pos, mirror=False, mean=(0.0,), std=(1.0,), pad=False):
    """x's window (a dict axis letter -> extent) at pos (letter -> normalised anchor), W flipped
    when mirror, normalised per channel (float64), channels padded to a power of two, in olay"""
    idx = []
    for k, a in enumerate(lay):
        n = x.shape[k]
        if a in window:
            lo = anchor(pos.get(a, 0.5), n, window[a])
            idx.append(slice(lo, lo + window[a]))
        else:
            idx.append(slice(None))
    y = x[tuple(idx)].astype(np.float64)
    if mirror:
        y = np.flip(y, lay.index("W"))
    c = lay.index("C")
    shape = [1] * y.ndim
    shape[c] = -1
    y = (y - np.float64(mean).reshape(shape)) / np.float64(std).reshape(shape)
    if pad:
        nc = 1
        while nc < y.shape[c]:
            nc *= 2
        widths = [(0, 0)] * y.ndim
        widths[c] = (0, nc - y.shape[c])
        y = np.pad(y, widths)
    return np.transpose(y, [lay.index(a) for a in olay])


def volumes(n, shape, lay, seed, dtype=np.uint8):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        s = [d + int(rng.integers(0, 4)) if a in "DHW" else d for a, d in zip(lay, shape)]
        out.append(rng.integers(0, 255, s).astype(dtype))
    return out


@pytest.mark.parametrize("lay,olay", [("DHWC", "DHWC"), ("DHWC", "CDHW"), ("CDHW", "DHWC"),
                                      ("CDHW", "CDHW")])
def test_volumes_against_numpy(lay, olay):
    shape = {"D": 9, "H": 12, "W": 14, "C": 3}
    xs = volumes(4, [shape[a] for a in lay], lay, seed=len(olay) + ord(lay[0]))
    mean, std = [100.0, 110.0, 120.0], [50.0, 60.0, 70.0]
    mirror = [np.int32(m) for m in (0, 1, 1, 0)]  # per sample, as fn.random.coin_flip gives it
    (out,), layouts = run(lambda x, m: fn.crop_mirror_normalize(
        x, crop_d=5, crop_h=7, crop_w=6, crop_pos_x=0.3, crop_pos_y=0.8, crop_pos_z=0.2,
        mean=mean, std=std, mirror=m, output_layout=olay, pad_output=True), xs, lay, (mirror,))
    assert layouts[0] == olay
    for x, got, m in zip(xs, out, mirror):
        want = reference(x, lay, olay, {"D": 5, "H": 7, "W": 6},
                         {"D": 0.2, "H": 0.8, "W": 0.3}, bool(m), mean, std, pad=True)
        assert got.dtype == np.float32 and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-5)


def test_sequences_of_volumes_with_a_three_element_crop_and_uint8_out():
    lay = "FDHWC"
    xs = volumes(3, [2, 8, 10, 11, 2], lay, seed=4)
    (out,), layouts = run(lambda x: fn.crop_mirror_normalize(
        x, crop=(4, 6, 5), crop_pos_z=1.0, crop_pos_y=0.0, dtype=types.UINT8, mean=[20.0],
        std=[2.0], scale=0.5, shift=10.0, output_layout="FCDHW"), xs, lay)
    assert layouts[0] == "FCDHW"
    for x, got in zip(xs, out):
        want = reference(x, lay, "FCDHW", {"D": 4, "H": 6, "W": 5}, {"D": 1.0, "H": 0.0},
                         mean=[20.0], std=[2.0]) * 0.5 + 10.0
        assert got.dtype == np.uint8
        np.testing.assert_array_equal(got, np.clip(np.rint(want), 0, 255).astype(np.uint8))


@pytest.mark.parametrize("olay", ["FHWC", "FCHW"])
def test_a_sequence_without_depth_is_cropped_along_its_frames(olay):
    """DALI: crop_d on a sequence without a D axis crops its frames (crop_pos_z places them)"""
    lay = "FHWC"
    xs = volumes(4, [10, 9, 12, 3], lay, seed=8)
    (out,), layouts = run(lambda x: fn.crop_mirror_normalize(
        x, crop_d=4, crop_h=5, crop_w=7, crop_pos_z=0.75, mean=[127.0], std=[127.0],
        output_layout=olay), xs, lay)
    assert layouts[0] == olay
    for x, got in zip(xs, out):
        want = reference(x, lay, olay, {"F": 4, "H": 5, "W": 7}, {"F": 0.75}, mean=[127.0],
                         std=[127.0])
        assert got.shape[0] == 4
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    # without crop_d every frame is kept, one window for all of them
    (out,), _ = run(lambda x: fn.crop_mirror_normalize(x, crop=(5, 7), output_layout=olay),
                    xs, lay)
    for x, got in zip(xs, out):
        np.testing.assert_allclose(got, reference(x, lay, olay, {"H": 5, "W": 7}, {}))


def test_per_sample_crop_d_and_crop_pos_z():
    lay = "DHWC"
    xs = volumes(6, [12, 6, 7, 1], lay, seed=12)
    depths = [np.float32(d) for d in (1, 3, 5, 7, 9, 12)]

    def make(x, d):
        z = fn.random.uniform(range=[0.0, 1.0])
        return fn.crop_mirror_normalize(x, crop_d=d, crop_h=4, crop_w=4, crop_pos_z=z,
                                        output_layout="DHWC"), z

    (out, zs), _ = run(make, xs, lay, (depths,))
    for x, got, d, z in zip(xs, out, depths, zs):
        want = reference(x, lay, "DHWC", {"D": int(d), "H": 4, "W": 4}, {"D": float(z)})
        assert got.shape[0] == int(d)
        np.testing.assert_allclose(got, want)


def test_out_of_bounds_policies_on_the_depth_axis():
    lay = "DHWC"
    xs = [np.arange(4 * 5 * 6 * 2, dtype=np.float32).reshape(4, 5, 6, 2)]
    window = dict(crop=(8, 5, 6), crop_pos_z=0.5, output_layout="DHWC")
    (padded,), _ = run(lambda x: fn.crop_mirror_normalize(
        x, out_of_bounds_policy="pad", fill_values=[-1.0, -2.0], **window), xs, lay)
    got = padded[0]
    assert got.shape == (8, 5, 6, 2)  # anchor round(0.5 * (4 - 8)) = -2: planes -2..5
    np.testing.assert_array_equal(got[2:6], xs[0])
    for z in (0, 1, 6, 7):
        np.testing.assert_array_equal(got[z, ..., 0], -1.0)
        np.testing.assert_array_equal(got[z, ..., 1], -2.0)
    (trimmed,), _ = run(lambda x: fn.crop_mirror_normalize(
        x, out_of_bounds_policy="trim_to_shape", **window), xs, lay)
    np.testing.assert_array_equal(trimmed[0], xs[0])
    with pytest.raises(errors.Error, match=r"crop_mirror_normalize: sample 0: Slice can't be "
                                           r"placed out of bounds with current policy\. Got: "
                                           r"window \(-2, 0, 0\) \+ \(8, 5, 6\) is outside the "
                                           r"4x5x6 input"):
        run(lambda x: fn.crop_mirror_normalize(x, **window), xs, lay)


def test_crop_keeps_a_volumes_type_and_layout():
    lay = "CDHW"
    xs = volumes(2, [2, 7, 8, 9], lay, seed=3, dtype=np.float32)
    (out,), layouts = run(lambda x: fn.crop(x, crop=(3, 4, 5), crop_pos_z=0.0), xs, lay)
    assert layouts[0] == "CDHW"
    for x, got in zip(xs, out):
        assert got.dtype == np.float32
        np.testing.assert_array_equal(
            got, reference(x, lay, lay, {"D": 3, "H": 4, "W": 5}, {"D": 0.0}).astype(np.float32))


@pytest.mark.parametrize("kwargs,lay,match", [
    (dict(crop=(2, 3, 4), crop_d=2), "DHWC",
     "`crop` argument is not compatible with `crop_h`, `crop_w`, `crop_d`"),
    (dict(crop_d=2), "DHWC",
     "`crop_d` argument must be provided together with `crop_w` and `crop_h`"),
    (dict(crop=(1, 2, 3, 4)), "DHWC",
     "`crop` argument should have 2 or 3 elements depending on the input data shape"),
    (dict(crop=(2, 3, 4)), "DHWC",
     r"output_layout \"CHW\" for a \"DHWC\" input \(volumes: DHWC or CDHW\): The requested "
     r"output layout is not a permutation of input layout\."),
    (dict(crop=(2, 3, 4), output_layout="DHWC"), "DHCW",
     'The layout "DHCW" does not match any of the allowed layouts'),
    (dict(crop=(2, 3, 4), crop_pos_z=1.5, output_layout="DHWC"), "DHWC",
     r"crop_pos \(0\.5, 0\.5, 1\.5\) outside \[0, 1\]"),
])
def test_errors_in_dalis_words(kwargs, lay, match):
    xs = [np.zeros((5, 6, 7, 3), np.uint8)]
    with pytest.raises(errors.Error, match=match):
        run(lambda x: fn.crop_mirror_normalize(x, **kwargs), xs, lay)
