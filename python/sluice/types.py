# SPDX-License-Identifier: Apache-2.0
"""DALI's type constants, with DALI's names and values: ``types.FLOAT``, ``types.UINT8``,
``types.GRAY``, ``types.RGB``, ``types.INTERP_LINEAR``, ... (``import sluice.types as types`` in
place of ``import nvidia.dali.types as types``)."""

import enum
import typing


class DALIDataType(enum.IntEnum):
    """Element types, with DALI's names and values (types.FLOAT, types.UINT8, ...)."""

    NO_TYPE = -1
    UINT8 = 0
    UINT16 = 1
    UINT32 = 2
    UINT64 = 3
    INT8 = 4
    INT16 = 5
    INT32 = 6
    INT64 = 7
    FLOAT16 = 8
    FLOAT = 9
    FLOAT64 = 10
    BOOL = 11
    INTERP_TYPE = 22  # DALIInterpType values as a tensor's elements (fn.random.choice over them)
    BFLOAT16 = 25

    def __repr__(self):
        return "DALIDataType.%s" % self.name

    __str__ = __repr__


class DALIImageType(enum.IntEnum):
    """Colour spaces of decoded images, with DALI's names and values (types.RGB, ...)."""

    RGB = 0
    BGR = 1
    GRAY = 2
    YCbCr = 3
    ANY_DATA = 4

    def __repr__(self):
        return "DALIImageType.%s" % self.name

    __str__ = __repr__


def _table_choices(prefix):
    """Every enum value of the library's operator table (the one `sluice ops` prints) that starts
    with prefix: what some op's argument accepts."""
    from . import _c  # (the library; loaded once by the package)
    found = []
    info, a, err = _c.OpInfo(), _c.OpArgInfo(), _c.Err()
    for i in range(_c.lib.sl_op_count()):
        if _c.lib.sl_op_get(i, info, err) != _c.OK:
            continue
        for k in range(info.num_args):
            if _c.lib.sl_op_get_arg(info.name, k, a, err) != _c.OK or not a.choices:
                continue
            for c in _c.u(a.choices).split("|"):
                if c.startswith(prefix) and c not in found:
                    found.append(c)
    return found


# DALI's values of its interpolation types; the enum holds these and every INTERP_ value the
# library's operator table accepts (a new one there appears here with no edit)
_DALI_INTERP = {"INTERP_NN": 0, "INTERP_LINEAR": 1, "INTERP_CUBIC": 2, "INTERP_LANCZOS3": 3,
                "INTERP_TRIANGULAR": 4, "INTERP_GAUSSIAN": 5}


def _interp_members():
    members = dict(_DALI_INTERP)
    for name in _table_choices("INTERP_"):
        if name not in members:
            members[name] = 100 + len(members)
    return sorted(members.items(), key=lambda kv: kv[1])


DALIInterpType = enum.IntEnum("DALIInterpType", _interp_members(), module=__name__)
DALIInterpType.__repr__ = lambda self: "DALIInterpType.%s" % self.name
DALIInterpType.__str__ = DALIInterpType.__repr__
DALIInterpType.__doc__ = ("Interpolation types, with DALI's values (INTERP_NN, INTERP_LINEAR, "
                          "INTERP_CUBIC, INTERP_LANCZOS3, INTERP_TRIANGULAR, INTERP_GAUSSIAN); "
                          "the ops say which of them they accept (`sluice ops`).")


def accepted_interp_types():
    """The interpolation types some op of the library accepts."""
    return [DALIInterpType[n] for n in _table_choices("INTERP_")]


class TensorLayout(str):
    """A layout string ("HWC", "CHW"), as DALI's types.TensorLayout."""


# DALI's old layout constants (output_layout=types.NCHW): the layout of one sample, as DALI turns
# them into layout strings
NCHW = TensorLayout("CHW")
NHWC = TensorLayout("HWC")


