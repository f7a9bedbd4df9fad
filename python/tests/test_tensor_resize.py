# SPDX-License-Identifier: Apache-2.0
"""fn.experimental.tensor_resize (also fn.tensor_resize): tensors of any rank resized along the
axes chosen (axes, negative ones, axis_names), to sizes or by scales with DALI's rules written out
here: a size from scales is scale x extent rounded by size_rounding (half away from zero,
truncate, ceil), and where that rounding changed it the input window is scaled by
rounded / exact about the point (1 - alignment) x start + alignment x end; a window (roi_start /
roi_end, relative or not) reversed, or a negative size, flips the axis. Checked against a
separable resampler written here in float64 (pixel centres aligned, the filter widened by the
scale when shrinking with antialias, weights normalised, taps past the edge clamped onto it), per
sample arguments, the modes and max_size, the types, resize's own results on images, the errors,
and the CUDA run against the CPU's."""

import math

import numpy as np
import pytest

import sluice.fn as fn
import sluice.ops as ops
import sluice.types as types
from sluice.pipeline import Pipeline
from conftest import gpu_or_skip
from test_resize_filters import kernel  # the filters' formulas, written once

SUPPORT = {"INTERP_CUBIC": 2, "INTERP_LINEAR": 1}


def resample_axis(a, axis, out, name, lo, length, antialias=True):
    """a's axis resampled to out samples from the window [lo, lo + length) (length < 0: read
    backwards)"""
    n = a.shape[axis]
    scale = length / out
    m = np.zeros((out, n))
    for o in range(out):
        if name == "INTERP_NN":
            m[o, min(max(math.floor(lo + (o + 0.5) * scale), 0), n - 1)] = 1
            continue
        fs = abs(scale) if antialias and abs(scale) > 1 else 1.0
        sup = SUPPORT[name]
        c = lo + (o + 0.5) * scale - 0.5
        first = math.floor(c - sup * fs) + 1
        taps = [(k, kernel(name, (k - c) / fs))
                for k in range(first, first + int(math.ceil(sup * fs)) * 2 + 1)]
        total = sum(w for _, w in taps)
        for k, w in taps:
            m[o, min(max(k, 0), n - 1)] += w / total
    return np.moveaxis(np.tensordot(m, np.moveaxis(a, axis, 0), axes=1), 0, axis)


def plan(shape, axes, sizes=None, scales=None, alignment=0.5, rounding="round", roi=None,
         rel=False):
    """DALI's rule, per axis: (output extent, window start, window length)"""
    res = {}
    for k, d in enumerate(axes):
        e = shape[d]
        lo, hi = (0.0, float(e)) if roi is None else (roi[0][k] * (e if rel else 1),
                                                       roi[1][k] * (e if rel else 1))
        want = np.float32(sizes[k]) if sizes is not None else np.float32(scales[k]) * np.float32(e)
        if hi < lo:
            lo, hi, want = hi, lo, -want
        w = abs(float(want))
        o = {"round": math.floor(w + 0.5), "truncate": math.floor(w), "ceil": math.ceil(w)}[rounding]
        o = max(o, 1)
        if want < 0:
            lo, hi = hi, lo
        a = alignment[k] if isinstance(alignment, (list, tuple)) else alignment
        if o != w:
            adj = min(o / w, 10.0)
            c = (1 - a) * lo + a * hi
            lo, hi = c + (lo - c) * adj, c + (hi - c) * adj
        res[d] = (o, lo, hi - lo)
    return res


def reference(x, axes, name="INTERP_LINEAR", antialias=True, **kw):
    p = plan(x.shape, axes, **kw)
    y = x.astype(np.float64)
    for d in sorted(p, key=lambda d: (p[d][0] / x.shape[d], -d)):
        o, lo, length = p[d]
        if o != x.shape[d] or lo != 0 or length != x.shape[d]:
            y = resample_axis(y, d, o, name, lo, length, antialias)
    return y


def run(samples, layout="", device="cpu", extra=None, **kw):
    """tensor_resize over samples; extra: per-sample argument lists given as external sources"""
    p = Pipeline(batch_size=len(samples), num_threads=2, device_id=None if device == "cpu" else 0)
    with p:
        x = fn.external_source(source=lambda: samples, batch=True, layout=layout or None)
        if device == "gpu":
            x = x.gpu()
        for name, vals in (extra or {}).items():
            kw[name] = fn.external_source(source=lambda v=vals: v, batch=True)
        p.set_outputs(fn.experimental.tensor_resize(x, **kw))
    (out,) = p.run()
    if hasattr(out, "as_cpu"):
        out = out.as_cpu()
    return out


def data(shape, seed=0, dtype=np.float32):
    v = np.random.default_rng(seed).uniform(0, 255, shape)
    return v.astype(dtype) if dtype != np.uint8 else np.round(v).astype(np.uint8)


