# SPDX-License-Identifier: Apache-2.0
"""RandAugment (https://arxiv.org/abs/1909.13719), as DALI's nvidia.dali.auto_aug.rand_augment:
each sample goes through `n` augmentations drawn uniformly (with repetition) from the suite, all
at magnitude bin `m`."""

import warnings

from .. import fn, types
from . import augmentations as a
from .core import signed_bin
from .core._args import forbid_unused_kwargs
from .core._utils import get_translations, pretty_select


def rand_augment(sample, n, m, num_magnitude_bins=31, shape=None, fill_value=128,
                 interp_type=None, max_translate_abs=None, max_translate_rel=None, seed=None,
                 monotonic_mag=True, excluded=None):
    """RandAugment on a batch of HWC uint8 images: `n` augmentations per sample at bin `m` of
    `num_magnitude_bins` (31). `shape`, `max_translate_abs` (100 pixels) and `max_translate_rel`
    (100/224) set the translations as in auto_augment; `fill_value` and `interp_type` go to the
    warps; `seed` seeds the choices and signs. `monotonic_mag=False` uses AutoAugment's ranges
    for the colour operations (their strength then does not grow with the bin); `excluded` names
    augmentations of the suite to leave out."""
    kwargs = {"fill_value": fill_value, "interp_type": interp_type}
    if shape is not None:
        kwargs["shape"] = shape
    suite = (get_rand_augment_suite if monotonic_mag else get_rand_augment_non_monotonic_suite)(
        shape is not None, max_translate_abs, max_translate_rel)
    names = [aug.name for aug in suite]
    for name in excluded or []:
        if name not in names:
            raise ValueError("rand_augment: excluded names `%s`, which the suite lacks; it has %s"
                             % (name, ", ".join(names)))
    augs = [aug for aug in suite if aug.name not in (excluded or [])]
    return apply_rand_augment(augs, sample, n, m, num_magnitude_bins=num_magnitude_bins,
                              seed=seed, **kwargs)


def apply_rand_augment(augmentations, sample, n, m, num_magnitude_bins=31, seed=None, **kwargs):
    """Runs a list of augmentations in RandAugment's way: n drawn per sample, each at bin m."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError("apply_rand_augment: n must be an int >= 0, got %r" % (n,))
    if isinstance(num_magnitude_bins, bool) or not isinstance(num_magnitude_bins, int) or \
            num_magnitude_bins < 1:
        raise ValueError("apply_rand_augment: num_magnitude_bins must be a positive int, got %r"
                         % (num_magnitude_bins,))
    if isinstance(m, bool) or not isinstance(m, int) or not 0 <= m < num_magnitude_bins:
        raise ValueError("apply_rand_augment: m must be an int in [0, %d], got %r"
                         % (num_magnitude_bins - 1, m))
    if n == 0:
        warnings.warn("apply_rand_augment: n=0, so no augmentation is applied")
        return sample
    if not augmentations:
        raise ValueError("apply_rand_augment: the list of augmentations is empty")
    shape = [] if n == 1 else [n]
    kw = {} if seed is None else {"seed": seed}
    op_idx = fn.random.uniform(values=list(range(len(augmentations))), shape=shape,
                               dtype=types.INT32, **kw)
    signed = any(aug.randomly_negate for aug in augmentations)
    mag_bin = signed_bin(m, seed=seed, shape=None if n == 1 else (n,)) if signed else m
    forbid_unused_kwargs(augmentations, kwargs, "apply_rand_augment")
    for k in range(n):
        level_bin = mag_bin if not signed or n == 1 else mag_bin[k]
        op_kwargs = dict(sample=sample, magnitude_bin=level_bin,
                         num_magnitude_bins=num_magnitude_bins, **kwargs)
        sample = pretty_select(augmentations, op_idx if n == 1 else op_idx[k], op_kwargs,
                               auto_aug_name="apply_rand_augment",
                               ref_suite_name="get_rand_augment_suite")
    return sample


def _translations(use_shape, max_translate_abs, max_translate_rel):
    return get_translations(use_shape, 100, 100 / 224, max_translate_abs, max_translate_rel)


def get_rand_augment_suite(use_shape=False, max_translate_abs=None, max_translate_rel=None):
    """RandAugment's 14 augmentations, each stronger at higher bins."""
    return _translations(use_shape, max_translate_abs, max_translate_rel) + [
        a.shear_x.augmentation((0, 0.3), True),
        a.shear_y.augmentation((0, 0.3), True),
        a.rotate.augmentation((0, 30), True),
        a.brightness.augmentation((0, 0.9), True, a.shift_enhance_range),
        a.contrast.augmentation((0, 0.9), True, a.shift_enhance_range),
        a.color.augmentation((0, 0.9), True, a.shift_enhance_range),
        a.sharpness.augmentation((0, 0.9), True, a.sharpness_kernel),
        a.posterize.augmentation((8, 4), False, a.poster_mask_uint8),
        a.solarize.augmentation((256, 0)),  # a lower threshold solarizes more
        a.equalize,
        a.auto_contrast,
        a.identity,
    ]


def get_rand_augment_non_monotonic_suite(use_shape=False, max_translate_abs=None,
                                         max_translate_rel=None):
    """The suite with AutoAugment's ranges for brightness, contrast, color, sharpness,
    posterize and solarize."""
    return _translations(use_shape, max_translate_abs, max_translate_rel) + [
        a.shear_x.augmentation((0, 0.3), True),
        a.shear_y.augmentation((0, 0.3), True),
        a.rotate.augmentation((0, 30), True),
        a.brightness.augmentation((0.1, 1.9), False, None),
        a.contrast.augmentation((0.1, 1.9), False, None),
        a.color.augmentation((0.1, 1.9), False, None),
        a.sharpness.augmentation((0.1, 1.9), False, a.sharpness_kernel_shifted),
        a.posterize.augmentation((0, 4), False, a.poster_mask_uint8),
        a.solarize.augmentation((0, 256), False, None),
        a.equalize,
        a.auto_contrast,
        a.identity,
    ]
