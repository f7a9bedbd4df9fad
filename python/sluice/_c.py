# SPDX-License-Identifier: Apache-2.0
"""The C library, through ctypes: where libsluice.so is found, and the public API's structs and
functions (include/sluice/*.h). Nothing here is meant for users; the rest of the package wraps it.

ctypes releases the GIL for the length of every call into the library, so a call that blocks
(waiting for a batch, joining a pipeline's threads) lets other Python threads run."""

import ctypes
import ctypes.util
import os
from ctypes import (CFUNCTYPE, POINTER, Structure, c_bool, c_char, c_char_p, c_int, c_int64,
                    c_size_t, c_uint, c_uint64, c_void_p)

MAX_DIMS = 8
LAYOUT_MAX = 8
MAX_DEVICES = 64
ERRMSG_MAX = 512

# status codes (include/sluice/status.h)
OK, EOF = 0, 1
DLPACK_STACKED = 1  # sl_iter_dlpack's flag
ENOMEM, EINVAL, EIO, EFORMAT, ENOTSUP, ECUDA, ENCCL, EMPI = -1, -2, -3, -4, -5, -6, -7, -8
ENOENT, ECLOSED, ESTATE, ETIMEOUT, ECHECKSUM, ESYNTAX = -9, -10, -11, -12, -13, -14

DEVICE_CPU, DEVICE_CUDA = 0, 1
NUM_THREADS_AUTO = 0  # sl_pipeline_config.num_threads: chosen from the machine


class Err(Structure):
    _fields_ = [("status", c_int), ("msg", c_char * ERRMSG_MAX)]

    @property
    def text(self):
        return self.msg.decode("utf-8", "replace")


class Device(Structure):
    _fields_ = [("kind", c_int), ("id", c_int)]


class Tensor(Structure):
    _fields_ = [("data", c_void_p), ("dtype", c_int), ("device", Device), ("ndim", c_int),
                ("shape", c_int64 * MAX_DIMS), ("strides", c_int64 * MAX_DIMS),
                ("layout", c_char * (LAYOUT_MAX + 1)), ("alloc", c_void_p)]


class TList(Structure):
    _fields_ = [("count", c_int), ("capacity", c_int), ("dtype", c_int), ("device", Device),
                ("ndim", c_int), ("layout", c_char * (LAYOUT_MAX + 1)),
                ("shapes", POINTER(c_int64)), ("data", POINTER(c_void_p)), ("buf", c_void_p),
                ("buf_size", c_size_t), ("buf_used", c_size_t), ("pinned", c_bool),
                ("budget", c_void_p)]


class PipelineConfig(Structure):
    _fields_ = [("batch_size", c_int), ("num_threads", c_int), ("device", Device),
                ("seed", c_uint64), ("prefetch_cpu", c_int), ("prefetch_gpu", c_int),
                ("global_shards", c_int), ("global_shard", c_int), ("global_drop", c_int),
                ("max_batch_bytes", c_size_t), ("stream_priority", c_int)]


class ReaderMeta(Structure):
    _fields_ = [("epoch_size", c_int64), ("epoch_size_padded", c_int64),
                ("number_of_shards", c_int), ("shard_id", c_int), ("pad_last_batch", c_bool),
                ("stick_to_shard", c_bool)]


class SourceInfo(Structure):
    _fields_ = [("iteration", c_int64), ("idx_in_batch", c_int), ("sample", c_int64),
                ("output", c_int)]


SHAPE_FN = CFUNCTYPE(c_int, c_void_p, POINTER(SourceInfo), POINTER(c_int), POINTER(c_int),
                     POINTER(c_int64), POINTER(Err))
FILL_FN = CFUNCTYPE(c_int, c_void_p, POINTER(SourceInfo), c_void_p, c_size_t, POINTER(Err))
COUNT_FN = CFUNCTYPE(c_int, c_void_p, c_int64, c_int, POINTER(c_int), POINTER(Err))


class FunctionIO(Structure):
    _fields_ = [("iteration", c_int64), ("batch", c_int), ("num_inputs", c_int),
                ("num_outputs", c_int), ("inputs", POINTER(Tensor)), ("outputs", POINTER(Tensor))]


CALL_FN = CFUNCTYPE(c_int, c_void_p, POINTER(FunctionIO), POINTER(Err))


