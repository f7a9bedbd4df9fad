# SPDX-License-Identifier: Apache-2.0
"""fn.random.choice and fn.random.beta: values and types, frequencies against the given
probabilities and moments against Beta's formulas, per-sample arguments, the same draws at any
thread count and batch size, and the errors."""

import numpy as np
import pytest

import sluice.fn as fn
import sluice.types as types
from sluice import errors, pipeline_def


def run(make, batch=4, threads=2, seed=5, iters=1):
    @pipeline_def(batch_size=batch, num_threads=threads, device_id=None, seed=seed)
    def pipe():
        return make()

    p = pipe()
    outs = []
    for _ in range(iters):
        out = p.run()
        out = out if isinstance(out, (list, tuple)) else [out]
        outs.append([[np.array(o.at(i)) for i in range(batch)] for o in out])
    return [sum((o[k] for o in outs), []) for k in range(len(outs[0]))]


def test_choice_from_count_and_list():
    vals = np.array([10, 20, 30], np.int16)
    a, b, c = run(lambda: (fn.random.choice(5, shape=[1000]),
                           fn.random.choice(types.Constant(vals), shape=[2, 500]),
                           fn.random.choice(vals)), batch=2)
    for i in range(2):
        assert a[i].dtype == np.int32 and a[i].shape == (1000,)
        assert set(np.unique(a[i])) == set(range(5))
        assert b[i].dtype == np.int16 and b[i].shape == (2, 500)
        assert set(np.unique(b[i])) <= {10, 20, 30}
        assert c[i].shape == () and int(c[i]) in (10, 20, 30)


def test_choice_probabilities():
    p = [0.1, 0.0, 0.6, 0.3]
    (a,) = run(lambda: fn.random.choice(4, p=p, shape=[20000]), batch=1)
    freq = np.bincount(a[0], minlength=4) / 20000
    assert freq[1] == 0
    assert np.all(np.abs(freq - p) < 0.02), freq
    # per-sample p: the first sample always picks 0, the second always 2
    ps = [np.array([1.0, 0, 0], np.float32), np.array([0, 0, 1.0], np.float32)]
    (b,) = run(lambda: fn.random.choice(3, p=fn.external_source(
        source=lambda info: ps[info.idx_in_batch], batch=False), shape=[50]), batch=2)
    assert (b[0] == 0).all() and (b[1] == 2).all()


@pytest.mark.parametrize("alpha,beta", [(0.5, 0.5), (2.0, 5.0), (30.0, 3.0)])
def test_beta_moments(alpha, beta):
    (x,) = run(lambda: fn.random.beta(alpha=alpha, beta=beta, shape=[40000]), batch=1)
    x = x[0].astype(np.float64)
    assert x.dtype == np.float64 and ((x >= 0) & (x <= 1)).all()
    mean = alpha / (alpha + beta)
    var = alpha * beta / ((alpha + beta) ** 2 * (alpha + beta + 1))
    assert abs(x.mean() - mean) < 5 * np.sqrt(var / x.size)
    assert abs(x.var() - var) < 0.05 * var


def test_beta_per_sample_and_dtype():
    al = [np.array(a, np.float32) for a in (1.0, 50.0)]
    (x,) = run(lambda: fn.random.beta(alpha=fn.external_source(
        source=lambda info: al[info.idx_in_batch], batch=False), beta=1.0, shape=[5000],
        dtype=types.FLOAT64), batch=2)
    assert x[0].dtype == np.float64
    assert abs(x[0].mean() - 0.5) < 0.02 and abs(x[1].mean() - 50 / 51) < 0.01


def test_shape_like_input():
    # DALI's positional shape_like input: each sample takes that input's shape (its data unread)
    like = [np.zeros((2, 3), np.uint8), np.zeros((4, 1), np.uint8)]

    def make():
        src = fn.external_source(source=lambda info: like[info.idx_in_batch], batch=False)
        return (fn.random.beta(src, alpha=2.0, beta=2.0), fn.random.choice(7, src),
                fn.random.choice(7, np.full((5,), 42)))

    b, c, c5 = run(make, batch=2)
    assert b[0].shape == (2, 3) and b[1].shape == (4, 1) and b[0].dtype == np.float32
    assert c[0].shape == (2, 3) and c[1].shape == (4, 1)
    assert ((c[0] >= 0) & (c[0] < 7)).all() and c5[1].shape == (5,)


def test_choice_of_nd_elements():
    # an n-d input is a list of its rows: each pick is a whole row, the output shape is
    # shape + the row's shape; the layout follows DALI's rule
    rows = np.stack([np.full((2, 2), k, np.int32) for k in range(5)])

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=3)
    def pipe():
        a = fn.external_source(lambda: rows, batch=False, layout="NAB")
        return fn.random.choice(a), fn.random.choice(a, shape=[300]), fn.random.choice(a, shape=[2, 3])

    one, many, grid = pipe().run()
    assert one.layout() == "AB" and many.layout() == "NAB" and grid.layout() == ""
    for i in range(2):
        x = np.array(one.at(i))
        assert x.shape == (2, 2) and (x == x[0, 0]).all() and 0 <= x[0, 0] < 5
        m = np.array(many.at(i))
        assert m.shape == (300, 2, 2)
        assert (m == m[:, :1, :1]).all()  # whole rows
        assert set(np.unique(m)) == set(range(5))
        assert np.array(grid.at(i)).shape == (2, 3, 2, 2)


