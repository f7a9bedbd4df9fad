# SPDX-License-Identifier: Apache-2.0
"""fn.external_source with Python sources, as DALI's: a callable (called per batch, or per sample
with ``batch=False``), an iterable or a generator (``next()`` per batch or per sample), or a
generator function (called again at every start). A batch is a list of samples or one array whose
first dimension is the batch; a sample is anything with the buffer protocol (numpy arrays, bytes,
array.array) or a torch CPU tensor. With ``num_outputs=N`` the source returns N of them.

The library asks a source for every sample's shape in order on the pipeline's CPU stage thread, then
has it written into the batch on the pool's workers; here the first question of a batch calls the
Python source, and the answers come from what it returned. An exception in the source fails the
batch; ``Pipeline.run()`` raises SourceError with the original as its cause (StopIteration: the
source is exhausted, run() raises StopIteration and ``reset()`` starts it again).

With ``parallel=True`` the first question of a batch takes it from the pipeline's worker
processes (sluice._pool), the next batches sent to them ahead. The library also asks for each
sample's memory (view) on the CPU stage thread: its workers copy the arrays into the batch
without calling back into Python (a sample with no memory of its own, bytes say, is written by
a callback), or with ``no_copy=True`` the batch points at them. Either way the arrays are kept
until the library says (release) that the batch is done with them: once copied, or, without a
copy, once the consumer has let go of the batch."""

import collections
import ctypes
import inspect
import itertools
import threading
import typing

from . import _c, _pool, _state, errors
from . import types as _types
from ._pool import BatchInfo, SampleInfo


_counter = itertools.count()


class _Sample:
    """One sample as contiguous bytes, with its DALI type and shape."""

    __slots__ = ("mv", "dtype", "shape", "keep", "addr", "align")

    def __init__(self, obj, what):
        keep = obj
        if hasattr(obj, "detach") and hasattr(obj, "numpy"):  # a torch tensor
            obj = obj.detach().cpu().numpy()
        if hasattr(obj, "__array_interface__") or hasattr(obj, "__array__"):
            try:
                import numpy
                obj = numpy.asarray(obj)  # (ascontiguousarray would make a 0-d array 1-d)
                if not obj.flags.c_contiguous:
                    obj = numpy.ascontiguousarray(obj)
            except ImportError:
                pass
        try:
            mv = memoryview(obj)
        except TypeError:
            raise errors.InvalidArgumentError("%s: a %s is not array data (give numpy arrays, "
                                              "bytes or anything with the buffer protocol)"
                                              % (what, type(keep).__name__)) from None
        if not mv.c_contiguous:
            raise errors.InvalidArgumentError("%s: the data is not contiguous" % what)
        fmt = mv.format.lstrip("@=<")
        dtype = _types.from_buffer_format(fmt)
        if dtype is None:
            raise errors.InvalidArgumentError("%s: element format %r has no sluice type"
                                              % (what, mv.format))
        self.align = mv.itemsize
        self.mv = mv.cast("B") if mv.nbytes else mv
        self.dtype = dtype
        self.shape = tuple(mv.shape)
        self.keep = obj
        iface = getattr(obj, "__array_interface__", None)
        self.addr = iface["data"][0] if iface else 0


def _split_batch(data, n, what):
    """A batch: a list/tuple of samples, or one array with the batch as its first dimension; at
    most n (the pipeline's batch_size) samples: fewer make a shorter batch (DALI's variable batch
    size)."""
    if isinstance(data, (list, tuple)):
        samples = [_Sample(x, "%s sample %d" % (what, i)) for i, x in enumerate(data)]
    else:
        whole = _Sample(data, what)
        if not whole.shape:
            raise errors.InvalidArgumentError("%s: a batch needs a first (batch) dimension" % what)
        count = whole.shape[0]
        per = whole.mv.nbytes // count if count else 0
        samples = []
        for i in range(count):
            s = _Sample.__new__(_Sample)
            s.mv = whole.mv[i * per:(i + 1) * per]
            s.dtype, s.shape, s.keep, s.align = whole.dtype, whole.shape[1:], whole.keep, whole.align
            s.addr = whole.addr + i * per if whole.addr else 0
            samples.append(s)
    if len(samples) > n:
        raise errors.InvalidArgumentError("%s: %d samples, but the batch size is at most %d "
                                          "(the pipeline's batch_size)" % (what, len(samples), n))
    return samples


