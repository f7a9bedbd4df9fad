# SPDX-License-Identifier: Apache-2.0
"""fn.slice against a window cut with numpy indexing: anchor/shape inputs (normalized or not),
the named start/end/shape arguments (lists and per-sample inputs), axes and axis_names, the three
out-of-bounds policies with one or per-channel fill values, dtype conversion, every dtype, empty
and 0-d samples, and the errors that name the op and the argument."""

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.types as types
from sluice import errors, pipeline_def

DTYPES = [np.uint8, np.int8, np.uint16, np.int16, np.int32, np.int64, np.uint32, np.uint64,
          np.float16, np.float32, np.float64, np.bool_]


def ref_window(x, dims, start, end, policy="error", fill=(0,), chan=None):
    """The window [start, end) on dims of x, padded with fill (per channel along chan) or trimmed."""
    start, end = list(start), list(end)
    if policy == "trim_to_shape":
        for k, d in enumerate(dims):
            lo = min(max(start[k], 0), x.shape[d])
            hi = max(min(end[k], x.shape[d]), lo)
            start[k], end[k] = lo, hi
    shape = list(x.shape)
    for k, d in enumerate(dims):
        shape[d] = end[k] - start[k]
    out = np.empty(shape, x.dtype)
    if len(fill) > 1:
        c = chan if chan is not None else x.ndim - 1
        idx = [1] * x.ndim
        idx[c] = -1
        out[...] = np.array(fill[:shape[c]], np.float64).astype(x.dtype).reshape(idx)
    else:
        out[...] = np.array(fill[0]).astype(x.dtype)
    src, dst = [slice(None)] * x.ndim, [slice(None)] * x.ndim
    for k, d in enumerate(dims):
        lo, hi = max(start[k], 0), min(end[k], x.shape[d])
        if hi <= lo:
            return out
        src[d] = slice(lo, hi)
        dst[d] = slice(lo - start[k], hi - start[k])
    out[tuple(dst)] = x[tuple(src)]
    return out


def run1(make, batch, *sources, **kw):
    @pipeline_def(batch_size=batch, num_threads=3, device_id=None, **kw)
    def pipe():
        return make(*[fn.external_source(source=s, **o) for s, o in sources])

    p = pipe()
    out = p.run()
    return [[np.array(o.at(i)) for i in range(batch)] for o in out]


def images(rng, n, dtype=np.uint8, c=3):
    out = []
    for _ in range(n):
        h, w = rng.integers(1, 20, 2)
        a = rng.integers(0, 200, (h, w, c)).astype(dtype)
        out.append(a)
    return out


def test_anchor_shape_inputs_normalized():
    rng = np.random.default_rng(1)
    x = images(rng, 6)
    anc = [rng.uniform(0, 0.5, 2).astype(np.float32) for _ in x]
    shp = [rng.uniform(0, 0.5, 2).astype(np.float32) for _ in x]
    (got,) = run1(lambda a, b, c: fn.slice(a, b, c), 6, (lambda: x, {"layout": "HWC"}),
                  (lambda: anc, {}), (lambda: shp, {}))
    for i in range(6):
        # axes default to "WH": anchor[0] is x, anchor[1] is y; both normalized
        dims, start, end = [], [], []
        for k, d in enumerate((1, 0)):
            ext = x[i].shape[d]
            a, s = float(anc[i][k]), float(shp[i][k])
            e = int(np.floor((a + s) * ext + 0.5))
            dims.append(d), start.append(int(np.floor(a * ext + 0.5))), end.append(e)
        np.testing.assert_array_equal(got[i], ref_window(x[i], dims, start, end))


def test_absolute_inputs_and_axes():
    rng = np.random.default_rng(2)
    x = [rng.integers(0, 1000, (7, 9, 4)).astype(np.int32) for _ in range(3)]
    anc = [np.array([1, 2], np.int32), np.array([0, 0], np.int32), np.array([3, 0], np.int32)]
    shp = [np.array([4, 2], np.int32), np.array([7, 4], np.int32), np.array([1, 4], np.int32)]
    (got,) = run1(lambda a, b, c: fn.slice(a, b, c, axes=[0, 2], normalized_anchor=False,
                                           normalized_shape=False), 3,
                  (lambda: x, {}), (lambda: anc, {}), (lambda: shp, {}))
    for i in range(3):
        a, s = anc[i], shp[i]
        np.testing.assert_array_equal(got[i], x[i][a[0]:a[0] + s[0], :, a[1]:a[1] + s[1]])
    # a negative axis counts from the back
    (got,) = run1(lambda a, b, c: fn.slice(a, b, c, axes=[-1], normalized_anchor=False,
                                           normalized_shape=False), 3,
                  (lambda: x, {}), (lambda: [np.array([1], np.int64)] * 3, {}),
                  (lambda: [np.array([2], np.int64)] * 3, {}))
    for i in range(3):
        np.testing.assert_array_equal(got[i], x[i][..., 1:3])


