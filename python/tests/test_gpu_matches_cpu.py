# SPDX-License-Identifier: Apache-2.0
"""CUDA runs against CPU runs of the same pipelines, for the GPU paths that the C harness
(tests/gpu/test_image_ops_cuda.c) does not reach through the executor: tensor subscripts with
per-sample bounds, resize of volumes, per-sample interp_type / min_filter / mag_filter of resize
and random_resized_crop, the random ops and lookup_table placed on "gpu", erase with per-sample
fill_value, gaussian_blur per frame, warp_affine / rotate with dtype and of volumes, cast,
cast_like, shapes and constant (one descriptor upload), and GPU ops given a batch of 0 samples
by a conditional branch. Each pipeline runs twice, on GPU 0 (its data sent
with .gpu()) and on the CPU, over samples of different shapes (an empty one where the op takes
it) and several dtypes; every output must agree sample by sample in shape, layout and dtype, and
in its bytes, except where a tolerance is named (resize, whose float sums may round a tie to the
other integer: within 1 for integer outputs, 1e-3 for float ones; nearest neighbour exact)."""

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.types as types
from sluice.pipeline import Pipeline
from conftest import gpu_or_skip

pytestmark = pytest.mark.gpu

GPU = 0  # the device of the CUDA runs
RNG = np.random.default_rng(2024)


def run(build, device_id, batch, **kw):
    """build() (its outputs) in a pipeline on device_id, run once: per output (numpy samples,
    layout, dtype)"""
    p = Pipeline(batch_size=batch, num_threads=2, device_id=device_id, seed=17, **kw)
    with p:
        p.set_outputs(*build())
    p.build()
    res = []
    for o in p.run():
        o = o.as_cpu() if hasattr(o, "as_cpu") else o
        res.append(([np.array(o.at(i)) for i in range(len(o))], o.layout(), o.dtype))
    return res


def compare(build, batch, tol=None, **kw):
    """build(dev) on GPU 0 (dev "gpu") and on the CPU (dev "cpu"): the outputs must agree; tol:
    per output, None for the same bytes or the largest |gpu - cpu| allowed"""
    gpu_or_skip()
    gpu = run(lambda: build("gpu"), GPU, batch, **kw)
    cpu = run(lambda: build("cpu"), None, batch, **kw)
    assert len(gpu) == len(cpu)
    for k, ((gs, gl, gt), (cs, cl, ct)) in enumerate(zip(gpu, cpu)):
        assert (gl, gt) == (cl, ct), (k, gl, gt, cl, ct)
        assert len(gs) == len(cs) == batch, k
        t = tol[k] if isinstance(tol, (list, tuple)) else tol
        for i, (g, c) in enumerate(zip(gs, cs)):
            assert g.shape == c.shape, (k, i, g.shape, c.shape)
            assert g.dtype == c.dtype, (k, i)
            if t is None:
                assert g.tobytes() == c.tobytes(), "output %d sample %d: GPU != CPU" % (k, i)
            elif g.size:
                worst = np.max(np.abs(g.astype(np.float64) - c.astype(np.float64)))
                assert worst <= t, "output %d sample %d: |GPU - CPU| %g > %g" % (k, i, worst, t)
    return cpu


def feed(samples, layout=None):
    """an external_source giving these samples, every batch"""
    kw = {"layout": layout} if layout else {}
    return fn.external_source(source=lambda: [np.asarray(s) for s in samples], **kw)


def data(samples, dev, layout=None):
    x = feed(samples, layout)
    return x.gpu() if dev == "gpu" else x


def ints(values, dtype):
    """an op output giving sample i the integer values[i]"""
    return feed([np.array(v, dtype) for v in values])


# ---- tensor subscripts with per-sample bounds --------------------------------------------------

SUB_SHAPES = [(5, 7, 3), (3, 4, 3), (0, 4, 3), (6, 2, 3), (1, 5, 3), (7, 3, 3)]  # one empty
LO = [1, -2, 0, 3, -100, 2]
HI = [4, -1, 100, 0, 2, -50]
STEP = [1, 2, -1, -2, 3, -5]
IDX1 = [6, 3, -2, 1, 0, 2]  # within each sample's second dim
IDX2 = [0, -1, 2, 1, -3, 2]  # within the channels


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float16, np.float32, np.int64,
                                   np.float64, np.bool_])