@pytest.mark.parametrize("interp", ["INTERP_LINEAR", "INTERP_NN", "INTERP_CUBIC"])
@pytest.mark.parametrize("antialias", [False, True])
@pytest.mark.parametrize("alignment", [0.0, 0.5, 1.0, [0.2, 0.9, 0.5]])
def test_scales_and_alignment_against_the_rule(interp, antialias, alignment):
    x = data((5, 7, 6), seed=1)
    scales = [0.6, 1.7, 1.0]
    got = np.array(run([x], scales=scales, alignment=alignment, antialias=antialias,
                       interp_type=getattr(types, interp)).at(0))
    want = reference(x, [0, 1, 2], interp, antialias, scales=scales, alignment=alignment)
    assert got.shape == (3, 12, 6) == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-3)


@pytest.mark.parametrize("rounding,shape", [("round", (3, 4)), ("truncate", (2, 3)),
                                            ("ceil", (3, 4))])
def test_size_rounding(rounding, shape):
    x = data((5, 5), seed=2)
    got = np.array(run([x], scales=[0.5, 0.7], size_rounding=rounding, alignment=0).at(0))
    assert got.shape == shape
    want = reference(x, [0, 1], scales=[0.5, 0.7], rounding=rounding, alignment=0.0)
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-3)


def test_axes_negative_axes_and_axis_names_agree():
    x = data((6, 9, 3), seed=3)
    a = run([x], layout="HWC", sizes=[14], axes=[1])
    b = run([x], layout="HWC", sizes=[14], axes=[-2])
    c = run([x], layout="HWC", sizes=[14], axis_names="W")
    assert a.layout() == "HWC"
    got = np.array(a.at(0))
    assert got.shape == (6, 14, 3)
    assert np.array_equal(got, np.array(b.at(0))) and np.array_equal(got, np.array(c.at(0)))
    np.testing.assert_allclose(got, reference(x, [1], sizes=[14]), rtol=0, atol=2e-3)


def test_per_sample_arguments():
    xs = [data((4, 10), seed=4), data((7, 3), seed=5)]
    scales = [np.array([2.5], np.float32), np.array([0.45], np.float32)]
    align = [np.array([0.0], np.float32), np.array([1.0], np.float32)]
    out = run(xs, axes=[1], extra={"scales": scales, "alignment": align}, antialias=False)
    for i, x in enumerate(xs):
        want = reference(x, [1], antialias=False, scales=[float(scales[i][0])],
                         alignment=[float(align[i][0])])
        got = np.array(out.at(i))
        assert got.shape == want.shape, (i, got.shape, want.shape)
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-3)
    sizes = [np.array([3, 5], np.float32), np.array([9, 2], np.float32)]
    out = run(xs, extra={"sizes": sizes}, interp_type=types.INTERP_CUBIC)
    for i, x in enumerate(xs):
        want = reference(x, [0, 1], "INTERP_CUBIC", sizes=list(sizes[i]))
        np.testing.assert_allclose(np.array(out.at(i)), want, rtol=0, atol=2e-3)


def test_windows_and_flips():
    x = data((8, 12), seed=6)
    roi = ([1.5, 2.0], [7.0, 11.25])
    got = np.array(run([x], sizes=[5, 9], roi_start=roi[0], roi_end=roi[1]).at(0))
    np.testing.assert_allclose(got, reference(x, [0, 1], sizes=[5, 9], roi=roi), atol=2e-3)
    rel = ([0.25, 0.0], [0.75, 0.5])
    got = np.array(run([x], sizes=[5, 9], roi_start=rel[0], roi_end=rel[1],
                       roi_relative=True).at(0))
    np.testing.assert_allclose(got, reference(x, [0, 1], sizes=[5, 9], roi=rel, rel=True),
                               atol=2e-3)
    # a reversed window, or a negative size, at scale 1: the axis flipped, exactly
    flipped = np.array(run([x], sizes=[8, 12], roi_start=[0, 12], roi_end=[8, 0]).at(0))
    assert np.array_equal(flipped, x[:, ::-1])
    negative = np.array(run([x], sizes=[-8], axes=[0]).at(0))
    assert np.array_equal(negative, x[::-1])
    # an empty window is sampled where it lies, one output (as DALI does)
    assert np.array(run([x], sizes=[3, 3], roi_start=[1, 1], roi_end=[1, 4]).at(0)).shape == (1, 3)
    # a reversed window resized: the forward one's result, flipped
    fwd = np.array(run([x], sizes=[5, 7], roi_start=[1, 2], roi_end=[7, 10]).at(0))
    back = np.array(run([x], sizes=[5, 7], roi_start=[1, 10], roi_end=[7, 2]).at(0))
    np.testing.assert_allclose(back, fwd[:, ::-1], rtol=0, atol=1e-3)


