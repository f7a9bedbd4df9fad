# SPDX-License-Identifier: Apache-2.0
"""Pipelines defined in Python, as in DALI: ``@pipeline_def`` functions are *traced* -- called with
symbolic DataNodes, so helper functions, loops, closures and conditionals on Python values all
work -- and every op call goes straight to the C builder of a scratch pipeline, so a bad argument
fails at the line that wrote it. The recorded graph is then replayed into as many real pipelines
as are needed (one per device for the iterators)."""

import ctypes
import functools
import inspect
import os
import threading
import typing
from ctypes import byref, c_void_p

from . import _c, _conditionals, errors
from ._graph import Graph, pipeline_error
from ._deferred import resolve
from ._owner import Owner, drain_deferred, guarded
from ._state import local, stack
from ._values import INT_MAX, UINT64_MAX, checkpoint_bytes, is_int
from ._conditionals import do_not_convert  # noqa: F401 -- sluice.pipeline.do_not_convert
from .data_node import DataNode  # noqa: F401 -- sluice.pipeline.DataNode, as DALI has it
from .pipeline_api import PipelineAPI
from .tensors import from_c_list, logical_gpu

# ---- pipelines -----------------------------------------------------------------------------------

PIPELINE_ARGS = ("batch_size", "num_threads", "device_id", "seed", "prefetch_queue_depth",
                  "exec_async", "exec_pipelined", "exec_dynamic", "experimental_exec_dynamic",
                  "enable_checkpointing",
                  "checkpoint", "py_num_workers", "py_start_method", "set_affinity",
                  "max_streams", "default_cuda_stream_priority", "enable_memory_stats",
                  "bytes_per_sample", "output_dtype", "output_ndim")


def _gpu_count():
    """GPUs the library sees (its own CUDA runtime's count; 0 without CUDA)."""
    try:
        return _gpu_count.n
    except AttributeError:
        pass
    cfg = _c.IterConfig()
    _c.lib.sl_iter_config_init(byref(cfg))
    err = _c.Err()
    n = 0
    if _c.lib.sl_iter_parse_devices(b"all", byref(cfg), byref(err)) == _c.OK:
        n = sum(1 for i in range(cfg.ndevices) if cfg.devices[i].kind == _c.DEVICE_CUDA)
    _gpu_count.n = n
    return n


_UNSET = object()

def default_num_threads(pipelines):
    """The CPU threads of each of `pipelines` pipelines that run at once when none is given: the
    library's rule (sl_pipeline_default_threads), the CPUs this process may run on shared among
    them, less one, 1..64."""
    return _c.lib.sl_pipeline_default_threads(max(1, min(int(pipelines), INT_MAX)))


def random_seed():
    return int.from_bytes(os.urandom(8), "little") >> 1


