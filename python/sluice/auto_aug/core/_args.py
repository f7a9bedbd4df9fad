# SPDX-License-Identifier: Apache-2.0
"""Which extra keyword arguments an augmentation's function takes: the auto_aug schemes pass
`shape`, `fill_value` and `interp_type` to every augmentation, and each gets the ones its
signature names. An argument no augmentation takes, or one an augmentation needs and was not
given, is an error naming it."""

import inspect

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


class MissingArgException(Exception):
    """An augmentation needs a keyword argument that the call did not give."""

    def __init__(self, message, augmentation, missing_args):
        super().__init__(message)
        self.augmentation = augmentation
        self.missing_args = missing_args


class UnusedArgException(Exception):
    """A scheme was given a keyword argument that none of its augmentations takes."""

    def __init__(self, message, unused_args):
        super().__init__(message)
        self.unused_args = unused_args


def _extra_params(fun, skip):
    """fun's parameters after its first `skip` positional ones (sample, parameter)"""
    params = list(inspect.signature(fun).parameters.values())
    out, seen = [], 0
    for p in params:
        if p.kind in _POSITIONAL and seen < skip:
            seen += 1
            continue
        out.append(p)
    return out


def accepted_kwargs(fun, kwargs, skip=0):
    """The items of kwargs that fun takes by name (after its first `skip` positional ones)."""
    names = {p.name for p in _extra_params(fun, skip) if p.kind in _NAMED}
    return {k: v for k, v in kwargs.items() if k in names}


def missing_kwargs(fun, kwargs, skip=0):
    """The names fun needs (no default) that kwargs lacks."""
    return [p.name for p in _extra_params(fun, skip)
            if p.kind in _NAMED and p.default is inspect.Parameter.empty and p.name not in kwargs]


def num_positional(fun):
    return sum(p.kind in _POSITIONAL for p in inspect.signature(fun).parameters.values())


def forbid_unused_kwargs(augmentations, kwargs, call_name):
    used = set()
    for aug in augmentations:
        used |= set(accepted_kwargs(aug.op, kwargs, 2))
    unused = [k for k in kwargs if k not in used]
    if unused:
        raise UnusedArgException(
            "%s: The %s `%s` %s not used by any of the augmentations."
            % (call_name, "kwarg" if len(unused) == 1 else "kwargs", ", ".join(unused),
               "is" if len(unused) == 1 else "are"), unused)