def test_tensor_subscript_per_sample_bounds(dtype):
    samples = [(RNG.integers(0, 200, s) if dtype != np.bool_ else RNG.integers(0, 2, s))
               .astype(dtype) for s in SUB_SHAPES]

    def build(dev):
        x = data(samples, dev, "HWC")
        lo, hi = ints(LO, np.int64), ints(HI, np.int16)
        step, i1, i2 = ints(STEP, np.int32), ints(IDX1, np.int8), ints(IDX2, np.int32)
        return (x[lo:hi:step], x[:, ::step], x[lo:, i1], x[..., i2], x[::-1, 1:hi, i2],
                x[sluice.newaxis, :, i1:, ::step], x[2:, -1])

    cpu = compare(build, len(SUB_SHAPES))
    # the per-sample bounds left some samples empty, and others not (else nothing was compared)
    assert cpu[4][0][3].size == 0 and cpu[4][0][0].size > 0


# ---- resize of volumes ----------------------------------------------------------------------

def vols(shapes, dtype):
    return [(RNG.random(s) * 255).astype(dtype) for s in shapes]


VOL_SHAPES = [(9, 11, 17, 2), (5, 20, 7, 2), (1, 6, 9, 2), (12, 3, 4, 2)]


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32])
def test_resize_volume_per_sample_sizes_filters_and_dtype(dtype):
    samples = vols(VOL_SHAPES, dtype)
    zs = [np.float32(z) for z in (4, 13, 3, 6)]
    integer = np.issubdtype(dtype, np.integer)

    def build(dev):
        x = data(samples, dev, "DHWC")
        interp = fn.random.choice([types.INTERP_NN, types.INTERP_LINEAR, types.INTERP_CUBIC,
                                   types.INTERP_LANCZOS3], seed=9)
        return (fn.resize(x, resize_z=feed(zs), resize_y=10, resize_x=8, interp_type=interp),
                fn.resize(x, size=[6, 7, 15], min_filter=types.INTERP_TRIANGULAR,
                          mag_filter=types.INTERP_CUBIC, dtype=types.FLOAT),
                fn.resize(x, size=[5, 9, 9], roi_start=[0.1, 0.2, 0.25], roi_end=[0.9, 0.8, 0.75],
                          roi_relative=True, interp_type=types.INTERP_LINEAR, antialias=False),
                fn.resize(x, resize_shorter=4, interp_type=types.INTERP_NN))

    compare(build, len(VOL_SHAPES), tol=[1 if integer else 1e-3, 1e-3, 1 if integer else 1e-3,
                                         None])


def test_resize_volume_cdhw_and_sequences():
    cdhw = [np.ascontiguousarray(v.transpose(3, 0, 1, 2)) for v in vols(VOL_SHAPES[:3], np.uint8)]
    seqs = vols([(3, 4, 6, 5, 1), (1, 7, 5, 9, 1), (2, 3, 8, 4, 1)], np.float32)

    def build(dev):
        c = data(cdhw, dev, "CDHW")
        s = data(seqs, dev, "FDHWC")
        return (fn.resize(c, size=[7, 8, 6], interp_type=types.INTERP_CUBIC),
                fn.resize(s, size=[5, 3, 11], interp_type=types.INTERP_GAUSSIAN))

    gpu_or_skip()
    gpu = run(lambda: build("gpu"), GPU, 3)
    cpu = run(lambda: build("cpu"), None, 3)
    for k, tol in enumerate([1, 1e-3]):
        assert gpu[k][1:] == cpu[k][1:]
        for g, c in zip(gpu[k][0], cpu[k][0]):
            assert g.shape == c.shape
            assert np.max(np.abs(g.astype(np.float64) - c.astype(np.float64))) <= tol


# ---- interp_type, min_filter, mag_filter per sample -------------------------------------------

IMG_SHAPES = [(20, 31, 3), (23, 30, 3), (41, 12, 3), (7, 9, 3), (32, 32, 3), (16, 50, 3)]
FILTERS = [types.INTERP_NN, types.INTERP_LINEAR, types.INTERP_CUBIC, types.INTERP_TRIANGULAR,
           types.INTERP_GAUSSIAN, types.INTERP_LANCZOS3]


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_resize_and_rrc_filters_per_sample(dtype):
    samples = [(RNG.random(s) * 255).astype(dtype) for s in IMG_SHAPES]
    tol = 1 if dtype == np.uint8 else 1e-3

    def build(dev):
        x = data(samples, dev, "HWC")
        pick = lambda seed: fn.random.choice(FILTERS, seed=seed)  # noqa: E731
        return (fn.resize(x, size=[13, 37], interp_type=pick(5)),
                fn.resize(x, size=[25, 11], min_filter=pick(6), mag_filter=pick(7),
                          antialias=True),
                fn.resize(x, resize_shorter=18, min_filter=pick(8), dtype=types.FLOAT),
                fn.random_resized_crop(x, size=[15, 18], interp_type=pick(10), seed=123),
                fn.random_resized_crop(x, size=[9, 30], mag_filter=pick(11),
                                       min_filter=pick(12), seed=321))

    compare(build, len(IMG_SHAPES), tol=tol)


