# SPDX-License-Identifier: Apache-2.0
"""resize's INTERP_GAUSSIAN and INTERP_LANCZOS3 (and the others) against a numpy resampler of the
rule docs/operators.md gives: pixel centres aligned, the filter widened by the scale when
shrinking with antialias, weights normalised, taps past the edge clamped onto it."""

import math

import numpy as np
import pytest

import sluice.fn as fn
import sluice.types as types
from sluice.pipeline import Pipeline


def kernel(name, x):
    x = abs(x)
    if name == "INTERP_GAUSSIAN":
        return math.exp(-2 * x * x) if x < 1.5 else 0.0
    if name == "INTERP_LANCZOS3":
        if x < 1e-9:
            return 1.0
        return 3 * math.sin(math.pi * x) * math.sin(math.pi * x / 3) / (math.pi * x) ** 2 \
            if x < 3 else 0.0
    if name == "INTERP_CUBIC":
        a = -0.5
        if x < 1:
            return ((a + 2) * x - (a + 3)) * x * x + 1
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a if x < 2 else 0.0
    return max(0.0, 1 - x)


SUPPORT = {"INTERP_GAUSSIAN": 1.5, "INTERP_LANCZOS3": 3, "INTERP_CUBIC": 2, "INTERP_LINEAR": 1}


def resample_axis(a, axis, out, name, antialias, window=None):
    """the axis resampled to out; window (start, length): the part of it read (default all)"""
    n = a.shape[axis]
    r0, length = window or (0.0, n)
    scale = length / out
    fs = scale if antialias and scale > 1 else 1.0
    sup = SUPPORT[name]
    m = np.zeros((out, n))
    for o in range(out):
        c = r0 + (o + 0.5) * scale - 0.5
        lo = math.floor(c - sup * fs) + 1
        taps = [(k, kernel(name, (k - c) / fs)) for k in range(lo, lo + int(math.ceil(sup * fs)) * 2 + 1)]
        total = sum(w for _, w in taps)
        for k, w in taps:
            m[o, min(max(k, 0), n - 1)] += w / total
    return np.moveaxis(np.tensordot(m, np.moveaxis(a, axis, 0), axes=1), 0, axis)


@pytest.mark.parametrize("interp", ["INTERP_GAUSSIAN", "INTERP_LANCZOS3", "INTERP_CUBIC"])
@pytest.mark.parametrize("size,antialias", [((13, 21), True), ((40, 37), True),
                                            ((9, 30), False)])
def test_resize_filters_against_numpy(interp, size, antialias):
    rng = np.random.default_rng(3)
    img = rng.integers(0, 256, (24, 27, 3)).astype(np.float32)
    p = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with p:
        x = fn.external_source(source=lambda: [img], layout="HWC")
        p.set_outputs(fn.resize(x, size=list(size), interp_type=getattr(types, interp),
                                antialias=antialias))
    (out,) = p.run()
    want = resample_axis(resample_axis(img.astype(np.float64), 1, size[1], interp, antialias),
                         0, size[0], interp, antialias)
    got = out.at(0)
    assert got.shape == (size[0], size[1], 3)
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-3)


def test_lanczos_on_uint8_keeps_a_constant_and_saturates():
    flat = np.full((10, 12, 1), 200, np.uint8)
    edge = np.zeros((10, 12, 1), np.uint8)
    edge[:, 6:] = 255
    p = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with p:
        x = fn.external_source(source=lambda: [flat, edge], layout="HWC")
        p.set_outputs(fn.resize(x, size=[25, 31], interp_type=types.INTERP_LANCZOS3))
    (out,) = p.run()
    assert (out.at(0) == 200).all()
    e = out.at(1)
    assert e.dtype == np.uint8 and e.min() == 0 and e.max() == 255  # the ringing is clamped


def run_resize(img, **kw):
    p = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with p:
        x = fn.external_source(source=lambda: [img], layout="HWC")
        p.set_outputs(fn.resize(x, **kw))
    (out,) = p.run()
    return out.at(0)


def test_min_and_mag_filter_per_axis():
    """an axis scaled down takes min_filter (widened with antialias), one scaled up mag_filter;
    either overrides interp_type"""
    img = np.random.default_rng(4).integers(0, 256, (24, 27, 3)).astype(np.float32)
    got = run_resize(img, size=[13, 40], interp_type=types.INTERP_NN,
                     min_filter=types.INTERP_CUBIC, mag_filter=types.INTERP_LANCZOS3)
    want = resample_axis(resample_axis(img.astype(np.float64), 1, 40, "INTERP_LANCZOS3", True),
                         0, 13, "INTERP_CUBIC", True)
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-3)
    only_min = run_resize(img, size=[13, 40], min_filter=types.INTERP_GAUSSIAN)
    want = resample_axis(resample_axis(img.astype(np.float64), 1, 40, "INTERP_LINEAR", True),
                         0, 13, "INTERP_GAUSSIAN", True)
    np.testing.assert_allclose(only_min, want, rtol=0, atol=2e-3)


