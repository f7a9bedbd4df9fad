# SPDX-License-Identifier: Apache-2.0
"""The standard augmentations of AutoAugment (ImageNet policy), RandAugment and
TrivialAugmentWide, as DALI's nvidia.dali.auto_aug.augmentations: each a function of sluice
operators wrapped by `@augmentation` with an example magnitude range (the schemes set their
own through `.augmentation(...)`). Images are HWC uint8.

Called with `magnitude_bin` and `num_magnitude_bins`, each computes its parameter as
`mag_to_param(magnitudes[bin] * (-1) ** random_sign)`: `shear_x.augmentation(mag_range=(0, 0.5))`
widens shear_x's range, for instance. The geometric ones (shear, translate, rotate) take
`fill_value` (None: the border pixel repeated) and `interp_type`; translate_x/translate_y take
the image `shape` (their magnitude is a fraction of it), the `_no_shape` forms pixels."""

import numpy as np

from .. import fn, types
from .core import augmentation


def warp_x_param(magnitude):
    return [magnitude, 0]


def warp_y_param(magnitude):
    return [0, magnitude]


def _warp(sample, mt, fill_value, interp_type):
    kw = {}
    if fill_value is not None:
        kw["fill_value"] = fill_value
    if interp_type is not None:
        kw["interp_type"] = interp_type
    return fn.warp_affine(sample, matrix=mt, inverse_map=False, **kw)


@augmentation(mag_range=(0, 0.3), randomly_negate=True, mag_to_param=warp_x_param)
def shear_x(sample, shear, fill_value=128, interp_type=None):
    return _warp(sample, fn.transforms.shear(shear=shear), fill_value, interp_type)


@augmentation(mag_range=(0, 0.3), randomly_negate=True, mag_to_param=warp_y_param)
def shear_y(sample, shear, fill_value=128, interp_type=None):
    return _warp(sample, fn.transforms.shear(shear=shear), fill_value, interp_type)


@augmentation(mag_range=(0., 1.), randomly_negate=True, mag_to_param=warp_x_param)
def translate_x(sample, rel_offset, shape, fill_value=128, interp_type=None):
    return _warp(sample, fn.transforms.translation(offset=rel_offset * shape[1]), fill_value,
                 interp_type)


@augmentation(mag_range=(0, 250), randomly_negate=True, mag_to_param=warp_x_param,
              name="translate_x")
def translate_x_no_shape(sample, offset, fill_value=128, interp_type=None):
    return _warp(sample, fn.transforms.translation(offset=offset), fill_value, interp_type)


@augmentation(mag_range=(0., 1.), randomly_negate=True, mag_to_param=warp_y_param)
def translate_y(sample, rel_offset, shape, fill_value=128, interp_type=None):
    return _warp(sample, fn.transforms.translation(offset=rel_offset * shape[0]), fill_value,
                 interp_type)


@augmentation(mag_range=(0, 250), randomly_negate=True, mag_to_param=warp_y_param,
              name="translate_y")
def translate_y_no_shape(sample, offset, fill_value=128, interp_type=None):
    return _warp(sample, fn.transforms.translation(offset=offset), fill_value, interp_type)


@augmentation(mag_range=(0, 30), randomly_negate=True)
def rotate(sample, angle, fill_value=128, interp_type=None, rotate_keep_size=True):
    kw = {}
    if fill_value is not None:
        kw["fill_value"] = fill_value
    if interp_type is not None:
        kw["interp_type"] = interp_type
    return fn.rotate(sample, angle=angle, keep_size=rotate_keep_size, **kw)


def shift_enhance_range(magnitude):
    """The enhance operations (brightness, contrast, color, sharpness) are neutral at 1: a
    magnitude in [0, 1], negated at random, becomes 1 + magnitude."""
    return 1 + magnitude


@augmentation(mag_range=(0, 0.9), randomly_negate=True, mag_to_param=shift_enhance_range)
def brightness(sample, parameter):
    return fn.brightness(sample, brightness=parameter)


