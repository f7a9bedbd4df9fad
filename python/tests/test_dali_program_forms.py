# SPDX-License-Identifier: Apache-2.0
"""Forms NVIDIA's DALI programs are written in that sluice refused: ops and types.Constant made
outside a pipeline definition, ScalarConstant conversions, a number as a pipeline output, a
Pipeline subclass setting self.device, feed_input's layout, a `gpu` op that sluice runs on the CPU
only, CPU inputs of an op on the GPU, the shape of a decoder's GPU output, and readers.file on
audio files."""

import os
import wave

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.ops as ops
import sluice.types as types
from conftest import FIXTURES, gpu_or_skip
from sluice import pipeline_def
from sluice.pipeline import Pipeline

JPEGS = os.path.join(FIXTURES, "dali_extra", "jpeg")


def test_ops_made_before_their_pipeline():
    perm = fn.batch_permutation()  # no pipeline yet: made where used, as DALI's
    const = types.Constant(np.arange(6, dtype=np.int16).reshape(2, 3))
    pipe = Pipeline(batch_size=4, num_threads=1, device_id=None)
    pipe.set_outputs(perm, const, fn.cat(const, const, axis=1))
    p, c, cc = pipe.run()
    assert sorted(int(p.at(i)) for i in range(4)) == [0, 1, 2, 3]
    np.testing.assert_array_equal(c.at(3), np.arange(6).reshape(2, 3))
    assert c.at(0).dtype == np.int16 and cc.at(0).shape == (2, 6)
    # the same constant in a second pipeline is a node of that one
    other = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with other:
        other.set_outputs(const.gpu())
    np.testing.assert_array_equal(other.run()[0].as_cpu().at(0), np.arange(6).reshape(2, 3))


def test_a_pipeline_def_returning_an_op_made_outside():
    zeros = fn.random.uniform(range=[0, 1], shape=[2])

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def p():
        return zeros

    (out,) = p().run()
    assert out.at(0).shape == (2,)


def test_scalar_constant_and_numbers_as_outputs():
    c = types.Constant(15)
    assert isinstance(c, types.ScalarConstant) and c.dtype == types.INT32
    assert c.float32().dtype == types.FLOAT and c.uint8().value.dtype == np.uint8
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        r = fn.external_source(source=lambda: [np.int32([1, 2]), np.int32([3, 4])])
        pipe.set_outputs(c.float32() - r, r * types.Constant(2.5), 0.25)
    a, b, k = pipe.run()
    assert a.at(0).dtype == np.float32
    np.testing.assert_array_equal(a.at(1), [12.0, 11.0])
    np.testing.assert_array_equal(b.at(0), [2.5, 5.0])
    assert float(k.at(1)) == 0.25 and k.at(1).dtype == np.float32


def test_subclass_sets_self_device_and_feeds_a_layout_in_iter_setup():
    data = [np.arange(24, dtype=np.uint8).reshape(2, 3, 4)] * 2

    class P(Pipeline):
        def __init__(self, device):
            super().__init__(2, 1, None, seed=3)
            self.device = device  # DALI programs keep their own device here
            self.src = ops.ExternalSource()
            self.flip = ops.Flip(device=device)

        def define_graph(self):
            self.data = self.src()
            d = self.data.gpu() if self.device == "gpu" else self.data
            return self.flip(d, horizontal=1, vertical=0)

        def iter_setup(self):
            self.feed_input(self.data, data, layout="CHW")

    for dev in ("cpu", "gpu"):
        (out,) = P(dev).run()
        out = out.as_cpu()
        assert out.layout() == "CHW"
        np.testing.assert_array_equal(out.at(0), data[0][:, :, ::-1])


def test_feed_input_layout_cannot_change():
    class P(Pipeline):
        def __init__(self):
            super().__init__(1, 1, None)
            self.src = ops.ExternalSource(layout="HW")

        def define_graph(self):
            self.data = self.src()
            return self.data

        def iter_setup(self):
            self.feed_input(self.data, [np.zeros((2, 2), np.uint8)], layout="WH")

    with pytest.raises(sluice.Error, match='expected data with layout: "HW" and got: "WH"'):
        P().run()


class _FedPad(Pipeline):
    """DALI's test form: built before anything is fed, a layout with every feed, an op reading it."""

    def __init__(self, feeds, device="cpu", **src):
        super().__init__(2, 1, None, seed=1)
        self.feeds = iter(feeds)
        self.src = ops.ExternalSource(**src)
        self.pad = ops.Pad(device=device, axis_names="W", align=4)
        self.device = device

    def define_graph(self):
        self.data = self.src()
        d = self.data.gpu() if self.device == "gpu" else self.data
        return self.data, self.pad(d)

    def iter_setup(self):
        data, layout = next(self.feeds)
        self.feed_input(self.data, data, layout=layout)


