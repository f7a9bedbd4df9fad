# SPDX-License-Identifier: Apache-2.0
"""sluice.plugin.numpy: a sluice pipeline's batches as numpy arrays.

    from sluice.plugin.numpy import DALIGenericIterator
    for batch in DALIGenericIterator([pipe], ["images", "labels"], reader_name="reader"):
        x, y = batch["images"], batch["labels"]          # numpy arrays, the whole global batch

With one CPU pipeline the arrays view its buffers (no copy); with several, each step's parts are
joined (a copy) along the first axis."""

import typing

import numpy as np

from .. import errors
from ..pipeline import Pipeline
from ._common import BaseIterator, LastBatchPolicy

__all__ = ["DALIGenericIterator", "LastBatchPolicy"]


class DALIGenericIterator(BaseIterator):
    """One dict per step, keyed by output_map, of numpy arrays of the global batch (GPU outputs
    are copied to the host). Arguments as the PyTorch plugin's."""

    def __init__(self, pipelines: typing.Sequence[Pipeline] | Pipeline,
                 output_map: typing.Sequence[str], size: int = -1,
                 reader_name: str | None = None, auto_reset: bool | str = False,
                 last_batch_padded: bool = False,
                 last_batch_policy: LastBatchPolicy = LastBatchPolicy.FILL,
                 prepare_first_batch: bool = True, checkpoint: bytes | None = None,
                 global_order: bool = False) -> None:
        self._init_from_pipelines(pipelines, output_map, size, reader_name, auto_reset,
                                  last_batch_padded, last_batch_policy, prepare_first_batch,
                                  checkpoint, global_order=global_order)

    def _convert(self, step):
        valid = self._it.valid_counts() if self._it.policy == LastBatchPolicy.PARTIAL else None
        out = {}
        for o, name in enumerate(self.output_map):
            parts = []
            for d, row in enumerate(step):
                t = row[o]
                if not hasattr(t, "_ptr"):
                    if not t.is_dense_tensor():
                        raise errors.InvalidArgumentError(
                            "output %r has samples of different shapes: no array for the batch"
                            % name)
                    t = t.as_tensor()
                a = t.as_array()
                if valid is not None:
                    a = a[:valid[d]]
                parts.append(a)
            out[name] = parts[0] if len(parts) == 1 else np.concatenate(parts)
        return out
