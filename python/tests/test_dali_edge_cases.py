# SPDX-License-Identifier: Apache-2.0
"""Edge cases DALI programs reach: transpose's default perm on 0-d samples, stack's axis_name on
0-d inputs, a CPU-only op placed on "gpu" (refused as DALI refuses it, on any machine, from
Python and from pipeline text), and last_batch_policy given as a string."""

import subprocess

import numpy as np
import pytest

import sluice
import sluice.fn as fn
from conftest import LMDB, TOOL


def one_batch(define, batch_size=2):
    p = sluice.Pipeline(batch_size=batch_size, num_threads=1, device_id=None, seed=1)
    with p:
        outs = define()
        p.set_outputs(*(outs if isinstance(outs, (list, tuple)) else (outs,)))
    out = p.run()
    p.close()
    return out


def scalars(v):
    return fn.external_source(source=lambda: [np.float32(v), np.float32(v + 1)])


def test_transpose_default_perm_on_0d_samples():
    (out,) = one_batch(lambda: fn.transpose(scalars(3)))
    assert [out.at(i).shape for i in range(2)] == [(), ()]
    assert [float(out.at(i)) for i in range(2)] == [3.0, 4.0]


def test_transpose_empty_perm_of_0d_samples():
    # DALI's test_transpose_default writes perm out as the dims reversed: [] for a scalar
    (out,) = one_batch(lambda: fn.transpose(scalars(3), perm=[]))
    assert [float(out.at(i)) for i in range(2)] == [3.0, 4.0]
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(sluice.Error, match="perm has 0 entries, the input 2 dimensions"):
        one_batch(lambda: fn.transpose(fn.external_source(source=lambda: [x, x]), perm=[]))


def test_transpose_default_perm_reverses_the_dims():
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    (out,) = one_batch(lambda: fn.transpose(fn.external_source(source=lambda: [x, x])))
    np.testing.assert_array_equal(out.at(0), x.transpose())


def test_stack_axis_name_of_0d_inputs():
    (out,) = one_batch(lambda: fn.stack(scalars(1), scalars(5), axis_name="X"))
    assert out.layout() == "X"
    np.testing.assert_array_equal(out.at(0), np.float32([1, 5]))
    np.testing.assert_array_equal(out.at(1), np.float32([2, 6]))


def test_cpu_only_op_on_gpu_is_refused_in_python():
    p = sluice.Pipeline(batch_size=1, num_threads=1, device_id=None)
    with p:
        with pytest.raises(sluice.Error, match="runs on cpu"):
            fn.readers.file(file_root="/nonexistent", device="gpu")
        with pytest.raises(sluice.Error, match="runs on cpu, mixed"):
            fn.decoders.image(fn.readers.caffe2(path=LMDB)[0], device="gpu")


def test_cpu_only_op_on_gpu_is_refused_in_pipeline_text(tmp_path):
    text = tmp_path / "p.py"
    text.write_text("import nvidia.dali.fn as fn\n"
                    "def p(path):\n"
                    "    jpegs, labels = fn.readers.caffe2(path=path, device='gpu')\n"
                    "    return labels\n")
    r = subprocess.run([TOOL, "run", str(text), "--arg", "path=%s" % LMDB, "--devices", "cpu",
                        "--steps", "1"], capture_output=True, text=True)
    assert r.returncode != 0
    assert 'readers.caffe2 cannot run on device "gpu"' in r.stderr and "p.py:3:" in r.stderr


def test_last_batch_policy_as_a_string():
    torch = pytest.importorskip("torch")  # noqa: F841
    from sluice.plugin.pytorch import DALIGenericIterator

    def make():
        p = sluice.Pipeline(batch_size=100, num_threads=1, device_id=None, seed=2)
        with p:
            jpegs, labels = fn.readers.caffe2(path=LMDB, name="Reader")
            p.set_outputs(labels)
        return p

    sizes = {}
    for policy in ("PARTIAL", "partial", "DROP", "FILL"):
        it = DALIGenericIterator([make()], ["labels"], reader_name="Reader",
                                 last_batch_policy=policy)
        sizes[policy] = [len(b[0]["labels"]) for b in it]
    assert sizes["PARTIAL"] == sizes["partial"] == [100, 100, 56]
    assert sizes["DROP"] == [100, 100] and sizes["FILL"] == [100, 100, 100]
    with pytest.raises(sluice.InvalidArgumentError, match="FILL, DROP or PARTIAL"):
        DALIGenericIterator([make()], ["labels"], reader_name="Reader", last_batch_policy="PART")