class PipelineAPIType(enum.Enum):
    """DALI's pipeline API types (kept for programs that name them)."""

    BASIC = 0
    ITERATOR = 1
    SCHEDULED = 2


# every constant at module level, as DALI has them (types.FLOAT, types.GRAY, ...)
for _enum in (DALIDataType, DALIImageType, DALIInterpType):
    for _m in _enum:
        globals()[_m.name] = _m
del _enum, _m
FLOAT32 = DALIDataType.FLOAT
DOUBLE = DALIDataType.FLOAT64
HALF = DALIDataType.FLOAT16

# sluice's dtype enum (include/sluice/tensor.h SL_DTYPE_TABLE order) <-> DALI's
_SL_DTYPES = [DALIDataType.UINT8, DALIDataType.INT8, DALIDataType.UINT16, DALIDataType.INT16,
              DALIDataType.INT32, DALIDataType.INT64, DALIDataType.FLOAT16,
              DALIDataType.BFLOAT16, DALIDataType.FLOAT, DALIDataType.FLOAT64, DALIDataType.BOOL,
              DALIDataType.UINT32, DALIDataType.UINT64, DALIDataType.INTERP_TYPE]
_SL_INDEX = {t: i for i, t in enumerate(_SL_DTYPES)}
# (numpy-style name, DLPack type code, bits)
_INFO = {
    DALIDataType.UINT8: ("uint8", 1, 8), DALIDataType.INT8: ("int8", 0, 8),
    DALIDataType.UINT16: ("uint16", 1, 16), DALIDataType.INT16: ("int16", 0, 16),
    DALIDataType.INT32: ("int32", 0, 32), DALIDataType.INT64: ("int64", 0, 64),
    DALIDataType.FLOAT16: ("float16", 2, 16), DALIDataType.BFLOAT16: ("bfloat16", 4, 16),
    DALIDataType.FLOAT: ("float32", 2, 32), DALIDataType.FLOAT64: ("float64", 2, 64),
    DALIDataType.BOOL: ("bool", 6, 8),
    DALIDataType.UINT32: ("uint32", 1, 32), DALIDataType.UINT64: ("uint64", 1, 64),
}
# the enum types as tensor elements: numpy and DLPack see DALI's int32 codes (kept out of _INFO,
# whose numpy names map back to types)
_ENUM_INFO = {DALIDataType.INTERP_TYPE: ("int32", 0, 32)}
_ALL_INFO = {**_INFO, **_ENUM_INFO}
# struct/memoryview format characters -> DALI types (for external_source data)
_FORMATS = {"B": DALIDataType.UINT8, "b": DALIDataType.INT8, "H": DALIDataType.UINT16,
            "h": DALIDataType.INT16, "i": DALIDataType.INT32, "l": DALIDataType.INT64,
            "q": DALIDataType.INT64, "e": DALIDataType.FLOAT16, "f": DALIDataType.FLOAT,
            "d": DALIDataType.FLOAT64, "?": DALIDataType.BOOL, "I": DALIDataType.UINT32,
            "L": DALIDataType.UINT64, "Q": DALIDataType.UINT64}


def from_sl(code: int) -> "DALIDataType":
    """DALI type of a sluice dtype code."""
    return _SL_DTYPES[code]


def to_sl(t: "DALIDataType | int") -> int:
    """sluice dtype code of a DALI type; ValueError for a type sluice does not have."""
    try:
        return _SL_INDEX[DALIDataType(t)]
    except (KeyError, ValueError):
        raise ValueError("sluice has no tensors of type %r" % (t,)) from None


def np_name(t: "DALIDataType | int") -> str:
    """numpy's name of a DALI type ("float32")."""
    return _ALL_INFO[DALIDataType(t)][0]


def dlpack_type(t: "DALIDataType | int") -> tuple[int, int]:
    """DLPack's (type code, bits) of a DALI type: (2, 32) for FLOAT."""
    _, code, bits = _ALL_INFO[DALIDataType(t)]
    return code, bits