# ---- the random ops and lookup_table placed on "gpu" ------------------------------------------

def test_random_ops_placed_on_the_gpu():
    def build(dev):
        return (fn.random.uniform(range=[-2, 3], shape=[3, 4], device=dev, seed=1),
                fn.random.normal(shape=[5], device=dev, seed=2),
                fn.random.coin_flip(probability=0.3, device=dev, seed=3),
                fn.random.choice([1, 5, 9], device=dev, seed=4),
                fn.random.uniform(values=[0.5, 1.5, 7.0], device=dev, seed=5),
                fn.random.normal(mean=fn.random.uniform(range=[0, 9], seed=6), stddev=2.0,
                                 shape=[2, 2], device=dev, seed=7))

    compare(build, 5)


@pytest.mark.parametrize("in_dtype", [np.uint8, np.int32, np.int64, np.uint16])
def test_lookup_table_on_the_gpu(in_dtype):
    shapes = [(4, 5), (0, 3), (7, 1), (2, 6), (1, 1)]
    lo = -3 if np.issubdtype(in_dtype, np.signedinteger) else 0
    samples = [RNG.integers(lo, 60, s).astype(in_dtype) for s in shapes]
    keys = [0, 1, 2, 5, 9, 40]
    values = [10.5, -1.25, 300.0, 7.0, 0.0, 255.0]

    def build(dev):
        x = data(samples, dev)
        return tuple(fn.lookup_table(x, keys=keys, values=values, default_value=-9.5, dtype=t,
                                     device=dev)
                     for t in (types.FLOAT, types.UINT8, types.INT64, types.FLOAT16,
                               types.INT16))

    compare(build, len(shapes))


# ---- erase's per-sample fill_value, gaussian_blur per frame ---------------------------------

@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.float16, np.int16])
def test_erase_per_sample_fill_value(dtype):
    shapes = [(12, 15, 3), (9, 20, 3), (0, 6, 3), (16, 8, 3)]
    samples = [(RNG.random(s) * 200).astype(dtype) for s in shapes]
    fills = [np.float32([7, 80, 255]), np.float32([-3.5]), np.float32([1, 2, 3]),
             np.float32([42])]
    anchors = [np.float32([2, 3, 6, 1]), np.float32([0, 0, 5, 5]), np.float32([0, 0, 0, 0]),
               np.float32([10, 2, 1, 1])]
    sizes = [np.float32([4, 5, 3, 3]), np.float32([9, 25, 2, 2]), np.float32([1, 1, 1, 1]),
             np.float32([20, 3, 2, 6])]

    def build(dev):
        x = data(samples, dev, "HWC")
        return (fn.erase(x, anchor=feed(anchors), shape=feed(sizes), axis_names="HW",
                         fill_value=feed(fills)),
                fn.erase(x, anchor=[0.25, 0.5], shape=[0.5, 0.25], normalized=True,
                         axis_names="HW", fill_value=feed(fills)),
                fn.erase(x, anchor=feed(anchors), shape=feed(sizes), axes=[0, 1],
                         fill_value=[0, 128, 255], centered_anchor=True))

    compare(build, len(shapes))


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_gaussian_blur_per_frame(dtype):
    frames = [3, 1, 4]
    seqs = [(RNG.random((f, 9 + 2 * k, 13 - k, 3)) * 255).astype(dtype)
            for k, f in enumerate(frames)]
    sigmas = [np.float32([0.6, 2.0, 1.2]), np.float32([1.5]),
              np.float32([0.8, 1.1, 3.0, 0.5])]
    sig2 = [np.float32([[0.5, 2.0], [1.5, 0.7], [1.0, 1.0]]), np.float32([[2.5, 0.4]]),
            np.float32([[1.2, 1.3], [0.6, 2.2], [1.8, 0.9], [0.3, 0.3]])]
    windows = [np.int32([[3, 5], [1, 7], [5, 1]]), np.int32([[7, 3]]),
               np.int32([[3, 3], [5, 5], [1, 1], [9, 3]])]

    def build(dev):
        s = data(seqs, dev, "FHWC")
        c = data([np.ascontiguousarray(q.transpose(0, 3, 1, 2)) for q in seqs], dev, "FCHW")
        return (fn.gaussian_blur(s, sigma=fn.per_frame(feed(sigmas))),
                fn.gaussian_blur(s, sigma=fn.per_frame(feed(sig2)), dtype=types.FLOAT),
                fn.gaussian_blur(c, window_size=fn.per_frame(feed(windows))),
                fn.gaussian_blur(c, sigma=fn.per_frame(feed(sigmas)),
                                 window_size=fn.per_frame(feed(windows))))

    compare(build, len(frames))


