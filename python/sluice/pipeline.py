# SPDX-License-Identifier: Apache-2.0
"""Pipelines defined in Python, as in DALI: ``@pipeline_def`` functions are *traced* -- called with
symbolic DataNodes, so helper functions, loops, closures and conditionals on Python values all
work -- and every op call goes straight to the C builder of a scratch pipeline, so a bad argument
fails at the line that wrote it. The recorded graph is then replayed into as many real pipelines
as are needed (one per device for the iterators)."""

import atexit
import ctypes
import functools
import inspect
import math
import os
import sys
import threading
import time
import weakref
from ctypes import byref, c_int, c_void_p

from . import _c, errors
from . import types as _types
from .pipeline_api import PipelineAPI
from .tensors import from_c_list

_local = threading.local()


def _stack():
    st = getattr(_local, "stack", None)
    if st is None:
        st = _local.stack = []
    return st


def current():
    """The pipeline being defined on this thread (inside `with pipe:` or a pipeline_def call)."""
    st = _stack()
    return st[-1] if st else None


# ---- graph nodes ---------------------------------------------------------------------------------


class DataNode:
    """A symbolic output of an op in a pipeline being defined (DALI's DataNode)."""

    __slots__ = ("_graph", "_id", "_gpu", "name", "__weakref__")

    # numpy arrays and scalars on the left of an operator defer to the node's reflected operator
    # (instead of making an object array of nodes)
    __array_ufunc__ = None

    def __init__(self, graph, ident, gpu, name):
        self._graph = graph
        self._id = ident
        self._gpu = gpu
        self.name = name

    @property
    def device(self):
        return "gpu" if self._gpu else "cpu"

    def gpu(self):
        """This data on the GPU (a copy made by the pipeline; on a CPU pipeline the same data)."""
        return self._graph.transfer(self, _c.DEVICE_CUDA)

    def cpu(self):
        return self._graph.transfer(self, _c.DEVICE_CPU)

    def shape(self, *, dtype=None, device="cpu"):
        """Each sample's shape, as a node (DALI's DataNode.shape(): the `shapes` op)."""
        from . import fn
        return fn.shapes(self, device=device, **({} if dtype is None else {"dtype": dtype}))

    def __repr__(self):
        return "DataNode(name=%r, device=%r)" % (self.name, self.device)

    def __bool__(self):
        raise TypeError("%s is data that exists only when the pipeline runs: it has no truth "
                        "value at definition time (branch on Python values, not on op outputs)"
                        % self.name)

    def __iter__(self):
        raise TypeError("%s is one op output: it cannot be unpacked or iterated" % self.name)

    def __getitem__(self, index):
        """Per-sample indexing and slicing, as DALI's (`x[1:, :-1, 2]`): the tensor_subscript
        op. Indices and bounds are Python ints; an op output as an index, `...` and `None` are
        not supported."""
        from . import fn
        items = index if isinstance(index, tuple) else (index,)
        mode, lo, hi, step = [], [], [], []
        for k, x in enumerate(items):
            what = "%s[...]: subscript %d" % (self.name, k)
            if isinstance(x, slice):
                for part in (x.start, x.stop, x.step):
                    if part is not None and not _is_int(part):
                        raise TypeError("%s: slice bounds are ints (not supported: %s)"
                                        % (what, type(part).__name__))
                if x.step is not None and int(x.step) == 0:
                    raise ValueError("%s: a slice's step cannot be 0" % what)
                mode.append((x.start is None) * 1 + (x.stop is None) * 2)
                lo.append(0 if x.start is None else int(x.start))
                hi.append(0 if x.stop is None else int(x.stop))
                step.append(1 if x.step is None else int(x.step))
            elif _is_int(x):
                mode.append(4)
                lo.append(int(x))
                hi.append(0)
                step.append(1)
            else:
                raise TypeError("%s: an int or a slice of ints (not supported: %s)"
                                % (what, "an op output" if isinstance(x, DataNode)
                                   else type(x).__name__))
        return fn.tensor_subscript(self, mode=mode, lo=lo, hi=hi, step=step)

    def _refuse_comparison(sym):  # noqa: N805 (called in the class body, not a method)
        def compare(self, other):
            raise TypeError("%s %s %s: comparisons of op outputs are not supported (the "
                            "arithmetic op has + - * / and unary -)"
                            % (self.name, sym, type(other).__name__))
        return compare

    __eq__, __ne__ = _refuse_comparison("=="), _refuse_comparison("!=")
    __lt__, __le__ = _refuse_comparison("<"), _refuse_comparison("<=")
    __gt__, __ge__ = _refuse_comparison(">"), _refuse_comparison(">=")
    del _refuse_comparison

    __hash__ = object.__hash__

    # arithmetic: the `arithmetic` op, as DALI's expressions
    def _arith(self, other, op, left=False):
        from . import fn
        if isinstance(other, DataNode):
            a, b = (other, self) if left else (self, other)
            return fn.arithmetic(a, b, op=op)
        if getattr(other, "ndim", 0):
            if getattr(other, "size", 0) != 1:
                raise TypeError("%s with a %s of shape %s: the constant of an arithmetic op is one "
                                "number (or a one-element array)" % (
                                    self.name, type(other).__name__, tuple(other.shape)))
            other = other.reshape(()).item()  # a one-element array: its value
        if _is_int(other):  # Python and numpy integers: an int32 constant, as DALI
            other = int(other.__index__())
        elif isinstance(other, bool) or not isinstance(other, (int, float)):
            try:
                other = float(other)
            except (TypeError, ValueError):
                return NotImplemented
        ctype = "int32" if isinstance(other, int) and not isinstance(other, bool) else "float32"
        return fn.arithmetic(self, op=op, constant=float(other), constant_type=ctype,
                             constant_left=left)

    def __add__(self, o):
        return self._arith(o, "add")

    def __radd__(self, o):
        return self._arith(o, "add", True)

    def __sub__(self, o):
        return self._arith(o, "sub")

    def __rsub__(self, o):
        return self._arith(o, "sub", True)

    def __mul__(self, o):
        return self._arith(o, "mul")

    def __rmul__(self, o):
        return self._arith(o, "mul", True)

    def __truediv__(self, o):
        return self._arith(o, "fdiv")

    def __rtruediv__(self, o):
        return self._arith(o, "fdiv", True)

    def __neg__(self):
        from . import fn
        return fn.arithmetic(self, op="minus")

    def __pos__(self):
        return self


