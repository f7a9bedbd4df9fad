# SPDX-License-Identifier: Apache-2.0
"""The names and modules DALI programs import: DALI's deprecated op aliases, an unknown op's
did-you-mean, sluice.pipeline.experimental.pipeline_def, sluice.backend, sluice.tensors,
sluice.plugin.base_iterator, and types.SampleInfo / BatchInfo."""

import subprocess

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.types as types
from conftest import LMDB, TOOL


def test_deprecated_aliases_are_the_ops():
    assert fn.experimental.filter is fn.filter  # promoted out of experimental; both names work
    assert fn.experimental.equalize is fn.equalize

    def resolve(name):
        obj = fn
        for part in name.split("."):
            obj = getattr(obj, part)
        return obj

    for alias, name in fn.aliases().items():
        f = resolve(alias)
        # the flat names are DALI's deprecated ones: a wrapper that warns, then the op itself
        assert (f.__wrapped__ if "." not in alias else f) is resolve(name)
        assert alias not in fn.op_names()  # one op, listed once under its name


@pytest.mark.parametrize("old,new,kw", [("coin_flip", "random.coin_flip", {"seed": 5}),
                                        ("uniform", "random.uniform", {"seed": 5}),
                                        ("transform_translation", "transforms.translation",
                                         {"offset": (1, 2)})])
def test_deprecated_names_warn_as_dali_does(old, new, kw):
    """DALI's words, naming the new spelling; the op is the same (same outputs)"""
    import sluice.ops as ops
    pipe = sluice.Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        with pytest.warns(DeprecationWarning, match=r"^WARNING: `sluice\.fn\.%s` is now "
                          r"deprecated\. Use `sluice\.fn\.%s` instead\.$" % (old, new)):
            a = getattr(fn, old)(**kw)
        ns, name = new.split(".")
        pipe.set_outputs(a, getattr(getattr(fn, ns), name)(**kw))
    pipe.build()
    a, b = pipe.run()
    for i in range(2):
        np.testing.assert_array_equal(np.asarray(a.at(i)), np.asarray(b.at(i)))
    with pytest.warns(DeprecationWarning, match=r"`sluice\.ops\.TransformTranslation` is now "
                      r"deprecated\. Use `sluice\.ops\.transforms\.Translation` instead"):
        ops.TransformTranslation(offset=(0, 0))


def test_namespaced_aliases_have_ops_classes(tmp_path):
    """ops.experimental.decoders.Image is decoders.image as ops.decoders.Image is: same pixels"""
    import sluice.ops as ops
    from image_writers import pnm
    img = np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3) * 3
    f = tmp_path / "a.ppm"
    f.write_bytes(pnm(img, 6))
    for alias in [a for a in fn.aliases() if "." in a]:
        parts = alias.split(".")
        cls = ops
        for part in parts[:-1] + [ops._camel(parts[-1])]:
            cls = getattr(cls, part)
        assert cls._fn_name == fn.aliases()[alias]
    pipe = sluice.Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        raw, _ = fn.readers.file(files=[str(f)])
        pipe.set_outputs(ops.experimental.decoders.Image()(raw), fn.decoders.image(raw),
                         ops.experimental.PeekImageShape()(raw))
    pipe.build()
    a, b, shape = pipe.run()
    np.testing.assert_array_equal(np.asarray(a.at(0)), img)
    np.testing.assert_array_equal(np.asarray(b.at(0)), img)
    assert list(np.asarray(shape.at(0))) == [4, 5, 3]


