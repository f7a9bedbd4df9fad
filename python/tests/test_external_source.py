# SPDX-License-Identifier: Apache-2.0
"""fn.external_source with Python callables, iterables and generators, per batch and per sample."""

import numpy as np
import pytest

import sluice
import sluice.fn as fn
from sluice import pipeline_def


def test_callable_per_sample():
    def sample(info):
        return np.full((3, 2), info.idx_in_epoch, np.int32)

    @pipeline_def(batch_size=4, num_threads=2, device_id=None)
    def pipe():
        return fn.external_source(source=sample, batch=False) * 2

    p = pipe()
    for it in range(3):
        (out,) = p.run()
        a = out.as_array()
        assert a.shape == (4, 3, 2) and a.dtype == np.int32
        assert [int(x) for x in a[:, 0, 0]] == [2 * (it * 4 + i) for i in range(4)]


def test_samples_copied_by_the_workers_are_copies_released_once_copied():
    """Arrays are copied into the batch by the pool's workers from their memory (no Python call
    per sample), buffers that are not an array's through a callback; one batch mixes both. The
    batch is a copy: a source may write its next batch into the same buffer (as DALI's copy
    allows), and the arrays are let go as soon as the batch is written, not kept for the
    prefetch depth."""
    import gc
    import weakref

    buf = np.zeros((3, 5), np.uint8)  # one buffer the per-batch source reuses
    kept = []

    def batch(iteration):
        buf[...] = np.arange(15, dtype=np.uint8).reshape(3, 5) + iteration
        return [buf[k] for k in range(3)]

    def sample(info):
        v = np.full((2, info.idx_in_batch + 1), info.idx_in_epoch % 250, np.uint8)
        if info.idx_in_batch == 1:
            return memoryview(v.tobytes()).cast("B", v.shape)  # no array's: a callback fills it
        if info.idx_in_batch == 2:
            v.flags.writeable = False
        kept.append(weakref.ref(v))
        return v

    @pipeline_def(batch_size=3, num_threads=4, device_id=None, prefetch_queue_depth=3)
    def pipe():
        return fn.external_source(source=batch), fn.external_source(source=sample, batch=False)

    p = pipe()
    for it in range(6):
        rows, samples = p.run()
        got = rows.as_array()
        assert (got == np.arange(15, dtype=np.uint8).reshape(3, 5) + it).all()
        for i in range(3):
            s = np.array(samples[i])
            assert s.shape == (2, i + 1) and (s == (it * 3 + i) % 250).all()
    gc.collect()
    alive = sum(r() is not None for r in kept)
    assert alive <= 2 * 3, alive  # (2 arrays a batch: at most the prefetch depth's batches)
    p.close()


def test_callable_per_batch_two_outputs():
    def batch(iteration):
        x = np.arange(6, dtype=np.float32).reshape(2, 3) + iteration
        return x, [np.array([iteration], np.int64)] * 2

    @pipeline_def(batch_size=2, device_id=None)
    def pipe():
        x, y = fn.external_source(source=batch, num_outputs=2)
        return x, y

    p = pipe()
    for it in range(3):
        x, y = p.run()
        assert x.as_array().tolist() == (np.arange(6).reshape(2, 3) + it).tolist()
        assert y.as_array().tolist() == [[it], [it]]


def test_generator_ends_epoch_and_restarts():
    def gen():
        for i in range(3):
            yield [np.array([i, i], np.uint8)]

    @pipeline_def(batch_size=1, device_id=None, prefetch_queue_depth=1)
    def pipe():
        return fn.external_source(source=gen)

    p = pipe()
    got = [p.run()[0].as_array().tolist() for _ in range(3)]
    assert got == [[[0, 0]], [[1, 1]], [[2, 2]]]
    with pytest.raises(StopIteration):
        p.run()
    p.reset()
    assert p.run()[0].as_array().tolist() == [[0, 0]]


def test_iterable_of_bytes_and_varying_shapes():
    data = [[b"ab", b"cde"], [b"f", b"ghij"]]

    @pipeline_def(batch_size=2, device_id=None, prefetch_queue_depth=1)
    def pipe():
        return fn.external_source(source=data, cycle=True)

    p = pipe()
    (out,) = p.run()
    assert not out.is_dense_tensor()
    assert [bytes(s.as_array()) for s in out] == [b"ab", b"cde"]
    (out,) = p.run()
    assert [bytes(out.at(i)) for i in range(2)] == [b"f", b"ghij"]
    (out,) = p.run()  # cycle=True: from the start again
    assert bytes(out.at(0)) == b"ab"


