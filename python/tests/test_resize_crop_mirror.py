# SPDX-License-Identifier: Apache-2.0
"""fn.resize_crop_mirror (ops.ResizeCropMirror; fast_resize_crop_mirror, antialias off by default)
against what it stands for, byte for byte: fn.resize, then fn.crop, then fn.flip (mirror bit 0
horizontal, bit 1 vertical), on the same images with the same arguments, given as literals and
per sample; CHW, CFHW and FCHW as HWC; resize's reversed windows (roi_end below roi_start) as the forward window's result
flipped; the errors; and the CUDA run against the CPU's."""

import numpy as np
import pytest

import sluice.fn as fn
import sluice.ops as ops
import sluice.types as types
from sluice.pipeline import Pipeline
from conftest import gpu_or_skip


def images(n=6, seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(48, 64), (61, 37), (30, 90), (77, 77), (40, 52), (55, 33)]
    return [rng.integers(0, 256, shapes[i % 6] + (3,), dtype=np.uint8) for i in range(n)]


def both(imgs, mirror, crop_args, device="cpu", interp=types.INTERP_LINEAR, **resize_args):
    """(resize_crop_mirror, flip(crop(resize))) of imgs; mirror per sample"""
    p = Pipeline(batch_size=len(imgs), num_threads=2, device_id=None if device == "cpu" else 0,
                 seed=3)
    with p:
        x = fn.external_source(source=lambda: imgs, batch=True, layout="HWC")
        m = fn.external_source(source=lambda: [np.int32(v) for v in mirror], batch=True)
        if device == "gpu":
            x = x.gpu()
        fused = fn.resize_crop_mirror(x, mirror=m, interp_type=interp, **crop_args, **resize_args)
        resized = fn.resize(x, interp_type=interp, **resize_args)
        cropped = fn.crop(resized, **crop_args)
        flipped = fn.flip(cropped, horizontal=m & 1, vertical=(m >> 1) & 1)
        p.set_outputs(fused, flipped)
    a, b = p.run()
    if hasattr(a, "as_cpu"):
        a, b = a.as_cpu(), b.as_cpu()
    return [np.array(a.at(i)) for i in range(len(imgs))], [np.array(b.at(i))
                                                           for i in range(len(imgs))]


CASES = [
    (dict(crop=[32, 40]), dict(size=[96, 128])),
    (dict(crop_h=50.0, crop_w=21.0, crop_pos_x=0.0, crop_pos_y=1.0), dict(resize_shorter=64)),
    (dict(crop=[24, 24], crop_pos_x=0.8, crop_pos_y=0.3), dict(size=[40, 40], mode="not_smaller")),
    (dict(crop=[20, 30], rounding="truncate", crop_pos_x=0.37), dict(resize_x=60.0)),
    (dict(crop=[16, 16]), dict(size=[30, 34], roi_start=[0.7, 0.2], roi_end=[0.1, 0.8],
                               roi_relative=True)),
    (dict(), dict(size=[20, 27.5])),
]


@pytest.mark.parametrize("crop_args,resize_args", CASES)
@pytest.mark.parametrize("interp", [types.INTERP_LINEAR, types.INTERP_CUBIC, types.INTERP_NN])
def test_same_as_resize_crop_flip(crop_args, resize_args, interp):
    imgs = images()
    fused, composed = both(imgs, [0, 1, 2, 3, 1, 2], crop_args, interp=interp, **resize_args)
    for i, (a, b) in enumerate(zip(fused, composed)):
        assert a.shape == b.shape and np.array_equal(a, b), (i, a.shape, b.shape)


def test_per_sample_crop_and_ops_form():
    imgs = images(4, seed=1)
    ch = [np.float32(v) for v in (20, 33, 17, 40)]
    px = [np.float32(v) for v in (0.0, 0.25, 1.0, 0.5)]
    p = Pipeline(batch_size=4, num_threads=2, device_id=None)
    with p:
        x = fn.external_source(source=lambda: imgs, batch=True, layout="HWC")
        h = fn.external_source(source=lambda: ch, batch=True)
        pos = fn.external_source(source=lambda: px, batch=True)
        a = fn.resize_crop_mirror(x, resize_shorter=50, crop_h=h, crop_w=25.0, crop_pos_x=pos,
                                  mirror=1)
        b = ops.ResizeCropMirror(resize_shorter=50, crop_w=25.0, mirror=1)(x, crop_h=h,
                                                                          crop_pos_x=pos)
        c = fn.flip(fn.crop(fn.resize(x, resize_shorter=50), crop_h=h, crop_w=25.0,
                            crop_pos_x=pos), horizontal=1)
        p.set_outputs(a, b, c)
    a, b, c = p.run()
    for i in range(4):
        x, y, z = (np.array(o.at(i)).astype(int) for o in (a, b, c))
        assert x.shape == (int(ch[i]), 25, 3) and np.array_equal(x, y), i
        assert np.array_equal(x, z), i