def test_feed_input_layout_reaches_the_ops_of_a_pipeline_built_before_the_first_feed():
    hwc = [np.ones((2, 3, 1), np.uint8), np.ones((1, 5, 1), np.uint8)]
    whc = [np.ones((3, 2, 1), np.uint8), np.ones((5, 1, 1), np.uint8)]
    for dev in ("cpu", "gpu"):
        p = _FedPad([(hwc, "HWC"), (whc, "HWC")], dev)
        p.build()
        src, out = p.run()
        assert src.layout() == "HWC" and out.as_cpu().layout() == "HWC"
        assert out.as_cpu().at(0).shape == (2, 8, 1)  # W (axis 1) padded to 5, aligned to 8
        src, out = p.run()
        assert out.as_cpu().at(0).shape == (3, 4, 1)  # the next feed: its widest W is 2, to 4


def test_feed_input_layout_per_feed_where_the_source_declares_none():
    x = [np.ones((2, 3, 1), np.uint8)] * 2
    p = _FedPad([(x, "WHC"), (x, "WHC"), (x, "HWC")])
    p.build()
    assert p.run()[1].at(0).shape == (4, 3, 1)  # W is axis 0 in this feed's layout
    src, out = p.run()
    assert src.layout() == "WHC" and out.at(0).shape == (4, 3, 1)
    with pytest.raises(sluice.Error, match='changed from the previous batch.s "WHC" to "HWC"'):
        p.run()  # as in DALI, a feed may not change it
    q = _FedPad([(x, "WHC"), (x, None)])
    q.run()
    with pytest.raises(sluice.Error, match='changed from the previous batch.s "WHC" to ""'):
        q.run()  # none is a change too


def test_feed_input_layout_agrees_with_the_declared_one_or_is_refused():
    x = [np.ones((2, 3, 1), np.uint8)] * 2
    p = _FedPad([(x, "HWC"), (x, None), (x, "CHW")], layout="HWC")
    p.build()
    assert p.run()[1].at(0).shape == (2, 4, 1)
    assert p.run()[0].layout() == "HWC"  # none fed: the declared one
    with pytest.raises(sluice.Error, match='expected data with layout: "HWC" and got: "CHW"'):
        p.run()
    q = _FedPad([(x, "HW")])
    with pytest.raises(sluice.Error, match='3 dimensions, but the fed layout "HW"'):
        q.run()
    with pytest.raises(sluice.Error, match="at most 8"):
        _FedPad([(x, "ABCDEFGHI")]).run()


def test_gpu_placement_of_a_cpu_only_op_runs_on_the_cpu_pipeline():
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None, seed=2)
    with pipe:
        x = fn.external_source(source=lambda: [np.float32([[0.25, 0.5]])] * 2)
        flip = fn.random.coin_flip(device="gpu")  # sluice draws on the CPU; DALI has it on GPU
        pipe.set_outputs(fn.coord_flip(x.gpu(), flip_x=1, device="gpu", layout="xy"), flip)
    out, flip = pipe.run()
    np.testing.assert_allclose(out.as_cpu().at(0), [[0.75, 0.5]])
    assert int(flip.as_cpu().at(0)) in (0, 1)


def test_cpu_inputs_of_an_op_on_the_gpu_are_moved_there():
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        a = fn.external_source(source=lambda: [np.int32([1, 2])] * 2).gpu()
        b = fn.external_source(source=lambda: [np.float32([0])] * 2)  # on the CPU
        pipe.set_outputs(fn.cast_like(a, b), fn.random.normal(np.zeros((2, 3)), device="gpu"))
    like, normal = pipe.run()
    assert like.as_cpu().at(0).dtype == np.float32 and normal.as_cpu().at(1).shape == (2, 3)


def test_shape_of_a_decoders_gpu_output():
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        files, _ = fn.readers.file(files=sorted(
            os.path.join(JPEGS, f) for f in os.listdir(JPEGS) if f.endswith(".jpg"))[:2])
        img = fn.decoders.image(files, device="mixed")
        pipe.set_outputs(img, img.shape(dtype=types.INT32))
    img, shape = pipe.run()
    assert shape.at(0).dtype == np.int32
    assert tuple(shape.at(1)) == img.as_cpu().at(1).shape