def test_named_arguments_lists_and_per_sample():
    rng = np.random.default_rng(3)
    x = images(rng, 4, np.float32, 2)
    x = [np.pad(a, ((4, 0), (4, 0), (0, 0))) for a in x]  # every extent >= 5
    starts = [np.array([1.0, 2.0], np.float32) for _ in x]
    ends = [np.array([a.shape[1] - 1, a.shape[0]], np.float32) for a in x]
    outs = run1(lambda a, s, e: (fn.slice(a, start=s, end=e),
                                 fn.slice(a, rel_start=[0.25, 0.5], rel_shape=[0.5, 0.25]),
                                 fn.slice(a, start=[1, 1], shape=[2, 3], axis_names="HW"),
                                 fn.slice(a, rel_end=[0.5, 0.5])), 4,
                (lambda: x, {"layout": "HWC"}), (lambda: starts, {}), (lambda: ends, {}))
    for i, a in enumerate(x):
        h, w = a.shape[:2]
        np.testing.assert_array_equal(outs[0][i], a[2:h, 1:w - 1])
        x0, y0 = int(np.floor(0.25 * w + 0.5)), int(np.floor(0.5 * h + 0.5))
        x1 = int(np.floor(0.25 * w + 0.5 * w + 0.5))
        y1 = int(np.floor(0.5 * h + 0.25 * h + 0.5))
        np.testing.assert_array_equal(outs[1][i], a[y0:y1, x0:x1])
        np.testing.assert_array_equal(outs[2][i], a[1:3, 1:4])
        np.testing.assert_array_equal(outs[3][i],
                                      a[:int(np.floor(0.5 * h + 0.5)), :int(np.floor(0.5 * w + 0.5))])


@pytest.mark.parametrize("policy", ["pad", "trim_to_shape"])
def test_out_of_bounds(policy):
    rng = np.random.default_rng(4)
    x = images(rng, 5)
    wins = [(int(rng.integers(-5, 10)), int(rng.integers(-5, 10)), int(rng.integers(0, 25)),
             int(rng.integers(0, 25))) for _ in x]
    start = [np.array(w[:2], np.float32) for w in wins]
    shape = [np.array(w[2:], np.float32) for w in wins]
    outs = run1(lambda a, s, z: (fn.slice(a, start=s, shape=z, out_of_bounds_policy=policy,
                                          fill_values=[1, 2, 3]),
                                 fn.slice(a, start=s, shape=z, out_of_bounds_policy=policy,
                                          fill_values=9)), 5,
                (lambda: x, {"layout": "HWC"}), (lambda: start, {}), (lambda: shape, {}))
    for i, (x0, y0, w, h) in enumerate(wins):
        for o, fill in zip(outs, ([1, 2, 3], [9])):
            want = ref_window(x[i], [1, 0], [x0, y0], [x0 + w, y0 + h], policy, fill, 2)
            np.testing.assert_array_equal(o[i], want)


def test_pad_channel_first_layout():
    x = [np.arange(2 * 3 * 4, dtype=np.int16).reshape(2, 3, 4)]
    (got,) = run1(lambda a: fn.slice(a, start=[-1, 0], shape=[6, 2], out_of_bounds_policy="pad",
                                     fill_values=[-5, 6]), 1, (lambda: x, {"layout": "CHW"}))
    np.testing.assert_array_equal(got[0], ref_window(x[0], [2, 1], [-1, 0], [5, 2], "pad",
                                                     [-5, 6], 0))


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype(dtype):
    rng = np.random.default_rng(5)
    x = [(rng.integers(0, 100, (5, 6)) - (0 if np.dtype(dtype).kind in "ub" else 50))
         .astype(dtype) for _ in range(2)]
    (got,) = run1(lambda a: fn.slice(a, start=[1, 2], end=[4, 3], axes=[1, 0]), 2,
                  (lambda: x, {}))
    for i in range(2):
        assert got[i].dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got[i], x[i][2:3, 1:4])


def test_dtype_argument_converts():
    x = [np.array([[-3.7, 0.5, 1.5, 300.0]], np.float32)]
    (got,) = run1(lambda a: fn.slice(a, start=[1], end=[4], axes=[1], dtype=types.UINT8), 1,
                  (lambda: x, {}))
    assert got[0].dtype == np.uint8
    assert got[0].tolist() == [[0, 2, 255]]  # round to nearest even, saturate


