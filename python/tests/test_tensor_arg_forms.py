# SPDX-License-Identifier: Apache-2.0
"""Argument forms of DALI's operator tests: tensor argument inputs (an op output, types.Constant,
one value per sample) where a literal is taken -- reshape's shape and rel_shape, pad's axes
(negative ones too), shape, align and fill_value --, reshape with only a layout and to a scalar,
normalize's mean and stddev as tensors of the statistics' shape, paste's one-value fill_value, and
paths as os.PathLike. Checked against numpy."""

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.types as types
from conftest import run_tool


def run(define, batch_size=2):
    """One batch of a CPU pipeline made of define() (its outputs)."""
    pipe = sluice.Pipeline(batch_size=batch_size, num_threads=1, device_id=None, seed=3)
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


RNG = np.random.default_rng(11)
A = RNG.random((4, 5), dtype=np.float32)
B = RNG.random((3, 6), dtype=np.float32)


# ---- reshape ---------------------------------------------------------------------------------

def test_reshape_layout_only_keeps_the_data():
    (out,) = run(lambda: fn.reshape(source([A, B], layout="HW"), layout="ab"))
    assert out.layout() == "ab"
    np.testing.assert_array_equal(out.at(0), A)
    np.testing.assert_array_equal(out.at(1), B)


def test_reshape_layout_only_of_another_rank_is_refused():
    with pytest.raises(Exception, match="layout \"abc\" for 2 dims"):
        run(lambda: fn.reshape(source([A, B]), layout="abc"))


def test_reshape_without_shape_or_layout_is_refused():
    with pytest.raises(Exception, match="give shape, rel_shape, src_dims, a second input with the "
                                        "shape, or layout"):
        run(lambda: fn.reshape(source([A, B])))


def test_reshape_shape_as_the_second_input():
    # DALI's reshape takes the shape as an optional second input (ops.Reshape(layout=...)(x, s))
    shapes = [np.int32([2, 10]), np.int32([-1, 3])]
    (a, b) = run(lambda: (sluice.ops.Reshape(layout="ab")(source([A, B]), source(shapes)),
                          fn.reshape(source([A, B]), source(shapes))))
    assert a.layout() == "ab" and b.layout() == ""
    for out in (a, b):
        np.testing.assert_array_equal(out.at(0), A.reshape(2, 10))
        np.testing.assert_array_equal(out.at(1), B.reshape(-1, 3))
    with pytest.raises(Exception, match="give the shape as the second input or as shape"):
        run(lambda: fn.reshape(source([A, B]), source(shapes), shape=[20]))


def test_reshape_src_dims_with_rel_shape_and_to_a_scalar():
    x = np.arange(20 * 30 * 10, dtype=np.int16).reshape(20, 30, 10)
    (a, s) = run(lambda: (fn.reshape(source([x, x]), src_dims=[2, 0, 1], rel_shape=[0.5, 0.5, -1]),
                          fn.reshape(source([np.int16([[7]])] * 2), src_dims=[])))
    np.testing.assert_array_equal(a.at(0), x.reshape(5, 10, 120))  # extents (10, 20, 30) scaled
    assert s.at(1).shape == () and int(s.at(1)) == 7
    with pytest.raises(Exception, match="``src_dims`` and ``rel_shape`` have different lengths: "
                                        "3 vs 2"):
        run(lambda: fn.reshape(source([x, x]), src_dims=[2, 0, 1], rel_shape=[1, -1]))
    # rel_shape per sample (an op output, as DALI's fn.constant) with src_dims
    (b,) = run(lambda: fn.reshape(source([x, x]), src_dims=[2, 0, 1],
                                  rel_shape=types.Constant(np.float32([0.5, 0.5, -1]))))
    np.testing.assert_array_equal(b.at(1), x.reshape(5, 10, 120))


def test_reshape_errors_end_in_dalis_sentences():
    with pytest.raises(Exception, match=r"The volume of the new shape should match the one of the "
                                        r"original shape\. Requested a shape with 21 elements but "
                                        r"the original shape has 20 elements\."):
        run(lambda: fn.reshape(source([A, A]), shape=[3, 7]))
    with pytest.raises(Exception, match="is out of bounds"):
        run(lambda: fn.reshape(source([A, A]), src_dims=[0, 1, 3]))
    with pytest.raises(Exception, match="Cannot infer the size of dimension 0 when the volume of "
                                        "the other dimensions is 0. Input shape: 3 x 0"):
        run(lambda: fn.reshape(source([np.zeros((3, 0), np.uint8)] * 2), rel_shape=[-1, 1]))


