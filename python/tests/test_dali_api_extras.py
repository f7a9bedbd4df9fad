# SPDX-License-Identifier: Apache-2.0
"""Parts of DALI's Python API that its example programs and tests use, in the forms they write
them: ops.Compose, the ops names DALI spells its own way (ops.RandomBBoxCrop, ops.COCOReader),
`import sluice.ops.transforms` / `sluice.fn.transforms` as modules, ops._DataNode and the DLPack
helpers of its python-function tests, lists and tuples as arithmetic operands,
types.ScalarConstant's type from the value, sluice.experimental.multi_crop and the tfrecord2idx
command. Results are compared with numpy."""

import importlib
import os
import subprocess
import sys

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.ops as ops
import sluice.types as types
from sluice.experimental import multi_crop


def run1(pipe):
    pipe.build()
    return pipe.run()


def test_ops_names_as_dali_spells_them():
    assert ops.RandomBBoxCrop._fn_name == "random_bbox_crop"
    assert ops.BBoxPaste._fn_name == "bbox_paste"
    assert ops.COCOReader._fn_name == "readers.coco"
    assert "COCOReader" in ops.legacy_names()
    assert ops.segmentation.RandomObjectBBox._fn_name == "segmentation.random_object_bbox"
    assert not hasattr(ops.segmentation, "RandomObjectBbox")
    assert ops.AudioDecoder._fn_name == "decoders.audio"
    assert ops.legacy_names()["AudioDecoder"] == "decoders.audio"


def test_random_object_bbox_by_its_dali_class_name():
    mask = np.int32([[0, 1, 1], [0, 1, 1], [0, 0, 0]])

    class P(sluice.Pipeline):
        def __init__(self):
            super().__init__(batch_size=2, num_threads=1, device_id=None, seed=5)
            self.src = ops.ExternalSource(lambda: [mask, mask])
            self.box = ops.segmentation.RandomObjectBBox(format="box", foreground_prob=1.0)

        def define_graph(self):
            return self.box(self.src())

    (boxes,) = run1(P())
    for i in range(2):  # the one object: rows 0-1, columns 1-2, as [start..., end...]
        assert np.array(boxes.at(i)).tolist() == [0, 1, 2, 3]


def test_external_source_takes_its_source_and_num_outputs_by_position():
    a = [np.arange(3, dtype=np.int16) + k for k in range(2)]
    b = [np.full((2,), 7 + k, dtype=np.uint8) for k in range(2)]

    class P(sluice.Pipeline):
        def __init__(self):
            super().__init__(batch_size=2, num_threads=1, device_id=None)
            self.one = ops.ExternalSource(lambda: a)
            self.two = ops.ExternalSource(lambda: (a, b), 2)

        def define_graph(self):
            x = self.one()
            y, z = self.two()
            return x, y, z

    x, y, z = run1(P())
    for i in range(2):
        assert np.array_equal(x.at(i), a[i]) and np.array_equal(y.at(i), a[i])
        assert np.array_equal(z.at(i), b[i]) and z.at(i).dtype == np.uint8
    with pytest.raises(TypeError):
        ops.Flip(True)  # the other ops take keywords only, as DALI's


def test_backend_impl_classes_are_the_pipelines_outputs():
    import sluice.backend_impl as bi

    assert sluice.backend_impl is bi
    assert bi.TensorListCPU is sluice.backend.TensorListCPU
    assert bi.TensorListGPU is sluice.backend.TensorListGPU
    x = types.Constant(np.float32([1, 2]))

    @sluice.pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        c = fn.cast(x, dtype=types.FLOAT)
        return c, c.gpu()

    cpu, gpu = run1(pipe())
    assert isinstance(cpu, bi.TensorListCPU) and not isinstance(cpu, bi.TensorListGPU)
    assert isinstance(gpu, bi.TensorListGPU) and isinstance(gpu.as_cpu(), bi.TensorListCPU)
    assert isinstance(cpu.at(0), np.ndarray) or isinstance(cpu[0], bi.TensorCPU)


def test_checkpoint_to_a_file_resumes_as_the_bytes(tmp_path):
    @sluice.pipeline_def(batch_size=3, num_threads=1, device_id=None, seed=21,
                         enable_checkpointing=True)
    def pipe():
        return fn.random.uniform(range=(0, 100), shape=(2,))

    p = pipe()
    p.build()
    p.run()
    path = tmp_path / "pipe.cpt"
    data = p.checkpoint(str(path))
    assert path.read_bytes() == data and not list(tmp_path.glob("*.tmp.*"))
    (want,) = p.run()
    r = pipe(checkpoint=path.read_bytes())
    r.build()
    (got,) = r.run()
    for i in range(3):
        assert np.array_equal(np.array(got.at(i)), np.array(want.at(i)))
    with pytest.raises(sluice.Error, match="cannot write"):
        p.checkpoint(str(tmp_path / "no" / "such" / "dir.cpt"))
    with pytest.raises(TypeError, match="filename takes a path"):
        p.checkpoint(5)


