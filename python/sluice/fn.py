# SPDX-License-Identifier: Apache-2.0
"""``sluice.fn``: every operator of the library, as DALI's ``nvidia.dali.fn`` has them
(``fn.readers.caffe2``, ``fn.decoders.image``, ``fn.crop_mirror_normalize``, ``fn.random.coin_flip``,
...). The functions are made at import time from the library's own operator table (the one
``sluice ops`` prints), so names, arguments, types and defaults are the library's; an op called with
an argument it does not take, or a value of the wrong type, raises TypeError naming both, and a
value the op refuses raises ValueError, at the line that called it."""

import difflib
import functools
import inspect
import os
import sys
import typing
import warnings

from . import _c, _debug, errors
from .external import external_source_call
from .python_function import FORMS as _pyfunc_forms, python_function_call
from . import types as _types
from ._graph import OpRecord
from ._deferred import defer_call, resolve
from ._state import current
from ._values import c_text, is_int, literal, type_ok
from .data_node import DataNode


class _Arg:
    __slots__ = ("name", "type", "type_doc", "default", "doc", "choices", "required", "per_sample",
                 "per_frame")

    def __init__(self, a):
        self.name = _c.u(a.name)
        self.type = _c.u(a.type)
        self.type_doc = _c.u(a.type_doc)
        self.default = _c.u(a.default)
        self.doc = _c.u(a.doc) or ""
        self.choices = _c.u(a.choices)
        self.required = bool(a.required)
        self.per_sample = bool(a.per_sample)
        self.per_frame = bool(a.per_frame)


class OpSchema:
    """An operator as the library describes it."""

    def __init__(self, info, args, common):
        self.name = _c.u(info.name)
        self.doc = _c.u(info.doc) or ""
        self.min_inputs, self.max_inputs = info.min_inputs, info.max_inputs
        self.devices = [d for bit, d in ((_c_bits[0], "cpu"), (_c_bits[1], "mixed"),
                                         (_c_bits[2], "gpu")) if info.devices & bit]
        self.is_reader, self.is_random = bool(info.is_reader), bool(info.is_random)
        self.sequences = bool(info.sequences)
        # DALI's other names for it (fn.image_decoder for fn.decoders.image): the same op
        self.aliases = [a for a in (_c.u(info.aliases) or "").split("|") if a]
        self.args = {a.name: a for a in args}
        self.common = {a.name: a for a in common if a.name not in self.args}

    def __repr__(self):
        return "OpSchema(%r)" % self.name


_c_bits = (1, 2, 4)


def _read_table():
    err = _c.Err()
    common = []
    for i in range(_c.lib.sl_op_num_common_args()):
        a = _c.OpArgInfo()
        errors.check(_c.lib.sl_op_common_arg(i, a, err), err)
        common.append(_Arg(a))
    ops = []
    for i in range(_c.lib.sl_op_count()):
        info = _c.OpInfo()
        errors.check(_c.lib.sl_op_get(i, info, err), err)
        args = []
        for k in range(info.num_args):
            a = _c.OpArgInfo()
            errors.check(_c.lib.sl_op_get_arg(info.name, k, a, err), err)
            args.append(_Arg(a))
        ops.append(OpSchema(info, args, common))
    return ops


def _enum_value(a, v, what):
    """v for an argument of a sluice.types enum, where v is an int: the enum's member of that
    value (DALI converts ints through the enum's constructor); v itself otherwise."""
    if not is_int(v) or isinstance(v, (_types.DALIDataType, _types.DALIImageType,
                                        _types.DALIInterpType)):
        return v
    if a.type == "dtype":
        cls = _types.DALIDataType
    elif a.type == "enum" and "RGB" in (a.choices or "").split("|"):
        cls = _types.DALIImageType
    elif a.type == "enum" and "INTERP_LINEAR" in (a.choices or "").split("|"):
        cls = _types.DALIInterpType
    else:
        return v
    try:
        return cls(int(v))
    except ValueError:
        raise errors.InvalidArgumentError("%s: %r is no %s" % (what, v, cls.__name__)) from None


def _fspath(v):
    """A path object (pathlib.Path, os.PathLike) where a string is taken, as its string (DALI
    takes them); a list of them, each."""
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    if isinstance(v, (list, tuple)) and any(isinstance(x, os.PathLike) for x in v):
        return [os.fspath(x) if isinstance(x, os.PathLike) else x for x in v]
    return v


