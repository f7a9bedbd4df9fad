# SPDX-License-Identifier: Apache-2.0
"""What the package keeps per thread and per process: the pipeline being defined on each thread,
the Python source whose callback a pipeline thread is running, and whether the interpreter is
exiting."""

import threading

local = threading.local()


def stack():
    st = getattr(local, "stack", None)
    if st is None:
        st = local.stack = []
    return st


def current():
    """The pipeline being defined on this thread (inside `with pipe:` or a pipeline_def call)."""
    st = stack()
    return st[-1] if st else None


# set by the exit hook (_owner): sources are not called again once the interpreter is exiting
exiting = [False]
