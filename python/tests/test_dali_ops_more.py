# SPDX-License-Identifier: Apache-2.0
"""Operators and forms DALI's own programs use that sluice lacked: copy, element_extract,
permute_batch, batch_permutation and lookup_table (against numpy), flip by layout, the random
ops' shape-like input and per-sample range, `//`, and the errors DALI's tests expect."""

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.ops as ops
import sluice.types as types
from sluice.pipeline import Pipeline


def run_once(define, batch_size=3, seed=5):
    p = Pipeline(batch_size=batch_size, num_threads=2, device_id=None, seed=seed)
    with p:
        outs = define()
        p.set_outputs(*(outs if isinstance(outs, (list, tuple)) else (outs,)))
    out = p.run()
    p.close()
    return out


def feed(batch):
    return fn.external_source(source=lambda: batch)


RNG = np.random.default_rng(11)


def test_copy_is_the_input_with_its_layout():
    data = [RNG.integers(0, 255, (4, 5, 3), dtype=np.uint8) for _ in range(3)]
    x, y = run_once(lambda: (lambda s: (s, fn.copy(s)))(
        fn.external_source(source=lambda: data, layout="HWC")))
    assert y.layout() == "HWC"
    for i in range(3):
        np.testing.assert_array_equal(y.at(i), data[i])


def test_element_extract_against_numpy():
    data = [RNG.integers(0, 100, (5, 2 + i, 3), dtype=np.int32) for i in range(3)]
    outs = run_once(lambda: fn.element_extract(
        fn.external_source(source=lambda: data, layout="FHW"), element_map=[4, 0, 2]))
    for k, e in enumerate([4, 0, 2]):
        assert outs[k].layout() == "HW"
        for i in range(3):
            np.testing.assert_array_equal(outs[k].at(i), data[i][e])


def test_legacy_element_extract_and_its_errors():
    data = [np.arange(12, dtype=np.uint8).reshape(3, 4)] * 2

    class P(Pipeline):
        def __init__(self, m):
            super().__init__(2, 1, None)
            self.src = ops.ExternalSource()
            self.ee = ops.ElementExtract(element_map=m)

        def define_graph(self):
            self.x = self.src()
            return self.ee(self.x)

        def iter_setup(self):
            self.feed_input(self.x, data, layout="FX")

    (out,) = P([2]).run()
    np.testing.assert_array_equal(out.at(1), data[1][2])
    with pytest.raises(RuntimeError, match="out of bounds"):
        P([3]).run()
    with pytest.raises(RuntimeError, match="negative"):
        P([-1]).run()


def test_permute_batch_follows_batch_permutation():
    data = [np.full((2, i + 1), i, np.int16) for i in range(6)]
    x, y, perm = run_once(lambda: (lambda s, p: (s, fn.permute_batch(s, indices=p), p))(
        feed(data), fn.batch_permutation(no_fixed_points=True)), batch_size=6)
    idx = [int(perm.at(i)) for i in range(6)]
    assert sorted(idx) == list(range(6)) and all(j != i for i, j in enumerate(idx))
    for i in range(6):
        np.testing.assert_array_equal(y.at(i), data[idx[i]])
    (z,) = run_once(lambda: fn.permute_batch(feed(data), indices=[5, 5, 0, 1, 2, 3]),
                    batch_size=6)
    np.testing.assert_array_equal(z.at(1), data[5])
    with pytest.raises(RuntimeError, match="not a valid index for an input batch of 6"):
        run_once(lambda: fn.permute_batch(feed(data), indices=[0, 1, 2, 3, 4, 6]), batch_size=6)


def test_batch_permutation_with_repetitions_stays_in_range():
    (perm,) = run_once(lambda: fn.batch_permutation(allow_repetitions=True, no_fixed_points=True),
                       batch_size=9)
    idx = [int(perm.at(i)) for i in range(9)]
    assert all(0 <= j < 9 and j != i for i, j in enumerate(idx))
    assert perm.at(0).shape == () and perm.at(0).dtype == np.int32


def test_lookup_table_against_numpy():
    data = [RNG.integers(-3, 300, (7, 5)).astype(np.int32) for _ in range(3)]
    keys, values = [0, 5, 299, 100], [0.5, -2.0, 7.25, 1.0]
    (out,) = run_once(lambda: fn.lookup_table(feed(data), keys=keys, values=values,
                                              default_value=9.0, dtype=types.FLOAT16))
    lut = np.full(70000, 9.0)
    lut[keys] = values
    for i in range(3):
        want = np.where(data[i] >= 0, lut[np.clip(data[i], 0, None)], 9.0).astype(np.float16)
        np.testing.assert_array_equal(out.at(i), want)
    with pytest.raises(sluice.Error, match="key 70000"):
        run_once(lambda: fn.lookup_table(feed(data), keys=[70000], values=[1.0]))


@pytest.mark.parametrize("layout,shape", [("CHW", (3, 4, 5)), ("FCHW", (2, 3, 4, 5)),
                                          ("FDHWC", (2, 3, 4, 5, 2)), ("FCDHW", (2, 2, 3, 4, 5))])