def test_planar_layouts_and_sequences():
    """CHW, CFHW and FCHW (every channel and frame plane cut by its sample's one window): the HWC
    result transposed, byte for byte"""
    imgs = images(3, seed=5)
    kw = dict(size=[37, 29], crop=[20, 16], crop_pos_x=0.3, mirror=3)

    def run(samples, layout):
        p = Pipeline(batch_size=len(samples), num_threads=2, device_id=None)
        with p:
            x = fn.external_source(source=lambda: samples, batch=True, layout=layout)
            p.set_outputs(fn.resize_crop_mirror(x, **kw))
        (o,) = p.run()
        assert o.layout() == layout
        return [np.array(o.at(i)) for i in range(len(samples))]

    hwc = run(imgs, "HWC")
    chw = run([np.ascontiguousarray(a.transpose(2, 0, 1)) for a in imgs], "CHW")
    seq = [np.stack([a, 255 - a]) for a in imgs]  # two frames
    cfhw = run([np.ascontiguousarray(q.transpose(3, 0, 1, 2)) for q in seq], "CFHW")
    fchw = run([np.ascontiguousarray(q.transpose(0, 3, 1, 2)) for q in seq], "FCHW")
    for i, a in enumerate(hwc):
        assert a.shape == (20, 16, 3)
        assert np.array_equal(chw[i], a.transpose(2, 0, 1)), i
        assert np.array_equal(cfhw[i][:, 0], a.transpose(2, 0, 1)), i
        assert np.array_equal(fchw[i][0], a.transpose(2, 0, 1)), i
        inv = run([255 - imgs[i]], "HWC")[0]
        assert np.array_equal(fchw[i][1], inv.transpose(2, 0, 1)), i
        assert np.array_equal(cfhw[i][:, 1], inv.transpose(2, 0, 1)), i


def test_fast_variant_has_antialias_off():
    imgs = images(2, seed=2)
    p = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with p:
        x = fn.external_source(source=lambda: imgs, batch=True, layout="HWC")
        p.set_outputs(fn.fast_resize_crop_mirror(x, size=[20, 20], crop=[10, 12], mirror=2),
                      fn.resize_crop_mirror(x, size=[20, 20], crop=[10, 12], mirror=2,
                                            antialias=False),
                      fn.resize_crop_mirror(x, size=[20, 20], crop=[10, 12], mirror=2))
    a, b, c = p.run()
    assert np.array_equal(np.array(a.at(0)), np.array(b.at(0)))
    assert not np.array_equal(np.array(a.at(0)), np.array(c.at(0)))


def test_resize_reversed_window_is_the_forward_one_flipped():
    imgs = images(3, seed=4)
    p = Pipeline(batch_size=3, num_threads=1, device_id=None)
    with p:
        x = fn.external_source(source=lambda: imgs, batch=True, layout="HWC")
        p.set_outputs(fn.resize(x, size=[21, 33], roi_start=[0.1, 0.2], roi_end=[0.9, 0.7],
                                roi_relative=True),
                      fn.resize(x, size=[21, 33], roi_start=[0.9, 0.7], roi_end=[0.1, 0.2],
                                roi_relative=True))
    a, b = p.run()
    for i in range(3):
        fwd, back = np.array(a.at(i)).astype(int), np.array(b.at(i)).astype(int)
        assert np.abs(back - fwd[::-1, ::-1]).max() <= 1, i


@pytest.mark.parametrize("kw,msg", [
    (dict(size=[20, 20], crop=[30, 10]), "does not fit in the resized image"),
    (dict(size=[20, 20], crop=[10, 10], crop_h=5.0), "crop or crop_h"),
    (dict(size=[20, 20], crop_d=3.0), "crop_d"),
    (dict(size=[20, 20], mirror=4), "mirror = 4"),
    (dict(size=[20, 20], crop=[8, 8], crop_pos_x=1.5), "crop_pos_x"),
])
def test_errors(kw, msg):
    p = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pytest.raises(RuntimeError, match="resize_crop_mirror") as e:
        with p:
            x = fn.external_source(source=lambda: images(1), batch=True, layout="HWC")
            p.set_outputs(fn.resize_crop_mirror(x, **kw))
        p.run()
    assert msg in str(e.value), str(e.value)


@pytest.mark.gpu
@pytest.mark.parametrize("crop_args,resize_args", CASES)
def test_gpu_matches_cpu(crop_args, resize_args):
    gpu_or_skip()
    imgs = images()
    cpu, _ = both(imgs, [0, 1, 2, 3, 1, 2], crop_args, **resize_args)
    gpu, composed = both(imgs, [0, 1, 2, 3, 1, 2], crop_args, device="gpu", **resize_args)
    for i, (a, b, c) in enumerate(zip(cpu, gpu, composed)):
        assert a.shape == b.shape and np.abs(a.astype(int) - b.astype(int)).max() <= 1, i
        assert np.array_equal(b, c), i
