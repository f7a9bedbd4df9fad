# SPDX-License-Identifier: Apache-2.0
"""TFRecord feature specifications for ``fn.readers.tfrecord(features={...})``, as DALI's
``nvidia.dali.tfrecord`` (``import sluice.tfrecord as tfrec``)::

    inputs = fn.readers.tfrecord(path="train.tfrecord", index_path="train.idx", features={
        "image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
        "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1)})
    jpegs, labels = inputs["image/encoded"], inputs["image/class/label"]

The reader gives one output per feature, in the dict's order; the Python call returns them as a
dict keyed by feature name, as DALI does. docs/readers.md has the rules (shapes, defaults)."""

from . import errors


class _Dtype:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "tfrec." + self.name


string = _Dtype("string")
int64 = _Dtype("int64")
float32 = _Dtype("float32")


def _check_dtype(d):
    if not isinstance(d, _Dtype):
        raise errors.ArgumentTypeError(
            "a feature's dtype is tfrec.string, tfrec.int64 or tfrec.float32, not %r" % (d,))
    return d


def _shape(s, what):
    if hasattr(s, "__index__") and not isinstance(s, bool):
        return [s.__index__()]
    if isinstance(s, (list, tuple)) and all(hasattr(x, "__index__") and not isinstance(x, bool)
                                            for x in s):
        return [x.__index__() for x in s]
    raise errors.ArgumentTypeError("%s must be a list of integers, not %r" % (what, s))


class _Feature:
    __slots__ = ("kind", "shape", "dtype", "default_value")

    def _args(self):
        a = [] if self.shape is None else [self.shape]
        return a + [self.dtype, self.default_value]

    def __repr__(self):
        return "tfrec.%s(%s)" % (self.kind, ", ".join(repr(x) for x in self._args()))

    def __eq__(self, o):
        return isinstance(o, _Feature) and repr(o) == repr(self)

    def __hash__(self):
        return hash(repr(self))

    def _sluice_literal(self, literal, what):
        """[kind, (shape), dtype, default] in pipeline syntax, as the C builder reads it"""
        items = ["tfrec." + self.kind]
        if self.shape is not None:
            items.append(literal(self.shape, what))
        items.append("tfrec." + self.dtype.name)
        items.append(literal(self.default_value, what))
        return "[" + ", ".join(items) + "]"


class FixedLenFeature(_Feature):
    """A feature of a known shape (``()`` or ``[]``: one value); tfrec.string takes ``()``."""

    def __init__(self, shape, dtype, default_value):
        self.kind = "FixedLenFeature"
        self.shape = _shape(shape, "FixedLenFeature's shape")
        self.dtype = _check_dtype(dtype)
        self.default_value = default_value


class VarLenFeature(_Feature):
    """A feature of any number of values: ``VarLenFeature(dtype, default_value)``, or with a
    partial shape (the dimensions after the first), ``VarLenFeature(partial_shape, dtype,
    default_value)``."""

    def __init__(self, *args, **kw):
        names = ("partial_shape", "dtype", "default_value")
        if len(args) == 2 and "partial_shape" not in kw:
            args = (None,) + args
        vals = dict(zip(names, args))
        for k, v in kw.items():
            if k not in names or k in vals:
                raise errors.ArgumentTypeError("VarLenFeature: unexpected or repeated '%s'" % k)
            vals[k] = v
        if "dtype" not in vals or "default_value" not in vals:
            raise errors.ArgumentTypeError(
                "VarLenFeature takes ([partial_shape,] dtype, default_value)")
        self.kind = "VarLenFeature"
        ps = vals.get("partial_shape")
        self.shape = None if ps is None else _shape(ps, "VarLenFeature's partial_shape")
        self.dtype = _check_dtype(vals["dtype"])
        self.default_value = vals["default_value"]


__all__ = ["FixedLenFeature", "VarLenFeature", "string", "int64", "float32"]