class Pipeline(PipelineAPI, Owner):
    """A DALI-style pipeline (nvidia.dali.Pipeline): defined inside ``with pipe:`` and
    ``pipe.set_outputs(...)``, or by a ``@pipeline_def`` function; ``build()`` starts it and
    ``run()`` returns one batch: a tuple of TensorList, one per output.

    num_threads: CPU workers; left out (-1 or None), chosen from the machine: the CPUs this
    process may run on, shared by one pipeline per visible GPU for a GPU pipeline, less one
    (default_num_threads); ``pipe.num_threads`` says the count. device_id: a GPU ordinal, or None
    for a CPU-only pipeline (mixed and gpu ops then run on the CPU); the default is GPU 0 where
    there is one, else the CPU. prefetch_queue_depth: batches the pipeline prepares ahead (an
    int, or {"cpu_size": n, "gpu_size": m})."""

    def __init__(self, batch_size: int = -1, num_threads: int | None = -1,
                 device_id: int | None = _UNSET, seed: int | None = -1,
                 prefetch_queue_depth: int | dict = 2, exec_async: bool = True,
                 exec_pipelined: bool = True, exec_dynamic: bool = False,
                 enable_checkpointing: bool = False, checkpoint: bytes | None = None,
                 py_num_workers: int = 1, py_start_method: str = "fork",
                 set_affinity: bool = False, max_streams: int = -1,
                 default_cuda_stream_priority: int = 0, enable_memory_stats: bool = False,
                 bytes_per_sample: int = 0, output_dtype: typing.Any = None,
                 output_ndim: typing.Any = None,
                 experimental_exec_dynamic: bool | None = None) -> None:
        if not is_int(batch_size) or (batch_size < 1 and batch_size != -1) or \
                batch_size > INT_MAX:
            raise errors.InvalidArgumentError("Pipeline: batch_size=%r (a positive int, at most "
                                              "%d)" % (batch_size, INT_MAX))
        if num_threads is None:
            num_threads = -1
        if not is_int(num_threads) or (num_threads < 1 and num_threads != -1) or \
                num_threads > INT_MAX:
            raise errors.InvalidArgumentError("Pipeline: num_threads=%r (a positive int)"
                                              % (num_threads,))
        if device_id is _UNSET or (device_id is not None and device_id == -1):
            device_id = 0 if _gpu_count() > 0 else None
        if device_id is not None:
            if not is_int(device_id) or device_id < 0:
                raise errors.InvalidArgumentError("Pipeline: device_id=%r (a GPU ordinal, or None"
                                                  " for the CPU)" % (device_id,))
            if device_id >= _gpu_count():
                raise errors.InvalidArgumentError(
                    "Pipeline: device_id=%d, but %d GPUs are visible (device_id=None runs the "
                    "pipeline on the CPU)" % (device_id, _gpu_count()))
        if isinstance(prefetch_queue_depth, dict):
            bad = set(prefetch_queue_depth) - {"cpu_size", "gpu_size"}
            if bad:
                raise errors.InvalidArgumentError("Pipeline: prefetch_queue_depth keys %s (cpu_size"
                                                  ", gpu_size)" % sorted(bad))
            cpu_q = prefetch_queue_depth.get("cpu_size", 2)
            gpu_q = prefetch_queue_depth.get("gpu_size", 2)
        else:
            cpu_q = gpu_q = prefetch_queue_depth
        for q in (cpu_q, gpu_q):
            if not is_int(q) or not 1 <= q <= 16:
                raise errors.InvalidArgumentError("Pipeline: prefetch_queue_depth=%r (1..16)"
                                                  % (prefetch_queue_depth,))
        if not exec_pipelined:  # (DALI's simple executor: no batch is prepared ahead)
            cpu_q = gpu_q = 1
        if not is_int(py_num_workers) or py_num_workers < 0:
            raise errors.InvalidArgumentError("Pipeline: py_num_workers=%r (the worker processes "
                                              "of its parallel external sources)"
                                              % (py_num_workers,))
        if py_start_method not in ("fork", "spawn"):
            raise errors.InvalidArgumentError("Pipeline: py_start_method=%r ('fork' or 'spawn')"
                                              % (py_start_method,))
        if output_dtype is not None or output_ndim is not None:
            raise errors.NotSupportedError("Pipeline: output_dtype/output_ndim (check the outputs "
                                           "with their .dtype and .shape)")
        if not is_int(default_cuda_stream_priority) or \
                not -INT_MAX <= default_cuda_stream_priority <= INT_MAX:
            raise errors.InvalidArgumentError(
                "Pipeline: default_cuda_stream_priority=%r (an int: CUDA's stream priority, lower "
                "is more urgent; 0 the normal one)" % (default_cuda_stream_priority,))
        if seed is None:
            seed = -1
        elif not is_int(seed) or seed > UINT64_MAX:
            raise errors.InvalidArgumentError("Pipeline: seed=%r (an int, at most 2**64 - 1; "
                                              "negative or None: a random one)" % (seed,))
        if seed < 0:
            seed = -1  # as DALI: any negative seed draws a random one
        self.batch_size = int(batch_size)
        # none given: the GPUs' pipelines share the process's CPUs (as sl_pipeline_create's
        # SL_NUM_THREADS_AUTO); a CPU pipeline has them to itself
        self._threads_chosen = num_threads == -1
        self.num_threads = default_num_threads(_gpu_count() if device_id is not None else 1) \
            if self._threads_chosen else int(num_threads)
        self.device_id = device_id
        self.seed = int(seed)
        self.prefetch_queue_depth = prefetch_queue_depth
        self.default_cuda_stream_priority = int(default_cuda_stream_priority)
        self.py_num_workers, self.py_start_method = int(py_num_workers), py_start_method
        # exec_async=False: DALI's run() waits for the batch it asks for, which is what run()
        # does here too (the stages run on their own threads either way)
        self.exec_async, self.exec_pipelined = bool(exec_async), bool(exec_pipelined)
        self._prefetch = (int(cpu_q), int(gpu_q))
        self._checkpointing = bool(enable_checkpointing)
        self._restore = None if checkpoint is None else checkpoint_bytes(checkpoint,
                                                                         "Pipeline: checkpoint")
        self._graph = None
        self._owner_init(_c.lib.sl_pipeline_free, _c.lib.sl_pipeline_stop)
        self._built = False
        self._closed = False  # close() was called: run() is refused (it would start again)
        self._exhausted = False
        self._reader_names = []
        self._taken = 0  # batches run() has handed out
        self._feeds = None  # a weak reference to the iterator its definition runs in

    # -- definition
    def __enter__(self):
        if self._graph is None:
            self._graph = Graph(self.batch_size)
            self._graph.py_workers = self.py_num_workers
            self._graph.py_start_method = self.py_start_method
        stack().append(self)
        return self

    def __exit__(self, *exc):
        st = stack()
        if st and st[-1] is self:
            st.pop()
        return False

    def set_outputs(self, *outputs: typing.Any) -> None:
        """The pipeline's outputs, in order: DataNodes of its ops (lists and tuples of them are
        flattened), ops made outside a definition, or numbers, arrays and lists of numbers (each
        made one constant output, as DALI makes them)."""
        flat = []
        for o in outputs:
            if isinstance(o, (list, tuple)) and not _all_data(o):
                flat.extend(o)
            else:
                flat.append(o)
        if not flat:
            raise errors.InvalidArgumentError("set_outputs: the pipeline returns nothing")
        with self:  # ops made outside a definition, and constants, become this pipeline's
            flat = [_as_node(o) for o in flat]
        names = []
        for i, o in enumerate(flat):
            self._graph.check_node(o, "pipeline output %d" % i)
            names.append("out%d" % i)
        self._graph.set_outputs(flat, names)

    # -- the C pipeline
    def _config(self, device_id=None, batch_size=None):
        cfg = _c.PipelineConfig()
        _c.lib.sl_pipeline_config_init(byref(cfg))
        bs = batch_size or self.batch_size
        if bs < 1:
            raise errors.InvalidArgumentError("Pipeline: give batch_size (to the Pipeline or the "
                                              "pipeline_def call) before building")
        cfg.batch_size = bs
        cfg.num_threads = self.num_threads
        dev = self.device_id if device_id is None else device_id
        if dev is not None:
            cfg.device.kind, cfg.device.id = _c.DEVICE_CUDA, dev
        cfg.seed = self.resolved_seed()
        cfg.prefetch_cpu, cfg.prefetch_gpu = self._prefetch
        cfg.stream_priority = self.default_cuda_stream_priority
        return cfg

    def resolved_seed(self) -> int:
        """The pipeline's seed; a random one, drawn now and kept, where none was given."""
        if self.seed < 0:
            self.seed = random_seed()
        return self.seed

    def _require_graph(self):
        if self._graph is None or self._graph.outputs is None:
            raise errors.StateError("the pipeline has no outputs: call set_outputs (or define it "
                                    "with @pipeline_def)")

    def _sources(self):
        return self._graph.sources if self._graph is not None else ()

    def _feeding(self):
        """The live iterator this pipeline's definition runs in, or None."""
        return self._feeds() if self._feeds is not None else None

    @guarded("build()")
    def build(self) -> None:
        """Opens every store, creates the ops and starts preparing batches (again: a no-op)."""
        if self._built:
            return
        self._define_from_subclass()
        if self._feeding() is not None and self._sources():
            raise errors.StateError(
                "this pipeline's definition runs in an iterator now, and its fn.external_source "
                "sources cannot feed two pipelines at once: define another pipeline to run it "
                "alone")
        self._require_graph()
        drain_deferred()
        cfg = self._config()
        p = c_void_p()
        err = _c.Err()
        errors.check(_c.lib.sl_pipeline_create(byref(cfg), byref(p), byref(err)), err)
        try:
            self._graph.replay(p)
            if self._restore is not None:
                data = self._restore
                if _c.lib.sl_pipeline_restore(p, data, len(data)):
                    raise errors.from_status(_c.lib.sl_pipeline_status(p),
                                             "restoring a checkpoint: " +
                                             _c.u(_c.lib.sl_pipeline_errmsg(p)))
            if _c.lib.sl_pipeline_build(p):
                raise self._failure(p)
            zero_copy = max(1, _c.lib.sl_pipeline_max_held(p) - self._prefetch[0])
        except BaseException:
            _c.lib.sl_pipeline_free(p)
            raise
        # no call from here on: a Ctrl-C leaves the pipeline built with all of this, or freed
        self._max_zero_copy = zero_copy
        self._handle = p.value
        self._built = True
        self._exhausted = False

    def _failure(self, p):
        exc = self._graph.source_error() if self._graph else None
        if exc is not None:
            self._exhausted = isinstance(exc, StopIteration)
            return exc
        return pipeline_error(p, "")

    @property
    def _p(self):
        return self._handle

    def _give_back(self):
        self._reclaim(_c.lib.sl_pipeline_release)

    def run(self) -> tuple:
        """The next batch: a tuple with one TensorList per output."""
        me = threading.get_ident()
        if not self._built:  # define_graph comes before the first iter_setup, as in DALI
            self._define_from_subclass()
        if self._calls_iter_setup() and self._made_before(me) is None:
            self.iter_setup()  # (DALI's: before each batch; feed_input goes there)
        out = self._run(me)
        # from here to the return no call, so no place for a Ctrl-C: a batch is either returned
        # or still pending for this thread's next call
        p = self._pending
        if p is not None and p[0] == me:
            self._pending = None
        self._taken += 1
        return out

    @guarded("run()")
    def _run(self, me):
        if self._closed:
            raise errors.StateError("run() after close(): the pipeline would start again at its "
                                    "first batch; define a new one")
        out = self._made_before(me)
        if out is not None:
            return out
        if not self._built:
            self.build()
        hold = self._taken_before(me)
        if hold is None:
            if self._exhausted:
                raise StopIteration
            drain_deferred()
            self._check_fed()
            self._give_back()
            self._wait(_c.lib.sl_pipeline_wait, self._p)
            if _c.lib.sl_pipeline_next(self._p, byref(self._inflight)) != _c.OK:
                raise self._failure(self._p)
            hold = self._hold(me)
        consumed(self._sources())
        return self._outputs(hold, me)

    def _outputs(self, hold, me):
        b = c_void_p(hold._batch)
        # zero copy while few batches are held (this one among them); past that the hand-over
        # copies, so the pipeline always has slots to work in and no buffer is ever reused under
        # a live view
        copy = self._live() > self._max_zero_copy
        outs = []
        n = _c.lib.sl_pipeline_num_outputs(self._p)
        keys = _BatchKeys(b.value, hold)
        infos = [_BatchKeys(b.value, hold, i) for i in range(n)]
        for i in range(n):
            outs.append(_batch_output(b, i, hold))
            outs[-1]._keys, outs[-1]._info = keys, infos[i]
        if copy:
            keys.fetch()
            for x in infos:
                x.fetch()
            outs = [o.copy() for o in outs]
            for o, x in zip(outs, infos):
                o._keys, o._info = keys, x
        placed = self._graph.output_gpu or []
        outs = tuple(logical_gpu(o) if k < len(placed) and placed[k] and o.device == "cpu" else o
                     for k, o in enumerate(outs))
        if copy:
            # the copies stay pending, the batch goes back at once (views stay pending as their
            # hold alone: see SlIterator.hand_over)
            self._pending = (me, hold, outs)
            self._given_back(hold, _c.lib.sl_pipeline_release)
        return outs

    def outputs(self) -> tuple:
        """The next batch (DALI's outputs(), after schedule_run()): as run()."""
        return self.run()

    @guarded("reader_meta()")
    def reader_meta(self, name: str | None = None) -> dict:
        """DALI's reader meta: a dict for the reader `name`, or {name: dict} for every reader."""
        if name is None:
            return {r: self.reader_meta(r) for r in self._graph_readers()}
        it = None if self._built else self._feeding()
        if it is not None:
            # the definition runs in that iterator (which may not share its Python sources with
            # a pipeline of its own here): its pipeline of this definition answers
            with it._guard("reader_meta()"):
                return self._meta(it._it._pipeline_of(it._pipes.index(self)), name)
        if not self._built:
            self.build()
        return self._meta(self._p, name)

    def _meta(self, p, name):
        m = _c.ReaderMeta()
        if _c.lib.sl_pipeline_reader_meta(p, _c.s(name), byref(m)):
            raise self._failure(p)
        return {"epoch_size": m.epoch_size, "epoch_size_padded": m.epoch_size_padded,
                "number_of_shards": m.number_of_shards, "shard_id": m.shard_id,
                "pad_last_batch": bool(m.pad_last_batch), "stick_to_shard": bool(m.stick_to_shard)}

    def epoch_size(self, name: str | None = None) -> int | dict:
        """The records in the reader `name`'s data set, or {name: count} for every reader."""
        meta = self.reader_meta(name)
        if name is None:
            return {k: v["epoch_size"] for k, v in meta.items()}
        return meta["epoch_size"]

    def _graph_readers(self):
        return [r for r, _ in self._graph.readers] if self._graph else []

    @guarded("checkpoint()")
    def checkpoint(self, filename: typing.Optional[str] = None) -> bytes:
        """The state that decides every batch after the last one taken (bytes); pass it as
        Pipeline(..., checkpoint=...) to continue exactly there. With `filename` (DALI's
        argument) it is also written to that file, whole or not at all (a temporary file beside
        it, synced, then renamed over it)."""
        if filename is not None and not isinstance(filename, (str, os.PathLike)):
            raise errors.ArgumentTypeError("checkpoint(): filename takes a path, not %s"
                                           % type(filename).__name__)
        if not self._built:
            self.build()
        ptr, size = c_void_p(), ctypes.c_size_t()
        if _c.lib.sl_pipeline_save(self._p, byref(ptr), byref(size)):
            raise self._failure(self._p)
        data = _c.take_bytes(ptr, size.value)
        if filename is not None:
            _write_whole(os.fspath(filename), data)
        return data

    @guarded("reset()")
    def reset(self) -> None:
        """After a Python source ended the epoch (StopIteration): starts the pipeline afresh."""
        if self._exhausted:
            self._shut()
            self._restore = None
            consumed(self._sources())  # the sources start again from their beginning
            for src in self._sources():
                if hasattr(src, "next_epoch"):
                    src.next_epoch()  # (their SampleInfo and BatchInfo say the next epoch)
            self.build()

    def start_py_workers(self) -> None:
        """Starts the worker processes of the parallel external sources (py_num_workers of them,
        by py_start_method) now; build() starts them otherwise. As DALI advises, call it before
        anything in the process starts CUDA when the method is 'fork'."""
        self._define_from_subclass()
        if self._graph is not None:
            self._graph.start_pool()

    def close(self) -> None:
        """Stops the pipeline's threads and frees it, and what its Python sources kept of batches
        it had prefetched. While views of its batches are alive the C pipeline's memory stays,
        and is freed with the Pipeline object after the last of them. run() is refused from
        then on."""
        self._closed = True
        self._shut()
        if self._graph is not None:
            self._graph.close_pool()
            # (not while an iterator's pipeline may still replay them, nor from inside a source,
            # where the stopping waits: its threads may still ask for them)
            if self._feeding() is None and getattr(local, "in_callback", None) is None:
                for src in self._sources():
                    if hasattr(src, "forget"):
                        src.forget()

    @guarded("close()")
    def _shut(self):
        """close() that leaves run() allowed: a fresh pipeline then starts (reset(), and an
        iterator that takes the definition over)."""
        self._built = False
        self._cancel_feeds()  # (a stage thread waiting for feed_input data stops waiting)
        self._close_handle()

    def __del__(self):
        try:
            self._cancel_feeds()  # (a stage thread waiting for feed_input data stops waiting)
            self._free_all()
            if self._graph is not None:
                self._graph.close()
        except Exception:
            pass


