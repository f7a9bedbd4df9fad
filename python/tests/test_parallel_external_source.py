# SPDX-License-Identifier: Apache-2.0
"""fn.external_source(parallel=True), in the forms of DALI's parallel external source tutorials:
the source runs in the pipeline's py_num_workers worker processes, started by fork or spawn, and
every batch equals the serial source's (the same source with parallel=False), in order, over
epochs ended by StopIteration and reset(): per-sample callables taking a SampleInfo, batch
callables taking a BatchInfo or the iteration number, iterables and generator functions (batch
mode, one worker iterating), several outputs, prefetch_queue_depth. An exception in a worker
comes out of run() as a SourceError whose cause is the source's exception (with the worker's
traceback as a note); a worker killed with SIGKILL gives an error naming the worker and the
signal, within seconds, not a hang. With no_copy=True (the default of parallel sources) the
batch points at the source's arrays, kept alive while the pipeline reads them and let go after.
DALI's rules for the arguments are kept (iterables need batch=True, a callable takes one
argument, prefetch_queue_depth and no_copy=False only with parallel=True), and a source that
spawn cannot pickle is named."""

import os
import signal
import threading
import time
import multiprocessing

import numpy as np
import pytest

from sluice import Pipeline, fn, pipeline_def, types
from sluice.errors import Error, SourceError

N = 22  # samples in an epoch: 5 full batches of 4, then StopIteration in the sixth


def per_sample(info):
    """A stateless per-sample source: its sample is a function of the SampleInfo alone."""
    if info.idx_in_epoch >= N:
        raise StopIteration
    rng = np.random.default_rng(info.idx_in_epoch)
    img = rng.integers(0, 255, (2 + info.idx_in_epoch % 3, 3), dtype=np.uint8)
    meta = np.array([info.idx_in_epoch, info.idx_in_batch, info.iteration, info.epoch_idx],
                    np.int64)
    return img, meta


def per_batch_info(info):
    if info.iteration >= 5:
        raise StopIteration
    return [np.full((3,), 10 * info.iteration + i + 100 * info.epoch_idx, np.float32)
            for i in range(4)]


def per_batch_index(i):
    if i >= 5:
        raise StopIteration
    return np.arange(8, dtype=np.int32).reshape(4, 2) + i


def gen_batches():
    for i in range(3):
        yield [np.full((2,), i * 4 + k, np.int16) for k in range(4)]


class Iterable:
    def __iter__(self):
        return iter([np.full((4, 1), i, np.uint8) for i in range(3)])


def failing(info):
    if info.idx_in_epoch == 6:
        raise ValueError("no sample %d here" % info.idx_in_epoch)
    return np.zeros((1,), np.uint8)


def sleepy(info):
    time.sleep(0.2)
    return np.zeros((1,), np.uint8)


def epochs(pipe, n):
    """n epochs of the pipeline: per epoch, per batch, its outputs as numpy arrays."""
    out = []
    for _ in range(n):
        ep = []
        while True:
            try:
                got = pipe.run()
            except StopIteration:
                pipe.reset()
                break
            ep.append([[np.array(o.at(i)) for i in range(len(o))] for o in got])
        out.append(ep)
    return out


def same(a, b):
    assert len(a) == len(b)
    for ea, eb in zip(a, b):
        assert len(ea) == len(eb) and ea
        for ba, bb in zip(ea, eb):
            for oa, ob in zip(ba, bb):
                for x, y in zip(oa, ob):
                    assert x.dtype == y.dtype and x.shape == y.shape and (x == y).all()


