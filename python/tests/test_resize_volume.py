# SPDX-License-Identifier: Apache-2.0
"""resize of volumes, as DALI's fn.resize takes them: DHWC and CDHW (FDHWC sequences frame by
frame), resize_x / resize_y / resize_z, `size` of three, resize_shorter / resize_longer, `mode`,
`max_size`, `roi_start` / `roi_end` of three. Checked against a separable resampler written
here (pixel centres aligned, the filter widened by the scale when shrinking with antialias,
weights normalised, taps past the edge clamped onto it), bit for bit against the images' resize
of the slices where the volume is constant along the depth, and against DALI's size rule worked
in float32 as DALI's ResizeAttr does."""

import math

import numpy as np
import pytest

import sluice.fn as fn
import sluice.types as types
from sluice.pipeline import Pipeline
from conftest import gpu_or_skip
from test_resize_filters import kernel  # the filters' formulas, written once


SUPPORT = {"INTERP_CUBIC": 2, "INTERP_LINEAR": 1}


def resample_axis(a, axis, out, name, antialias=True, window=None):
    """a's axis resampled to out samples; window (start, length) of it (default all)"""
    n = a.shape[axis]
    r0, length = window or (0.0, n)
    scale = length / out
    m = np.zeros((out, n))
    for o in range(out):
        if name == "INTERP_NN":
            m[o, min(max(math.floor(r0 + (o + 0.5) * scale), 0), n - 1)] = 1
            continue
        fs = scale if antialias and scale > 1 else 1.0
        sup = SUPPORT[name]
        c = r0 + (o + 0.5) * scale - 0.5
        lo = math.floor(c - sup * fs) + 1
        taps = [(k, kernel(name, (k - c) / fs))
                for k in range(lo, lo + int(math.ceil(sup * fs)) * 2 + 1)]
        total = sum(w for _, w in taps)
        for k, w in taps:
            m[o, min(max(k, 0), n - 1)] += w / total
    return np.moveaxis(np.tensordot(m, np.moveaxis(a, axis, 0), axes=1), 0, axis)


def resample_volume(v, out, name, window=None):
    """(D, H, W, C) -> out (d, h, w): x, then y, then z"""
    window = window or [None] * 3
    v = resample_axis(v.astype(np.float64), 2, out[2], name, window=window[2])
    v = resample_axis(v, 1, out[1], name, window=window[1])
    return resample_axis(v, 0, out[0], name, window=window[0])


def run(samples, layout="DHWC", device="cpu", **kw):
    p = Pipeline(batch_size=len(samples), num_threads=2, device_id=None if device == "cpu" else 0)
    with p:
        x = fn.external_source(source=lambda: samples, layout=layout)
        if device == "gpu":
            x = x.gpu()
        p.set_outputs(fn.resize(x, **kw))
    (out,) = p.run()
    if hasattr(out, "as_cpu"):
        out = out.as_cpu()
    return out


