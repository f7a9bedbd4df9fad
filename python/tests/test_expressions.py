# SPDX-License-Identifier: Apache-2.0
"""DALI's mathematical expressions on DataNodes (the `arithmetic` op) against formulas written
here with numpy and Python integers: every binary operator for every pair of DALI's types (its
type promotion table, C's truncating // and %, integer wrap-around), constants on either side
(Python int, float and bool), the unary operators, numpy-style broadcasting, and the refusals
DALI documents (two bools but for *, comparisons and bitwise ops; % on bool; bitwise ops on
floats)."""

import operator

import numpy as np
import pytest

import sluice.fn as fn
import sluice.types as types
from sluice import errors, pipeline_def

# DALI's numeric types (docs: bool, int8..int64, uint8..uint64, float32, float64)
KIND = {np.bool_: ("u", 1), np.uint8: ("u", 8), np.uint16: ("u", 16), np.uint32: ("u", 32),
        np.uint64: ("u", 64), np.int8: ("i", 8), np.int16: ("i", 16), np.int32: ("i", 32),
        np.int64: ("i", 64), np.float32: ("f", 32), np.float64: ("f", 64)}
TYPES = list(KIND)
SIGNED = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}

BINARY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
          "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "==": operator.eq,
          "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
          ">=": operator.ge, "&": operator.and_, "|": operator.or_, "^": operator.xor,
          "<<": operator.lshift, ">>": operator.rshift}
CMP = {"==", "!=", "<", "<=", ">", ">="}
BITWISE = {"&", "|", "^", "<<", ">>"}


def promote(a, b):
    """DALI's table: T,T -> T; a float wins; the wider of one kind; intX with uintY -> intX if
    X > Y else int2Y; bool is uint1."""
    if a == b:
        return a
    (ka, xa), (kb, xb) = KIND[a], KIND[b]
    if ka == "f" and kb == "f":
        return a if xa > xb else b
    if "f" in (ka, kb):
        return a if ka == "f" else b
    if ka == kb:
        return a if xa >= xb else b
    x, y = (xa, xb) if ka == "i" else (xb, xa)
    return SIGNED[min(64, x if x > y else 2 * y)]


def refusal(op, a, b):
    """The message DALI's rules give for op on types a, b, or None where allowed."""
    if a == b == np.bool_ and op in ("+", "-", "/", "//", "**", "<<", ">>"):
        return "on two bool operands"
    if op == "%" and np.bool_ in (a, b):
        return "on a bool operand"
    if op in BITWISE and "f" in (KIND[a][0], KIND[b][0]):
        return "on a floating operand"
    return None


def wrap(v, t):
    """Python int v as integer type t holds it."""
    kind, bits = KIND[t]
    if t == np.bool_:
        return int(v != 0)
    v &= (1 << bits) - 1
    return v - (1 << bits) if kind == "i" and v >> (bits - 1) else v


def int_op(op, x, y, t):
    """op on the Python ints x, y (values of integer type t), as C computes it in t."""
    kind, bits = KIND[t]
    signed = kind == "i"
    if op in CMP:
        return int(BINARY[op](x, y))
    if op in ("//", "%"):
        if y == 0 or (signed and y == -1):
            return wrap(-x, t) if op == "//" and y == -1 else 0
        q = abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1)  # truncation, as C
        return wrap(q if op == "//" else x - q * y, t)
    if op == "**":
        if signed and y < 0:
            return 1 if x == 1 else (-1 if y % 2 else 1) if x == -1 else 0
        return wrap(pow(x, y, 1 << 64), t)
    if op in ("<<", ">>"):
        if y < 0 or y >= bits:
            return -1 if op == ">>" and x < 0 else 0
        return wrap(x << y, t) if op == "<<" else x >> y
    if t == np.bool_ and op == "*":
        return x & y
    return wrap(BINARY[op](x, y), t)


def reference(op, a, b):
    """op on numpy arrays a, b (same shape) as DALI defines it: both converted to the promoted
    type (float32 for / on integers), then the operation in that type; comparisons give bool."""
    ct = promote(a.dtype.type, b.dtype.type)
    if op == "/" and KIND[ct][0] != "f":
        ct = np.float32
    out = np.bool_ if op in CMP else ct
    if KIND[ct][0] == "f":
        x, y = a.astype(ct).astype(np.float64), b.astype(ct).astype(np.float64)
        with np.errstate(all="ignore"):
            f = {"//": np.divide, "%": np.fmod, "**": np.power}.get(op, BINARY[op])
            return f(x, y).astype(out)
    x, y = a.astype(ct).tolist(), b.astype(ct).tolist()
    return np.array([int_op(op, int(p), int(q), ct) for p, q in zip(x, y)],
                    dtype=object).astype(out)


