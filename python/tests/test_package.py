# SPDX-License-Identifier: Apache-2.0
"""The package as a project to read and carry on:
- every public name of sluice, sluice.fn, sluice.types and sluice.plugin.* has a docstring
  (classes, functions, every operator of fn, and the public methods and properties of public
  classes); a plugin module whose framework is not installed here is read from its source;
- no module of python/sluice reaches into another's private names (`from .x import _y`, or
  `x._y` on a module it imported), except the few written down below with their reason;
- the public API's signatures carry type hints that resolve;
- the ctypes mirrors of the C structs (sluice._c) lie field by field where the library's do."""

import ast
import ctypes
import importlib
import inspect
import os
import pkgutil
import typing

import numpy
import pytest

import sluice
import sluice.fn as fn
import sluice.plugin
import sluice.types
from sluice import _c
from conftest import ROOT

PACKAGE = os.path.join(ROOT, "python", "sluice")


def plugin_modules():
    """sluice.plugin's public modules, and those of its packages (sluice.plugin.jax.clu), found
    without importing them (the JAX plugin needs JAX)"""
    out = []
    for m in pkgutil.iter_modules(sluice.plugin.__path__):
        if m.name.startswith("_"):
            continue
        out.append("sluice.plugin." + m.name)
        if m.ispkg:
            sub = os.path.join(sluice.plugin.__path__[0], m.name)
            out += ["sluice.plugin.%s.%s" % (m.name, s.name) for s in pkgutil.iter_modules([sub])
                    if not s.name.startswith("_")]
    return out


def public_names(mod):
    """(name, object) of a module's public API: its __all__; for sluice.fn the operators, their
    groups and DALI's old names, and the functions fn.py defines; elsewhere the classes and
    functions of sluice's own (helpers imported from outside sluice are not its API)."""
    if hasattr(mod, "__all__"):
        return [(n, getattr(mod, n)) for n in mod.__all__]
    out = []
    for n, o in vars(mod).items():
        if n.startswith("_") or inspect.ismodule(o):
            continue
        where = getattr(o, "__module__", None) or ""
        if mod is fn:
            if n in fn.op_names() or n in fn.aliases() or isinstance(o, type(fn.readers)) or \
                    (inspect.isfunction(o) and where == "sluice.fn"):
                out.append((n, o))
        elif (inspect.isclass(o) or inspect.isfunction(o)) and where.startswith("sluice"):
            out.append((n, o))
    return out


def undocumented(qual, o, seen):
    """The names under o (a module's public object) without a docstring."""
    if id(o) in seen:
        return []
    seen.add(id(o))
    if isinstance(o, type(fn.readers)):  # a group of operators: fn.readers, fn.random, ...
        return [m for n, v in vars(o).items() if not n.startswith("_")
                for m in undocumented(qual + "." + n, v, seen)]
    if inspect.ismodule(o):
        return [] if (o.__doc__ or "").strip() else [qual]
    if not (inspect.isclass(o) or inspect.isfunction(o)):
        return []  # constants, enum members, tables: no docstring of their own
    missing = [] if (o.__doc__ or "").strip() else [qual]
    if inspect.isclass(o):
        # its own names and those of the package's classes it derives from (mixins included)
        names = {}
        for k in reversed([k for k in o.__mro__ if k.__module__.startswith("sluice")]):
            names.update(vars(k))
        for n, v in names.items():
            if n.startswith("_"):
                continue
            if isinstance(v, (staticmethod, classmethod)):
                v = v.__func__
            if inspect.isfunction(v) or isinstance(v, property):
                # an override is documented by what it overrides (help() shows that text)
                doc = inspect.getdoc(getattr(o, n)) if inspect.isfunction(v) else v.__doc__
                if not (doc or "").strip():
                    missing.append(qual + "." + n)
    return missing


