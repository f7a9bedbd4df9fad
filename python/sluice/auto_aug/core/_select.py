# SPDX-License-Identifier: Apache-2.0
"""select: each sample through the augmentation its index picks, the batch split by conditionals
(a binary search over the list, so a sample passes log2(len) splits) and merged back in order.
The functions with an `if` on data here and in the schemes are converted as the pipeline
function of @pipeline_def(enable_conditionals=True) is (sluice's conditionals)."""

from ..._conditionals import convert
from ..._state import current


def require_conditionals(what):
    """Refuses a scheme in a pipeline not defined with enable_conditionals=True, as DALI does."""
    pipe = current()
    if pipe is not None and not getattr(pipe, "_enable_conditionals", False):
        raise TypeError("%s splits the batch with conditionals: define the pipeline with "
                        "@pipeline_def(enable_conditionals=True)" % what)


def _split(lo, hi, ops, idx, args, kwargs):
    if lo == hi:
        return ops[lo](*args, **kwargs)
    mid = (lo + hi) // 2
    if idx <= mid:
        out = _split(lo, mid, ops, idx, args, kwargs)
    else:
        out = _split(mid + 1, hi, ops, idx, args, kwargs)
    return out


_split = convert(_split)


def select(ops, selected_op_idx, *op_args, **op_kwargs):
    """`ops[selected_op_idx](*op_args, **op_kwargs)` per sample: selected_op_idx is an op
    output of indices in [0, len(ops) - 1]; op outputs among the arguments are split with the
    samples. Needs a pipeline defined with enable_conditionals=True."""
    if not ops:
        raise ValueError("select: the list of augmentations is empty")
    require_conditionals("select")
    return _split(0, len(ops) - 1, ops, selected_op_idx, op_args, op_kwargs)