def itemsize(t: "DALIDataType | int") -> int:
    """Bytes per element of a DALI type."""
    return _ALL_INFO[DALIDataType(t)][2] // 8


_BY_NP_NAME = {v[0]: k for k, v in _INFO.items()}


def from_np_name(name: str) -> "DALIDataType":
    """The DALI type numpy calls name ("float32", "bool"; numpy's dtype.name); KeyError for a
    type sluice has no tensors of."""
    return _BY_NP_NAME[name]


def from_buffer_format(fmt: str) -> "DALIDataType | None":
    """The DALI type of a struct/memoryview element format ("B": UINT8, "f": FLOAT; without a
    byte-order prefix), None for one sluice has no type of."""
    return _FORMATS.get(fmt)


_NUMPY_NAMES = {"bool": DALIDataType.BOOL, "bool_": DALIDataType.BOOL, "int8": DALIDataType.INT8,
                "uint8": DALIDataType.UINT8, "int16": DALIDataType.INT16,
                "uint16": DALIDataType.UINT16, "int32": DALIDataType.INT32,
                "uint32": DALIDataType.UINT32, "int64": DALIDataType.INT64,
                "uint64": DALIDataType.UINT64, "float16": DALIDataType.FLOAT16,
                "half": DALIDataType.FLOAT16, "float32": DALIDataType.FLOAT,
                "float": DALIDataType.FLOAT, "float64": DALIDataType.FLOAT64,
                "double": DALIDataType.FLOAT64, "bfloat16": DALIDataType.BFLOAT16}


def to_numpy_type(dali_type: "DALIDataType | int") -> type:
    """numpy's type of a DALIDataType (DALI's types.to_numpy_type)."""
    import numpy
    t = DALIDataType(dali_type)
    names = {DALIDataType.FLOAT: "float32", DALIDataType.FLOAT64: "float64",
             DALIDataType.FLOAT16: "float16", DALIDataType.BOOL: "bool"}
    if t in (DALIDataType.BFLOAT16, DALIDataType.NO_TYPE, DALIDataType.INTERP_TYPE):
        raise TypeError("numpy has no type for %r" % (t,))
    return numpy.dtype(names.get(t, t.name.lower())).type


def to_dali_type(framework_type: typing.Any) -> "DALIDataType":
    """The DALIDataType of a numpy or torch type, or of its name (DALI's types.to_dali_type)."""
    t = getattr(framework_type, "__name__", None) or str(framework_type)
    if t.startswith("torch."):
        t = t[6:]
    got = _NUMPY_NAMES.get(t)
    if got is None:
        raise TypeError("'%s' could not be converted into any known DALIDataType"
                        % (framework_type,))
    return got


