# SPDX-License-Identifier: Apache-2.0
"""fn.python_function, torch_python_function and dl_tensor_python_function: per-sample and
batch_processing functions against the same function called in a loop, several inputs and
outputs, output_layouts, types and shapes that vary by sample, the function's errors naming the
op and the batch, and per-sample calls that run on the pipeline's threads side by side."""

import threading
import time

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.types as types
from sluice import errors, pipeline_def


def data(n=6, seed=1):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 255, (rng.integers(1, 9), 5, 3)).astype(np.uint8) for _ in range(n)]


def run(make, xs, batch=None, threads=3, iters=1):
    batch = batch or len(xs)

    @pipeline_def(batch_size=batch, num_threads=threads, device_id=None)
    def pipe():
        return make(fn.external_source(source=lambda info: xs[info.idx_in_epoch % len(xs)],
                                       batch=False, layout="HWC"))

    p = pipe()
    got = []
    for _ in range(iters):
        out = p.run()
        out = out if isinstance(out, (list, tuple)) else [out]
        got.append([[np.array(o.at(i)) for i in range(batch)] for o in out])
    return [sum((g[k] for g in got), []) for k in range(len(got[0]))], out


def brighten(x):
    return np.clip(x.astype(np.int16) * 2 - 10, 0, 255).astype(np.uint8)


def test_per_sample_matches_a_plain_loop():
    xs = data()
    (got,), _ = run(lambda x: fn.python_function(x, function=brighten), xs, batch=2, iters=3)
    for x, g in zip(xs, got):
        np.testing.assert_array_equal(g, brighten(x))


def test_inputs_are_writable_copies():
    """DALI's functions may edit their inputs in place (DALI's own tests do): each gets a copy,
    so the edit reaches no other reader of the input"""
    def f(x):
        assert x.flags.writeable
        x[0, 0] = 7
        return x

    xs = data(2)
    (edited, same), _ = run(lambda x: (fn.python_function(x, function=f), x + 0), xs)
    for x, e, s in zip(xs, edited, same):
        want = x.copy()
        want[0, 0] = 7
        np.testing.assert_array_equal(e, want)
        np.testing.assert_array_equal(s, x)


def test_batch_processing_several_inputs_and_outputs():
    xs = data()

    def f(a, b):
        assert isinstance(a, list) and len(a) == 6
        return [x.sum(axis=2).astype(np.float32) for x in a], [np.array(y.shape) for y in b]

    (s, shp), out = run(lambda x: fn.python_function(x, x, function=f, num_outputs=2,
                                                      batch_processing=True,
                                                      output_layouts=["HW", ""]), xs)
    for x, a, b in zip(xs, s, shp):
        np.testing.assert_array_equal(a, x.sum(axis=2).astype(np.float32))
        assert b.tolist() == list(x.shape) and b.dtype == np.int64
    assert out[0].layout() == "HW"


def test_torch_and_dlpack_forms():
    import torch
    xs = data(4)

    def tf(x):
        assert isinstance(x, torch.Tensor)
        return (x.to(torch.float32) / 255).flip(0)

    def df(cap):
        x = np.from_dlpack(type("C", (), {"__dlpack__": lambda self, stream=None: cap,
                                          "__dlpack_device__": lambda self: (1, 0)})())
        return np.ascontiguousarray(x[:, ::-1]).__dlpack__()

    (a, b), _ = run(lambda x: (fn.torch_python_function(x, function=tf),
                               fn.dl_tensor_python_function(x, function=df)), xs)
    for x, ga, gb in zip(xs, a, b):
        np.testing.assert_array_equal(ga, (x.astype(np.float32) / 255)[::-1])
        np.testing.assert_array_equal(gb, x[:, ::-1])


def test_no_inputs_and_scalars():
    counter = iter(range(100))

    @pipeline_def(batch_size=3, num_threads=1, device_id=None)
    def pipe():
        return fn.python_function(function=lambda: np.float64(next(counter)))

    (out,) = pipe().run()
    vals = sorted(float(out.at(i)) for i in range(3))
    assert vals == [0.0, 1.0, 2.0] and np.array(out.at(0)).shape == ()


def test_calls_run_side_by_side():
    """A function that waits without the GIL: 8 samples on 4 threads take about 2 waits."""
    lock = threading.Lock()
    running = [0, 0]

    def slow(x):
        with lock:
            running[0] += 1
            running[1] = max(running[1], running[0])
        time.sleep(0.05)
        with lock:
            running[0] -= 1
        return x

    run(lambda x: fn.python_function(x, function=slow), data(8), threads=4)
    assert running[1] >= 2  # more than one call at once (the exact count is the scheduler's)


