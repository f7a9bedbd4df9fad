# SPDX-License-Identifier: Apache-2.0
"""DALI's mathematical functions (``nvidia.dali.math``): ``math.clamp(images, 0, 255)``,
``math.sqrt(x)``, ``math.pow(x, 2)``, ... Each takes op outputs, ``types.Constant`` nodes or plain
Python numbers (made int32 or float32 constants on the device of the op output beside them), at
least one an op output, and is the library's ``math.*`` operator (``fn.math.*``): element-wise,
with numpy-style broadcasting and DALI's result types."""

from . import errors


def _call(name, *args):
    from . import fn
    from . import types
    from ._deferred import resolve
    from .data_node import DataNode
    args = [resolve(a) for a in args]  # a types.Constant of a number is a (typed) node here
    nodes = [a for a in args if isinstance(a, DataNode)]
    if not nodes:
        raise errors.ArgumentTypeError("math.%s: at least one argument must be an op output "
                                       "(got %s)" % (name, ", ".join(type(a).__name__
                                                                     for a in args)))
    device = "gpu" if any(n.device == "gpu" for n in nodes) else "cpu"
    ins = []
    for a in args:
        if isinstance(a, DataNode):
            ins.append(a.gpu() if device == "gpu" and a.device != "gpu" else a)
        elif isinstance(a, (bool, int, float)):
            ins.append(types.Constant(a, device=device))
        else:
            raise errors.ArgumentTypeError("math.%s: %r is neither an op output nor a number "
                                           "(wrap arrays in types.Constant)" % (name, a))
    return getattr(fn.math, name)(*ins)


def _unary(name):
    def f(value):
        return _call(name, value)
    f.__name__ = name
    f.__doc__ = "math.%s of value, element by element (fn.math.%s)." % (name, name)
    return f


def _binary(name):
    def f(left, right):
        return _call(name, left, right)
    f.__name__ = name
    f.__doc__ = "math.%s of left and right, element by element (fn.math.%s)." % (name, name)
    return f


for _n in ("sqrt", "rsqrt", "cbrt", "exp", "log", "log2", "log10", "sin", "cos", "tan", "asin",
           "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "fabs", "floor",
           "ceil", "abs"):
    globals()[_n] = _unary(_n)
for _n in ("pow", "fpow", "atan2", "min", "max"):
    globals()[_n] = _binary(_n)
del _n


def clamp(value, lo, hi):
    """value clamped to [lo, hi], element by element, in the promoted type (fn.math.clamp)."""
    return _call("clamp", value, lo, hi)