def test_squeeze_as_dali():
    # a dim of any extent goes when the sample has no elements either way; DALI's sentences end
    # the errors
    (a,) = run(lambda: fn.squeeze(source([np.zeros((100, 0, 0), np.uint8)] * 2, layout="XYZ"),
                                  axes=[1]))
    assert a.at(0).shape == (100, 0) and a.layout() == "XZ"
    with pytest.raises(Exception, match="Requested a shape with 100 elements but the original "
                                        "shape has 1000 elements."):
        run(lambda: fn.squeeze(source([np.zeros((10, 10, 10), np.uint8)] * 2), axes=[1]))
    with pytest.raises(Exception, match="Specified at least twice same dimension to remove."):
        run(lambda: fn.squeeze(source([np.zeros((3, 1), np.uint8)] * 2), axes=[1, 1]))
    with pytest.raises(Exception, match="Provided both ``axes`` and ``axis_names`` arguments"):
        run(lambda: fn.squeeze(source([np.zeros((3, 1), np.uint8)] * 2, layout="AB"), axes=[1],
                               axis_names="B"))
    with pytest.raises(Exception, match="Axis 'C' is not present in the input layout"):
        run(lambda: fn.squeeze(source([np.zeros((3, 1), np.uint8)] * 2, layout="AB"),
                               axis_names="C"))


def test_reshape_to_a_scalar():
    (u, c) = run(lambda: (fn.reshape(fn.random.uniform(range=(0, 1)), shape=[]),
                          fn.reshape(source([np.float32([[2.5]]), np.float32([[7]])]), shape=[])))
    assert u.at(0).shape == () and 0 <= float(u.at(0)) < 1
    assert c.at(0).shape == () and float(c.at(0)) == 2.5 and float(c.at(1)) == 7


def test_reshape_to_a_scalar_needs_one_element():
    with pytest.raises(Exception, match="input has 2 elements, the requested shape 1"):
        run(lambda: fn.reshape(source([np.float32([1, 2])] * 2), shape=[]))


@pytest.mark.parametrize("form", ["constant", "constant_list", "per_sample"])
def test_reshape_shape_as_a_tensor_argument(form):
    x = [A, A + 1]
    shape = {"constant": lambda: types.Constant(np.int32([20])),
             "constant_list": lambda: types.Constant([2, 10]),
             "per_sample": lambda: source([np.int64([5, 4]), np.int64([-1, 2])])}[form]
    (out,) = run(lambda: fn.reshape(source(x), shape=shape()))
    want = {"constant": [a.reshape(20) for a in x],
            "constant_list": [a.reshape(2, 10) for a in x],
            "per_sample": [x[0].reshape(5, 4), x[1].reshape(-1, 2)]}[form]
    for i in range(2):
        np.testing.assert_array_equal(out.at(i), want[i])


def test_reshape_rel_shape_per_sample():
    (out,) = run(lambda: fn.reshape(source([A, B]),
                                    rel_shape=source([np.float32([0.5, 2]), np.float32([2, 0.5])])))
    np.testing.assert_array_equal(out.at(0), A.reshape(2, 10))
    np.testing.assert_array_equal(out.at(1), B.reshape(6, 3))


def test_reshape_per_sample_shapes_of_two_ranks_are_refused():
    with pytest.raises(Exception, match="shape has 1 values, sample 0's 2"):
        run(lambda: fn.reshape(source([A, A]), shape=source([np.int32([4, 5]), np.int32([20])])))


def test_reshape_per_sample_shape_of_wrong_volume_names_the_sample():
    with pytest.raises(Exception, match="sample 1: input has 20 elements, the requested shape 21"):
        run(lambda: fn.reshape(source([A, A]), shape=source([np.int32([4, 5]), np.int32([3, 7])])))


def test_reshape_non_integral_per_sample_shape_is_refused():
    with pytest.raises(Exception, match="argument shape: value 0 is 2.5, not a whole number"):
        run(lambda: fn.reshape(source([A, A]), shape=source([np.float32([2.5, 8])] * 2)))


# ---- pad -------------------------------------------------------------------------------------

