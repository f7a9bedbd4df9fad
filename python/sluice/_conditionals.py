# SPDX-License-Identifier: Apache-2.0
"""DALI's conditionals (``@pipeline_def(enable_conditionals=True)``): ``if``/``elif``/``else``,
``and``, ``or``, ``not`` and ``a if c else b`` on per-sample DataNode predicates.

The pipeline function is converted once, when it is decorated: its source is parsed and each
``if`` statement rewritten (an AST rewrite, as DALI's AutoGraph does) into calls of this module
that decide, when the definition runs, what the ``if`` is about. A Python value keeps Python's
meaning (the body runs or not, as written). A DataNode opens a conditional in the pipeline's
graph (``sl_pipeline_if``): the ``if`` body is traced once, its ops running on the samples whose
predicate is true, then the ``else`` body, on the others, and every variable either assigned is
merged back in sample order (``sl_pipeline_merge``; an unchanged one needs no merge). The
functions the pipeline function calls are converted the same way when first called (those of
sluice, numpy and the standard library are not). A bad use is an error naming the file and line
of the ``if``: ``return``, ``break`` or ``continue`` inside an ``if`` on data, a variable assigned
in one branch only and used after it, or given different Python values in the two."""

import ast
import functools
import inspect
import itertools
import sys
import textwrap
import types as _pytypes

from . import errors
from ._deferred import resolve
from ._state import current
from .data_node import DataNode


class ConditionalError(errors.InvalidArgumentError):
    """A misuse of conditionals on data (it names the file and line of the ``if``)."""


# ---- the values a branch may leave -----------------------------------------------------------

class Undefined:
    """A variable that one branch of an ``if`` on data assigned and the other did not: using it
    after the ``if`` is an error naming it and the line (as DALI's AutoGraph refuses it)."""

    __slots__ = ("_name", "_where")

    def __init__(self, name, where):
        self._name, self._where = name, where

    def _fail(self, *_):
        raise ConditionalError("%s: variable '%s' is assigned in only one branch of this `if` on "
                               "data, so after the `if` only some samples have it: assign it in "
                               "both branches (or before the `if`)" % (self._where, self._name))

    __bool__ = __iter__ = __len__ = __getitem__ = __call__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _fail
    __truediv__ = __rtruediv__ = __lt__ = __gt__ = __le__ = __ge__ = _fail

    def __getattr__(self, name):
        self._fail()

    def __repr__(self):
        return "<undefined '%s' (%s)>" % (self._name, self._where)


UNDEF = object()  # a variable not bound (before, or in a branch)


def check_nesting_support():
    """DALI's check: whether variables of nested structures (tuples, lists, dicts of DataNodes)
    merge after an `if` on data. They do here, always (_merge goes through them item by item)."""
    return True


def check_defined(value, what):
    """Raises the Undefined's error for value, or for one inside a tuple, list or dict."""
    if isinstance(value, Undefined):
        value._fail()
    if isinstance(value, (tuple, list)):
        for v in value:
            check_defined(v, what)
    elif isinstance(value, dict):
        for v in value.values():
            check_defined(v, what)


def _graph(where):
    pipe = current()
    if pipe is None:
        raise errors.StateError("%s: an `if` on data outside a pipeline's definition" % where)
    return pipe._graph


def _merge(g, pred, name, t, f, where):
    """The variable `name` after the if: t from the true branch, f from the false one."""
    if t is f:
        return t
    t, f = resolve(t), resolve(f)  # (ops and constants made outside a definition: nodes now)
    if t is UNDEF and f is UNDEF:
        return UNDEF
    if t is UNDEF or f is UNDEF or isinstance(t, Undefined) or isinstance(f, Undefined):
        return Undefined(name, where)
    if isinstance(t, DataNode) and isinstance(f, DataNode):
        return g.merge(pred, t, f)
    if isinstance(t, (tuple, list)) and type(t) is type(f) and len(t) == len(f):
        return type(t)(_merge(g, pred, "%s[%d]" % (name, k), a, b, where)
                       for k, (a, b) in enumerate(zip(t, f)))
    if isinstance(t, dict) and isinstance(f, dict) and t.keys() == f.keys():
        return {k: _merge(g, pred, "%s[%r]" % (name, k), t[k], f[k], where) for k in t}
    if isinstance(t, (dict, tuple, list)) and isinstance(f, (dict, tuple, list)):
        if isinstance(t, dict) and isinstance(f, dict):
            why = ("The two dictionaries don't have the same set of keys. First structure has "
                   "keys type=list str=%s, while second structure has keys type=list str=%s"
                   % (list(t), list(f)))
        elif type(t) is not type(f):
            why = ("The two structures don't have the same sequence type. First structure has "
                   "type %s, while second structure has type %s" % (type(t).__name__,
                                                                     type(f).__name__))
        else:
            why = ("The two structures don't have the same sequence length. First structure "
                   "has length %d, while second structure has length %d" % (len(t), len(f)))
        raise ConditionalError(
            "%s: Divergent data found in different branches of `if/else` control flow "
            "statement. Variables in all code paths are merged into common output batches. The "
            "values assigned to a given variable need to have the same nesting structure in "
            "every code path (both `if` branches). Variable '%s': The two structures don't "
            "have the same nested structure. %s" % (where, name, why))
    if not isinstance(t, DataNode) and not isinstance(f, DataNode):
        try:
            if type(t) is type(f) and bool(t == f):
                return t
        except Exception:
            pass
    kind = lambda v: "an op output" if isinstance(v, DataNode) else type(v).__name__  # noqa: E731
    raise ConditionalError("%s: variable '%s' is %s in the `if` branch and %s in the `else` "
                           "branch of this `if` on data: per sample it must be op outputs in "
                           "both (wrap a number in types.Constant)"
                           % (where, name, kind(t), kind(f)))


