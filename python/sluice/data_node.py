# SPDX-License-Identifier: Apache-2.0
"""DataNode: the symbolic output of an op in a pipeline being defined (nvidia.dali.data_node)."""

from . import _c
from ._values import is_int


class DataNode:
    """A symbolic output of an op in a pipeline being defined (DALI's DataNode)."""

    __slots__ = ("_graph", "_id", "_gpu", "name", "__weakref__")

    # numpy arrays and scalars on the left of an operator defer to the node's reflected operator
    # (instead of making an object array of nodes)
    __array_ufunc__ = None

    def __init__(self, graph, ident, gpu, name):
        self._graph = graph
        self._id = ident
        self._gpu = gpu
        self.name = name

    @property
    def device(self):
        return "gpu" if self._gpu else "cpu"

    def gpu(self):
        """This data on the GPU (a copy made by the pipeline; on a CPU pipeline the same data)."""
        return self._graph.transfer(self, _c.DEVICE_CUDA)

    def cpu(self):
        return self._graph.transfer(self, _c.DEVICE_CPU)

    def shape(self, *, dtype=None, device="cpu"):
        """Each sample's shape, as a node (DALI's DataNode.shape(): the `shapes` op)."""
        from . import fn
        return fn.shapes(self, device=device, **({} if dtype is None else {"dtype": dtype}))

    def __repr__(self):
        return "DataNode(name=%r, device=%r)" % (self.name, self.device)

    def __bool__(self):
        raise TypeError("%s is data that exists only when the pipeline runs: it has no truth "
                        "value at definition time (branch on Python values, not on op outputs)"
                        % self.name)

    def __iter__(self):
        raise TypeError("%s is one op output: it cannot be unpacked or iterated" % self.name)

    def __getitem__(self, index):
        """Per-sample indexing and slicing, as DALI's (`x[1:, :-1, 2]`): the tensor_subscript
        op. Indices and bounds are Python ints; an op output as an index, `...` and `None` are
        not supported."""
        from . import fn
        items = index if isinstance(index, tuple) else (index,)
        mode, lo, hi, step = [], [], [], []
        for k, x in enumerate(items):
            what = "%s[...]: subscript %d" % (self.name, k)
            if isinstance(x, slice):
                for part in (x.start, x.stop, x.step):
                    if part is not None and not is_int(part):
                        raise TypeError("%s: slice bounds are ints (not supported: %s)"
                                        % (what, type(part).__name__))
                if x.step is not None and int(x.step) == 0:
                    raise ValueError("%s: a slice's step cannot be 0" % what)
                mode.append((x.start is None) * 1 + (x.stop is None) * 2)
                lo.append(0 if x.start is None else int(x.start))
                hi.append(0 if x.stop is None else int(x.stop))
                step.append(1 if x.step is None else int(x.step))
            elif is_int(x):
                mode.append(4)
                lo.append(int(x))
                hi.append(0)
                step.append(1)
            else:
                raise TypeError("%s: an int or a slice of ints (not supported: %s)"
                                % (what, "an op output" if isinstance(x, DataNode)
                                   else type(x).__name__))
        return fn.tensor_subscript(self, mode=mode, lo=lo, hi=hi, step=step)

    def _refuse_comparison(sym):  # noqa: N805 (called in the class body, not a method)
        def compare(self, other):
            raise TypeError("%s %s %s: comparisons of op outputs are not supported (the "
                            "arithmetic op has + - * / and unary -)"
                            % (self.name, sym, type(other).__name__))
        return compare

    __eq__, __ne__ = _refuse_comparison("=="), _refuse_comparison("!=")
    __lt__, __le__ = _refuse_comparison("<"), _refuse_comparison("<=")
    __gt__, __ge__ = _refuse_comparison(">"), _refuse_comparison(">=")
    del _refuse_comparison

    __hash__ = object.__hash__

    # arithmetic: the `arithmetic` op, as DALI's expressions
    def _arith(self, other, op, left=False):
        from . import fn, types
        from ._deferred import Deferred
        if isinstance(other, types.ScalarConstant) and other.dtype in (types.INT32, types.FLOAT):
            other = other.value.item()  # a constant of the arithmetic op, as a Python number is
        elif isinstance(other, Deferred):
            other = other.node()
        if isinstance(other, DataNode):
            a, b = (other, self) if left else (self, other)
            return fn.arithmetic(a, b, op=op)
        if getattr(other, "ndim", 0):
            if getattr(other, "size", 0) != 1:
                raise TypeError("%s with a %s of shape %s: the constant of an arithmetic op is one "
                                "number (or a one-element array)" % (
                                    self.name, type(other).__name__, tuple(other.shape)))
            other = other.reshape(()).item()  # a one-element array: its value
        if is_int(other):  # Python and numpy integers: an int32 constant, as DALI
            other = int(other.__index__())
        elif isinstance(other, bool) or not isinstance(other, (int, float)):
            try:
                other = float(other)
            except (TypeError, ValueError):
                return NotImplemented
        ctype = "int32" if isinstance(other, int) and not isinstance(other, bool) else "float32"
        return fn.arithmetic(self, op=op, constant=float(other), constant_type=ctype,
                             constant_left=left)

    def __add__(self, o):
        return self._arith(o, "add")

    def __radd__(self, o):
        return self._arith(o, "add", True)

    def __sub__(self, o):
        return self._arith(o, "sub")

    def __rsub__(self, o):
        return self._arith(o, "sub", True)

    def __mul__(self, o):
        return self._arith(o, "mul")

    def __rmul__(self, o):
        return self._arith(o, "mul", True)

    def __truediv__(self, o):
        return self._arith(o, "fdiv")

    def __rtruediv__(self, o):
        return self._arith(o, "fdiv", True)

    def __floordiv__(self, o):
        return self._arith(o, "div")

    def __rfloordiv__(self, o):
        return self._arith(o, "div", True)

    def __neg__(self):
        from . import fn
        return fn.arithmetic(self, op="minus")

    def __pos__(self):
        return self