VIEW_FN = CFUNCTYPE(c_int, c_void_p, POINTER(SourceInfo), POINTER(c_void_p), POINTER(Err))
RELEASE_FN = CFUNCTYPE(None, c_void_p, c_int64)
LAYOUT_FN = CFUNCTYPE(c_int, c_void_p, c_int64, c_int, c_void_p, POINTER(Err))


class Source(Structure):
    _fields_ = [("shape", SHAPE_FN), ("fill", FILL_FN), ("user", c_void_p), ("count", COUNT_FN),
                ("view", VIEW_FN), ("release", RELEASE_FN), ("layout", LAYOUT_FN),
                ("copy_views", c_bool)]


class Function(Structure):
    _fields_ = [("call", CALL_FN), ("user", c_void_p)]


HOOK_FN = CFUNCTYPE(None, c_void_p)


class ThreadHooks(Structure):
    _fields_ = [("start", HOOK_FN), ("stop", HOOK_FN), ("user", c_void_p)]


class PipelineBind(Structure):
    _fields_ = [("name", c_char_p), ("value", c_char_p)]


BUILD_FN = CFUNCTYPE(c_int, c_void_p, c_int, c_int, c_void_p, POINTER(Err))


class IterConfig(Structure):
    _fields_ = [("text", c_char_p), ("filename", c_char_p), ("nbinds", c_int),
                ("binds", POINTER(PipelineBind)), ("function", c_char_p), ("build", BUILD_FN), ("prepare", BUILD_FN),
                ("build_user", c_void_p), ("ndevices", c_int), ("devices", Device * MAX_DEVICES),
                ("batch_size", c_int), ("num_threads", c_int), ("seed", c_uint64),
                ("prefetch_cpu", c_int), ("prefetch_gpu", c_int), ("shard_offset", c_int),
                ("total_shards", c_int), ("num_outputs", c_int),
                ("output_map", POINTER(c_char_p)), ("reader_name", c_char_p),
                ("size", c_int64), ("last_batch_policy", c_int), ("last_batch_padded", c_int),
                ("prepare_first_batch", c_int), ("auto_reset", c_int), ("layout", c_int),
                ("resume", c_char_p), ("resume_bytes", c_void_p), ("resume_size", c_size_t),
                ("caller_releases", c_int), ("global_order", c_int),
                ("device_seeds", POINTER(c_uint64)), ("stream_priority", c_int)]


class PipelineDecorator(Structure):
    """sl_pipeline_decorator: the settings a pipeline's decorator carries."""
    _fields_ = [("present", c_bool), ("func_name", c_char * 64), ("num_outputs", c_int),
                ("output_map", POINTER(c_char_p)), ("reader_name", c_char * 64),
                ("size", c_int64), ("layout", c_int), ("last_batch_policy", c_int),
                ("last_batch_padded", c_bool), ("prepare_first_batch", c_bool),
                ("auto_reset", c_bool), ("num_params", c_int), ("params", (c_char * 64) * 16),
                ("batch_size", c_int), ("num_threads", c_int), ("seed", c_int64),
                ("prefetch_queue_depth", c_int), ("device_id", c_int)]


class IterSettings(Structure):
    """sl_iter_settings: what a caller gives over a decorator's settings."""
    _fields_ = [("devices", c_char_p), ("default_devices", c_char_p), ("batch_size", c_int),
                ("num_threads", c_int), ("prefetch", c_int), ("seed_given", c_bool),
                ("seed", c_uint64), ("rank", c_int), ("nranks", c_int), ("local_rank", c_int),
                ("local_size", c_int)]


class OpInfo(Structure):
    _fields_ = [("name", c_char_p), ("doc", c_char_p), ("min_inputs", c_int),
                ("max_inputs", c_int), ("devices", c_uint), ("is_reader", c_bool),
                ("is_random", c_bool), ("no_copy", c_bool), ("num_args", c_int),
                ("aliases", c_char_p),
                ("sequences", c_bool)]


class OpArgInfo(Structure):
    _fields_ = [("name", c_char_p), ("type", c_char_p), ("type_doc", c_char_p),
                ("default", c_char_p), ("doc", c_char_p), ("choices", c_char_p),
                ("required", c_bool), ("per_sample", c_bool), ("per_frame", c_bool)]


LOG_FN = CFUNCTYPE(None, c_int, c_char_p, c_void_p)

