# SPDX-License-Identifier: Apache-2.0
"""select: each sample through the augmentation its index picks, the batch split by conditionals
(a binary search over the list, so a sample passes log2(len) splits) and merged back in order."""


def _split(lo, hi, ops, idx, args, kwargs):
    if lo == hi:
        return ops[lo](*args, **kwargs)
    mid = (lo + hi) // 2
    if idx <= mid:
        return _split(lo, mid, ops, idx, args, kwargs)
    else:
        return _split(mid + 1, hi, ops, idx, args, kwargs)


def select(ops, selected_op_idx, *op_args, **op_kwargs):
    """`ops[selected_op_idx](*op_args, **op_kwargs)` per sample: selected_op_idx is an op
    output of indices in [0, len(ops) - 1]; op outputs among the arguments are split with the
    samples. Needs a pipeline defined with enable_conditionals=True."""
    if not ops:
        raise ValueError("select: the list of augmentations is empty")
    return _split(0, len(ops) - 1, ops, selected_op_idx, op_args, op_kwargs)