def undocumented_in_source(path, modname):
    """The same, read from a module's source (its framework is not installed here)."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    missing = [] if ast.get_docstring(tree) else [modname]
    exported = None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__"
                                                for t in node.targets):
            exported = set(ast.literal_eval(node.value))
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.ClassDef)) or node.name.startswith("_"):
            continue
        if exported is not None and node.name not in exported:
            continue
        if not ast.get_docstring(node):
            missing.append(modname + "." + node.name)
        if isinstance(node, ast.ClassDef):
            for m in node.body:
                if isinstance(m, ast.FunctionDef) and not m.name.startswith("_") and \
                        not ast.get_docstring(m):
                    missing.append("%s.%s.%s" % (modname, node.name, m.name))
    return missing


def test_every_public_name_has_a_docstring():
    missing, seen, walked = [], set(), 0
    for modname in ["sluice", "sluice.fn", "sluice.types", "sluice.plugin"] + plugin_modules():
        try:
            mod = importlib.import_module(modname)
        except ImportError:  # sluice.plugin.jax without jax
            path = os.path.join(PACKAGE, *modname.split(".")[1:])
            path = os.path.join(path, "__init__.py") if os.path.isdir(path) else path + ".py"
            missing += undocumented_in_source(path, modname)
            continue
        if not (mod.__doc__ or "").strip():
            missing.append(modname)
        for n, o in public_names(mod):
            walked += 1
            missing += undocumented(modname + "." + n, o, seen)
    assert walked > 100, "the walk found only %d public names" % walked
    assert not missing, "public names without a docstring:\n  " + "\n  ".join(missing)


def test_the_walk_finds_an_undocumented_name():
    """The walk itself: a class with an undocumented method, a function without a docstring."""
    class Documented:
        """A class."""

        def run(self):
            pass

        @property
        def size(self):
            """How many."""

    def bare():
        pass
    Documented.__module__ = "sluice.probe"  # (the walk looks into the package's classes only)
    assert undocumented("X", Documented, set()) == ["X.run"]
    assert undocumented("f", bare, set()) == ["f"]


# Reaches into another module's private names that stay, each with its reason:
# (file, module reached, name) -> why
ALLOWED = {
    ("external.py", "fn", "_call"): "fn's names are the operators (fn.<op>); its generic op call, "
    "which external_source and python_function end in, stays underscored so as not to read as one",
    ("python_function.py", "fn", "_call"): "the same",
    ("_conditionals.py", "fn", "_conditional"): "DALI's own name for the namespace of the "
    "conditional ops (fn._conditional.split, .merge, .not_): public in DALI despite its underscore",
    ("python_function.py", "tensors", "_dlpack_capsule"): "the DLPack capsule is made where the "
    "TensorList exports are; python_function hands GPU samples out as the same capsules",
    ("python_function.py", "tensors", "_DLManagedTensor"): "the same",
    ("python_function.py", "tensors", "_capsule_ptr_obj"): "the same",
    ("python_function.py", "types", "_INFO"): "the dtype table (numpy name, size) kept private in "
    "types, whose public names are DALI's",
}


def package_modules():
    """{dotted module name relative to the package: path} of python/sluice."""
    out = {}
    for dirpath, _, files in os.walk(PACKAGE):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, PACKAGE)[:-3].replace(os.sep, ".")
                out[rel[:-len(".__init__")] if rel.endswith("__init__") else rel] = path
    return out


def private_reaches(path, modules, rel=None):
    """(file, module, name, line) of each reach in a file (rel: its path in the package) into a
    private name of another module of the package: `from .x import _y` (y not itself a module)
    and `x._y` (x bound to a module of the package by an import)."""
    rel = rel or os.path.relpath(path, PACKAGE)
    here = rel[:-3].replace(os.sep, ".")
    pkg = here.rsplit(".", 1)[0] if "." in here else ""
    if here.endswith("__init__"):
        pkg = here[:-len(".__init__")] if "." in here else ""
    tree = ast.parse(open(path, encoding="utf-8").read())

    def resolve(level, module):
        """The package-relative name of `from <level dots><module> import`, None if outside."""
        if level == 0:
            if not (module or "").startswith("sluice"):
                return None
            return (module or "")[len("sluice."):] if module != "sluice" else ""
        base = pkg.split(".") if pkg else []
        base = base[:len(base) - (level - 1)] if level > 1 else base
        return ".".join(base + ([module] if module else []))

    bound, out = {}, []  # local name -> package-relative module it is
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            src = resolve(node.level, node.module)
            if src is None:
                continue
            for a in node.names:
                full = (src + "." if src else "") + a.name
                if full in modules:
                    bound[a.asname or a.name] = full
                elif a.name.startswith("_") and not a.name.startswith("__"):
                    out.append((rel, src.rsplit(".", 1)[-1] or "sluice", a.name, node.lineno))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("sluice.") and a.asname:
                    bound[a.asname] = a.name[len("sluice."):]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.value.id in bound and node.attr.startswith("_") and \
                not node.attr.startswith("__") and bound[node.value.id] != here:
            out.append((rel, bound[node.value.id].rsplit(".", 1)[-1], node.attr, node.lineno))
    return out


def test_no_module_reaches_into_anothers_private_names():
    modules = package_modules()
    assert len(modules) > 20 and "plugin._iterator" in modules
    found = [r for path in sorted(modules.values()) for r in private_reaches(path, modules)]
    wrong = ["%s:%d: %s.%s" % (f, line, m, n) for f, m, n, line in found
             if (f, m, n) not in ALLOWED]
    assert not wrong, "private names of another module:\n  " + "\n  ".join(wrong)
    used = {(f, m, n) for f, m, n, _ in found}
    assert set(ALLOWED) <= used, "allowed but no longer done: %s" % (set(ALLOWED) - used)


def test_the_private_name_walk_finds_a_reach(tmp_path):
    """The AST walk itself, on a module written here as if it lay in the package."""
    src = tmp_path / "probe.py"
    src.write_text("from . import types as _types\nfrom .fn import _call\n"
                   "from ._c import lib\nx = _types._INFO\ny = _types.to_sl\n")
    modules = dict(package_modules(), probe=str(src))
    got = {(m, n) for _, m, n, _ in private_reaches(str(src), modules, "probe.py")}
    assert got == {("types", "_INFO"), ("fn", "_call")}, got


# The public API whose signatures carry type hints (parameters and return)
HINTED = [sluice.pipeline_def, sluice.Pipeline.__init__, sluice.Pipeline.build,
          sluice.Pipeline.run, sluice.Pipeline.outputs, sluice.Pipeline.schedule_run,
          sluice.Pipeline.share_outputs, sluice.Pipeline.release_outputs,
          sluice.Pipeline.feed_input, sluice.Pipeline.set_outputs, sluice.Pipeline.reset,
          sluice.Pipeline.epoch_size, sluice.Pipeline.reader_meta, sluice.Pipeline.checkpoint,
          sluice.Pipeline.close, sluice.DataNode.gpu, sluice.DataNode.cpu,
          sluice.TensorList.as_tensor, sluice.TensorList.as_array, sluice.TensorList.at,
          sluice.TensorList.layout, sluice.TensorList.shape, sluice.TensorList.is_dense_tensor,
          sluice.TensorListCPU.as_array, sluice.TensorListGPU.as_cpu, sluice.Tensor.as_tensor,
          sluice.build_info, fn.external_source, sluice.types.to_numpy_type,
          sluice.types.to_dali_type, sluice.types.Constant]


def plugin_hinted():
    """The iterators' constructors and calls, of the frameworks installed here."""
    out = []
    for modname in plugin_modules():
        try:
            mod = importlib.import_module(modname)
        except ImportError:  # (jax, on a machine without it)
            continue
        for name in getattr(mod, "__all__", ()):
            o = getattr(mod, name)
            if inspect.isclass(o) and hasattr(o, "__next__"):
                out += [o.__init__, o.__next__, o.reset, o.checkpoints, o.close, o.size]
            elif inspect.isfunction(o):
                out.append(o)
    return out


