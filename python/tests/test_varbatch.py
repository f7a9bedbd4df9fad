# SPDX-License-Identifier: Apache-2.0
"""Variable batch size, as DALI has it: the pipeline's batch_size is the most samples a batch may
have; an external_source (a callable, an iterable or feed_input) that gives fewer makes that
iteration's batch that long, and every op of the pipeline, the random ones with no input too,
works on that many. Batches of 1..max through lookup_table, arithmetic, resize, random ops and a
multi-output pipeline, compared to numpy; the errors for too many samples and sizes that differ;
the iterators with short batches."""

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.ops as ops
import sluice.types as types
from conftest import gpu_or_skip
from sluice import pipeline_def
from sluice.pipeline import Pipeline

MAX = 8
SIZES = [3, 1, 8, 5, 2, 7, 4, 6, 1, 8]


def images(it, n, seed=0):
    """Batch `it` of n uint8 HWC images of varying shapes."""
    rng = np.random.default_rng(seed * 1000 + it)
    return [rng.integers(0, 256, (4 + (it + i) % 5, 6 + i % 3, 3), dtype=np.uint8)
            for i in range(n)]


class LookupPipe(Pipeline):
    """DALI's test form: ops.ExternalSource fed in iter_setup, then ops.LookupTable."""

    def __init__(self, sizes, keys, values, default_value):
        super().__init__(MAX, 2, None)
        self.sizes = sizes
        self.batches = []
        self.inputs = ops.ExternalSource()
        self.lookup = ops.LookupTable(dtype=types.FLOAT, keys=keys, values=values,
                                      default_value=default_value)

    def define_graph(self):
        self.data = self.inputs()
        return self.lookup(self.data)

    def iter_setup(self):
        n = self.sizes[len(self.batches) % len(self.sizes)]
        batch = images(len(self.batches), n)
        self.batches.append(batch)
        self.feed_input(self.data, batch, layout="HWC")


def test_lookup_table_feed_input():
    keys = list(range(0, 256, 3))
    values = [float(k) / 7 for k in keys]
    table = np.full(256, 0.5, np.float32)
    table[keys] = values
    p = LookupPipe(SIZES, keys, values, 0.5)
    for it, n in enumerate(SIZES):
        (out,) = p.run()
        assert len(out) == n
        for i in range(n):
            np.testing.assert_array_equal(out.at(i), table[p.batches[it][i]])


def test_arithmetic_two_sources_and_constants():
    def xs(info):
        n = SIZES[info.iteration % len(SIZES)]
        return [np.full((2, 3), info.iteration * 10 + i, np.int32) for i in range(n)]

    def ys(it):
        n = SIZES[it % len(SIZES)]
        return np.arange(n * 2, dtype=np.float32).reshape(n, 2, 1) + it

    @pipeline_def(batch_size=MAX, num_threads=3, device_id=None)
    def pipe():
        x = fn.external_source(source=xs, batch_info=True)
        y = fn.external_source(source=ys)
        return x * 2 + y, fn.cast(x, dtype=types.FLOAT) / 4, x + 1.5

    p = pipe()
    for it, n in enumerate(SIZES):
        a, b, c = p.run()
        assert len(a) == len(b) == len(c) == n
        x = np.stack([np.full((2, 3), it * 10 + i, np.int32) for i in range(n)])
        y = np.arange(n * 2, dtype=np.float32).reshape(n, 2, 1) + it
        np.testing.assert_allclose(a.as_array(), x * 2 + y)
        np.testing.assert_allclose(b.as_tensor(), x.astype(np.float32) / 4)
        assert a.as_array().shape == (n, 2, 3)
        np.testing.assert_allclose(np.array(c.as_array()), x + 1.5)


def test_resize_nearest_against_numpy():
    def src(it):
        return [np.arange(8 * 8 * 3, dtype=np.uint8).reshape(8, 8, 3) + i + it
                for i in range(SIZES[it % len(SIZES)])]

    @pipeline_def(batch_size=MAX, num_threads=2, device_id=None)
    def pipe():
        img = fn.external_source(source=src, layout="HWC")
        return fn.resize(img, resize_x=4, resize_y=4, interp_type=types.INTERP_NN)

    p = pipe()
    for it, n in enumerate(SIZES[:5]):
        (out,) = p.run()
        assert len(out) == n
        for i in range(n):
            img = np.arange(8 * 8 * 3, dtype=np.uint8).reshape(8, 8, 3) + i + it
            # a 2x reduction: the nearest source pixel of output pixel j is 2 j + 1
            np.testing.assert_array_equal(out.at(i), img[1::2, 1::2])


