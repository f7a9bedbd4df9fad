# SPDX-License-Identifier: Apache-2.0
"""``sluice.pipeline.experimental`` (DALI's ``nvidia.dali.pipeline.experimental``): its
``pipeline_def`` is sluice's (the same decorator, conditionals included) with DALI's debug mode:
``debug=True``, in the decorator or the call, runs the definition at every ``run()`` with each
op run as it is called (sluice._debug)."""

import functools
import inspect

from . import errors
from .pipeline import PIPELINE_ARGS
from .pipeline import pipeline_def as _pipeline_def


def pipeline_def(fn=None, *, enable_conditionals=False, debug=False, **pipeline_kwargs):
    """DALI's experimental pipeline_def: as sluice.pipeline_def, and ``debug=True`` (here or in
    the call) for debug mode."""
    bad = set(pipeline_kwargs) - set(PIPELINE_ARGS)
    if bad:
        raise errors.ArgumentTypeError("pipeline_def: unknown argument(s) %s"
                                       % ", ".join(sorted(bad)))

    def decorate(func):
        standard = _pipeline_def(func, enable_conditionals=enable_conditionals, **pipeline_kwargs)
        params = inspect.signature(func).parameters

        @functools.wraps(func)
        def create(*args, debug=debug, **kwargs):
            if not debug:
                return standard(*args, **kwargs)
            if enable_conditionals:
                raise errors.NotSupportedError("pipeline_def: debug=True with "
                                               "enable_conditionals=True")
            from ._debug import pipeline_class
            pk = dict(pipeline_kwargs)
            fk = {}
            for k, v in kwargs.items():
                (pk if k in PIPELINE_ARGS and k not in params else fk)[k] = v
            pipe = pipeline_class()(**pk)
            pipe._debug_init(func, args, fk)
            return pipe
        create._sluice_fn = func
        create._sluice_kwargs = dict(pipeline_kwargs)
        return create

    return decorate(fn) if fn is not None else decorate


__all__ = ["pipeline_def"]
