# SPDX-License-Identifier: Apache-2.0
"""sluice.auto_aug.core, as DALI's nvidia.dali.auto_aug.core: the `augmentation` decorator that
makes a function of sluice operators an augmentation, `Policy` for AutoAugment-style policies of
one's own, `signed_bin`, and `select` (each sample through the augmentation its index picks)."""

from ._augmentation import Augmentation as _Augmentation
from ._augmentation import signed_bin
from ._select import select
from .decorator import augmentation
from .policy import Policy

__all__ = ("augmentation", "Policy", "signed_bin", "select", "_Augmentation")
