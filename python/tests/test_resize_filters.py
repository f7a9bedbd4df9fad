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


def resample_axis(a, axis, out, name, antialias):
    n = a.shape[axis]
    scale = n / out
    fs = scale if antialias and scale > 1 else 1.0
    sup = SUPPORT[name]
    m = np.zeros((out, n))
    for o in range(out):
        c = (o + 0.5) * scale - 0.5
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
