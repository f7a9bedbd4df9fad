# SPDX-License-Identifier: Apache-2.0
"""Interpolation types chosen per sample, as DALI takes them: resize's and random_resized_crop's
interp_type, min_filter and mag_filter may be an op output of DALIInterpType values
(fn.random.choice over types.INTERP_*, whose output has dtype types.INTERP_TYPE). Each sample must
come out bit for bit as the same pipeline with that sample's filter given as a literal; a value
that is no interpolation type is an error naming the op, the argument and the sample."""

import numpy as np
import pytest

import sluice.fn as fn
import sluice.types as types
from sluice.pipeline import Pipeline
from conftest import gpu_or_skip, run_tool

B = 12
CHOICES = [types.INTERP_NN, types.INTERP_LINEAR, types.INTERP_CUBIC]


def images():
    rng = np.random.default_rng(11)
    return [rng.integers(0, 256, (20 + 3 * i, 31 - i, 3)).astype(np.uint8) for i in range(B)]


def run_pipe(build, device="cpu", seed=77):
    p = Pipeline(batch_size=B, num_threads=2, device_id=None if device == "cpu" else 0,
                 seed=seed)
    with p:
        x = fn.external_source(source=lambda: images(), layout="HWC")
        if device == "gpu":
            x = x.gpu()
        p.set_outputs(*build(x))
    return [o.as_cpu() if hasattr(o, "as_cpu") else o for o in p.run()]


def arrays(out):
    return [np.array(out.at(i)) for i in range(B)]


def check_per_sample(op, fixed_kw, device="cpu"):
    """op(x, interp) with interp drawn per sample, against op(x, literal) for each literal"""
    def per_sample(x):
        interp = fn.random.choice(CHOICES, seed=5)
        return op(x, interp), interp, fn.cast(interp, dtype=types.INT32)

    got, interp, codes = run_pipe(per_sample, device)
    assert interp.dtype == types.DALIDataType.INTERP_TYPE
    drawn = [int(np.array(codes.at(i))) for i in range(B)]
    assert set(drawn) == {int(c) for c in CHOICES}, drawn  # (seed 5 draws each of them)
    got = arrays(got)
    for c in CHOICES:
        (want,) = run_pipe(lambda x: [op(x, c)], device)
        want = arrays(want)
        for i in range(B):
            if drawn[i] == int(c):
                assert got[i].shape == want[i].shape
                assert np.array_equal(got[i], want[i]), (fixed_kw, c, i)
    # and the filters really differ on these images (else the test shows nothing)
    (nn,) = run_pipe(lambda x: [op(x, types.INTERP_NN)], device)
    (cub,) = run_pipe(lambda x: [op(x, types.INTERP_CUBIC)], device)
    assert any(not np.array_equal(a, b) for a, b in zip(arrays(nn), arrays(cub)))


@pytest.mark.parametrize("arg", ["interp_type", "min_filter", "mag_filter"])
def test_resize_filter_per_sample_matches_the_literal(arg):
    # 13 x 17: each image is shrunk along one axis at least and enlarged along the other
    check_per_sample(lambda x, f: fn.resize(x, size=[13, 37], **{arg: f}), arg)


def test_random_resized_crop_interp_per_sample_matches_the_literal():
    # the crop windows come from the op's own seed: the same in every run
    check_per_sample(lambda x, f: fn.random_resized_crop(x, size=[15, 18], interp_type=f,
                                                         seed=123), "rrc")


def test_resize_interp_per_sample_on_sequences():
    """a sequence's frames all take its sample's filter"""
    rng = np.random.default_rng(2)
    seqs = [rng.integers(0, 256, (3, 12, 14, 1)).astype(np.uint8) for _ in range(4)]

    def pipe(interp):
        p = Pipeline(batch_size=4, num_threads=1, device_id=None, seed=3)
        with p:
            x = fn.external_source(source=lambda: seqs, layout="FHWC")
            f = fn.random.choice(CHOICES, seed=9) if interp is None else interp
            p.set_outputs(fn.resize(x, size=[7, 25], interp_type=f),
                          fn.cast(fn.random.choice(CHOICES, seed=9), dtype=types.INT32))
        return p.run()

    got, codes = pipe(None)
    for i in range(4):
        (want, _) = pipe(types.DALIInterpType(int(np.array(codes.at(i)))))
        assert np.array_equal(np.array(got.at(i)), np.array(want.at(i)))


def test_dali_form_choice_of_a_vector_subscripted():
    """DALI's own form: a vector of draws, one of them per sample, and the draws as ints"""
    p = Pipeline(batch_size=4, num_threads=1, device_id=None, seed=1)
    with p:
        interp = fn.random.choice([types.INTERP_LINEAR, types.INTERP_CUBIC], shape=[100])
        img = fn.random.uniform(range=[0, 255], dtype=types.UINT8, shape=(40, 40, 3))
        p.set_outputs(interp, fn.cast(interp, dtype=types.INT32),
                      fn.resize(img, size=(10, 10), interp_type=interp[0]))
    interp, as_int, imgs = p.run()
    assert interp.dtype == types.DALIDataType.INTERP_TYPE
    for i in range(4):
        v = np.array(as_int.at(i))
        assert v.shape == (100,) and set(v.tolist()) == {1, 2}
        assert imgs.at(i).shape == (10, 10, 3)


