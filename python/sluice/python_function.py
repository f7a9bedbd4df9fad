# SPDX-License-Identifier: Apache-2.0
"""fn.python_function, fn.torch_python_function and fn.dl_tensor_python_function: a Python
callable run on op outputs, as DALI's are. The library's op of that name calls back here once per
batch with every sample's inputs (views of the pipeline's memory); a per-sample function
(batch_processing=False, the default) is called from a thread pool of the pipeline's num_threads
workers, each taking a run of the batch's samples (fewer hand-offs of the GIL than a task per
sample), so functions that release the GIL (numpy's array code, most of torch) run side by side;
a batch_processing function is called once with lists. The results are kept until the next
batch, and the pipeline's workers copy them into its outputs. python_function gives numpy copies
the function may write into, torch_python_function torch tensors and dl_tensor_python_function
DLPack capsules (views: not to be written); each may return numpy arrays, torch tensors, or
anything with the buffer protocol or __dlpack__.

On the GPU (device="gpu", DALI's GPU python functions) the inputs are views of the pipeline's
device memory: torch CUDA tensors for torch_python_function, DLPack capsules of CUDA memory for
dl_tensor_python_function, and cupy arrays for python_function (which therefore needs cupy). The
function returns GPU memory (torch CUDA tensors, capsules, objects with __dlpack__) or host
arrays; torch's work is synchronized before the op copies the results on its own stream."""

import ctypes
import itertools
import os
import threading
import typing
from concurrent.futures import ThreadPoolExecutor, wait

from . import _c, errors
from . import types as _types

_counter = itertools.count()
FORMS = ("python_function", "torch_python_function", "dl_tensor_python_function")


class _Capsule:
    """A DLPack capsule as numpy.from_dlpack (cupy.from_dlpack) takes it."""

    def __init__(self, cap, device=(1, 0)):
        self.cap = cap
        self.device = device

    def __dlpack__(self, stream=None):
        return self.cap

    def __dlpack_device__(self):
        return self.device


class _DeviceView:
    """A GPU sample as sluice.tensors exports one through DLPack."""

    def __init__(self, ptr, shape, dtype, device_id):
        self._ptr, self._shape, self._dtype, self._dev = ptr, shape, dtype, device_id

    def __dlpack_device__(self):
        from .tensors import KDL_CUDA
        return (KDL_CUDA, self._dev)


def _torch_name(dt):
    """numpy's name of a torch dtype ("float32", "uint8", "bool", ...)"""
    return str(dt).rsplit(".", 1)[-1]


