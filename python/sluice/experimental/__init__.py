# SPDX-License-Identifier: Apache-2.0
"""DALI's nvidia.dali.experimental, the part sluice has: ``multi_crop`` (several crops of one
sample, stacked). DALI's dynamic mode and its experimental ops are not here."""

from .multi_crop import multi_crop  # noqa: F401

__all__ = ["multi_crop"]