# name: (restype, argtypes)
_API = {
    "sl_version": (c_int, []),
    "sl_abi_struct_size": (c_size_t, [c_char_p]),
    "sl_abi_struct_name": (c_char_p, [c_int]),
    "sl_abi_field": (c_char_p, [c_char_p, c_int, POINTER(c_size_t), POINTER(c_size_t)]),
    "sl_version_string": (c_char_p, []),
    "sl_build_info": (c_char_p, []),
    "sl_status_str": (c_char_p, [c_int]),
    "sl_status_name": (c_char_p, [c_int]),
    "sl_log_set_callback": (None, [LOG_FN, c_void_p]),
    "sl_dtype_size": (c_size_t, [c_int]),
    "sl_cpu_count": (c_int, []),
    # operator table
    "sl_op_count": (c_int, []),
    "sl_op_get": (c_int, [c_int, POINTER(OpInfo), POINTER(Err)]),
    "sl_op_find": (c_int, [c_char_p, POINTER(OpInfo), POINTER(Err)]),
    "sl_op_get_arg": (c_int, [c_char_p, c_int, POINTER(OpArgInfo), POINTER(Err)]),
    "sl_op_num_common_args": (c_int, []),
    "sl_op_common_arg": (c_int, [c_int, POINTER(OpArgInfo), POINTER(Err)]),
    # tensors
    "sl_tensor_alloc": (c_int, [POINTER(Tensor), c_int, Device, c_int, POINTER(c_int64),
                                c_char_p, POINTER(Err)]),
    "sl_tensor_free": (None, [POINTER(Tensor)]),
    "sl_tensor_copy": (c_int, [POINTER(Tensor), POINTER(Tensor), c_void_p, POINTER(Err)]),
    "sl_tensor_wrap": (c_int, [POINTER(Tensor), c_void_p, c_int, Device, c_int,
                               POINTER(c_int64), c_char_p]),
    # pipelines
    "sl_pipeline_config_init": (None, [POINTER(PipelineConfig)]),
    "sl_pipeline_default_threads": (c_int, [c_int]),
    "sl_pipeline_num_threads": (c_int, [c_void_p]),
    "sl_pipeline_create": (c_int, [POINTER(PipelineConfig), POINTER(c_void_p), POINTER(Err)]),
    "sl_pipeline_free": (None, [c_void_p]),
    "sl_pipeline_stop": (None, [c_void_p]),
    "sl_pipeline_wait": (c_int, [c_void_p, c_int]),
    "sl_pipeline_errmsg": (c_char_p, [c_void_p]),
    "sl_pipeline_status": (c_int, [c_void_p]),
    "sl_pipeline_op_begin": (c_void_p, [c_void_p, c_char_p]),
    "sl_pipeline_op_input": (c_int, [c_void_p, c_int]),
    "sl_pipeline_op_device": (c_int, [c_void_p, c_char_p]),
    "sl_pipeline_op_arg": (c_int, [c_void_p, c_char_p, c_char_p]),
    "sl_pipeline_op_arg_node": (c_int, [c_void_p, c_char_p, c_int]),
    "sl_pipeline_op_end": (c_int, [c_void_p, POINTER(c_int), c_int, POINTER(c_int)]),
    "sl_pipeline_last_op_output": (c_int, [c_void_p, c_int]),
    "sl_pipeline_transfer": (c_int, [c_void_p, c_int, c_int, POINTER(c_int)]),
    "sl_pipeline_set_outputs": (c_int, [c_void_p, c_int, POINTER(c_int), POINTER(c_char_p)]),
    "sl_pipeline_if": (c_int, [c_void_p, c_int]),
    "sl_pipeline_else": (c_int, [c_void_p]),
    "sl_pipeline_endif": (c_int, [c_void_p]),
    "sl_pipeline_merge": (c_int, [c_void_p, c_int, c_int, c_int, POINTER(c_int)]),
    "sl_pipeline_build": (c_int, [c_void_p]),
    "sl_pipeline_add_source": (c_int, [c_void_p, c_char_p, POINTER(Source)]),
    "sl_pipeline_add_function": (c_int, [c_void_p, c_char_p, POINTER(Function)]),
    "sl_set_thread_hooks": (None, [POINTER(ThreadHooks)]),
    "sl_pipeline_next": (c_int, [c_void_p, POINTER(c_void_p)]),
    "sl_pipeline_release": (None, [c_void_p, c_void_p]),
    "sl_pipeline_max_held": (c_int, [c_void_p]),
    "sl_pipeline_num_outputs": (c_int, [c_void_p]),
    "sl_pipeline_output_name": (c_char_p, [c_void_p, c_int]),
    "sl_pipeline_reader_meta": (c_int, [c_void_p, c_char_p, POINTER(ReaderMeta)]),
    "sl_pipeline_save": (c_int, [c_void_p, POINTER(c_void_p), POINTER(c_size_t)]),
    "sl_pipeline_restore": (c_int, [c_void_p, c_void_p, c_size_t]),
    "sl_batch_size": (c_int, [c_void_p]),
    "sl_batch_index": (c_int64, [c_void_p]),
    "sl_batch_output": (POINTER(TList), [c_void_p, c_int]),
    "sl_batch_tensor": (c_int, [c_void_p, c_int, POINTER(Tensor), POINTER(Err)]),
    "sl_batch_key": (c_char_p, [c_void_p, c_int]),
    "sl_batch_source_info": (c_char_p, [c_void_p, c_int, c_int]),
    # iterators
    "sl_iter_config_init": (None, [POINTER(IterConfig)]),
    "sl_iter_parse_devices": (c_int, [c_char_p, POINTER(IterConfig), POINTER(Err)]),
    "sl_iter_settings_init": (None, [POINTER(IterSettings)]),
    "sl_iter_settle": (c_int, [POINTER(IterConfig), POINTER(PipelineDecorator),
                               POINTER(IterSettings), c_void_p, POINTER(Err)]),
    "sl_iter_create": (c_int, [POINTER(IterConfig), POINTER(c_void_p), POINTER(Err)]),
    "sl_iter_free": (None, [c_void_p]),
    "sl_iter_stop": (None, [c_void_p]),
    "sl_iter_wait": (c_int, [c_void_p, c_int]),
    "sl_iter_errmsg": (c_char_p, [c_void_p]),
    "sl_iter_next": (c_int, [c_void_p, POINTER(c_void_p)]),
    "sl_iter_release": (None, [c_void_p, c_void_p]),
    "sl_iter_max_held": (c_int, [c_void_p]),
    "sl_iter_held": (c_int, [c_void_p]),
    "sl_iter_exports": (c_int, [c_void_p]),
    "sl_iter_dlpack": (c_int, [c_void_p, c_int, c_int, c_int, POINTER(c_void_p), POINTER(Err)]),
    "sl_iter_reset": (None, [c_void_p]),
    "sl_iter_len": (c_int64, [c_void_p]),
    "sl_iter_size": (c_int64, [c_void_p]),
    "sl_iter_epoch": (c_int, [c_void_p]),
    "sl_iter_step": (c_int64, [c_void_p]),
    "sl_iter_num_devices": (c_int, [c_void_p]),
    "sl_iter_device_batch": (c_int, [c_void_p]),
    "sl_iter_num_outputs": (c_int, [c_void_p]),
    "sl_iter_output_name": (c_char_p, [c_void_p, c_int]),
    "sl_iter_pipeline": (c_void_p, [c_void_p, c_int]),
    "sl_iter_shard": (c_int, [c_void_p, c_int, c_int, POINTER(Tensor), POINTER(Err)]),
    "sl_iter_shard_list": (POINTER(TList), [c_void_p, c_int, c_int]),
    "sl_iter_key": (c_char_p, [c_void_p, c_int, c_int]),
    "sl_iter_batch_valid": (c_int, [c_void_p, c_int]),
    "sl_iter_save": (c_int, [c_void_p, c_void_p, c_size_t, POINTER(c_void_p),
                             POINTER(c_size_t)]),
    "sl_iter_resumed_extra": (c_void_p, [c_void_p, POINTER(c_size_t)]),
}


