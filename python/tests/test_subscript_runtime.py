# SPDX-License-Identifier: Apache-2.0
"""Subscripts whose indices, slice starts, stops and steps are op outputs, one integer per sample
(DALI's runtime indexing: `x[lo:, :hi]`, `x[::step]`, `table[idx]`), several in one subscript
and mixed with constants, in Python, in DALI's own spelling (fn.tensor_subscript with at_0,
lo_1, ...) and in pipeline text: each sample against numpy's indexing of the same data with the
same integers; what is wrong fails the batch naming the op, the dim and the sample."""

import numpy as np
import pytest

import sluice
import sluice.fn as fn
from conftest import gpu_or_skip, run_tool

RNG = np.random.default_rng(11)
B = 6
# samples of different extents: (rows, cols, 2)
DATA = [RNG.integers(0, 1000, (r, c, 2), dtype=np.int32)
        for r, c in [(5, 7), (3, 4), (6, 2), (1, 5), (4, 4), (7, 3)]]
# per-sample integers, each list of a different dtype; out-of-range bounds and empty results too
LO = np.array([1, -2, 0, 3, -100, 50], np.int64)
HI = np.array([4, -1, 100, 0, 2, -50], np.int16)
STEP = np.array([1, 2, -1, -2, 3, -5], np.int32)
IDX = np.array([4, -1, 0, 0, 3, -7], np.int8)    # within each sample's first dim
IDX1 = np.array([6, 3, -2, 4, 0, 2], np.int16)  # within each sample's second dim


def ints(values):
    """An op output giving sample i the integer values[i] (a 0-d array of values' dtype)."""
    return fn.external_source(source=[np.array(v) for v in values], batch=False, cycle=True)


def run(outputs, device_id=None, batch=B):
    p = sluice.Pipeline(batch_size=batch, num_threads=2, device_id=device_id)
    with p:
        p.set_outputs(*outputs())
    return p.run()


SUBSCRIPTS = [  # (the subscript on nodes, the same on numpy for sample i)
    (lambda x, n: x[n["lo"]:], lambda x, i: x[LO[i]:]),
    (lambda x, n: x[:, :n["hi"]], lambda x, i: x[:, :HI[i]]),
    (lambda x, n: x[::n["step"]], lambda x, i: x[::STEP[i]]),
    (lambda x, n: x[:, ::n["step"]], lambda x, i: x[:, ::STEP[i]]),
    (lambda x, n: x[n["lo"]:n["hi"]:n["step"]], lambda x, i: x[LO[i]:HI[i]:STEP[i]]),
    (lambda x, n: x[n["lo"]:, 1:n["hi"], ::-1], lambda x, i: x[LO[i]:, 1:HI[i], ::-1]),
    (lambda x, n: x[n["idx"]], lambda x, i: x[IDX[i]]),
    (lambda x, n: x[n["idx"], n["lo"]:], lambda x, i: x[IDX[i], LO[i]:]),
    (lambda x, n: x[n["idx"], n["idx1"], 1], lambda x, i: x[IDX[i], IDX1[i], 1]),
    (lambda x, n: x[-1:n["lo"]:n["step"], n["idx1"]], lambda x, i: x[-1:LO[i]:STEP[i], IDX1[i]]),
    (lambda x, n: x[..., n["lo"] % 2:], lambda x, i: x[..., LO[i] % 2:]),
    (lambda x, n: x[None, n["idx"], ..., ::n["step"]], lambda x, i: x[None, IDX[i], ..., ::STEP[i]]),
]


def nodes():
    return {"lo": ints(LO), "hi": ints(HI), "step": ints(STEP), "idx": ints(IDX),
            "idx1": ints(IDX1)}


def test_op_outputs_as_indices_bounds_and_steps_match_numpy():
    def outputs():
        x, n = fn.external_source(source=lambda: DATA, layout="HWC"), nodes()
        return [sub(x, n) for sub, _ in SUBSCRIPTS]
    outs = run(outputs)
    for k, (_, ref) in enumerate(SUBSCRIPTS):
        for i in range(B):
            want = ref(DATA[i], i)
            got = outs[k].at(i)
            assert got.shape == want.shape, (k, i, got.shape, want.shape)
            np.testing.assert_array_equal(got, want, err_msg="subscript %d, sample %d" % (k, i))
    # some results are empty (5:0 of 3 rows, -50 as a stop), some bounds clamped (-100, 100, 50)
    assert outs[0].at(5).shape[0] == 0 and outs[1].at(3).shape[1] == 0
    assert outs[4].layout() == "HWC" and outs[6].layout() == "WC" and outs[8].layout() == ""


