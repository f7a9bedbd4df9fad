# SPDX-License-Identifier: Apache-2.0
"""DALI's ``nvidia.dali.backend_impl``, the module behind ``nvidia.dali.backend``: programs name
its classes in ``isinstance`` checks (``isinstance(out, dali.backend_impl.TensorListGPU)``).
The same classes as sluice.backend."""

from .backend import TensorCPU, TensorGPU, TensorListCPU, TensorListGPU

__all__ = ["TensorCPU", "TensorGPU", "TensorListCPU", "TensorListGPU"]
