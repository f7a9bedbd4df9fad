# SPDX-License-Identifier: Apache-2.0
"""DALI's ``nvidia.dali.backend`` names that programs import: the classes of what pipelines hand
out (``TensorListCPU``, ``TensorListGPU``, ``TensorCPU``, ``TensorGPU``; sluice.tensors has them),
for ``isinstance`` checks. They are made by pipelines and iterators, not by the caller."""

from .tensors import Tensor, TensorCPU, TensorGPU, TensorList, TensorListCPU, TensorListGPU

__all__ = ["TensorCPU", "TensorGPU", "TensorListCPU", "TensorListGPU"]

_keep = (Tensor, TensorList)
