# SPDX-License-Identifier: Apache-2.0
"""fn.sequence_rearrange as DALI's programs write it: a sequence's frames in a new order, the order
one list for every sample or a per-sample tensor (frames repeated or left out), compared with
numpy's indexing; and its errors, in DALI's words, naming the sample."""

import numpy as np
import pytest

import sluice
import sluice.fn as fn


def frames(batch, shape):
    return [np.arange(np.prod(shape), dtype=np.int16).reshape(shape) + 100 * i
            for i in range(batch)]


def run(data, order, layout="FHW", device="cpu"):
    pipe = sluice.Pipeline(batch_size=len(data), num_threads=2, device_id=None)
    with pipe:
        x = fn.external_source(source=lambda: data, layout=layout)
        per_sample = order and isinstance(order[0], np.ndarray)
        o = fn.external_source(source=lambda: order) if per_sample else order
        pipe.set_outputs(fn.sequence_rearrange(x.gpu() if device == "gpu" else x, new_order=o,
                                               device=device))
    pipe.build()
    (out,) = pipe.run()
    return out.as_cpu()


@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_one_order_for_every_sample(device):
    data = frames(3, (4, 3, 2))
    out = run(data, [3, 2, 1, 0], device=device)
    assert out.layout() == "FHW"
    for i in range(3):
        np.testing.assert_array_equal(out.at(i), data[i][[3, 2, 1, 0]])


def test_per_sample_orders_repeat_and_drop_frames():
    data = frames(3, (5, 1))
    orders = [np.int32([3, 0]), np.int32([1, 1, 1]), np.int32([4])]
    out = run(data, orders, layout="")
    for i in range(3):
        np.testing.assert_array_equal(out.at(i), data[i][orders[i]])
        assert out.at(i).dtype == np.int16


@pytest.mark.parametrize("order,msg", [
    ([6, 7], "new_order[0] must be between 0 and input_sequence_length = 5 for sample 0, but it "
             "is: 6"),
    ([-1], "new_order[0] must be between 0 and input_sequence_length = 5 for sample 0, but it "
           "is: -1"),
    ([], "Empty result sequences are not allowed"),
    ([np.int32([0]), np.int32([])], "Empty `new_order` for sample 1 is not allowed"),
    ([np.int32([[1], [2]]), np.int32([[1], [2]])],
     "Input with dimension 2 cannot be converted to dimension 1"),
])
def test_errors(order, msg):
    with pytest.raises(sluice.Error) as e:
        run(frames(2, (5, 1)), order, layout="")
    assert msg in str(e.value)


@pytest.mark.parametrize("layout", ["HF", "HW"])
def test_refuses_a_layout_without_frames_first(layout):
    with pytest.raises(sluice.Error, match='frames dimension `F`, got data with layout = "%s"'
                       % layout):
        run(frames(2, (5, 1)), [0, 1], layout=layout)