def test_resize_linear_same_as_full_batches():
    """A sample's result is the same whatever the size of the batch it is in."""

    def short(it):
        return images(it, SIZES[it % len(SIZES)], seed=3)

    def full(it):
        return images(it, MAX, seed=3)

    @pipeline_def(batch_size=MAX, num_threads=2, device_id=None)
    def pipe(src):
        img = fn.external_source(source=src, layout="HWC")
        return fn.resize(img, size=[5, 9]), fn.resize(img, resize_shorter=3)

    short_p, full_p = pipe(short), pipe(full)
    for it, n in enumerate(SIZES[:6]):
        a, b = short_p.run()
        fa, fb = full_p.run()
        assert len(a) == len(b) == n
        for i in range(n):
            assert a.at(i).shape == (5, 9, 3)
            np.testing.assert_array_equal(a.at(i), fa.at(i))
            np.testing.assert_array_equal(b.at(i), fb.at(i))


def test_random_ops_follow_the_batch_and_keep_their_streams():
    """Random ops with no input take the batch size from the external source; sample i of batch
    k draws the same numbers whatever the batch's size."""

    @pipeline_def(batch_size=MAX, num_threads=2, device_id=None, seed=123)
    def pipe(sizes):
        x = fn.external_source(source=lambda it: [np.zeros(1, np.float32)] * sizes[it])
        return (x, fn.random.uniform(range=[-1.0, 1.0]), fn.random.normal(shape=[3]),
                fn.random.coin_flip(probability=0.3), fn.random.uniform(values=[1, 2, 5]))

    short, full = pipe(SIZES), pipe([MAX] * len(SIZES))
    for it, n in enumerate(SIZES):
        got, want = short.run(), full.run()
        for o in range(1, 5):
            assert len(got[o]) == n
            np.testing.assert_array_equal(got[o].as_array(), want[o].as_array()[:n])
        u = got[1].as_array()
        assert ((u >= -1) & (u < 1)).all() and got[2].as_array().shape == (n, 3)
        assert set(np.asarray(got[4].as_array()).ravel()) <= {1, 2, 5}


def test_multi_output_source_and_pipeline():
    def src(it):
        n = SIZES[it % len(SIZES)]
        imgs = images(it, n, seed=5)
        labels = np.arange(n, dtype=np.int64).reshape(n, 1) + 100 * it
        return imgs, labels

    @pipeline_def(batch_size=MAX, num_threads=2, device_id=None)
    def pipe():
        img, label = fn.external_source(source=src, num_outputs=2, layout=["HWC", ""])
        flipped = fn.flip(img, horizontal=1)
        crop = fn.crop_mirror_normalize(img, crop=(3, 4), mean=[10.0, 20.0, 30.0],
                                        std=[2.0, 2.0, 2.0], output_layout="CHW")
        return img, flipped, crop, label, fn.cast(label, dtype=types.FLOAT) * 0.5

    p = pipe()
    for it, n in enumerate(SIZES):
        outs = p.run()
        assert [len(o) for o in outs] == [n] * 5
        src_imgs = images(it, n, seed=5)
        for i in range(n):
            im = src_imgs[i]
            np.testing.assert_array_equal(outs[0].at(i), im)
            np.testing.assert_array_equal(outs[1].at(i), im[:, ::-1])
            h, w = im.shape[:2]
            y0, x0 = int(np.floor((h - 3) * 0.5 + 0.5)), int(np.floor((w - 4) * 0.5 + 0.5))
            want = (im[y0:y0 + 3, x0:x0 + 4].astype(np.float32) - [10, 20, 30]) / 2
            np.testing.assert_allclose(outs[2].at(i), want.transpose(2, 0, 1), rtol=1e-6)
        np.testing.assert_array_equal(outs[3].as_array()[:, 0], np.arange(n) + 100 * it)
        np.testing.assert_allclose(outs[4].as_array()[:, 0], (np.arange(n) + 100 * it) * 0.5)


def test_generator_and_empty_batch():
    def gen():
        for n in (2, 0, 5):
            yield [np.full((1,), n * 10 + i, np.int16) for i in range(n)]

    @pipeline_def(batch_size=MAX, device_id=None)
    def pipe():
        x = fn.external_source(source=gen, dtype=types.INT16, ndim=1)
        return x, x * 3, fn.random.uniform()

    p = pipe()
    for n in (2, 0, 5):
        x, y, u = p.run()
        assert len(x) == len(y) == len(u) == n
        assert [int(np.asarray(v)[0]) for v in y] == [3 * (n * 10 + i) for i in range(n)]
    with pytest.raises(StopIteration):
        p.run()


