# SPDX-License-Identifier: Apache-2.0
"""sluice.plugin.jax: DALI's nvidia.dali.plugin.jax on sluice -- the ``data_iterator`` decorator
and ``DALIGenericIterator``, giving ``jax.Array`` outputs.

    from sluice.plugin.jax import data_iterator

    @data_iterator(output_map=["images", "labels"], reader_name="reader", sharding=sharding)
    def training(data_path, num_shards, shard_id):
        jpegs, labels = fn.readers.caffe2(path=data_path, name="reader",
                                          num_shards=num_shards, shard_id=shard_id)
        ...
    it = training(batch_size=200, data_path="data/training")

One pipeline per addressable device, with num_shards/shard_id filled in (global, process-major
under jax.distributed). With ``sharding`` every output is one global jax.Array laid out by it
(jax.make_array_from_single_device_arrays); with ``devices`` a stacked (devices, batch, ...) array
for pmap; with neither, one pipeline's batch. Each device's part is taken from the pipeline's
buffer through DLPack."""

import functools
import inspect
import os
import typing

import jax
import jax.dlpack
import numpy as np

from ... import _c, errors
from ..._values import INT_MAX, is_int
from ...pipeline import Pipeline, trace
from ...tensors import KDL_CUDA, c_export, capsule_device, capsule_fresh as _capsule_fresh
from .._common import BaseIterator, LastBatchPolicy, pipeline_device
from .._iterator import LAYOUT_NONE, LAYOUT_SHARDED, LAYOUT_STACKED, SlIterator, stacked

__all__ = ["data_iterator", "DALIGenericIterator", "LastBatchPolicy"]


def _to_jax(t, dev=None):
    """t as a jax.Array on dev. An output in host memory (a CPU op's, e.g. labels not moved with
    .gpu()) for a GPU device is copied to it. DLPack names only "the CPU", which JAX takes as its
    first CPU device: a part meant for another (several CPU devices: XLA's host platform device
    count, or the CPU devices of a jax.distributed process) is copied there too."""
    a = jax.dlpack.from_dlpack(t)
    if dev is not None and dev not in a.devices():
        a = jax.device_put(a, dev)
    return a


def _jaxlib_import():
    """jaxlib's DLPack import, under jax.dlpack.from_dlpack's Python layers (which find the
    device and its stream again for every array: half of a step's import time), or None where
    this JAX has no such function or SLUICE_JAX_IMPORT=public asks for the public call. Used with
    no stream: the library completes a batch's device work before handing it out. Any failure
    turns it off for the process, and the public call takes over."""
    if os.environ.get("SLUICE_JAX_IMPORT", "") == "public":
        return None
    try:
        from jax._src.lib import xla_client
        return xla_client._xla.dlpack_managed_tensor_to_buffer
    except Exception:  # noqa: B902 -- internal: absent or moved in other JAX versions
        return None


_fast_import = [_jaxlib_import()]


def _import(x, dev):
    """x (an _Export) as a jax.Array on dev, the JAX device whose memory it is; an export of host
    memory (a CPU output) is copied to dev."""
    if x._dev[0] != KDL_CUDA:
        return _to_jax(x, dev)
    f = _fast_import[0]
    if f is not None:
        try:
            a = f(x._cap, dev, None)
            if isinstance(a, jax.Array):
                x._cap = None
                return a
        except Exception:  # noqa: B902
            pass
        _fast_import[0] = None
        if x._cap is None or not _capsule_fresh(x._cap):
            raise _Retry()
    return jax.dlpack.from_dlpack(x)


def _full_shards(name, shards, batch_size, axis):
    """A sharded or stacked global array is made of full parts: a short batch (an external source
    that gave fewer samples, DALI's variable batch size) is refused there."""
    for d, x in enumerate(shards):
        if x.shape[axis] != batch_size:
            raise errors.InvalidArgumentError(
                "output %r: device %d's part has %d samples, but the batch size is %d: a sharded "
                "or stacked array needs full batches (variable batch size works with one "
                "pipeline and no sharding)" % (name, d, x.shape[axis], batch_size))