def _all_data(seq):
    """True for a (nested) list of numbers and arrays: one constant output, not several."""
    return all(_all_data(x) if isinstance(x, (list, tuple)) else
               isinstance(x, (bool, int, float)) or hasattr(x, "__array_interface__")
               for x in seq)


def _as_node(o):
    """A pipeline output as a node: an op made outside the definition is made here, and a number
    or an array is a constant, as DALI makes them."""
    from . import types
    o = resolve(o)
    if (isinstance(o, (bool, int, float)) or hasattr(o, "__array_interface__")
            or isinstance(o, (list, tuple)) and o and _all_data(o)):
        o = resolve(types.Constant(o))
    return o


def _batch_output(b, i, hold):
    tl = _c.lib.sl_batch_output(b, i).contents
    dense = _c.Tensor()
    if _c.lib.sl_batch_tensor(b, i, byref(dense), None) != _c.OK:
        dense = None
    return from_c_list(tl, dense, hold)


class _BatchKeys:
    """The record keys of a batch's samples (or, given an output, the source info of its
    samples), read from the library when first asked for."""

    __slots__ = ("_b", "_hold", "_keys", "_output")

    def __init__(self, b, hold, output=None):
        self._b, self._hold, self._keys, self._output = b, hold, None, output

    def fetch(self):
        if self._keys is None:
            n = _c.lib.sl_batch_size(self._b)
            if self._output is None:
                self._keys = [_c.u(_c.lib.sl_batch_key(self._b, i)) for i in range(n)]
            else:
                self._keys = [_c.u(_c.lib.sl_batch_source_info(self._b, self._output, i))
                              for i in range(n)]
            self._hold = None
        return self._keys