def test_triangular_without_antialias_is_linear():
    img = np.random.default_rng(5).integers(0, 256, (24, 27, 3)).astype(np.float32)
    tri = run_resize(img, size=[9, 10], interp_type=types.INTERP_TRIANGULAR, antialias=False)
    lin = run_resize(img, size=[9, 10], interp_type=types.INTERP_LINEAR, antialias=False)
    assert np.array_equal(tri, lin)


@pytest.mark.parametrize("kw,shape", [
    (dict(resize_shorter=30), (30, 90)),
    (dict(resize_shorter=30, max_size=60), (20, 60)),          # the one scale lowered
    (dict(resize_shorter=30, max_size=[40, 0]), (30, 90)),     # 0: no limit on that axis
    (dict(size=[50, 50], mode="not_smaller", max_size=[100, 120]), (40, 120)),
    (dict(resize_x=90, max_size=[25, 0]), (25, 90)),           # default mode: each extent clamped
    (dict(size=[10, 200], mode="stretch", max_size=150), (10, 150)),
])
def test_max_size(kw, shape):
    img = np.zeros((20, 60, 1), np.uint8)
    assert run_resize(img, **kw).shape == shape + (1,)


def test_subpixel_scale():
    """a fractional output size (29 * 16 / 24 = 19.33 -> 19 columns) keeps the scale asked for:
    the input window is scaled about its centre by 19 / 19.33; subpixel_scale=False reads it all"""
    img = np.random.default_rng(6).integers(0, 256, (24, 29, 3)).astype(np.float32)
    exact = 29 * 16 / 24
    length = 29 * 19 / exact
    want = resample_axis(resample_axis(img.astype(np.float64), 1, 19, "INTERP_LINEAR", True,
                                       window=(14.5 - length / 2, length)),
                         0, 16, "INTERP_LINEAR", True)
    got = run_resize(img, resize_shorter=16)
    assert got.shape == (16, 19, 3)
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-3)
    plain = run_resize(img, resize_shorter=16, subpixel_scale=False)
    want = resample_axis(resample_axis(img.astype(np.float64), 1, 19, "INTERP_LINEAR", True),
                         0, 16, "INTERP_LINEAR", True)
    np.testing.assert_allclose(plain, want, rtol=0, atol=2e-3)
    assert not np.allclose(got, plain, atol=0.5)


@pytest.mark.parametrize("kw,msg", [
    (dict(size=[8, 8], max_size=[1, 2, 3, 4]), "max_size wants"),
    (dict(size=[8, 8], max_size=[1, 2, 3]), "max_size of 3 values is for volumes"),
    (dict(size=[8, 8], max_size=-1.0), "max_size = -1"),
    (dict(size=[8, 8], minibatch_size=0), "minibatch_size = 0"),
])
def test_resize_refuses(kw, msg):
    with pytest.raises(Exception, match="resize: " + msg):
        run_resize(np.zeros((4, 4, 1), np.uint8), **kw)


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_random_resized_crop_layouts_share_one_window(dtype):
    # DALI's random_resized_crop takes HWC, CHW and sequences (FHWC, FCHW, CFHW); every frame and
    # channel plane of a sample is cut by that sample's one window, so each layout's output is
    # the HWC output rearranged
    rng = np.random.default_rng(4)
    hwc = [(rng.random((60 + 10 * i, 80 - 5 * i, 3)) * 255).astype(dtype) for i in range(2)]
    lay = {"HWC": lambda x: x, "CHW": lambda x: x.transpose(2, 0, 1),
           "FHWC": lambda x: np.stack([x, x[::-1, ::-1]]),
           "FCHW": lambda x: np.stack([x, x[::-1, ::-1]]).transpose(0, 3, 1, 2),
           "CFHW": lambda x: np.stack([x, x[::-1, ::-1]]).transpose(3, 0, 1, 2)}
    pipe = Pipeline(batch_size=2, num_threads=2, device_id=None, seed=5)
    with pipe:
        outs = []
        for name, f in lay.items():
            x = fn.external_source(source=lambda f=f: [f(a) for a in hwc], layout=name)
            outs.append(fn.random_resized_crop(x, size=(32, 24), seed=123, antialias=False))
        pipe.set_outputs(*outs)
    res = dict(zip(lay, pipe.run()))
    for k, out in res.items():
        assert out.layout() == k
    for i in range(2):
        base = np.array(res["HWC"].at(i))
        assert base.shape == (32, 24, 3) and base.dtype == dtype
        np.testing.assert_array_equal(np.array(res["CHW"].at(i)), base.transpose(2, 0, 1))
        seq = np.array(res["FHWC"].at(i))
        np.testing.assert_array_equal(seq[0], base)
        np.testing.assert_array_equal(np.array(res["FCHW"].at(i)), seq.transpose(0, 3, 1, 2))
        np.testing.assert_array_equal(np.array(res["CFHW"].at(i)), seq.transpose(3, 0, 1, 2))