def test_modes_and_max_size():
    x = data((10, 20, 2), seed=7)
    shape = lambda **kw: np.array(run([x], axes=[0, 1], **kw).at(0)).shape
    assert shape(sizes=[5, 0]) == (5, 10, 2)  # the missing extent by the given one's scale
    assert shape(sizes=[5, 0], mode="stretch") == (5, 20, 2)
    assert shape(sizes=[5, 30], mode="not_larger") == (5, 10, 2)
    assert shape(sizes=[5, 30], mode="not_smaller") == (15, 30, 2)
    assert shape(sizes=[40, 40], max_size=[30, 35]) == (30, 35, 2)
    assert shape(sizes=[15, 30], mode="not_smaller", max_size=24) == (12, 24, 2)


def test_types_rank_one_and_five():
    x = data((9, 14), seed=8, dtype=np.uint8)
    got = np.array(run([x], sizes=[4, 20]).at(0))
    want = np.clip(np.rint(reference(x, [0, 1], sizes=[4, 20])), 0, 255)
    assert got.dtype == np.uint8 and np.abs(got.astype(int) - want).max() <= 1
    f = np.array(run([x], sizes=[4, 20], dtype=types.FLOAT).at(0))
    assert f.dtype == np.float32
    np.testing.assert_allclose(f, reference(x, [0, 1], sizes=[4, 20]), atol=2e-3)
    same = np.array(run([x], scales=[1.0, 1.0], dtype=types.INT32).at(0))
    assert same.dtype == np.int32 and np.array_equal(same, x.astype(np.int32))
    s = data((11,), seed=9)
    np.testing.assert_allclose(np.array(run([s], scales=[2.0]).at(0)),
                               reference(s, [0], scales=[2.0]), atol=2e-3)
    v = data((3, 4, 5, 6, 2), seed=10)
    got = np.array(run([v], axes=[1, 2, 3], sizes=[7, 3, 9],
                       interp_type=types.INTERP_CUBIC).at(0))
    want = reference(v, [1, 2, 3], "INTERP_CUBIC", sizes=[7, 3, 9])
    assert got.shape == (3, 7, 3, 9, 2)
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-3)


def test_matches_resize_on_images():
    img = data((31, 45, 3), seed=11, dtype=np.uint8)
    p = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with p:
        x = fn.external_source(source=lambda: [img], batch=True, layout="HWC")
        p.set_outputs(fn.resize(x, size=[17, 70]),
                      fn.experimental.tensor_resize(x, sizes=[17, 70], axis_names="HW"),
                      ops.TensorResize(sizes=[17, 70], axes=[0, 1])(x))
    a, b, c = (np.array(o.at(0)).astype(int) for o in p.run())
    assert a.shape == b.shape == c.shape == (17, 70, 3)
    assert np.abs(a - b).max() <= 1 and np.array_equal(b, c)


@pytest.mark.parametrize("kw,msg", [
    (dict(sizes=[3, 3], scales=[1.0, 1.0]), "one of sizes or scales"),
    (dict(), "one of sizes or scales"),
    (dict(sizes=[3], axes=[2]), "outside [-2, 1]"),
    (dict(sizes=[3], axes=[0], axis_names="H"), "axes or axis_names"),
    (dict(sizes=[3], axis_names="Z"), "not in the input's layout"),
    (dict(scales=[2.0, 2.0], mode="not_larger"), "does not go with scales"),
    (dict(sizes=[3, 3], roi_start=[0, 0]), "go together"),
    (dict(scales=[2.0, 2.0], alignment=0.0, subpixel_scale=False), "subpixel_scale"),
    (dict(sizes=[3, 3, 3]), "3 values for 2 axes"),
    (dict(sizes=[3, 3], axes=[0, 0]), "named twice"),
])
def test_errors_name_the_op_and_the_argument(kw, msg):
    with pytest.raises(RuntimeError, match="tensor_resize") as e:
        run([data((6, 8), seed=12)], layout="HW", **kw)
    assert msg in str(e.value), str(e.value)


@pytest.mark.gpu
@pytest.mark.parametrize("kw", [
    dict(scales=[0.6, 1.7, 1.0], alignment=[0.0, 1.0, 0.5]),
    dict(sizes=[9], axes=[1], interp_type=types.INTERP_CUBIC),
    dict(sizes=[3, 5, 2], roi_start=[4, 0, 0], roi_end=[0, 7, 6]),
    dict(scales=[1.0, 1.0, 1.0]),
    dict(sizes=[8, 3, 4], dtype=types.FLOAT, interp_type=types.INTERP_NN),
])
def test_gpu_matches_cpu(kw):
    gpu_or_skip()
    xs = [data((5, 7, 6), seed=13, dtype=np.uint8), data((4, 9, 6), seed=14, dtype=np.uint8)]
    cpu, gpu = run(xs, **kw), run(xs, device="gpu", **kw)
    for i in range(len(xs)):
        a, b = np.array(cpu.at(i)).astype(float), np.array(gpu.at(i)).astype(float)
        assert a.shape == b.shape and np.abs(a - b).max() <= 1, (i, kw)
