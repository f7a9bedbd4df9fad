# SPDX-License-Identifier: Apache-2.0
"""sluice.plugin.pytorch: DALI's nvidia.dali.plugin.pytorch.DALIGenericIterator on sluice.

    from sluice.plugin.pytorch import DALIGenericIterator, LastBatchPolicy
    it = DALIGenericIterator([pipe], ["images", "labels"], reader_name="reader")
    for batch in it:                       # one dict per pipeline
        x, y = batch[0]["images"], batch[0]["labels"]     # torch tensors on the pipeline's device

The tensors view the pipeline's buffers (torch.from_dlpack, no copy) while few batches are held;
see docs/python.md."""

import typing

import torch
import torch.utils.dlpack

from .. import _c, errors
from .. import types as _types
from ..ops import TorchPythonFunction  # DALI's plugin.pytorch.TorchPythonFunction: the ops class
from ..pipeline import Pipeline
from ..tensors import Tensor, TensorList
from ._common import BaseIterator, LastBatchPolicy

__all__ = ["DALIGenericIterator", "DALIClassificationIterator", "DALIRaggedIterator",
           "LastBatchPolicy", "TorchPythonFunction", "feed_ndarray", "to_torch_type"]


def to_torch(t):
    """A torch tensor viewing a sluice Tensor (DLPack, no copy)."""
    return torch.utils.dlpack.from_dlpack(t)


def _torch_types():
    t = _types.DALIDataType
    pairs = {t.UINT8: "uint8", t.INT8: "int8", t.UINT16: "uint16", t.INT16: "int16",
             t.UINT32: "uint32", t.INT32: "int32", t.UINT64: "uint64", t.INT64: "int64",
             t.FLOAT16: "float16", t.BFLOAT16: "bfloat16", t.FLOAT: "float32",
             t.FLOAT64: "float64", t.BOOL: "bool"}
    return {k: getattr(torch, v) for k, v in pairs.items() if hasattr(torch, v)}


to_torch_type = _torch_types()  # DALI's plugin.pytorch.to_torch_type: types.DALIDataType -> torch


def feed_ndarray(dali_tensor: Tensor | TensorList, arr: torch.Tensor,
                 cuda_stream: typing.Any = None) -> torch.Tensor:
    """Copies a sluice Tensor or TensorList (a batch: its samples one after another) into the
    torch tensor arr, as DALI's plugin.pytorch.feed_ndarray: arr has the data's element type and
    size and lives where the data does (a GPU or the CPU). A GPU copy with a cuda_stream (a
    torch.cuda.Stream or a cudaStream_t) is queued on that stream; any other copy is done when
    this returns. Returns arr."""
    if dali_tensor.dtype not in to_torch_type:
        raise errors.InvalidArgumentError("feed_ndarray: torch has no %s"
                                          % dali_tensor.dtype.name)
    if to_torch_type[dali_tensor.dtype] != arr.dtype:
        raise errors.InvalidArgumentError(
            "feed_ndarray: the element type of the sluice tensor, %s, is not the torch tensor's, "
            "%s" % (to_torch_type[dali_tensor.dtype], arr.dtype))
    if isinstance(dali_tensor, TensorList):
        shapes = dali_tensor.shape()
        size = [len(shapes)] + list(shapes[0]) if dali_tensor.is_dense_tensor() else None
        nbytes = sum(t.nbytes for t in dali_tensor)
    else:
        size, nbytes = list(dali_tensor.shape), dali_tensor.nbytes
    if (list(arr.size()) != size if size is not None else
            arr.numel() * arr.element_size() != nbytes):
        raise errors.InvalidArgumentError(
            "feed_ndarray: shapes do not match: the sluice tensor has %s, the torch tensor %s"
            % (size if size is not None else "%d bytes of samples" % nbytes, list(arr.size())))
    on_gpu = dali_tensor._device.kind == _c.DEVICE_CUDA  # (a CPU pipeline's "gpu" data: host)
    if arr.is_cuda != on_gpu or not arr.is_contiguous():
        raise errors.InvalidArgumentError(
            "feed_ndarray: the torch tensor must be contiguous and on the %s, where the data is"
            % ("GPU" if on_gpu else "CPU"))
    dali_tensor.copy_to_external(arr.data_ptr(), cuda_stream=cuda_stream,
                                 non_blocking=cuda_stream is not None)
    return arr