class Cond:
    """One ``if`` as it runs: on a Python value, or on a DataNode (a conditional in the graph)."""

    __slots__ = ("node", "value", "where", "names", "saved", "true_vals", "graph")

    def __init__(self, test, where, names, jumps):
        self.where, self.names = where, names
        check_defined(test, where)
        self.node = isinstance(test, DataNode)
        self.value = test
        if not self.node:
            return
        if jumps:
            raise ConditionalError("%s: `%s` inside an `if` on data is not supported (each "
                                   "branch runs on its own samples): assign a variable in the "
                                   "branches and %s after the `if`" % (where, jumps, jumps))
        self.graph = _graph(where)
        self.graph.check_node(test, "%s: the condition" % where)

    def keep(self, *saved):
        """Before the if body (DataNode only): the variables' values, restored for the else."""
        self.saved = saved

    def take_true(self):
        if not self.node:
            return bool(self.value)
        self.graph.scope("if", self.value)
        return True

    def switch(self, *true_vals):
        """After the if body (DataNode only): keeps its values; the originals to restore."""
        self.true_vals = true_vals
        self.graph.scope("else")
        return self.saved

    def take_false(self):
        return self.node or not self.value

    def end(self, *false_vals):
        """After the else body: each variable merged."""
        self.graph.scope("endif")
        return tuple(_merge(self.graph, self.value, n, t, f, self.where)
                     for n, t, f in zip(self.names, self.true_vals, false_vals))


def cond(test, where, names, jumps=None):
    return Cond(test, where, names, jumps)


def _branch(pred, where, on_true, on_false):
    """r = on_true() if pred else on_false(), per sample (pred a DataNode): each evaluated in
    its branch; a Python number it gives becomes a constant node there."""
    from . import types
    g = _graph(where)
    g.check_node(pred, "%s: the condition" % where)
    vals = []
    for side, f in (("if", on_true), ("else", on_false)):
        g.scope(side, pred if side == "if" else None)
        v = f()
        if isinstance(v, (bool, int, float)):
            v = types.Constant(v)
        vals.append(resolve(v))  # (a types.Constant of a number is made a node in its branch)
    g.scope("endif")
    return _merge(g, pred, "the result", vals[0], vals[1], where)


def and_(where, *operands):
    """``a and b and ...``: Python's for Python values; for a DataNode, per sample: b only
    where a is true (its ops run on those samples), a where it is false."""
    v = operands[0]()
    for f in operands[1:]:
        check_defined(v, where)
        if isinstance(v, DataNode):
            v = _branch(v, where, f, lambda v=v: v)
        elif not v:
            return v
        else:
            v = f()
    return v


def or_(where, *operands):
    v = operands[0]()
    for f in operands[1:]:
        check_defined(v, where)
        if isinstance(v, DataNode):
            v = _branch(v, where, lambda v=v: v, f)
        elif v:
            return v
        else:
            v = f()
    return v


def not_(where, v):
    check_defined(v, where)
    if isinstance(v, DataNode):
        from . import fn
        return fn._conditional.not_(v)
    return not v


def ifexp(where, test, on_true, on_false):
    """``a if c else b``."""
    check_defined(test, where)
    if isinstance(test, DataNode):
        return _branch(test, where, on_true, on_false)
    return on_true() if test else on_false()


# ---- converting functions --------------------------------------------------------------------

_CONVERTED_CODE = set()  # code objects made here (nested ones too): not converted again
_CACHE = {}  # original function's code -> (converted factory, free variable names)
_SKIP_MODULES = ("sluice", "numpy", "torch", "jax", "scipy", "nvidia")