def test_source_that_raises(no_leaked_threads):
    def bad(info):
        if info.iteration == 2:
            raise KeyError("no sample 2")
        return np.zeros(2, np.float32)

    @pipeline_def(batch_size=2, device_id=None)
    def pipe():
        return fn.external_source(source=bad, batch=False)

    p = pipe()
    p.run()
    p.run()
    with pytest.raises(sluice.SourceError) as e:
        p.run()
    assert "KeyError" in str(e.value) and "no sample 2" in str(e.value)
    assert isinstance(e.value.__cause__, KeyError)
    del p, e


def test_wrong_batch_size_from_source():
    @pipeline_def(batch_size=3, device_id=None)
    def pipe():
        return fn.external_source(source=lambda: [np.zeros(1)] * 4)

    with pytest.raises(sluice.SourceError, match="4 samples, but the batch size is at most 3"):
        pipe().run()


def _one_shot():
    return iter([np.full((4, 1), i, np.int32) for i in range(6)])


def _counter():
    n = [0]

    def next_batch():  # a stateful callable: each call the next batch
        n[0] += 1
        return np.full((4, 1), n[0] - 1, np.int32)
    return next_batch


def _generator_function():
    def gen():
        for i in range(6):
            yield np.full((4, 1), i, np.int32)
    return gen


@pytest.mark.parametrize("make", [_one_shot, _counter, _generator_function])
def test_a_pipeline_built_ahead_loses_no_batch_to_its_iterator(make):
    """DALI programs build a pipeline, then give it to an iterator. sluice's build() starts
    prefetching, so the source has given several batches before the iterator makes its own
    pipeline of the definition: those go to the iterator first, in order, and nothing is lost
    or given twice, whatever the source (a one-shot iterator, a stateful callable)."""
    import time

    from sluice.plugin.numpy import DALIGenericIterator
    source = make()

    @pipeline_def(batch_size=4, num_threads=2, device_id=None, prefetch_queue_depth=2)
    def pipe():
        return fn.external_source(source=source)

    p = pipe()
    p.build()
    time.sleep(0.2)  # its slots fill
    it = DALIGenericIterator([p], ["x"], size=20)
    assert [int(next(it)["x"][0, 0]) for _ in range(5)] == [0, 1, 2, 3, 4]


def test_an_early_end_is_given_again_to_the_iterator():
    import time

    from sluice.plugin.numpy import DALIGenericIterator
    source = iter([np.full((4, 1), i, np.int32) for i in range(2)])

    @pipeline_def(batch_size=4, num_threads=2, device_id=None)
    def pipe():
        return fn.external_source(source=source)

    p = pipe()
    p.build()
    time.sleep(0.2)  # it has met the end of the source
    it = DALIGenericIterator([p], ["x"], size=100)
    assert [int(b["x"][0, 0]) for b in it] == [0, 1]


def test_a_definition_in_an_iterator_does_not_run_beside_it():
    from conftest import LMDB

    from sluice.plugin.numpy import DALIGenericIterator

    @pipeline_def(batch_size=4, num_threads=2, device_id=None)
    def fed():
        return fn.external_source(source=lambda i: np.full((4, 1), i, np.int32))

    p = fed()
    it = DALIGenericIterator([p], ["x"], size=100)
    with pytest.raises(sluice.StateError, match="runs in an iterator now"):
        p.run()
    with pytest.raises(sluice.StateError, match="already runs in another iterator"):
        DALIGenericIterator([p], ["x"], size=100)
    assert int(next(it)["x"][0, 0]) == 0
    del it
    import gc
    gc.collect()
    assert int(p.run()[0].as_array()[0, 0]) == 0  # the iterator is gone: it may run alone

    @pipeline_def(batch_size=4, num_threads=2, device_id=None)
    def read():  # no Python source: nothing shared, so both may run
        jpegs, labels = fn.readers.caffe2(path=LMDB)
        return labels

    @pipeline_def(batch_size=4, num_threads=2, device_id=None)
    def both():  # a reader and a Python source: its reader's meta comes from the iterator's
        jpegs, labels = fn.readers.caffe2(path=LMDB, name="r")
        return labels, fn.external_source(source=lambda i: np.full((4, 1), i, np.int32))

    m = both()
    mixed = DALIGenericIterator([m], ["y", "x"], reader_name="r")
    assert m.epoch_size("r") == 256 and m.epoch_size() == {"r": 256}
    assert m.reader_meta("r")["number_of_shards"] == 1
    with pytest.raises(sluice.Error, match="nothing"):
        m.reader_meta("nothing")
    assert int(next(mixed)["x"][0, 0]) == 0 and len(mixed) == 64

    q = read()
    first = DALIGenericIterator([q], ["y"], size=100)
    second = DALIGenericIterator([q], ["y"], size=100)
    assert (next(first)["y"] == next(second)["y"]).all() and q.run()[0].as_array().shape == (4, 1)


