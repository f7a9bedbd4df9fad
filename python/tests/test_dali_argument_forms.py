# SPDX-License-Identifier: Apache-2.0
"""The argument forms DALI programs use: per-sample (op output) values where DALI takes tensor
arguments (resize's sizes, random.*'s shape and probability, flip's depthwise), warp_affine's
matrix as a second input, one number for resize's size, resize's modes, a bool where an int is
taken, reshape's src_dims, crop_mirror_normalize's older argument names, path objects where a path
is taken, input sets (an op called on lists of op outputs), numpy arrays as constants in
expressions and lists of numbers as inputs. Values are checked against numpy, or against the same
op given the same values as constants."""

import pathlib

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.types as types
from conftest import run_tool


def run(define, batch_size=2, **kw):
    """One batch of a CPU pipeline made of define() (its outputs)."""
    pipe = sluice.Pipeline(batch_size=batch_size, num_threads=1, device_id=None, seed=7, **kw)
    with pipe:
        outs = define()
        pipe.set_outputs(*(outs if isinstance(outs, (list, tuple)) else (outs,)))
    pipe.build()
    res = pipe.run()
    pipe.close()
    return res


def source(samples, **kw):
    """An external_source giving these samples (a list) in every batch."""
    return fn.external_source(source=lambda: [np.asarray(s) for s in samples], **kw)


RNG = np.random.default_rng(5)
IMAGES = [RNG.integers(0, 255, (8, 12, 3), dtype=np.uint8),
          RNG.integers(0, 255, (10, 6, 3), dtype=np.uint8)]


def test_resize_shorter_per_sample_matches_constants():
    (out,) = run(lambda: fn.resize(source(IMAGES, layout="HWC"),
                                   resize_shorter=source([np.float32(4), np.float32(5)])))
    assert [tuple(s.shape) for s in out] == [(4, 6, 3), (8, 5, 3)]
    for i, shorter in enumerate((4, 5)):
        (ref,) = run(lambda: fn.resize(source([IMAGES[i]], layout="HWC"), resize_shorter=shorter),
                     batch_size=1)
        np.testing.assert_array_equal(out.at(i), ref.at(0))


def test_resize_xy_and_size_per_sample():
    (a, b) = run(lambda: (
        fn.resize(source(IMAGES, layout="HWC"), resize_x=source([np.float32(6), np.float32(3)]),
                  resize_y=source([np.float32(4), np.float32(5)])),
        fn.resize(source(IMAGES, layout="HWC"),
                  size=source([np.float32([4, 6]), np.float32([5, 3])]))))
    assert [tuple(s.shape) for s in a] == [(4, 6, 3), (5, 3, 3)]
    for i in range(2):
        np.testing.assert_array_equal(a.at(i), b.at(i))


def test_resize_size_one_number():
    (one, two) = run(lambda: (fn.resize(source(IMAGES, layout="HWC"), size=5),
                              fn.resize(source(IMAGES, layout="HWC"), size=[5, 5])))
    assert [tuple(s.shape) for s in one] == [(5, 5, 3), (5, 5, 3)]
    np.testing.assert_array_equal(one.at(1), two.at(1))


@pytest.mark.parametrize("mode,args,want", [
    # DALI's docs: 1280x720 asked 640x480 gives 640x360 (not_larger) and 853x480 (not_smaller);
    # here a tenth of it, 128x72 asked 64x48
    ("not_larger", {"resize_x": 64, "resize_y": 48}, (36, 64)),
    ("not_smaller", {"resize_x": 64, "resize_y": 48}, (48, 85)),
    ("not_larger", {"size": [48, 64]}, (36, 64)),
    ("stretch", {"resize_x": 64}, (72, 64)),       # the missing extent is kept
    ("default", {"resize_x": 64}, (36, 64)),       # ... or scaled with the given one
    ("stretch", {"resize_x": 64, "resize_y": 48}, (48, 64)),
])
def test_resize_modes(mode, args, want):
    img = np.zeros((72, 128, 3), np.uint8)
    (out,) = run(lambda: fn.resize(source([img], layout="HWC"), mode=mode, **args), batch_size=1)
    assert tuple(out.at(0).shape) == want + (3,)