# the C struct each class mirrors (checked against the library at import, field by field)
STRUCTS = {"sl_err": Err, "sl_device": Device, "sl_tensor": Tensor, "sl_tlist": TList,
           "sl_pipeline_config": PipelineConfig, "sl_reader_meta": ReaderMeta,
           "sl_source_info": SourceInfo, "sl_source": Source, "sl_function_io": FunctionIO,
           "sl_function": Function, "sl_thread_hooks": ThreadHooks,
           "sl_pipeline_bind": PipelineBind,
           "sl_iter_config": IterConfig, "sl_op_info": OpInfo, "sl_op_arg_info": OpArgInfo}
# fields named otherwise here than in the header: (struct, C name) -> name here (`def` is a
# Python keyword, so `info.def` could not be written)
FIELD_NAMES = {("sl_op_arg_info", "def"): "default"}


def c_fields(lib, cname):
    """The library's fields of struct cname: [(name, offset, size)] in declaration order."""
    out, off, size = [], c_size_t(), c_size_t()
    while True:
        name = lib.sl_abi_field(cname.encode(), len(out), ctypes.byref(off), ctypes.byref(size))
        if name is None:
            return out
        out.append((name.decode(), off.value, size.value))


def struct_mismatches(lib, structs):
    """The structs (C name -> ctypes class) laid out otherwise than the library's, each described
    once: its size, else the first field whose name, offset or size differs, or is missing."""
    wrong = []
    for cname, py in structs.items():
        have = lib.sl_abi_struct_size(cname.encode())
        if have != ctypes.sizeof(py):
            wrong.append("%s (%d bytes, the package has %d)" % (cname, have, ctypes.sizeof(py)))
            continue
        ours = [(f[0], getattr(py, f[0]).offset, getattr(py, f[0]).size) for f in py._fields_]
        theirs = [(FIELD_NAMES.get((cname, n), n), o, z) for n, o, z in c_fields(lib, cname)]
        for i in range(max(len(ours), len(theirs))):
            a = ours[i] if i < len(ours) else None
            b = theirs[i] if i < len(theirs) else None
            if a != b:
                wrong.append("%s (field %d: %s in the library, %s in the package)" % (
                    cname, i, "%s, %d bytes at %d" % (b[0], b[2], b[1]) if b else "none",
                    "%s, %d bytes at %d" % (a[0], a[2], a[1]) if a else "none"))
                break
    return wrong


