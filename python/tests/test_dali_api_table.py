# SPDX-License-Identifier: Apache-2.0
"""docs/python.md's table of DALI's Python API says what sluice has: every name it marks yes,
partly or refused exists in the package, and every name it marks no does not. (What the names do
is tested by the other test_dali_* suites.)"""

import ast
import importlib
import os
import re

import pytest

import sluice
import sluice.backend
import sluice.plugin
import sluice.fn as fn
import sluice.ops as ops
from conftest import ROOT

DOC = os.path.join(ROOT, "docs", "python.md")
_MISSING = object()


def rows():
    """(section, name, status) of every row of the table."""
    text = open(DOC, encoding="utf-8").read()
    text = text[text.index("## DALI's Python API, name by name"):]
    section, out = None, []
    for line in text.splitlines():
        m = re.match(r"### `?([^`(]+)`?", line)
        if m:
            section = m.group(1).strip()
            continue
        m = re.match(r"\| `([^`]+)` \| (yes|partly|refused|no) \|", line)
        if m:
            out.append((section, m.group(1), m.group(2)))
    return out


def lookup(obj, dotted):
    for part in dotted.split("."):
        obj = getattr(obj, part, _MISSING)
        if obj is _MISSING:
            return _MISSING
    return obj


def plugin_lookup(dotted):
    """plugin.<module>[.<submodule>].<name>: the name from the module (the longest module path
    that is a file of the package), or (where its framework is not installed here) from the
    module's source."""
    parts = dotted.split(".")
    base = os.path.dirname(sluice.__file__)
    for k in range(len(parts), 1, -1):
        path = os.path.join(base, *parts[:k])
        origin = (os.path.join(path, "__init__.py") if os.path.isdir(path) else path + ".py")
        if os.path.isfile(origin):
            break
    else:
        return _MISSING
    if k == len(parts):
        return origin
    try:
        return lookup(importlib.import_module("sluice." + ".".join(parts[:k])),
                      ".".join(parts[k:]))
    except ImportError:
        tree = ast.parse(open(origin, encoding="utf-8").read())
        names = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        names |= {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                  for a in n.names}
        return parts[k] if parts[k] in names else _MISSING


def resolve(section, name, pipe):
    if section == "nvidia.dali":
        return lookup(sluice, name)
    if section == "nvidia.dali.pipeline":
        if name.startswith("Pipeline."):
            return lookup(pipe, name[len("Pipeline."):])
        return lookup(sluice.pipeline, name)
    if section == "nvidia.dali.types":
        return lookup(sluice.types, name)
    if section.startswith("Tensors"):
        return lookup(sluice.backend, name)
    if section == "nvidia.dali.plugin":
        return plugin_lookup(name)
    if section == "nvidia.dali.fn":
        try:
            return lookup(fn, name)
        except AttributeError:  # (fn says an unknown op's closest names)
            return _MISSING
    raise AssertionError("unknown section %r" % section)


def test_every_row_is_true():
    table = rows()
    assert len(table) > 250
    sections = {s for s, _, _ in table}
    assert {"nvidia.dali", "nvidia.dali.pipeline", "nvidia.dali.types", "nvidia.dali.fn",
            "nvidia.dali.plugin"} <= sections
    pipe = sluice.Pipeline(batch_size=1, device_id=None)
    wrong = []
    for section, name, status in table:
        got = resolve(section, name, pipe)
        if (got is _MISSING) != (status == "no"):
            wrong.append("%s: %s marked %s" % (section, name, status))
    assert not wrong, "docs/python.md disagrees with the package:\n" + "\n".join(wrong)


def test_refused_names_say_why():
    pipe = sluice.Pipeline(batch_size=1, device_id=None)
    refused = [name for section, name, status in rows() if status == "refused"]
    assert refused
    for name in refused:
        assert name.startswith("Pipeline.")
        with pytest.raises(sluice.NotSupportedError):
            lookup(pipe, name.split(".", 1)[1])()


def test_every_sluice_op_of_dali_is_listed():
    listed = {name for section, name, status in rows()
              if section == "nvidia.dali.fn" and status != "no"}
    own = {"arithmetic", "readers.mnist"}  # sluice's, not DALI's
    assert set(fn.op_names()) - own <= listed
    assert set(fn.aliases()) <= listed


def test_ops_classes_follow_fn():
    for section, name, status in rows():
        if section != "nvidia.dali.fn" or status == "no" or name in fn.aliases():
            continue
        parts = name.split(".")
        assert lookup(ops, ".".join(parts[:-1] + [ops._camel(parts[-1])])) is not _MISSING
