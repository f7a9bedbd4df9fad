# SPDX-License-Identifier: Apache-2.0
"""Ops called outside a pipeline definition, as DALI allows (`perm = fn.batch_permutation()`
before `pipe.set_outputs(perm)`, `types.Constant(...)` at module level): a Deferred records the
call and makes it, in the pipeline being defined, where it is first used there (an op's input or
argument, a pipeline output); one node per pipeline. What is done to a Deferred outside a
pipeline (`.gpu()`, arithmetic, a subscript) is deferred the same way."""

from ._state import current


class Deferred:
    """An op output still to be made: `make()` builds it in the pipeline being defined."""

    __array_ufunc__ = None  # numpy operands on the left defer to the reflected operator
    __iter__ = None  # not iterable, as a DataNode (Python would iterate through __getitem__)

    def __init__(self, make, what):
        self._make, self._what, self._nodes = make, what, {}

    def node(self):
        """This output as a node of the pipeline being defined (made there the first time)."""
        from . import _debug, errors
        pipe = current()
        if pipe is None and _debug.active() is not None:
            return resolve(self._make())  # debug mode: made now, eagerly (sluice._debug)
        if pipe is None:
            raise errors.StateError("%s: used outside a pipeline definition (inside a "
                                    "@pipeline_def function, `with pipe:` or set_outputs)"
                                    % self._what)
        g = pipe._graph
        n = self._nodes.get(id(g))
        if n is None or n._graph is not g:
            n = self._nodes[id(g)] = resolve(self._make())
        return n

    def _then(self, name, *args, **kwargs):
        from . import _debug
        if current() is not None or _debug.active() is not None:
            return getattr(self.node(), name)(*args, **kwargs)
        return Deferred(lambda: getattr(self.node(), name)(*args, **kwargs),
                        "%s.%s" % (self._what, name))

    def gpu(self):
        """The node's .gpu(), once it is made."""
        return self._then("gpu")

    def cpu(self):
        """The node's .cpu(), once it is made."""
        return self._then("cpu")

    def shape(self, **kwargs):
        """The node's .shape(), once it is made."""
        return self._then("shape", **kwargs)

    def __getitem__(self, index):
        return self._then("__getitem__", index)

    def __repr__(self):
        return "Deferred(%s)" % self._what


def _method(name):
    def f(self, *args):
        return self._then(name, *args)
    f.__name__ = name
    return f


for _n in ("add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv", "floordiv",
           "rfloordiv", "neg", "pos"):
    setattr(Deferred, "__%s__" % _n, _method("__%s__" % _n))


def resolve(x):
    """x with every Deferred in it (x itself, or the items of a list, tuple or dict) made a node
    of the pipeline being defined."""
    if isinstance(x, Deferred):
        return x.node()
    if isinstance(x, (list, tuple)) and any(isinstance(v, Deferred) for v in x):
        return type(x)(resolve(v) for v in x)
    if isinstance(x, dict) and any(isinstance(v, Deferred) for v in x.values()):
        return {k: resolve(v) for k, v in x.items()}
    return x


def defer_call(call, what):
    """An op's call made outside a pipeline: checked now in a scratch pipeline of its own (so a
    wrong argument is an error at the call, as in DALI), and made again, once per pipeline, where
    its outputs are used. Returns what the call returns, with Deferreds for nodes."""
    from .pipeline import Pipeline
    probe = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with probe:
        shape = call()
    made = {}

    def result():
        g = current()._graph
        r = made.get(id(g))
        if r is None or r[0] is not g:
            r = made[id(g)] = (g, call())
        return r[1]

    if isinstance(shape, dict):
        return {k: Deferred((lambda k: lambda: result()[k])(k), "%s[%r]" % (what, k))
                for k in shape}
    if isinstance(shape, (list, tuple)):
        return tuple(Deferred((lambda k: lambda: result()[k])(k), "%s[%d]" % (what, k))
                     for k in range(len(shape)))
    return Deferred(result, what)
