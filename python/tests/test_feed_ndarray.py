# SPDX-License-Identifier: Apache-2.0
"""DALI's copying API on sluice's outputs: plugin.pytorch.feed_ndarray (a Tensor or a batch into
a torch tensor), Tensor / TensorList.copy_to_external (into memory at an address) and
Tensor.squeeze (in place). Compared with the arrays the pipeline was fed; the refusals (element
type, size, device) checked by their messages. The GPU case copies a CUDA pipeline's batch into a
CUDA torch tensor, on a torch stream and without one."""

import ctypes

import numpy as np
import pytest
import torch

import sluice
import sluice.fn as fn
from conftest import gpu_or_skip
from sluice.plugin.pytorch import feed_ndarray, to_torch_type

ARRS = [np.arange(6, dtype=np.float32).reshape(1, 2, 3) * k for k in range(3)]
RAGGED = [np.arange(n, dtype=np.int16) + n for n in (2, 5, 1)]


def batch(arrs, device_id=None, gpu=False, layout="CHW"):
    pipe = sluice.Pipeline(batch_size=len(arrs), num_threads=1, device_id=device_id)
    with pipe:
        x = fn.external_source(source=lambda: arrs, batch=True, layout=layout)
        pipe.set_outputs(x.gpu() if gpu else x)
    pipe.build()
    (out,) = pipe.run()
    return pipe, out


def test_feed_a_batch_and_a_sample():
    _, out = batch(ARRS)
    t = feed_ndarray(out, torch.empty(3, 1, 2, 3))
    np.testing.assert_array_equal(t.numpy(), np.stack(ARRS))
    s = torch.full((1, 2, 3), -1.0)
    assert feed_ndarray(out[2], s) is s
    np.testing.assert_array_equal(s.numpy(), ARRS[2])
    assert to_torch_type[out.dtype] == torch.float32


def test_feed_refuses_other_types_sizes_and_devices():
    _, out = batch(ARRS)
    with pytest.raises(sluice.errors.Error, match=r"element type.*torch.float32.*torch.float64"):
        feed_ndarray(out, torch.empty(3, 1, 2, 3, dtype=torch.float64))
    with pytest.raises(sluice.errors.Error, match=r"shapes do not match.*\[3, 1, 2, 3\].*"
                                                  r"\[3, 6\]"):
        feed_ndarray(out, torch.empty(3, 6))
    with pytest.raises(sluice.errors.Error, match=r"contiguous and on the CPU"):
        feed_ndarray(out[0], torch.empty(1, 3, 2).transpose(1, 2))  # (1, 2, 3), strided


def test_copy_to_external_packs_ragged_samples():
    _, out = batch(RAGGED, layout="")
    dst = np.full(8, -7, dtype=np.int16)
    out.copy_to_external(dst.ctypes.data)
    np.testing.assert_array_equal(dst, np.concatenate(RAGGED))
    one = np.zeros(5, dtype=np.int16)
    out[1].copy_to_external(ctypes.c_void_p(one.ctypes.data))
    np.testing.assert_array_equal(one, RAGGED[1])
    t = feed_ndarray(out, torch.empty(8, dtype=torch.int16))  # a ragged batch: its bytes
    np.testing.assert_array_equal(t.numpy(), np.concatenate(RAGGED))


def test_squeeze_in_place():
    _, out = batch(ARRS)
    s = out[1]
    assert s.squeeze() is True and s.shape == (2, 3) and s.layout() == "HW"
    assert s.squeeze() is False
    np.testing.assert_array_equal(np.asarray(s), ARRS[1][0])
    np.testing.assert_array_equal(torch.from_dlpack(s).numpy(), ARRS[1][0])
    s = out[0]
    with pytest.raises(ValueError, match=r"dimension has extent 2, not 1"):
        s.squeeze(1)
    assert s.squeeze(-3) is True and s.shape == (2, 3)


@pytest.mark.gpu
def test_feed_a_gpu_batch_into_cuda_tensors():
    gpu_or_skip()
    pipe, out = batch(ARRS, device_id=0, gpu=True)
    want = torch.from_numpy(np.stack(ARRS)).cuda()
    t = feed_ndarray(out, torch.empty(3, 1, 2, 3, device="cuda"))
    assert torch.equal(t, want)
    stream = torch.cuda.Stream()
    u = torch.zeros(3, 1, 2, 3, device="cuda")
    with torch.cuda.stream(stream):
        feed_ndarray(out, u, cuda_stream=stream)
    stream.synchronize()
    assert torch.equal(u, want)
    with pytest.raises(sluice.errors.Error, match=r"on the GPU"):
        feed_ndarray(out, torch.empty(3, 1, 2, 3))
