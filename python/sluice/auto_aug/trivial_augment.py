# SPDX-License-Identifier: Apache-2.0
"""TrivialAugment (https://arxiv.org/abs/2103.10158), as DALI's
nvidia.dali.auto_aug.trivial_augment: each sample goes through one augmentation drawn uniformly
from the wide suite, at a magnitude bin drawn uniformly."""

from .. import fn, types
from . import augmentations as a
from .core import signed_bin
from .core._args import forbid_unused_kwargs
from .core._utils import get_translations, pretty_select


def trivial_augment_wide(sample, num_magnitude_bins=31, shape=None, fill_value=128,
                         interp_type=None, max_translate_abs=None, max_translate_rel=None,
                         seed=None, excluded=None):
    """TrivialAugmentWide on a batch of HWC uint8 images. Translations as in auto_augment, up to
    `max_translate_abs` (32 pixels) or `max_translate_rel` (1) of the image `shape`;
    `fill_value`, `interp_type`, `seed` and `excluded` as in rand_augment."""
    kwargs = {"fill_value": fill_value, "interp_type": interp_type}
    if shape is not None:
        kwargs["shape"] = shape
    suite = get_trivial_augment_wide_suite(shape is not None, max_translate_abs,
                                           max_translate_rel)
    names = [aug.name for aug in suite]
    for name in excluded or []:
        if name not in names:
            raise ValueError("trivial_augment_wide: excluded names `%s`, which the suite lacks; "
                             "it has %s" % (name, ", ".join(names)))
    augs = [aug for aug in suite if aug.name not in (excluded or [])]
    return apply_trivial_augment(augs, sample, num_magnitude_bins=num_magnitude_bins, seed=seed,
                                 **kwargs)


def apply_trivial_augment(augmentations, sample, num_magnitude_bins=31, seed=None, **kwargs):
    """Runs a list of augmentations in TrivialAugment's way: one per sample, at a random bin."""
    if isinstance(num_magnitude_bins, bool) or not isinstance(num_magnitude_bins, int) or \
            num_magnitude_bins < 1:
        raise ValueError("apply_trivial_augment: num_magnitude_bins must be a positive int, "
                         "got %r" % (num_magnitude_bins,))
    if not augmentations:
        raise ValueError("apply_trivial_augment: the list of augmentations is empty")
    kw = {} if seed is None else {"seed": seed}
    magnitude_bin = fn.random.uniform(values=list(range(num_magnitude_bins)), dtype=types.INT32,
                                      **kw)
    if any(aug.randomly_negate for aug in augmentations):
        magnitude_bin = signed_bin(magnitude_bin, seed=seed)
    forbid_unused_kwargs(augmentations, kwargs, "apply_trivial_augment")
    op_kwargs = dict(sample=sample, magnitude_bin=magnitude_bin,
                     num_magnitude_bins=num_magnitude_bins, **kwargs)
    op_idx = fn.random.uniform(values=list(range(len(augmentations))), dtype=types.INT32, **kw)
    return pretty_select(augmentations, op_idx, op_kwargs, auto_aug_name="apply_trivial_augment",
                         ref_suite_name="get_trivial_augment_wide_suite")


def get_trivial_augment_wide_suite(use_shape=False, max_translate_abs=None,
                                   max_translate_rel=None):
    """The 14 augmentations of TrivialAugment's wide space."""
    return get_translations(use_shape, 32, 1., max_translate_abs, max_translate_rel) + [
        a.shear_x.augmentation((0, 0.99), True),
        a.shear_y.augmentation((0, 0.99), True),
        a.rotate.augmentation((0, 135), True),
        a.brightness.augmentation((0.01, 0.99), True, a.shift_enhance_range),
        a.contrast.augmentation((0.01, 0.99), True, a.shift_enhance_range),
        a.color.augmentation((0.01, 0.99), True, a.shift_enhance_range),
        a.sharpness.augmentation((0.01, 0.99), True, a.sharpness_kernel),
        a.posterize.augmentation((8, 2), False, a.poster_mask_uint8),
        a.solarize.augmentation((256, 0)),  # a lower threshold solarizes more
        a.equalize,
        a.auto_contrast,
        a.identity,
    ]
