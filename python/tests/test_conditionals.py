# SPDX-License-Identifier: Apache-2.0
"""Conditionals on data, as DALI's (@pipeline_def(enable_conditionals=True)): `if`/`elif`/`else`
on per-sample predicates, nested, with variables assigned in branches and used after; `and`,
`or`, `not` and `x if c else y` on predicates; Python values left to Python. Checked against
numpy, and against the same pipeline without conditionals computing every branch on the whole
batch and selecting per sample; the ops of a branch see only its samples (a Python function
counts them), empty branches work, results do not depend on the thread count, and a checkpoint
resumes exactly. Misuses are errors naming the file and line of the `if`."""

import os

import numpy as np
import pytest

import sluice.fn as fn
import sluice.types as types
from conftest import LMDB
from sluice import errors, pipeline_def
from sluice.pipeline import do_not_convert

HERE = os.path.abspath(__file__)


def outputs(pipe, batch):
    out = pipe.run()
    out = out if isinstance(out, (list, tuple)) else [out]
    return [[np.array(o.at(i)) for i in range(batch)] for o in out]


def source(values, dtype=np.int32, shape=(1,)):
    return lambda: [np.full(shape, v, dtype=dtype) for v in values]


VALUES = [5, -3, 0, 12, 7, -8, 3, 9]


@pytest.mark.parametrize("threads", [1, 3])
def test_if_else_against_numpy(threads):
    @pipeline_def(batch_size=8, num_threads=threads, device_id=None, enable_conditionals=True)
    def pipe():
        x = fn.external_source(source=source(VALUES))
        if x > 4:
            y = x * 10
            z = fn.cast(x, dtype=types.FLOAT) / 2
        else:
            y = 100 - x
            z = fn.cast(x, dtype=types.FLOAT) * 0.25
        return x, y, z

    x, y, z = outputs(pipe(), 8)
    for i, v in enumerate(VALUES):
        assert y[i].tolist() == [v * 10 if v > 4 else 100 - v]
        assert z[i].dtype == np.float32
        assert z[i].tolist() == [np.float32(v) / 2 if v > 4 else np.float32(v) * 0.25]


def test_elif_nesting_and_variables_before_and_after():
    @pipeline_def(batch_size=8, num_threads=2, device_id=None, enable_conditionals=True)
    def pipe():
        x = fn.external_source(source=source(VALUES))
        y = x + 0  # assigned before, changed in some branches only
        w = x * 0
        if x < 0:
            y = -x
        elif x == 0:
            w = w + 1
        elif x < 8:
            if x % 2 == 1:
                y = y * 3
                w = w - 1
            else:
                y = y * 5
        else:
            y = y + 1000
        return y + w, w

    yw, w = outputs(pipe(), 8)

    def ref(v):
        y, w = v, 0
        if v < 0:
            y = -v
        elif v == 0:
            w += 1
        elif v < 8:
            if v % 2 == 1:
                y, w = y * 3, w - 1
            else:
                y *= 5
        else:
            y += 1000
        return y + w, w
    for i, v in enumerate(VALUES):
        assert (yw[i].tolist(), w[i].tolist()) == tuple([r] for r in ref(v)), v


def test_same_as_unconditional_pipeline_selecting():
    """Every branch computed on the whole batch, then chosen per sample with numpy: the same
    values as the conditional pipeline's, image by image (deterministic ops)."""
    def branches(images):
        a = fn.cast(fn.flip(images, horizontal=1), dtype=types.FLOAT)
        b = fn.cast(images, dtype=types.FLOAT) * 0.5 + 3
        c = fn.crop_mirror_normalize(images, mean=[10.0], std=[2.0], output_layout="HWC")
        return a, b, c

    @pipeline_def(batch_size=16, num_threads=2, device_id=None, seed=3)
    def plain():
        jpegs, labels = fn.readers.caffe2(path=LMDB)
        images = fn.decoders.image(jpegs, output_type=types.GRAY)
        return (labels,) + branches(images)

    # (types: a merge of branches of different types is an error, tested below)

    @pipeline_def(batch_size=16, num_threads=2, device_id=None, seed=3,
                  enable_conditionals=True)
    def cond():
        jpegs, labels = fn.readers.caffe2(path=LMDB)
        images = fn.decoders.image(jpegs, output_type=types.GRAY)
        if labels < 3:
            out = fn.cast(fn.flip(images, horizontal=1), dtype=types.FLOAT)
            kind = labels * 0
        elif labels < 7:
            out = fn.cast(images, dtype=types.FLOAT) * 0.5 + 3
            kind = labels * 0 + 1
        else:
            out = fn.crop_mirror_normalize(images, mean=[10.0], std=[2.0], output_layout="HWC")
            kind = labels * 0 + 2
        return labels, out, kind

    p, c = plain(), cond()
    for _ in range(3):
        labels, a, b, cc = outputs(p, 16)
        labels2, out, kind = outputs(c, 16)
        for i in range(16):
            lab = int(labels[i].reshape(-1)[0])
            assert labels2[i].tolist() == labels[i].tolist()
            want = a[i] if lab < 3 else b[i] if lab < 7 else cc[i]
            assert kind[i].tolist() == [0 if lab < 3 else 1 if lab < 7 else 2]
            assert out[i].dtype == want.dtype == np.float32 and out[i].shape == want.shape
            np.testing.assert_array_equal(out[i], want)


