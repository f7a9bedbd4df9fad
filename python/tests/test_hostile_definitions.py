# SPDX-License-Identifier: Apache-2.0
"""Careless and hostile definitions, iterators and checkpoints: every bad value is refused with a
clear exception at the line that wrote it (never truncated, ignored or crashed on), and what DALI
accepts works as in DALI."""

import subprocess
import sys

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.types as types
from conftest import LMDB, ROOT
from sluice import Pipeline, pipeline_def
from sluice.plugin.numpy import DALIGenericIterator, LastBatchPolicy


def labels_pipe(batch_size=2, **kw):
    kw.setdefault("device_id", None)
    kw.setdefault("num_threads", 1)
    p = Pipeline(batch_size=batch_size, **kw)
    with p:
        _, labels = fn.readers.caffe2(path=LMDB)
        p.set_outputs(labels)
    return p


def define(body, batch_size=2):
    """A pipeline (not yet built) whose outputs body(jpegs, labels, images) returns."""
    @pipeline_def(batch_size=batch_size, device_id=None, num_threads=1, seed=1)
    def pipe():
        jpegs, labels = fn.readers.caffe2(path=LMDB, name="r")
        images = fn.decoders.image(jpegs, output_type=types.GRAY)
        return body(jpegs, labels, images)
    return pipe()


# ---- Pipeline arguments --------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [dict(batch_size=2**32 + 4), dict(batch_size=2**31),
                                dict(num_threads=2**32 + 1), dict(seed=2**64),
                                dict(seed=2**70)])
def test_pipeline_ints_past_the_c_fields_are_refused(kw):
    # 2**32 + 4 once ran as a batch of 4, 2**32 + 1 threads as 1, seed 2**64 as seed 0
    kw.setdefault("batch_size", 2)
    with pytest.raises(sluice.InvalidArgumentError, match="Pipeline: " + next(iter(kw))):
        labels_pipe(**kw)


def test_pipeline_numpy_ints_and_negative_seeds_as_dali():
    p = labels_pipe(batch_size=np.int64(3), num_threads=np.int32(2), seed=np.uint64(2**64 - 1))
    assert len(p.run()[0]) == 3 and p.seed == 2**64 - 1
    q = labels_pipe(seed=-5)  # any negative seed: a random one, as DALI
    q.build()
    assert q.seed >= 0


# ---- op arguments --------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", [-5, 2**63, 2**64])
def test_op_seed_out_of_range_is_refused(seed):
    # these once ran silently with the default seed
    with pytest.raises(sluice.InvalidArgumentError, match="coin_flip.*seed"):
        define(lambda j, l, im: fn.random.coin_flip(seed=seed))


def test_op_seed_in_range_is_used():
    a = define(lambda j, l, im: fn.random.coin_flip(seed=2**63 - 1), batch_size=64).run()[0]
    b = define(lambda j, l, im: fn.random.coin_flip(), batch_size=64).run()[0]
    assert (a.as_array() != b.as_array()).any()


def test_op_names_are_unique_and_not_empty():
    with pytest.raises(sluice.InvalidArgumentError, match='name "r" is taken'):
        define(lambda j, l, im: fn.readers.caffe2(path=LMDB, name="r")[1])
    with pytest.raises(sluice.InvalidArgumentError, match="name"):
        define(lambda j, l, im: fn.flip(im, name=""))
    with pytest.raises(sluice.InvalidArgumentError, match="name of 64 characters"):
        define(lambda j, l, im: fn.flip(im, name="x" * 64))


@pytest.mark.parametrize("text", ["HW\x00C", "HW\udcffC"])
def test_strings_the_library_cannot_carry_are_refused(text):
    with pytest.raises(sluice.InvalidArgumentError, match="crop_mirror_normalize.*output_layout"):
        define(lambda j, l, im: fn.crop_mirror_normalize(im, output_layout=text))
    with pytest.raises(sluice.InvalidArgumentError, match="flip: name"):
        define(lambda j, l, im: fn.flip(im, name=text))


