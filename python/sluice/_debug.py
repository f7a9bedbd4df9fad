# SPDX-License-Identifier: Apache-2.0
"""DALI's pipeline debug mode (``sluice.pipeline.experimental.pipeline_def(debug=True)``): the
definition runs again at every ``run()``, and each op runs as it is called, on the batch itself.
An op's outputs are ``DataNodeDebug`` objects that hold their data (``.get()`` gives the
TensorList; printing one shows it), so Python code between the ops may look at it.

How: each call position in the definition (the first op called, the second, ...) has a pipeline
of its own, made at its first call and run once per iteration, holding that op alone. The batches
that reach the op from earlier ops come in through feed_input; a reader or a random op keeps its
state in its own pipeline from one iteration to the next. An op called with other arguments than
in the last iteration (worked out from the data, say) is made again with them; a reader or source
would start again, so for them it is an error. Each position's pipeline gets a seed
of its own from the debug pipeline's seed (as DALI's, debug mode's random values differ from the
standard mode's unless an op is given its own ``seed``). Debug mode is for looking, not speed:
every op is a pipeline run, and data crosses between them through Python."""

import hashlib
import threading

import numpy as np

from . import errors
from .data_node import DataNode

_local = threading.local()


def active():
    """The debug run under way on this thread, or None."""
    return getattr(_local, "run", None)


class DataNodeDebug(DataNode):
    """An op's output in debug mode: a DataNode that holds its batch (DALI's DataNodeDebug)."""

    __slots__ = ("_data",)

    def __init__(self, data, name):
        DataNode.__init__(self, None, -1, type(data).__name__ == "TensorListGPU", name)
        self._data = data

    def get(self):
        """The batch: a TensorListCPU or TensorListGPU."""
        return self._data

    def gpu(self):
        return _transfer(self, "gpu")

    def cpu(self):
        return _transfer(self, "cpu")

    def __repr__(self):
        return "DataNodeDebug(name=%r, device=%r,\n    data=%r)" % (self.name, self.device,
                                                                   self._data)

    __str__ = __repr__


def _transfer(node, device):
    """node's batch on the device: a call position of its own, as an op's"""
    run = active()
    if run is None:
        raise errors.StateError("debug mode: %s.%s() outside the pipeline's definition"
                                % (node.name, device))
    if device == "cpu":  # (the batch itself: no pipeline takes GPU data back to the CPU)
        return DataNodeDebug(node.get().as_cpu(), node.name + ".cpu()")
    return run.call(".gpu()", lambda ins, kw: ins[0].gpu(), [node], {})


def _stable(v):
    """An argument's value as text that is the same in every iteration where the value is: a
    function by its name (a lambda written in the definition is a new object each time), an
    array by its shape, type and a digest of its bytes, an iterator or generator by its type (a
    new one each time is the same source), numbers, strings and lists of them by their repr."""
    if isinstance(v, (bool, int, float, str, type(None))):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "%s[%s]" % (type(v).__name__, ", ".join(_stable(x) for x in v))
    if isinstance(v, np.ndarray):
        digest = hashlib.blake2b(np.ascontiguousarray(v).tobytes(), digest_size=16).hexdigest()
        return "ndarray%s:%s:%s" % (v.shape, v.dtype, digest)
    if callable(v) and not isinstance(v, type):
        return "%s.%s" % (getattr(v, "__module__", ""), getattr(v, "__qualname__", type(v)))
    if hasattr(v, "__next__") or hasattr(v, "__iter__"):
        return type(v).__name__
    return repr(v)


class _Position:
    """One call position's pipeline: its feeds (the external sources standing for the op's data
    inputs) and what its outputs look like."""

    def __init__(self, key, pipe, feeds, shape):
        self.key, self.pipe, self.feeds, self.shape = key, pipe, feeds, shape