def test_namespaces_import_as_modules():
    t = importlib.import_module("sluice.ops.transforms")
    assert t is ops.transforms and t.Translation._fn_name == "transforms.translation"
    import sluice.fn.transforms as T
    assert T is fn.transforms
    assert importlib.import_module("sluice.fn.readers") is fn.readers


def test_compose_applies_ops_in_turn():
    pipe = sluice.Pipeline(batch_size=3, num_threads=1, device_id=None, seed=5)
    with pipe:
        u = ops.random.Uniform()(range=(1, 2), shape=3)
        c1 = ops.Compose([ops.transforms.Translation(offset=u),
                          ops.transforms.Scale(scale=[1, 1, -1])])
        c2 = ops.Compose([c1, ops.transforms.Rotation(angle=90, axis=[0, 0, 1])])
        pipe.set_outputs(c2(fn.transforms.scale(scale=[2, 2, 2])), u)
    mats, offs = run1(pipe)
    rot = np.float32([[0, -1, 0], [1, 0, 0], [0, 0, -1]])
    for i in range(3):
        t = rot @ np.asarray(offs.at(i))[:, None]
        want = np.concatenate([rot * 2, t], axis=1)
        np.testing.assert_allclose(mats.at(i), want, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="op_list is empty"):
        ops.Compose([])


def test_compose_moves_cpu_outputs_to_a_gpu_op():
    pipe = sluice.Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        src = fn.external_source(source=lambda: [np.arange(12, dtype=np.float32)] * 2)
        c = ops.Compose([ops.Copy(device="cpu"), ops.Cast(device="gpu", dtype=types.INT32)])
        pipe.set_outputs(c(src))
    (out,) = run1(pipe)
    assert isinstance(out, sluice.backend.TensorListGPU)
    np.testing.assert_array_equal(out.as_cpu().at(1), np.arange(12, dtype=np.int32))


def test_datanode_and_dlpack_helpers():
    assert ops._DataNode is sluice.DataNode
    a = np.arange(0, 10, 0.5).reshape((2, 10, 1))[:, 2:5, :]
    back = ops._dlpack_to_array(ops._dlpack_from_array(a))
    assert back.shape == a.shape and np.array_equal(back, a)


def test_tuple_and_list_operands_are_constants():
    data = [np.array([[3, 4], [6, 8]], np.int32), np.array([[10, 2], [5, 5]], np.int32)]
    pipe = sluice.Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        x = fn.external_source(source=lambda: data)
        pipe.set_outputs(x / (2, 4), x + [1, 2], (10, 20) - x, x * [0.5, 2.0])
    div, add, rsub, mul = run1(pipe)
    for i in range(2):
        np.testing.assert_allclose(div.at(i), data[i] / np.float32([2, 4]))
        assert div.at(i).dtype == np.float32
        np.testing.assert_array_equal(add.at(i), data[i] + np.int32([1, 2]))
        assert add.at(i).dtype == np.int32
        np.testing.assert_array_equal(rsub.at(i), np.int32([10, 20]) - data[i])
        np.testing.assert_allclose(mul.at(i), data[i] * np.float32([0.5, 2.0]))


def test_scalar_constant_type_from_value():
    assert types.ScalarConstant(10).dtype == types.INT32
    assert types.ScalarConstant(2.5).dtype == types.FLOAT
    assert types.ScalarConstant(True).dtype == types.BOOL
    with pytest.raises(TypeError, match="Expected scalar value of type"):
        types.ScalarConstant("x")
    pipe = sluice.Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        x = fn.external_source(source=lambda: [np.arange(100, dtype=np.float32)] * 2)
        pipe.set_outputs(fn.slice(x, start=types.ScalarConstant(5),
                                  shape=types.ScalarConstant(10), axes=[0]))
    (out,) = run1(pipe)
    np.testing.assert_array_equal(out.at(0), np.arange(5, 15, dtype=np.float32))


def crops_pipe(image, stack, **kwargs):
    pipe = sluice.Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        src = fn.external_source(source=lambda: [image], layout="HWC")
        out = multi_crop(src, stack=stack, **kwargs)
        pipe.set_outputs(*(out if isinstance(out, list) else [out]))
    return run1(pipe)


def test_multi_crop_matches_numpy():
    image = np.arange(20 * 24 * 3, dtype=np.int32).reshape(20, 24, 3)
    anchors = [(0, 0), (4, 4), (2, 8)]
    (stacked,) = crops_pipe(image, True, anchors=anchors, crop=(10, 10))
    arr = np.asarray(stacked.at(0))
    assert arr.shape == (3, 10, 10, 3)
    for i, (y, x) in enumerate(anchors):
        np.testing.assert_array_equal(arr[i], image[y:y + 10, x:x + 10])
    outs = crops_pipe(image, False, anchors=anchors, crop=(10, 10))
    assert len(outs) == 3
    np.testing.assert_array_equal(outs[2].at(0), image[2:12, 8:18])
    (rel,) = crops_pipe(image, True, rel_anchors=[(0.0, 0.0), (0.5, 0.5)], rel_crop=(0.5, 0.5))
    np.testing.assert_array_equal(np.asarray(rel.at(0))[1], image[10:20, 12:24])


