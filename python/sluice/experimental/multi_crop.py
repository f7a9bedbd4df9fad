# SPDX-License-Identifier: Apache-2.0
"""``multi_crop``: N crops of every sample, one ``fn.slice`` per anchor, stacked on a new outer
axis (DALI's nvidia.dali.experimental.multi_crop)."""

from .. import fn


def multi_crop(data, anchors=None, crop=None, rel_anchors=None, rel_crop=None, axes=(0, 1),
               axis_names=None, stack=True, out_of_bounds_policy=None, fill_values=None,
               device=None):
    """The crops of ``data`` at each anchor: ``anchors`` (absolute, with the shape ``crop``) or
    ``rel_anchors`` (fractions of the extent, with ``rel_crop``), on ``axes`` (or
    ``axis_names``). ``stack=True`` gives one node with the crops on a new outer axis (all crops
    must have one shape), ``stack=False`` a list of nodes. ``out_of_bounds_policy``,
    ``fill_values`` and ``device`` go to every ``fn.slice``."""
    absolute, relative = anchors is not None, rel_anchors is not None
    if absolute == relative:
        raise ValueError("multi_crop takes exactly one of `anchors` (with `crop`) or "
                         "`rel_anchors` (with `rel_crop`)")
    if absolute and crop is None:
        raise ValueError("`crop` must be provided with `anchors`")
    if relative and rel_crop is None:
        raise ValueError("`rel_crop` must be provided with `rel_anchors`")
    points = list(anchors if absolute else rel_anchors)
    if not points:
        raise ValueError("multi_crop needs at least one anchor")
    args = {"axis_names": axis_names} if axis_names is not None else {"axes": list(axes)}
    for k, v in (("out_of_bounds_policy", out_of_bounds_policy), ("fill_values", fill_values),
                 ("device", device)):
        if v is not None:
            args[k] = v
    if absolute:
        crops = [fn.slice(data, start=list(p), shape=list(crop), **args) for p in points]
    else:
        crops = [fn.slice(data, rel_start=list(p), rel_shape=list(rel_crop), **args)
                 for p in points]
    return fn.stack(*crops) if stack else crops


__all__ = ["multi_crop"]