def test_empty_and_scalar_samples():
    x = [np.zeros((0, 4), np.float32), np.ones((3, 0), np.float32)]
    (got,) = run1(lambda a: fn.slice(a, rel_start=[0.5], rel_end=[1.0], axes=[1]), 2,
                  (lambda: x, {}))
    assert got[0].shape == (0, 2) and got[1].shape == (3, 0)
    # a 0-d sample (random.uniform's) with no axes is copied whole
    @pipeline_def(batch_size=3, num_threads=2, device_id=None)
    def pipe():
        u = fn.random.uniform(range=[0, 10], seed=3)
        return u, fn.slice(u, axes=[])

    u, got = pipe().run()
    for i in range(3):
        assert np.array(got.at(i)).shape == () and float(got.at(i)) == float(u.at(i))


def test_errors_name_op_and_argument():
    x = [np.zeros((4, 4), np.uint8)]

    def fails(make, match, **src):
        with pytest.raises(errors.Error, match=match):
            run1(make, 1, (lambda: x, src))

    fails(lambda a: fn.slice(a, start=[0, 0], shape=[5, 1], axes=[0, 1]),
          r"slice: sample 0: Slice can't be placed out of bounds with current policy. Got: the "
          r"window \[0, 5\) of dimension 0, the input's extent 4")
    fails(lambda a: fn.slice(a, start=[2], shape=[-1], axes=[0]),
          "slice: sample 0: the window of dimension 0 has a negative extent")
    fails(lambda a: fn.slice(a, start=[0, 0], shape=[1, 1]),
          "slice: sample 0: axis_names \"WH\": 'W' is not in the input's layout")
    fails(lambda a: fn.slice(a, start=[0], shape=[1], axes=[2]),
          r"slice: sample 0: Axis 2 out of range. Expected range is \[-2, 1\] for a 2D input")
    fails(lambda a: fn.slice(a, start=[0], axes=[0, 1]), "slice: start has 1 values for 2 axes")
    fails(lambda a: fn.slice(a, start=[0], rel_start=[0], axes=[0]),
          "slice: give start or rel_start, not both")
    fails(lambda a: fn.slice(a, end=[1], shape=[1], axes=[0]),
          'slice: "end", "rel_end", "shape", and "rel_shape" arguments are mutually exclusive')
    fails(lambda a: fn.slice(a, start=[0], shape=[5], axes=[0], out_of_bounds_policy="pad",
                             fill_values=[1, 2, 3]),
          "slice: sample 0: fill_values has 3 values for 4 channels")
    with pytest.raises(errors.Error, match="out_of_bounds_policy"):
        run1(lambda a: fn.slice(a, axes=[0], out_of_bounds_policy="wrap"), 1, (lambda: x, {}))


@pytest.mark.parametrize("itype", [np.int32, np.int64, np.uint8])
def test_integer_inputs_are_absolute(itype):
    # DALI reads integer anchors and shapes as absolute coordinates, whatever normalized_anchor /
    # normalized_shape say (both True by default); only floating ones are fractions
    rng = np.random.default_rng(6)
    x = [rng.integers(0, 100, (6, 9)).astype(np.float32) for _ in range(2)]

    @pipeline_def(batch_size=2, num_threads=2, device_id=None)
    def pipe():
        a = fn.external_source(source=lambda: x, layout="HW")
        return (fn.slice(a, np.array([1, 1], itype), np.array([2, 1], itype), axes=[0, 1]),
                fn.slice(a, np.array([3, 2], itype), np.array([4, 2], itype)),
                fn.slice(a, np.array([1, 1], itype), np.array([2, 1], itype), axes=[0, 1],
                         normalized_anchor=True, normalized_shape=False))

    outs = pipe().run()
    for i in range(2):
        np.testing.assert_array_equal(np.array(outs[0].at(i)), x[i][1:3, 1:2])
        # axis_names "WH" (the default): x first, then y
        np.testing.assert_array_equal(np.array(outs[1].at(i)), x[i][2:4, 3:7])
        np.testing.assert_array_equal(np.array(outs[2].at(i)), x[i][1:3, 1:2])


def test_float_inputs_follow_the_normalized_flags():
    x = [np.arange(10 * 20, dtype=np.int16).reshape(10, 20)]
    # the anchor a fraction (of 20 and of 10), the shape absolute
    (got,) = run1(lambda a, b, c: fn.slice(a, b, c, axes=[1, 0], normalized_shape=False), 1,
                  (lambda: x, {}), (lambda: [np.array([0.25, 0.1], np.float32)], {}),
                  (lambda: [np.array([3.0, 2.0], np.float32)], {}))
    np.testing.assert_array_equal(got[0], x[0][1:3, 5:8])
    # the anchor absolute, the shape a fraction
    (got,) = run1(lambda a, b, c: fn.slice(a, b, c, axes=[1, 0], normalized_anchor=False), 1,
                  (lambda: x, {}), (lambda: [np.array([4.0, 2.0], np.float32)], {}),
                  (lambda: [np.array([0.5, 0.5], np.float32)], {}))
    np.testing.assert_array_equal(got[0], x[0][2:7, 4:14])


