# SPDX-License-Identifier: Apache-2.0
"""AutoAugment (https://arxiv.org/abs/1805.09501), as DALI's nvidia.dali.auto_aug.auto_augment:
per sample one sub-policy of the policy, picked uniformly; each of its steps runs with its
probability, at its magnitude bin. The policies of the paper: ImageNet (the default), reduced
ImageNet, SVHN and reduced CIFAR-10."""

import numpy as np

from .. import fn, types
from . import augmentations as a
from .core import Policy, signed_bin
from .._conditionals import convert
from .core._args import forbid_unused_kwargs
from .core._select import require_conditionals
from .core._utils import get_translations, pretty_select


def auto_augment(sample, policy_name="image_net", shape=None, fill_value=128, interp_type=None,
                 max_translate_abs=None, max_translate_rel=None, seed=None):
    """One of the paper's policies applied to a batch of HWC uint8 images (`policy_name`:
    image_net, reduced_image_net, svhn or reduced_cifar10). `shape` (the images' HWC shapes)
    makes translations relative to the image, up to `max_translate_rel` (1) of it; without it
    they are in pixels, up to `max_translate_abs` (250); each may be one value or (height,
    width). `fill_value` (128; None: the border repeated) and `interp_type` go to the warps;
    `seed` seeds the choice of sub-policy and the signs of the magnitudes."""
    policies = {"image_net": get_image_net_policy,
                "reduced_image_net": get_reduced_image_net_policy,
                "svhn": get_svhn_policy, "reduced_cifar10": get_reduced_cifar10_policy}
    if not isinstance(policy_name, str) or policy_name not in policies:
        raise ValueError("auto_augment: policy_name %r is not one of %s"
                         % (policy_name, ", ".join(policies)))
    if policy_name == "reduced_image_net":
        for v, n in ((shape, "shape"), (max_translate_abs, "max_translate_abs"),
                     (max_translate_rel, "max_translate_rel")):
            if v is not None:
                raise ValueError("auto_augment: the policy reduced_image_net has no translation; "
                                 "`%s` must not be given" % n)
        policy = get_reduced_image_net_policy()
    else:
        policy = policies[policy_name](use_shape=shape is not None,
                                       max_translate_abs=max_translate_abs,
                                       max_translate_rel=max_translate_rel)
    kwargs = {"fill_value": fill_value, "interp_type": interp_type}
    if shape is not None:
        kwargs["shape"] = shape
    return apply_auto_augment(policy, sample, seed, **kwargs)


def auto_augment_image_net(sample, shape=None, fill_value=128, interp_type=None,
                           max_translate_abs=None, max_translate_rel=None, seed=None):
    """auto_augment with the ImageNet policy."""
    return auto_augment(sample, "image_net", shape, fill_value, interp_type, max_translate_abs,
                        max_translate_rel, seed)


def apply_auto_augment(policy, sample, seed=None, **kwargs):
    """Runs `policy` (a core.Policy) on the batch in AutoAugment's way; kwargs (shape,
    fill_value, interp_type, ...) go to the augmentations whose functions take them."""
    if not isinstance(policy, Policy):
        raise TypeError("apply_auto_augment: %r is not a Policy" % (policy,))
    if not policy.sub_policies:
        raise ValueError("apply_auto_augment: the policy %r has no sub-policies" % policy.name)
    require_conditionals("apply_auto_augment")
    steps = max(len(sp) for sp in policy.sub_policies)
    should_run = fn.random.uniform(range=[0, 1], shape=[steps], dtype=types.FLOAT)
    sub_policy_id = fn.random.uniform(values=list(range(len(policy.sub_policies))), seed=seed,
                                      dtype=types.INT32)
    probabilities = _probability_table(policy)[sub_policy_id]
    magnitude_bins = _magnitude_table(policy)[sub_policy_id]
    aug_table, stage_augs = _augmentation_table(policy)
    aug_ids = aug_table[sub_policy_id]
    if any(aug.randomly_negate for aug in policy.augmentations.values()):
        magnitude_bins = signed_bin(magnitude_bins, seed=seed, shape=(steps,))
    forbid_unused_kwargs(policy.augmentations.values(), kwargs, "apply_auto_augment")
    for k in range(steps):
        if should_run[k] < probabilities[k]:
            op_kwargs = dict(sample=sample, magnitude_bin=magnitude_bins[k],
                             num_magnitude_bins=policy.num_magnitude_bins, **kwargs)
            sample = pretty_select(stage_augs[k], aug_ids[k], op_kwargs,
                                   auto_aug_name="apply_auto_augment",
                                   ref_suite_name="get_image_net_policy")
    return sample