def run_both(define, n_epochs=2, **pipe_kw):
    """The serial and the parallel pipeline of define(parallel), n_epochs each."""
    res = []
    for par in (False, True):
        pipe = pipeline_def(define, batch_size=4, num_threads=2, device_id=None, **pipe_kw)(par)
        pipe.build()
        res.append(epochs(pipe, n_epochs))
        pipe.close()
    return res


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_sample_mode_equals_serial(method):
    def define(par):
        img, meta = fn.external_source(per_sample, num_outputs=2, batch=False, parallel=par)
        return img, meta
    serial, parallel = run_both(define, py_num_workers=2, py_start_method=method)
    same(serial, parallel)
    assert len(parallel[0]) == N // 4  # the last, partial batch ends the epoch
    metas = [m for b in parallel[1] for m in b[1]]
    assert [list(m) for m in metas[:5]] == [[0, 0, 0, 1], [1, 1, 0, 1], [2, 2, 0, 1],
                                           [3, 3, 0, 1], [4, 0, 1, 1]]


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_batch_mode_callables_equal_serial(method):
    def define(par):
        kw = {"prefetch_queue_depth": 3} if par else {}
        a = fn.external_source(per_batch_info, batch=True, batch_info=True, parallel=par, **kw)
        b = fn.external_source(per_batch_index, batch=True, parallel=par)
        return a, b
    serial, parallel = run_both(define, py_num_workers=3, py_start_method=method)
    same(serial, parallel)
    assert parallel[1][4][0][3].tolist() == [143.0] * 3  # epoch 1, iteration 4, sample 3


def test_iterables_and_generator_functions():
    def define(par):
        a = fn.external_source(gen_batches, batch=True, parallel=par)
        b = fn.external_source(Iterable(), batch=True, parallel=par, cycle="quiet")
        return a, b
    serial, parallel = run_both(define, py_num_workers=2)
    same(serial, parallel)
    assert [b[0][0].tolist() for b in parallel[0]] == [[0, 0], [4, 4], [8, 8]]
    assert [b[1][0][0] for b in parallel[1]] == [0, 1, 2]


def test_parallel_is_per_sample_by_default_and_the_pipeline_starts_workers():
    pipe = Pipeline(batch_size=4, num_threads=1, device_id=None, py_num_workers=2)
    with pipe:
        img, meta = fn.external_source(per_sample, num_outputs=2, parallel=True)
        pipe.set_outputs(meta)
    before = len(multiprocessing.active_children())
    pipe.start_py_workers()
    assert len(multiprocessing.active_children()) == before + 2
    (meta,) = pipe.run()
    assert np.array(meta.at(3)).tolist() == [3, 3, 0, 0]
    pipe.close()
    assert len(multiprocessing.active_children()) == before


def test_worker_exception_names_the_source():
    @pipeline_def(batch_size=4, num_threads=1, device_id=None, py_num_workers=2)
    def p():
        return fn.external_source(failing, batch=False, parallel=True, name="flaky")
    pipe = p()
    pipe.build()
    pipe.run()
    with pytest.raises(SourceError) as e:
        pipe.run()
    assert "'flaky'" in str(e.value) and "no sample 6 here" in str(e.value)
    assert isinstance(e.value.__cause__, ValueError)
    assert any("worker process" in n and "failing" in n
               for n in getattr(e.value.__cause__, "__notes__", []))
    pipe.close()


def test_killed_worker_is_an_error_not_a_hang():
    @pipeline_def(batch_size=8, num_threads=1, device_id=None, py_num_workers=2)
    def p():
        return fn.external_source(sleepy, batch=False, parallel=True, name="slow")
    pipe = p()
    pipe.build()
    pipe.run()
    workers = multiprocessing.active_children()
    victim = [w for w in workers if w.name == "sluice-source-worker"][0]
    os.kill(victim.pid, signal.SIGKILL)
    t0 = time.monotonic()
    with pytest.raises(Error) as e:
        for _ in range(5):
            pipe.run()
    assert time.monotonic() - t0 < 20
    msg = str(e.value)
    assert "'slow'" in msg and "pid %d" % victim.pid in msg and "killed by signal 9" in msg, msg
    with pytest.raises(Error, match="killed by signal 9"):  # and it stays broken, clearly
        pipe.run()
    pipe.close()