class DebugRun:
    """A debug pipeline's state across its iterations: one _Position per call position."""

    def __init__(self, owner):
        self.owner = owner  # the Pipeline in debug mode (its batch size, threads, device, seed)
        self.positions = []
        self.at = 0
        self.remade = 0  # ops made again with new arguments (each gets a seed of its own)

    def iterate(self, func, args, kwargs):
        """One iteration: the definition run with every op eager; its outputs' batches."""
        self.at = 0
        prev = active()
        _local.run = self
        try:
            outs = func(*args, **kwargs)
        finally:
            _local.run = prev
        if outs is None:
            raise errors.InvalidArgumentError("%s returned nothing: a pipeline function returns "
                                              "its outputs" % getattr(func, "__name__",
                                                                      "pipeline"))
        outs = outs if isinstance(outs, (list, tuple)) else (outs,)
        got = []
        for k, o in enumerate(outs):
            if not isinstance(o, DataNodeDebug):
                raise errors.ArgumentTypeError(
                    "debug mode: output %d of the pipeline is a %s, not an op's output"
                    % (k, type(o).__name__))
            got.append(o.get())
        return tuple(got)

    def call(self, what, build, inputs, kwargs):
        """The op at the next call position: build(inputs, kwargs) makes it in a pipeline being
        defined; the DataNodeDebug among inputs and kwargs values are fed as batches. Returns
        what build returns, with DataNodeDebug for its nodes."""
        data_in = [isinstance(x, DataNodeDebug) for x in inputs]
        data_kw = sorted(k for k, v in kwargs.items() if isinstance(v, DataNodeDebug))
        key = (what, tuple(data_in), tuple(data_kw),
               tuple((k, _stable(v)) for k, v in sorted(kwargs.items()) if k not in data_kw),
               tuple(_stable(x) for x, d in zip(inputs, data_in) if not d))
        k = self.at
        self.at += 1
        if k == len(self.positions):
            self.positions.append(self._make(k, key, what, build, inputs, kwargs, data_in,
                                             data_kw))
        pos = self.positions[k]
        if pos.key != key:
            # arguments worked out from the data may differ each iteration: the op is made
            # again with them; a reader or a source would start again, so that is refused
            if pos.key[0] != what or what.startswith(("fn.readers.", "fn.external_source")):
                raise errors.InvalidArgumentError(
                    "debug mode: call %d of the definition was %s with other arguments in an "
                    "earlier iteration, and is %s now: a debug pipeline calls the same ops in the "
                    "same order each time, and a reader or source with the same arguments"
                    % (k + 1, pos.key[0], what))
            pos.pipe.close()
            self.remade += 1
            pos = self.positions[k] = self._make(k, key, what, build, inputs, kwargs, data_in,
                                                 data_kw)
        fed = [x for x, d in zip(inputs, data_in) if d] + [kwargs[n] for n in data_kw]
        for (node, layout), x in zip(pos.feeds, fed):
            pos.pipe.feed_input(node, _samples(x.get()), layout=layout)
        outs = list(pos.pipe.run())
        names = "%s[%d]" % (what, k)
        if pos.shape == "one":
            return DataNodeDebug(outs[0], names)
        nodes = [DataNodeDebug(t, "%s.%d" % (names, j)) for j, t in enumerate(outs)]
        if isinstance(pos.shape, tuple):  # readers.tfrecord: by feature name
            return dict(zip(pos.shape, nodes))
        return nodes

    def _make(self, k, key, what, build, inputs, kwargs, data_in, data_kw):
        from . import fn
        from .pipeline import Pipeline
        o = self.owner
        pipe = Pipeline(batch_size=o.batch_size, num_threads=o.num_threads,
                        device_id=o.device_id,
                        seed=(o.resolved_seed() * 1000003 + k + 7919 * self.remade) % 2**63,
                        prefetch_queue_depth=1, exec_pipelined=False)
        feeds = []
        prev = active()
        _local.run = None  # the op is defined as usual in its pipeline
        try:
            with pipe:
                def feed(x):
                    t = x.get()
                    layout = t.layout() or None
                    node = fn.external_source(device=x.device, layout=layout,
                                              name="debug_input_%d" % len(feeds))
                    feeds.append((node, layout))
                    return node
                ins = [feed(x) if d else x for x, d in zip(inputs, data_in)]
                kw = {n: (feed(v) if n in data_kw else v) for n, v in kwargs.items()}
                out = build(ins, kw)
                if isinstance(out, dict):
                    shape, flat = tuple(out), list(out.values())
                elif isinstance(out, (list, tuple)):
                    shape, flat = "many", list(out)
                else:
                    shape, flat = "one", [out]
                pipe.set_outputs(*flat)
        finally:
            _local.run = prev
        pipe.build()
        return _Position(key, pipe, feeds, shape)

    def close(self):
        for pos in self.positions:
            pos.pipe.close()
        self.positions = []


def _samples(t):
    """A TensorList's samples as numpy arrays on the CPU, for feed_input."""
    if type(t).__name__ == "TensorListGPU":
        t = t.as_cpu()
    return [np.array(t.at(i)) for i in range(len(t))]


def pipeline_class():
    """The Pipeline subclass of debug mode (made on first use: pipeline.py imports this module's
    callers)."""
    global _DebugPipeline
    if _DebugPipeline is not None:
        return _DebugPipeline
    from .pipeline import Pipeline

    class DebugPipeline(Pipeline):
        """A Pipeline in DALI's debug mode: its definition runs at every run(), each op as it is
        called."""

        def _debug_init(self, func, args, kwargs):
            self._debug = (func, args, kwargs)
            self._debug_run = DebugRun(self)

        def build(self):
            self._built = True  # each op's pipeline is built at its first call

        def run(self):
            if self._closed:
                raise errors.StateError("run() after close()")
            self._built = True
            func, args, kwargs = self._debug
            return self._debug_run.iterate(func, args, kwargs)

        outputs = share_outputs = run

        def schedule_run(self):
            self._built = True

        def release_outputs(self):
            pass

        def close(self):
            self._closed = True
            self._debug_run.close()

        def _refuse(self, what):
            raise errors.NotSupportedError("%s in debug mode (its ops run in pipelines of their "
                                           "own, one per call)" % what)

        def epoch_size(self, name=None):
            self._refuse("epoch_size()")

        def reader_meta(self, name=None):
            self._refuse("reader_meta()")

        def checkpoint(self):
            self._refuse("checkpoint()")

        def reset(self):
            self._refuse("reset()")

        def feed_input(self, *args, **kwargs):
            self._refuse("feed_input()")

    _DebugPipeline = DebugPipeline
    return DebugPipeline


_DebugPipeline = None