def np_pad(x, axes, shape=None, align=None, most=None):
    """numpy's rule of DALI's pad for one sample: to shape (or the batch's largest) on axes."""
    want = list(x.shape)
    for k, d in enumerate(axes):
        e = max(x.shape[d], shape[k] if shape is not None and shape[k] > 0 else most[d])
        al = 1 if align is None else align[k if len(align) > 1 else 0]
        want[d] = (e + al - 1) // al * al
    return np.pad(x, [(0, w - s) for w, s in zip(want, x.shape)])


def test_pad_shape_and_align_as_constants():
    (s, a) = run(lambda: (
        fn.pad(source([A, B]), axes=(0, 1), shape=types.Constant(np.int32([6, 7]))),
        fn.pad(source([A, B]), axes=(0, 1), align=types.Constant(np.int32([4, 4])))))
    most = (4, 6)
    for i, x in enumerate((A, B)):
        np.testing.assert_array_equal(s.at(i), np_pad(x, (0, 1), shape=(6, 7), most=most))
        np.testing.assert_array_equal(a.at(i), np_pad(x, (0, 1), align=(4, 4), most=most))


def test_pad_axes_as_a_constant():
    (out,) = run(lambda: fn.pad(source([A, B]), axes=types.Constant(np.int32([0]))))
    for i, x in enumerate((A, B)):
        np.testing.assert_array_equal(out.at(i), np_pad(x, (0,), most=(4, 6)))


def test_pad_axes_shape_align_per_sample():
    (out,) = run(lambda: fn.pad(
        source([A, B]), fill_value=-1,
        axes=source([np.int32([1]), np.int32([0, 1])]),
        shape=source([np.int32([9]), np.int32([5, -1])]),
        align=source([np.int32([1]), np.int32([2])])))
    assert out.at(0).shape == (4, 9) and out.at(1).shape == (6, 6)
    want1 = np.full((6, 6), -1, np.float32)
    want1[:3, :6] = B
    np.testing.assert_array_equal(out.at(1), want1)
    np.testing.assert_array_equal(out.at(0)[:, :5], A)
    assert (out.at(0)[:, 5:] == -1).all()


def test_pad_per_sample_shape_for_other_axes_count_names_the_sample():
    with pytest.raises(Exception, match="sample 1: shape has 1 values for 2 padded axes"):
        run(lambda: fn.pad(source([A, B]), axes=(0, 1),
                           shape=source([np.int32([5, 5]), np.int32([5])])))


def test_pad_tensor_arguments_are_per_sample_in_the_table():
    for name in ("axes", "shape", "align"):
        assert fn.schemas["pad"].args[name].per_sample
    for name in ("shape", "rel_shape"):
        assert fn.schemas["reshape"].args[name].per_sample
    text = run_tool("ops", "pad")
    for name in ("axes", "shape", "align"):
        line = [ln for ln in text.splitlines() if ln.split()[:1] == [name]]
        assert line and line[0].endswith(", per-sample"), text


# ---- normalize -------------------------------------------------------------------------------