def _candidates():
    env = os.environ.get("SLUICE_LIBRARY")
    if env:
        yield env
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "_lib", "libsluice.so")  # a wheel, an editable install, make python
    root = os.path.dirname(os.path.dirname(here))
    if os.path.exists(os.path.join(root, "CMakeLists.txt")):  # python/sluice of a source checkout
        yield os.path.join(root, "build", "libsluice.so")


def _installed():
    """The library installed where the dynamic loader looks (cmake --install, a package)."""
    name = ctypes.util.find_library("sluice")
    for n in ([name] if name else []) + ["libsluice.so.0"]:
        try:
            return ctypes.CDLL(n)
        except OSError:
            pass
    return None


def _load():
    tried = []
    for path in _candidates():
        if os.path.exists(path):
            lib = ctypes.CDLL(os.path.abspath(path))
            break
        tried.append(path)
    else:
        lib = _installed()
        if lib is None:
            raise ImportError("sluice: libsluice.so not found (looked at %s, and where the dynamic "
                              "loader looks); install the package with `pip install .` from the "
                              "source tree, or set SLUICE_LIBRARY to the library's path" % ", ".join(tried))
    missing = []
    for name, (res, args) in _API.items():
        try:
            f = getattr(lib, name)
        except AttributeError:
            missing.append(name)
            continue
        f.restype = res
        f.argtypes = args
    if missing:
        raise ImportError("sluice: %s lacks %s (built from an older source tree?)"
                          % (lib._name, ", ".join(missing)))
    # the structs laid out here must be the library's: another size would corrupt memory
    wrong = struct_mismatches(lib, STRUCTS)
    if wrong:
        raise ImportError("sluice: %s lays out %s differently: a library from another version "
                          "of the sources" % (lib._name, ", ".join(wrong)))
    return lib


lib = _load()
libc = ctypes.CDLL(None)
libc.free.argtypes = [c_void_p]
libc.free.restype = None


def s(text):
    """A C string from text."""
    return text.encode("utf-8") if isinstance(text, str) else text


def u(raw):
    """Text from a C string (None stays None)."""
    return raw.decode("utf-8", "replace") if raw is not None else None


def take_bytes(ptr, size):
    """bytes from a malloc'd block, which is then freed."""
    try:
        return ctypes.string_at(ptr, size)
    finally:
        libc.free(ptr)


