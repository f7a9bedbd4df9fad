# SPDX-License-Identifier: Apache-2.0
"""sluice.auto_aug, as DALI's nvidia.dali.auto_aug: automatic augmentation schemes built from
sluice operators and conditionals (each sample takes its own augmentations; the batch is split by
the choice and merged back in order): `auto_augment` (AutoAugment's policies), `rand_augment`
(RandAugment), `trivial_augment` (TrivialAugmentWide), the augmentations they draw from
(`augmentations`) and `core` to write one's own (`augmentation`, `Policy`). The pipeline is
defined with `enable_conditionals=True`; images are HWC uint8. docs/python.md has the details."""

from . import augmentations, core
from . import auto_augment, rand_augment, trivial_augment

__all__ = ("augmentations", "auto_augment", "core", "rand_augment", "trivial_augment")
