# SPDX-License-Identifier: Apache-2.0
"""DALI's legacy operator API, ``nvidia.dali.ops``: an op is an object made with its arguments
(``ops.Resize(resize_shorter=256, device="gpu")``) and called on its inputs inside a pipeline's
definition (``self.resize(images)``, in a Pipeline subclass's ``define_graph``), with per-sample
arguments given at the call (``self.flip(images, horizontal=self.coin())``).

Every operator of ``sluice.fn`` is here under DALI's class name: the last part of its name in
CamelCase, in the same namespaces (``ops.readers.Caffe2``, ``ops.decoders.Image``,
``ops.random.CoinFlip``, ``ops.CropMirrorNormalize``), and DALI's older names
(``ops.FileReader``, ``ops.ImageDecoder``, ``ops.CoinFlip``, ...; making one warns, as DALI's
deprecated names do). Calling one is calling the
``fn`` function with the object's arguments and the call's, so the checks and errors are fn's."""

import inspect
import sys

from . import errors
from . import fn as _fn
from .data_node import DataNode

# the CamelCase of names whose DALI spelling is not the plain rule
_SPECIAL = {"tfrecord": "TFRecord", "mxnet": "MXNet", "coco": "COCO", "mnist": "MNIST",
            "dl_tensor_python_function": "DLTensorPythonFunction",
            "random_bbox_crop": "RandomBBoxCrop", "bbox_paste": "BBoxPaste",
            "random_object_bbox": "RandomObjectBBox"}


def _camel(snake):
    if snake in _SPECIAL:
        return _SPECIAL[snake]
    return "".join(p[:1].upper() + p[1:] for p in snake.split("_"))


class _Operator:
    """One op of the legacy API: its arguments, given when it is made, and a call on inputs."""

    _schema = None  # set on each generated class
    _fn_name = None

    def __init__(self, **kwargs):
        self._kwargs = dict(kwargs)
        self.device = kwargs.get("device", "cpu")
        # an argument the op does not take is refused here, when the object is made, as DALI's
        names = set(inspect.signature(_resolve(self._fn_name)).parameters) | {"device", "name"}
        for k in kwargs:
            if k not in names:
                raise errors.ArgumentTypeError("ops.%s got an unexpected argument '%s'%s" % (
                    type(self).__name__, k, _close(k, names)))

    @property
    def schema(self):
        """The operator's argument schema (as sluice.fn's)."""
        return self._schema

    @property
    def spec(self):
        """The arguments this instance was made with (DALI's OpSpec, as a dict)."""
        return self._kwargs

    def __call__(self, *inputs, **kwargs):
        args = dict(self._kwargs)
        for k, v in kwargs.items():
            if v is None and k in args:  # None at the call is "not given" (DALI's rule): the
                continue  # value the object was made with stays
            args[k] = v
        return _resolve(self._fn_name)(*inputs, **args)

    def __repr__(self):
        return "ops.%s(%s)" % (type(self).__name__, ", ".join(
            "%s=%r" % kv for kv in self._kwargs.items()))


def _close(key, names):
    import difflib
    c = difflib.get_close_matches(key, sorted(names), 1)
    return "; did you mean '%s'?" % c[0] if c else ""


def _resolve(name):
    f = _fn
    for part in name.split("."):
        f = getattr(f, part)
    return f


class _Namespace:
    """ops.readers, ops.decoders, ops.random."""

    def __init__(self, name):
        self.__name__ = name

    def __repr__(self):
        return "<sluice.ops namespace %s>" % self.__name__

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise _unknown("%s.%s" % (self.__name__, name))


def _unknown(name):
    import difflib
    close = difflib.get_close_matches(name, _names, 3, 0.6)
    return AttributeError("sluice has no operator ops.%s%s" % (
        name, "; did you mean %s?" % " or ".join("ops." + c for c in close) if close else ""))


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise _unknown(name)


_names = []  # every ops name, for the did-you-mean


def _make_class(fn_name, class_name):
    schema = _fn.schemas.get(fn_name)
    cls = type(class_name, (_Operator,), {
        "_schema": schema, "_fn_name": fn_name,
        "__doc__": "DALI's ops.%s: fn.%s as an object.\n\n%s" % (
            class_name, fn_name, _resolve(fn_name).__doc__ or ""),
        "__module__": __name__})
    return cls


_module = sys.modules[__name__]
# every op by its name, and by its namespaced aliases (ops.experimental.decoders.Image is
# decoders.image as ops.decoders.Image is); the flat ones are DALI's fn spellings only
for _alias, _name in [(n, n) for n in _fn.op_names()] + sorted(
        (a, n) for a, n in _fn.aliases().items() if "." in a):
    _parts = _alias.split(".")
    _target = _module
    for _p in _parts[:-1]:
        _ns = vars(_target).get(_p)
        if _ns is None:
            _ns = _Namespace(_p)
            setattr(_target, _p, _ns)
        _target = _ns
    _cname = _camel(_parts[-1])
    if _cname in vars(_target):
        continue
    setattr(_target, _cname, _make_class(_name, _cname))
    _names.append(".".join(_parts[:-1] + [_cname]))