def test_readers_file_lists_audio_files(tmp_path):
    os.makedirs(tmp_path / "speech")
    for k in range(2):
        with wave.open(str(tmp_path / "speech" / ("s%d.wav" % k)), "wb") as w:
            w.setnchannels(1), w.setsampwidth(2), w.setframerate(8000)
            w.writeframes(np.arange(100 + k, dtype=np.int16).tobytes())
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        raw, label = fn.readers.file(file_root=str(tmp_path))
        audio, rate = fn.decoders.audio(raw, dtype=types.INT16, downmix=True)
        pipe.set_outputs(audio, rate, label)
    audio, rate, label = pipe.run()
    np.testing.assert_array_equal(audio.at(1), np.arange(101, dtype=np.int16))
    assert float(rate.at(0)) == 8000 and int(label.at(0)) == 0


@pytest.mark.gpu
def test_on_a_cuda_pipeline_shapes_of_decoded_images_and_cpu_only_gpu_ops():
    gpu_or_skip()
    files = sorted(os.path.join(JPEGS, f) for f in os.listdir(JPEGS) if f.endswith(".jpg"))[:2]
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=0)
    with pipe:
        img = fn.decoders.image(fn.readers.file(files=files)[0], device="mixed")
        pipe.set_outputs(img, img.shape(), fn.copy(img), fn.flip(img, horizontal=1))
    img, shape, same, flipped = pipe.run()
    assert tuple(shape.at(0)) == img.as_cpu().at(0).shape
    np.testing.assert_array_equal(same.as_cpu().at(1), img.as_cpu().at(1))
    np.testing.assert_array_equal(flipped.as_cpu().at(1), img.as_cpu().at(1)[:, ::-1])
    # a gpu op sluice runs on the CPU only is refused on a CUDA pipeline, naming it
    with pytest.raises(sluice.Error, match="coord_flip"):
        bad = Pipeline(batch_size=2, num_threads=1, device_id=0)
        with bad:
            x = fn.external_source(source=lambda: [np.float32([[0.5, 0.5]])] * 2)
            bad.set_outputs(fn.coord_flip(x.gpu(), device="gpu"))
        bad.build()
    # shapes of a gpu op's output are not known before the GPU stage: refused
    with pytest.raises(sluice.Error, match="on the GPU"):
        late = Pipeline(batch_size=2, num_threads=1, device_id=0)
        with late:
            y = fn.flip(fn.decoders.image(fn.readers.file(files=files)[0], device="mixed"))
            late.set_outputs(y.shape())
        late.build()


@pytest.mark.gpu
def test_on_a_cuda_pipeline_a_cpu_only_gpu_op_gives_each_of_its_outputs():
    """An op of two outputs that sluice runs on the CPU alone, placed on "gpu": on a CUDA pipeline
    each output is followed by its copy to the GPU, and each must hold its own values."""
    gpu_or_skip()
    audio = [np.float32([0] * 20 + [0.5, 0.9, -0.7, 0.8] + [0] * 30),
             np.float32([0.8, -0.6] + [0] * 40 + [0.7] + [0] * 5)]

    def run(device_id):
        pipe = Pipeline(batch_size=2, num_threads=1, device_id=device_id, seed=3)
        with pipe:
            a = fn.external_source(source=lambda: audio)
            begin, length = fn.nonsilent_region(a, window_length=4, cutoff_db=-20.0,
                                                device="gpu")
            pipe.set_outputs(begin, length, fn.random.coin_flip(device="gpu"))
        outs = pipe.run()
        assert device_id is None or [o.device for o in outs] == ["gpu"] * 3
        return [[np.array(t) for t in o.as_cpu()] for o in outs]

    gpu, cpu = run(0), run(None)
    assert [int(b) for b in cpu[0]] == [17, 0] and [int(n) for n in cpu[1]] == [10, 46]
    for k in range(3):
        for i in range(2):
            np.testing.assert_array_equal(gpu[k][i], cpu[k][i])


def test_set_outputs_list_of_numbers_is_one_constant():
    # DALI makes a pipeline output that is not a DataNode a types.Constant: a list of numbers is
    # one output of that array (DALI's test_roi_random_crop returns its ROI start so), while a
    # list of DataNodes is flattened into several outputs
    pipe = sluice.Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        x = fn.external_source(source=lambda: [np.arange(3, dtype=np.int32)] * 2)
        nodes = [x, x + 1]
    pipe.set_outputs([35, 36], nodes, np.float32(2.5), [[1, 2], [3, 4]])
    out = pipe.run()
    assert len(out) == 5
    assert np.array(out[0].at(1)).tolist() == [35, 36]
    assert np.array(out[2].at(0)).tolist() == [1, 2, 3]
    assert float(np.array(out[3].at(0))) == 2.5
    assert np.array(out[4].at(0)).tolist() == [[1, 2], [3, 4]]
