# SPDX-License-Identifier: Apache-2.0
"""readers.numpy's region of interest, as DALI's: roi_start / rel_roi_start with roi_end,
rel_roi_end, roi_shape or rel_roi_shape, over roi_axes (default: all), and out_of_bounds_policy
(error, trim_to_shape, pad with fill_value), compared with numpy's slicing of the same arrays,
in C and Fortran order."""

import numpy as np
import pytest

import sluice
import sluice.fn as fn


@pytest.fixture(scope="module")
def arrays(tmp_path_factory):
    d = tmp_path_factory.mktemp("npy")
    rng = np.random.default_rng(21)
    arrs = [rng.integers(-1000, 1000, (7, 9, 3)).astype(np.int16),
            rng.integers(-1000, 1000, (10, 5, 3)).astype(np.int16)]
    for i, a in enumerate(arrs):
        np.save(d / ("%d.npy" % i), a)
        np.save(d / ("f%d.npy" % i), np.asfortranarray(a))
    return d, arrs


def read(d, files, **kw):
    p = sluice.Pipeline(batch_size=len(files), num_threads=2, device_id=None)
    with p:
        p.set_outputs(fn.readers.numpy(file_root=str(d), files=files, **kw))
    (out,) = p.run()
    p.close()
    return [out.at(i) for i in range(len(files))]


def window(a, lo, hi, fill=0):
    """a[lo:hi] per axis, padded with fill where the window leaves a"""
    pads = [(max(0, -l), max(0, h - n)) for l, h, n in zip(lo, hi, a.shape)]
    p = np.pad(a, pads, constant_values=fill)
    return p[tuple(slice(l + b, h + b) for (l, h), (b, _) in zip(zip(lo, hi), pads))]


@pytest.mark.parametrize("order", ["", "f"])
def test_absolute_and_relative_regions(arrays, order):
    d, arrs = arrays
    files = [order + "0.npy", order + "1.npy"]
    got = read(d, files, roi_start=[1, 2, 0], roi_end=[5, 4, 2])
    for g, a in zip(got, arrs):
        assert np.array_equal(g, a[1:5, 2:4, 0:2])
    got = read(d, files, roi_start=[2, 1], roi_shape=[3, 2], roi_axes=[0, 1])
    for g, a in zip(got, arrs):
        assert np.array_equal(g, a[2:5, 1:3])
    got = read(d, files, rel_roi_start=[0.25], rel_roi_shape=[0.5], roi_axes=[1])
    for g, a in zip(got, arrs):
        n = a.shape[1]
        lo, hi = int(np.round(0.25 * n)), int(np.round(0.75 * n))  # one rounding of the end
        assert np.array_equal(g, a[:, lo:hi])
    got = read(d, files, roi_start=[1], rel_roi_end=[0.5], roi_axes=[0])
    for g, a in zip(got, arrs):
        assert np.array_equal(g, a[1:int(np.round(0.5 * a.shape[0]))])


def test_out_of_bounds_policies(arrays):
    d, arrs = arrays
    kw = dict(roi_start=[-2, 3], roi_end=[8, 12], roi_axes=[0, 1])
    got = read(d, ["0.npy", "1.npy"], out_of_bounds_policy="pad", fill_value=-7, **kw)
    for g, a in zip(got, arrs):
        assert np.array_equal(g, window(a, [-2, 3, 0], [8, 12, 3], -7))
    got = read(d, ["f0.npy", "f1.npy"], out_of_bounds_policy="trim_to_shape", **kw)
    for g, a in zip(got, arrs):
        assert np.array_equal(g, a[0:8, 3:12])
    with pytest.raises(sluice.Error, match=r"readers\.numpy: .*key 0\.npy: the region's axis 0 "
                                           r"runs from -2 to 8, outside the array's extent 7"):
        read(d, ["0.npy", "1.npy"], **kw)


@pytest.mark.parametrize("kw,msg", [
    (dict(roi_start=[1], rel_roi_start=[0.1]), "roi_start or rel_roi_start, not both"),
    (dict(roi_end=[2], roi_shape=[1]), "not both roi_end and roi_shape"),
    (dict(roi_start=[1, 1], roi_end=[3], roi_axes=[0, 1]), "give 2 and 1 values"),
    (dict(out_of_bounds_policy="pad"), "need a region"),
    (dict(roi_start=[5], roi_end=[2]), "its end before its start"),
    (dict(roi_start=[0, 0, 0, 0], roi_shape=[1, 1, 1, 1]), "the array has 3 dimensions"),
])
def test_refused(arrays, kw, msg):
    d, _ = arrays
    with pytest.raises(sluice.Error, match="readers.numpy: .*" + msg):
        read(d, ["0.npy"], **kw)