# ---- argument values -----------------------------------------------------------------------------


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


def _literal(v, what):
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
        if '"' not in v:
            return '"%s"' % v
        if "'" not in v:
            return "'%s'" % v
        raise errors.InvalidArgumentError("%s: a string with both kinds of quote" % what)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_literal(x, what) for x in v) + "]"
    if isinstance(v, dict):  # readers.tfrecord's features: a list of [key, value] pairs
        return "[" + ", ".join("[%s, %s]" % (_literal(k, what), _literal(x, what))
                               for k, x in v.items()) + "]"
    if hasattr(v, "_sluice_literal"):  # tfrec.FixedLenFeature(...), tfrec.VarLenFeature(...)
        return v._sluice_literal(_literal, what)
    if isinstance(v, type):
        raise errors.ArgumentTypeError("%s: cannot pass the type %s" % (what, v.__name__))
    if hasattr(v, "tolist"):  # numpy arrays and scalars
        return _literal(v.tolist(), what)
    if hasattr(v, "__index__"):
        return str(v.__index__())
    if hasattr(v, "__float__"):
        return _literal(float(v), what)
    raise errors.ArgumentTypeError("%s: cannot pass a %s" % (what, type(v).__name__))


def _is_int(v):
    return (isinstance(v, int) and not isinstance(v, bool)) or (
        hasattr(v, "__index__") and not isinstance(v, (bool, float, type))
        and not hasattr(v, "lower") and getattr(v, "ndim", 0) == 0)


def _is_num(v):
    return _is_int(v) or isinstance(v, float) or (
        hasattr(v, "__float__") and not isinstance(v, (bool, str)))


def _flat(v):
    if hasattr(v, "tolist") and not isinstance(v, (list, tuple, type)):
        v = v.tolist()
    return v


def _type_ok(kind, v):
    """Does v fit an argument of this schema type? (the C side checks ranges and choices)"""
    v = _flat(v)
    if kind == "bool":
        return isinstance(v, bool) or (_is_int(v) and v in (0, 1))
    if kind == "int":  # (a bool is an int, as DALI takes mirror=False)
        return _is_int(v) or isinstance(v, bool)
    if kind == "float":
        return _is_num(v)
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
            return all(_type_ok(item, x) for x in v)
        return _type_ok(item, v)
    return True