apply_auto_augment = convert(apply_auto_augment)  # its `if` on data: a conditional


def _policy_translations(use_shape, max_translate_abs, max_translate_rel):
    return get_translations(use_shape, 250, 1., max_translate_abs, max_translate_rel)


def get_image_net_policy(use_shape=False, max_translate_abs=None, max_translate_rel=None):
    """AutoAugment's ImageNet policy (25 sub-policies, 11 magnitude bins)."""
    _, translate_y = _policy_translations(use_shape, max_translate_abs, max_translate_rel)
    shear_x = a.shear_x.augmentation((0, 0.3), True)
    shear_y = a.shear_y.augmentation((0, 0.3), True)
    rotate = a.rotate.augmentation((0, 30), True)
    color = a.color.augmentation((0.1, 1.9), False, None)
    posterize = a.posterize.augmentation((0, 4), False, a.poster_mask_uint8)
    solarize = a.solarize.augmentation((0, 256), False)
    solarize_add = a.solarize_add.augmentation((0, 110), False)
    invert, equalize, auto_contrast = a.invert, a.equalize, a.auto_contrast
    return Policy("ImageNetPolicy", 11, [
        [(equalize, 0.8, None), (shear_y, 0.8, 4)],
        [(color, 0.4, 9), (equalize, 0.6, None)],
        [(color, 0.4, 1), (rotate, 0.6, 8)],
        [(solarize, 0.8, 3), (equalize, 0.4, None)],
        [(solarize, 0.4, 2), (solarize, 0.6, 2)],
        [(color, 0.2, 0), (equalize, 0.8, None)],
        [(equalize, 0.4, None), (solarize_add, 0.8, 3)],
        [(shear_x, 0.2, 9), (rotate, 0.6, 8)],
        [(color, 0.6, 1), (equalize, 1.0, None)],
        [(invert, 0.4, None), (rotate, 0.6, 0)],
        [(equalize, 1.0, None), (shear_y, 0.6, 3)],
        [(color, 0.4, 7), (equalize, 0.6, None)],
        [(posterize, 0.4, 6), (auto_contrast, 0.4, None)],
        [(solarize, 0.6, 8), (color, 0.6, 9)],
        [(solarize, 0.2, 4), (rotate, 0.8, 9)],
        [(rotate, 1.0, 7), (translate_y, 0.8, 9)],
        [(solarize, 0.8, 4)],
        [(shear_y, 0.8, 0), (color, 0.6, 4)],
        [(color, 1.0, 0), (rotate, 0.6, 2)],
        [(equalize, 0.8, None)],
        [(equalize, 1.0, None), (auto_contrast, 0.6, None)],
        [(shear_y, 0.4, 7), (solarize_add, 0.6, 7)],
        [(posterize, 0.8, 2), (solarize, 0.6, 10)],
        [(solarize, 0.6, 8), (equalize, 0.6, None)],
        [(color, 0.8, 6), (rotate, 0.4, 5)],
    ])


