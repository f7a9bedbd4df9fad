# SPDX-License-Identifier: Apache-2.0
"""DataNode: the symbolic output of an op in a pipeline being defined (nvidia.dali.data_node)."""

import typing

from . import _c
from ._values import is_int


class NewAxis:
    """A new dim of extent 1 in a subscript: `x[sluice.newaxis]` (DALI's `dali.newaxis`, numpy's
    `None`); called with a layout letter it names the dim, `image[sluice.newaxis("F")]` (layout
    FHWC)."""

    __slots__ = ("layout",)

    def __init__(self, layout: typing.Optional[str] = None):
        if layout is not None and (not isinstance(layout, str) or len(layout) != 1):
            raise ValueError("newaxis(%r): a new dim's layout name is one character" % (layout,))
        self.layout = layout

    def __call__(self, layout: typing.Optional[str] = None) -> "NewAxis":
        return NewAxis(layout)

    def __repr__(self):
        return "newaxis" if self.layout is None else "newaxis(%r)" % self.layout


newaxis = NewAxis()


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
    def device(self) -> str:
        """Where the op's output will be: "cpu" or "gpu"."""
        return "gpu" if self._gpu else "cpu"

    def gpu(self) -> "DataNode":
        """This data on the GPU (a copy made by the pipeline; on a CPU pipeline the same data)."""
        return self._graph.transfer(self, _c.DEVICE_CUDA)

    def cpu(self) -> "DataNode":
        """This data on the CPU (a copy made by the pipeline when it is on the GPU)."""
        return self._graph.transfer(self, _c.DEVICE_CPU)

    def shape(self, *, dtype: typing.Any = None, device: str = "cpu") -> "DataNode":
        """Each sample's shape, as a node (DALI's DataNode.shape(): the `shapes` op)."""
        from . import fn
        return fn.shapes(self, device=device, **({} if dtype is None else {"dtype": dtype}))

    def property(self, key: str, *, device: str = "cpu") -> "DataNode":
        """A property of each sample as uint8 bytes, as a node (DALI's DataNode.property():
        fn.get_property): key "source_info" (where the sample came from) or "layout"."""
        from . import fn
        return fn.get_property(self, key=key, device=device)

    def source_info(self, *, device: str = "cpu") -> "DataNode":
        """Each sample's source info as uint8 bytes, as a node: self.property("source_info")."""
        return self.property("source_info", device=device)

    def __repr__(self):
        return "DataNode(name=%r, device=%r)" % (self.name, self.device)

    def __bool__(self):
        raise TypeError("%s is data that exists only when the pipeline runs: it has no truth "
                        "value at definition time (to branch on it per sample, define the pipeline with "
                        "@pipeline_def(enable_conditionals=True))"
                        % self.name)

    # One op output is not iterable, and says so to `isinstance(x, collections.abc.Iterable)`,
    # which DALI programs use to tell one output from several (`set_outputs(*out)` if iterable);
    # a defined __iter__ (even one that raises) made it look iterable. None also keeps Python
    # from iterating through __getitem__: unpacking is a TypeError ("cannot unpack
    # non-iterable DataNode object").
    __iter__ = None

    def __getitem__(self, index):
        """Per-sample indexing and slicing, as DALI's (`x[1:, :-1, 2]`): the tensor_subscript
        op. Each index, slice start, stop and step is a Python int or an op output giving one
        integer per sample (`table[idx]`, `x[lo:, ::step]`, as DALI's runtime indexing; as the
        op's argument inputs at_k, lo_k, hi_k, step_k); `sluice.newaxis` (or None) adds a dim of
        extent 1, `...` stands for the dims the other subscripts leave."""
        from . import fn
        from ._deferred import Deferred
        items = index if isinstance(index, tuple) else (index,)
        mode, lo, hi, step, names, per_sample = [], [], [], [], "", {}

        def part(x, k, which, what, none):
            """x's constant (none when x is None), or a placeholder with x as `which`_k"""
            if isinstance(x, Deferred):
                x = x.node()
            if isinstance(x, DataNode):
                per_sample["%s_%d" % (which, k)] = x
                return none if none is not None else 0
            if x is None:
                return none
            if not is_int(x):
                raise TypeError("%s: slice bounds are ints or op outputs (not supported: %s)"
                                % (what, type(x).__name__))
            return int(x)

        for k, x in enumerate(items):
            what = "%s[...]: subscript %d" % (self.name, k)
            if isinstance(x, Deferred):
                x = x.node()
            if isinstance(x, slice):
                start = part(x.start, k, "lo", what, None)
                stop = part(x.stop, k, "hi", what, None)
                mode.append((start is None) * 1 + (stop is None) * 2)
                lo.append(0 if start is None else start)
                hi.append(0 if stop is None else stop)
                step.append(part(x.step, k, "step", what, 1))
                continue
            lo.append(0)
            hi.append(0)
            step.append(1)
            if is_int(x) or isinstance(x, DataNode):
                mode.append(4)
                lo[-1] = part(x, k, "at", what, None)
            elif x is None or isinstance(x, NewAxis):
                mode.append(16)
                names += "*" if x is None or x.layout is None else x.layout
            elif x is Ellipsis:
                if 32 in mode:
                    raise IndexError("%s: an index can only have a single ellipsis ('...')"
                                     % what)
                mode.append(32)
            else:
                raise TypeError("%s: an int, an op output, a slice of them, newaxis or ... (not "
                                "supported: %s)" % (what, type(x).__name__))
        extra = {"names": names} if names.strip("*") else {}
        extra.update(per_sample)
        return fn.tensor_subscript(self, mode=mode, lo=lo, hi=hi, step=step, **extra)

    __hash__ = object.__hash__

    # DALI's mathematical expressions: the `arithmetic` op (docs/python.md, "Expressions")
    def _arith(self, other, op, left=False):
        from . import fn, types
        from ._deferred import Deferred
        if isinstance(other, types.ScalarConstant) and other.dtype in (types.INT32, types.FLOAT):
            other = other.value.item()  # a constant of the arithmetic op, as a Python number is
        elif isinstance(other, Deferred):
            other = other.node()
        if isinstance(other, (list, tuple)):  # a constant tensor, as DALI's: int32 or float32
            import numpy as np
            arr = np.asarray(other)
            if arr.dtype.kind not in "biuf":
                return NotImplemented
            other = arr.astype(np.int32 if arr.dtype.kind in "biu" else np.float32)
        if isinstance(other, DataNode):
            a, b = (other, self) if left else (self, other)
            if a._gpu != b._gpu:  # a CPU operand goes to the GPU, as DALI's expressions
                a, b = a.gpu(), b.gpu()
            return fn.arithmetic(a, b, op=op)
        if getattr(other, "ndim", 0):
            if getattr(other, "size", 0) != 1:  # an array: a constant tensor, as DALI's
                return self._arith(types.Constant(other), op, left)
            other = other.reshape(()).item()  # a one-element array: its value
        if isinstance(other, bool) or type(other).__name__ == "bool_":
            other, ctype = bool(other), "bool"  # Python's bool: a bool constant, as DALI
        elif is_int(other):  # Python and numpy integers: an int32 constant, as DALI
            other, ctype = int(other.__index__()), "int32"
        else:
            if isinstance(other, (str, bytes)) or not hasattr(other, "__float__"):
                return NotImplemented
            other, ctype = float(other), "float32"
        if ctype == "int32" and not -2**31 <= other < 2**31:
            raise ValueError("%s: the constant %d does not fit an int32 (DALI's type for a Python "
                             "int); wrap it in types.Constant(..., dtype=types.INT64)"
                             % (self.name, other))
        return fn.arithmetic(self, op=op, constant=float(other), constant_type=ctype,
                             constant_left=left)

    def _binary(op):  # noqa: N805 (called in the class body, not a method)
        def f(self, o):
            return self._arith(o, op)

        def r(self, o):
            return self._arith(o, op, True)
        return f, r

    __add__, __radd__ = _binary("add")
    __sub__, __rsub__ = _binary("sub")
    __mul__, __rmul__ = _binary("mul")
    __truediv__, __rtruediv__ = _binary("fdiv")
    __floordiv__, __rfloordiv__ = _binary("div")
    __mod__, __rmod__ = _binary("mod")
    __pow__, __rpow__ = _binary("pow")
    __and__, __rand__ = _binary("bitand")
    __or__, __ror__ = _binary("bitor")
    __xor__, __rxor__ = _binary("bitxor")
    __lshift__, __rlshift__ = _binary("lshift")
    __rshift__, __rrshift__ = _binary("rshift")
    # comparisons give bool nodes (a constant on the left arrives reflected: 3 < x is x > 3)
    __eq__ = _binary("eq")[0]
    __ne__ = _binary("neq")[0]
    __lt__ = _binary("lt")[0]
    __le__ = _binary("leq")[0]
    __gt__ = _binary("gt")[0]
    __ge__ = _binary("geq")[0]
    del _binary

    def __neg__(self):
        from . import fn
        return fn.arithmetic(self, op="minus")

    def __pos__(self):
        from . import fn
        return fn.arithmetic(self, op="plus")

    def __invert__(self):
        from . import fn
        return fn.arithmetic(self, op="invert")