class _Retry(Exception):
    """The fast import failed after taking the capsule: the batch goes the public way."""


class _Export:
    """One DLPack capsule of the library's export (tensors.c_export), handed to from_dlpack."""

    __slots__ = ("_cap", "_dev")

    def __init__(self, cap, dev):
        self._cap, self._dev = cap, dev

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        # the library completes a batch's device work before handing it out: nothing to wait for
        cap, self._cap = self._cap, None
        if cap is None:
            raise BufferError("a DLPack export is consumed once")
        return cap

    def __dlpack_device__(self):
        return self._dev


def _sluice_device(d):
    """The library's device for a JAX device."""
    if d.platform == "cpu":
        return (_c.DEVICE_CPU, 0)
    hw = getattr(d, "local_hardware_id", None)
    return (_c.DEVICE_CUDA, d.id if hw is None else hw)


def _mesh_size(sharding):
    return len(sharding.device_set)


class DALIGenericIterator(BaseIterator):
    """jax.Array batches of sluice pipelines (one per device), as DALI's JAX iterator: a dict
    keyed by output_map per step."""

    def __init__(self, pipelines: typing.Sequence[Pipeline] | Pipeline,
                 output_map: typing.Sequence[str], size: int = -1,
                 reader_name: str | None = None, auto_reset: bool | str = False,
                 last_batch_padded: bool = False,
                 last_batch_policy: LastBatchPolicy = LastBatchPolicy.FILL,
                 prepare_first_batch: bool = True, sharding: typing.Any = None,
                 checkpoint: bytes | None = None, global_order: bool = False,
                 _devices=None, _slit=None, _local=None) -> None:
        if LastBatchPolicy(last_batch_policy) == LastBatchPolicy.PARTIAL:
            raise errors.InvalidArgumentError("last_batch_policy PARTIAL is not supported with "
                                              "JAX (as DALI): use FILL or DROP")
        self._sharding = sharding
        self._devices = _devices
        self._local = _local
        if _slit is not None:  # made by data_iterator
            self._it, self.output_map, self.batch_size = _slit
            self._auto_reset = auto_reset in (True, "yes")
            self._ended = False
            self._ever = False
        else:
            self._init_from_pipelines(pipelines, output_map, size, reader_name, auto_reset,
                                      last_batch_padded, last_batch_policy, prepare_first_batch,
                                      checkpoint, global_order=global_order)
        self._jax_devices = self._match_devices()

    def _match_devices(self):
        """The JAX device of each pipeline, in pipeline order."""
        if self._devices is not None:
            return list(self._devices)
        if self._local is not None:
            return list(self._local)
        by_key = {}
        for d in jax.local_devices():  # CPU pipelines: JAX's first CPU device
            by_key.setdefault(_sluice_device(d), d)
        devs = []
        for p in getattr(self, "_pipes", []):
            key = pipeline_device(p)
            if key not in by_key:
                raise errors.InvalidArgumentError("no JAX device for a pipeline on %s %d"
                                                  % ("GPU" if key[0] else "CPU", key[1]))
            devs.append(by_key[key])
        return devs

    def _hand_over(self, b, hold, copy):
        # the hand-over: each part exported by the library (its DLPack deleter is C, so JAX may
        # drop the arrays from any thread), with no Python tensor objects in between; through
        # them where the batch must be copied or an output has no dense tensor
        if not copy:
            out = self._exported(b.value)
            if out is not None:
                return out
        return self._convert(self._it.rows(b, hold, copy))

    def _exported(self, b):
        n = self._it.num_devices
        flags = _c.DLPACK_STACKED if self._stack else 0
        parts = []
        for o in range(len(self.output_map)):
            row = []
            for d in range(n):
                try:
                    cap = c_export(b, o, d, flags)
                except errors.Error:
                    cap = None  # e.g. samples of different shapes: the Python path says so
                if cap is None:
                    return None
                # where the memory is: the device's, or the host's for an output of CPU ops
                row.append(_Export(cap, capsule_device(cap)))
            parts.append(row)
        try:
            return self._assemble(lambda o, d: parts[o][d], n, exported=True)
        except _Retry:
            return None

    def _convert(self, step):
        def part(o, d):
            t = step[d][o]
            if not hasattr(t, "_ptr"):
                t = t.as_tensor()
            return stacked(t) if self._stack else t
        return self._assemble(part, len(step))

    def _assemble(self, part, n, exported=False):
        out = {}
        devs = self._jax_devices
        for o, name in enumerate(self.output_map):
            if exported and devs and devs[0].platform != "cpu":
                shards = [_import(part(o, d), devs[d]) for d in range(n)]
            else:
                shards = [_to_jax(part(o, d), devs[d] if devs else None) for d in range(n)]
            if self._sharding is not None or self._stack:
                _full_shards(name, shards, self.batch_size, 1 if self._stack else 0)
            if self._sharding is not None:
                shape = (self.batch_size * _mesh_size(self._sharding),) + tuple(shards[0].shape[1:])
                out[name] = jax.make_array_from_single_device_arrays(shape, self._sharding, shards)
            elif self._stack:
                shape = (len(self._jax_devices),) + tuple(shards[0].shape[1:])
                out[name] = jax.make_array_from_single_device_arrays(shape, self._stack_sharding,
                                                                     shards)
            else:
                out[name] = shards[0] if n == 1 else jax.numpy.concatenate(shards)
        return out

    @property
    def _stack(self):
        return self._devices is not None and self._sharding is None

    @functools.cached_property
    def _stack_sharding(self):
        mesh = jax.sharding.Mesh(np.array(self._jax_devices), ("devices",))
        return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("devices"))