# ---- the graph being defined ---------------------------------------------------------------------


class _OpRecord:
    __slots__ = ("name", "inputs", "device", "args", "arg_nodes", "outputs", "instance")

    def __init__(self, name, inputs, device, args, arg_nodes, instance):
        self.name, self.inputs, self.device = name, inputs, device
        self.args, self.arg_nodes, self.instance = args, arg_nodes, instance
        self.outputs = []


def _pipeline_error(p, where):
    """The exception for the last error of C pipeline p."""
    st = _c.lib.sl_pipeline_status(p)
    return errors.from_status(st if st < 0 else _c.EINVAL,
                              _c.u(_c.lib.sl_pipeline_errmsg(p)) or where)


def _emit_op(p, rec, ids):
    """Adds the op of rec to C pipeline p, its inputs mapped through ids (node id -> C node);
    returns the C nodes of its outputs."""
    op = _c.lib.sl_pipeline_op_begin(p, _c.s(rec.name))
    if not op:
        raise _pipeline_error(p, rec.name)
    for i in rec.inputs:
        _c.lib.sl_pipeline_op_input(op, ids[i._id])
    if rec.device:
        _c.lib.sl_pipeline_op_device(op, _c.s(rec.device))
    if rec.instance:
        _c.lib.sl_pipeline_op_arg(op, b"name", _c.s(_literal(rec.instance, "name")))
    for k, v in rec.args:
        _c.lib.sl_pipeline_op_arg(op, _c.s(k), _c.s(v))
    for k, node in rec.arg_nodes:
        _c.lib.sl_pipeline_op_arg_node(op, _c.s(k), ids[node._id])
    outs = (c_int * _c.MAX_OUTPUTS)()
    count = c_int()
    if _c.lib.sl_pipeline_op_end(op, outs, _c.MAX_OUTPUTS, byref(count)) != _c.OK:
        raise _pipeline_error(p, rec.name)
    return list(outs[:count.value])


def _emit_transfer(p, src, to):
    out = c_int()
    if _c.lib.sl_pipeline_transfer(p, src, to, byref(out)):
        raise _pipeline_error(p, ".gpu()")
    return out.value


def _emit_outputs(p, nodes, names):
    n = len(nodes)
    cids = (c_int * max(1, n))(*nodes)
    cnames = (ctypes.c_char_p * max(1, n))(*[_c.s(x) for x in names])
    if _c.lib.sl_pipeline_set_outputs(p, n, cids, cnames):
        raise _pipeline_error(p, "set_outputs")