def test_resize_per_sample_in_pipeline_text(tmp_path):
    text = tmp_path / "p.py"
    text.write_text(
        "import nvidia.dali.fn as fn\n"
        "def pipe(path):\n"
        "    jpegs, labels = fn.readers.caffe2(path=path)\n"
        "    images = fn.decoders.image(jpegs, output_type=types.GRAY)\n"
        "    return fn.resize(images, resize_shorter=fn.random.uniform(range=[10.0, 20.0]))\n")
    from conftest import LMDB
    dump = tmp_path / "dump"
    run_tool("run", str(text), "--arg", "path=%s" % LMDB, "--devices", "cpu",
             "--batch-size", "4", "--steps", "1", "--dump", str(dump))
    shapes = set()
    for f in sorted(dump.rglob("*.npy")):
        shapes.add(np.load(f).shape)
    # 28x28 images, their side drawn from [10, 20) per sample: several sizes in 4 samples
    assert shapes and all(len(s) == 3 and 10 <= s[0] <= 20 and s[0] == s[1] for s in shapes)


def test_coin_flip_shape_and_probability_per_sample():
    shapes = [np.int32([2, 3]), np.int32([4, 1])]
    (coin, never) = run(lambda: (
        fn.random.coin_flip(shape=source(shapes), probability=source([np.float32(1)] * 2)),
        fn.random.coin_flip(shape=source(shapes), probability=0.0)))
    assert [tuple(s.shape) for s in coin] == [(2, 3), (4, 1)]
    assert all((coin.at(i) == 1).all() for i in range(2))
    assert all((never.at(i) == 0).all() for i in range(2))


def test_coin_flip_shape_rank_must_agree():
    with pytest.raises(sluice.Error, match="shape"):
        run(lambda: fn.random.coin_flip(shape=source([np.int32([2, 3]), np.int32([4])])))


def test_flip_depthwise_volumes_as_numpy():
    vol = RNG.integers(0, 255, (3, 4, 5, 2), dtype=np.uint8)
    (dhwc, cdhw, per_sample) = run(lambda: (
        fn.flip(source([vol, vol], layout="DHWC"), horizontal=0, depthwise=1),
        fn.flip(source([vol, vol], layout="CDHW"), horizontal=0, depthwise=True),
        fn.flip(source([vol, vol], layout="DHWC"), horizontal=0, vertical=1,
                depthwise=source([np.int32(1), np.int32(0)]))))
    np.testing.assert_array_equal(dhwc.at(0), vol[::-1])
    np.testing.assert_array_equal(cdhw.at(0), vol[:, ::-1])
    np.testing.assert_array_equal(per_sample.at(0), vol[::-1, ::-1])
    np.testing.assert_array_equal(per_sample.at(1), vol[:, ::-1])


def test_flip_depthwise_on_an_image_has_nothing_to_flip():
    (out,) = run(lambda: fn.flip(source(IMAGES, layout="HWC"), horizontal=0, depthwise=1))
    np.testing.assert_array_equal(out.at(0), IMAGES[0])


def test_warp_affine_matrix_as_second_input():
    m = np.float32([[1, 0.2, 1], [0.1, 1, -2]])
    (by_arg, by_input, by_node) = run(lambda: (
        fn.warp_affine(source(IMAGES, layout="HWC"), matrix=m.ravel().tolist()),
        fn.warp_affine(source(IMAGES, layout="HWC"), source([m, m])),
        fn.warp_affine(source(IMAGES, layout="HWC"), matrix=source([m.ravel(), m.ravel()]))))
    for i in range(2):
        np.testing.assert_array_equal(by_arg.at(i), by_input.at(i))
        np.testing.assert_array_equal(by_arg.at(i), by_node.at(i))