def _accepts(func, name):
    ps = inspect.signature(func).parameters
    return name in ps or any(p.kind == p.VAR_KEYWORD for p in ps.values())


def data_iterator(pipeline_fn: typing.Callable | None = None,
                  output_map: typing.Sequence[str] = (), size: int = -1,
                  reader_name: str | None = None, auto_reset: bool | str = False,
                  last_batch_padded: bool = False,
                  last_batch_policy: LastBatchPolicy = LastBatchPolicy.FILL,
                  prepare_first_batch: bool = True, sharding: typing.Any = None,
                  devices: typing.Any = None, global_order: bool = False) -> typing.Callable:
    """DALI's decorator: the decorated pipeline function, called with ``batch_size`` (global) and
    its own arguments (plus num_threads, seed, prefetch_queue_depth, device_id, checkpoints,
    default_cuda_stream_priority),
    returns an iterator of jax.Array dicts. ``global_order=True`` (a sluice extension): one order
    of the whole data set per epoch, the same global batches on any device or process count."""
    return data_iterator_impl(DALIGenericIterator, pipeline_fn, output_map, size, reader_name,
                              auto_reset, last_batch_padded, last_batch_policy,
                              prepare_first_batch, sharding, devices, global_order)


def data_iterator_impl(iterator_class, pipeline_fn, output_map, size, reader_name, auto_reset,
                       last_batch_padded, last_batch_policy, prepare_first_batch, sharding,
                       devices, global_order):
    """data_iterator, making iterator_class (DALIGenericIterator or a subclass of it: the
    peekable iterator of sluice.plugin.jax.clu)."""
    if sharding is not None and devices is not None:
        raise ValueError("data_iterator: give sharding or devices, not both")
    if LastBatchPolicy(last_batch_policy) == LastBatchPolicy.PARTIAL:
        raise errors.InvalidArgumentError("last_batch_policy PARTIAL is not supported with JAX "
                                          "(as DALI): use FILL or DROP")

    def decorate(func):
        @functools.wraps(func)
        def create(*args, batch_size, num_threads=None, seed=-1, prefetch_queue_depth=2,
                   device_id=None, checkpoints=None, default_cuda_stream_priority=0, **kwargs):
            if not isinstance(batch_size, int) or batch_size < 1:
                raise errors.InvalidArgumentError("batch_size=%r (a positive int)" % (batch_size,))
            nglobal = jax.device_count()
            if sharding is not None:
                # the devices of this process, in the order of the rows they hold
                shape = (nglobal * max(1, batch_size // nglobal),)
                index = sharding.addressable_devices_indices_map(shape)
                local = sorted(index, key=lambda d: (index[d][0].start or 0))
                per = batch_size // _mesh_size(sharding)
                first = (index[local[0]][0].start or 0) // max(1, per)
                total = _mesh_size(sharding)
                layout = LAYOUT_SHARDED
            elif devices is not None:
                if jax.local_device_count() != jax.device_count():
                    raise RuntimeError("Iterator compatible with pmapped JAX functions does not "
                                       "support running in multiprocess mode. Use `sharding` "
                                       "argument instead.")
                local = list(devices)
                per = batch_size // nglobal
                first, total = 0, len(local)
                layout = LAYOUT_STACKED
            else:
                dev = jax.local_devices()[0] if device_id is None else \
                    [d for d in jax.local_devices() if _sluice_device(d)[1] == device_id][0]
                local = [dev]
                per, first, total = batch_size, 0, 1
                layout = LAYOUT_NONE
            if per < 1:
                raise errors.InvalidArgumentError("batch_size %d over %d devices" % (
                    batch_size, nglobal))
            sl_devices = [_sluice_device(d) for d in local]
            if num_threads is None or (is_int(num_threads) and num_threads == -1):
                # the library chooses for one pipeline per local device, all running at once
                num_threads = None
            elif not is_int(num_threads) or not 1 <= num_threads <= INT_MAX:
                raise errors.InvalidArgumentError("num_threads=%r (a positive int; None or -1: "
                                                  "chosen from the machine)" % (num_threads,))
            if not is_int(default_cuda_stream_priority) or \
                    not -INT_MAX <= default_cuda_stream_priority <= INT_MAX:
                raise errors.InvalidArgumentError(
                    "default_cuda_stream_priority=%r (an int: CUDA's stream priority, lower is "
                    "more urgent)" % (default_cuda_stream_priority,))

            def graph_for(i, shard_id, num_shards):
                fk = dict(kwargs)
                if layout != LAYOUT_NONE or _accepts(func, "num_shards"):
                    if _accepts(func, "num_shards"):
                        fk["num_shards"] = num_shards
                    if _accepts(func, "shard_id"):
                        fk["shard_id"] = shard_id
                kind, ident = sl_devices[i]
                pipe = Pipeline(batch_size=per, num_threads=num_threads,
                                device_id=ident if kind == _c.DEVICE_CUDA else None, seed=seed,
                                prefetch_queue_depth=prefetch_queue_depth)
                trace(pipe, func, args, fk)
                return pipe._graph

            ckpt = checkpoints[0] if isinstance(checkpoints, (list, tuple)) else checkpoints
            slit = SlIterator(graph_for, sl_devices, per * total, num_threads, seed,
                              prefetch_queue_depth, first, total, list(output_map) or None,
                              reader_name, size, last_batch_policy, last_batch_padded,
                              prepare_first_batch, auto_reset,
                              LAYOUT_SHARDED if layout != LAYOUT_NONE else LAYOUT_NONE, ckpt,
                              global_order, stream_priority=int(default_cuda_stream_priority))
            names = list(output_map) or slit.output_names
            return iterator_class(None, names, auto_reset=auto_reset, sharding=sharding,
                                  _devices=local if layout == LAYOUT_STACKED else None,
                                  _slit=(slit, names, per), _local=local)
        return create
    return decorate(pipeline_fn) if pipeline_fn is not None else decorate
