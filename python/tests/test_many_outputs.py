# SPDX-License-Identifier: Apache-2.0
"""Programs of many outputs and inputs, and of empty tensors, in the forms DALI's test_join and
test_expand_dims write them: fn.external_source(num_outputs=100), fn.cat / fn.stack of its 100
outputs, a pipeline returning 102 outputs, an iterator over 30 named outputs, each compared with
numpy; types.Constant of a (3, 0) array joined with others (and its 64-bit arrays taken as 32-bit,
as DALI's); expand_dims's errors carrying DALI's sentences."""

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.types as types
from sluice import pipeline_def
from sluice.pipeline import Pipeline

N = 100


def batches(batch_size, iterations, seed):
    """iterations batches of N inputs, batch_size float32 samples each: (2, w, 3) with w varying
    per sample (the same for all inputs of a sample)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(iterations):
        widths = rng.integers(1, 5, size=batch_size)
        out.append([[rng.random((2, int(w), 3), dtype=np.float32) for w in widths]
                    for _ in range(N)])
    return out


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cat_and_stack_of_100_inputs(axis):
    data = batches(batch_size=3, iterations=2, seed=5 + axis)
    it = iter(data)

    @pipeline_def(batch_size=3, num_threads=2, device_id=None)
    def pipe():
        inputs = fn.external_source(source=lambda: next(it), num_outputs=N, layout="ABC")
        return (fn.cat(*inputs, axis=axis), fn.stack(*inputs, axis=axis, axis_name="N"),
                *inputs)

    p = pipe()
    p.build()
    for b in data:
        out = p.run()
        assert len(out) == N + 2
        joined, stacked, singles = out[0], out[1], out[2:]
        for i in range(3):
            inputs = [b[j][i] for j in range(N)]
            np.testing.assert_array_equal(joined.at(i), np.concatenate(inputs, axis=axis))
            np.testing.assert_array_equal(stacked.at(i), np.stack(inputs, axis=axis))
            for j in range(N):
                np.testing.assert_array_equal(singles[j].at(i), inputs[j])
        assert joined.layout() == "ABC"
        want = "ABC"[:axis % 4] + "N" + "ABC"[axis % 4:] if axis >= 0 else "ABCN"
        assert stacked.layout() == want


def test_pipeline_of_102_outputs_with_set_outputs():
    data = batches(batch_size=2, iterations=1, seed=11)[0]
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        inputs = fn.external_source(source=lambda: data, num_outputs=N)
        sums = fn.cat(*inputs, axis=2)
        pipe.set_outputs(*inputs, sums, inputs[0] + inputs[N - 1])
    out = pipe.run()
    assert len(out) == N + 2
    for i in range(2):
        for j in range(N):
            np.testing.assert_array_equal(out[j].at(i), data[j][i])
        np.testing.assert_array_equal(out[N].at(i),
                                      np.concatenate([data[j][i] for j in range(N)], axis=2))
        np.testing.assert_array_equal(out[N + 1].at(i), data[0][i] + data[N - 1][i])


def test_iterator_over_30_named_outputs():
    pytest.importorskip("torch")
    from sluice.plugin.pytorch import DALIGenericIterator

    k = 30

    @pipeline_def(batch_size=4, num_threads=1, device_id=None)
    def pipe():
        idx = fn.external_source(source=lambda info: np.array([info.idx_in_epoch], np.int64),
                                 batch=False)
        return tuple(idx * (j + 1) for j in range(k))

    names = ["out%02d" % j for j in range(k)]
    it = DALIGenericIterator([pipe()], names, size=8)
    seen = 0
    for b in it:
        d = b[0]
        assert list(d) == names
        base = d["out00"].numpy().reshape(-1)
        for j in range(k):
            np.testing.assert_array_equal(d[names[j]].numpy().reshape(-1), base * (j + 1))
        seen += len(base)
    assert seen == 8


def test_element_extract_of_12_frames():
    frames = [np.arange(12 * 2, dtype=np.int16).reshape(12, 2) + 100 * i for i in range(2)]
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        seq = fn.external_source(source=lambda: frames, layout="FC")
        pipe.set_outputs(*fn.element_extract(seq, element_map=list(range(11, -1, -1))))
    out = pipe.run()
    assert len(out) == 12
    for k in range(12):
        for i in range(2):
            np.testing.assert_array_equal(out[k].at(i), frames[i][11 - k])


def test_cat_empty_input():
    pipe = Pipeline(batch_size=2, num_threads=3, device_id=None)
    with pipe:
        a = types.Constant(np.array([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]))
        e = types.Constant(np.array([[], [], []], dtype=np.int32))
        c = types.Constant(np.array([[13, 14, 15], [16, 17, 18], [19, 20, 21]]))
        pipe.set_outputs(fn.cat(a, e, c, axis=1), fn.cat(a.gpu(), e.gpu(), c.gpu(), axis=1), e)
    for _ in range(2):
        cpu, gpu, empty = pipe.run()
        want = np.concatenate([np.arange(1, 13).reshape(3, 4),
                               np.arange(13, 22).reshape(3, 3)], axis=1)
        for i in range(2):
            np.testing.assert_array_equal(cpu.at(i), want)
            np.testing.assert_array_equal(gpu.as_cpu().at(i), want)
            assert cpu.at(i).dtype == np.int32  # a 64-bit array is taken as int32, as DALI does
            assert empty.at(i).shape == (3, 0) and empty.at(i).dtype == np.int32


def test_cat_and_stack_all_empty():
    pipe = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        e = types.Constant(np.array([[], [], []], dtype=np.int32))
        f = types.Constant(np.zeros((0, 2), dtype=np.float32))
        pipe.set_outputs(fn.cat(e, e, e, axis=1), fn.cat(e.gpu(), e.gpu(), axis=0),
                         fn.stack(f, f, f, axis=1), fn.cat(f, f), types.Constant(np.zeros(0)))
    cat1, cat0, stacked, fcat, flat = pipe.run()
    np.testing.assert_array_equal(cat1.at(0), np.zeros((3, 0), np.int32))
    assert cat0.as_cpu().at(0).shape == (6, 0)
    assert stacked.at(0).shape == (0, 3, 2) and stacked.at(0).dtype == np.float32
    assert fcat.at(0).shape == (0, 2)
    assert flat.at(0).shape == (0,) and flat.at(0).dtype == np.float32


def test_constant_64_bit_arrays_as_dali_takes_them():
    pipe = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        pipe.set_outputs(types.Constant(np.array([1, 2], np.int64)),
                         types.Constant(np.array([1.5], np.float64)),
                         types.Constant(np.array([3], np.uint64)),
                         types.Constant(np.array([1, 2], np.int64), dtype=types.INT64))
    i, f, u, i64 = (x.at(0) for x in pipe.run())
    assert (i.dtype, f.dtype, u.dtype, i64.dtype) == (np.int32, np.float32, np.uint32, np.int64)
    np.testing.assert_array_equal(i, [1, 2])
    np.testing.assert_array_equal(f, [1.5])


@pipeline_def
def expand_dims_pipe(shapes, axes=None, new_axis_names=None, layout=None):
    data = fn.external_source(lambda: [np.zeros(s, dtype=np.uint8) for s in shapes],
                              layout=layout, batch=True)
    return fn.expand_dims(data, axes=axes, new_axis_names=new_axis_names)


@pytest.mark.parametrize("axes, names, layout, sentence", [
    ([4], None, None, r"Data has not enough dimensions to add new axes at specified indices."),
    ([0, -1], None, None, r"Axis value can't be negative"),
    ([2, 0, 2], "AB", "XYZ",
     r"Specified [\d]+ new dimensions, but layout contains only [\d]+ new dimension names"),
    ([2], "C", None, r"Specifying ``new_axis_names`` requires an input with a proper layout."),
])
def test_expand_dims_errors_carry_dalis_sentences(axes, names, layout, sentence):
    pipe = expand_dims_pipe(batch_size=1, num_threads=1, device_id=None, shapes=[(10, 20, 30)],
                            axes=axes, new_axis_names=names, layout=layout)
    with pytest.raises(RuntimeError, match=sentence) as e:
        pipe.run()
    assert str(e.value).startswith("expand_dims: ")  # the op first, as every sluice message
    assert isinstance(e.value, sluice.Error)


def test_absurd_num_outputs_is_refused_at_the_call():
    pipe = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pytest.raises(sluice.InvalidArgumentError,
                       match=r"external_source: num_outputs: 1000000000 outputs \(0\.\.\d+\)"):
        with pipe:
            fn.external_source(source=lambda: [np.zeros(1)], num_outputs=10**9)
