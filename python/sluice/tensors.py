# SPDX-License-Identifier: Apache-2.0
"""What pipelines and iterators hand out: tensors and tensor lists that view the library's buffers
(zero copy) or own a copy, and export themselves through DLPack (``__dlpack__`` /
``__dlpack_device__``), so ``numpy.from_dlpack``, ``torch.from_dlpack`` and
``jax.dlpack.from_dlpack`` take them.

Lifetime: a view keeps the batch it came from alive; the batch's buffers go back to the pipeline
only when the last view, and the last DLPack export of one (the consumer calls the deleter), is
gone. See docs/python.md for when a hand-over copies instead."""

import ctypes
import typing
from ctypes import POINTER, Structure, c_int32, c_int64, c_uint8, c_uint16, c_uint64, c_void_p

from . import _c, errors
from . import types as _types

if typing.TYPE_CHECKING:  # as_array's result; numpy is imported only when it is called
    import numpy

# ---- DLPack (dlpack.h, v0.8 ABI: DLManagedTensor) ------------------------------------------------

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST = 1, 2, 3


class _DLDevice(Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class _DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class _DLTensor(Structure):
    _fields_ = [("data", c_void_p), ("device", _DLDevice), ("ndim", c_int32),
                ("dtype", _DLDataType), ("shape", POINTER(c_int64)),
                ("strides", POINTER(c_int64)), ("byte_offset", c_uint64)]


class _DLManagedTensor(Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", c_void_p), ("deleter", c_void_p)]


_DELETER = ctypes.CFUNCTYPE(None, c_void_p)
# exports not yet given back by their consumer: address of the DLManagedTensor -> what keeps it
# (the struct, its shape array and the tensor that owns the memory) alive
_exports = {}


def _dl_delete(addr):
    try:
        _exports.pop(addr, None)
    except Exception:  # interpreter shutdown: the module may be half gone
        pass


_dl_deleter = _DELETER(_dl_delete)
_DLTENSOR_NAME = ctypes.create_string_buffer(b"dltensor")
_USED_NAME = b"used_dltensor"

# private function objects: ctypes.pythonapi's are shared, and whoever sets their argtypes sets them
# for everyone
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, c_void_p, c_void_p, c_void_p)(
    ("PyCapsule_New", ctypes.pythonapi))
_capsule_valid = ctypes.PYFUNCTYPE(ctypes.c_int, c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi))
_capsule_ptr = ctypes.PYFUNCTYPE(c_void_p, c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


def _capsule_dtor(cap):
    # a capsule no consumer took still owns its DLManagedTensor
    try:
        if _capsule_valid(cap, b"dltensor"):
            _dl_delete(_capsule_ptr(cap, b"dltensor"))
    except Exception:
        pass


_CAPSULE_DTOR = ctypes.CFUNCTYPE(None, c_void_p)(_capsule_dtor)


def _c_capsule_dtor(cap):
    # the library's export no consumer took: its own deleter gives the batch back
    try:
        if _capsule_valid(cap, b"dltensor"):
            m = _DLManagedTensor.from_address(_capsule_ptr(cap, b"dltensor"))
            _C_DELETER(m.deleter)(ctypes.addressof(m))
    except Exception:
        pass


_C_DELETER = ctypes.CFUNCTYPE(None, c_void_p)
_C_CAPSULE_DTOR = ctypes.CFUNCTYPE(None, c_void_p)(_c_capsule_dtor)


def capsule_fresh(cap):
    """Whether no consumer has taken this DLPack capsule yet."""
    return bool(_capsule_valid_obj(cap, b"dltensor"))


_capsule_valid_obj = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi))
_capsule_ptr_obj = ctypes.PYFUNCTYPE(c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


def capsule_device(cap):
    """(DLPack device type, id) of a fresh DLPack capsule's tensor: where its memory is."""
    m = _DLManagedTensor.from_address(_capsule_ptr_obj(cap, b"dltensor"))
    return (m.dl_tensor.device.device_type, m.dl_tensor.device.device_id)


def c_export(batch, output, dev, flags=0):
    """A DLPack capsule of the library's own export of an iterator batch's shard
    (sl_iter_dlpack): its deleter is C, so a consumer may drop it from any thread without taking
    the GIL; the batch's memory stays out of the pool until it has. None in a build without
    DLPack."""
    m = c_void_p()
    err = _c.Err()
    st = _c.lib.sl_iter_dlpack(batch, output, dev, flags, ctypes.byref(m), ctypes.byref(err))
    if st == _c.ENOTSUP:
        return None
    errors.check(st, err, "exporting a batch through DLPack")
    return _capsule_new(m.value, ctypes.addressof(_DLTENSOR_NAME),
                        ctypes.cast(_C_CAPSULE_DTOR, c_void_p).value)


def _dlpack_capsule(t):
    m = _DLManagedTensor()
    shape = (c_int64 * max(1, len(t._shape)))(*t._shape)
    dl = m.dl_tensor
    dl.data = t._ptr
    dl.device.device_type, dl.device.device_id = t.__dlpack_device__()
    dl.ndim = len(t._shape)
    dl.dtype.code, dl.dtype.bits = _types.dlpack_type(t._dtype)
    dl.dtype.lanes = 1
    dl.shape = shape
    dl.strides = None  # compact, row-major
    dl.byte_offset = 0
    m.deleter = ctypes.cast(_dl_deleter, c_void_p).value
    addr = ctypes.addressof(m)
    m.manager_ctx = addr
    _exports[addr] = (m, shape, t)
    return _capsule_new(addr, ctypes.addressof(_DLTENSOR_NAME),
                        ctypes.cast(_CAPSULE_DTOR, c_void_p).value)


# ---- memory owners ------------------------------------------------------------------------------


class _Owned:
    """Memory the library allocated for a copy (sl_tensor_alloc); freed with the last reference."""

    __slots__ = ("t",)

    def __init__(self, dtype, device, shape):
        self.t = _c.Tensor()
        err = _c.Err()
        n = len(shape)
        dims = (c_int64 * max(1, n))(*shape)
        errors.check(_c.lib.sl_tensor_alloc(ctypes.byref(self.t), _types.to_sl(dtype), device, n,
                                            dims, None, ctypes.byref(err)), err)

    @property
    def ptr(self):
        return self.t.data

    def __del__(self):
        try:
            _c.lib.sl_tensor_free(ctypes.byref(self.t))
        except Exception:
            pass


_devices = {}


def _device_struct(kind, ident):
    """The library's device (one shared, never changed, struct per device)."""
    d = _devices.get((kind, ident))
    if d is None:
        d = _devices[(kind, ident)] = _c.Device(kind, ident)
    return d


def _copy(ptr, dtype, shape, device, to_device=None):
    """A copy of the dense array at ptr into new library memory (on to_device, default the same)."""
    dst_dev = to_device or device
    owned = _Owned(dtype, dst_dev, shape)
    src = _c.Tensor()
    n = len(shape)
    dims = (c_int64 * max(1, n))(*shape)
    _c.lib.sl_tensor_wrap(ctypes.byref(src), ptr, _types.to_sl(dtype), device, n, dims, None)
    err = _c.Err()
    if any(x == 0 for x in shape):
        return owned
    errors.check(_c.lib.sl_tensor_copy(ctypes.byref(owned.t), ctypes.byref(src), None,
                                       ctypes.byref(err)), err, "copying a batch")
    return owned


def _address(ptr):
    """An address given as DALI takes one: an int, a ctypes.c_void_p or anything int() takes."""
    if isinstance(ptr, ctypes.c_void_p):
        ptr = ptr.value
    if ptr is None:
        raise ValueError("copy_to_external: a NULL destination")
    return int(ptr)


def _copy_out(t, ptr, cuda_stream, non_blocking):
    """t's bytes to the external memory at ptr on t's device: synchronously, unless non_blocking
    with a cuda_stream (a copy then queued on that stream)."""
    if t.nbytes == 0:
        return
    n = len(t._shape)
    dims = (c_int64 * max(1, n))(*t._shape)
    src, dst = _c.Tensor(), _c.Tensor()
    dt = _types.to_sl(t._dtype)
    _c.lib.sl_tensor_wrap(ctypes.byref(src), t._ptr, dt, t._device, n, dims, None)
    _c.lib.sl_tensor_wrap(ctypes.byref(dst), ptr, dt, t._device, n, dims, None)
    stream = None
    if non_blocking and cuda_stream is not None and t._device.kind == _c.DEVICE_CUDA:
        stream = getattr(cuda_stream, "cuda_stream", cuda_stream)  # a torch stream, or a handle
        stream = _address(stream)
    err = _c.Err()
    errors.check(_c.lib.sl_tensor_copy(ctypes.byref(dst), ctypes.byref(src), stream,
                                       ctypes.byref(err)), err, "copy_to_external")


class Shape(tuple):
    """A shape: a tuple, that may also be called (DALI's tensors have a shape() method)."""

    def __call__(self):
        return list(self)


def _numpy():
    try:
        import numpy
    except ImportError:
        raise ImportError("as_array() needs numpy; without it, take the data through DLPack "
                          "(e.g. torch.from_dlpack)") from None
    return numpy


# ---- tensors ------------------------------------------------------------------------------------


class Tensor:
    """One dense array on the CPU or a GPU: a sample, or a whole (batch, ...) output."""

    __slots__ = ("_ptr", "_dtype", "_shape", "_device", "_layout", "_owner", "_export",
                 "_source", "__weakref__")

    def __init__(self, ptr, dtype, shape, device, layout, owner, export=None):
        self._ptr = ptr or 0
        self._dtype = dtype if type(dtype) is _types.DALIDataType else _types.DALIDataType(dtype)
        self._shape = shape if type(shape) is Shape else Shape(int(x) for x in shape)
        self._device = device  # _c.Device
        self._layout = layout or ""
        self._owner = owner  # keeps the memory alive
        self._export = export  # (batch, output, device, flags): an iterator shard, exported by C
        self._source = None  # (its TensorList, its index there): a batch's sample

    def __new__(cls, *args, **kwargs):
        if cls is Tensor and len(args) >= 4:
            cls = TensorGPU if args[3].kind == _c.DEVICE_CUDA else TensorCPU
        return object.__new__(cls)

    @property
    def shape(self) -> Shape:
        """The extents, a tuple (also callable, as DALI's shape())."""
        return self._shape

    @property
    def dtype(self) -> _types.DALIDataType:
        """The element type, a types.DALIDataType."""
        return self._dtype

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self._shape)

    @property
    def device(self) -> str:
        """Where the memory is: "cpu" or "gpu"."""
        return "gpu" if self._device.kind == _c.DEVICE_CUDA else "cpu"

    @property
    def device_id(self) -> int:
        """The GPU's CUDA ordinal (0 on the CPU)."""
        return self._device.id

    @property
    def nbytes(self) -> int:
        """The size of the data in bytes."""
        n = _types.itemsize(self._dtype)
        for x in self._shape:
            n *= x
        return n

    def layout(self) -> str:
        """The layout, a letter per dimension ("HWC", "CHW"), or "" when it has none."""
        return self._layout

    def data_ptr(self) -> int:
        """The address of the first element (DALI's Tensor.data_ptr)."""
        return self._ptr

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __dlpack_device__(self):
        if self._device.kind == _c.DEVICE_CUDA:
            return (KDL_CUDA, self._device.id)
        return (KDL_CPU, 0)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        # the library makes a batch's device work complete before handing it out, so there is
        # nothing for the consumer's stream to wait for
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError("sluice tensors are exported on their own device only")
        if copy:
            return self.copy().__dlpack__()
        if self._export is not None:
            cap = c_export(*self._export)
            if cap is not None:
                return cap
        return _dlpack_capsule(self)

    def source_info(self) -> str:
        """Where the sample came from (DALI's source_info): the file its reader read (readers.file,
        numpy, coco), "FILE at index OFFSET" (readers.tfrecord), ..., passed on by the ops after
        the reader; "" where there is none (and for a tensor that is no batch's sample)."""
        return self._source[0]._source_info(self._source[1]) if self._source else ""

    def squeeze(self, dim: int | None = None) -> bool:
        """Drops dimension dim, or every dimension, of extent 1 (and its layout letter), in place,
        as DALI's Tensor.squeeze; True when the shape changed. dim must have extent 1."""
        shape = list(self._shape)
        if dim is None:
            keep = [k for k, x in enumerate(shape) if x != 1]
        else:
            if not -len(shape) <= dim < len(shape):
                raise IndexError("squeeze(dim=%d) of a %d-D tensor" % (dim, len(shape)))
            dim %= len(shape)
            if shape[dim] != 1:
                raise ValueError("squeeze(dim=%d): that dimension has extent %d, not 1"
                                 % (dim, shape[dim]))
            keep = [k for k in range(len(shape)) if k != dim]
        if len(keep) == len(shape):
            return False
        self._shape = Shape(shape[k] for k in keep)
        if len(self._layout) == len(shape):
            self._layout = "".join(self._layout[k] for k in keep)
        self._export = None  # a DLPack export is made from this shape from now on
        return True

    def copy_to_external(self, ptr, cuda_stream=None, non_blocking: bool = False,
                         use_copy_kernel: bool = False) -> None:
        """Copies the tensor's bytes to memory at ptr (an int or ctypes.c_void_p) on the
        tensor's own device (DALI's copy_to_external). Done when it returns, unless non_blocking
        with a cuda_stream, where the copy is queued on that stream. use_copy_kernel is accepted
        (the library picks how to copy)."""
        _copy_out(self, _address(ptr), cuda_stream, non_blocking)

    def copy(self) -> "Tensor":
        """A copy in memory of its own (same device)."""
        owned = _copy(self._ptr, self._dtype, self._shape, self._device)
        t = Tensor(owned.ptr, self._dtype, self._shape, self._device, self._layout, owned)
        t._source = self._source
        return t

    def as_cpu(self) -> "Tensor":
        """This tensor on the CPU (itself when already there, else a copy)."""
        if self._device.kind == _c.DEVICE_CPU:
            if isinstance(self, TensorGPU):  # a CPU pipeline's "gpu" sample: a view, no copy
                t = TensorCPU(self._ptr, self._dtype, self._shape, self._device, self._layout,
                              self._owner)
                t._source = self._source
                return t
            return self
        cpu = _device_struct(_c.DEVICE_CPU, 0)
        owned = _copy(self._ptr, self._dtype, self._shape, self._device, cpu)
        t = Tensor(owned.ptr, self._dtype, self._shape, cpu, self._layout, owned)
        t._source = self._source
        return t

    def as_tensor(self) -> "Tensor":
        """The tensor itself (a TensorList's as_tensor gives its dense batch; a tensor is one)."""
        return self

    def as_array(self) -> "numpy.ndarray":
        """A numpy array: a view of the CPU memory (no copy), or a host copy of GPU memory."""
        np = _numpy()
        t = self.as_cpu()
        if t._dtype == _types.DALIDataType.BFLOAT16:
            raise TypeError("numpy has no bfloat16; convert with fn.cast first")
        dtype = np.dtype(_types.np_name(t._dtype))
        if t.nbytes == 0:
            return np.zeros(t._shape, dtype)
        # a view of the memory (cheaper than a DLPack round trip); it keeps the tensor alive
        raw = (ctypes.c_char * t.nbytes).from_address(t._ptr)
        raw.owner = t
        return np.frombuffer(raw, dtype).reshape(t._shape)

    def __array__(self, dtype=None):
        a = self.as_array()
        return a.astype(dtype) if dtype is not None else a

    def __repr__(self):
        return "%s(shape=%s, dtype=%s%s)" % (type(self).__name__, tuple(self._shape),
                                              self._dtype.name,
                                              ", layout=%r" % self._layout if self._layout else "")