def test_a_pipeline_built_again_loses_no_batch_to_a_second_iterator():
    """Once the first iterator is gone, its pipeline may be built again and given to a second
    iterator: what the source gave while it prefetched goes to that iterator first, as the first
    time (the hand-over is not a one-off of the source's first pipeline)."""
    import gc
    import time

    from sluice.plugin.numpy import DALIGenericIterator
    calls = [0]

    def next_batch():  # a stateful callable
        calls[0] += 1
        return np.full((4, 1), calls[0] - 1, np.int32)

    @pipeline_def(batch_size=4, num_threads=2, device_id=None, prefetch_queue_depth=2)
    def pipe():
        return fn.external_source(source=next_batch)

    p = pipe()
    for _ in range(2):
        given = calls[0]  # the first batch the built pipeline makes
        p.build()
        time.sleep(0.2)  # its slots fill
        it = DALIGenericIterator([p], ["x"], size=100)
        assert [int(next(it)["x"][0, 0]) for _ in range(3)] == [given, given + 1, given + 2]
        del it
        gc.collect()  # its pipeline stops


def test_batches_an_iterator_did_not_ask_for_again_are_not_given_to_a_later_run():
    """The iterator takes a batch, so the source starts afresh in the next pipeline; batches of
    the built pipeline that the iterator had not yet asked for again (another source held its
    pipeline up) belong to that run, and do not come back out of order in the next one."""
    import gc
    import time

    from sluice.plugin.numpy import DALIGenericIterator
    calls = [0]
    slow = [False]

    def next_batch():
        calls[0] += 1
        return np.full((4, 1), calls[0] - 1, np.int32)

    def held_up(i):
        if slow[0]:
            time.sleep(0.3)
        return np.zeros((4, 1), np.int32)

    @pipeline_def(batch_size=4, num_threads=2, device_id=None, prefetch_queue_depth=2)
    def pipe():
        return fn.external_source(source=next_batch), fn.external_source(source=held_up)

    p = pipe()
    p.build()
    time.sleep(0.2)  # its slots fill: several batches of next_batch to give again
    slow[0] = True
    it = DALIGenericIterator([p], ["x", "y"], size=100)
    assert int(next(it)["x"][0, 0]) == 0
    del it
    gc.collect()  # its pipeline stops, before it has asked for them all again
    slow[0] = False
    given = calls[0]
    assert given > 2
    assert [int(p.run()[0].as_array()[0, 0]) for _ in range(3)] == [given, given + 1, given + 2]


def test_a_batch_made_while_the_first_is_taken_is_not_kept():
    """The consumer takes the first batch (recording ends) while the stage thread has just made
    another and is about to keep it: it must not be kept afterwards (nothing would ever free it).
    A line tracer holds the stage thread at that store until the batch has been taken."""
    import gc
    import sys
    import threading
    import weakref

    from sluice.plugin.numpy import DALIGenericIterator
    at_store, taken = threading.Event(), threading.Event()
    made = {}

    def hold(frame, event, arg):
        if event == "line" and "self._recorded[it] = got" in _line(frame):
            sys.settrace(None)
            frame.f_trace = None
            at_store.set()
            taken.wait(2)  # (the store under the source's lock: the consumer waits for it)
        return hold

    def source(i):
        a = np.full((4, 1), i, np.int32)
        if i == 1:
            made["a"] = weakref.ref(a)
            sys.settrace(hold)  # the frames this thread calls next, and its callers'
            frame = sys._getframe(1)
            while frame is not None:
                frame.f_trace = hold
                frame = frame.f_back
        return a

    @pipeline_def(batch_size=4, num_threads=2, device_id=None, prefetch_queue_depth=2)
    def pipe():
        return fn.external_source(source=source)

    it = DALIGenericIterator([pipe()], ["x"], size=100)
    assert at_store.wait(10)  # batch 1 made, and about to be kept, before batch 0 is taken
    assert int(next(it)["x"][0, 0]) == 0
    taken.set()
    assert int(next(it)["x"][0, 0]) == 1
    it._it.close()
    gc.collect()
    assert made["a"]() is None


def _line(frame):
    import linecache
    return linecache.getline(frame.f_code.co_filename, frame.f_lineno)


def test_a_pipeline_with_a_python_source_is_not_given_twice_to_one_iterator():
    """Each of an iterator's pipelines runs its definition in a C pipeline of its own: one
    pipeline listed twice would have its Python source feed two at once (each one's batches
    lost to the other, or a KeyError from inside the source's callbacks)."""
    from sluice.plugin.numpy import DALIGenericIterator

    @pipeline_def(batch_size=4, num_threads=2, device_id=None)
    def fed():
        return fn.external_source(source=lambda i: np.full((4, 1), i, np.int32))

    p = fed()
    with pytest.raises(sluice.StateError, match=r"pipelines\[1\] is pipelines\[0\]"):
        DALIGenericIterator([p, p], ["x"], size=100)
    it = DALIGenericIterator([p], ["x"], size=100)  # refused before it was touched
    assert int(next(it)["x"][0, 0]) == 0