def test_flip_finds_h_w_and_d_from_the_layout(layout, shape):
    data = [RNG.integers(0, 255, shape, dtype=np.uint8) for _ in range(2)]
    (out,) = run_once(lambda: fn.flip(fn.external_source(source=lambda: data, layout=layout),
                                      horizontal=1, vertical=1, depthwise=1), batch_size=2)
    axes = tuple(layout.index(c) for c in "HWD" if c in layout)
    for i in range(2):
        np.testing.assert_array_equal(out.at(i), np.flip(data[i], axes))


def test_random_ops_take_a_shape_like_input():
    like = [np.zeros((2, 3 + i)) for i in range(3)]
    a, b, c = run_once(lambda: (lambda x: (fn.random.normal(x), fn.random.coin_flip(x),
                                           fn.random.uniform(x, range=[2, 3])))(feed(like)))
    for out in (a, b, c):
        assert [out.at(i).shape for i in range(3)] == [(2, 3), (2, 4), (2, 5)]
    with pytest.raises(sluice.Error, match="not both"):
        run_once(lambda: fn.random.normal(feed(like), shape=[2]))


def test_uniform_range_per_sample():
    lo = [np.float32(10 * i) for i in range(4)]
    (out,) = run_once(lambda: (lambda r: fn.random.uniform(range=fn.stack(r, r + 1), shape=[50]))(
        feed(lo)), batch_size=4)
    for i in range(4):
        v = out.at(i)
        assert v.min() >= 10 * i and v.max() < 10 * i + 1


def test_floor_division_divides_as_c_does():
    a = [np.array([7, -7, 9, 5, -128], np.int32), np.array([0, 1, 2, 3, 4], np.int32)]
    b = [np.array([2, 2, -4, 0, 3], np.int32), np.array([1, 1, 1, 1, 1], np.int32)]
    x, y, z = run_once(lambda: (lambda l, r: (l // r, l // 2, 7 // r))(feed(a), feed(b)),
                       batch_size=2)
    np.testing.assert_array_equal(x.at(0), [3, -3, -2, 0, -42])  # toward zero; by zero: 0
    np.testing.assert_array_equal(y.at(0), np.trunc(a[0] / 2).astype(np.int32))
    np.testing.assert_array_equal(z.at(0), [3, 3, -1, 0, 2])
    (f,) = run_once(lambda: feed([np.float32([1.0, 3.0])] * 2) // 2, batch_size=2)
    assert f.at(0).dtype == np.float32
    np.testing.assert_array_equal(f.at(0), [0.5, 1.5])  # floating operands divide as /


def test_errors_are_runtime_errors_as_dalis():
    assert issubclass(sluice.Error, RuntimeError)
    with pytest.raises(RuntimeError, match="Unsupported axis_name value"):
        run_once(lambda: fn.one_hot(feed([np.int32(1)] * 3), num_classes=3, axis_name="AB"))
    with pytest.raises(ValueError, match="Input layout mismatch"):
        run_once(lambda: fn.one_hot(feed([np.zeros((2, 2), np.int32)] * 3), num_classes=3,
                                    axis_name="O"))


def test_expand_dims_layouts():
    x = [np.zeros((2, 3, 4), np.uint8)]
    cases = [([4, 3], "AB", "XYZ", "XYZBA"), ([], "", "HW", "HW"), ([0, 3], None, "XYZ", "")]
    for axes, names, layout, want in cases:
        data = [np.zeros((2, 3, 4)[:len(layout)], np.uint8)]
        (out,) = run_once(lambda: fn.expand_dims(
            fn.external_source(source=lambda: data, layout=layout), axes=axes,
            new_axis_names=names), batch_size=1)
        assert out.layout() == want
    (out,) = run_once(lambda: fn.expand_dims(feed([np.float32(1)]), axes=[0],
                                             new_axis_names="X"), batch_size=1)
    assert out.layout() == "X" and out.at(0).shape == (1,)
    with pytest.raises(sluice.Error, match="needs an input with a layout"):
        run_once(lambda: fn.expand_dims(feed(x), axes=[0], new_axis_names="C"), batch_size=1)


def test_zeros_ones_full_against_numpy():
    like = [RNG.random((2, 3)).astype(np.float32), RNG.random((2, 3)).astype(np.float32)]
    fill = np.float64([[1.5], [2.5]])  # (2, 1): broadcast over the last dim
    outs = run_once(lambda: (lambda x: (
        fn.zeros(shape=[2, 3]), fn.ones(shape=[4], dtype=types.INT8), fn.zeros_like(x),
        fn.ones_like(x, dtype=types.UINT8), fn.full(fill, shape=[3, 2, 4]),
        fn.full_like(x, np.float32([7, 8, 9]))))(feed(like)), batch_size=2)
    want = [np.zeros((2, 3), np.float32), np.ones(4, np.int8), np.zeros_like(like[1]),
            np.ones((2, 3), np.uint8),
            np.full((3, 2, 4), fill, np.float32),  # (a float64 array input: a float32 constant)
            np.full_like(like[1], [7, 8, 9])]
    for o, w in zip(outs, want):
        assert o.at(1).dtype == w.dtype
        np.testing.assert_array_equal(o.at(1), w)
    with pytest.raises(sluice.Error, match="does not broadcast"):
        run_once(lambda: fn.full(np.float32([1, 2]), shape=[3]))