def consumed(sources):
    for src in sources:
        if src._recording:
            src.consumed()


# ---- pipeline_def --------------------------------------------------------------------------------


def pipeline_def(fn: typing.Callable | None = None, *, enable_conditionals: bool = False,
                 **pipeline_kwargs: typing.Any) -> typing.Callable:
    """DALI's decorator: ``@pipeline_def(batch_size=..., num_threads=..., device_id=...)``; calling
    the decorated function (with its own arguments, and pipeline arguments that override the
    decorator's) traces it and returns a Pipeline. With ``enable_conditionals=True`` an ``if``
    (and ``and``/``or``/``not``, ``x if c else y``) on a DataNode is a per-sample conditional, as
    DALI's (docs/python.md, "Conditionals")."""
    bad = set(pipeline_kwargs) - set(PIPELINE_ARGS)
    if bad:
        raise errors.ArgumentTypeError("pipeline_def: unknown argument(s) %s" % ", ".join(sorted(bad)))

    def decorate(func):
        params = inspect.signature(func).parameters
        # conditionals on data: the function's `if` statements rewritten, once (_conditionals)
        body = _conditionals.convert_pipeline_function(func) if enable_conditionals else func

        varkw = [p.name for p in params.values() if p.kind is inspect.Parameter.VAR_KEYWORD]

        @functools.wraps(func)
        def create(*args, **kwargs):
            if varkw:  # (DALI's rule: which arguments go to the Pipeline would be ambiguous)
                raise errors.ArgumentTypeError(
                    "pipeline_def: %s: Using variadic keyword argument `**%s` in a graph-defining "
                    "function is not allowed." % (func.__name__, varkw[0]))
            pk = dict(pipeline_kwargs)
            fk = {}
            for k, v in kwargs.items():
                if k in PIPELINE_ARGS and k not in params:
                    pk[k] = v
                else:
                    fk[k] = v
            pipe = Pipeline(**pk)
            pipe._enable_conditionals = enable_conditionals  # (sluice.auto_aug asks)
            trace(pipe, body, args, fk)
            return pipe
        create._sluice_fn = func
        create._sluice_kwargs = dict(pipeline_kwargs)
        return create
    return decorate(fn) if fn is not None else decorate


def trace(pipe, func, args, kwargs):
    """Calls func with pipe as the current pipeline and sets its outputs from what it returns."""
    with pipe:
        outs = func(*args, **kwargs)
    if outs is None:
        raise errors.InvalidArgumentError("%s returned nothing: a pipeline function returns its "
                                          "outputs" % getattr(func, "__name__", "pipeline"))
    if not isinstance(outs, (list, tuple)):
        outs = (outs,)
    pipe.set_outputs(*outs)
    return pipe


def _write_whole(path, data):
    """`data` into `path`, complete or not at all: a temporary file beside it, synced, renamed
    over it, and the folder synced."""
    folder = os.path.dirname(os.path.abspath(path))
    tmp = "%s.tmp.%d" % (path, os.getpid())
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise errors.Error("checkpoint(): cannot write %s: %s" % (path, e.strerror or e)) from e
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