def test_warp_affine_matrix_twice_or_never():
    m = np.float32([[1, 0, 0], [0, 1, 0]])
    with pytest.raises(sluice.Error, match="not both"):
        run(lambda: fn.warp_affine(source(IMAGES, layout="HWC"), source([m, m]),
                                   matrix=m.ravel().tolist()))
    with pytest.raises(sluice.Error, match="matrix"):
        run(lambda: fn.warp_affine(source(IMAGES, layout="HWC")))


def test_bool_where_an_int_is_taken():
    (no, yes, flip) = run(lambda: (
        fn.crop_mirror_normalize(source(IMAGES, layout="HWC"), mirror=False, output_layout="HWC"),
        fn.crop_mirror_normalize(source(IMAGES, layout="HWC"), mirror=True, output_layout="HWC"),
        fn.flip(source(IMAGES, layout="HWC"), horizontal=False, vertical=True)))
    np.testing.assert_array_equal(no.at(0), IMAGES[0].astype(np.float32))
    np.testing.assert_array_equal(yes.at(0), IMAGES[0][:, ::-1].astype(np.float32))
    np.testing.assert_array_equal(flip.at(1), IMAGES[1][::-1])


def test_reshape_src_dims_as_numpy():
    x = np.arange(24, dtype=np.int16).reshape(6, 4, 1)
    (a, b, c) = run(lambda: (fn.reshape(source([x, x], layout="HWC"), src_dims=[-1, 1, 0]),
                             fn.reshape(source([x, x], layout="HWC"), src_dims=[1, 0]),
                             fn.reshape(source([x, x], layout="HWC"), src_dims=[1, 0, 2])))
    np.testing.assert_array_equal(a.at(0), x.reshape(1, 4, 6))
    np.testing.assert_array_equal(b.at(0), x.reshape(4, 6))
    assert b.layout() == "WH" and c.layout() == "WHC" and a.layout() == ""


def test_reshape_src_dims_refuses_a_dropped_dim_of_extent_above_1():
    x = np.zeros((6, 4, 2), np.uint8)
    with pytest.raises(sluice.Error, match="src_dims"):
        run(lambda: fn.reshape(source([x, x]), src_dims=[1, 0]))
    with pytest.raises(sluice.Error, match="exactly one"):
        run(lambda: fn.reshape(source([x, x]), src_dims=[1, 0, 2], shape=[48]))


def test_cmn_older_names():
    (new, old) = run(lambda: (
        fn.crop_mirror_normalize(source(IMAGES, layout="HWC"), dtype=types.UINT8, mean=[10.0]),
        fn.crop_mirror_normalize(source(IMAGES, layout="HWC"), output_dtype=types.UINT8,
                                 mean=[10.0], image_type=types.RGB)))
    assert new.dtype == old.dtype == types.UINT8
    for i in range(2):
        np.testing.assert_array_equal(new.at(i), old.at(i))
    with pytest.raises(sluice.Error, match="not both"):
        run(lambda: fn.crop_mirror_normalize(source(IMAGES, layout="HWC"), dtype=types.FLOAT,
                                             output_dtype=types.UINT8))
    with pytest.raises(sluice.Error, match="image_type wants 1 channel"):
        run(lambda: fn.crop_mirror_normalize(source(IMAGES, layout="HWC"),
                                             image_type=types.GRAY))


def test_per_sample_arguments_are_in_the_operator_table():
    table = {op: fn.schemas[op].args for op in ("resize", "random.coin_flip", "flip")}
    for name in ("resize_x", "resize_y", "resize_shorter", "resize_longer", "size"):
        assert table["resize"][name].per_sample
    assert table["random.coin_flip"]["shape"].per_sample
    assert table["random.coin_flip"]["probability"].per_sample
    assert table["flip"]["depthwise"].per_sample