def test_too_many_samples():
    @pipeline_def(batch_size=4, device_id=None)
    def pipe():
        return fn.external_source(source=lambda: np.zeros((5, 2), np.uint8))

    with pytest.raises(sluice.SourceError, match="5 samples, but the batch size is at most 4"):
        pipe().run()

    @pipeline_def(batch_size=4, device_id=None)
    def fed():
        return fn.external_source(name="x")

    p = fed()
    with pytest.raises(sluice.InvalidArgumentError,
                       match="feed_input: batch 0: 6 samples, but the batch size is at most 4"):
        p.feed_input("x", [np.zeros(1)] * 6)
    p.feed_input("x", [np.zeros(1)] * 3)  # a refused batch leaves nothing behind
    (out,) = p.run()
    assert len(out) == 3


def test_sizes_that_differ():
    @pipeline_def(batch_size=MAX, device_id=None)
    def two():
        a = fn.external_source(source=lambda: [np.zeros(1)] * 3, name="a")
        b = fn.external_source(source=lambda: [np.zeros(1)] * 4, name="b")
        return a, b

    with pytest.raises(sluice.InvalidArgumentError,
                       match=r"batch 0: a \(source '.*'\) gives 3 samples but b \(source '.*'\) "
                             r"gives 4: the external sources of one batch must give as many"):
        two().run()

    @pipeline_def(batch_size=MAX, device_id=None)
    def outputs():
        return tuple(fn.external_source(source=lambda: ([np.zeros(1)] * 2, [np.zeros(1)] * 3),
                                        num_outputs=2))

    with pytest.raises(sluice.SourceError, match=r"batch 0: the outputs have \[2, 3\] samples"):
        outputs().run()


def test_reader_gives_full_batches(tmp_path):
    files = []
    for i in range(10):
        np.save(tmp_path / ("v%d.npy" % i), np.full((2,), i, np.float32))
        files.append(str(tmp_path / ("v%d.npy" % i)))

    @pipeline_def(batch_size=4, device_id=None)
    def pipe():
        v = fn.readers.numpy(files=files, name="r")
        x = fn.external_source(source=lambda: [np.zeros(1)] * 2)
        return v, x

    with pytest.raises(sluice.InvalidArgumentError,
                       match="gives 2 samples, but the reader r gives full batches of 4"):
        pipe().run()


def _short_pipe(sizes):
    @pipeline_def(batch_size=MAX, num_threads=2, device_id=None, seed=9)
    def pipe():
        x = fn.external_source(source=lambda it: np.full((sizes[it % len(sizes)], 2), it,
                                                         np.float32))
        return x, fn.random.uniform()

    return pipe()


def test_pytorch_iterator_short_batches():
    torch = pytest.importorskip("torch")
    from sluice.plugin.pytorch import DALIGenericIterator
    it = DALIGenericIterator(_short_pipe(SIZES), ["x", "u"])
    for k, batch in enumerate(it):
        x = batch[0]["x"]
        assert isinstance(x, torch.Tensor) and tuple(x.shape) == (SIZES[k], 2)
        assert (x == k).all() and batch[0]["u"].shape[0] == SIZES[k]
        if k == 5:
            break
    with pytest.raises(sluice.InvalidArgumentError,
                       match="device 0: a batch of 3 samples, but batch_size is 8: variable "
                             "batch size is not supported by the iterator with an explicit size"):
        DALIGenericIterator(_short_pipe(SIZES), ["x", "u"], size=100)


def test_numpy_iterator_short_batches():
    from sluice.plugin.numpy import DALIGenericIterator
    it = DALIGenericIterator(_short_pipe(SIZES), ["x", "u"])
    for k in range(4):
        batch = next(it)
        assert batch["x"].shape == (SIZES[k], 2) and (batch["x"] == k).all()