def get_reduced_cifar10_policy(use_shape=False, max_translate_abs=None, max_translate_rel=None):
    """AutoAugment's reduced CIFAR-10 policy."""
    translate_x, translate_y = _policy_translations(use_shape, max_translate_abs,
                                                    max_translate_rel)
    shear_y = a.shear_y.augmentation((0, 0.3), True)
    rotate = a.rotate.augmentation((0, 30), True)
    brightness = a.brightness.augmentation((0.1, 1.9), False, None)
    color = a.color.augmentation((0.1, 1.9), False, None)
    contrast = a.contrast.augmentation((0.1, 1.9), False, None)
    sharpness = a.sharpness.augmentation((0.1, 1.9), False, a.sharpness_kernel_shifted)
    posterize = a.posterize.augmentation((0, 4), False, a.poster_mask_uint8)
    solarize = a.solarize.augmentation((0, 256), False)
    invert, equalize, auto_contrast = a.invert, a.equalize, a.auto_contrast
    return Policy("ReducedCifar10Policy", 11, [
        [(invert, 0.1, None), (contrast, 0.2, 6)],
        [(rotate, 0.7, 2), (translate_x, 0.3, 9)],
        [(sharpness, 0.8, 1), (sharpness, 0.9, 3)],
        [(shear_y, 0.5, 8), (translate_y, 0.7, 9)],
        [(auto_contrast, 0.5, None), (equalize, 0.9, None)],
        [(shear_y, 0.2, 7), (posterize, 0.3, 7)],
        [(color, 0.4, 3), (brightness, 0.6, 7)],
        [(sharpness, 0.3, 9), (brightness, 0.7, 9)],
        [(equalize, 0.6, None), (equalize, 0.5, None)],
        [(contrast, 0.6, 7), (sharpness, 0.6, 5)],
        [(color, 0.7, 7), (translate_x, 0.5, 8)],
        [(equalize, 0.3, None), (auto_contrast, 0.4, None)],
        [(translate_y, 0.4, 3), (sharpness, 0.2, 6)],
        [(brightness, 0.9, 6), (color, 0.2, 8)],
        [(solarize, 0.5, 2)],
        [(equalize, 0.2, None), (auto_contrast, 0.6, None)],
        [(equalize, 0.2, None), (equalize, 0.6, None)],
        [(color, 0.9, 9), (equalize, 0.6, None)],
        [(auto_contrast, 0.8, None), (solarize, 0.2, 8)],
        [(brightness, 0.1, 3), (color, 0.7, 0)],
        [(solarize, 0.4, 5), (auto_contrast, 0.9, None)],
        [(translate_y, 0.9, 9), (translate_y, 0.7, 9)],
        [(auto_contrast, 0.9, None), (solarize, 0.8, 3)],
        [(equalize, 0.8, None), (invert, 0.1, None)],
        [(translate_y, 0.7, 9), (auto_contrast, 0.9, None)],
    ])


def get_svhn_policy(use_shape=False, max_translate_abs=None, max_translate_rel=None):
    """AutoAugment's SVHN policy."""
    translate_x, translate_y = _policy_translations(use_shape, max_translate_abs,
                                                    max_translate_rel)
    shear_x = a.shear_x.augmentation((0, 0.3), True)
    shear_y = a.shear_y.augmentation((0, 0.3), True)
    rotate = a.rotate.augmentation((0, 30), True)
    contrast = a.contrast.augmentation((0.1, 1.9), False, None)
    solarize = a.solarize.augmentation((0, 256), False)
    invert, equalize, auto_contrast = a.invert, a.equalize, a.auto_contrast
    return Policy("SvhnPolicy", 11, [
        [(shear_x, 0.9, 4), (invert, 0.2, None)],
        [(shear_y, 0.9, 8), (invert, 0.7, None)],
        [(equalize, 0.6, None), (solarize, 0.6, 6)],
        [(invert, 0.9, None), (equalize, 0.6, None)],
        [(equalize, 0.6, None), (rotate, 0.9, 3)],
        [(shear_x, 0.9, 4), (auto_contrast, 0.8, None)],
        [(shear_y, 0.9, 8), (invert, 0.4, None)],
        [(shear_y, 0.9, 5), (solarize, 0.2, 6)],
        [(invert, 0.9, None), (auto_contrast, 0.8, None)],
        [(equalize, 0.6, None), (rotate, 0.9, 3)],
        [(shear_x, 0.9, 4), (solarize, 0.3, 3)],
        [(shear_y, 0.8, 8), (invert, 0.7, None)],
        [(equalize, 0.9, None), (translate_y, 0.6, 6)],
        [(invert, 0.9, None), (equalize, 0.6, None)],
        [(contrast, 0.3, 3), (rotate, 0.8, 4)],
        [(invert, 0.8, None)],
        [(shear_y, 0.7, 6), (solarize, 0.4, 8)],
        [(invert, 0.6, None), (rotate, 0.8, 4)],
        [(shear_y, 0.3, 7), (translate_x, 0.9, 3)],
        [(shear_x, 0.1, 6), (invert, 0.6, None)],
        [(solarize, 0.7, 2), (translate_y, 0.6, 7)],
        [(shear_y, 0.8, 4), (invert, 0.8, None)],
        [(shear_x, 0.7, 9), (translate_y, 0.8, 3)],
        [(shear_y, 0.8, 5), (auto_contrast, 0.7, None)],
        [(shear_x, 0.7, 2), (invert, 0.1, None)],
    ])