def test_ops_of_a_branch_see_only_its_samples():
    seen = []

    def count(x):
        seen.append(int(x.reshape(-1)[0]))
        return x + 1

    @pipeline_def(batch_size=8, num_threads=1, device_id=None, enable_conditionals=True)
    def pipe():
        x = fn.external_source(source=source(VALUES))
        if x > 4:
            y = fn.python_function(x, function=count)
        else:
            y = x
        return y

    (y,) = outputs(pipe(), 8)
    # (the pipeline runs batches ahead: each batch brings the same values)
    taken = [v for v in VALUES if v > 4]
    assert set(seen) == set(taken) and len(seen) % len(taken) == 0
    assert [int(v[0]) for v in y] == [v + 1 if v > 4 else v for v in VALUES]


@pytest.mark.parametrize("values", [[1] * 8, [-1] * 8])
def test_empty_branches(values):
    @pipeline_def(batch_size=8, num_threads=2, device_id=None, enable_conditionals=True)
    def pipe():
        x = fn.external_source(source=source(values))
        if x > 0:
            y = x * 2
            r = fn.random.uniform(range=[0.0, 1.0])
        else:
            y = x * 3
            r = fn.random.uniform(range=[5.0, 6.0])
        return y, r

    y, r = outputs(pipe(), 8)
    for i, v in enumerate(values):
        assert y[i].tolist() == [v * 2 if v > 0 else v * 3]
        assert (0 <= r[i] < 1) if v > 0 else (5 <= r[i] < 6)


def test_and_or_not_and_conditional_expressions():
    calls = []

    def probe(x):
        calls.append(int(x.reshape(-1)[0]))
        return x > 5

    @pipeline_def(batch_size=8, num_threads=2, device_id=None, enable_conditionals=True)
    def pipe():
        x = fn.external_source(source=source(VALUES))
        a = x > 0
        # the right operand runs only on the samples the left one leaves undecided
        both = a and fn.python_function(x, function=probe)
        either = (x < -5) or (x == 0)
        neg = not a
        if a and not (x == 7):
            y = x * 2
        else:
            y = x
        z = x * 10 if either else x
        return both, either, neg, y, z

    both, either, neg, y, z = outputs(pipe(), 8)
    taken = [v for v in VALUES if v > 0]
    assert set(calls) == set(taken) and len(calls) % len(taken) == 0
    for i, v in enumerate(VALUES):
        assert bool(both[i]) == (v > 0 and v > 5)
        assert bool(either[i]) == (v < -5 or v == 0)
        assert bool(neg[i]) == (not v > 0)
        assert y[i].tolist() == [v * 2 if v > 0 and v != 7 else v]
        assert z[i].tolist() == [v * 10 if (v < -5 or v == 0) else v]
        assert both[i].dtype == np.bool_ and neg[i].dtype == np.bool_


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.uint32, np.int64, np.float16,
                                   np.float32, np.float64])
def test_not_of_numbers_is_python_truthiness(dtype):
    # DALI's `not` takes any type that converts to bool: true where the value is zero
    values = [3, 0, 1, 0, 250, 0]

    @pipeline_def(batch_size=6, num_threads=2, device_id=None, enable_conditionals=True)
    def pipe():
        x = fn.external_source(source=source(values, dtype=dtype, shape=()))
        return not x

    (out,) = outputs(pipe(), 6)
    assert [bool(o) for o in out] == [not v for v in values]
    assert all(o.dtype == np.bool_ and o.shape == () for o in out)


def test_not_of_nan_and_negative_zero():
    values = np.float32([np.nan, -0.0, 0.0, -2.5])

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, enable_conditionals=True)
    def pipe():
        x = fn.external_source(source=lambda: [np.float32(v) for v in values])
        return not x

    (out,) = outputs(pipe(), 4)
    assert [bool(o) for o in out] == [not float(v) for v in values] == [False, True, True, False]