class DALIGenericIterator(BaseIterator):
    """Batches of sluice pipelines as torch tensors: a list with one dict per pipeline, keyed by
    output_map. Arguments as DALI's (size, reader_name, auto_reset, fill_last_batch,
    last_batch_policy, last_batch_padded, prepare_first_batch); dynamic_shape is accepted
    (sluice's outputs may change shape between batches either way)."""

    def __init__(self, pipelines: typing.Sequence[Pipeline] | Pipeline,
                 output_map: typing.Sequence[str], size: int = -1,
                 reader_name: str | None = None, auto_reset: bool | str = False,
                 fill_last_batch: bool | None = None, dynamic_shape: bool = False,
                 last_batch_padded: bool = False,
                 last_batch_policy: LastBatchPolicy = LastBatchPolicy.FILL,
                 prepare_first_batch: bool = True, checkpoint: bytes | None = None,
                 global_order: bool = False) -> None:
        if fill_last_batch is not None:
            last_batch_policy = LastBatchPolicy.FILL if fill_last_batch else LastBatchPolicy.PARTIAL
        self._init_from_pipelines(pipelines, output_map, size, reader_name, auto_reset,
                                  last_batch_padded, last_batch_policy, prepare_first_batch,
                                  checkpoint, global_order=global_order)

    def _convert(self, step):
        valid = self._it.valid_counts() if self._it.policy == LastBatchPolicy.PARTIAL else None
        out = []
        for d, row in enumerate(step):
            keep = valid[d] if valid is not None else None
            item = {name: self._output(k, name, t, keep)
                    for k, (name, t) in enumerate(zip(self.output_map, row))}
            if valid is None or valid[d] > 0:
                out.append(item)
        return out

    def _output(self, k, name, t, keep):
        """Output k (name) of one pipeline's batch as torch, its first keep samples (None: all):
        one tensor (a view of the batch)."""
        if not hasattr(t, "_ptr"):
            if not t.is_dense_tensor():
                raise errors.InvalidArgumentError(
                    "output %r has samples of different shapes %s...: torch needs one shape per "
                    "batch (resize, crop or pad them in the pipeline, or take it from "
                    "DALIRaggedIterator as a list)" % (name, t.shape()[:2]))
            t = t.as_tensor()
        x = to_torch(t)
        return x[:keep] if keep is not None and keep < x.shape[0] else x


class DALIClassificationIterator(DALIGenericIterator):
    """DALIGenericIterator with output_map ["data", "label"]."""

    def __init__(self, pipelines: typing.Sequence[Pipeline] | Pipeline, size: int = -1,
                 reader_name: str | None = None, auto_reset: bool | str = False,
                 fill_last_batch: bool | None = None, dynamic_shape: bool = False,
                 last_batch_padded: bool = False,
                 last_batch_policy: LastBatchPolicy = LastBatchPolicy.FILL,
                 prepare_first_batch: bool = True, checkpoint: bytes | None = None,
                 global_order: bool = False) -> None:
        super().__init__(pipelines, ["data", "label"], size, reader_name, auto_reset,
                         fill_last_batch, dynamic_shape, last_batch_padded, last_batch_policy,
                         prepare_first_batch, checkpoint, global_order)


class DALIRaggedIterator(DALIGenericIterator):
    """DALI's DALIRaggedIterator: DALIGenericIterator where output_types tags each output
    DENSE_TAG (one tensor a batch, as DALIGenericIterator gives), SPARSE_LIST_TAG (a list of the
    samples' tensors, which may differ in shape: boxes, labels) or SPARSE_COO_TAG (a sparse COO
    tensor: entry (i, j) is row j of sample i). Without output_types every output is dense."""

    DENSE_TAG = "dense"
    SPARSE_LIST_TAG = "sparse_list"
    SPARSE_COO_TAG = "sparse_coo"

    def __init__(self, pipelines: typing.Sequence[Pipeline] | Pipeline,
                 output_map: typing.Sequence[str], size: int = -1,
                 reader_name: str | None = None,
                 output_types: typing.Sequence[str] | None = None,
                 auto_reset: bool | str = False, fill_last_batch: bool | None = None,
                 dynamic_shape: bool = False, last_batch_padded: bool = False,
                 last_batch_policy: LastBatchPolicy = LastBatchPolicy.FILL,
                 prepare_first_batch: bool = True) -> None:
        tags = (self.DENSE_TAG, self.SPARSE_LIST_TAG, self.SPARSE_COO_TAG)
        if output_types is not None:
            bad = [t for t in output_types if t not in tags]
            if bad or len(output_types) != len(output_map):
                raise errors.InvalidArgumentError(
                    "DALIRaggedIterator: output_types needs one tag per output of output_map "
                    "(%d), each DENSE_TAG, SPARSE_LIST_TAG or SPARSE_COO_TAG; got %r"
                    % (len(output_map), list(output_types)))
        self._tags = list(output_types) if output_types is not None else None
        super().__init__(pipelines, output_map, size, reader_name, auto_reset, fill_last_batch,
                         dynamic_shape, last_batch_padded, last_batch_policy, prepare_first_batch)

    def _output(self, k, name, t, keep):
        tag = self._tags[k] if self._tags is not None else self.DENSE_TAG
        if tag == self.DENSE_TAG:
            return super()._output(k, name, t, keep)
        samples = (list(to_torch(t).unbind(0)) if hasattr(t, "_ptr") else
                   [to_torch(x) for x in t])[:keep]
        return samples if tag == self.SPARSE_LIST_TAG else _coo(samples)


def _coo(samples):
    """The samples as one sparse COO tensor: entry (i, j) is row j of sample i (a 1-D sample's
    element j), as DALI's SPARSE_COO_TAG; rows of more than one element make a hybrid tensor
    whose dense part is a row."""
    index = [(i, j) for i, x in enumerate(samples) for j in range(x.shape[0] if x.dim() else 1)]
    if not index:
        raise errors.InvalidArgumentError("SPARSE_COO_TAG: the batch has no rows")
    values = torch.cat([x.reshape(-1, *x.shape[1:]) if x.dim() else x.reshape(1)
                        for x in samples])
    indices = torch.tensor(index, dtype=torch.int64, device=values.device).t()
    return torch.sparse_coo_tensor(indices, values)