def values(t, rng):
    kind, bits = KIND[t]
    if t == np.bool_:
        v = [0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 0]
    elif kind == "f":
        v = [-7.5, -3, -1, -0.0, 0, 0.5, 1, 2, 3, 7.25, 1e3, -1e-3]
    elif kind == "i":
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        v = [lo, lo + 1, -7, -3, -1, 0, 1, 2, 3, 7, hi - 1, hi]
    else:
        hi = (1 << bits) - 1
        v = [0, 1, 2, 3, 7, hi - 1, hi, 100 % (hi + 1), 5, 6, 9, 64 % (hi + 1)]
    return np.array(v, dtype=np.float64 if kind == "f" else object).astype(t)


def run(make, *arrays, batch=1):
    @pipeline_def(batch_size=batch, num_threads=2, device_id=None)
    def pipe():
        srcs = [fn.external_source(source=lambda a=a: [a] * batch) for a in arrays]
        return make(*srcs)

    out = pipe().run()
    out = out if isinstance(out, (list, tuple)) else [out]
    return [np.array(o.at(0)) for o in out]


def same(got, want, ulp=0):
    """got is want: its type, shape and values (floats bit-equal, or within ulp units in the last
    place: pow, whose libm result numpy's may differ from by one)"""
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    if want.dtype.kind == "f" and ulp:
        fin = np.isfinite(want)
        assert np.array_equal(got[~fin], want[~fin], equal_nan=True)
        np.testing.assert_array_max_ulp(got[fin], want[fin], maxulp=ulp)
    elif want.dtype.kind == "f":
        np.testing.assert_array_equal(got, want)  # NaN where NaN, bit-equal values elsewhere
    else:
        assert got.tolist() == want.tolist()


@pytest.mark.parametrize("ta", TYPES, ids=lambda t: t.__name__)
@pytest.mark.parametrize("tb", TYPES, ids=lambda t: t.__name__)
def test_every_operator_and_type_pair(ta, tb):
    rng = np.random.default_rng(KIND[ta][1] * 7 + KIND[tb][1])
    a = values(ta, rng)
    b = values(tb, rng)[::-1].copy()  # a different pairing of the values
    ok = [op for op in BINARY if refusal(op, ta, tb) is None]
    for group in (ok[:9], ok[9:]):
        if not group:
            continue
        got = run(lambda x, y, g=group: tuple(BINARY[op](x, y) for op in g), a, b)
        for op, g in zip(group, got):
            try:
                same(g, reference(op, a, b), ulp=op == "**")
            except AssertionError as e:
                raise AssertionError("%s %s %s: %s" % (ta.__name__, op, tb.__name__, e))
    for op in BINARY:
        why = refusal(op, ta, tb)
        if why:
            with pytest.raises(errors.Error, match="arithmetic: '%s' %s" % (
                    op.replace("*", r"\*").replace("+", r"\+").replace("^", r"\^")
                    .replace("|", r"\|"), why)):
                run(lambda x, y: BINARY[op](x, y), a, b)


CONSTANTS = [3, -2, 0.5, True, False]


@pytest.mark.parametrize("t", [np.uint8, np.int16, np.int32, np.float32, np.bool_],
                         ids=lambda t: t.__name__)
def test_constants_on_either_side(t):
    """A Python int is an int32 constant, a float a float32 one, a bool a bool one (DALI's);
    reflected operators put the constant on the left."""
    a = values(t, None)
    ctype = {int: np.int32, float: np.float32, bool: np.bool_}
    for c in CONSTANTS:
        cv = np.full(a.shape, c, dtype=ctype[type(c)])
        for op in BINARY:
            for left in (False, True):
                x, y = (cv, a) if left else (a, cv)
                if refusal(op, x.dtype.type, y.dtype.type):
                    continue
                if op in CMP and left:
                    continue  # 3 < x is Python's x > 3: the reflected comparison, below
                (got,) = run(lambda n, op=op, left=left, c=c:
                             BINARY[op](c, n) if left else BINARY[op](n, c), a)
                try:
                    same(got, reference(op, x, y), ulp=op == "**")
                except AssertionError as e:
                    raise AssertionError("%r %s %s (left=%s): %s" % (c, op, t.__name__, left, e))
    (lt, ge) = run(lambda n: (3 > n, 3 <= n), a)  # reflected: n < 3, n >= 3
    same(lt, reference("<", a, np.full(a.shape, 3, np.int32)))
    same(ge, reference(">=", a, np.full(a.shape, 3, np.int32)))