def vol(shape, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    v = rng.uniform(0, 255, shape)
    return v.astype(dtype) if dtype != np.uint8 else np.round(v).astype(np.uint8)


@pytest.mark.parametrize("interp", ["INTERP_LINEAR", "INTERP_NN", "INTERP_CUBIC"])
@pytest.mark.parametrize("size", [(5, 13, 30), (14, 7, 9)])
def test_volume_against_the_separable_formula(interp, size):
    v = vol((9, 11, 17, 2), seed=1)
    out = run([v], size=list(size), interp_type=getattr(types, interp))
    got = np.array(out.at(0))
    assert got.shape == size + (2,) and out.layout() == "DHWC"
    np.testing.assert_allclose(got, resample_volume(v, size, interp), rtol=0, atol=2e-3)


def test_volume_window_against_the_formula():
    v = vol((10, 12, 14, 1), seed=2)
    start, end = [1.5, 2.0, 0.25], [8.0, 11.0, 13.5]
    out = run([v], size=[6, 5, 20], roi_start=start, roi_end=end)
    window = [(a, b - a) for a, b in zip(start, end)]
    np.testing.assert_allclose(np.array(out.at(0)),
                               resample_volume(v, (6, 5, 20), "INTERP_LINEAR", window),
                               rtol=0, atol=2e-3)
    rel = run([v], size=[6, 5, 20], roi_start=[0.1, 0.25, 0.5], roi_end=[0.9, 1.0, 1.0],
              roi_relative=True)
    window = [(0.1 * 10, 0.8 * 10), (0.25 * 12, 0.75 * 12), (7.0, 7.0)]
    np.testing.assert_allclose(np.array(rel.at(0)),
                               resample_volume(v, (6, 5, 20), "INTERP_LINEAR", window),
                               rtol=0, atol=2e-3)


@pytest.mark.parametrize("interp", ["INTERP_LINEAR", "INTERP_CUBIC"])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_constant_along_depth_is_the_images_resize_of_its_slices(interp, dtype):
    """a volume the same in every slice, its depth kept (stretch) or enlarged with
    nearest-neighbour taps (mag_filter): each output slice is, bit for bit, the images' resize of
    the slice"""
    img = vol((13, 19, 3), seed=3, dtype=dtype)
    v = np.stack([img] * 6)
    f = getattr(types, interp)
    kept = np.array(run([v], resize_y=7, resize_x=30, mode="stretch", interp_type=f).at(0))
    deeper = np.array(run([v], size=[11, 7, 8], min_filter=f, mag_filter=types.INTERP_NN,
                          antialias=True).at(0))
    p = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with p:
        x = fn.external_source(source=lambda: [img], layout="HWC")
        p.set_outputs(fn.resize(x, size=[7, 30], interp_type=f),
                      fn.resize(x, size=[7, 8], min_filter=f, mag_filter=types.INTERP_NN))
    a, b = p.run()
    assert kept.shape == (6, 7, 30, 3) and deeper.shape == (11, 7, 8, 3)
    for z in range(6):
        assert np.array_equal(kept[z], np.array(a.at(0))), z
    for z in range(11):
        assert np.array_equal(deeper[z], np.array(b.at(0))), z


def test_cdhw_and_sequences_are_the_dhwc_resize():
    v = vol((7, 9, 10, 3), seed=4, dtype=np.uint8)
    want = np.array(run([v], size=[4, 12, 5], interp_type=types.INTERP_CUBIC).at(0))
    cdhw = run([np.ascontiguousarray(v.transpose(3, 0, 1, 2))], layout="CDHW", size=[4, 12, 5],
               interp_type=types.INTERP_CUBIC)
    assert cdhw.layout() == "CDHW"
    assert np.array_equal(np.array(cdhw.at(0)).transpose(1, 2, 3, 0), want)
    seq = np.stack([v, v[::-1].copy(), v + 1])
    out = run([seq], layout="FDHWC", size=[4, 12, 5], interp_type=types.INTERP_CUBIC)
    got = np.array(out.at(0))
    assert got.shape == (3, 4, 12, 5, 3) and out.layout() == "FDHWC"
    for f in range(3):
        one = np.array(run([np.ascontiguousarray(seq[f])], size=[4, 12, 5],
                           interp_type=types.INTERP_CUBIC).at(0))
        assert np.array_equal(got[f], one), f


def dali_size(in_size, req, mode="default", max_size=None):
    """DALI's ResizeAttr output size, in its float32 steps (0 in req: not given)"""
    f = np.float32
    in_size = [f(x) for x in in_size]
    out = [f(x) for x in req]
    mask = [o != 0 for o in out]
    scale = [float(f(o / i)) for o, i in zip(out, in_size)]
    mx = [f(m) for m in (max_size or [0, 0, 0])]
    if mode in ("default", "stretch"):
        avg = 1.0
        for d in range(3):
            if mask[d]:
                avg *= abs(scale[d])
        if sum(mask) > 1:
            avg = avg ** (1.0 / sum(mask))
        for d in range(3):
            if not mask[d]:
                out[d] = in_size[d] if mode == "stretch" else f(float(in_size[d]) * avg)
            if mx[d] > 0 and abs(out[d]) > mx[d]:
                out[d] = mx[d]
    else:
        final = None
        for d in range(3):
            if mask[d]:
                s = float(f(abs(scale[d])))
                if final is None or (mode == "not_smaller" and s > final) or \
                        (mode == "not_larger" and s < final):
                    final = s
        for d in range(3):
            if mx[d] > 0 and float(mx[d]) / float(in_size[d]) < final:
                final = float(mx[d]) / float(in_size[d])
        for d in range(3):
            if not mask[d] or abs(scale[d]) != final:
                out[d] = f(float(in_size[d]) * final)
    # round half away from zero, at least 1
    return tuple(max(1, int(math.floor(abs(float(o)) + 0.5))) for o in out)


@pytest.mark.parametrize("shape,kw,want", [
    ((24, 16, 12), dict(resize_z=224, mode="stretch"), (224, 16, 12)),
    ((24, 16, 12), dict(resize_z=36), (36, 24, 18)),            # one scale for the others
    ((5, 16, 16), dict(resize_y=8, resize_x=8), (3, 8, 8)),     # 2.5 rounds away from zero
    ((10, 20, 30), dict(resize_y=10, resize_x=60), (10, 10, 60)),  # geometric mean 1
    ((20, 40, 30), dict(resize_shorter=10), (10, 20, 15)),
    ((20, 40, 30), dict(resize_longer=10), (5, 10, 8)),         # 7.5 up
    ((20, 40, 30), dict(size=[10, 10, 10], mode="not_larger"), (5, 10, 8)),
    ((20, 40, 30), dict(size=[10, 10, 10], mode="not_smaller"), (10, 20, 15)),
    ((20, 40, 30), dict(resize_shorter=10, max_size=15), (8, 15, 11)),
    ((10, 12, 30), dict(size=[0, 0, 15]), (5, 6, 15)),
    ((10, 12, 30), dict(size=12), (12, 12, 12)),
    ((10, 12, 30), dict(size=[0, 6, 0], mode="stretch"), (10, 6, 30)),
    ((10, 12, 30), dict(resize_x=90, max_size=[0, 20, 50]), (30, 20, 50)),
])
def test_dali_sizes(shape, kw, want):
    v = np.zeros(shape + (1,), np.uint8)
    assert np.array(run([v], **kw).at(0)).shape == want + (1,)


def test_dali_sizes_in_float32_on_random_cases():
    rng = np.random.default_rng(7)
    for _ in range(40):
        shape = tuple(int(x) for x in rng.integers(1, 40, 3))
        req = [float(x) if rng.random() < 0.6 else 0.0
               for x in np.round(rng.uniform(1, 60, 3), 1)]
        if not any(req):
            req[1] = 17.3
        mode = str(rng.choice(["default", "stretch", "not_larger", "not_smaller"]))
        want = dali_size(shape, req, mode)
        got = np.array(run([np.zeros(shape + (1,), np.uint8)], size=req, mode=mode,
                           interp_type=types.INTERP_NN).at(0)).shape
        assert got == want + (1,), (shape, req, mode)


def test_per_sample_sizes_of_a_volume():
    vs = [np.zeros((8, 10, 12, 1), np.float32), np.zeros((4, 6, 6, 1), np.float32)]
    p = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with p:
        x = fn.external_source(source=lambda: vs, layout="DHWC")
        z = fn.external_source(source=lambda: [np.float32(4), np.float32(8)])
        sz = fn.external_source(source=lambda: [np.array([2, 3, 4], np.float32),
                                                np.array([5], np.float32)])
        p.set_outputs(fn.resize(x, resize_z=z), fn.resize(x, size=sz))
    a, b = p.run()
    assert a.at(0).shape == (4, 5, 6, 1) and a.at(1).shape == (8, 12, 12, 1)
    assert b.at(0).shape == (2, 3, 4, 1) and b.at(1).shape == (5, 5, 5, 1)


@pytest.mark.parametrize("layout,shape,kw,message", [
    ("HWC", (6, 6, 3), dict(resize_z=3, resize_x=4), "resize_z is for volumes"),
    ("HWC", (6, 6, 3), dict(size=[2, 3, 4]), "size of 3 values is for volumes"),
    ("DHWC", (6, 6, 6, 1), dict(size=[3, 4]), "a volume wants .depth, height, width."),
    ("DHWC", (6, 6, 6, 1), dict(size=3, roi_start=[0, 0], roi_end=[2, 2]),
     r"roi_start/roi_end of a volume want \[z, y, x\]"),
    ("DHWC", (6, 6, 6, 1), dict(size=3, roi_start=[4, 0, 0], roi_end=[4, 6, 6]),
     "the window's depth runs from 4 to 4: an empty window"),
])
def test_volume_refusals(layout, shape, kw, message):
    with pytest.raises(Exception, match=message):
        run([np.zeros(shape, np.uint8)], layout=layout, **kw)


def test_reversed_volume_window_flips():
    """a window whose end lies before its start (DALI's flip): the forward window's output,
    mirrored along that axis"""
    v = vol((8, 9, 10, 1), seed=5)
    fwd = np.array(run([v], size=[5, 6, 7], roi_start=[1, 0, 2], roi_end=[7, 9, 9]).at(0))
    back = np.array(run([v], size=[5, 6, 7], roi_start=[7, 0, 9], roi_end=[1, 9, 2]).at(0))
    np.testing.assert_allclose(back, fwd[::-1, :, ::-1], rtol=0, atol=1e-3)


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["DHWC", "CDHW"])
def test_gpu_volume_resize_is_the_cpu_s(layout):
    gpu_or_skip()
    vs = [vol((9, 11, 17, 2), seed=8, dtype=np.uint8), vol((5, 20, 7, 2), seed=9, dtype=np.uint8)]
    if layout == "CDHW":
        vs = [np.ascontiguousarray(v.transpose(3, 0, 1, 2)) for v in vs]
    for kw in (dict(size=[5, 13, 30], interp_type=types.INTERP_CUBIC),
               dict(resize_z=12, mode="stretch", interp_type=types.INTERP_LINEAR),
               dict(resize_shorter=4, interp_type=types.INTERP_NN)):
        cpu = run(vs, layout=layout, **kw)
        gpu = run(vs, layout=layout, device="gpu", **kw)
        for i in range(2):
            assert np.array_equal(np.array(cpu.at(i)), np.array(gpu.at(i))), (kw, i)