def get_reduced_image_net_policy():
    """AutoAugment's reduced ImageNet policy (no translations)."""
    shear_x = a.shear_x.augmentation((0, 0.3), True)
    rotate = a.rotate.augmentation((0, 30), True)
    color = a.color.augmentation((0.1, 1.9), False, None)
    contrast = a.contrast.augmentation((0.1, 1.9), False, None)
    sharpness = a.sharpness.augmentation((0.1, 1.9), False, a.sharpness_kernel_shifted)
    posterize = a.posterize.augmentation((0, 4), False, a.poster_mask_uint8)
    solarize = a.solarize.augmentation((0, 256), False)
    invert, equalize, auto_contrast = a.invert, a.equalize, a.auto_contrast
    return Policy("ReducedImageNetPolicy", 11, [
        [(posterize, 0.4, 8), (rotate, 0.6, 9)],
        [(solarize, 0.6, 5), (auto_contrast, 0.6, None)],
        [(equalize, 0.8, None), (equalize, 0.6, None)],
        [(posterize, 0.6, 7), (posterize, 0.6, 6)],
        [(equalize, 0.4, None), (solarize, 0.2, 4)],
        [(equalize, 0.4, None), (rotate, 0.8, 8)],
        [(solarize, 0.6, 3), (equalize, 0.6, None)],
        [(posterize, 0.8, 5), (equalize, 1.0, None)],
        [(rotate, 0.2, 3), (solarize, 0.6, 8)],
        [(equalize, 0.6, None), (posterize, 0.4, 6)],
        [(rotate, 0.8, 8), (color, 0.4, 0)],
        [(rotate, 0.4, 9), (equalize, 0.6, None)],
        [(equalize, 0.8, None)],
        [(invert, 0.6, None), (equalize, 1.0, None)],
        [(color, 0.6, 4), (contrast, 1.0, 8)],
        [(rotate, 0.8, 8), (color, 1.0, 2)],
        [(color, 0.8, 8), (solarize, 0.8, 7)],
        [(sharpness, 0.4, 7), (invert, 0.6, None)],
        [(shear_x, 0.6, 5), (equalize, 1.0, None)],
        [(color, 0.4, 0), (equalize, 0.6, None)],
        [(equalize, 0.4, None), (solarize, 0.2, 4)],
        [(solarize, 0.6, 5), (auto_contrast, 0.6, None)],
        [(invert, 0.6, None), (equalize, 1.0, None)],
        [(color, 0.6, 4), (contrast, 1.0, 8)],
        [(equalize, 0.8, None), (equalize, 0.6, None)],
    ])


def _steps(policy):
    return max(len(sp) for sp in policy.sub_policies)


def _probability_table(policy):
    """(sub-policies, steps) float32: each step's probability (0 past a sub-policy's end)"""
    t = np.zeros((len(policy.sub_policies), _steps(policy)), np.float32)
    for i, sp in enumerate(policy.sub_policies):
        for k, (_, p, _) in enumerate(sp):
            t[i, k] = p
    return types.Constant(t)


def _magnitude_table(policy):
    """(sub-policies, steps) int32: each step's bin (0 where it has none: never read)"""
    t = np.zeros((len(policy.sub_policies), _steps(policy)), np.int32)
    for i, sp in enumerate(policy.sub_policies):
        for k, (_, _, m) in enumerate(sp):
            t[i, k] = 0 if m is None else m
    return types.Constant(t)


def _augmentation_table(policy):
    """(table, stage_augs): stage_augs[k] lists the augmentations step k can run (identity last,
    for sub-policies shorter than k + 1); table[i, k] is sub-policy i's index into it."""
    steps = _steps(policy)
    stage_augs = []
    for k in range(steps):
        augs = []
        for sp in policy.sub_policies:
            if k < len(sp) and sp[k][0] not in augs:
                augs.append(sp[k][0])
        stage_augs.append(augs + [a.identity])
    t = np.array([[len(stage_augs[k]) - 1 for k in range(steps)] for _ in policy.sub_policies],
                 np.int32)
    for i, sp in enumerate(policy.sub_policies):
        for k, (aug, _, _) in enumerate(sp):
            t[i, k] = stage_augs[k].index(aug)
    return types.Constant(t), stage_augs