def test_normalize_mean_and_stddev_tensors_of_the_reduced_shape():
    x = [RNG.random((4, 5), dtype=np.float32) * 10, RNG.random((4, 7), dtype=np.float32) * 10]

    def define():
        d = source(x)
        m = fn.reductions.mean(d, axes=[1], keep_dims=True)
        s = fn.reductions.std_dev(d, m, axes=[1], keep_dims=True)
        return fn.normalize(d, axes=[1], mean=m, stddev=s), fn.normalize(d, axes=[1], mean=m)
    (both, mean_only) = run(define)
    for i, a in enumerate(x):
        m = a.mean(axis=1, keepdims=True)
        s = a.std(axis=1, keepdims=True)
        np.testing.assert_allclose(both.at(i), (a - m) / s, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(mean_only.at(i), (a - m) / np.sqrt(((a - m) ** 2).mean(1, keepdims=True)),
                                   rtol=1e-4, atol=1e-4)


def test_normalize_tensor_mean_broadcasts_an_extent_of_one():
    x = [RNG.random((3, 4, 2), dtype=np.float32) for _ in range(2)]
    mean = [np.float32([[[0.5, 1.0]]]), np.float32([[[2.0, -1.0]]])]  # (1, 1, 2): the kept axis 2
    (out,) = run(lambda: fn.normalize(source(x), axes=[0, 1], mean=source(mean), stddev=2.0))
    for i in range(2):
        np.testing.assert_allclose(out.at(i), (x[i] - mean[i]) / 2.0, rtol=1e-6)


def test_normalize_tensor_mean_of_another_shape_is_refused():
    with pytest.raises(Exception, match=r"sample 0: mean has shape \(5, 1\); it must be one value "
                                        r"or of shape \(4, 1\)"):
        run(lambda: fn.normalize(source([A, A]), axes=[1],
                                 mean=source([np.zeros((5, 1), np.float32)] * 2)))


# ---- paste -----------------------------------------------------------------------------------

def test_paste_one_fill_value_for_every_channel():
    img = [RNG.integers(0, 255, (4, 6, 3), dtype=np.uint8)] * 2
    (one, three) = run(lambda: (fn.paste(source(img, layout="HWC"), ratio=2, fill_value=7),
                                fn.paste(source(img, layout="HWC"), ratio=2, fill_value=(7, 7, 7))))
    for i in range(2):
        assert one.at(i).shape == (8, 12, 3)
        np.testing.assert_array_equal(one.at(i), three.at(i))
        assert (one.at(i)[0, 0] == 7).all()


# ---- the same forms in pipeline text ---------------------------------------------------------

def test_tensor_arguments_in_pipeline_text(tmp_path):
    text = tmp_path / "p.py"
    text.write_text(
        "import nvidia.dali.fn as fn\n"
        "import nvidia.dali.types as types\n"
        "def pipe(path):\n"
        "    jpegs, labels = fn.readers.caffe2(path=path)\n"
        "    images = fn.decoders.image(jpegs, output_type=types.GRAY)\n"
        "    padded = fn.pad(images, axes=(0, 1), shape=fn.constant(idata=[30, 31]))\n"
        "    flat = fn.reshape(images, shape=fn.constant(idata=[-1]), layout='X')\n"
        "    return padded, flat, fn.reshape(images, layout='ABC')\n")
    from conftest import LMDB
    dump = tmp_path / "dump"
    run_tool("run", str(text), "--arg", "path=%s" % LMDB, "--devices", "cpu",
             "--batch-size", "2", "--steps", "1", "--dump", str(dump))
    shapes = sorted({np.load(f).shape for f in dump.rglob("*.npy")})
    assert shapes == sorted({(2, 28, 28, 1), (2, 30, 31, 1), (2, 784)}), shapes


def test_pad_negative_axes_and_per_sample_fill_value():
    (out,) = run(lambda: fn.pad(source([A, B]), axes=source([np.int32([-1]), np.int32([-2, 1])]),
                                fill_value=source([np.float32(5), np.float32(-3)])))
    want0 = np.full((4, 6), 5, np.float32)
    want0[:, :5] = A
    want1 = np.full((4, 6), -3, np.float32)
    want1[:3] = B
    np.testing.assert_array_equal(out.at(0), want0)
    np.testing.assert_array_equal(out.at(1), want1)


def test_pad_axis_out_of_range_names_the_sample():
    # DALI's sentence, which DALI's tests match
    with pytest.raises(Exception, match=r"pad: sample 0: axes: Axis -3 out of range. Expected "
                                        r"range is \[-2, 1\] for a 2D input"):
        run(lambda: fn.pad(source([A, B]), axes=source([np.int32([-3])] * 2)))


# ---- paths as os.PathLike --------------------------------------------------------------------

def test_path_arguments_take_os_pathlike(tmp_path):
    import pathlib
    for k in range(2):
        (tmp_path / ("f%d.bin" % k)).write_bytes(bytes([k + 1] * (k + 2)))
    (tmp_path / "list.txt").write_text("f0.bin 0\nf1.bin 1\n")
    (a, la) = run(lambda: fn.readers.file(file_root=tmp_path,
                                          file_list=pathlib.Path(tmp_path) / "list.txt"))
    (b, lb) = run(lambda: fn.readers.file(files=[tmp_path / "f0.bin", tmp_path / "f1.bin"]))
    for i in range(2):
        np.testing.assert_array_equal(a.at(i), np.full(i + 2, i + 1, np.uint8))
        np.testing.assert_array_equal(b.at(i), a.at(i))
    # another value where a string is taken is its str(), as DALI's Python layer makes it: the
    # folder "3", which is not there
    with pytest.raises(sluice.errors.NotFoundError, match="readers.file: 3: No such file"):
        run(lambda: fn.readers.file(file_root=3))
