# SPDX-License-Identifier: Apache-2.0
"""sluice.types has every value the library's operator table accepts (derived from it) with
DALI's numbers, DALI's other members, its old layout constants and its type converters; each
interpolation type the table accepts runs through resize."""

import json

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.types as types
from conftest import run_tool


def test_every_enum_value_of_the_table_is_in_types():
    table = json.loads(run_tool("ops", "--json"))
    seen = set()
    for op in table["ops"]:
        for a in op["args"]:
            for choice in (a.get("choices") or "").split("|"):
                if choice.startswith("INTERP_"):
                    assert getattr(types, choice) == types.DALIInterpType[choice]
                    seen.add(choice)
                if choice in ("RGB", "BGR", "GRAY", "YCbCr", "ANY_DATA"):
                    assert getattr(types, choice) == types.DALIImageType[choice]
                    seen.add(choice)
    assert {"INTERP_TRIANGULAR", "INTERP_CUBIC", "GRAY"} <= seen


def test_dali_values():
    assert [int(types.DALIInterpType[n]) for n in (
        "INTERP_NN", "INTERP_LINEAR", "INTERP_CUBIC", "INTERP_LANCZOS3", "INTERP_TRIANGULAR",
        "INTERP_GAUSSIAN")] == [0, 1, 2, 3, 4, 5]
    assert types.UINT32 == 2 and types.UINT64 == 3 and types.FLOAT == 9
    assert types.NCHW == "CHW" and types.NHWC == "HWC"
    assert types.to_numpy_type(types.UINT8) is np.uint8
    assert types.to_numpy_type(types.FLOAT) is np.float32
    assert types.to_dali_type(np.float32) == types.FLOAT
    assert types.to_dali_type(np.dtype("int16")) == types.INT16
    assert types.to_dali_type("torch.int64") == types.INT64
    with pytest.raises(TypeError):
        types.to_dali_type("complex64")


@pytest.mark.parametrize("interp", types.accepted_interp_types())
def test_resize_takes_each_accepted_interp_type(interp):
    img = np.arange(6 * 8 * 3, dtype=np.uint8).reshape(6, 8, 3)
    p = sluice.Pipeline(batch_size=1, num_threads=1, device_id=None)
    with p:
        p.set_outputs(fn.resize(fn.external_source(source=lambda: [img], layout="HWC"),
                                size=[3, 4], interp_type=interp))
    (out,) = p.run()
    assert out.at(0).shape == (3, 4, 3)


def test_interp_types_the_table_lacks_are_refused_by_the_op():
    missing = [t for t in types.DALIInterpType if t not in types.accepted_interp_types()]
    p = sluice.Pipeline(batch_size=1, num_threads=1, device_id=None)
    with p:
        x = fn.external_source(source=lambda: [np.zeros((2, 2, 3), np.uint8)], layout="HWC")
        for t in missing:
            with pytest.raises(ValueError, match=t.name):
                fn.resize(x, size=[1, 1], interp_type=t)


def test_cmn_output_layout_from_an_old_constant():
    img = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    p = sluice.Pipeline(batch_size=1, num_threads=1, device_id=None)
    with p:
        p.set_outputs(fn.crop_mirror_normalize(
            fn.external_source(source=lambda: [img], layout="HWC"), output_layout=types.NCHW))
    (out,) = p.run()
    assert out.layout() == "CHW"
    np.testing.assert_array_equal(out.at(0), img.transpose(2, 0, 1).astype(np.float32))