def _is_input_set(x):
    """A list of op outputs as one input: DALI's input sets (the op applied to each)."""
    return isinstance(x, (list, tuple)) and any(isinstance(v, DataNode) for v in x)


def _input_sets(schema, inputs, kwargs, where):
    """The op applied to each input set, as DALI's: the lists given as inputs have one length n,
    the other inputs go to every set, and the result is a list of n results."""
    sizes = sorted({len(x) for x in inputs if _is_input_set(x)})
    if len(sizes) != 1:
        raise errors.InvalidArgumentError("%s: input sets (lists of op outputs) of different "
                                          "lengths %s" % (where, sizes))
    if kwargs.get("name") is not None and sizes[0] > 1:
        raise errors.InvalidArgumentError("%s: name=%r with %d input sets (each set is an op of "
                                          "its own; leave name out)"
                                          % (where, kwargs["name"], sizes[0]))
    return [_call(schema, [x[i] if _is_input_set(x) else x for x in inputs], dict(kwargs))
            for i in range(sizes[0])]


def _call(schema, inputs, kwargs):
    where = "fn." + schema.name
    run = _debug.active()
    if run is not None:  # debug mode: the op runs now, on the batches (sluice._debug)
        return run.call(where, lambda ins, kw: _call(schema, ins, kw), list(inputs), kwargs)
    pipe = current()
    if pipe is None:  # DALI allows it: the op is made where its outputs are used
        return defer_call(lambda: _call(schema, inputs, dict(kwargs)), where)
    g = pipe._graph
    inputs = [resolve(x) for x in resolve(list(inputs))]
    if any(_is_input_set(x) for x in inputs):
        return _input_sets(schema, inputs, kwargs, where)
    kwargs = {k: v.value.item() if isinstance(v, _types.ScalarConstant) else resolve(v)
              for k, v in kwargs.items()}
    flat = list(inputs)
    for k, x in enumerate(flat):
        # a number, a list of numbers or an array as an input is a constant, as DALI makes it
        # (types.Constant: Python's ints int32, floats float32; an array its type, 32-bit for 64)
        if not isinstance(x, DataNode) and (isinstance(x, (bool, int, float, list, tuple)) or
                                            hasattr(x, "__array_interface__")):
            flat[k] = x = resolve(_types.Constant(x))
        g.check_node(x, "%s: input %d" % (where, k))
    n = len(flat)
    if not schema.min_inputs <= n <= schema.max_inputs:
        want = (str(schema.min_inputs) if schema.min_inputs == schema.max_inputs
                else "%d or more" % schema.min_inputs if schema.max_inputs == 2**31 - 1
                else "%d to %d" % (schema.min_inputs, schema.max_inputs))
        raise errors.ArgumentTypeError("%s takes %s input%s, got %d" % (
            where, want, "" if want == "1" else "s", n))
    device = kwargs.pop("device", None)
    if device is not None and device not in ("cpu", "mixed", "gpu"):
        raise errors.InvalidArgumentError("%s: device=%r (cpu, mixed or gpu)" % (where, device))
    # a placement DALI has not (a reader or a decoder on "gpu", "mixed" for a plain op) is
    # refused here; one DALI has but sluice runs on the CPU only (coord_flip on "gpu") is the
    # library's to decide: on a CPU pipeline it runs there, as every gpu op does, and on a CUDA
    # one it runs on the CPU with its outputs copied to the GPU, given CPU inputs
    dali_has = device is None or device in schema.devices or (
        device == "gpu" and not (schema.is_reader and schema.name != "readers.numpy") and
        "mixed" not in schema.devices)
    if not dali_has:
        raise errors.InvalidArgumentError("%s: device=%r, but it runs on %s" % (
            where, device, ", ".join(schema.devices)))
    to_gpu = device == "gpu" and "gpu" in schema.devices
    if to_gpu or (device is None and any(x._gpu for x in flat)):
        # a CPU input of an op on the GPU goes there first, as DALI does it
        flat = [x.gpu() if not x._gpu else x for x in flat]
    instance = kwargs.pop("name", None)
    if instance is not None and not isinstance(instance, str):
        raise errors.ArgumentTypeError("%s: name=%r (a string)" % (where, instance))
    if instance is not None:
        if not instance:
            raise errors.InvalidArgumentError("%s: name='' (a name has at least one character)"
                                              % where)
        c_text(instance, "%s: name" % where)
    args, arg_nodes = [], []
    for key, v in kwargs.items():
        a = schema.args.get(key) or schema.common.get(key)
        if a is None:
            names = list(schema.args) + list(schema.common)
            close = difflib.get_close_matches(key, names, 1)
            raise errors.ArgumentTypeError("%s got an unexpected argument '%s'%s" % (
                where, key, "; did you mean '%s'?" % close[0] if close else ""))
        what = "%s: argument '%s'" % (where, key)
        if a.per_sample and a.type in ("ints", "floats") and getattr(v, "ndim", 0) > 1 and \
                hasattr(v, "__array_interface__"):
            # an array of more than one dim for a per-sample list argument: a constant tensor
            # given to every sample (DALI makes it a Constant node, as here); a scalar
            # argument still refuses it ("cannot be converted")
            v = resolve(_types.Constant(v))
        if isinstance(v, DataNode):
            if not a.per_sample:
                raise errors.ArgumentTypeError("%s takes %s, not an op output (it is not a "
                                               "per-sample argument)" % (what, a.type_doc))
            g.check_node(v, what)
            arg_nodes.append((key, v))
            continue
        if v is None:
            continue  # the default, as DALI
        v = _enum_value(a, v, what)
        if a.type in ("str", "strs"):
            v = _fspath(v)
        if a.type == "str" and not isinstance(v, str):
            v = str(v)  # as DALI's Python layer converts it: the op judges what it names
        if not type_ok(a.type, v):
            # (DALI's words "cannot be converted" close it: its tests match them)
            raise errors.ArgumentTypeError("%s takes %s, got %s %r: it cannot be converted to %s"
                                           % (what, a.type_doc, type(v).__name__, v, a.type_doc))
        args.append((key, literal(v, what)))
    given = set(kwargs)
    for a in schema.args.values():
        if a.required and a.name not in given:
            raise errors.ArgumentTypeError("%s: missing required argument '%s' (%s)" % (
                where, a.name, a.type_doc))
    rec = OpRecord(schema.name, flat, device, args, arg_nodes, instance)
    nodes = g.add_op(rec)
    if schema.is_reader:
        g.readers.append((instance or schema.name, rec))
    if schema.name == "readers.tfrecord":  # as DALI: the outputs by feature name
        return dict(zip(kwargs["features"], nodes))
    return nodes[0] if len(nodes) == 1 else nodes