def test_structures_that_do_not_match_are_refused_in_dalis_words():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None, enable_conditionals=True)
    def mismatch():
        x = fn.external_source(source=source([1, 2]))
        if x > 1:
            out = {"out": x + 1, "extra": x + 2}
        else:
            out = {"out": x}
        return out["out"]

    with pytest.raises(ValueError, match=r"Divergent data found in different branches of `if/"
                       r"else` control flow statement.* The two dictionaries don't have the same "
                       r"set of keys. First structure has keys type=list str=\['out', 'extra'\], "
                       r"while second structure has keys type=list str=\['out'\]"):
        mismatch()

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, enable_conditionals=True)
    def lengths():
        x = fn.external_source(source=source([1, 2]))
        if x > 1:
            out = (x, x)
        else:
            out = (x,)
        return out[0]

    with pytest.raises(ValueError, match="don't have the same sequence length. First structure "
                                         "has length 2, while second structure has length 1"):
        lengths()


def test_nesting_is_supported():
    from sluice._conditionals import check_nesting_support
    assert check_nesting_support() is True


def test_python_values_stay_python():
    @pipeline_def(batch_size=4, num_threads=1, device_id=None, enable_conditionals=True)
    def pipe(mode, scale):
        x = fn.external_source(source=source([1, 2, 3, 4]))
        if mode == "double" and scale:
            x = x * 2
        for k in range(3):
            if k == 1:
                continue  # plain Python: break/continue/return are fine on Python values
            x = x + k
        return x if scale else x * 0

    (x,) = outputs(pipe("double", True), 4)
    assert [int(v[0]) for v in x] == [2 * v + 2 for v in [1, 2, 3, 4]]
    (x,) = outputs(pipe("half", False), 4)
    assert [int(v[0]) for v in x] == [0] * 4


def helper(x):
    """converted when the pipeline function calls it (an `if` on data inside)"""
    if x > 2:
        return_value = x * 100
    else:
        return_value = x
    return return_value


def test_called_functions_are_converted_and_nested_structures_merge():
    @pipeline_def(batch_size=4, num_threads=1, device_id=None, enable_conditionals=True)
    def pipe():
        x = fn.external_source(source=source([1, 2, 3, 4]))
        y = helper(x)
        if x == 1:
            pair = (x + 1, [x * 2])
        else:
            pair = (x - 1, [x * 3])
        return y, pair[0], pair[1][0]

    y, p0, p1 = outputs(pipe(), 4)
    assert [int(v[0]) for v in y] == [1, 2, 300, 400]
    assert [int(v[0]) for v in p0] == [2, 1, 2, 3]
    assert [int(v[0]) for v in p1] == [2, 6, 9, 12]


def test_random_ops_in_branches_any_thread_count_and_checkpoints():
    def make(threads, checkpoint=None):
        @pipeline_def(batch_size=8, num_threads=threads, device_id=None, seed=11,
                      enable_conditionals=True, enable_checkpointing=True,
                      checkpoint=checkpoint)
        def pipe():
            jpegs, labels = fn.readers.caffe2(path=LMDB, random_shuffle=True,
                                              initial_fill=64)
            images = fn.decoders.image(jpegs, output_type=types.GRAY)
            if fn.random.coin_flip(dtype=types.BOOL, probability=0.3):
                images = fn.flip(images, horizontal=1)
                noise = fn.random.uniform(range=[0.0, 1.0], shape=[2])
            else:
                noise = fn.random.normal(shape=[2]) * 0.0 - 1.0
            return labels, images, noise
        return pipe()

    def batches(p, n):
        return [outputs(p, 8) for _ in range(n)]

    one, four = make(1), make(4)
    a, b = batches(one, 3), batches(four, 3)
    for x, y in zip(a, b):
        for u, v in zip(x, y):
            assert all(np.array_equal(s, t) for s, t in zip(u, v))
    ck = one.checkpoint()
    rest = batches(one, 2)
    again = batches(make(2, checkpoint=ck), 2)
    for x, y in zip(rest, again):
        for u, v in zip(x, y):
            assert all(np.array_equal(s, t) for s, t in zip(u, v))
    # both branches were taken; the uniform noise of the flipped samples is in [0, 1)
    noise = np.concatenate([np.stack(x[2]) for x in a])
    assert (noise[:, 0] == -1).any() and (noise[:, 0] >= 0).any()


def _line_of(text):
    with open(HERE) as f:
        for k, line in enumerate(f, 1):
            if text in line:
                return k
    raise AssertionError(text)