def test_path_objects_where_a_path_is_taken(tmp_path):
    for i in range(3):
        (tmp_path / ("%d.bin" % i)).write_bytes(bytes([i]) * (i + 1))
    (tmp_path / "list.txt").write_text("".join("%d.bin %d\n" % (i, i) for i in range(3)))
    (data, labels) = run(lambda: fn.readers.file(file_root=tmp_path,
                                                 file_list=tmp_path / "list.txt"), batch_size=3)
    assert [data.at(i).tolist() for i in range(3)] == [[0], [1, 1], [2, 2, 2]]
    (data, _) = run(lambda: fn.readers.file(files=[tmp_path / "2.bin", str(tmp_path / "0.bin")]))
    assert [data.at(i).tolist() for i in range(2)] == [[2, 2, 2], [0]]


def test_input_sets():
    """fn.op([a, b]) applies the op to each, as DALI's input sets; other inputs go to every set"""
    a = [np.arange(6, dtype=np.float32).reshape(2, 3)] * 2
    b = [np.full((4, 3), 2, np.float32)] * 2
    x, y, u, v = run(lambda: fn.reductions.sum([source(a), source(b)], axes=[0])
                     + fn.cat([source(a), source(b)], source([np.ones((1, 3), np.float32)] * 2)))
    np.testing.assert_array_equal(x.at(0), a[0].sum(0))
    np.testing.assert_array_equal(y.at(1), b[0].sum(0))
    assert u.at(0).shape == (3, 3) and v.at(0).shape == (5, 3)
    with pytest.raises(sluice.InvalidArgumentError, match="input sets .* different lengths"):
        run(lambda: fn.cat([source(a), source(b)], [source(a)]))


def test_numpy_arrays_in_expressions_and_lists_as_inputs():
    c = np.array([[10, 20, 30], [40, 50, 60]])
    xs = [np.ones((2, 3), np.int32), np.full((2, 3), 3, np.int32)]
    out, rev, cat = run(lambda: (source(xs) + c, np.float32([1.5, 2.5, 3.5]) * source(xs),
                                 fn.cat(source([np.zeros(2, np.float32)] * 2),
                                        [1.0, 2.0])))
    for i in range(2):
        np.testing.assert_array_equal(out.at(i), xs[i] + c)
        assert out.at(i).dtype == np.int32  # a 64-bit array is a 32-bit constant, as DALI's
        np.testing.assert_array_equal(rev.at(i), np.float32([1.5, 2.5, 3.5]) * xs[i])
        np.testing.assert_array_equal(cat.at(i), [0, 0, 1, 2])


def test_experimental_exec_dynamic_is_taken():
    (out,) = run(lambda: source([np.int32(4)]), batch_size=1, experimental_exec_dynamic=True)
    assert out.at(0) == 4


def test_external_source_dtype_and_ndim_per_output():
    def src():
        return [np.zeros((2, 2), np.uint8)] * 2, [np.ones(3, np.int32)] * 2

    a, b = run(lambda: fn.external_source(src, num_outputs=2,
                                          dtype=[types.UINT8, types.INT32], ndim=[2, 1]))
    assert a.at(0).dtype == np.uint8 and b.at(1).tolist() == [1, 1, 1]
    with pytest.raises(sluice.Error, match=r"output 1: INT32, but dtype\[1\] is FLOAT"):
        run(lambda: fn.external_source(src, num_outputs=2, dtype=[types.UINT8, types.FLOAT]))
    with pytest.raises(sluice.Error, match=r"output 0: 2 dimensions, but ndim\[0\] is 3"):
        run(lambda: fn.external_source(src, num_outputs=2, ndim=[3, 1]))
    with pytest.raises(sluice.InvalidArgumentError, match="dtype has 1 entries for 2 outputs"):
        run(lambda: fn.external_source(src, num_outputs=2, dtype=[types.UINT8]))
