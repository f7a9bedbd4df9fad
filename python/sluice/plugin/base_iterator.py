# SPDX-License-Identifier: Apache-2.0
"""DALI's ``nvidia.dali.plugin.base_iterator``: the ``LastBatchPolicy`` the framework iterators
take (``from sluice.plugin.base_iterator import LastBatchPolicy``)."""

from ._iterator import LastBatchPolicy

__all__ = ["LastBatchPolicy"]