def test_misuses_name_the_line():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None, enable_conditionals=True)
    def returns():
        x = fn.external_source(source=source([1, 2]))
        if x > 1:  # LINE-RETURN
            return x
        return x * 2

    with pytest.raises(errors.Error, match=r"test_conditionals.py:%d: `return` inside an `if` on "
                       r"data" % _line_of("# LINE-RETURN")):
        returns()

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, enable_conditionals=True)
    def one_sided():
        x = fn.external_source(source=source([1, 2]))
        if x > 1:  # LINE-ONE-SIDED
            y = x * 2
        return y

    with pytest.raises(errors.Error, match=r"test_conditionals.py:%d: variable 'y' is assigned "
                       r"in only one branch" % _line_of("# LINE-ONE-SIDED")):
        one_sided()

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, enable_conditionals=True)
    def python_values():
        x = fn.external_source(source=source([1, 2]))
        if x > 1:  # LINE-PYTHON
            k = 1
        else:
            k = 2
        return x * k

    with pytest.raises(errors.Error, match=r"test_conditionals.py:%d: variable 'k' is int in "
                       r"the `if` branch and int in the `else`" % _line_of("# LINE-PYTHON")):
        python_values()

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, enable_conditionals=True)
    def int_predicate():
        x = fn.external_source(source=source([1, 2]))
        if x:
            x = x + 1
        return x

    with pytest.raises(errors.Error, match="an `if` condition must be a bool scalar per sample "
                       r"\(got int32"):
        int_predicate().run()

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, enable_conditionals=True)
    def reader_in_branch():
        x = fn.external_source(source=source([1, 2]))
        if x > 1:
            _, y = fn.readers.caffe2(path=LMDB)
        else:
            y = x
        return y

    with pytest.raises(errors.Error, match="readers.caffe2 cannot be inside a conditional"):
        reader_in_branch()


def test_without_enable_conditionals_an_if_on_data_is_refused():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        x = fn.external_source(source=source([1, 2]))
        if x > 1:
            x = x + 1
        return x

    with pytest.raises(TypeError, match="enable_conditionals=True"):
        pipe()


def test_the_documented_example_and_more_forms():
    """docs/python.md's example; dicts merge by key; a Python value in `and` becomes a
    constant."""
    @pipeline_def(enable_conditionals=True, batch_size=8, num_threads=2, device_id=None, seed=5)
    def pipe():
        jpegs, labels = fn.readers.caffe2(path=LMDB)
        images = fn.decoders.image(jpegs, output_type=types.GRAY)
        plain = images
        coin = fn.random.coin_flip(dtype=types.BOOL, probability=0.25)
        if coin:
            images = fn.flip(images, horizontal=1)
        elif labels > 4:
            images = fn.cast(images, dtype=types.FLOAT) * 0.5
            images = fn.cast(images, dtype=types.UINT8)
        d = {"a": labels}
        if labels > 2:
            d = {"a": labels * 2}
        yes = coin and True  # (a 0-d constant: as coin's samples)
        return images, labels, plain, coin, d["a"], yes

    for _ in range(2):
        images, labels, plain, coin, da, yes = outputs(pipe(), 8)
        for i in range(8):
            lab = int(labels[i].reshape(-1)[0])
            if bool(coin[i]):
                want = plain[i][:, ::-1]
            elif lab > 4:
                want = (plain[i].astype(np.float32) * np.float32(0.5)).round().astype(np.uint8)
            else:
                want = plain[i]
            assert np.array_equal(images[i], want)
            assert int(da[i].reshape(-1)[0]) == (lab * 2 if lab > 2 else lab)
            assert bool(yes[i]) == bool(coin[i])


def test_more_refusals():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None, enable_conditionals=True)
    def gpu_predicate():
        x = fn.external_source(source=source([1, 2]))
        if (x > 1).gpu():
            x = x + 1
        return x

    with pytest.raises(errors.Error, match="the condition is on the GPU"):
        gpu_predicate()

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, enable_conditionals=True)
    def source_in_branch():
        x = fn.external_source(source=source([1, 2]))
        if x > 1:
            y = fn.external_source(source=source([3, 4]))
        else:
            y = x
        return y

    with pytest.raises(errors.Error, match="external_source cannot be inside a conditional"):
        source_in_branch()

    ns = {"fn": fn}
    exec("def made(x):\n    return x\n", ns)  # no source file to read
    with pytest.raises(errors.NotSupportedError, match="the source of made cannot be read"):
        pipeline_def(enable_conditionals=True)(ns["made"])


@do_not_convert
def plain_helper(x):
    if x > 2:  # not converted: Python's truth of a DataNode, a TypeError
        return x
    return x


def test_do_not_convert():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None, enable_conditionals=True)
    def pipe():
        x = fn.external_source(source=source([1, 2]))
        return helper(x), plain_helper(x + 0) if False else x

    pipe()  # helper converted; plain_helper not called

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, enable_conditionals=True)
    def calls_plain():
        x = fn.external_source(source=source([1, 2]))
        return plain_helper(x)

    with pytest.raises(TypeError, match="no truth value"):
        calls_plain()