_HINTS = {"bool": bool, "int": int, "float": float, "str": str, "dtype": _types.DALIDataType,
          "ints": typing.Union[int, typing.Sequence[int]],
          "floats": typing.Union[float, typing.Sequence[float]],
          "strs": typing.Union[str, typing.Sequence[str]], "features": dict}


def _hint(a):
    """An argument's type hint, from its schema type; a DataNode too where it is per-sample."""
    choices = (a.choices or "").split("|")
    hint = (_types.DALIImageType if a.type == "enum" and "RGB" in choices else
            _types.DALIInterpType if a.type == "enum" and "INTERP_LINEAR" in choices else
            str if a.type == "enum" else _HINTS.get(a.type, typing.Any))
    return typing.Union[hint, DataNode] if a.per_sample else hint


def _make(schema):
    def op(*inputs, **kwargs):
        return _call(schema, inputs, kwargs)

    short = schema.name.rsplit(".", 1)[-1]
    op.__name__ = short
    op.__qualname__ = schema.name
    op.__module__ = __name__
    lines = [schema.doc, "", "Runs on: %s." % ", ".join(schema.devices)]
    if schema.sequences:
        lines.append("Takes sequences (layout F...) frame by frame; a per-frame argument "
                     "(fn.per_frame) has one value per frame.")
    lines += ["", "Arguments:"]
    params = [inspect.Parameter("inputs", inspect.Parameter.VAR_POSITIONAL, annotation=DataNode)]
    extra = [a for k, a in schema.common.items() if k not in schema.args]
    for a in list(schema.args.values()) + extra:
        default = "required" if a.required else "default %s" % (a.default or "None")
        lines.append("  %s (%s%s%s; %s): %s" % (a.name, a.type_doc,
                                                 ", per-sample" if a.per_sample else "",
                                                 ", per-frame" if a.per_frame else "", default,
                                                 a.doc))
        params.append(inspect.Parameter(a.name, inspect.Parameter.KEYWORD_ONLY,
                                        default=inspect.Parameter.empty if a.required else None,
                                        annotation=_hint(a) if a.required else
                                        typing.Optional[_hint(a)]))
    op.__doc__ = "\n".join(lines)
    # the outputs' nodes: one, a list of several, or readers.tfrecord's dict by feature name
    ret = typing.Dict[str, DataNode] if schema.name == "readers.tfrecord" else \
        typing.Union[DataNode, typing.List[DataNode]]
    op.__signature__ = inspect.Signature(params, return_annotation=ret)
    op.__annotations__ = dict({p.name: p.annotation for p in params[1:]}, inputs=DataNode,
                              **{"return": ret})
    op.schema = schema
    return op