def Constant(value: typing.Any, dtype: "DALIDataType | None" = None,
             shape: typing.Sequence[int] | None = None, layout: str | None = None,
             device: str | None = None, **kwargs: typing.Any) -> typing.Any:
    """A constant, as DALI's types.Constant: fn.constant of value (a number or an array), its
    shape kept (a number is a 0-d tensor), of dtype (default: a numpy array's own type, but int32,
    uint32 and float32 for its 64-bit ones, as DALI's; int32 for Python ints, float32 for floats,
    bool for bools), on device ("cpu" by default, or "gpu").
    Inside a pipeline definition it is a node at once, except a number alone, which stays a
    ScalarConstant (as DALI's: `Constant(15).float32() - x`); outside one (DALI allows that too)
    it is made a node of each pipeline that uses it, where it is used."""
    import numpy as np

    from ._state import current
    interp = _all_interp(value)
    if interp and dtype is None:  # as DALI's: interpolation types make a constant of them
        dtype = DALIDataType.INTERP_TYPE
    arr = np.asarray([int(v) for v in value] if interp and isinstance(value, (list, tuple))
                     else int(value) if interp else value)
    if arr.dtype.kind not in "biuf":
        raise TypeError("types.Constant: %r is not a number or an array of numbers" % (value,))
    if dtype is None:
        # an array (numpy's, or a numpy scalar) keeps its type; Python's bool, int and float are
        # bool, int32 and float32, as DALI types them
        np_types = {v[0]: k for k, v in _INFO.items()}
        if isinstance(value, np.ndarray) and arr.dtype.name in ("int64", "uint64", "float64"):
            # as DALI's: a 64-bit array is taken as its 32-bit type unless dtype says otherwise
            dtype = {"int64": DALIDataType.INT32, "uint64": DALIDataType.UINT32,
                     "float64": DALIDataType.FLOAT}[arr.dtype.name]
        elif hasattr(value, "dtype") and arr.dtype.name in np_types:
            dtype = np_types[arr.dtype.name]
        elif arr.dtype.kind == "b":
            dtype = DALIDataType.BOOL
        else:
            dtype = DALIDataType.FLOAT if arr.dtype.kind == "f" else DALIDataType.INT32
    if shape is None:
        shape = list(arr.shape)
    if layout is not None:
        kwargs["layout"] = layout
    if device is not None:
        kwargs["device"] = device
    if arr.ndim == 0 and not kwargs and list(shape) == []:
        return ScalarConstant(arr, DALIDataType(dtype))
    if current() is None:
        from ._deferred import Deferred
        return Deferred(lambda: _constant_node(arr, dtype, shape, kwargs), "types.Constant")
    return _constant_node(arr, dtype, shape, kwargs)


def _all_interp(value):
    """value is a DALIInterpType, or a non-empty list or tuple of them."""
    if isinstance(value, DALIInterpType):
        return True
    return isinstance(value, (list, tuple)) and len(value) > 0 and \
        all(isinstance(v, DALIInterpType) for v in value)


from ._deferred import Deferred as _Deferred  # noqa: E402 (uses nothing of this module)


def _constant_node(arr, dtype, shape, kwargs):
    from . import fn
    flat = arr.reshape(-1).tolist()
    data = {"fdata": [float(x) for x in flat]} if arr.dtype.kind == "f" else \
        {"idata": [int(x) for x in flat]}
    return fn.constant(shape=list(shape), dtype=dtype, **data, **kwargs)


class ScalarConstant(_Deferred):
    """A number made a constant (DALI's ScalarConstant): typed, convertible (.uint8(), ...,
    .float32()), usable as an operand, an op's input (a 0-d constant node) or an argument value
    (the number)."""

    def __init__(self, arr, dtype=None):
        if dtype is None:  # DALI's: the type of the Python number (bool, int32 or float32)
            import numpy as np
            if isinstance(arr, (bool, np.bool_)):
                dtype = DALIDataType.BOOL
            elif isinstance(arr, (int, np.integer)):
                dtype = DALIDataType.INT32
            elif isinstance(arr, (float, np.floating)):
                dtype = DALIDataType.FLOAT
            else:
                raise TypeError("Expected scalar value of type 'bool', 'int' or 'float', got %s"
                                % type(arr))
            arr = np.asarray(arr).astype(_INFO[dtype][0])
        self.value, self.dtype = arr, dtype
        super().__init__(lambda: _constant_node(arr, dtype, [], {}), "types.Constant")

    def _as(self, t):
        import numpy as np
        return ScalarConstant(np.asarray(self.value).astype(_INFO[t][0]), t)

    def __int__(self):
        return int(self.value)

    def __float__(self):
        return float(self.value)

    def __bool__(self):
        return bool(self.value)

    def __index__(self):
        return int(self.value)


for _t in DALIDataType:
    if _t in _INFO and _t != DALIDataType.BFLOAT16:  # (numpy has no bfloat16)
        _conv = (lambda t: lambda self: self._as(t))(_t)
        _conv.__doc__ = "The constant converted to %s (DALI's ScalarConstant.%s())." % (
            _t.name, _INFO[_t][0])
        setattr(ScalarConstant, _INFO[_t][0] if _INFO[_t][0] != "bool" else "bool", _conv)