def test_errors_name_the_op_and_batch():
    def bad(x):
        raise ValueError("no good")

    with pytest.raises(errors.Error, match="python_function: batch 0: ValueError: no good"):
        run(lambda x: fn.python_function(x, function=bad), data(2))
    with pytest.raises(errors.Error, match="output 0 of sample 0 is object"):
        run(lambda x: fn.python_function(x, function=lambda a: np.array([None])), data(2))
    with pytest.raises(errors.Error, match="num_outputs=2 must be a tuple"):
        run(lambda x: fn.python_function(x, function=lambda a: a, num_outputs=2), data(2))
    # DALI's rule: a list is not a tuple of outputs; a tuple of the wrong length is an error
    with pytest.raises(errors.Error, match="returned list: the outputs .* must be a tuple"):
        run(lambda x: fn.python_function(x, function=lambda a: [a, a], num_outputs=2), data(2))
    with pytest.raises(errors.Error, match="Unexpected number of outputs: got 3, expected 2"):
        run(lambda x: fn.python_function(x, function=lambda a: (a, a, a), num_outputs=2),
            data(2))
    with pytest.raises(errors.Error, match="the samples of an output share type and rank"):
        run(lambda x: fn.python_function(x, function=lambda a: a if a.shape[0] > 3 else a[0]),
            [np.zeros((5, 2, 3), np.uint8), np.zeros((2, 2, 3), np.uint8)])
    with pytest.raises(errors.ArgumentTypeError, match="function must be a callable"):
        run(lambda x: fn.python_function(x, function=3), data(2))


def test_a_pipeline_thread_keeps_its_thread_locals_across_calls():
    """The library's threads keep one interpreter state each for their lives, so what a function
    or source keeps in threading.local (a per-thread cache, a per-thread generator) is still
    there at the thread's next call, as on any Python thread."""
    tl = threading.local()
    seen = []

    def f(x):
        tl.n = getattr(tl, "n", 0) + 1
        seen.append((threading.get_ident(), tl.n))
        return x

    src_tl = threading.local()
    src_seen = []

    def source(info):
        src_tl.n = getattr(src_tl, "n", 0) + 1
        src_seen.append((threading.get_ident(), src_tl.n))
        return np.full((2, 2, 3), info.idx_in_epoch, np.uint8)

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        return fn.python_function(fn.external_source(source=source, batch=False), function=f)

    p = pipe()
    for _ in range(4):
        p.run()
    for calls in (seen, src_seen):
        counts = {}
        for ident, n in calls:
            counts[ident] = counts.get(ident, 0) + 1
            assert n == counts[ident]  # the thread's n-th call saw the n-1 before it
        assert max(counts.values()) >= 4  # one library thread made the calls of several batches


def test_a_failing_sample_ends_every_run_before_the_error():
    """The first failing sample in batch order is the one named, and the other workers' runs of
    samples (views of the batch's inputs for the torch and DLPack forms) have all ended by the
    time the pipeline reports it."""
    ended = []

    def f(x):
        if x[0, 0, 0] == 1:
            raise ValueError("sample one")
        if x[0, 0, 0] == 2:
            time.sleep(0.2)  # still running when sample one fails
            ended.append(True)
            raise ValueError("sample two")
        return x

    xs = [np.full((2, 2, 3), v, np.uint8) for v in (0, 1, 0, 0, 0, 0, 0, 2)]
    for form in (fn.python_function, fn.torch_python_function):
        ended.clear()
        g = (lambda x: x) if form is fn.python_function else (lambda t: t.numpy())
        with pytest.raises(errors.Error, match="ValueError: sample one"):
            run(lambda x: form(x, function=lambda a: f(g(a))), xs, threads=4)
        assert ended == [True]


class LegacyPipe(__import__("sluice").Pipeline):
    """DALI's legacy form: ops.PythonFunction (and the torch and DLPack classes) made in
    __init__, called in define_graph."""

    def __init__(self, xs):
        super().__init__(len(xs), 2, None)
        import sluice.ops as ops
        self.xs = xs
        self.src = ops.ExternalSource(source=lambda: xs, layout="HWC")
        self.pf = ops.PythonFunction(function=lambda x: (brighten(x), x.shape[0]), num_outputs=2)
        self.tf = ops.TorchPythonFunction(function=lambda x: x.flip(0))
        self.df = ops.DLTensorPythonFunction(
            function=lambda c: np.from_dlpack(_Cap(c)).sum(axis=2, dtype=np.int32))

    def define_graph(self):
        x = self.src()
        a, n = self.pf(x)
        return a, n, self.tf(x), self.df(x)


class _Cap:
    def __init__(self, c):
        self.c = c

    def __dlpack__(self, stream=None):
        return self.c

    def __dlpack_device__(self):
        return (1, 0)