# ---- warp_affine and rotate: dtype, volumes -------------------------------------------------

def test_warp_affine_and_rotate_with_dtype():
    shapes = [(20, 31, 3), (17, 9, 3), (30, 30, 1), (5, 40, 3)]
    u8 = [RNG.integers(0, 256, s).astype(np.uint8) for s in shapes]
    f32 = [(RNG.random(s) * 300 - 20).astype(np.float32) for s in shapes]
    angles = [np.float32(a) for a in (10, -35, 120, 271)]
    mats = [np.float32([[1.1, 0.2, -3], [-0.1, 0.9, 2]]), np.float32([[0.7, 0, 1], [0, 1.3, 0]]),
            np.float32([[0.5, -0.5, 10], [0.5, 0.5, -4]]), np.float32([[1, 0, 0], [0, 1, 0]])]

    def build(dev):
        a, b = data(u8, dev, "HWC"), data(f32, dev, "HWC")
        return (fn.rotate(a, angle=feed(angles), dtype=types.FLOAT),
                fn.rotate(b, angle=feed(angles), dtype=types.UINT8, fill_value=7,
                          interp_type=types.INTERP_NN),
                fn.warp_affine(b, matrix=feed(mats), dtype=types.INT16, fill_value=-5),
                fn.warp_affine(a, matrix=feed(mats), size=[12, 14], dtype=types.FLOAT16,
                               inverse_map=False),
                fn.rotate(a, angle=feed(angles), keep_size=True, dtype=types.INT32))

    compare(build, len(shapes))


def test_warp_affine_and_rotate_of_volumes():
    shapes = [(6, 9, 11, 2), (4, 5, 7, 2), (9, 3, 6, 2)]
    u8 = [RNG.integers(0, 256, s).astype(np.uint8) for s in shapes]
    f32 = [(RNG.random(s) * 100).astype(np.float32) for s in shapes]
    mats = [np.float32([[1, 0.1, 0, 1], [0, 0.9, 0.2, -1], [0.1, 0, 1.1, 0.5]]),
            np.float32([[0.8, 0, 0, 0], [0, 1.2, 0, 0], [0, 0, 1, 1]]),
            np.float32([[1, 0, 0, -2], [0, 1, 0, 0.5], [0.3, 0, 0.7, 0]])]
    angles = [np.float32(a) for a in (30, -75, 190)]
    axes = [np.float32(v) for v in ([0, 0, 1], [1, 1, 0], [0.2, -1, 0.5])]

    def build(dev):
        a, b = data(u8, dev, "DHWC"), data(f32, dev, "DHWC")
        return (fn.warp_affine(a, matrix=feed(mats), fill_value=3),
                fn.warp_affine(b, matrix=feed(mats), size=[5, 6, 7], dtype=types.UINT8,
                               interp_type=types.INTERP_NN),
                fn.rotate(a, angle=feed(angles), axis=feed(axes), dtype=types.FLOAT),
                fn.rotate(b, angle=feed(angles), axis=[0, 1, 0], keep_size=True,
                          fill_value=-1))

    compare(build, len(shapes))


# ---- cast, cast_like, shapes, constant: one descriptor upload (shapes, constant: host bytes)