class TensorCPU(Tensor):
    """A Tensor in host memory (DALI's TensorCPU)."""

    __slots__ = ()


class TensorGPU(Tensor):
    """A Tensor in a GPU's memory (DALI's TensorGPU); as_cpu() or as_array() copy it to the host."""

    __slots__ = ()


class TensorList:
    """One output of a batch: its samples (which may differ in shape), and, when they share one
    and lie back to back, the dense (batch, ...) tensor (as_tensor(), DLPack)."""

    def __init__(self, samples, dtype, device, layout, owner, dense=None):
        self._keys = None  # the batch's record keys (set by the pipeline)
        self._info = None  # its samples' source info (set by the pipeline)
        self._samples = samples  # [(ptr, shape)]
        self._dtype = _types.DALIDataType(dtype)
        self._device = device
        self._layout = layout or ""
        self._owner = owner
        self._dense = dense  # a Tensor, or None

    def __new__(cls, *args, **kwargs):
        if cls is TensorList and len(args) >= 3:
            cls = TensorListGPU if args[2].kind == _c.DEVICE_CUDA else TensorListCPU
        return object.__new__(cls)

    def __len__(self):
        return len(self._samples)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("sample %d of a batch of %d" % (i, len(self)))
        ptr, shape = self._samples[i]
        cls = TensorGPU if isinstance(self, TensorListGPU) else Tensor
        t = cls(ptr, self._dtype, shape, self._device, self._layout, self)
        t._source = (self, i)
        return t

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def keys(self) -> list:
        """The record key of each sample (e.g. the LMDB key), as the reader gave it."""
        return list(self._keys.fetch()) if self._keys is not None else [None] * len(self)

    def source_info(self) -> list:
        """Each sample's source info (Tensor.source_info), "" where there is none."""
        return [self._source_info(i) for i in range(len(self))]

    def _source_info(self, i):
        return self._info.fetch()[i] if self._info is not None else ""

    def at(self, i: int) -> "numpy.ndarray":
        """Sample i as a numpy array (DALI's TensorListCPU.at); of a TensorListGPU, as DALI's,
        the sample's TensorGPU (its as_cpu() or numpy.array() give the data)."""
        if isinstance(self, TensorListGPU):
            return self[i]
        return self[i].as_array()

    @property
    def dtype(self) -> _types.DALIDataType:
        """The samples' element type, a types.DALIDataType."""
        return self._dtype

    @property
    def device(self) -> str:
        """Where the samples are: "cpu" or "gpu"."""
        return "gpu" if self._device.kind == _c.DEVICE_CUDA else "cpu"

    @property
    def shape(self) -> Shape:
        """The dense batch's shape (batch, ...); called, the list of sample shapes (DALI)."""
        if self._dense is not None:
            return _ListShape(self._dense.shape, [s for _, s in self._samples])
        return _ListShape((), [s for _, s in self._samples])

    def layout(self) -> str:
        """The samples' layout ("HWC", "CHW"), or "" when they have none."""
        return self._layout

    def is_dense_tensor(self) -> bool:
        """True when the samples share a shape and lie back to back: as_tensor() then works."""
        return self._dense is not None

    def as_reshaped_tensor(self, shape: typing.Sequence[int]) -> Tensor:
        """The dense batch viewed with another shape of the same number of elements (DALI's
        TensorList.as_reshaped_tensor); no copy."""
        d = self.as_tensor()
        shape = [int(x) for x in shape]
        n, m = 1, 1
        for x in shape:
            n *= x
        for x in d.shape:
            m *= x
        if n != m or any(x < 0 for x in shape):
            raise ValueError("as_reshaped_tensor(%s): the batch has %d elements (shape %s)"
                             % (shape, m, tuple(d.shape)))
        return Tensor(d._ptr, d._dtype, shape, d._device, "", d._owner)

    def copy_to_external(self, ptr, cuda_stream=None, non_blocking: bool = False,
                         use_copy_kernel: bool = False) -> None:
        """Copies the batch's samples, one after another, to memory at ptr (an int or
        ctypes.c_void_p) on the batch's device, as DALI's TensorList.copy_to_external; the
        arguments as Tensor.copy_to_external's."""
        at = _address(ptr)
        if self._dense is not None:
            _copy_out(self._dense, at, cuda_stream, non_blocking)
            return
        for i in range(len(self)):
            t = self[i]
            _copy_out(t, at, cuda_stream, non_blocking)
            at += t.nbytes

    def data_ptr(self) -> int:
        """The address of the dense batch (DALI's TensorList.data_ptr)."""
        return self.as_tensor().data_ptr()

    def as_tensor(self) -> Tensor:
        """The dense (batch, ...) tensor, no copy; ValueError when the samples' shapes differ."""
        if self._dense is None:
            shapes = sorted({tuple(s) for _, s in self._samples})[:3]
            raise ValueError("the batch's samples have different shapes (%s...): no dense tensor; "
                             "index the samples instead" % ", ".join(map(str, shapes)))
        return self._dense

    def as_array(self) -> "numpy.ndarray":
        """The dense batch as a numpy array (a view on the CPU, a host copy from a GPU)."""
        return self.as_tensor().as_array()

    def as_cpu(self) -> "TensorList":
        """This batch output on the CPU: itself when already there, else a host copy."""
        if self._device.kind == _c.DEVICE_CPU:
            return getattr(self, "_host_of", None) or self
        return _carry(self, _copy_list(self, _device_struct(_c.DEVICE_CPU, 0)))

    def copy(self) -> "TensorList":
        """A copy in memory of its own (same device), which outlives the batch."""
        return _carry(self, _copy_list(self, self._device))

    def __dlpack__(self, *args, **kwargs):
        return self.as_tensor().__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return (KDL_CUDA, self._device.id) if self._device.kind == _c.DEVICE_CUDA else (KDL_CPU, 0)

    def __array__(self, dtype=None):
        a = self.as_array()
        return a.astype(dtype) if dtype is not None else a

    def __repr__(self):
        # the dense batch's shape, else the samples' shapes (DALI prints them), the first few
        shapes = [s for _, s in self._samples]
        shape = ("shape=%s" % (tuple(self.shape),) if self._dense is not None else
                 "shapes=[%s%s]" % (", ".join(str(tuple(s)) for s in shapes[:4]),
                                    ", ..." if len(shapes) > 4 else ""))
        return "%s(%d samples, dtype=%s, %s%s)" % (type(self).__name__, len(self),
                                                   self._dtype.name, shape,
                                                   ", layout=%r" % self._layout
                                                   if self._layout else "")