def do_not_convert(func):
    """DALI's ``nvidia.dali.pipeline.do_not_convert``: func is called as it is from a pipeline
    function with conditionals (an ``if`` in it stays Python's, so on a DataNode it is the
    usual TypeError)."""
    func._sluice_do_not_convert = True
    return func


def _is_user_function(f):
    if not isinstance(f, _pytypes.FunctionType) or f.__code__ in _CONVERTED_CODE:
        return False
    if getattr(f, "_sluice_do_not_convert", False):
        return False
    mod = getattr(f, "__module__", "") or ""
    if mod.split(".")[0] in _SKIP_MODULES or mod in sys.stdlib_module_names or \
            mod.split(".")[0] in sys.stdlib_module_names:
        return False
    if f.__name__ == "<lambda>" or getattr(f, "__wrapped__", None) is not None:
        return False
    path = f.__code__.co_filename
    return not ("site-packages" in path or "dist-packages" in path or path.startswith("<"))


def call(f):
    """f itself, or f converted (a plain Python function of the user's): what a call in converted
    code calls."""
    if _is_user_function(f):
        try:
            return convert(f)
        except (_NoSource, SyntaxError):  # no source to read: called as it is
            return f
    return f


class _NoSource(Exception):
    pass


def convert(f):
    """f with its ``if`` statements (and and/or/not, conditional expressions, calls) rewritten;
    the same function object's conversion is made once."""
    code = f.__code__
    made = _CACHE.get(code)
    if made is None:
        try:
            src = textwrap.dedent(inspect.getsource(f))
        except (OSError, TypeError) as e:
            raise _NoSource(str(e))
        tree = ast.parse(src)
        fdef = tree.body[0]
        if not isinstance(fdef, (ast.FunctionDef, ast.AsyncFunctionDef)):
            raise _NoSource("not a def")
        fdef.decorator_list = []
        filename = code.co_filename
        ast.increment_lineno(tree, code.co_firstlineno - 1)
        fdef = _Rewrite(filename).visit(fdef)
        free = list(code.co_freevars)
        factory = ast.FunctionDef(
            name="_sl_factory",
            args=ast.arguments(posonlyargs=[], args=[ast.arg("_sl")] + [ast.arg(n) for n in free],
                               kwonlyargs=[], kw_defaults=[], defaults=[]),
            body=[fdef, ast.Return(ast.Name(fdef.name, ast.Load()))], decorator_list=[])
        mod = ast.Module(body=[factory], type_ignores=[])
        ast.fix_missing_locations(mod)
        compiled = compile(mod, filename, "exec")
        _remember(compiled)
        ns = {}
        exec(compiled, f.__globals__, ns)  # noqa: S102 (the user's own function, rewritten)
        made = _CACHE[code] = ns["_sl_factory"]
    try:
        cells = [c.cell_contents for c in (f.__closure__ or ())]
    except ValueError as e:  # a free variable not yet bound
        raise _NoSource(str(e))
    g = made(sys.modules[__name__], *cells)
    g.__defaults__, g.__kwdefaults__ = f.__defaults__, f.__kwdefaults__
    functools.update_wrapper(g, f)
    del g.__wrapped__
    return g


def _remember(code):
    _CONVERTED_CODE.add(code)
    for c in code.co_consts:
        if isinstance(c, _pytypes.CodeType):
            _remember(c)


def _assigned(stmts):
    """The names the statements bind at their function's level (not inside nested scopes)."""
    names = []

    class V(ast.NodeVisitor):
        def visit_Name(self, n):
            if isinstance(n.ctx, (ast.Store, ast.Del)) and n.id not in names:
                names.append(n.id)

        def visit_FunctionDef(self, n):
            if n.name not in names:
                names.append(n.name)

        visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef

        def visit_Lambda(self, n):
            pass

        def visit_ListComp(self, n):
            pass

        visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_ListComp

        def visit_alias(self, n):
            name = (n.asname or n.name).split(".")[0]
            if name not in names:
                names.append(name)
    for s in stmts:
        V().visit(s)
    return [n for n in names if not n.startswith("_sl_")]


def _jump(stmts):
    """'return', 'break' or 'continue' when one leaves these statements, else None."""
    class V(ast.NodeVisitor):
        found = None

        def visit_Return(self, n):
            self.found = self.found or "return"

        def visit_Break(self, n):
            self.found = self.found or "break"

        def visit_Continue(self, n):
            self.found = self.found or "continue"

        def visit_FunctionDef(self, n):
            pass

        visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef

        def visit_For(self, n):  # break/continue inside a loop of the branch stay in it
            inner = V()
            for s in n.body + n.orelse:
                inner.visit(s)
            if inner.found == "return":
                self.found = self.found or "return"

        visit_While = visit_AsyncFor = visit_For
    v = V()
    for s in stmts:
        v.visit(s)
    return v.found