def test_cast_family_on_the_gpu():
    shapes = [(4, 6, 3), (0, 2, 3), (9, 1, 3), (1, 1, 3)]
    f32 = [(RNG.random(s) * 600 - 300).astype(np.float32) for s in shapes]
    i16 = [RNG.integers(-900, 900, s).astype(np.int16) for s in shapes]

    def build(dev):
        x, y = data(f32, dev, "HWC"), data(i16, dev, "HWC")
        return (fn.cast(x, dtype=types.UINT8), fn.cast(x, dtype=types.INT64),
                fn.cast(y, dtype=types.FLOAT16), fn.cast(y, dtype=types.INT8),
                fn.cast_like(x, y), fn.cast_like(y, x), fn.shapes(x),
                fn.shapes(y, dtype=types.INT64),
                fn.constant(idata=[1, -2, 3, 4, 5, 6], shape=[2, 3], dtype=types.INT16,
                            device=dev),
                fn.constant(fdata=[0.5, 1.5, -2.25], device=dev))

    compare(build, len(shapes))


# ---- empty batches: a conditional branch that no sample takes -------------------------------

def test_gpu_ops_of_a_branch_no_sample_takes():
    """the ops of the `if` branch get batches of 0 samples on the GPU (their launches skipped, no
    upload read past its end); the `else` branch's, the whole batch"""
    from sluice import pipeline_def
    imgs = [RNG.integers(0, 256, s).astype(np.uint8) for s in IMG_SHAPES[:4]]
    vol = [RNG.integers(0, 256, s).astype(np.uint8) for s in VOL_SHAPES]
    flags = [np.int32(v) for v in (0, 3, 1, 2)]

    def run_on(device_id):
        @pipeline_def(batch_size=4, num_threads=2, device_id=device_id, seed=3,
                      enable_conditionals=True)
        def pipe():
            x, v = feed(imgs, "HWC"), feed(vol, "DHWC")
            flag = feed(flags)
            if device_id is not None:
                x, v = x.gpu(), v.gpu()
            if flag > 5:
                a = fn.resize(x, size=[5, 6], interp_type=fn.random.choice(FILTERS, seed=1))
                b = fn.resize(v, size=[3, 4, 5])
                c = x[flag:, ::flag]
                d = fn.erase(x, anchor=[1, 1], shape=[2, 2], axis_names="HW",
                             fill_value=fn.cast(flag, dtype=types.FLOAT))
                e = fn.gaussian_blur(x, sigma=1.5)
                f = fn.rotate(v, angle=30, axis=[0, 0, 1], dtype=types.UINT8)
                g = fn.lookup_table(x, keys=[1, 2], values=[5.0, 6.0], dtype=types.UINT8)
            else:
                a = fn.resize(x, size=[5, 6], interp_type=types.INTERP_LINEAR)
                b = fn.resize(v, size=[3, 4, 5], interp_type=types.INTERP_NN)
                c = x[:flag, ::2]
                d = fn.erase(x, anchor=[0, 0], shape=[3, 1], axis_names="HW", fill_value=9)
                e = fn.gaussian_blur(x, sigma=0.5)
                f = fn.rotate(v, angle=-20, axis=[0, 1, 0])
                g = fn.lookup_table(x, keys=[3], values=[1.0], dtype=types.UINT8)
            return a, b, c, d, e, f, g

        p = pipe()
        p.build()
        outs = [o.as_cpu() if hasattr(o, "as_cpu") else o for o in p.run()]
        return [[np.array(o.at(i)) for i in range(len(o))] for o in outs]

    gpu_or_skip()
    gpu, cpu = run_on(GPU), run_on(None)
    for k, (gs, cs) in enumerate(zip(gpu, cpu)):
        for i, (g, c) in enumerate(zip(gs, cs)):
            assert g.shape == c.shape and g.dtype == c.dtype, (k, i)
            tol = 1 if k == 0 else 0  # (resize: a tie may round the other way)
            assert g.size == 0 or np.max(np.abs(g.astype(float) - c.astype(float))) <= tol, (k, i)


def test_a_batch_of_empty_samples_on_the_gpu():
    """every sample empty: nothing to copy to the GPU or to launch, and the shapes come out as
    the CPU's"""
    empty = [np.zeros(s, np.uint8) for s in [(0, 5, 3), (4, 0, 3), (0, 0, 3)]]

    def build(dev):
        x = data(empty, dev, "HWC")
        return (x, fn.cast(x, dtype=types.FLOAT), x[1:, ::-1],
                fn.erase(x, anchor=[0, 0], shape=[2, 2], axis_names="HW", fill_value=3),
                fn.lookup_table(x, keys=[0], values=[1.0], device=dev),
                fn.gaussian_blur(x, sigma=1.0))

    compare(build, len(empty))
