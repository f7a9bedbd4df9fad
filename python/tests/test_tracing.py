# SPDX-License-Identifier: Apache-2.0
"""Pipeline definitions are ordinary Python: helpers, loops, closures, conditionals on Python
values, arithmetic on op outputs, `with pipe:` as DALI."""

import numpy as np

import pytest

import sluice
import sluice.fn as fn
import sluice.types as types
from conftest import LMDB
from sluice import Pipeline, pipeline_def


def normalise(images, scale):
    return fn.crop_mirror_normalize(images, dtype=types.FLOAT, std=[scale], output_layout="HWC")


def test_helpers_loops_and_conditions():
    flips = 2

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=1)
    def pipe(path, gray=True):
        jpegs, labels = fn.readers.caffe2(path=path, name="r")
        images = fn.decoders.image(jpegs, output_type=types.GRAY if gray else types.RGB)
        for _ in range(flips):  # flipping twice is no flip
            images = fn.flip(images, horizontal=1)
        outs = [normalise(images, s) for s in (1.0, 255.0)]
        return outs[0], outs[1] * 255.0, labels + 1

    a, b, labels = pipe(LMDB).run()
    ref_labels = pipe(LMDB, gray=True)
    assert np.allclose(a.as_array(), b.as_array(), atol=1e-3)
    assert a.as_array().shape == (4, 28, 28, 1)
    plain = Pipeline(batch_size=4, device_id=None, seed=1)
    with plain:
        _, lab = fn.readers.caffe2(path=LMDB, name="r")
        plain.set_outputs(lab)
    (lab,) = plain.run()
    assert (labels.as_array() == lab.as_array() + 1).all()
    assert ref_labels.batch_size == 4


def test_call_overrides_decorator():
    @pipeline_def(batch_size=4, device_id=None)
    def pipe():
        _, labels = fn.readers.caffe2(path=LMDB)
        return labels

    p = pipe(batch_size=8, num_threads=3)
    assert p.batch_size == 8 and p.num_threads == 3
    assert len(p.run()[0]) == 8


def test_per_sample_argument():
    @pipeline_def(batch_size=8, device_id=None, seed=5)
    def pipe():
        jpegs, _ = fn.readers.caffe2(path=LMDB)
        images = fn.decoders.image(jpegs, output_type=types.GRAY)
        coin = fn.random.coin_flip(probability=0.5)
        return images, fn.flip(images, horizontal=coin), coin

    images, flipped, coin = pipe().run()
    for i in range(8):
        x, y = images.at(i), flipped.at(i)
        want = x[:, ::-1] if coin.at(i).item() else x
        assert (y == want).all()


def test_checkpoint_restores_position():
    @pipeline_def(batch_size=8, device_id=None, seed=2)
    def pipe():
        _, labels = fn.readers.caffe2(path=LMDB, random_shuffle=True)
        return labels

    p = pipe()
    for _ in range(5):
        p.run()
    state = p.checkpoint()
    want = [p.run()[0].as_array().tolist() for _ in range(4)]
    q = pipe(checkpoint=state)
    assert [q.run()[0].as_array().tolist() for _ in range(4)] == want
    assert isinstance(sluice.__version__, str)


def test_function_with_variadic_keywords_is_refused():
    # DALI's rule: with **kwargs, which call arguments go to the Pipeline would be ambiguous
    @pipeline_def(batch_size=2, device_id=None)
    def pipe(a, *args, **kwargs):
        return fn.random.uniform()

    with pytest.raises(TypeError, match="Using variadic keyword argument `\\*\\*kwargs` in a "
                                        "graph-defining function is not allowed"):
        pipe(a=1, b=2)

    @pipeline_def(batch_size=2, device_id=None)
    def star(*args):
        return fn.random.uniform(range=(0, args[0]))

    (out,) = star(3.0).run()
    assert all(0 <= float(out.at(i)) <= 3 for i in range(2))


def test_last_batch_policies():
    """256 records, batch 100: FILL pads the third batch from the next epoch, DROP drops it,
    PARTIAL trims it to 56 (as DALI's iterators)."""
    from sluice.plugin.numpy import DALIGenericIterator, LastBatchPolicy

    @pipeline_def(batch_size=100, device_id=None)
    def pipe():
        _, labels = fn.readers.caffe2(path=LMDB, name="r")
        return labels

    sizes = {}
    for policy in LastBatchPolicy:
        it = DALIGenericIterator([pipe()], ["y"], reader_name="r", last_batch_policy=policy)
        sizes[policy.name] = (len(it), [len(b["y"]) for b in it])
    assert sizes == {"FILL": (3, [100, 100, 100]), "DROP": (2, [100, 100]),
                     "PARTIAL": (3, [100, 100, 56])}


def test_iterator_checkpoint_resumes_exactly():
    from sluice.plugin.pytorch import DALIGenericIterator

    @pipeline_def(batch_size=32, num_threads=2, device_id=None, seed=11)
    def pipe():
        jpegs, labels = fn.readers.caffe2(path=LMDB, random_shuffle=True, name="r")
        return labels

    it = DALIGenericIterator([pipe()], ["y"], reader_name="r")
    for _ in range(3):
        next(it)
    state = it.checkpoints()
    rest = [b[0]["y"].numpy().tolist() for b in it]
    assert len(rest) == 5
    again = DALIGenericIterator([pipe()], ["y"], reader_name="r", checkpoint=state)
    assert [b[0]["y"].numpy().tolist() for b in again] == rest