class _ExternalSourceOp(_Operator):
    """DALI's ops.ExternalSource also takes its source and num_outputs by position
    (``ops.ExternalSource(lambda: batch)``); every other op takes keywords only."""

    def __init__(self, source=None, num_outputs=None, **kwargs):
        if source is not None:
            kwargs["source"] = source
        if num_outputs is not None:
            kwargs["num_outputs"] = num_outputs
        super().__init__(**kwargs)


if "external_source" in _fn.schemas:
    ExternalSource = type("ExternalSource", (_ExternalSourceOp,), {
        "_schema": _fn.schemas.get("external_source"), "_fn_name": "external_source",
        "__doc__": _ExternalSourceOp.__doc__, "__module__": __name__})

# DALI's older, flat names
_LEGACY = {"FileReader": "readers.file", "CaffeReader": "readers.caffe",
           "Caffe2Reader": "readers.caffe2", "TFRecordReader": "readers.tfrecord",
           "NumpyReader": "readers.numpy", "COCOReader": "readers.coco",
           "MXNetReader": "readers.mxnet", "SequenceReader": "readers.sequence",
           "AudioDecoder": "decoders.audio",
           "ImageDecoder": "decoders.image", "ImageDecoderRandomCrop": "decoders.image_random_crop",
           "CoinFlip": "random.coin_flip", "Uniform": "random.uniform",
           "NormalDistribution": "random.normal", "TransformTranslation": "transforms.translation"}


def _legacy_class(fn_name, class_name):
    """ops.<class_name>, a deprecated name of fn_name's class: it warns as DALI's does."""
    cls = _make_class(fn_name, class_name)
    parts = fn_name.split(".")
    new = ".".join(parts[:-1] + [_camel(parts[-1])])
    init = cls.__init__

    def __init__(self, **kwargs):
        _fn.deprecated_name("ops", class_name, new)
        init(self, **kwargs)
    cls.__init__ = __init__
    return cls


for _cname, _name in _LEGACY.items():
    if _name in _fn.schemas:
        setattr(_module, _cname, _legacy_class(_name, _cname))
        _names.append(_cname)
del _module, _alias, _name, _parts, _target, _p, _cname
try:
    del _ns
except NameError:
    pass


# `import sluice.ops.readers` (DALI's nvidia.dali.ops.readers, ops.transforms, ...) finds the
# namespaces as modules
for _k, _v in list(vars(sys.modules[__name__]).items()):
    if isinstance(_v, _Namespace):
        sys.modules["%s.%s" % (__name__, _k)] = _v
del _k, _v


class Compose:
    """DALI's ops.Compose: operators applied in turn, each to the previous one's outputs, as one
    callable. The call's inputs and arguments go to the first; an op made with device="gpu"
    gets its CPU inputs moved to the GPU, as DALI's."""

    def __init__(self, op_list):
        self._ops = list(op_list)
        if not self._ops:
            raise ValueError("ops.Compose: op_list is empty")

    def __call__(self, *inputs, **kwargs):
        out = self._ops[0](*inputs, **kwargs)
        for op in self._ops[1:]:
            outs = list(out) if isinstance(out, (list, tuple)) else [out]
            if getattr(op, "device", "cpu") == "gpu":
                outs = [o.gpu() if isinstance(o, DataNode) and not o._gpu else o for o in outs]
            out = op(*outs)
        return out


def _dlpack_from_array(array):
    """DALI's ops._dlpack_from_array: a DLPack capsule of a numpy array (what a
    DLTensorPythonFunction's function returns)."""
    import numpy as np
    return np.asarray(array).__dlpack__()


class _Capsule:
    def __init__(self, capsule):
        self._capsule = capsule

    def __dlpack__(self, stream=None):
        return self._capsule

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU


def _dlpack_to_array(dltensor):
    """DALI's ops._dlpack_to_array: the numpy array of a DLPack capsule (or of an object with
    __dlpack__), sharing its memory."""
    import numpy as np
    if hasattr(dltensor, "__dlpack__"):
        return np.from_dlpack(dltensor)
    return np.from_dlpack(_Capsule(dltensor))


_DataNode = DataNode  # DALI's ops._DataNode: the node class, for isinstance


def legacy_names():
    """DALI's older flat class names that sluice.ops has, and the fn op each stands for."""
    return {k: v for k, v in _LEGACY.items() if v in _fn.schemas}