class _Graph:
    """The ops of one pipeline definition, checked as they come on a scratch C pipeline."""

    def __init__(self, batch_size):
        self.records = []  # _OpRecord, or ("transfer", src id, to, out id)
        self.sources = []  # python sources of fn.external_source, by registration name
        self.feeds = {}  # node id -> the python source behind it (for feed_input)
        self.outputs = None
        self.output_names = None
        self.nodes = 0
        self.readers = []  # (instance name, record)
        self._gpu = {}
        cfg = _c.PipelineConfig()
        _c.lib.sl_pipeline_config_init(byref(cfg))
        cfg.batch_size = max(1, batch_size)
        cfg.num_threads = 1
        self._scratch = c_void_p()
        self._map = {}
        err = _c.Err()
        errors.check(_c.lib.sl_pipeline_create(byref(cfg), byref(self._scratch), byref(err)), err)

    def close(self):
        if self._scratch:
            _c.lib.sl_pipeline_free(self._scratch)
            self._scratch = c_void_p()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def _new_node(self, gpu, name):
        n = DataNode(self, self.nodes, gpu, name)
        self.nodes += 1
        return n

    def check_node(self, node, what):
        if not isinstance(node, DataNode):
            raise errors.ArgumentTypeError("%s: expected an op output (DataNode), got %s"
                                           % (what, type(node).__name__))
        if node._graph is not self:
            raise errors.InvalidArgumentError("%s: %s belongs to another pipeline's definition"
                                              % (what, node.name))
        return node

    def add_op(self, rec):
        """Checks the op on the scratch pipeline and records it; returns its output nodes."""
        outs = _emit_op(self._scratch, rec, self._map)
        gpu = rec.device in ("gpu", "mixed") or (
            rec.device is None and any(i._gpu for i in rec.inputs))
        label = rec.instance or rec.name
        nodes = []
        for k, c in enumerate(outs):
            n = self._new_node(gpu, label if len(outs) == 1 else "%s[%d]" % (label, k))
            self._map[n._id] = c
            nodes.append(n)
        rec.outputs = [n._id for n in nodes]
        self.records.append(rec)
        return nodes

    def transfer(self, node, to):
        what = ".gpu()" if to == _c.DEVICE_CUDA else ".cpu()"
        self.check_node(node, what)
        pipe = current()
        if pipe is None or pipe._graph is not self:
            raise errors.StateError("%s%s outside its pipeline's definition (inside its "
                                    "@pipeline_def function, or `with pipe:`)" % (node.name, what))
        if to == _c.DEVICE_CPU and node._gpu:
            raise errors.NotSupportedError("%s.cpu(): data on the GPU cannot come back to the CPU "
                                           "inside a pipeline (as in DALI)" % node.name)
        if (to == _c.DEVICE_CUDA) == node._gpu:
            return node
        out = _emit_transfer(self._scratch, self._map[node._id], to)
        n = self._new_node(to == _c.DEVICE_CUDA, node.name + ".gpu()")
        self._map[n._id] = out
        self.records.append(("transfer", node._id, to, n._id))
        return n

    def set_outputs(self, nodes, names):
        _emit_outputs(self._scratch, [self._map[n._id] for n in nodes], names)
        self.outputs = [n._id for n in nodes]
        self.output_names = list(names)

    def replay(self, p):
        """Makes the same graph in the C pipeline p (sources registered, not built)."""
        for src in self.sources:
            src.attach(p)
        ids = {}
        for rec in self.records:
            if isinstance(rec, tuple):
                _, src, to, out = rec
                ids[out] = _emit_transfer(p, ids[src], to)
            else:
                for out, c in zip(rec.outputs, _emit_op(p, rec, ids)):
                    ids[out] = c
        _emit_outputs(p, [ids[i] for i in self.outputs], self.output_names)

    def source_error(self):
        """What to raise for the first exception a Python source raised (taken from it): a
        StopIteration when the source ran out, else a SourceError whose cause it is; None when no
        source raised."""
        for src in self.sources:
            exc = src.exc
            if exc is None:
                continue
            src.exc = None
            if isinstance(exc, StopIteration):
                return StopIteration()
            e = errors.SourceError("fn.external_source %r: the source raised %s: %s"
                                   % (src.label, type(exc).__name__, exc))
            e.__cause__ = exc
            return e
        return None


# ---- batches handed to Python --------------------------------------------------------------------


class _Hold:
    """A batch taken from the library; given back by its owner's next call once the last view of
    it is gone (the owner looks for holds that have died: no __del__, whose start is a place
    where a signal's handler runs, and where a Ctrl-C would lose the batch)."""

    __slots__ = ("_owner", "_batch", "__weakref__")

    def __init__(self, owner):
        self._owner = owner  # kept alive while views of its batches live
        self._batch = None


# Every Pipeline and iterator that has had a C object, for the interpreter's exit; and how many
# times this process has been forked into a child (the C objects of an earlier generation belong
# to the parent: their threads are not in this process).
_owners = weakref.WeakSet()
_generation = [0]