def test_enum_arguments_take_their_ints_as_dali():
    def out(**kw):
        return define(lambda j, l, im: fn.decoders.image(j, **kw)).run()[0]
    assert out(output_type=2).as_array().shape == out(output_type=types.GRAY).as_array().shape
    cmn = define(lambda j, l, im: fn.crop_mirror_normalize(im, dtype=9)).run()[0]
    assert cmn.dtype == types.FLOAT
    with pytest.raises(sluice.InvalidArgumentError, match="cast: argument 'dtype'"):
        define(lambda j, l, im: fn.cast(l, dtype=99))
    with pytest.raises(sluice.ArgumentTypeError, match="cast: argument 'dtype'"):
        define(lambda j, l, im: fn.cast(l, dtype=np.float32))  # once a bare numpy TypeError


# ---- arithmetic and graph misuse ------------------------------------------------------------------

def test_numpy_constants_keep_their_kind():
    def run(f):
        return define(lambda j, l, im: f(l)).run()[0]
    plain = run(lambda l: l + 2)
    for f in (lambda l: l + np.int64(2), lambda l: np.int64(2) + l, lambda l: l + np.array(2)):
        out = run(f)  # once float32 when the integer was numpy's
        assert out.dtype == types.INT32
        assert (out.as_array() == plain.as_array()).all()
    half = run(lambda l: l + 0.5).as_array()
    assert (run(lambda l: np.array([0.5]) + l).as_array() == half).all()
    labels = plain.as_array() - 2
    for f in (lambda l: l + np.array([1, 2]), lambda l: np.array([1, 2]) + l):
        out = run(f)  # once an object array of nodes; a constant tensor, as DALI's
        assert out.dtype == types.INT32  # numpy's int64 array: an int32 constant, as DALI's
        for i in range(len(labels)):
            assert (out.at(i) == labels[i] + np.array([1, 2])).all()


@pytest.mark.parametrize("compare", [lambda l: l == 1, lambda l: l != 1, lambda l: l < 1,
                                     lambda l: 1 >= l])
def test_comparisons_of_nodes_are_nodes(compare):
    # == and != once gave a Python bool, silently; now DALI's bool-typed comparison ops
    out = define(lambda j, l, im: compare(l)).run()[0]
    assert out.dtype == types.BOOL


def test_nodes_outside_their_definition():
    kept = {}

    def body(j, l, im):
        kept["l"] = l
        return l
    define(body)
    with pytest.raises(sluice.StateError, match="outside"):
        kept["l"].gpu()
    with pytest.raises(sluice.Error, match="another pipeline's definition"):
        kept["l"] + 1


# ---- iterators -----------------------------------------------------------------------------------

def reader_pipe(batch_size=30, num_shards=1, shard_id=0, seed=1, **kw):
    @pipeline_def(batch_size=batch_size, device_id=None, num_threads=1, seed=seed, **kw)
    def pipe():
        _, labels = fn.readers.caffe2(path=LMDB, name="r", random_shuffle=True,
                                      num_shards=num_shards, shard_id=shard_id)
        return labels, fn.random.coin_flip()
    return pipe()


def epoch_labels(it):
    return np.concatenate([b["l"].ravel() for b in it])


def test_output_map_of_non_names_is_refused():
    # an int in output_map once went to the library as a pointer: a segmentation fault
    code = ("import sys; sys.path.insert(0, %r)\n"
            "import sluice, sluice.fn as fn\n"
            "from sluice.plugin.numpy import DALIGenericIterator\n"
            "p = sluice.Pipeline(batch_size=2, device_id=None)\n"
            "with p:\n"
            "    _, l = fn.readers.caffe2(path=%r)\n"
            "    p.set_outputs(l, l + 1)\n"
            "try:\n"
            "    DALIGenericIterator([p], [1, 2])\n"
            "except TypeError as e:\n"
            "    print('refused:', e)\n" % (ROOT + "/python", LMDB))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "refused: output_map: 1 is not a name" in r.stdout


@pytest.mark.parametrize("names", [["l", ""], ["l", "c\x00"]])
def test_output_map_names_the_library_cannot_carry(names, no_leaked_threads):
    with pytest.raises(sluice.InvalidArgumentError, match="output_map"):
        DALIGenericIterator([reader_pipe()], names, reader_name="r")