def test_rel_start_with_rel_shape_rounds_the_sum():
    # end = round((rel_start + rel_shape) * extent), one product as DALI has it: (0.15 + 0.35) * 3
    # is 1.5 and ends at 2, where 0.15 * 3 + 0.35 * 3 (1.4999...) would end at 1
    x = [np.arange(3, dtype=np.int32)]
    (got,) = run1(lambda a: fn.slice(a, rel_start=[0.15], rel_shape=[0.35], axes=[0]), 1,
                  (lambda: x, {}))
    np.testing.assert_array_equal(got[0], x[0][0:2])


def test_anchor_and_shape_of_different_types_are_refused():
    x = [np.zeros((4, 4), np.uint8)]
    with pytest.raises(errors.Error, match=r"slice: sample 0: the anchor \(int32\) and shape "
                                           r"\(float32\) inputs must have the same type"):
        run1(lambda a, b, c: fn.slice(a, b, c, axes=[0, 1]), 1, (lambda: x, {}),
             (lambda: [np.array([0, 0], np.int32)], {}),
             (lambda: [np.array([0.5, 0.5], np.float32)], {}))


def test_per_sample_axes():
    """axes as a per-sample tensor (DALI's dynamic axes): each sample's own, negative ones from
    the back, an empty one every dimension; compared with numpy slicing"""
    img = np.arange(10 * 12 * 3, dtype=np.float32).reshape(10, 12, 3)
    axes = [np.int32([0]), np.int32([-2, 0]), np.int32([])]
    starts = [np.float32([0.5]), np.float32([0.25, 0.2]), np.float32([0.1, 0.5, 0.0])]
    shapes = [np.float32([0.5]), np.float32([0.5, 0.6]), np.float32([0.5, 0.5, 1.0])]
    pipe = sluice.Pipeline(batch_size=3, num_threads=1, device_id=None)
    with pipe:
        x = fn.external_source(source=lambda: [img] * 3)
        a, s0, s1 = [fn.external_source(source=lambda v=v: v) for v in (axes, starts, shapes)]
        pipe.set_outputs(fn.slice(x, rel_start=s0, rel_shape=s1, axes=a))
    pipe.build()
    (out,) = pipe.run()
    np.testing.assert_array_equal(out.at(0), img[5:10])
    np.testing.assert_array_equal(out.at(1), img[2:8, 3:9])
    np.testing.assert_array_equal(out.at(2), img[1:6, 6:12])
    pipe = sluice.Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        x = fn.external_source(source=lambda: [img])
        a = fn.external_source(source=lambda: [np.int32([3])])
        pipe.set_outputs(fn.slice(x, rel_start=[0.1], rel_shape=[0.5], axes=a))
    pipe.build()
    with pytest.raises(sluice.Error, match=r"Axis 3 out of range. Expected range is \[-3, 2\] "
                                           r"for a 3D input"):
        pipe.run()


def test_image_type_checks_channels_any_data_anything():
    # DALI's older argument, as its audio examples give it (ANY_DATA on a 1-D signal)
    sig = np.arange(20, dtype=np.float32)

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def audio():
        x = fn.external_source(source=lambda: [sig])
        return fn.slice(x, np.float32([3]), np.float32([5]), axes=[0], normalized_anchor=False,
                        normalized_shape=False, image_type=types.ANY_DATA)

    p = audio()
    p.build()
    (out,) = p.run()
    assert np.array(out.at(0)).tolist() == sig[3:8].tolist()
    img = np.zeros((4, 4, 3), np.uint8)

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def gray():
        x = fn.external_source(source=lambda: [img], layout="HWC")
        return fn.slice(x, start=[0, 0], shape=[2, 2], image_type=types.GRAY)

    with pytest.raises(sluice.Error, match="slice: sample 0: image_type wants 1 channel, the "
                                           "input has 3"):
        gray().run()



def test_per_sample_axes_that_are_no_axis_index_are_refused():
    """a per-sample axes value that is not an integer of an axis's range (here -1e30 and 0.5) is
    an error naming it, checked before it is taken as an int"""
    for bad in (-1e30, 0.5):
        pipe = sluice.Pipeline(batch_size=1, num_threads=1, device_id=None)
        with pipe:
            x = fn.external_source(source=lambda: [np.zeros((4, 4), np.float32)], batch=True)
            ax = fn.external_source(source=lambda b=bad: [np.float32([b])], batch=True)
            pipe.set_outputs(fn.slice(x, np.float32([0]), np.float32([2]), axes=ax))
        pipe.build()
        with pytest.raises(sluice.errors.Error, match=r"axes: .* is not an axis of a 2D input"):
            pipe.run()
