# SPDX-License-Identifier: Apache-2.0
"""sluice.plugin.jax.clu (DALI's nvidia.dali.plugin.jax.clu): the peekable JAX iterator CLU and
T5X loops take. peek() returns the step next() then returns, peek_async() a future of it,
element_spec the first step's shapes and types; an epoch with peeks in it still gives every
sample once; an output that changes shape is a ValueError naming it. Needs JAX (the GPU
machine's runs)."""


import numpy as np
import pytest

import sluice.fn as fn
from conftest import need_jax

pytestmark = pytest.mark.gpu

N, BATCH = 24, 4  # 6 steps an epoch
DATA = [np.full((2, 3), k, np.int32) for k in range(N)]


def make(ragged=False):
    from sluice.plugin.jax.clu import peekable_data_iterator

    def sample(info):
        k = info.idx_in_epoch
        if k >= N:
            raise StopIteration
        a = DATA[k]
        return (a[:, :2] if ragged and BATCH <= k < 2 * BATCH else a), np.int32([k])

    @peekable_data_iterator(output_map=["x", "k"], size=N)
    def it_fn():
        return fn.external_source(source=sample, num_outputs=2, batch=False)

    return it_fn(batch_size=BATCH)


def test_peek_is_the_next_step():
    need_jax()
    import jax
    it = make()
    # the source's outputs are host memory: the iterator puts them on its (first) device
    assert it.peek()["x"].devices() == {jax.local_devices()[0]}
    spec = it.element_spec
    assert spec["x"].shape == (BATCH, 2, 3) and spec["k"].shape == (BATCH, 1)
    assert str(spec["x"].dtype) == "int32"
    seen = []
    for step in range(N // BATCH):
        a = it.peek()
        b = it.peek()
        assert a is b
        c = next(it)
        assert c is a
        seen += [int(v) for v in np.asarray(c["k"]).reshape(-1)]
        np.testing.assert_array_equal(np.asarray(c["x"])[:, 0, 0], np.asarray(c["k"])[:, 0])
    assert seen == list(range(N))
    with pytest.raises(StopIteration):
        it.peek()


def test_peek_async():
    need_jax()
    it = make()
    fut = it.peek_async()
    step = fut.result(timeout=60)
    assert next(it) is step
    assert int(np.asarray(step["k"])[0, 0]) == 0
    assert int(np.asarray(next(it)["k"])[0, 0]) == BATCH


def test_a_changed_shape_is_named():
    need_jax()
    it = make(ragged=True)
    next(it)
    with pytest.raises(ValueError, match=r"output 'x' changed its shape or type"):
        next(it)
