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

from .. import errors
from ..ops import TorchPythonFunction  # DALI's plugin.pytorch.TorchPythonFunction: the ops class
from ..pipeline import Pipeline
from ._common import BaseIterator, LastBatchPolicy

__all__ = ["DALIGenericIterator", "DALIClassificationIterator", "LastBatchPolicy",
           "TorchPythonFunction"]


def to_torch(t):
    """A torch tensor viewing a sluice Tensor (DLPack, no copy)."""
    return torch.utils.dlpack.from_dlpack(t)


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
            item = {}
            for name, t in zip(self.output_map, row):
                if not hasattr(t, "_ptr"):
                    if not t.is_dense_tensor():
                        raise errors.InvalidArgumentError(
                            "output %r has samples of different shapes %s...: torch needs one "
                            "shape per batch (resize, crop or pad them in the pipeline)"
                            % (name, t.shape()[:2]))
                    t = t.as_tensor()
                x = to_torch(t)
                if valid is not None and valid[d] < x.shape[0]:
                    x = x[:valid[d]]
                item[name] = x
            if valid is None or valid[d] > 0:
                out.append(item)
        return out


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