class TensorListCPU(TensorList):
    """A TensorList in host memory (DALI's TensorListCPU)."""


class TensorListGPU(TensorList):
    """A TensorList in a GPU's memory (DALI's TensorListGPU); as_cpu() copies it to the host.
    On a CPU pipeline (device_id=None), an output the definition placed on the GPU (.gpu(), a
    "gpu" op) is one too, over the host memory: at(i) gives a TensorGPU and as_cpu() the
    TensorListCPU, without a copy, so DALI code written for the GPU runs unchanged."""


def logical_gpu(tl: TensorList) -> TensorList:
    """tl (a CPU pipeline's output in host memory) as the TensorListGPU the definition asked for."""
    g = TensorListGPU.__new__(TensorListGPU)
    g.__dict__.update(tl.__dict__)
    g._host_of = tl
    return g


class _ListShape(Shape):
    def __new__(cls, dense, samples):
        obj = super().__new__(cls, dense)
        obj._samples = samples
        return obj

    def __call__(self):
        return [list(s) for s in self._samples]


def _carry(src, dst):
    """dst (a copy of src) with src's record keys and source info, read while src's batch is
    held."""
    for x in (src._keys, src._info):
        if x is not None:
            x.fetch()
    dst._keys, dst._info = src._keys, src._info
    return dst