def test_dali_argument_rules():
    def build(**kw):
        @pipeline_def(batch_size=2, num_threads=1, device_id=None, **kw.pop("pipe", {}))
        def p():
            return fn.external_source(**kw)
        pipe = p()
        pipe.build()
        return pipe
    with pytest.raises(TypeError, match="needs batch=True"):
        build(source=gen_batches, parallel=True)
    with pytest.raises(TypeError, match="needs batch=True"):
        build(source=Iterable(), parallel=True, batch=False)
    with pytest.raises(TypeError, match="takes 0"):
        build(source=lambda: np.zeros(1), parallel=True)
    with pytest.raises(ValueError, match="prefetch_queue_depth is for parallel sources"):
        build(source=per_batch_index, prefetch_queue_depth=2)
    with pytest.raises(ValueError, match="prefetch_queue_depth=0"):
        build(source=per_batch_index, batch=True, parallel=True, prefetch_queue_depth=0)
    with pytest.raises(ValueError, match="no_copy=False with parallel=True"):
        build(source=per_sample, parallel=True, no_copy=False)
    with pytest.raises(ValueError, match="parallel=True needs a source"):
        build(parallel=True, batch=True)
    with pytest.raises(ValueError, match="py_num_workers=0"):
        build(source=per_sample, parallel=True, pipe={"py_num_workers": 0})
    with pytest.raises(ValueError, match="py_start_method='forkserver'"):
        Pipeline(batch_size=2, py_start_method="forkserver")
    with pytest.raises(Exception, match="'lam'.*cannot be pickled"):
        build(source=lambda i: np.zeros(1), batch=True, parallel=True, name="lam",
              pipe={"py_start_method": "spawn"})
    with pytest.raises(NotImplementedError, match="cuda_stream=0"):
        build(source=per_batch_index, cuda_stream=0)
    with pytest.raises(NotImplementedError, match="use_copy_kernel=True"):
        build(source=per_batch_index, use_copy_kernel=True)


def test_serial_sources_count_epochs():
    def cb(info):
        if info.iteration >= 2:
            raise StopIteration
        return np.array([info.epoch_idx, info.iteration], np.int64)

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def p():
        return fn.external_source(cb, batch=False)
    out = epochs(p(), 3)
    assert [[b[0][0].tolist() for b in ep] for ep in out] == [[[0, 0], [0, 1]], [[1, 0], [1, 1]],
                                                             [[2, 0], [2, 1]]]


def test_blocking_feed_waits_for_another_thread():
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        pipe.set_outputs(fn.external_source(name="x", blocking=True))
    pipe.build()

    def feed():
        time.sleep(0.3)
        pipe.feed_input("x", np.arange(4, dtype=np.int32).reshape(2, 2))
    t = threading.Thread(target=feed)
    t.start()
    (x,) = pipe.run()  # waits for the feed instead of refusing the run
    t.join()
    assert np.array(x.as_array()).tolist() == [[0, 1], [2, 3]]
    pipe2 = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe2:
        pipe2.set_outputs(fn.external_source(name="y"))
    with pytest.raises(Error, match="needs data from feed_input"):
        pipe2.run()


def test_in_a_framework_iterator():
    torch = pytest.importorskip("torch")
    from sluice.plugin.base_iterator import LastBatchPolicy
    from sluice.plugin.pytorch import DALIGenericIterator

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, py_num_workers=2)
    def p():
        img, meta = fn.external_source(per_sample, num_outputs=2, parallel=True)
        return meta
    it = DALIGenericIterator([p()], ["meta"], last_batch_policy=LastBatchPolicy.PARTIAL)
    for epoch in range(2):
        got = torch.cat([b[0]["meta"] for b in it])
        assert got[:, 0].tolist() == list(range(20)) and set(got[:, 3].tolist()) == {epoch}
        it.reset()