def test_iterator_size_takes_numpy_ints_and_refuses_overflow(no_leaked_threads):
    it = DALIGenericIterator([reader_pipe()], ["l", "c"], size=np.int64(100))
    assert it.size == 100 and len(it) == 4
    it.close()
    with pytest.raises(sluice.InvalidArgumentError, match="size="):
        DALIGenericIterator([reader_pipe()], ["l", "c"], size=2**70)  # once read as size 0


def test_iterator_default_seed_is_random(no_leaked_threads):
    def first_epoch(seed):
        it = DALIGenericIterator([reader_pipe(seed=seed)], ["l", "c"], reader_name="r")
        x = epoch_labels(it)
        it.close()
        return x
    # without a seed every iterator once shuffled the same way (seed 0)
    assert (first_epoch(None) != first_epoch(None)).any()
    assert (first_epoch(5) == first_epoch(5)).all()


def test_iterator_refuses_pipelines_it_would_not_continue(no_leaked_threads):
    ran = reader_pipe()
    ran.run()
    with pytest.raises(sluice.StateError, match="already handed out 1 batches"):
        DALIGenericIterator([ran], ["l", "c"], reader_name="r")
    ran.close()
    p = reader_pipe()
    p.run()
    ck = p.checkpoint()
    p.close()
    with pytest.raises(sluice.InvalidArgumentError, match="checkpoint="):
        DALIGenericIterator([reader_pipe(checkpoint=ck)], ["l", "c"], reader_name="r")
    built = reader_pipe()
    built.build()  # built, not run: as DALI programs do before making the iterator
    it = DALIGenericIterator([built], ["l", "c"], reader_name="r")
    assert len(epoch_labels(it)) == 270
    it.close()
    built.close()


@pytest.mark.parametrize("bad,exc", [("abc", sluice.ArgumentTypeError),
                                     (5, sluice.ArgumentTypeError),
                                     (b"", sluice.FormatError),
                                     (b"\x01" * 100, sluice.FormatError)])
def test_checkpoints_that_are_not_bytes_or_not_checkpoints(bad, exc, no_leaked_threads):
    with pytest.raises(exc, match="checkpoint"):
        DALIGenericIterator([reader_pipe()], ["l", "c"], reader_name="r", checkpoint=bad)
    with pytest.raises(exc, match="checkpoint"):
        reader_pipe(checkpoint=bad).build()


def test_checkpoints_as_any_buffer(no_leaked_threads):
    it = DALIGenericIterator([reader_pipe()], ["l", "c"], reader_name="r")
    it.next()
    ck = it.checkpoints()
    want = it.next()["l"]
    it.close()
    for form in (bytearray(ck), memoryview(ck), np.frombuffer(ck, np.uint8)):
        it = DALIGenericIterator([reader_pipe()], ["l", "c"], reader_name="r", checkpoint=form)
        assert (it.next()["l"] == want).all()
        it.close()


def steps(it, n, auto_reset):
    """n steps, an epoch's end counted as one ("EOF"), resetting by hand without auto_reset."""
    out = []
    while len(out) < n:
        try:
            b = it.next()
            out.append((b["l"].tobytes(), b["c"].tobytes()))
        except StopIteration:
            out.append("EOF")
            if not auto_reset:
                it.reset()
    return out


@pytest.mark.parametrize("policy", list(LastBatchPolicy))
@pytest.mark.parametrize("auto_reset", [True, False])
def test_resume_at_the_end_of_an_epoch(policy, auto_reset, no_leaked_threads):
    # 256 records, 3 shards (85, 85, 86), batch 40: epochs of 2 or 3 batches; a checkpoint taken
    # right after an epoch's last batch once failed to load ("no data in the pipeline")
    def make(ck=None):
        return DALIGenericIterator([reader_pipe(40, 3, 1)], ["l", "c"], reader_name="r",
                                   last_batch_policy=policy, auto_reset=auto_reset, checkpoint=ck)
    it = make()
    ref = steps(it, 12, auto_reset)
    it.close()
    ends = [k for k, s in enumerate(ref) if s == "EOF"]
    assert len(ends) >= 2
    for k in {ends[0], ends[0] + 1, ends[1] - 1, 1}:
        it = make()
        head = steps(it, k, auto_reset)
        ck = it.checkpoints()
        it.close()
        it = make(ck)
        tail = steps(it, 12 - k, auto_reset)
        it.close()
        assert head + tail == ref, "checkpoint after %d steps" % k