class _Fed(list):
    """A fed batch's outputs (lists of samples) and the layout feed_input gave with it."""

    layout = ""


def _same_count(cols, what):
    """The outputs of one batch of a source have as many samples each."""
    counts = [len(c) for c in cols]
    if any(c != counts[0] for c in counts):
        raise errors.InvalidArgumentError("%s: the outputs have %s samples: one batch's outputs "
                                          "must have as many" % (what, counts))
    return cols


def _arity(f):
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):
        return 1
    n = 0
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty:
            n += 1
        elif p.kind == p.VAR_POSITIONAL:
            return 1
    return n


class PySource:
    """A Python source behind one fn.external_source: the library's sl_source callbacks."""

    def __init__(self, source, num_outputs, batch, batch_info, cycle, label, listed=False,
                 parallel=False, prefetch=1, blocking=None, graph=None, no_copy=False):
        self.source = source
        # the batch points at the source's arrays instead of copying them; either way they are
        # kept until the pipeline says the batch is done with them (release)
        self.no_copy = no_copy
        # each C pipeline the source feeds is a generation (its sl_source's user): what an earlier
        # one still points at (no_copy) stays in _old, (generation, iteration) -> batch, until it
        # releases it (a pipeline whose batches a consumer still holds is freed after the last)
        self._gen = 0
        self._old = {}
        self.parallel = parallel  # run by the workers of graph's pool (sluice._pool)
        self.prefetch = prefetch  # parallel: batches computed ahead of the one asked for
        self.blocking = blocking  # feed_input: run() waits for data fed from another thread
        self.graph = graph
        self.pool_index = 0  # among the graph's parallel sources
        self._tasks = {}  # parallel: iteration -> the ids of its tasks
        self._sched = 0  # parallel: the next iteration to send to the workers
        self._epoch_base = 0  # epochs ended by StopIteration and reset()
        self.nout = num_outputs
        self.listed = listed  # num_outputs was given: the source returns a sequence of outputs
        self.batch = batch
        self.batch_info = batch_info
        self.cycle = cycle
        self.label = label
        self.name = "python_source_%d" % next(_counter)
        self.exc = None
        self.calling = False  # inside the Python source (which may never return)
        self._lock = threading.Lock()
        # with no source, the data comes from Pipeline.feed_input: batches in the order fed
        self._fed = collections.deque()
        self._fed_count = 0
        self._cancelled = False
        self._cond = threading.Condition(self._lock)
        if source is None:
            self.kind = "feed"
        elif inspect.isgeneratorfunction(source):
            self.kind = "genfunc"
        elif callable(source) and not hasattr(source, "__next__"):
            self.kind = "callable"
            self._nargs = _arity(source)
        elif hasattr(source, "__iter__") or hasattr(source, "__next__"):
            self.kind = "iterable"
        else:
            raise errors.ArgumentTypeError("fn.external_source: source must be a callable, an "
                                           "iterable or a generator, not %s"
                                           % type(source).__name__)
        self._shape_cb = _c.SHAPE_FN(self._shape)
        self._fill_cb = _c.FILL_FN(self._fill)
        self._count_cb = _c.COUNT_FN(self._count)
        # the workers copy from the arrays' memory (view), not through a callback per sample:
        # fill would take the GIL once a sample, and the pool's threads would queue for it
        self._view_cb = _c.VIEW_FN(self._view)
        self._release_cb = _c.RELEASE_FN(self._release)
        self._struct = _c.Source(self._shape_cb, self._fill_cb, None, self._count_cb,
                                 self._view_cb, self._release_cb)
        self._struct.copy_views = not no_copy
        if self.kind == "feed":  # each fed batch's own layout (feed_input's layout=)
            self._layout_cb = _c.LAYOUT_FN(self._layout)
            self._struct.layout = self._layout_cb
        self._batches = {}
        # until a consumer has taken a batch, what the source gave (or raised) for each batch is
        # kept: a pipeline built ahead of time prefetches, and when its definition then goes to an
        # iterator, that iterator's pipeline gets the very same batches (one-shot iterators and
        # stateful callables included), as if the first pipeline had never run
        self._recording = True
        self._recorded = {}
        self._replay = {}
        self._attached = False

    def consumed(self):
        """A consumer took a batch: from now on a new pipeline of this source starts afresh."""
        # under the lock: the stage thread may be between its look at _recording and its store
        # into _recorded, and would otherwise keep a batch there for good
        with self._lock:
            self._recording = False
            self._recorded = {}  # (what is still to be given again stays: this pipeline asks)

    def attach(self, p):
        """Registers the source with C pipeline p (which is about to be built): afresh, or, when
        no batch was taken from the pipeline before, from where that one's prefetching left
        off (its batches given again first)."""
        self._cancelled = False
        with self._lock:
            if self.no_copy:  # (copies are all made before an old pipeline's threads stop)
                for it, entry in self._batches.items():
                    self._old[(self._gen, it)] = entry
            self._gen += 1
            self._struct.user = self._gen  # (sl_pipeline_add_source copies the struct)
        if self.parallel:
            self.graph.start_pool()  # (before the C pipeline has threads: fork is safest then)
        if self._attached and self._recording:
            self.exc = None
            self._batches = {}
            self._replay = dict(self._recorded)
        else:
            self._start()
        self._attached = True
        errors.check(_c.lib.sl_pipeline_add_source(p, _c.s(self.name), ctypes.byref(self._struct)),
                     None, "fn.external_source")

    def _start(self):
        self.exc = None
        self._batches = {}
        # a fresh start is a first pipeline again: until a consumer takes one of its batches, a
        # pipeline built after it gets them again (build, iterator, build, iterator loses none
        # either); what an earlier run kept, or had still to give again, is of that run (given
        # now, it would come out of order) and goes
        self._recording = True
        self._recorded = {}
        self._replay = {}
        self._epoch = self._epoch_base
        self._epoch_start = 0
        if self.parallel:
            self._drop_tasks()
            if self.kind != "callable":
                pool = self.graph.start_pool()
                pool.restart(self.pool_index, self.pool_index % pool.workers)
            return
        if self.kind == "genfunc":
            self._it = self.source()
        elif self.kind == "iterable":
            self._it = iter(self.source)
        self._cancelled = False

    def forget(self):
        """Its pipeline definition was closed: no pipeline of it asks again, so what was kept for
        one that might (batches prefetched but never taken, to give again) goes now, not when
        the garbage collector finds the source (the definition and its sources refer to each
        other). The batches being made go too where the pipeline copied what it took; those a
        live batch still points at (no_copy) stay until it is released."""
        with self._lock:
            self._recording = False
            self._recorded = {}
            self._replay = {}
            if not self.no_copy:
                self._batches = {}

    def next_epoch(self):
        """reset() after StopIteration: the next start is the next epoch (epoch_idx + 1)."""
        self._epoch_base += 1

    def _drop_tasks(self):
        if self._tasks and self.graph is not None and self.graph.py_pool is not None:
            self.graph.py_pool.drop([t for ts in self._tasks.values() for t in ts])
        self._tasks = {}

    def _submit(self, pool, k, bs):
        """Sends batch k's tasks to the workers: its ids."""
        si = self.pool_index
        if not self.batch:  # the batch's samples in one range per worker
            per = -(-bs // pool.workers)
            return [pool.submit(si, "samples", (k * bs + c, c, min(per, bs - c), k, self._epoch))
                    for c in range(0, bs, per)]
        if self.kind == "callable":
            return [pool.submit(si, "batch", (k, self._epoch) if self.batch_info else k)]
        return [pool.submit(si, "next", None, worker=si % pool.workers)]  # its own worker

    def _make_parallel(self, it, bs):
        """Batch it from the workers, the next ones sent ahead (prefetch_queue_depth)."""
        pool = self.graph.start_pool()
        if it not in self._tasks:
            self._drop_tasks()
            self._sched = it
        while self._sched <= it + self.prefetch:
            self._tasks[self._sched] = self._submit(pool, self._sched, bs)
            self._sched += 1
        got = pool.take(self._tasks.pop(it), lambda: self._cancelled,
                        "computing batch %d" % it)
        for status, payload in got:
            if status == "stop":
                self._drop_tasks()
                raise StopIteration
            if status == "err":
                exc, tb = payload
                if isinstance(exc, str):
                    exc = _pool.WorkerLost(exc)
                exc.add_note("(raised in a worker process of the parallel source)\n" + tb)
                raise exc
        if self.batch:
            return self._batch_columns(got[0][1], bs, "batch %d" % it)
        return self._sample_columns([x for _, chunk in got for x in chunk], "batch %d" % it)

    def _batch_columns(self, data, bs, what):
        outs = self._per_output(data, what)
        return _same_count([_split_batch(o, bs, "%s%s" % (what, self._out(k)))
                            for k, o in enumerate(outs)], what)

    def _sample_columns(self, samples, what):
        cols = [[] for _ in range(self.nout)]
        for i, data in enumerate(samples):
            for k, o in enumerate(self._per_output(data, "%s sample %d" % (what, i))):
                cols[k].append(_Sample(o, "%s sample %d%s" % (what, i, self._out(k))))
        return cols

    def _next(self):
        try:
            return next(self._it)
        except StopIteration:
            if self.cycle in (True, "quiet") and self.kind != "callable":
                self._it = self.source() if self.kind == "genfunc" else iter(self.source)
                self._epoch += 1
                return next(self._it)
            raise

    def _produce(self, info, bs):
        """The outputs of batch info.iteration (per output, the list of its samples): given
        again if an earlier pipeline made it and no consumer took it; kept while recording."""
        it = info.iteration
        if it in self._replay:
            got = self._replay.pop(it)
            if isinstance(got, BaseException):
                raise got
            return got
        try:
            got = self._make(info, bs)
            self._check_wants(got, "batch %d" % it)
        except BaseException as e:  # noqa: B902 -- raised again below, and on a replay
            self._record(it, e)
            raise
        self._record(it, got)
        return got

    def _check_wants(self, cols, what):
        """Each output's samples against its entry of a dtype / ndim list."""
        for k, (col, (dtype, ndim)) in enumerate(zip(cols, getattr(self, "_want", ()))):
            for i, smp in enumerate(col):
                if dtype is not None and smp.dtype != dtype:
                    raise errors.InvalidArgumentError("%s sample %d%s: %s, but dtype[%d] is %s"
                                                      % (what, i, self._out(k), smp.dtype.name,
                                                         k, dtype.name))
                if ndim is not None and len(smp.shape) != ndim:
                    raise errors.InvalidArgumentError("%s sample %d%s: %d dimensions, but "
                                                      "ndim[%d] is %d" % (what, i, self._out(k),
                                                                          len(smp.shape), k, ndim))

    def _record(self, it, got):
        with self._lock:  # (consumed() runs on the consumer's thread meanwhile)
            if self._recording:
                self._recorded[it] = got

    def feed(self, data, layout=None):
        """Pipeline.feed_input: the next batch of this source (its outputs when it has several),
        and its layout (None: the external_source's, else the one fed before)."""
        what = "feed_input: batch %d" % self._fed_count
        if layout is not None and (len(layout) > _c.LAYOUT_MAX or not layout.isascii()):
            raise errors.InvalidArgumentError("%s: layout=%r (at most %d ASCII letters)"
                                              % (what, layout, _c.LAYOUT_MAX))
        for k, o in enumerate(self._per_output(data, what)):
            shape = getattr(o, "shape", None)  # (anything else is checked when it is used)
            n = len(o) if isinstance(o, (list, tuple)) else shape[0] if shape else 0
            if n > self._batch_size:
                raise errors.InvalidArgumentError(
                    "%s%s: %d samples, but the batch size is at most %d (the pipeline's "
                    "batch_size)" % (what, self._out(k), n, self._batch_size))
        with self._cond:
            self._fed.append((data, layout or ""))
            self._fed_count += 1
            self._cond.notify_all()

    @property
    def fed(self):
        """Batches fed so far (feed_input) since the source's pipeline started."""
        return self._fed_count

    def cancel(self):
        """Wakes a stage thread waiting for feed_input data (the pipeline is closing)."""
        with self._cond:
            self._cancelled = True
            self._cond.notify_all()

    def _take_fed(self):
        with self._cond:
            while not self._fed and not self._cancelled:
                self._cond.wait(0.1)
            if self._cancelled:
                raise errors.StateError("the pipeline was closed while waiting for feed_input")
            return self._fed.popleft()

    def _make(self, info, bs):
        it = info.iteration
        what = "batch %d" % it
        if self.parallel:
            return self._make_parallel(it, bs)
        if self.kind == "feed":
            data, layout = self._take_fed()
            got = _Fed(self._batch_columns(data, bs, what))
            got.layout = layout
            return got
        if self.batch:
            if self.kind == "callable":
                if self._nargs == 0:
                    data = self.source()
                elif self.batch_info:
                    data = self.source(BatchInfo(it, self._epoch))
                else:
                    data = self.source(it)
            else:
                data = self._next()
            return self._batch_columns(data, bs, what)
        samples = []
        for i in range(bs):
            if self.kind == "callable":
                idx = it * bs + i
                samples.append(self.source() if self._nargs == 0 else
                               self.source(SampleInfo(idx - self._epoch_start, i, it,
                                                      self._epoch)))
            else:
                samples.append(self._next())
        return self._sample_columns(samples, what)

    def _out(self, k):
        return " output %d" % k if self.nout > 1 else ""

    def _per_output(self, data, what):
        if self.nout == 1 and not self.listed:
            return [data]
        shape = getattr(data, "shape", None)  # an array's first axis: the outputs, as in DALI
        if shape and not isinstance(data, (list, tuple)) and shape[0] == self.nout:
            return [data[k] for k in range(self.nout)]
        if not isinstance(data, (list, tuple)) or len(data) != self.nout:
            raise errors.InvalidArgumentError("%s: num_outputs=%d, but the source returned %s"
                                              % (what, self.nout, type(data).__name__))
        return list(data)

    def _fail(self, exc, err):
        if self.exc is None:
            self.exc = exc
        if isinstance(exc, StopIteration):
            msg = b"the source is exhausted (StopIteration)"
        else:
            msg = ("%s: %s" % (type(exc).__name__, exc)).encode("utf-8", "replace")
        err.contents.msg = msg[:_c.ERRMSG_MAX - 1]
        err.contents.status = _c.EINVAL
        return _c.EINVAL

    def _entry(self, iteration):
        """Batch `iteration` as (outputs, sample count): made (the Python
        source called) at the library's first question about it."""
        entry = self._batches.get(iteration)
        if entry is None:
            self.calling = True
            try:
                info = _c.SourceInfo(iteration, 0, iteration * self._batch_size, 0)
                batch = self._produce(info, self._batch_size)
            finally:
                self.calling = False
            entry = self._batches[iteration] = (batch, len(batch[0]))
        return entry

    def _count(self, user, iteration, max_batch, n_p, err):
        _state.local.in_callback = self
        try:
            if _state.exiting[0]:
                raise errors.StateError("the interpreter is exiting")
            if self.exc is not None:
                return self._fail(self.exc, err)
            entry = self._entry(iteration)
            if entry[1] == 0:  # no sample will be asked for
                del self._batches[iteration]
            n_p[0] = entry[1]
            return _c.OK
        except BaseException as e:  # noqa: B902 -- it goes back to the caller of run()
            return self._fail(e, err)
        finally:
            _state.local.in_callback = None

    def _shape(self, user, info_p, dtype_p, ndim_p, shape_p, err):
        _state.local.in_callback = self
        try:
            info = info_p.contents
            if _state.exiting[0]:
                raise errors.StateError("the interpreter is exiting")
            if self.exc is not None:
                return self._fail(self.exc, err)
            entry = self._entry(info.iteration)
            s = entry[0][info.output][info.idx_in_batch]
            dtype_p[0] = _types.to_sl(s.dtype)
            ndim_p[0] = len(s.shape)
            if len(s.shape) > _c.MAX_DIMS:
                raise errors.InvalidArgumentError("a sample with %d dimensions (at most %d)"
                                                  % (len(s.shape), _c.MAX_DIMS))
            for d, x in enumerate(s.shape):
                shape_p[d] = x
            return _c.OK
        except BaseException as e:  # noqa: B902 -- it goes back to the caller of run()
            return self._fail(e, err)
        finally:
            _state.local.in_callback = None

    def _fill(self, user, info_p, dst, nbytes, err):
        _state.local.in_callback = self
        try:
            info = info_p.contents
            if _state.exiting[0]:
                raise errors.StateError("the interpreter is exiting")
            entry = self._batches[info.iteration]
            s = entry[0][info.output][info.idx_in_batch]
            if s.mv.nbytes != nbytes:
                raise errors.InvalidArgumentError("sample of %d bytes, the batch has room for %d"
                                                  % (s.mv.nbytes, nbytes))
            if nbytes and s.addr:
                ctypes.memmove(dst, s.addr, nbytes)
            elif nbytes:
                buf = ((ctypes.c_char * nbytes).from_buffer_copy(s.mv) if s.mv.readonly else
                       (ctypes.c_char * nbytes).from_buffer(s.mv))
                ctypes.memmove(dst, buf, nbytes)
            return _c.OK  # (the batch is kept until _release)
        except BaseException as e:  # noqa: B902
            return self._fail(e, err)
        finally:
            _state.local.in_callback = None

    def _layout(self, user, iteration, output, buf, err):
        """The layout feed_input gave with batch `iteration` ("" for none)."""
        try:
            entry = self._batches.get(iteration)
            lay = getattr(entry[0], "layout", "") if entry else ""
            ctypes.memmove(buf, lay.encode("ascii"), len(lay))
            return _c.OK
        except BaseException as e:  # noqa: B902
            return self._fail(e, err)

    def _view(self, user, info_p, data_p, err):
        """The sample's own memory, when it is an array's and not empty, for the workers to copy
        (NULL: fill it); with no_copy for the batch to point at, when aligned for its type."""
        _state.local.in_callback = self
        try:
            info = info_p.contents
            s = self._batches[info.iteration][0][info.output][info.idx_in_batch]
            ok = s.addr and s.mv.nbytes and (not self.no_copy or s.addr % s.align == 0)
            data_p[0] = s.addr if ok else None
            return _c.OK
        except BaseException as e:  # noqa: B902
            return self._fail(e, err)
        finally:
            _state.local.in_callback = None

    def _release(self, user, iteration):
        """The pipeline of generation user no longer reads batch iteration's samples."""
        try:
            with self._lock:
                if user == self._gen:
                    self._batches.pop(iteration, None)
                else:
                    self._old.pop((user, iteration), None)
        except BaseException:  # noqa: B902 -- nothing to tell, and a callback must not raise
            pass


def _check_modes(where, source, batch, parallel, no_copy, depth, pipe):
    """DALI's rules for parallel=True and its prefetch_queue_depth; the depth to use."""
    if not parallel:
        if depth is not None:
            raise errors.InvalidArgumentError("%s: prefetch_queue_depth is for parallel sources "
                                              "(parallel=True) only" % where)
        return 0
    if isinstance(depth, bool) or not isinstance(depth, (int, type(None))) or \
            (depth is not None and depth < 1):
        raise errors.InvalidArgumentError("%s: prefetch_queue_depth=%r (a positive int)"
                                          % (where, depth))
    if no_copy is not None and not no_copy:
        raise errors.InvalidArgumentError("%s: no_copy=False with parallel=True (the workers' "
                                          "results are taken as they come back, as DALI's)"
                                          % where)
    if source is None:
        raise errors.InvalidArgumentError("%s: parallel=True needs a source (it runs in the "
                                          "pipeline's worker processes)" % where)
    if inspect.isgeneratorfunction(source) or not callable(source) or \
            hasattr(source, "__next__"):
        if not batch:
            raise errors.ArgumentTypeError(
                "%s: parallel=True with an iterable or a generator function needs batch=True "
                "(one worker iterates it, a batch at a time)" % where)
    elif _arity(source) != 1:
        raise errors.ArgumentTypeError(
            "%s: parallel=True calls the source with one argument (a SampleInfo with "
            "batch=False; a BatchInfo or the iteration number with batch=True), and it takes %d"
            % (where, _arity(source)))
    workers = getattr(pipe, "py_num_workers", 1)
    if workers < 1:
        raise errors.InvalidArgumentError("%s: parallel=True, but the pipeline has "
                                          "py_num_workers=%d" % (where, workers))
    return 1 if depth is None else int(depth)


def _check_gpu_args(where, cuda_stream, use_copy_kernel, blocking):
    """The arguments of DALI's GPU feeding, which sluice does its own way: the values that say
    what it does, or a refusal."""
    if cuda_stream is not None:
        raise errors.NotSupportedError(
            "%s: cuda_stream=%r: the source's data is CPU data, copied into the batch and moved "
            "to the GPU (device='gpu') on the pipeline's own stream" % (where, cuda_stream))
    if use_copy_kernel:
        raise errors.NotSupportedError(
            "%s: use_copy_kernel=True: the move to the GPU is the pipeline's own copy" % where)
    if blocking not in (None, True, False):
        raise errors.ArgumentTypeError("%s: blocking=%r (True or False)" % (where, blocking))


_ES_ARGS = ("source", "num_outputs", "batch", "batch_info", "cycle", "dtype", "ndim", "layout",
            "name", "device", "parallel", "no_copy", "prefetch_queue_depth", "blocking",
            "cuda_stream", "use_copy_kernel", "repeat_last")


def _per_output_wants(where, nout, dtype, ndim):
    """Per output, the (dtype, ndim) a list form of those arguments asks for (None: unchecked
    here; a single value is the library's to check)."""
    if not isinstance(dtype, (list, tuple)) and not isinstance(ndim, (list, tuple)):
        return ()  # (nothing per output: nout is not yet checked, and may be absurd)
    for arg, v in (("dtype", dtype), ("ndim", ndim)):
        if isinstance(v, (list, tuple)) and len(v) != nout:
            raise errors.InvalidArgumentError("%s: %s has %d entries for %d outputs"
                                              % (where, arg, len(v), nout))
    want = [[None, None] for _ in range(nout)]
    for j, v in enumerate((dtype, ndim)):
        if not isinstance(v, (list, tuple)):
            continue
        for k, x in enumerate(v):
            if j == 0 and x is not None and not isinstance(x, _types.DALIDataType):
                raise errors.ArgumentTypeError("%s: dtype[%d] = %r (a DALIDataType)"
                                               % (where, k, x))
            if j == 1 and x is not None and not (isinstance(x, int) and 0 <= x <= _c.MAX_DIMS):
                raise errors.ArgumentTypeError("%s: ndim[%d] = %r (0 to %d)"
                                               % (where, k, x, _c.MAX_DIMS))
            want[k][j] = x
    return want


def external_source_call(schema):
    from .fn import _call  # the generic op call, once the per-op argument check is done here

    def external_source(source: typing.Any = None, num_outputs: int | None = None, *,
                        batch: bool | None = None, batch_info: bool = False,
                        cycle: bool | str | None = None, dtype: typing.Any = None,
                        ndim: int | None = None, layout: str | list | None = None,
                        name: str | None = None, device: str = "cpu", parallel: bool = False,
                        no_copy: bool | None = None, prefetch_queue_depth: int | None = None,
                        blocking: bool | None = None, cuda_stream: typing.Any = None,
                        use_copy_kernel: bool | None = None,
                        repeat_last: bool = False) -> typing.Any:
        """DALI's fn.external_source with a Python source (see sluice.external)."""
        from . import _debug
        from ._state import current
        where = "fn.external_source"
        run = _debug.active()
        if run is not None:  # debug mode: a source of its own, run now (sluice._debug)
            args = dict(batch=batch, batch_info=batch_info, cycle=cycle, dtype=dtype, ndim=ndim,
                        layout=layout, name=name, device=device, no_copy=no_copy,
                        parallel=parallel, prefetch_queue_depth=prefetch_queue_depth,
                        blocking=blocking, cuda_stream=cuda_stream,
                        use_copy_kernel=use_copy_kernel, repeat_last=repeat_last)
            # (the source and num_outputs in the call's key, so that a changed one is noticed)
            key = dict(args, _source=source, _num_outputs=num_outputs)
            return run.call(where, lambda ins, kw: external_source(source, num_outputs, **args),
                            [], key)
        pipe = current()
        if pipe is None:  # DALI allows it: made where its outputs are used
            from ._deferred import defer_call
            return defer_call(lambda: external_source(
                source, num_outputs, batch=batch, batch_info=batch_info, cycle=cycle, dtype=dtype,
                ndim=ndim, layout=layout, name=name, device=device, no_copy=no_copy,
                parallel=parallel, prefetch_queue_depth=prefetch_queue_depth, blocking=blocking,
                cuda_stream=cuda_stream, use_copy_kernel=use_copy_kernel,
                repeat_last=repeat_last), where)
        if batch is None:  # as DALI: a parallel source is per sample unless told otherwise
            batch = not parallel
        if source is None and not batch:
            raise errors.ArgumentTypeError("%s: with no source (data from Pipeline.feed_input), "
                                           "batch=False has no meaning" % where)
        prefetch = _check_modes(where, source, bool(batch), bool(parallel), no_copy,
                                prefetch_queue_depth, pipe)
        _check_gpu_args(where, cuda_stream, use_copy_kernel, blocking)
        if repeat_last:
            raise errors.NotSupportedError("%s: repeat_last=True" % where)
        if cycle not in (None, False, True, "no", "quiet", "raise"):
            raise errors.InvalidArgumentError("%s: cycle=%r (False, True, 'quiet' or 'raise')"
                                              % (where, cycle))
        if cycle == "no":
            cycle = False
        if device not in ("cpu", "gpu"):
            raise errors.InvalidArgumentError("%s: device=%r (cpu or gpu)" % (where, device))
        if num_outputs is not None and (not isinstance(num_outputs, int) or num_outputs < 1):
            raise errors.InvalidArgumentError("%s: num_outputs=%r" % (where, num_outputs))
        nout = num_outputs or 1
        src = PySource(source, nout, bool(batch), bool(batch_info), cycle,
                       name or "external_source", listed=num_outputs is not None,
                       parallel=bool(parallel), prefetch=prefetch, blocking=blocking,
                       graph=pipe._graph,
                       no_copy=bool(no_copy) or (bool(parallel) and no_copy is None))
        src._batch_size = pipe.batch_size
        g = pipe._graph
        if pipe.batch_size < 1:
            raise errors.InvalidArgumentError("%s: the pipeline needs a batch_size" % where)
        g.sources.append(src)
        kw = {"source": src.name, "batch": bool(batch)}
        if num_outputs is not None:
            kw["num_outputs"] = nout
        # a list gives each output its own dtype / ndim (as DALI's); checked here, per output
        src._want = _per_output_wants(where, nout, dtype, ndim)
        if dtype is not None and not isinstance(dtype, (list, tuple)):
            kw["dtype"] = dtype
        if ndim is not None and not isinstance(ndim, (list, tuple)):
            kw["ndim"] = ndim
        if layout is not None:
            kw["layout"] = layout
        if name is not None:
            kw["name"] = name
        out = _call(schema, (), kw)
        if num_outputs is not None and not isinstance(out, list):
            out = [out]  # as DALI: with num_outputs, a list (also of one)
        if device == "gpu":
            out = [o.gpu() for o in out] if isinstance(out, list) else out.gpu()
        for o in (out if isinstance(out, list) else [out]):
            g.feeds[o._id] = src
        return out

    external_source.schema = schema
    return external_source
