# SPDX-License-Identifier: Apache-2.0
"""``sluice.pipeline.experimental`` (DALI's ``nvidia.dali.pipeline.experimental``): its
``pipeline_def`` is sluice's (the same decorator, conditionals included; DALI's experimental one
also has a debug mode, which sluice refuses: ``debug=True``)."""

from . import errors
from .pipeline import pipeline_def as _pipeline_def


def pipeline_def(fn=None, *, enable_conditionals=False, debug=False, **pipeline_kwargs):
    """DALI's experimental pipeline_def: as sluice.pipeline_def."""
    if debug:
        raise errors.NotSupportedError("pipeline_def: debug=True (DALI's eager debug mode)")
    return _pipeline_def(fn, enable_conditionals=enable_conditionals, **pipeline_kwargs)


__all__ = ["pipeline_def"]