def test_bounds_computed_from_the_samples_own_shape():
    """DALI's tutorial form: an element at a random position and halves of each sample, with
    the index and bounds computed from x.shape() in the pipeline"""
    def outputs():
        x = fn.external_source(source=lambda: DATA)
        length = x.shape()[0]
        at = fn.cast(fn.math.floor(fn.random.uniform(range=(0, 1)) * length),
                     dtype=sluice.types.INT64)
        half = length // 2
        return x[at], x[half:], x[:half, ::-1], x[half - 1::-1, half:], at
    outs = run(outputs)
    for i, x in enumerate(DATA):
        at, half = int(outs[4].at(i)), len(x) // 2
        assert 0 <= at < len(x)
        for k, want in enumerate([x[at], x[half:], x[:half, ::-1], x[half - 1::-1, half:]]):
            np.testing.assert_array_equal(outs[k].at(i), want, err_msg="output %d" % k)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32", "uint32",
                                   "int64", "uint64"])
def test_any_integer_type_is_an_index(dtype):
    at = np.array([2, 0, 1, 0, 3, 6], dtype)
    outs = run(lambda: [fn.external_source(source=lambda: DATA)[ints(at), 1::ints(at + 1)]])
    for i in range(B):
        np.testing.assert_array_equal(outs[0].at(i), DATA[i][int(at[i]), 1::int(at[i]) + 1])


def test_dalis_own_arguments_match_numpy():
    """fn.tensor_subscript as DALI spells it: entry d's at_d, or lo_d, hi_d, step_d, each a
    constant or an op output."""
    def outputs():
        x, n = fn.external_source(source=lambda: DATA), nodes()
        return [fn.tensor_subscript(x, lo_0=n["lo"], hi_1=-1),
                fn.tensor_subscript(x, at_0=n["idx"], step_1=n["step"], at_2=0),
                fn.tensor_subscript(x, hi_0=2, step_0=-1),
                fn.tensor_subscript(x, at_1=1)]
    outs = run(outputs)
    for i, x in enumerate(DATA):
        for k, want in enumerate([x[LO[i]:, :-1], x[IDX[i], ::STEP[i], 0], x[:2:-1], x[:, 1]]):
            np.testing.assert_array_equal(outs[k].at(i), want, err_msg="output %d" % k)


@pytest.mark.parametrize("args, message", [
    ({"lo_0": 0, "at_0": 0}, "both as an index"),
    ({"at_1": 1, "step_1": 1}, "cannot have a step"),
    ({"mode": [4], "lo": [0], "hi": [0], "step": [1], "hi_0": 2}, "both as an index"),
    ({"mode": [3], "lo": [0], "hi": [0], "step": [1], "at_1": 0}, "but mode has 1 subscripts"),
])
def test_an_index_and_a_range_on_one_dim_are_refused(args, message):
    with pytest.raises(sluice.Error, match=message):
        run(lambda: [fn.tensor_subscript(fn.external_source(source=lambda: DATA), **args)])


def test_a_per_sample_index_out_of_range_names_the_sample():
    idx = [0, 1, 5, 0, 0, 0]  # sample 2 has 6 rows: 5 is in range
    run(lambda: [fn.external_source(source=lambda: DATA)[ints(idx), ::ints(STEP)]])
    idx[3] = -2  # sample 3 has one row
    with pytest.raises(sluice.Error,
                       match="tensor_subscript: sample 3: index -2 of dim 0 is out of range"):
        run(lambda: [fn.external_source(source=lambda: DATA)[ints(idx), ::ints(STEP)]])
    col = np.uint16([0, 4, 0, 0, 0, 0])  # sample 1 has 4 columns
    with pytest.raises(sluice.Error, match="sample 1: index 4 of dim 1 is out of range"):
        run(lambda: [fn.external_source(source=lambda: DATA)[ints(idx) * 0, ints(col)]])