def test_the_public_api_has_type_hints():
    bare = []
    hinted = HINTED + plugin_hinted()
    assert len(hinted) > len(HINTED) + 10, "the plugins' iterators were not found"
    for f in hinted:
        f = f.fget if isinstance(f, property) else f
        name = getattr(f, "__qualname__", repr(f))
        # fails on a hint that names nothing (numpy: imported by the package only when used)
        hints = typing.get_type_hints(f, localns={"numpy": numpy})
        params = [p for p in inspect.signature(f).parameters.values()
                  if p.name not in ("self", "cls") and not p.name.startswith("_") and
                  p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        lacking = [p.name for p in params if p.name not in hints]
        if "return" not in hints and f.__name__ != "__init__":
            lacking.append("return")
        if lacking:
            bare.append("%s: %s" % (name, ", ".join(lacking)))
    assert not bare, "without type hints:\n  " + "\n  ".join(bare)


def test_every_operator_has_type_hints():
    """fn.<op>'s signature, made from the library's schema: each argument's type (a DataNode too
    where it is per-sample), the inputs DataNodes, the result one or a list (tfrecord: a dict)."""
    for name in fn.op_names():
        op = fn
        for part in name.split("."):
            op = getattr(op, part)
        hints = typing.get_type_hints(op)
        params = set(inspect.signature(op).parameters)
        assert set(hints) == params | {"return"}, (name, params ^ set(hints))
        if name == "external_source" or name.endswith("python_function"):
            continue  # (written by hand, with the Python-side arguments)
        for a in fn.schemas[name].args.values():
            per_sample = sluice.DataNode in typing.get_args(hints[a.name])
            assert per_sample == a.per_sample, (name, a.name)
    hints = typing.get_type_hints(fn.crop_mirror_normalize)
    assert hints["dtype"] == typing.Optional[sluice.types.DALIDataType]
    assert hints["mirror"] == typing.Optional[typing.Union[int, sluice.DataNode]]
    assert hints["inputs"] is sluice.DataNode
    assert typing.get_type_hints(fn.readers.tfrecord)["return"] == typing.Dict[str, sluice.DataNode]


def test_struct_mirrors_match_the_library_field_by_field():
    assert _c.struct_mismatches(_c.lib, _c.STRUCTS) == []
    names = []
    while _c.lib.sl_abi_struct_name(len(names)) is not None:
        names.append(_c.lib.sl_abi_struct_name(len(names)).decode())
    assert sorted(names) == sorted(_c.STRUCTS), "structs the library lists and the package " \
        "mirrors differ: %s" % sorted(set(names) ^ set(_c.STRUCTS))
    for cname, py in _c.STRUCTS.items():
        fields = _c.c_fields(_c.lib, cname)
        assert [(_c.FIELD_NAMES.get((cname, n), n), o, z) for n, o, z in fields] == \
            [(f[0], getattr(py, f[0]).offset, getattr(py, f[0]).size) for f in py._fields_]
    # what a mirror with two fields swapped, or a field of another width, is told
    class Swapped(ctypes.Structure):
        _fields_ = [("id", ctypes.c_int), ("kind", ctypes.c_int)]

    class Wide(ctypes.Structure):
        _fields_ = [("kind", ctypes.c_int64)]
    got = _c.struct_mismatches(_c.lib, {"sl_device": Swapped})
    assert got == ["sl_device (field 0: kind, 4 bytes at 0 in the library, id, 4 bytes at 0 in "
                   "the package)"], got
    got = _c.struct_mismatches(_c.lib, {"sl_device": Wide})
    assert got == ["sl_device (field 0: kind, 4 bytes at 0 in the library, kind, 8 bytes at 0 "
                   "in the package)"], got
    assert _c.c_fields(_c.lib, "sl_no_such_struct") == []


@pytest.mark.parametrize("modname", ["sluice.plugin.jax", "sluice.plugin.jax.clu",
                                     "sluice.plugin.pytorch",
                                     "sluice.plugin.numpy"])
def test_plugin_modules_are_walked(modname):
    assert modname in plugin_modules()
