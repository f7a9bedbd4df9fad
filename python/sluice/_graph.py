# SPDX-License-Identifier: Apache-2.0
"""The graph of a pipeline being defined: each op checked on a scratch C pipeline as it is called,
recorded, and replayed into the real pipelines."""

import ctypes
from ctypes import byref, c_int, c_void_p

from . import _c, errors
from ._pool import Pool, Spec
from ._state import current
from ._values import literal
from .data_node import DataNode


class OpRecord:
    __slots__ = ("name", "inputs", "device", "args", "arg_nodes", "outputs", "instance")

    def __init__(self, name, inputs, device, args, arg_nodes, instance):
        self.name, self.inputs, self.device = name, inputs, device
        self.args, self.arg_nodes, self.instance = args, arg_nodes, instance
        self.outputs = []


def pipeline_error(p, where):
    """The exception for the last error of C pipeline p."""
    st = _c.lib.sl_pipeline_status(p)
    return errors.from_status(st if st < 0 else _c.EINVAL,
                              _c.u(_c.lib.sl_pipeline_errmsg(p)) or where)


def emit_op(p, rec, ids):
    """Adds the op of rec to C pipeline p, its inputs mapped through ids (node id -> C node);
    returns the C nodes of its outputs."""
    op = _c.lib.sl_pipeline_op_begin(p, _c.s(rec.name))
    if not op:
        raise pipeline_error(p, rec.name)
    for i in rec.inputs:
        _c.lib.sl_pipeline_op_input(op, ids[i._id])
    if rec.device:
        _c.lib.sl_pipeline_op_device(op, _c.s(rec.device))
    if rec.instance:
        _c.lib.sl_pipeline_op_arg(op, b"name", _c.s(literal(rec.instance, "name")))
    for k, v in rec.args:
        _c.lib.sl_pipeline_op_arg(op, _c.s(k), _c.s(v))
    for k, node in rec.arg_nodes:
        _c.lib.sl_pipeline_op_arg_node(op, _c.s(k), ids[node._id])
    count = c_int()
    if _c.lib.sl_pipeline_op_end(op, None, 0, byref(count)) != _c.OK:
        raise pipeline_error(p, rec.name)
    return [_c.lib.sl_pipeline_last_op_output(p, k) for k in range(count.value)]


def emit_transfer(p, src, to):
    out = c_int()
    if _c.lib.sl_pipeline_transfer(p, src, to, byref(out)):
        raise pipeline_error(p, ".gpu()")
    return out.value


def emit_scope(p, event, ids):
    """A conditional's event (("if", pred), ("else",), ("endif",)) on C pipeline p."""
    st = (_c.lib.sl_pipeline_if(p, ids[event[1]]) if event[0] == "if" else
          _c.lib.sl_pipeline_else(p) if event[0] == "else" else _c.lib.sl_pipeline_endif(p))
    if st:
        raise pipeline_error(p, event[0])


def emit_merge(p, pred, t, f):
    out = c_int()
    if _c.lib.sl_pipeline_merge(p, pred, t, f, byref(out)):
        raise pipeline_error(p, "merge")
    return out.value


def emit_outputs(p, nodes, names):
    n = len(nodes)
    cids = (c_int * max(1, n))(*nodes)
    cnames = (ctypes.c_char_p * max(1, n))(*[_c.s(x) for x in names])
    if _c.lib.sl_pipeline_set_outputs(p, n, cids, cnames):
        raise pipeline_error(p, "set_outputs")


class Graph:
    """The ops of one pipeline definition, checked as they come on a scratch C pipeline."""

    def __init__(self, batch_size):
        # OpRecord, ("transfer", src id, to, out id), a conditional's ("if", predicate id),
        # ("else",), ("endif",), or ("merge", predicate id, true id, false id, out id)
        self.records = []
        self.sources = []  # python sources of fn.external_source, by registration name
        # the worker processes of its parallel sources (sluice._pool), and the pipeline's
        # py_num_workers and py_start_method for them
        self.py_pool = None
        self.py_workers, self.py_start_method = 1, "fork"
        self.feeds = {}  # node id -> the python source behind it (for feed_input)
        self.outputs = None
        self.output_names = None
        self.output_gpu = None
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

    def start_pool(self):
        """The worker processes of the parallel sources, started now if not yet (None when there
        is none)."""
        if self.py_pool is None:
            par = [s for s in self.sources if getattr(s, "parallel", False)]
            if not par:
                return None
            for i, s in enumerate(par):
                s.pool_index = i
            self.py_pool = Pool([Spec(s.source, s.kind, s.cycle) for s in par],
                                [s.label for s in par], self.py_workers, self.py_start_method)
        return self.py_pool

    def close_pool(self):
        """Stops the workers of the parallel sources (started again when next needed)."""
        pool, self.py_pool = self.py_pool, None
        if pool is not None:
            pool.close()

    def close(self):
        self.close_pool()
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
        if type(node).__name__ == "Undefined":  # a variable one branch of an `if` left unset
            node._fail()
        if not isinstance(node, DataNode):
            raise errors.ArgumentTypeError("%s: expected an op output (DataNode), got %s"
                                           % (what, type(node).__name__))
        if node._graph is not self:
            raise errors.InvalidArgumentError("%s: %s belongs to another pipeline's definition"
                                              % (what, node.name))
        return node

    def add_op(self, rec):
        """Checks the op on the scratch pipeline and records it; returns its output nodes."""
        outs = emit_op(self._scratch, rec, self._map)
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
        out = emit_transfer(self._scratch, self._map[node._id], to)
        n = self._new_node(to == _c.DEVICE_CUDA, node.name + ".gpu()")
        self._map[n._id] = out
        self.records.append(("transfer", node._id, to, n._id))
        return n

    # conditionals (DALI's `if` on data): the C builder's scopes, recorded for the replay
    def scope(self, event, pred=None):
        rec = (event,) if pred is None else (event, pred._id)
        emit_scope(self._scratch, rec, self._map)
        self.records.append(rec)

    def merge(self, pred, t, f):
        out = emit_merge(self._scratch, self._map[pred._id], self._map[t._id], self._map[f._id])
        n = self._new_node(t._gpu or f._gpu, "merge(%s, %s)" % (t.name, f.name))
        self._map[n._id] = out
        self.records.append(("merge", pred._id, t._id, f._id, n._id))
        return n

    def set_outputs(self, nodes, names):
        emit_outputs(self._scratch, [self._map[n._id] for n in nodes], names)
        self.outputs = [n._id for n in nodes]
        self.output_names = list(names)
        self.output_gpu = [bool(n._gpu) for n in nodes]  # where the definition placed each

    def replay(self, p):
        """Makes the same graph in the C pipeline p (sources registered, not built)."""
        for src in self.sources:
            src.attach(p)
        ids = {}
        for rec in self.records:
            if isinstance(rec, tuple) and rec[0] == "transfer":
                _, src, to, out = rec
                ids[out] = emit_transfer(p, ids[src], to)
            elif isinstance(rec, tuple) and rec[0] == "merge":
                _, pred, t, f, out = rec
                ids[out] = emit_merge(p, ids[pred], ids[t], ids[f])
            elif isinstance(rec, tuple):
                emit_scope(p, rec, ids)
            else:
                for out, c in zip(rec.outputs, emit_op(p, rec, ids)):
                    ids[out] = c
        emit_outputs(p, [ids[i] for i in self.outputs], self.output_names)

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