def test_aliases_in_pipeline_text(tmp_path):
    """The aliases come from the library's table, so pipeline text knows them too."""
    text = tmp_path / "p.py"
    text.write_text("import nvidia.dali.fn as fn\n"
                    "def p(path):\n"
                    "    jpegs, labels = fn.caffe2_reader(path=path)\n"
                    "    images = fn.image_decoder(jpegs)\n"
                    "    return fn.experimental.equalize(images), labels\n")
    r = subprocess.run([TOOL, "run", str(text), "--arg", "path=%s" % LMDB, "--devices", "cpu",
                        "--steps", "1", "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert '"samples"' in r.stdout


def test_unknown_op_suggests():
    with pytest.raises(AttributeError, match=r"did you mean fn\.resize"):
        fn.resise  # noqa: B018
    with pytest.raises(AttributeError, match=r"fn\.readers\.caffe2"):
        fn.readers.cafe2  # noqa: B018
    with pytest.raises(AttributeError, match="sluice ops"):
        fn.no_such_thing_at_all  # noqa: B018


def test_experimental_pipeline_def():
    from sluice.pipeline.experimental import pipeline_def

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def p():
        return fn.external_source(source=lambda: [np.int32([1, 2])] * 2)

    pipe = p()
    (x,) = pipe.run()
    assert x.as_array().tolist() == [[1, 2], [1, 2]]
    (x,) = p(debug=True).run()  # debug mode (test_debug_mode.py)
    assert x.as_array().tolist() == [[1, 2], [1, 2]]


def test_backend_and_tensors_classes():
    from sluice.backend import TensorCPU, TensorGPU, TensorListCPU, TensorListGPU
    import sluice.tensors
    assert sluice.tensors.TensorListCPU is TensorListCPU
    p = sluice.Pipeline(batch_size=2, num_threads=1, device_id=None)
    with p:
        p.set_outputs(fn.external_source(source=lambda: [np.zeros(3, np.uint8)] * 2))
    (x,) = p.run()
    assert isinstance(x, TensorListCPU) and not isinstance(x, TensorListGPU)
    assert isinstance(x[0], TensorCPU) and not isinstance(x[0], TensorGPU)


def test_gpu_placed_output_on_a_cpu_pipeline():
    # DALI code written for the GPU (out.at(i).as_cpu(), out.as_cpu().at(i)) runs on a CPU
    # pipeline: an output the definition placed on the GPU is a TensorListGPU over host memory
    from sluice.backend import TensorCPU, TensorGPU, TensorListCPU, TensorListGPU
    p = sluice.Pipeline(batch_size=2, num_threads=1, device_id=None)
    with p:
        x = fn.external_source(source=lambda: [np.arange(3, dtype=np.uint8)] * 2, layout="A")
        p.set_outputs(x, x.gpu(), fn.copy(x.gpu()))
    cpu, gpu, op = p.run()
    assert isinstance(cpu, TensorListCPU) and isinstance(cpu.at(0), np.ndarray)
    for g in (gpu, op):
        assert isinstance(g, TensorListGPU) and g.layout() == "A" and len(g) == 2
        s = g.at(1)
        assert isinstance(s, TensorGPU) and isinstance(g[1], TensorGPU)
        host = s.as_cpu()
        assert isinstance(host, TensorCPU) and np.array_equal(host, [0, 1, 2])
        lst = g.as_cpu()
        assert isinstance(lst, TensorListCPU) and not isinstance(lst, TensorListGPU)
        assert isinstance(lst.at(0), np.ndarray) and lst.at(0).tolist() == [0, 1, 2]
        assert np.array_equal(g.as_array(), [[0, 1, 2], [0, 1, 2]])


def test_sample_and_batch_info():
    seen = []

    def per_sample(info):
        seen.append(info)
        assert isinstance(info, types.SampleInfo)
        return np.int32([info.idx_in_batch])

    def per_batch(info):
        assert isinstance(info, types.BatchInfo)
        return [np.int32([info.iteration])] * 2

    p = sluice.Pipeline(batch_size=2, num_threads=1, device_id=None)
    with p:
        p.set_outputs(fn.external_source(source=per_sample, batch=False),
                      fn.external_source(source=per_batch, batch_info=True))
    a, b = p.run()
    assert a.as_array().ravel().tolist() == [0, 1] and b.as_array().ravel().tolist() == [0, 0]


def test_base_iterator_policy_names():
    from sluice.plugin.base_iterator import LastBatchPolicy
    assert LastBatchPolicy("PARTIAL") == LastBatchPolicy.PARTIAL
    assert LastBatchPolicy("drop") == LastBatchPolicy.DROP