def _copy_list(tl, device):
    """A TensorList in memory of its own on `device`."""
    if tl._dense is not None:
        d = tl._dense
        owned = _copy(d._ptr, d._dtype, d._shape, d._device, device)
        item = _types.itemsize(d._dtype)
        samples, off = [], 0
        for _, shape in tl._samples:
            samples.append((owned.ptr + off if owned.ptr else 0, shape))
            n = item
            for x in shape:
                n *= x
            off += n
        dense = Tensor(owned.ptr, d._dtype, d._shape, device, d._layout, owned)
        return TensorList(samples, tl._dtype, device, tl._layout, owned, dense)
    owners, samples = [], []
    for ptr, shape in tl._samples:
        o = _copy(ptr, tl._dtype, shape, tl._device, device)
        owners.append(o)
        samples.append((o.ptr, shape))
    return TensorList(samples, tl._dtype, device, tl._layout, owners)


def from_c_tensor(t, owner):
    """A Tensor viewing a dense sl_tensor (contiguous)."""
    dev = t.device
    return Tensor(t.data, _types.from_sl(t.dtype), Shape(t.shape[:t.ndim]),
                  _device_struct(dev.kind, dev.id), t.layout.decode(), owner)


def from_c_list(tl, dense, owner):
    """A TensorList viewing an sl_tlist (and the dense view of it, an sl_tensor or None)."""
    nd = tl.ndim
    samples = []
    for i in range(tl.count):
        samples.append((tl.data[i] or 0, tuple(tl.shapes[i * nd + k] for k in range(nd))))
    dev = _device_struct(tl.device.kind, tl.device.id)
    lst = TensorList(samples, _types.from_sl(tl.dtype), dev, _c.u(tl.layout), owner)
    if dense is not None:
        lst._dense = from_c_tensor(dense, owner)
        # the dense view may be a packed copy: samples then live inside it
        item = _types.itemsize(lst._dtype)
        per = item
        for x in lst._dense.shape[1:]:
            per *= x
        lst._samples = [(dense.data + i * per if dense.data else 0, s)
                        for i, (_, s) in enumerate(samples)]
    return lst