@pytest.mark.parametrize("kwargs,msg", [
    ({}, "exactly one of"),
    ({"anchors": [(0, 0)], "rel_anchors": [(0.0, 0.0)]}, "exactly one of"),
    ({"anchors": [(0, 0)]}, "`crop` must be provided"),
    ({"rel_anchors": [(0.0, 0.0)]}, "`rel_crop` must be provided"),
    ({"anchors": [], "crop": (8, 8)}, "at least one anchor"),
])
def test_multi_crop_refuses(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        multi_crop(None, **kwargs)


def test_tfrecord2idx_command_writes_dalis_index(tmp_path):
    """The `tfrecord2idx` console script (sluice.__main__:tfrecord2idx) writes what DALI's
    tfrecord2idx writes: "offset length" per record."""
    import tfrecord_writer
    from conftest import ROOT, TOOL
    rec = tmp_path / "a.tfrecord"
    spans = tfrecord_writer.write(str(rec), [{"x": ("float", [1.0])},
                                             {"x": ("float", [2.0, 3.0])}])
    env = dict(os.environ, SLUICE_TOOL=TOOL, PYTHONPATH=os.path.join(ROOT, "python"))
    cmd = "import sys; from sluice.__main__ import tfrecord2idx; sys.exit(tfrecord2idx())"
    subprocess.run([sys.executable, "-c", cmd, str(rec), str(tmp_path / "a.idx")], check=True,
                   env=env)
    got = (tmp_path / "a.idx").read_text().split()
    assert [int(v) for v in got] == [v for span in spans for v in span]
    assert (tmp_path / "a.idx").read_text() == tfrecord_writer.dali_index(str(rec))


def test_resize_image_type_checks_channels():
    img = [np.zeros((8, 10, 3), np.uint8)]
    for image_type, ok in ((types.RGB, True), (types.ANY_DATA, True), (types.GRAY, False)):
        pipe = sluice.Pipeline(batch_size=1, num_threads=1, device_id=None)
        with pipe:
            x = fn.external_source(source=lambda: img, layout="HWC")
            pipe.set_outputs(ops.Resize(image_type=image_type, resize_x=5, resize_y=4)(x))
        if ok:
            (out,) = run1(pipe)
            assert out.at(0).shape == (4, 5, 3)
        else:
            with pytest.raises(sluice.InvalidArgumentError,
                               match="image_type wants 1 channel, the image has 3"):
                run1(pipe)


def test_ops_call_argument_none_keeps_the_objects_value():
    # DALI's tests make an op with an argument and call it with that argument None ("not
    # given"), e.g. ops.WarpAffine(size=(h, w)) called with size=None
    img = np.arange(2 * 3 * 1, dtype=np.uint8).reshape(2, 3, 1)

    class P(sluice.Pipeline):
        def __init__(self):
            super().__init__(batch_size=1, num_threads=1, device_id=None)
            self.src = ops.ExternalSource(lambda: [img], layout="HWC")
            self.flip = ops.Flip(horizontal=1, vertical=0)
            self.cast = ops.Cast(dtype=types.FLOAT)

        def define_graph(self):
            x = self.src()
            return self.flip(x, horizontal=None), self.cast(x, dtype=None)

    flipped, cast = run1(P())
    assert np.array_equal(np.array(flipped.at(0)), img[:, ::-1])
    assert cast.at(0).dtype == np.float32


def test_one_op_output_is_not_iterable_several_are():
    # DALI's CPU-only test helper: set_outputs(*out) where `out` is Iterable, else set_outputs(out)
    from collections.abc import Iterable

    data = [np.arange(12, dtype=np.uint8).reshape(2, 2, 3)] * 2

    def outputs_of(op, **kw):
        pipe = sluice.Pipeline(batch_size=2, num_threads=1, device_id=None)
        with pipe:
            x = fn.external_source(source=lambda: data, layout="HWC")
            out = op(x, **kw)
            if isinstance(out, Iterable):
                pipe.set_outputs(*out)
            else:
                pipe.set_outputs(out)
        return run1(pipe)

    (flipped,) = outputs_of(fn.flip, horizontal=1)
    assert np.array_equal(np.array(flipped.at(0)), data[0][:, ::-1])
    begin, length = outputs_of(lambda x: fn.nonsilent_region(fn.reshape(x, shape=[12])))
    assert np.array(length.at(0)).dtype == np.int32
    node = fn.external_source(source=lambda: data)
    assert not isinstance(node, Iterable)
    with pytest.raises(TypeError, match="iterable"):
        a, b = node