@pytest.mark.parametrize("alpha,beta", [(3e-5, 2e-5), (0.003, 0.002), (3e-37, 2e-35)])
def test_beta_tiny_parameters(alpha, beta):
    # draws of Gamma(alpha) underflow for such alphas; Beta is then nearly Bernoulli with
    # P(1) = alpha / (alpha + beta), which the draws must still follow
    (x,) = run(lambda: fn.random.beta(alpha=alpha, beta=beta, shape=[20000]), batch=1)
    x = x[0].astype(np.float64)
    assert ((x >= 0) & (x <= 1)).all()
    p1 = alpha / (alpha + beta)
    assert abs(x.mean() - p1) < 5 * np.sqrt(p1 * (1 - p1) / x.size) + 1e-3


def test_same_draws_any_threads_and_batches():
    def make():
        return fn.random.choice(1000, shape=[8]), fn.random.beta(alpha=2.0, beta=3.0)

    a = run(make, batch=8, threads=1)
    b = run(make, batch=2, threads=3, iters=4)
    for k in range(2):
        for i in range(8):
            np.testing.assert_array_equal(a[k][i], b[k][i])


def test_errors():
    def fails(make, match):
        with pytest.raises(errors.Error, match=match):
            run(make, batch=1)

    fails(lambda: fn.random.beta(alpha=0.0), r"random.beta: alpha 0 and beta 1 must be > 0")
    fails(lambda: fn.random.beta(dtype=types.INT32), "random.beta: dtype int32")
    fails(lambda: fn.random.choice(3, p=[0.5, 0.5]), "random.choice: sample 0: p has 2 values "
                                                      "for 3 choices")
    fails(lambda: fn.random.choice(0), r"random.choice: sample 0: the count of choices is 0")
    fails(lambda: fn.random.choice(2.5), "random.choice: sample 0: a 0-d input is a count")
    fails(lambda: fn.random.choice(3, p=[0.5, -0.5, 1.0]),
          r"random.choice: sample 0: p\[1\] = -0.5 is not a probability")
    # as DALI: each probability in [0, 1], their sum 1
    fails(lambda: fn.random.choice(1, p=1.5), r"random.choice: sample 0: p\[0\] = 1.5 is not a "
                                              r"probability \(in \[0, 1\]\)")
    fails(lambda: fn.random.choice(2, p=0.25), "random.choice: sample 0: the probabilities p sum "
                                               "to 0.5, not 1.0")
    fails(lambda: fn.random.beta(alpha=1e100), "random.beta: alpha 1e.100 and beta 1 must be "
                                               "positive float32 values")
    # DALI's own sentences end the messages, which DALI's tests match
    fails(lambda: fn.random.beta(alpha=1.0, beta=0.0), "The `beta` must be a positive float32")
    fails(lambda: fn.random.beta(dtype=types.FLOAT16), "Data type float16 is not supported")
    fails(lambda: fn.random.choice(1, p=1.5), r"Probabilities must be in range \[0, 1\], but got: "
                                              r"1.5 for sample: 0 at index 0.")
    fails(lambda: fn.random.choice(2, p=0.25), "Sum of probabilities must be 1.0, but got 0.5 for "
                                               "sample: 0.")
    fails(lambda: fn.random.choice(-5), "Expected positive number of elements for sampling, got: "
                                        "-5 for sample: 0.")
    fails(lambda: fn.random.choice(5, p=np.float32([0.25, 0.5, 0.25])),
          r'Unexpected shape for argument "p". Expected \{5\}, but got \{3\}')
    fails(lambda: fn.random.beta(types.Constant(np.zeros(3)), shape=[3]),
          r"random.beta: give `shape` or an input whose shape to take \(shape_like\), not both")


def test_uniform_stays_below_hi():
    # DALI's floating draws lie in [lo, hi): a range one float32 step wide gives lo only, even
    # where lo + u * (hi - lo) rounds up to hi
    lo = np.float32(10.0)
    hi = np.nextafter(lo, np.float32(11.0))
    (x,) = run(lambda: fn.random.uniform(range=[lo, hi], shape=[100000]), batch=2)
    assert all((s == lo).all() for s in x)
    (y,) = run(lambda: fn.random.uniform(range=[0.0, 1.0], shape=[100000], dtype=types.FLOAT64),
               batch=1)
    assert y[0].dtype == np.float64 and (y[0] < 1).all() and (y[0] >= 0).all()


def test_an_array_for_a_scalar_argument_cannot_be_converted():
    # DALI's test_random_beta matches "cannot be converted" for an array where one float goes
    with pytest.raises(errors.ArgumentTypeError, match="argument 'alpha' takes float, got ndarray "
                                                       "(.|\n)*: it cannot be converted to float"):
        run(lambda: fn.random.beta(alpha=np.full((2, 2), 1.0)), batch=1)