@augmentation(mag_range=(0, 0.9), randomly_negate=True, mag_to_param=shift_enhance_range)
def contrast(sample, parameter):
    """PIL's ImageEnhance.Contrast: blends with the mean of the image's grey (channel weights
    0.299, 0.587, 0.114), not its per-channel mean."""
    mean = fn.reductions.mean(sample, axes=[0, 1])
    grey = fn.reductions.sum(mean * types.Constant(np.array([0.299, 0.587, 0.114], np.float32)))
    return fn.cast_like(grey + (sample - grey) * parameter, sample)


@augmentation(mag_range=(0, 0.9), randomly_negate=True, mag_to_param=shift_enhance_range)
def color(sample, parameter):
    return fn.saturation(sample, saturation=parameter)


def sharpness_kernel(magnitude):
    """3x3 kernel blending the image with PIL's smoothing filter; magnitude in [-1, 1]"""
    blur = np.array([[1, 1, 1], [1, 5, 1], [1, 1, 1]], dtype=np.float32) / 13
    ident = np.zeros((3, 3), np.float32)
    ident[1, 1] = 1
    return -magnitude * blur + (1 + magnitude) * ident


def sharpness_kernel_shifted(magnitude):
    """sharpness_kernel for a magnitude in [0, 2] (1: the identity)"""
    return sharpness_kernel(magnitude - 1)


@augmentation(mag_range=(0, 0.9), randomly_negate=True, mag_to_param=sharpness_kernel,
              param_device="auto")
def sharpness(sample, kernel):
    """PIL's ImageEnhance.Sharpness, but for the 1-pixel border (which PIL leaves as it is and
    this filters with reflected neighbours)."""
    return fn.experimental.filter(sample, kernel)


def poster_mask_uint8(magnitude):
    """The mask keeping `magnitude` high bits (rounded, 1 to 8: 0 would blank the image)"""
    bits = int(min(max(np.round(magnitude), 1), 8))
    return np.array(np.uint8(255) ^ np.uint8(2 ** (8 - bits) - 1), dtype=np.uint8)


@augmentation(mag_range=(0, 4), mag_to_param=poster_mask_uint8, param_device="auto")
def posterize(sample, mask):
    return sample & mask


@augmentation(mag_range=(256, 0), param_device="auto")
def solarize(sample, threshold):
    inverted = types.Constant(255, dtype=types.UINT8) - sample
    keep = sample < threshold
    flip = keep ^ True
    return keep * sample + flip * inverted


def solarize_add_shift(shift):
    if shift >= 128:
        raise ValueError("solarize_add takes shifts from 0 to 127, got %s" % shift)
    return np.uint8(shift)


@augmentation(mag_range=(0, 110), mag_to_param=solarize_add_shift, param_device="auto")
def solarize_add(sample, shift):
    low = sample < types.Constant(128, dtype=types.UINT8)
    high = low ^ True
    return low * (sample + shift) + high * sample


@augmentation
def invert(sample, _):
    return types.Constant(255, dtype=types.UINT8) - sample


@augmentation
def equalize(sample, _):
    """OpenCV's histogram equalization per channel (PIL's ImageOps.equalize rounds the lookup
    table differently)."""
    return fn.experimental.equalize(sample)


@augmentation
def auto_contrast(sample, _):
    """Each channel stretched to [0, 255] from its own [min, max] (left alone where flat)."""
    lo = fn.reductions.min(sample, axes=[0, 1])
    hi = fn.reductions.max(sample, axes=[0, 1])
    spread = hi - lo
    scaled = spread > 0
    flat = scaled ^ True
    div = spread * scaled + types.Constant(255, dtype=types.UINT8) * flat
    return fn.cast_like((sample - lo * scaled) * (255 / div), sample)


@augmentation
def identity(sample, _):
    return sample
