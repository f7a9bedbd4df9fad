# SPDX-License-Identifier: Apache-2.0
"""Argument values: Python values checked and written in the pipeline syntax the C builder reads."""

import math

from . import errors
from . import types as _types

INT_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1


def c_text(v, what):
    """v as the library takes a string (UTF-8, NUL-terminated): refuses what it cannot carry."""
    if "\x00" in v:
        raise errors.InvalidArgumentError("%s: %r has a NUL character" % (what, v))
    try:
        return v.encode("utf-8")
    except UnicodeEncodeError as e:
        raise errors.InvalidArgumentError("%s: %r cannot be written in UTF-8 (%s)"
                                          % (what, v, e.reason)) from None


def checkpoint_bytes(v, what):
    """The bytes of a checkpoint given as bytes, bytearray, memoryview or any other buffer."""
    try:
        if isinstance(v, (str, int, float)) or v is None:
            raise TypeError
        return bytes(memoryview(v).cast("B"))
    except TypeError:
        raise errors.ArgumentTypeError("%s: a checkpoint is bytes (from checkpoint() or "
                                       "checkpoints()), not a %s" % (what, type(v).__name__)) \
            from None


def literal(v, what):
    """v in pipeline syntax (what the C builder reads)."""
    if v is None:
        return "None"
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, (_types.DALIDataType, _types.DALIImageType, _types.DALIInterpType)):
        return "types." + v.name
    if isinstance(v, int):
        return str(int(v))
    if isinstance(v, float):
        if not math.isfinite(v):
            raise errors.InvalidArgumentError("%s: %r is not a finite number" % (what, v))
        return repr(v)
    if isinstance(v, str):
        c_text(v, what)
        if "\\" not in v and '"' not in v:
            return '"%s"' % v
        if "\\" not in v and "'" not in v:
            return "'%s'" % v
        return '"%s"' % v.replace("\\", "\\\\").replace('"', '\\"')  # (the library's escapes)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(literal(x, what) for x in v) + "]"
    if isinstance(v, dict):  # readers.tfrecord's features: a list of [key, value] pairs
        return "[" + ", ".join("[%s, %s]" % (literal(k, what), literal(x, what))
                               for k, x in v.items()) + "]"
    if hasattr(v, "_sluice_literal"):  # tfrec.FixedLenFeature(...), tfrec.VarLenFeature(...)
        return v._sluice_literal(literal, what)
    if isinstance(v, type):
        raise errors.ArgumentTypeError("%s: cannot pass the type %s" % (what, v.__name__))
    if hasattr(v, "tolist"):  # numpy arrays and scalars
        return literal(v.tolist(), what)
    if hasattr(v, "__index__"):
        return str(v.__index__())
    if hasattr(v, "__float__"):
        return literal(float(v), what)
    raise errors.ArgumentTypeError("%s: cannot pass a %s" % (what, type(v).__name__))


def is_int(v):
    return (isinstance(v, int) and not isinstance(v, bool)) or (
        hasattr(v, "__index__") and not isinstance(v, (bool, float, type))
        and not hasattr(v, "lower") and getattr(v, "ndim", 0) == 0)


def is_num(v):
    return is_int(v) or isinstance(v, float) or (
        hasattr(v, "__float__") and not isinstance(v, (bool, str)))


def flat(v):
    if hasattr(v, "tolist") and not isinstance(v, (list, tuple, type)):
        v = v.tolist()
    return v


def type_ok(kind, v):
    """Does v fit an argument of this schema type? (the C side checks ranges and choices)"""
    v = flat(v)
    if kind == "bool":
        return isinstance(v, bool) or (is_int(v) and v in (0, 1))
    if kind == "int":  # (a bool is an int, as DALI takes mirror=False)
        return is_int(v) or isinstance(v, bool)
    if kind == "float":
        return is_num(v)
    if kind == "str":
        return isinstance(v, str)
    if kind == "dtype":
        return isinstance(v, (_types.DALIDataType, str))
    if kind == "enum":
        return isinstance(v, (str, _types.DALIImageType, _types.DALIInterpType,
                              _types.DALIDataType))
    if kind == "features":
        return isinstance(v, dict) and all(isinstance(k, str) and hasattr(x, "_sluice_literal")
                                           for k, x in v.items())
    if kind in ("ints", "floats", "strs"):
        item = {"ints": "int", "floats": "float", "strs": "str"}[kind]
        if isinstance(v, (list, tuple)):
            return all(type_ok(item, x) for x in v)
        return type_ok(item, v)
    return True
