# SPDX-License-Identifier: Apache-2.0
"""DALI's legacy API as its older tutorials and its own tests write it: op objects from
``sluice.ops`` made in a Pipeline subclass's __init__ and called in ``define_graph()``, data fed
by ``feed_input()`` from ``iter_setup()``. Results are compared with the same pipeline written
with ``fn`` and with numpy."""

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.ops as ops
import sluice.types as types
from conftest import LMDB


class CaffeLegacy(sluice.Pipeline):
    """The shape of DALI's old Caffe2 tutorial pipeline, in the legacy API."""

    def __init__(self, batch_size, seed):
        super().__init__(batch_size, 1, None, seed=seed)
        self.input = ops.readers.Caffe2(path=LMDB, random_shuffle=True)
        self.decode = ops.decoders.Image(device="mixed", output_type=types.GRAY)
        self.coin = ops.random.CoinFlip(probability=0.5)
        self.cmn = ops.CropMirrorNormalize(device="gpu", dtype=types.FLOAT, std=[255.0],
                                           output_layout=types.NCHW)

    def define_graph(self):
        jpegs, labels = self.input()
        images = self.decode(jpegs)
        return self.cmn(images, mirror=self.coin()), labels


def caffe_fn(batch_size, seed):
    pipe = sluice.Pipeline(batch_size, 1, None, seed=seed)
    with pipe:
        jpegs, labels = fn.readers.caffe2(path=LMDB, random_shuffle=True)
        images = fn.decoders.image(jpegs, device="mixed", output_type=types.GRAY)
        out = fn.crop_mirror_normalize(images, device="gpu", dtype=types.FLOAT, std=[255.0],
                                       output_layout="CHW", mirror=fn.random.coin_flip())
        pipe.set_outputs(out, labels)
    return pipe


def test_subclass_with_define_graph_matches_fn():
    legacy, modern = CaffeLegacy(8, 42), caffe_fn(8, 42)
    legacy.build()
    modern.build()
    for _ in range(3):
        (a_img, a_lab), (b_img, b_lab) = legacy.run(), modern.run()
        assert a_img.layout() == "CHW"
        np.testing.assert_array_equal(a_img.as_array(), b_img.as_array())
        np.testing.assert_array_equal(a_lab.as_array(), b_lab.as_array())


def test_older_flat_names(tmp_path):
    files = []
    for k in range(3):
        d = tmp_path / ("class%d" % k)
        d.mkdir()
        data = bytes(range(k, k + 10 + k))
        (d / "x.jpg").write_bytes(data)  # (the reader lists by extension; no decoding)
        files.append(data)

    class Files(sluice.Pipeline):
        def __init__(self):
            super().__init__(batch_size=3, num_threads=1, device_id=None, seed=1)
            self.reader = ops.FileReader(file_root=str(tmp_path))

        def define_graph(self):
            return self.reader()

    pipe = Files()
    pipe.build()
    data, labels = pipe.run()
    got = sorted((int(labels.at(i)[0]), bytes(data.at(i))) for i in range(3))
    assert got == [(k, files[k]) for k in range(3)]
    for old, new in ops.legacy_names().items():
        assert getattr(ops, old)._fn_name == new
    assert ops.ImageDecoder._fn_name == "decoders.image"
    assert ops.CoinFlip._fn_name == "random.coin_flip"


def test_every_fn_op_has_its_class():
    for name in fn.op_names():
        parts = name.split(".")
        obj = ops
        for p in parts[:-1]:
            obj = getattr(obj, p)
        cls = getattr(obj, ops._camel(parts[-1]))
        assert cls._fn_name == name


class Fed(sluice.Pipeline):
    """Data from feed_input in iter_setup, as DALI's tests feed numpy batches."""

    def __init__(self, batches, **kw):
        super().__init__(batch_size=4, num_threads=1, device_id=None, seed=3, **kw)
        self.batches = iter(batches)
        self.source = ops.ExternalSource()
        self.cast = ops.Cast(dtype=types.FLOAT)

    def define_graph(self):
        self.data = self.source()
        return self.cast(self.data) * 2

    def iter_setup(self):
        self.feed_input(self.data, next(self.batches))


@pytest.mark.parametrize("exec_args", [{}, {"exec_async": False, "exec_pipelined": False}])
def test_iter_setup_feed_input_compared_with_numpy(exec_args):
    rng = np.random.default_rng(0)
    batches = [rng.integers(0, 100, (4, 3, 2), dtype=np.int32) for _ in range(5)]
    pipe = Fed(batches, **exec_args)
    pipe.build()
    for b in batches:
        (out,) = pipe.run()
        np.testing.assert_array_equal(out.as_array(), b.astype(np.float32) * 2)


def test_feed_input_by_name_and_as_a_list_of_samples():
    pipe = sluice.Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        x = fn.external_source(name="x")
        pipe.set_outputs(x)
    pipe.build()
    samples = [np.arange(3, dtype=np.uint8), np.arange(5, dtype=np.uint8)]
    pipe.feed_input("x", samples)
    (out,) = pipe.run()
    assert [list(out.at(i)) for i in range(2)] == [list(s) for s in samples]


def test_run_without_feeding_is_an_error_not_a_hang():
    pipe = sluice.Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        pipe.set_outputs(fn.external_source(name="x"))
    pipe.feed_input("x", np.zeros((2, 3), np.uint8))
    pipe.run()
    with pytest.raises(sluice.StateError, match="feed_input"):
        pipe.run()
    pipe.close()  # (its stage thread waits for batch 1: close wakes it)


def test_feed_input_refusals():
    pipe = sluice.Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        own = fn.external_source(source=lambda: [np.zeros(1)] * 2, name="own")
        pipe.set_outputs(own, fn.external_source(name="fed"))
    with pytest.raises(sluice.NotFoundError, match="fed"):
        pipe.feed_input("nope", [np.zeros(1)] * 2)
    with pytest.raises(sluice.StateError, match="source of its own"):
        pipe.feed_input(own, [np.zeros(1)] * 2)


def test_op_objects_refuse_unknown_arguments_when_made():
    with pytest.raises(sluice.ArgumentTypeError, match="did you mean 'resize_shorter'"):
        ops.Resize(resize_shorterr=256)
    with pytest.raises(AttributeError, match="ops.Resize"):
        ops.Resise  # noqa: B018


def test_op_objects_take_per_sample_arguments_at_the_call():
    rng = np.random.default_rng(1)
    imgs = [rng.integers(0, 255, (4, 5, 3), dtype=np.uint8) for _ in range(2)]

    class Flips(sluice.Pipeline):
        def __init__(self):
            super().__init__(batch_size=2, num_threads=1, device_id=None, seed=9)
            self.src = ops.ExternalSource(source=lambda: imgs, layout="HWC")
            self.flip = ops.Flip(vertical=1)
            self.coin = ops.random.CoinFlip(probability=1.0)

        def define_graph(self):
            return self.flip(self.src(), horizontal=self.coin())

    pipe = Flips()
    pipe.build()
    (out,) = pipe.run()
    for i in range(2):
        np.testing.assert_array_equal(out.at(i), imgs[i][::-1, ::-1])

