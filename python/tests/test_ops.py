# SPDX-License-Identifier: Apache-2.0
"""sluice.fn is the library's operator table: every op of `sluice ops` is there, with its
arguments and defaults, and nothing else."""

import json

import sluice
import sluice.fn as fn
from conftest import run_tool


def _lookup(name):
    obj = fn
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def test_every_op_both_ways():
    table = json.loads(run_tool("ops", "--json"))
    names = sorted(op["name"] for op in table["ops"])
    assert names == fn.op_names()
    assert len(names) > 30
    for op in table["ops"]:
        f = _lookup(op["name"])
        assert callable(f)
        schema = f.schema
        assert list(schema.args) == [a["name"] for a in op["args"]]
        for a in op["args"]:
            mine = schema.args[a["name"]]
            assert mine.type_doc == a["type_doc"]
            assert mine.default == a["default"]
            assert mine.required == a["required"]
            assert mine.per_sample == a["per_sample"]
    common = [a["name"] for a in table["common_args"]]
    assert {"device", "name", "seed"} <= set(common)


def test_namespaces_as_dali():
    assert callable(fn.readers.caffe2)
    assert callable(fn.decoders.image)
    assert callable(fn.random.coin_flip)
    assert callable(fn.crop_mirror_normalize)
    assert "readers" not in fn.op_names()
    assert "path" in fn.readers.caffe2.__doc__
    assert sluice.__version__.count(".") == 2


def test_types_as_dali():
    import sluice.types as types
    assert types.FLOAT == types.DALIDataType.FLOAT == 9
    assert types.UINT8 == 0 and types.INT32 == 6 and types.FLOAT16 == 8
    assert types.GRAY == types.DALIImageType.GRAY
    assert {types.RGB, types.BGR, types.GRAY} <= set(types.DALIImageType)