def test_python_function_and_per_sample_source():
    """python_function (per sample and per batch) on short batches; a per-sample source
    (batch=False) always fills the batch."""

    def src(it):
        return [np.full((3,), it * 10 + i, np.float32) for i in range(SIZES[it % len(SIZES)])]

    def per_sample(info):
        return np.array([info.idx_in_epoch], np.int64)

    @pipeline_def(batch_size=MAX, num_threads=2, device_id=None, exec_async=False,
                  exec_pipelined=False)
    def pipe():
        x = fn.external_source(source=src)
        sq = fn.python_function(x, function=lambda a: a * a, batch_processing=False)
        total = fn.python_function(x, function=lambda xs: [a + len(xs) for a in xs],
                                   batch_processing=True)
        return x, sq, total

    @pipeline_def(batch_size=MAX, device_id=None)
    def full():
        return fn.external_source(source=per_sample, batch=False)

    p, f = pipe(), full()
    for it, n in enumerate(SIZES[:5]):
        x, sq, total = p.run()
        assert len(x) == len(sq) == len(total) == n
        xs = np.stack([np.full((3,), it * 10 + i, np.float32) for i in range(n)])
        np.testing.assert_array_equal(sq.as_array(), xs * xs)
        np.testing.assert_array_equal(total.as_array(), xs + n)
        (y,) = f.run()
        assert len(y) == MAX
        np.testing.assert_array_equal(y.as_array()[:, 0], np.arange(MAX) + it * MAX)


def test_conditionals_on_short_batches():
    @pipeline_def(batch_size=MAX, device_id=None, enable_conditionals=True)
    def pipe():
        x = fn.external_source(source=lambda it: [np.array([it * 10 + i], np.int32)
                                                  for i in range(SIZES[it % len(SIZES)])])
        if x % 2 == 0:
            y = x * 100
        else:
            y = x - 1
        return y

    p = pipe()
    for it, n in enumerate(SIZES):
        (y,) = p.run()
        assert len(y) == n
        v = np.arange(n) + it * 10
        np.testing.assert_array_equal(y.as_array()[:, 0], np.where(v % 2 == 0, v * 100, v - 1))


@pytest.mark.gpu
def test_gpu_ops_on_short_batches():
    """The same DALI forms on a CUDA pipeline: lookup_table, arithmetic, resize and a random op
    on the GPU, short batches of 1..max, against numpy and the CPU pipeline."""
    gpu_or_skip()
    keys = list(range(0, 256, 5))
    values = [float(k) / 3 for k in keys]
    table = np.zeros(256, np.float32)
    table[keys] = values

    def pipe(device_id, device):
        @pipeline_def(batch_size=MAX, num_threads=2, device_id=device_id, seed=4)
        def p():
            x = fn.external_source(source=lambda it: images(it, SIZES[it % len(SIZES)], seed=7),
                                   layout="HWC")
            d = x.gpu() if device == "gpu" else x
            lut = fn.lookup_table(d, keys=keys, values=values, dtype=types.FLOAT, device=device)
            return (lut, d * 2 + 1, fn.resize(d, size=[6, 5], interp_type=types.INTERP_NN),
                    fn.random.coin_flip(probability=0.5, device=device))
        return p()

    gpu, cpu = pipe(0, "gpu"), pipe(None, "cpu")
    for it, n in enumerate(SIZES):
        got = [o.as_cpu() for o in gpu.run()]
        want = cpu.run()
        imgs = images(it, n, seed=7)
        assert [len(o) for o in got] == [n] * 4
        for i in range(n):
            np.testing.assert_array_equal(got[0].at(i), table[imgs[i]])
            np.testing.assert_array_equal(got[1].at(i), imgs[i].astype(np.int32) * 2 + 1)
            np.testing.assert_array_equal(got[2].at(i), want[2].at(i))
        np.testing.assert_array_equal(got[3].as_array(), want[3].as_array())


def test_argument_inputs_on_short_batches():
    """Per-sample arguments given as nodes (an external source's, a random op's) follow the
    batch: each sample gets its own."""

    def src(it):
        n = SIZES[it % len(SIZES)]
        return [np.arange(24, dtype=np.uint8).reshape(4, 6, 1) + it * 10 + i for i in range(n)]

    def heights(it):
        return [np.float32(2 + i % 3) for i in range(SIZES[it % len(SIZES)])]

    @pipeline_def(batch_size=MAX, num_threads=2, device_id=None, seed=3)
    def pipe():
        x = fn.external_source(source=src, layout="HWC")
        h = fn.external_source(source=heights)
        coin = fn.random.coin_flip()
        r = fn.resize(x, resize_y=h, resize_x=6, interp_type=types.INTERP_NN)
        return r, fn.flip(x, horizontal=coin), coin

    p = pipe()
    for it, n in enumerate(SIZES):
        r, flipped, coin = p.run()
        assert len(r) == len(flipped) == len(coin) == n
        for i in range(n):
            img = np.arange(24, dtype=np.uint8).reshape(4, 6, 1) + it * 10 + i
            assert r.at(i).shape == (2 + i % 3, 6, 1)
            want = img[:, ::-1] if int(np.asarray(coin.at(i))) else img
            np.testing.assert_array_equal(flipped.at(i), want)