def test_no_copy_points_at_the_source_arrays_and_keeps_them():
    import gc
    import weakref
    made = {}

    def cb(info):
        a = np.full((1 + info.idx_in_batch, 2), info.idx_in_epoch, np.int32)
        made[info.idx_in_epoch] = (weakref.ref(a), a.__array_interface__["data"][0])
        return a

    for no_copy in (False, True):
        made.clear()

        @pipeline_def(batch_size=3, num_threads=1, device_id=None, prefetch_queue_depth=1)
        def p():
            return fn.external_source(cb, batch=False, no_copy=no_copy)
        pipe = p()
        pipe.build()
        (out,) = pipe.run()
        x = np.asarray(out.at(1))
        assert x.tolist() == [[1, 1], [1, 1]]
        assert (x.__array_interface__["data"][0] == made[1][1]) == no_copy
        for _ in range(6):
            pipe.run()
        gc.collect()
        alive = sorted(k for k, (r, _) in made.items() if r() is not None)
        # no_copy: batch 0's arrays live while its output is held; later batches' go as their
        # slots are reused, so at most a ring's worth stay
        if no_copy:
            assert {0, 1, 2} <= set(alive) and len(alive) <= 3 * 6
        else:  # copied: none of the 7 batches taken (samples 0..20); one made ahead may be
            assert all(k >= 21 for k in alive), alive
        del out, x
        for _ in range(6):
            pipe.run()
        gc.collect()
        assert made[1][0]() is None
        pipe.close()
        gc.collect()
        assert all(r() is None for r, _ in made.values())


def test_no_copy_batches_held_across_a_reset_keep_their_arrays():
    import gc
    import weakref
    refs = {}

    def cb(info):
        if info.iteration >= 3:
            raise StopIteration
        a = np.full((1 + info.idx_in_batch,), 10 * info.epoch_idx + info.idx_in_epoch, np.int64)
        refs[(info.epoch_idx, info.idx_in_epoch)] = weakref.ref(a)
        return a

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def p():
        return fn.external_source(cb, batch=False, no_copy=True)
    pipe = p()
    (held,) = pipe.run()  # epoch 0, batch 0: views of the source's arrays
    epochs(pipe, 2)  # the rest of epoch 0 (the old C pipeline stays while held lives), epoch 1
    gc.collect()
    assert refs[(0, 1)]() is not None
    assert [np.asarray(held.at(i)).tolist() for i in range(2)] == [[0], [1, 1]]
    del held
    pipe.close()
    # what was prefetched for epoch 2 goes with close(), by reference count: no collection
    # of cycles is needed (another thread's collection may be running, and gc.collect() then
    # does nothing)
    assert [k for k, r in refs.items() if r() is not None and k[0] == 2] == []
    del pipe  # (the first C pipeline, whose batch was held, goes with the Pipeline object)
    for _ in range(200):  # (as above: until a collection of this thread's has run)
        gc.collect()
        if all(r() is None for r in refs.values()):
            break
        time.sleep(0.01)
    assert [k for k, r in refs.items() if r() is not None] == []


@pytest.mark.parametrize("no_copy", [False, True])
def test_close_drops_what_the_source_kept_of_batches_never_taken(no_copy):
    """A built pipeline prefetches; what its source made for batches nobody took goes with
    close(), by reference count, not at a later garbage collection."""
    import weakref
    refs = []

    def cb(info):
        a = np.full((3,), info.idx_in_epoch, np.int64)
        refs.append(weakref.ref(a))
        return a

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def p():
        return fn.external_source(cb, batch=False, no_copy=no_copy)
    pipe = p()
    pipe.build()
    deadline = time.monotonic() + 30
    while len(refs) < 4 and time.monotonic() < deadline:  # (it prefetches: two batches at least)
        time.sleep(0.01)
    assert len(refs) >= 4
    pipe.close()
    assert [r for r in refs if r() is not None] == []