class _Owner:
    """What pipelines and iterators share: the C object (one at a time; closed ones that still
    have live views are kept, stopped, until the owner goes), the batches handed out, and those
    whose views are gone, to give back. Calls on the C object go one thread at a time, through
    _guard()."""

    def _owner_init(self, free, stop, exports=None):
        self._handle = None
        self._retired = []
        # the batches handed out: {(C object, batch): weak reference to its _Hold}
        self._out = {}
        self._free_fn = free
        self._stop_fn = stop
        self._exports_fn = exports  # the C object's live DLPack exports (iterators)
        self._lock = threading.RLock()
        self._generation = _generation[0]
        self._pid = os.getpid()
        # where next() writes the batch it takes: one the caller never wrapped in a _Hold (a
        # KeyboardInterrupt right after the call) is found here and handed over by the next call
        self._inflight = c_void_p()
        # the batch a call has taken and not yet returned: (thread, hold, what the call returns,
        # once made). A KeyboardInterrupt before the call returns leaves it here, and that
        # thread's next call returns it instead of taking another, so an interrupt loses no batch
        self._pending = None
        _owners.add(self)

    def _sources(self):
        """The Python sources whose callbacks this object's pipelines call."""
        return ()

    def _guard(self, what):
        """The lock to hold while calling the C object; refuses calls that could never return."""
        src = getattr(_local, "in_callback", None)
        if src is not None and src in self._sources():
            raise errors.StateError("%s from inside one of its own fn.external_source sources: "
                                    "the pipeline is waiting for that source to return, so it "
                                    "would wait forever" % what)
        if self._generation != _generation[0]:
            raise errors.StateError("%s in a child process made by fork(): the pipeline's threads "
                                    "are in the parent (process %d); make a new pipeline in the "
                                    "child" % (what, self._pid))
        return self._lock

    def _hold(self, me):
        h = _Hold(self)
        ref = weakref.ref(h)
        # the batch that next() wrote into _inflight moves to _out and _pending in stores with no
        # call between them (a signal's handler runs as a call returns): it is in one place or
        # the other, never in both or neither
        h._batch = b = self._inflight.value
        self._out[self._handle, b] = ref
        self._pending = (me, h, None)
        self._inflight.value = None
        return h

    def _taken_before(self, me):
        """The hold of a batch taken for a call of thread `me` that never returned it (a Ctrl-C
        in between), wrapped now if it was never wrapped; None when there is none."""
        if self._inflight.value and self._handle:
            return self._hold(me)
        p = self._pending
        if p is not None and p[0] == me and p[1]._batch is not None and \
                self._out.get((self._handle, p[1]._batch)) is not None:
            return p[1]
        return None

    def _made_before(self, me):
        """What a call of thread `me` made and never returned (a Ctrl-C in between), or None."""
        p = self._pending
        return p[2] if p is not None and p[0] == me else None

    def _live(self, handle=None):
        """How many batches of the C object (the current one) have views alive."""
        handle = handle or self._handle
        return sum(1 for (x, _), ref in list(self._out.items()) if x == handle and ref() is not None)

    def _reclaim(self, release):
        """Gives back what went astray: batches whose views are gone, and one taken by a next()
        that a signal interrupted before it was wrapped."""
        out = self._out
        for key, ref in list(out.items()):
            if ref() is None:
                # off the list and given back with no call in between, so that a Ctrl-C can
                # neither lose it nor give it back twice
                del out[key]
                if key[0] == self._handle:  # a closed one's batches go with it
                    release(*key)
        if self._inflight.value and self._handle:
            b, self._inflight.value = self._inflight.value, None
            release(self._handle, b)

    def _given_back(self, hold, release):
        """Gives the batch of a live hold back now (its views are copies)."""
        key = (self._handle, hold._batch)
        if self._out.get(key) is not None:
            del self._out[key]
            hold._batch = None
            release(*key)

    @staticmethod
    def _wait(wait, handle):
        """Waits for the next batch in slices, so that Ctrl-C is seen while it is being made."""
        while wait(handle, 100) == _c.ETIMEOUT:
            pass

    def _exported(self, h):
        return self._exports_fn is not None and self._exports_fn(h) > 0

    def _close_handle(self):
        h = self._handle
        self._inflight.value = None  # a batch taken but never wrapped goes with its C object
        self._pending = None
        if not h:
            return
        # retired in the statement that clears it, and taken off that list only with no call
        # (where a signal is handled) before its free: a Ctrl-C anywhere in close() leaves the C
        # object either listed (stopped at exit, freed with the owner) or freed, never lost with
        # its threads running
        self._retired, self._handle = self._retired + [h], None
        if self._generation != _generation[0]:
            return
        if self._live(h) or self._exported(h):
            # views of its batches, or exports of them, are alive: its threads end now, its
            # memory when the owner goes
            _stop_pipeline(h, self._stop_fn)
            return
        self._out.clear()
        if sys.is_finalizing():
            return  # the exit stopped its threads (_exit_stop); the process's end frees it
        # _free_pipeline's rule, written out: a call to it between the del and the free is
        # where a Ctrl-C would lose h
        in_callback = getattr(_local, "in_callback", None) is not None
        del self._retired[-1]  # h (calls on the owner go one at a time)
        if in_callback:
            _deferred_free.append((self._free_fn, h))  # not from inside one of its own callbacks
        else:
            self._free_fn(h)

    def _free_all(self):
        h, self._handle = self._handle, None
        handles, self._retired = ([h] if h else []) + self._retired, []
        if self._generation != _generation[0]:
            return  # the parent's: nothing of it runs here, and its memory is the parent's copy
        for x in handles:
            if self._exported(x):
                # a framework still holds arrays of its memory (their deleters count down in C):
                # stopped now, freed by a later call once they are gone
                _stop_pipeline(x, self._stop_fn)
                _orphans.append((x, self._free_fn, self._exports_fn))
            else:
                _free_pipeline(x, self._free_fn)

    def _stop_for_exit(self, deadline):
        """At the interpreter's exit: ends the threads of every C object, frees nothing. Not
        while one of its sources is still running after the deadline, or another thread's call
        holds it: that may never return, and stopping waits for the threads."""
        if self._generation != _generation[0]:
            return
        while any(s.calling for s in self._sources()):
            if time.monotonic() > deadline:
                return
            time.sleep(0.005)
        if not self._lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            return
        try:
            for h in ([self._handle] if self._handle else []) + self._retired:
                self._stop_fn(h)
        finally:
            self._lock.release()