class PyFunction:
    """The callable behind one python_function op: the library's sl_function callback."""

    def __init__(self, function, nout, batch_processing, form, workers, gpu=False):
        self.function = function
        self.gpu = gpu
        self.nout = nout
        self.batch_processing = batch_processing
        self.form = form
        self.workers = max(1, workers)
        self.name = "python_function_%d" % next(_counter)
        self.exc = None  # errors go back through the op's message (naming the op and batch)
        self.calling = False
        self._recording = False
        self._pool = None
        self._lock = threading.Lock()
        self._keep = []
        self._call_cb = _c.CALL_FN(self._call)
        self._struct = _c.Function(self._call_cb, None)

    def attach(self, p):
        errors.check(_c.lib.sl_pipeline_add_function(p, _c.s(self.name),
                                                     ctypes.byref(self._struct)),
                     None, "fn." + self.form)

    def consumed(self):
        pass

    def __del__(self):
        if self._pool is not None:
            self._pool.shutdown(wait=False)

    # ---- the call ---------------------------------------------------------------------------

    def _view(self, t):
        import numpy as np
        dtype = np.dtype(_types.np_name(_types.from_sl(t.dtype)))
        shape = tuple(t.shape[k] for k in range(t.ndim))
        if t.device.kind == _c.DEVICE_CUDA:
            return self._device_view(t, shape)
        n = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if n == 0 or not t.data:
            a = np.zeros(shape, dtype)
        else:
            buf = (ctypes.c_char * (n * dtype.itemsize)).from_address(t.data)
            a = np.frombuffer(buf, dtype).reshape(shape)
        if self.form == "python_function":
            # a copy the function may write into, as DALI's functions may (an edit in place of a
            # view would reach every other reader of the input)
            return a.copy()
        if self.form == "torch_python_function":
            import torch
            return torch.from_numpy(a)
        return a.__dlpack__()

    def _device_view(self, t, shape):
        from .tensors import _dlpack_capsule
        cap = _dlpack_capsule(_DeviceView(t.data, shape, _types.from_sl(t.dtype), t.device.id))
        if self.form == "dl_tensor_python_function":
            return cap
        if self.form == "torch_python_function":
            import torch.utils.dlpack
            return torch.utils.dlpack.from_dlpack(cap)
        import cupy
        return cupy.from_dlpack(_Capsule(cap, (2, t.device.id)))

    def _device_result(self, x):
        """A GPU result (torch CUDA tensor, CUDA capsule or __dlpack__ object) as a contiguous
        torch tensor; None for a host result."""
        try:
            import torch
            import torch.utils.dlpack
        except ImportError:
            torch = None
        if torch is not None and isinstance(x, torch.Tensor):
            return x.detach().contiguous() if x.is_cuda else None
        dev = None
        if type(x).__name__ == "PyCapsule":
            from .tensors import _DLManagedTensor, _capsule_ptr_obj
            dev = _DLManagedTensor.from_address(_capsule_ptr_obj(x, b"dltensor")).dl_tensor.device
            dev = (dev.device_type, dev.device_id)
        elif hasattr(x, "__dlpack_device__"):
            dev = tuple(x.__dlpack_device__())
        if dev is None or dev[0] != 2:
            return None
        if torch is None:
            raise errors.NotSupportedError("a GPU result needs torch here to be read")
        return torch.utils.dlpack.from_dlpack(x).contiguous()

    def _array(self, x, what):
        """A function's result as a contiguous numpy array of a type sluice has."""
        import numpy as np
        if self.gpu:
            g = self._device_result(x)
            if g is not None:
                try:
                    code = _types.to_sl({v[0]: k for k, v in _types._INFO.items()}[
                        _torch_name(g.dtype)])
                except (KeyError, ValueError):
                    raise errors.InvalidArgumentError("%s is %s, a type sluice has no tensors of"
                                                      % (what, g.dtype)) from None
                return g, code
        if hasattr(x, "detach") and hasattr(x, "numpy"):  # torch
            x = x.detach().cpu().numpy()
        elif type(x).__name__ == "PyCapsule":
            x = np.from_dlpack(_Capsule(x))
        elif not isinstance(x, np.ndarray) and hasattr(x, "__dlpack__") and \
                not hasattr(x, "__array_interface__"):
            x = np.from_dlpack(x)
        a = np.asarray(x)
        if not a.flags.c_contiguous:  # (np.ascontiguousarray would make a 0-d result 1-d)
            a = np.ascontiguousarray(a)
        try:
            code = _types.to_sl(_types.from_np_name(a.dtype.name))
        except (KeyError, ValueError):
            raise errors.InvalidArgumentError("%s is %s, a type sluice has no tensors of"
                                              % (what, a.dtype)) from None
        if a.ndim > _c.MAX_DIMS:
            raise errors.InvalidArgumentError("%s has %d dimensions (at most %d)"
                                              % (what, a.ndim, _c.MAX_DIMS))
        return a, code

    def _results(self, r, what):
        """The function's return value as a list of nout results."""
        if self.nout == 0:
            return []
        if self.nout == 1:
            return [r]
        if not isinstance(r, tuple):  # DALI's rule: a list is one output's data, not outputs
            raise errors.InvalidArgumentError("%s returned %s: the outputs of a function with "
                                              "num_outputs=%d must be a tuple"
                                              % (what, type(r).__name__, self.nout))
        if len(r) != self.nout:
            raise errors.InvalidArgumentError("%s: Unexpected number of outputs: got %d, "
                                              "expected %d (num_outputs)"
                                              % (what, len(r), self.nout))
        return list(r)

    def _call(self, user, io_p, err):
        self.calling = True
        try:
            import numpy as np
            io = io_p.contents
            B, nin, nout = io.batch, io.num_inputs, io.num_outputs
            ins = [[self._view(io.inputs[i * nin + k]) for k in range(nin)] for i in range(B)]
            f = self.function
            if self.batch_processing:
                res = self._results(f(*[[ins[i][k] for i in range(B)] for k in range(nin)]),
                                    "the function")
                per = []
                for k, r in enumerate(res):
                    if len(r) != B:
                        raise errors.InvalidArgumentError(
                            "output %d has %d samples for a batch of %d" % (k, len(r), B))
                    per.append(list(r))
                outs = [[per[k][i] for k in range(nout)] for i in range(B)]
            else:
                def run(lo, hi):
                    return [self._results(f(*ins[i]), "the function (sample %d)" % i)
                            for i in range(lo, hi)]
                W = min(self.workers, B)
                if W > 1:
                    if self._pool is None:
                        self._pool = ThreadPoolExecutor(self.workers,
                                                        thread_name_prefix="sluice-pyfunc")
                    # a run of samples per worker, not a task per sample: fewer hand-offs of
                    # the GIL; every run ends before the call returns (they read its inputs)
                    cut = [B * w // W for w in range(W + 1)]
                    runs = [self._pool.submit(run, cut[w], cut[w + 1]) for w in range(1, W)]
                    try:
                        outs = run(cut[0], cut[1])
                    finally:
                        wait(runs)
                    for r in runs:
                        outs += r.result()
                else:
                    outs = run(0, B)
            keep = []
            synced = set()
            for i in range(B):
                for k in range(nout):
                    a, code = self._array(outs[i][k], "output %d of sample %d" % (k, i))
                    keep.append(a)
                    t = io.outputs[i * nout + k]
                    if isinstance(a, np.ndarray):
                        t.data = a.ctypes.data if a.size else None
                        t.device.kind, t.device.id = _c.DEVICE_CPU, 0
                    else:  # a torch CUDA tensor: its work done before the op copies it
                        if a.device.index not in synced:
                            import torch
                            torch.cuda.synchronize(a.device)
                            synced.add(a.device.index)
                        t.data = a.data_ptr() if a.numel() else None
                        t.device.kind, t.device.id = _c.DEVICE_CUDA, a.device.index
                    t.dtype = code
                    t.ndim = a.ndim
                    for d in range(a.ndim):
                        t.shape[d] = a.shape[d]
            self._keep = keep  # alive until the next batch's call: the op copies them before
            return _c.OK
        except BaseException as e:  # noqa: B902 -- goes back to the pipeline as its error
            msg = ("%s: %s" % (type(e).__name__, e)).encode("utf-8", "replace")
            err.contents.msg = msg[:_c.ERRMSG_MAX - 1]
            err.contents.status = _c.EINVAL
            return _c.EINVAL
        finally:
            self.calling = False


def python_function_call(schema):
    from .fn import _call

    def python_function(*inputs: typing.Any, function: typing.Callable | None = None,
                        num_outputs: int = 1, batch_processing: bool = False,
                        output_layouts: str | list | None = None, device: str = "cpu",
                        name: str | None = None, preserve: bool | None = None,
                        **kw: typing.Any) -> typing.Any:
        """DALI's fn.python_function (and torch_python_function, dl_tensor_python_function):
        `function` run on each sample's inputs (lists of them with batch_processing=True), given
        as numpy arrays (torch tensors, DLPack capsules), its results the op's num_outputs
        outputs (the module sluice.python_function says how it runs)."""
        from ._state import current
        where = "fn." + schema.name
        pipe = current()
        if pipe is None:
            raise errors.StateError("%s called outside a pipeline definition" % where)
        if not callable(function):
            raise errors.ArgumentTypeError("%s: function must be a callable, not %s"
                                           % (where, type(function).__name__))
        if device not in ("cpu", "gpu"):
            raise errors.InvalidArgumentError("%s: device=%r (\"cpu\" or \"gpu\")"
                                              % (where, device))
        if device == "gpu" and schema.name == "python_function":
            try:
                import cupy  # noqa: F401 -- DALI's GPU python_function hands out cupy arrays
            except ImportError:
                raise errors.NotSupportedError(
                    "%s: device=\"gpu\" hands the function cupy arrays, and cupy is not "
                    "installed (torch_python_function and dl_tensor_python_function take GPU "
                    "data without it)" % where) from None
        if kw:
            raise errors.ArgumentTypeError("%s got an unexpected argument '%s'"
                                           % (where, sorted(kw)[0]))
        if not isinstance(num_outputs, int) or num_outputs < 0:
            raise errors.InvalidArgumentError("%s: num_outputs=%r (0 or more)"
                                              % (where, num_outputs))
        workers = pipe.num_threads if getattr(pipe, "num_threads", 0) else (os.cpu_count() or 1)
        fn_obj = PyFunction(function, num_outputs, bool(batch_processing), schema.name, workers,
                            device == "gpu")
        pipe._graph.sources.append(fn_obj)
        args = {"function": fn_obj.name, "num_outputs": num_outputs,
                "batch_processing": bool(batch_processing)}
        if any(isinstance(x, (list, tuple)) for x in inputs):
            raise errors.ArgumentTypeError("%s: Python operators do not support multiple input "
                                           "sets (an input given as a list)" % where)
        if isinstance(output_layouts, (list, tuple)) and len(output_layouts) < num_outputs:
            # DALI's: a shorter list lays out the first outputs, the rest get none
            output_layouts = list(output_layouts) + [""] * (num_outputs - len(output_layouts))
        if output_layouts is not None:
            args["output_layouts"] = output_layouts
        if name is not None:
            args["name"] = name
        if preserve is not None:
            args["preserve"] = preserve
        if device != "cpu":
            args["device"] = device
        return _call(schema, inputs, args)

    python_function.schema = schema
    return python_function