@pytest.mark.parametrize("t", TYPES, ids=lambda t: t.__name__)
def test_unary(t):
    a = values(t, None)
    if t == np.bool_:
        (pos, inv) = run(lambda n: (+n, ~n), a)
        same(inv, ~a)  # logical not, as numpy's ~ on bool
        with pytest.raises(errors.Error, match="unary '-' on a bool operand"):
            run(lambda n: -n, a)
    elif KIND[t][0] == "f":
        (pos, neg) = run(lambda n: (+n, -n), a)
        same(neg, -a)
        with pytest.raises(errors.Error, match="'~' on a float"):
            run(lambda n: ~n, a)
    else:
        (pos, neg, inv) = run(lambda n: (+n, -n, ~n), a)
        with np.errstate(over="ignore"):
            same(neg, (0 - a.astype(np.uint64)).astype(t))  # wraps in its type
        same(inv, ~a)
    same(pos, a)


def test_broadcasting_as_dalis():
    rng = np.random.default_rng(5)
    cases = [((2, 1, 3), (4, 1)), ((1, 2), (3, 2)), ((1, 2), (3, 1)), ((480 // 40, 640 // 40, 3),
                                                                         (3,)), ((), (2, 2)),
             ((5,), (1,)),
             # rows longer than the CPU run's chunk (256), with a repeated last dim or middle dim
             ((2, 3, 600), (3, 1)), ((1, 700), (3, 1)), ((2, 1, 515), (1, 4, 515))]
    for sa, sb in cases:
        a = rng.integers(-50, 50, sa).astype(np.int16)
        b = rng.random(sb).astype(np.float32)
        got = run(lambda x, y: (x + y, x < y, y * x, x // 3 % y), a, b)
        with np.errstate(all="ignore"):
            want = [(a.astype(np.float32) + b), a.astype(np.float32) < b,
                    b * a.astype(np.float32),
                    np.fmod(np.trunc(a / 3).astype(np.int16).astype(np.float32), b)]
        for g, w in zip(got, want):
            assert g.shape == np.broadcast_shapes(sa, sb)
            np.testing.assert_array_equal(g, w)
    with pytest.raises(errors.Error, match="do not broadcast"):
        run(lambda x, y: x + y, np.zeros((2, 3), np.float32), np.zeros((4,), np.float32))
    # the integer path over the same shapes: uint8 wraps in uint8, & and - as numpy's
    for sa, sb in cases[-3:]:
        a = rng.integers(0, 256, sa).astype(np.uint8)
        b = rng.integers(0, 256, sb).astype(np.uint8)
        d, m = run(lambda x, y: (x - y, y & x), a, b)
        np.testing.assert_array_equal(d, a - b)
        np.testing.assert_array_equal(m, a & b)


def test_per_sample_shapes_and_empty_samples():
    """Each sample broadcasts on its own; an empty sample gives an empty result."""
    shapes = [(3, 2), (0, 2), (1, 2)]
    xs = [np.arange(np.prod(s), dtype=np.int32).reshape(s) for s in shapes]

    @pipeline_def(batch_size=3, num_threads=2, device_id=None)
    def pipe():
        x = fn.external_source(source=lambda: xs)
        return x * 2 == x + x, x % 2, (x > 1) | (x == 0)

    eq, mod, mix = pipe().run()
    for i, x in enumerate(xs):
        assert np.array(eq.at(i)).all() and np.array(eq.at(i)).shape == x.shape
        assert np.array(mod.at(i)).tolist() == (x % 2).tolist()
        assert np.array(mix.at(i)).tolist() == ((x > 1) | (x == 0)).tolist()


def test_constant_errors():
    a = np.arange(4, dtype=np.int32)
    with pytest.raises(ValueError, match="does not fit an int32"):
        run(lambda n: n + 2**40, a)
    with pytest.raises(TypeError):
        run(lambda n: n + "x", a)
    (got,) = run(lambda n: n & types.Constant(np.int64(6)), a)  # a typed constant is a node
    same(got, (a.astype(np.int64) & 6))