def test_a_step_of_zero_fails_the_batch():
    step = [1, -1, 0, 2, 1, 1]
    with pytest.raises(sluice.Error,
                       match="tensor_subscript: sample 2: dim 1: Step cannot be zero"):
        run(lambda: [fn.external_source(source=lambda: DATA)[1:, ::ints(step)]])
    # a constant 0, as DALI, when the pipeline runs (not when it is defined)
    p = sluice.Pipeline(batch_size=B, num_threads=1, device_id=None)
    with p:
        p.set_outputs(fn.external_source(source=lambda: DATA)[::0])
    with pytest.raises(sluice.Error, match="Step cannot be zero"):
        p.run()


def test_per_sample_values_must_be_one_integer():
    with pytest.raises(sluice.Error, match="sample 0: dim 0: lo_0 is float32: an array index "
                                           "must be of an integer type"):
        run(lambda: [fn.external_source(source=lambda: DATA)[ints(np.float32(LO)):]])
    two = fn.external_source(source=lambda: [np.array([1, 2])] * B)
    with pytest.raises(sluice.Error, match="sample 0: dim 1: at_1 must be one integer per "
                                           "sample \\(this sample has 2\\)"):
        run(lambda: [fn.external_source(source=lambda: DATA)[:, two]])


def test_too_many_subscripts_say_dalis_words():
    with pytest.raises(sluice.Error, match="Too many indices \\(the input has not enough "
                                           "dimensions\\)"):
        run(lambda: [fn.external_source(source=lambda: DATA)[1, :, 0, ints(IDX)]])


@pytest.mark.gpu
def test_on_the_gpu_as_on_the_cpu():
    gpu_or_skip()

    def outputs(dev):
        x, n = fn.external_source(source=lambda: DATA, layout="HWC"), nodes()
        x = x.gpu() if dev == "gpu" else x
        return [sub(x, n) for sub, _ in SUBSCRIPTS]
    gpu = run(lambda: outputs("gpu"), device_id=0)
    cpu = run(lambda: outputs("cpu"))
    for k, (_, ref) in enumerate(SUBSCRIPTS):
        assert gpu[k].layout() == cpu[k].layout()
        out = gpu[k].as_cpu()
        for i in range(B):
            np.testing.assert_array_equal(np.array(out.at(i)), ref(DATA[i], i),
                                          err_msg="subscript %d, sample %d" % (k, i))


def test_pipeline_text_takes_op_outputs_as_bounds(tmp_path):
    files = {}
    for name, values in [("x", DATA), ("lo", LO), ("hi", HI), ("step", STEP), ("idx", IDX)]:
        files[name] = []
        for i, v in enumerate(values):
            f = tmp_path / ("%s%d.npy" % (name, i))
            np.save(f, np.asarray(v))
            files[name].append(str(f))
    text = tmp_path / "p.py"
    text.write_text("import nvidia.dali.fn as fn\n"
                    "def p(x, lo, hi, step, idx):\n"
                    "    x = fn.readers.numpy(files=x)\n"
                    "    lo, hi = fn.readers.numpy(files=lo), fn.readers.numpy(files=hi)\n"
                    "    step, idx = fn.readers.numpy(files=step), fn.readers.numpy(files=idx)\n"
                    "    return x[lo:hi:step], x[idx, :hi, 1], x[..., ::step][lo:]\n")
    dump = tmp_path / "dump"
    args = []
    for name, f in files.items():
        args += ["--arg", "%s=%s" % (name, f)]
    run_tool("run", str(text), *args, "--devices", "cpu", "--batch-size", str(B), "--steps", "1",
             "--dump", str(dump))
    for k, ref in enumerate([lambda x, i: x[LO[i]:HI[i]:STEP[i]],
                             lambda x, i: x[IDX[i], :HI[i], 1],
                             lambda x, i: x[..., ::STEP[i]][LO[i]:]]):
        got = sorted(dump.glob("out%d_*.npy" % k))
        got = list(np.load(got[0])) if len(got) == 1 else [np.load(f) for f in got]
        for i in range(B):
            np.testing.assert_array_equal(got[i], ref(DATA[i], i), err_msg="output %d" % k)