_ids = itertools.count()


def _expr(text):
    return ast.parse(text, mode="eval").body


def _stmts(text):
    return ast.parse(textwrap.dedent(text)).body


class _Rewrite(ast.NodeTransformer):
    """The rewrite: each ``if`` into the Cond protocol, and/or/not and ``x if c else y`` into
    this module's functions, each call f(...) into _sl.call(f)(...)."""

    def __init__(self, filename):
        self.filename = filename

    def where(self, n):
        return "%s:%d" % (self.filename, n.lineno)

    def lazy(self, e):
        return ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[],
                                             kw_defaults=[], defaults=[]), body=e)

    def visit_Call(self, n):
        self.generic_visit(n)
        n.func = ast.Call(func=_expr("_sl.call"), args=[n.func], keywords=[])
        return n

    def visit_BoolOp(self, n):
        self.generic_visit(n)
        f = "_sl.and_" if isinstance(n.op, ast.And) else "_sl.or_"
        return ast.Call(func=_expr(f), args=[ast.Constant(self.where(n))] +
                        [self.lazy(v) for v in n.values], keywords=[])

    def visit_UnaryOp(self, n):
        self.generic_visit(n)
        if not isinstance(n.op, ast.Not):
            return n
        return ast.Call(func=_expr("_sl.not_"), args=[ast.Constant(self.where(n)), n.operand],
                        keywords=[])

    def visit_IfExp(self, n):
        self.generic_visit(n)
        return ast.Call(func=_expr("_sl.ifexp"),
                        args=[ast.Constant(self.where(n)), n.test, self.lazy(n.body),
                              self.lazy(n.orelse)], keywords=[])

    def visit_If(self, n):
        names = _assigned(n.body + n.orelse)
        jumps = _jump(n.body + n.orelse)
        self.generic_visit(n)
        k = next(_ids)
        c = "_sl_c%d" % k

        def capture(prefix):  # each name's value, or UNDEF when unbound
            out = []
            for v in names:
                out += _stmts("""
                    try:
                        %s_%s = %s
                    except NameError:
                        %s_%s = _sl.UNDEF
                    """ % (prefix, v, v, prefix, v))
            return out

        def restore(src):  # each name back to src's values (unbound where UNDEF)
            out = []
            for j, v in enumerate(names):
                out += _stmts("""
                    if %s[%d] is _sl.UNDEF:
                        try:
                            del %s
                        except NameError:
                            pass
                    else:
                        %s = %s[%d]
                    """ % (src, j, v, v, src, j))
            return out

        o, t, f = "_sl_o%d" % k, "_sl_t%d" % k, "_sl_f%d" % k
        args = lambda p: ", ".join("%s_%s" % (p, v) for v in names)  # noqa: E731
        head = ast.Assign(targets=[ast.Name(c, ast.Store())],
                          value=ast.Call(func=_expr("_sl.cond"),
                                         args=[n.test, ast.Constant(self.where(n)),
                                               ast.Constant(tuple(names)),
                                               ast.Constant(jumps)], keywords=[]))
        out = [head]
        out += [ast.If(test=_expr("%s.node" % c),
                       body=capture(o) + _stmts("%s.keep(%s)" % (c, args(o))), orelse=[])]
        out += [ast.If(test=_expr("%s.take_true()" % c), body=n.body, orelse=[])]
        after_true = capture(t) + _stmts("%s_saved = %s.switch(%s)" % (c, c, args(t))) + \
            restore("%s_saved" % c)
        out += [ast.If(test=_expr("%s.node" % c), body=after_true, orelse=[])]
        out += [ast.If(test=_expr("%s.take_false()" % c), body=n.orelse or [ast.Pass()],
                       orelse=[])]
        after_false = capture(f) + _stmts("%s_merged = %s.end(%s)" % (c, c, args(f))) + \
            restore("%s_merged" % c)
        out += [ast.If(test=_expr("%s.node" % c), body=after_false, orelse=[])]
        for s in out:
            ast.copy_location(s, n)
        return out


def convert_pipeline_function(func):
    """The pipeline function with conditionals on data: converted, or an error saying why not."""
    try:
        return convert(func)
    except _NoSource as e:
        raise errors.NotSupportedError(
            "enable_conditionals=True: the source of %s cannot be read (%s); conditionals need "
            "a function defined in a file" % (getattr(func, "__name__", func), e))

