# SPDX-License-Identifier: Apache-2.0
"""Paths for the Python tests: the source tree's fixtures, the built `sluice` tool and library.
ctest sets SLUICE_LIBRARY, SL_TOOL and SL_FIXTURES; run by hand from the source tree they default
to build/."""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("SLUICE_LIBRARY", os.path.join(ROOT, "build", "libsluice.so"))

FIXTURES = os.environ.get("SL_FIXTURES", os.path.join(ROOT, "tests", "fixtures"))
TOOL = os.environ.get("SL_TOOL", os.path.join(ROOT, "build", "sluice"))
LMDB = os.path.join(FIXTURES, "caffe2-fmnist-256")
PIPELINES = os.path.join(ROOT, "tools", "pipelines")


def run_tool(*args, **kw):
    """Runs the sluice tool; its stdout (fails the test, with stderr, when it fails)."""
    r = subprocess.run([TOOL] + [str(a) for a in args], capture_output=True, text=True, **kw)
    if r.returncode != 0:
        pytest.fail("sluice %s failed (%d):\n%s" % (" ".join(map(str, args)), r.returncode,
                                                   r.stderr))
    return r.stdout


def gpu_or_skip():
    """Skips the calling test where nvidia-smi finds no GPU; fails it there instead when
    SL_REQUIRE_GPU=1 (the GPU machine's runs, where a missing GPU is an error, not a skip)."""
    try:
        found = subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0
    except FileNotFoundError:
        found = False
    if not found:
        if os.environ.get("SL_REQUIRE_GPU") == "1":
            raise RuntimeError("SL_REQUIRE_GPU=1, but nvidia-smi finds no GPU")
        pytest.skip("needs a GPU")


def need_jax():
    """Skips the calling test where JAX is not installed; fails it there instead when
    SL_REQUIRE_GPU=1 (the GPU machine's runs, where JAX is)."""
    try:
        import jax  # noqa: F401
    except ImportError:
        if os.environ.get("SL_REQUIRE_GPU") == "1":
            raise
        pytest.skip("JAX is not installed")


def thread_count():
    return len(os.listdir("/proc/self/task"))


@pytest.fixture
def no_leaked_threads():
    """Fails a test that leaves threads behind once its objects are collected."""
    import gc
    gc.collect()
    before = thread_count()
    yield
    gc.collect()
    after = thread_count()
    assert after <= before, "%d threads before, %d after" % (before, after)