def guarded(what):
    """Decorates a method of an _Owner (or of an object whose _guard is one's) that calls the C
    object: one thread at a time, refused from its own sources and in a forked child."""
    def decorate(method):
        @functools.wraps(method)
        def call(self, *args, **kwargs):
            with self._guard(what):
                return method(self, *args, **kwargs)
        return call
    return decorate


# ---- pipelines -----------------------------------------------------------------------------------

_PIPELINE_ARGS = ("batch_size", "num_threads", "device_id", "seed", "prefetch_queue_depth",
                  "exec_async", "exec_pipelined", "exec_dynamic", "enable_checkpointing",
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
_INT_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1
_UINT64_MAX = 2**64 - 1


def default_num_threads(pipelines):
    """The CPU threads of each of `pipelines` pipelines that run at once when none is given: the
    library's rule (sl_pipeline_default_threads), the CPUs this process may run on shared among
    them, less one, 1..64."""
    return _c.lib.sl_pipeline_default_threads(max(1, min(int(pipelines), _INT_MAX)))


def random_seed():
    return int.from_bytes(os.urandom(8), "little") >> 1


class Pipeline(PipelineAPI, _Owner):
    """A DALI-style pipeline (nvidia.dali.Pipeline): defined inside ``with pipe:`` and
    ``pipe.set_outputs(...)``, or by a ``@pipeline_def`` function; ``build()`` starts it and
    ``run()`` returns one batch: a tuple of TensorList, one per output.

    num_threads: CPU workers; left out (-1 or None), chosen from the machine: the CPUs this
    process may run on, shared by one pipeline per visible GPU for a GPU pipeline, less one
    (default_num_threads); ``pipe.num_threads`` says the count. device_id: a GPU ordinal, or None
    for a CPU-only pipeline (mixed and gpu ops then run on the CPU); the default is GPU 0 where
    there is one, else the CPU. prefetch_queue_depth: batches the pipeline prepares ahead (an
    int, or {"cpu_size": n, "gpu_size": m})."""

    def __init__(self, batch_size=-1, num_threads=-1, device_id=_UNSET, seed=-1,
                 prefetch_queue_depth=2, exec_async=True, exec_pipelined=True, exec_dynamic=False,
                 enable_checkpointing=False, checkpoint=None, py_num_workers=1,
                 py_start_method="fork", set_affinity=False, max_streams=-1,
                 default_cuda_stream_priority=0, enable_memory_stats=False,
                 bytes_per_sample=0, output_dtype=None, output_ndim=None):
        if not _is_int(batch_size) or (batch_size < 1 and batch_size != -1) or \
                batch_size > _INT_MAX:
            raise errors.InvalidArgumentError("Pipeline: batch_size=%r (a positive int, at most "
                                              "%d)" % (batch_size, _INT_MAX))
        if num_threads is None:
            num_threads = -1
        if not _is_int(num_threads) or (num_threads < 1 and num_threads != -1) or \
                num_threads > _INT_MAX:
            raise errors.InvalidArgumentError("Pipeline: num_threads=%r (a positive int)"
                                              % (num_threads,))
        if device_id is _UNSET or (device_id is not None and device_id == -1):
            device_id = 0 if _gpu_count() > 0 else None
        if device_id is not None:
            if not _is_int(device_id) or device_id < 0:
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
            if not _is_int(q) or not 1 <= q <= 16:
                raise errors.InvalidArgumentError("Pipeline: prefetch_queue_depth=%r (1..16)"
                                                  % (prefetch_queue_depth,))
        if not exec_pipelined:  # (DALI's simple executor: no batch is prepared ahead)
            cpu_q = gpu_q = 1
        if py_num_workers not in (0, 1):
            raise errors.NotSupportedError("Pipeline: py_num_workers=%r: sluice calls Python "
                                           "sources in the pipeline's own process" % py_num_workers)
        if output_dtype is not None or output_ndim is not None:
            raise errors.NotSupportedError("Pipeline: output_dtype/output_ndim (check the outputs "
                                           "with their .dtype and .shape)")
        if seed is None:
            seed = -1
        elif not _is_int(seed) or seed > _UINT64_MAX:
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
            self._graph = _Graph(self.batch_size)
        _stack().append(self)
        return self

    def __exit__(self, *exc):
        st = _stack()
        if st and st[-1] is self:
            st.pop()
        return False

    def set_outputs(self, *outputs):
        if self._graph is None:
            raise errors.StateError("set_outputs: define the pipeline's ops first (inside "
                                    "`with pipe:`)")
        flat = []
        for o in outputs:
            if isinstance(o, (list, tuple)):
                flat.extend(o)
            else:
                flat.append(o)
        if not flat:
            raise errors.InvalidArgumentError("set_outputs: the pipeline returns nothing")
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
        return cfg

    def resolved_seed(self):
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
    def build(self):
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
        _drain_deferred()
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
        return _pipeline_error(p, "")

    @property
    def _p(self):
        return self._handle

    def _give_back(self):
        self._reclaim(_c.lib.sl_pipeline_release)

    def run(self):
        """The next batch: a tuple with one TensorList per output."""
        me = threading.get_ident()
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
            _drain_deferred()
            self._check_fed()
            self._give_back()
            self._wait(_c.lib.sl_pipeline_wait, self._p)
            if _c.lib.sl_pipeline_next(self._p, byref(self._inflight)) != _c.OK:
                raise self._failure(self._p)
            hold = self._hold(me)
        _consumed(self._sources())
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
        for i in range(n):
            outs.append(_batch_output(b, i, hold))
            outs[-1]._keys = keys
        if copy:
            keys.fetch()
            outs = [o.copy() for o in outs]
            for o in outs:
                o._keys = keys
        outs = tuple(outs)
        if copy:
            # the copies stay pending, the batch goes back at once (views stay pending as their
            # hold alone: see SlIterator.hand_over)
            self._pending = (me, hold, outs)
            self._given_back(hold, _c.lib.sl_pipeline_release)
        return outs

    def outputs(self):
        return self.run()

    @guarded("reader_meta()")
    def reader_meta(self, name=None):
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

    def epoch_size(self, name=None):
        meta = self.reader_meta(name)
        if name is None:
            return {k: v["epoch_size"] for k, v in meta.items()}
        return meta["epoch_size"]

    def _graph_readers(self):
        return [r for r, _ in self._graph.readers] if self._graph else []

    @guarded("checkpoint()")
    def checkpoint(self):
        """The state that decides every batch after the last one taken (bytes); pass it as
        Pipeline(..., checkpoint=...) to continue exactly there."""
        if not self._built:
            self.build()
        ptr, size = c_void_p(), ctypes.c_size_t()
        if _c.lib.sl_pipeline_save(self._p, byref(ptr), byref(size)):
            raise self._failure(self._p)
        return _c.take_bytes(ptr, size.value)

    @guarded("reset()")
    def reset(self):
        """After a Python source ended the epoch (StopIteration): starts the pipeline afresh."""
        if self._exhausted:
            self._shut()
            self._restore = None
            _consumed(self._sources())  # the sources start again from their beginning
            self.build()

    def close(self):
        """Stops the pipeline's threads and frees it. While views of its batches are alive the
        C pipeline's memory stays, and is freed with the Pipeline object after the last of
        them. run() is refused from then on."""
        self._closed = True
        self._shut()

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

    @property
    def device(self):
        return "cpu" if self.device_id is None else "gpu"


def _batch_output(b, i, hold):
    tl = _c.lib.sl_batch_output(b, i).contents
    dense = _c.Tensor()
    if _c.lib.sl_batch_tensor(b, i, byref(dense), None) != _c.OK:
        dense = None
    return from_c_list(tl, dense, hold)


class _BatchKeys:
    """The record keys of a batch's samples, read from the library when first asked for."""

    __slots__ = ("_b", "_hold", "_keys")

    def __init__(self, b, hold):
        self._b, self._hold, self._keys = b, hold, None

    def fetch(self):
        if self._keys is None:
            n = _c.lib.sl_batch_size(self._b)
            self._keys = [_c.u(_c.lib.sl_batch_key(self._b, i)) for i in range(n)]
            self._hold = None
        return self._keys


# C pipelines are never freed from inside one of their own callbacks (a garbage collection that
# runs in a source's callback, on a pipeline thread): those wait here for the next call.
_deferred_free = []


def _free_pipeline(handle, free=None):
    free = free or _c.lib.sl_pipeline_free
    if sys.is_finalizing():
        return  # the exit stopped its threads (_exit_stop); the process's end frees its memory
    if getattr(_local, "in_callback", None) is not None:
        _deferred_free.append((free, handle))  # not from inside one of its own callbacks
    else:
        free(handle)


def _stop_pipeline(handle, stop):
    if getattr(_local, "in_callback", None) is None:  # (from inside a callback: freed later)
        stop(handle)


# C iterators gone from Python whose memory DLPack consumers still use: (handle, free, exports)
_orphans = []


def _drain_deferred():
    if getattr(_local, "in_callback", None) is not None:
        return  # a pipeline's thread, perhaps one of these pipelines' own: freeing would join it
    with _drain_lock:  # (one thread at a time: the orphans are looked at by their index)
        # each is listed until its free is called, with no call in between: a signal (handled
        # as a call returns) can neither lose one, its threads running on, nor free one twice
        while _deferred_free:
            free, handle = _deferred_free[-1]
            del _deferred_free[-1]
            free(handle)
        i = 0
        while i < len(_orphans):
            handle, free, exports = _orphans[i]
            if exports(handle) > 0:
                i += 1
            else:
                del _orphans[i]
                free(handle)


_drain_lock = threading.Lock()


_exiting = [False]


@atexit.register
def _exit_stop():
    """Ends every pipeline thread while the interpreter can still run their Python sources'
    callbacks: a thread that calls into Python once the interpreter is finalizing never returns,
    and freeing a pipeline waits for its threads. Memory stays for arrays still alive. Sources
    are not called again; one that is running gets a second to return."""
    _exiting[0] = True
    deadline = time.monotonic() + 1.0
    for owner in list(_owners):
        if hasattr(owner, "_cancel_feeds"):
            owner._cancel_feeds()  # (a source waiting for feed_input data returns)
    for owner in list(_owners):
        owner._stop_for_exit(deadline)


def _after_fork_in_child():
    global _drain_lock
    _generation[0] += 1
    _drain_lock = threading.Lock()  # (a thread of the parent's may have held it)
    _deferred_free.clear()
    _orphans.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _consumed(sources):
    for src in sources:
        if src._recording:
            src.consumed()


# ---- pipeline_def --------------------------------------------------------------------------------


def pipeline_def(fn=None, *, enable_conditionals=False, **pipeline_kwargs):
    """DALI's decorator: ``@pipeline_def(batch_size=..., num_threads=..., device_id=...)``; calling
    the decorated function (with its own arguments, and pipeline arguments that override the
    decorator's) traces it and returns a Pipeline."""
    bad = set(pipeline_kwargs) - set(_PIPELINE_ARGS)
    if bad:
        raise errors.ArgumentTypeError("pipeline_def: unknown argument(s) %s" % ", ".join(sorted(bad)))

    def decorate(func):
        params = inspect.signature(func).parameters

        @functools.wraps(func)
        def create(*args, **kwargs):
            pk = dict(pipeline_kwargs)
            fk = {}
            for k, v in kwargs.items():
                if k in _PIPELINE_ARGS and k not in params:
                    pk[k] = v
                else:
                    fk[k] = v
            pipe = Pipeline(**pk)
            trace(pipe, func, args, fk)
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
