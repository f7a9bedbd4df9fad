# SPDX-License-Identifier: Apache-2.0
"""Batches handed to Python are never overwritten while anything still refers to them: hold 50,
let the pipeline run on, and every one still has its own bytes (those of a fresh run)."""

import gc

import numpy as np
import torch

import sluice.fn as fn
import sluice.types as types
from conftest import LMDB
from sluice import pipeline_def
from sluice.plugin.pytorch import DALIGenericIterator


@pipeline_def(batch_size=16, num_threads=2, device_id=None, seed=3)
def decoded(path):
    jpegs, labels = fn.readers.caffe2(path=path, random_shuffle=True, name="r")
    images = fn.decoders.image(jpegs, output_type=types.GRAY)
    return fn.crop_mirror_normalize(images, std=[255.0]), labels


def fresh(n):
    pipe = decoded(LMDB)
    out = []
    for _ in range(n):
        images, labels = pipe.run()
        out.append((np.array(images.as_array()), np.array(labels.as_array())))
    return out


def test_hold_50_pipeline_batches():
    want = fresh(60)
    pipe = decoded(LMDB)
    held = [pipe.run() for _ in range(50)]
    views = [(np.from_dlpack(i), torch.from_dlpack(lab)) for i, lab in held]
    for _ in range(10):
        pipe.run()  # the pipeline goes on working in its slots
    for k, ((images, labels), (a, t)) in enumerate(zip(held, views)):
        assert images.as_array().tobytes() == want[k][0].tobytes(), k
        assert a.tobytes() == want[k][0].tobytes(), k
        assert t.numpy().tobytes() == want[k][1].tobytes(), k


def test_first_batches_are_views():
    pipe = decoded(LMDB)
    a = pipe.run()
    b = pipe.run()
    for out in (a[0], b[0]):
        arr = np.from_dlpack(out)
        assert arr.__array_interface__["data"][0] == out.as_tensor().data_ptr()
    # a view that outlives its batch's Python objects keeps the memory: drop all but the array
    arr = np.from_dlpack(a[0])
    copy = arr.copy()
    del a, b
    gc.collect()
    for _ in range(20):
        pipe.run()
    assert arr.tobytes() == copy.tobytes()


def test_hold_50_iterator_batches():
    want = fresh(40)
    pipe = decoded(LMDB)
    it = DALIGenericIterator([pipe], ["images", "labels"], reader_name="r")
    held = []
    for epoch in range(3):  # 16 batches an epoch
        for batch in it:
            held.append(batch[0])
    assert len(held) == 48
    for k in range(40):
        assert held[k]["images"].numpy().tobytes() == want[k][0].tobytes(), k
        assert held[k]["labels"].numpy().tobytes() == want[k][1].tobytes(), k


def test_close_keeps_live_views_and_refuses_run():
    import pytest
    import sluice
    pipe = decoded(LMDB)
    images, _ = pipe.run()
    want = images.as_array().copy()
    pipe.close()  # a view is alive: the old C pipeline stays, idle, until it is gone
    for _ in range(3):
        # not a fresh pipeline that starts again at the first record: refused, every time
        with pytest.raises(sluice.StateError, match=r"run\(\) after close\(\)"):
            pipe.run()
    assert images.as_array().tobytes() == want.tobytes()
    # a new pipeline of the same definition starts at the first batch
    again = decoded(LMDB)
    assert again.run()[0].as_array().tobytes() == want.tobytes()


def test_closed_iterator_refuses_calls():
    import pytest
    import sluice
    it = DALIGenericIterator([decoded(LMDB)], ["images", "labels"], reader_name="r")
    batch = next(it)
    it.close()
    with pytest.raises(sluice.StateError, match="closed"):
        next(it)
    with pytest.raises(sluice.StateError):
        len(it)
    assert batch[0]["images"].shape == (16, 1, 28, 28)


def test_exports_outlive_their_iterator(no_leaked_threads):
    """A framework's array of a batch (the library's DLPack export, with a C deleter) keeps that
    batch's memory after the iterator and every Python object of the batch are gone; the C
    iterator's threads end with it, and its memory is freed at the next call once the array
    is."""
    from conftest import thread_count
    want = fresh(3)
    before = thread_count()
    it = DALIGenericIterator([decoded(LMDB)], ["images", "labels"], reader_name="r")
    first = next(it)[0]["images"]
    assert first.numpy().tobytes() == want[0][0].tobytes()
    for _ in range(2):
        next(it)
    del it
    gc.collect()
    assert thread_count() <= before  # the orphaned C iterator is stopped, its memory kept
    other = decoded(LMDB)  # its own pipeline works on meanwhile
    for _ in range(10):
        other.run()
    assert first.numpy().tobytes() == want[0][0].tobytes()
    del first
    other.run()  # a call into the library frees what nothing uses any more
    del other
    gc.collect()
    assert thread_count() <= before


def test_exports_count_as_held():
    """Arrays exported from an iterator's batches keep their slots: with every slot out that
    way the iterator hands out copies, and once the arrays go it hands out views again."""
    want = fresh(16)
    it = DALIGenericIterator([decoded(LMDB)], ["images", "labels"], reader_name="r")
    arrays = [next(it)[0]["images"] for _ in range(8)]
    gc.collect()
    # the first two are views (their slots stay out), the rest copies (given back at once)
    assert sluice_held(it) == it._it._max_zero_copy == 2
    for k, a in enumerate(arrays):
        assert a.numpy().tobytes() == want[k][0].tobytes(), k
    del arrays
    gc.collect()
    last = next(it)[0]["images"]
    assert sluice_held(it) == 1  # the exports are gone: their slots came back
    assert last.numpy().tobytes() == want[8][0].tobytes()


def sluice_held(it):
    from sluice import _c
    return _c.lib.sl_iter_held(it._it._it)


def test_unconsumed_exports_give_their_batch_back():
    """A DLPack capsule nobody takes still holds its batch until it goes; then the slot is free."""
    from sluice import _c
    it = DALIGenericIterator([decoded(LMDB)], ["images", "labels"], reader_name="r")
    h = it._it._it
    step = it._it.next()
    caps = [step[0][0].__dlpack__() for _ in range(10)]
    assert _c.lib.sl_iter_exports(h) == 10
    del caps
    gc.collect()
    assert _c.lib.sl_iter_exports(h) == 0
    del step
    gc.collect()
    next(it)
    assert sluice_held(it) == 1
