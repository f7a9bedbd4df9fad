# SPDX-License-Identifier: Apache-2.0
"""What the three schemes share: the translation augmentations for a given offset limit, and
select with a clearer message when translate_x/translate_y lack the image shape."""

from ._args import MissingArgException
from ._select import select


def max_translate_hw(max_translate):
    if isinstance(max_translate, (tuple, list)):
        h, w = max_translate
        return h, w
    return max_translate, max_translate


def parse_validate_offset(use_shape, max_translate_abs=None, max_translate_rel=None,
                          default_translate_abs=250, default_translate_rel=1.):
    if not isinstance(use_shape, bool):
        raise TypeError("use_shape is True or False, got %r" % (use_shape,))
    if use_shape:
        if max_translate_abs is not None:
            raise ValueError("max_translate_abs cannot be used with the image shape: give "
                             "max_translate_rel instead")
        return max_translate_hw(default_translate_rel if max_translate_rel is None
                                else max_translate_rel)
    if max_translate_rel is not None:
        raise ValueError("max_translate_rel needs the image shape (shape=...): give "
                         "max_translate_abs instead")
    return max_translate_hw(default_translate_abs if max_translate_abs is None
                            else max_translate_abs)


def get_translations(use_shape, default_translate_abs, default_translate_rel,
                     max_translate_abs=None, max_translate_rel=None):
    """[translate_x, translate_y] with magnitudes up to the limits: relative to the image shape
    (use_shape) or absolute, in pixels."""
    from .. import augmentations as a
    h, w = parse_validate_offset(use_shape, max_translate_abs, max_translate_rel,
                                 default_translate_abs, default_translate_rel)
    if use_shape:
        return [a.translate_x.augmentation((0, w), True), a.translate_y.augmentation((0, h), True)]
    return [a.translate_x_no_shape.augmentation((0, w), True),
            a.translate_y_no_shape.augmentation((0, h), True)]


def pretty_select(augmentations, aug_ids, op_kwargs, auto_aug_name, ref_suite_name):
    from .. import augmentations as a
    try:
        return select(augmentations, aug_ids, **op_kwargs)
    except MissingArgException as e:
        if e.missing_args != ["shape"] or e.augmentation.op not in (a.translate_x.op,
                                                                     a.translate_y.op):
            raise
        raise MissingArgException(
            "augmentation `%s` needs the image shape (HWC): give it as `shape` to %s (e.g. "
            "fn.peek_image_shape of the encoded images), or use translate_x_no_shape / "
            "translate_y_no_shape, whose offsets do not depend on it (see %s and its use_shape)"
            % (e.augmentation.name, auto_aug_name, ref_suite_name), e.augmentation,
            e.missing_args) from None