def test_legacy_ops_classes():
    from sluice.plugin.pytorch import TorchPythonFunction
    import sluice.ops as ops
    assert TorchPythonFunction is ops.TorchPythonFunction
    xs = data(4)
    p = LegacyPipe(xs)
    p.build()
    a, n, t, d = p.run()
    for i, x in enumerate(xs):
        np.testing.assert_array_equal(np.array(a.at(i)), brighten(x))
        assert int(np.array(n.at(i))) == x.shape[0]
        np.testing.assert_array_equal(np.array(t.at(i)), x[::-1])
        np.testing.assert_array_equal(np.array(d.at(i)), x.sum(axis=2, dtype=np.int32))


def test_gpu_device_refusals_and_cpu_alias():
    # python_function on the GPU hands out cupy arrays: without cupy it is refused, by name
    try:
        import cupy  # noqa: F401
        have_cupy = True
    except ImportError:
        have_cupy = False
    if not have_cupy:
        with pytest.raises(errors.NotSupportedError, match="python_function.*cupy"):
            run(lambda x: fn.python_function(x.gpu(), function=brighten, device="gpu"), data(2))
    with pytest.raises(errors.InvalidArgumentError, match="device='tpu'"):
        run(lambda x: fn.torch_python_function(x, function=lambda t: t, device="tpu"), data(2))
    # on a CPU pipeline .gpu() is an alias: device="gpu" runs the CPU path, the same results
    (got,), _ = run(lambda x: fn.torch_python_function(x.gpu(), function=lambda t: t * 2,
                                                       device="gpu"), data(3))
    for x, g in zip(data(3), got):
        np.testing.assert_array_equal(g, x * 2)


@pytest.mark.gpu
def test_gpu_functions_take_and_return_device_data():
    import os
    import sluice
    try:
        import torch
        cuda = torch.cuda.is_available()
    except ImportError:
        cuda = False
    if not cuda:
        if os.environ.get("SL_REQUIRE_GPU") == "1":
            raise RuntimeError("SL_REQUIRE_GPU=1, but torch has no CUDA")
        pytest.skip("needs torch with CUDA")
    xs = data(5)
    seen = []

    def tf(t):
        seen.append((t.is_cuda, t.device.index))
        return (t.to(torch.int16) * 3 - 7).flip(1)

    def df(cap):
        t = torch.utils.dlpack.from_dlpack(cap)
        seen.append((t.is_cuda, t.device.index))
        return torch.utils.dlpack.to_dlpack(t.float().mean(dim=2))

    pipe = sluice.Pipeline(batch_size=len(xs), num_threads=2, device_id=0)
    with pipe:
        x = fn.external_source(source=lambda: xs, layout="HWC").gpu()
        a = fn.torch_python_function(x, function=tf, device="gpu")
        b = fn.dl_tensor_python_function(x, function=df, device="gpu")
        c = fn.torch_python_function(x, function=lambda t: t.cpu().numpy() + 1, device="gpu")
        pipe.set_outputs(a, b, c)
    pipe.build()
    for _ in range(2):
        a, b, c = pipe.run()
        for i, x in enumerate(xs):
            want = (x.astype(np.int16) * 3 - 7)[:, ::-1]
            np.testing.assert_array_equal(np.array(a.as_cpu().at(i)), want)
            np.testing.assert_allclose(np.array(b.as_cpu().at(i)), x.astype(np.float32).mean(2),
                                       rtol=1e-6)
            np.testing.assert_array_equal(np.array(c.as_cpu().at(i)), x + 1)
    assert seen and all(s == (True, 0) for s in seen)


def test_input_sets_and_short_output_layouts():
    with pytest.raises(TypeError, match="do not support multiple input sets"):
        run(lambda x: fn.python_function([x, x], function=lambda a: a), data(2))
    pipe = sluice.Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        x = fn.external_source(source=lambda: data(2), layout="HWC")
        a, b = fn.python_function(x, function=lambda v: (v, v / 2), num_outputs=2,
                                  output_layouts=["IJK"])
        c, d = fn.python_function(x, function=lambda v: (v, v / 2), num_outputs=2,
                                  output_layouts="FGH")
        pipe.set_outputs(a, b, c, d)
    pipe.build()
    a, b, c, d = pipe.run()
    assert (a.layout(), b.layout(), c.layout(), d.layout()) == ("IJK", "", "FGH", "FGH")
    np.testing.assert_array_equal(b.at(1), data(2)[1] / 2)
    pipe = sluice.Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        pipe.set_outputs(fn.python_function(function=lambda: np.zeros((1, 1)),
                                            output_layouts=["HW", "HWC"]))
    with pytest.raises(errors.Error, match="length of output_layouts .2. is greater than"):
        pipe.build()
        pipe.run()