def test_constant_of_interp_types():
    p = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with p:
        c = types.Constant([types.INTERP_CUBIC, types.INTERP_NN])
        p.set_outputs(c, fn.cast(c, dtype=types.INT32))
    c, ints = p.run()
    assert c.dtype == types.DALIDataType.INTERP_TYPE
    assert np.array(ints.at(1)).tolist() == [2, 0]


def test_an_int_that_is_no_interp_type_is_an_error_naming_op_argument_and_sample():
    p = Pipeline(batch_size=3, num_threads=1, device_id=None)
    with p:
        x = fn.external_source(source=lambda: images()[:3], layout="HWC")
        codes = fn.external_source(source=lambda: [np.int32(1), np.int32(2), np.int32(7)])
        p.set_outputs(fn.resize(x, size=[5, 5], interp_type=codes))
    with pytest.raises(Exception, match=r"resize: sample 2: argument interp_type: 7 is no "
                                        r"interpolation type"):
        p.run()


def test_an_int_code_is_taken_as_dali_s_code():
    """an integer tensor holding DALI's codes is read as the types they name"""
    def run(f):
        p = Pipeline(batch_size=2, num_threads=1, device_id=None)
        with p:
            x = fn.external_source(source=lambda: images()[:2], layout="HWC")
            if f is None:
                f = fn.external_source(source=lambda: [np.int32(0), np.int32(2)])
            p.set_outputs(fn.resize(x, size=[9, 40], interp_type=f))
        (o,) = p.run()
        return arrays_n(o, 2)

    got = run(None)
    assert np.array_equal(got[0], run(types.INTERP_NN)[0])
    assert np.array_equal(got[1], run(types.INTERP_CUBIC)[1])


def arrays_n(out, n):
    return [np.array(out.at(i)) for i in range(n)]


@pytest.mark.parametrize("value,message", [
    (np.float32(1.0), "the per-sample input is float32, not DALIInterpType"),
    (np.array([1, 2], np.int32), "the per-sample value must be one value, not 2"),
])
def test_bad_per_sample_filters(value, message):
    p = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with p:
        x = fn.external_source(source=lambda: images()[:1], layout="HWC")
        f = fn.external_source(source=lambda: [value])
        p.set_outputs(fn.resize(x, size=[5, 5], mag_filter=f))
    with pytest.raises(Exception, match="resize: sample 0: argument mag_filter: " + message):
        p.run()


def test_bad_constants_and_counts():
    with pytest.raises(Exception, match=r"constant: idata\[1\] = 9 is no interpolation type"):
        p = Pipeline(batch_size=1, num_threads=1, device_id=None)
        with p:
            p.set_outputs(fn.constant(idata=[1, 9], dtype=types.INTERP_TYPE))
        p.build()
    p = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with p:
        p.set_outputs(fn.random.choice(types.INTERP_CUBIC))
    with pytest.raises(Exception, match="Data type DALIInterpType is not supported for 0D "
                                        "inputs"):
        p.run()
    with pytest.raises(Exception, match="INTERP_TYPE is no type of numbers"):
        p = Pipeline(batch_size=1, num_threads=1, device_id=None)
        with p:
            p.set_outputs(fn.random.uniform(range=[0, 1], dtype=types.INTERP_TYPE))
        p.build()


TEXT = """\
import nvidia.dali.fn as fn
import nvidia.dali.types as types
def p(files):
    x = fn.readers.numpy(files=files)
    choices = fn.constant(idata=[types.INTERP_NN, types.INTERP_LINEAR, types.INTERP_CUBIC],
                          dtype=types.INTERP_TYPE)
    interp = fn.random.choice(choices, seed=5)
    return fn.resize(x, size=[13, 37], interp_type=interp), fn.cast(interp, dtype=types.INT32)
"""


def test_pipeline_text_takes_a_per_sample_interp_type(tmp_path):
    imgs = images()
    files = []
    for i, im in enumerate(imgs):
        np.save(tmp_path / ("i%02d.npy" % i), im)
        files.append(str(tmp_path / ("i%02d.npy" % i)))
    text = tmp_path / "p.py"
    text.write_text(TEXT)
    dump = tmp_path / "dump"
    run_tool("run", str(text), "--arg", "files=%s" % files, "--devices", "cpu", "--batch-size",
             str(B), "--steps", "1", "--dump", str(dump))
    outs = sorted(dump.glob("out0_*.npy"))
    got = list(np.load(outs[0])) if len(outs) == 1 else [np.load(f) for f in outs]
    codes = sorted(dump.glob("out1_*.npy"))
    codes = np.load(codes[0]).reshape(-1).tolist() if len(codes) == 1 else \
        [int(np.load(f)) for f in codes]
    assert len(set(codes)) > 1
    for c in CHOICES:
        (want,) = run_pipe(lambda x: [fn.resize(x, size=[13, 37], interp_type=c)])
        for i in range(B):
            if codes[i] == int(c):
                assert np.array_equal(got[i], np.array(want.at(i))), (c, i)


@pytest.mark.gpu
@pytest.mark.parametrize("arg", ["interp_type", "min_filter"])
def test_gpu_resize_filter_per_sample_matches_the_literal(arg):
    gpu_or_skip()
    check_per_sample(lambda x, f: fn.resize(x, size=[13, 37], **{arg: f}), arg, device="gpu")