class _Namespace:
    """fn.readers, fn.decoders, fn.random: ops grouped by the first part of their name."""

    def __init__(self, name):
        self.__name__ = name

    def __repr__(self):
        return "<sluice.fn namespace %s: %s>" % (self.__name__, ", ".join(
            k for k in vars(self) if not k.startswith("_")))

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise _unknown_op("%s.%s" % (self.__name__, name))


def _unknown_op(name):
    """The error for fn.<name>, an op the library does not have, with the closest names."""
    close = difflib.get_close_matches(name, list(schemas) + list(_ALIASES), 3, 0.6)
    return AttributeError("sluice has no operator fn.%s%s (`sluice ops` lists them all)" % (
        name, "; did you mean %s?" % " or ".join("fn." + c for c in close) if close else ""))


def __getattr__(name):  # (module attributes that do not exist: an unknown op)
    if name.startswith("__"):
        raise AttributeError(name)
    raise _unknown_op(name)


def _place(name, f):
    """f as fn.<name>, making the namespaces of a dotted name (fn.readers, fn.experimental)."""
    parts = name.split(".")
    target = sys.modules[__name__]
    for p in parts[:-1]:
        ns = vars(target).get(p)
        if ns is None:
            ns = _Namespace(p)
            setattr(target, p, ns)
        target = ns
    setattr(target, parts[-1], f)


def deprecated_name(module, old, new):
    """DALI's warning for a deprecated name of an op (fn.image_decoder, ops.ImageDecoder)."""
    warnings.warn("WARNING: `sluice.%s.%s` is now deprecated. Use `sluice.%s.%s` instead."
                  % (module, old, module, new), DeprecationWarning, stacklevel=3)


def _deprecated(alias, f, name):
    """f under one of DALI's deprecated flat names: it warns as DALI's does, then is f."""
    @functools.wraps(f)
    def call(*args, **kwargs):
        deprecated_name("fn", alias, name)
        return f(*args, **kwargs)
    return call


schemas = {}
_ALIASES = {}  # alias -> the op's name, from the library's table
for _schema in _read_table():
    schemas[_schema.name] = _schema
    _f = (external_source_call(_schema) if _schema.name == "external_source" else
          python_function_call(_schema) if _schema.name in _pyfunc_forms else _make(_schema))
    _place(_schema.name, _f)
    for _name in _schema.aliases:  # experimental.* names are not deprecated; the flat ones are
        _place(_name, _f if "." in _name else _deprecated(_name, _f, _schema.name))
    _ALIASES.update((a, _schema.name) for a in _schema.aliases)
del _schema, _f, _name

# `import sluice.fn.transforms as T` (DALI's nvidia.dali.fn.transforms, fn.readers, ...) finds the
# namespaces as modules
for _k, _v in list(vars(sys.modules[__name__]).items()):
    if isinstance(_v, _Namespace):
        sys.modules["%s.%s" % (__name__, _k)] = _v
del _k, _v


def aliases():
    """DALI's other names of ops that sluice.fn has (deprecated ones, which warn as DALI's do, and
    experimental.* names), and the op each stands for."""
    return dict(_ALIASES)


def op_names():
    """Every operator's name, as `sluice ops` lists them."""
    return sorted(schemas)
