# SPDX-License-Identifier: Apache-2.0
"""The seed's program on sluice (examples/jax_multigpu.py) on every GPU of the machine: the
tutorial's batch counts, and test accuracies within 0.02 of the JAX reference on Fashion-MNIST
in both halves (sharding, then devices/pmap). Needs a GPU and JAX: label gpu."""

import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT, TOOL

pytestmark = pytest.mark.gpu
# JAX fed from NumPy arrays on the same data (one H200), epochs 0..4
REFERENCE = [0.6530, 0.7255, 0.7533, 0.7709, 0.7806]


def test_seed_program(tmp_path):
    try:
        import jax  # noqa: F401
    except ImportError:
        if os.environ.get("SL_REQUIRE_GPU") == "1":
            raise
        pytest.skip("JAX is not installed")
    data = tmp_path / "data"
    made = subprocess.run([os.path.join(ROOT, "scripts", "make-data"), TOOL, str(data)],
                          capture_output=True, text=True)
    assert made.returncode == 0, "scripts/make-data failed:\n" + made.stdout + made.stderr
    mnist = tmp_path / "extra" / "db" / "MNIST"
    mnist.mkdir(parents=True)
    os.symlink(data / "training", mnist / "training")
    os.symlink(data / "testing", mnist / "testing")
    env = dict(os.environ, DALI_EXTRA_PATH=str(tmp_path / "extra"),
               PYTHONPATH=os.path.join(ROOT, "python") + os.pathsep + os.path.join(ROOT, "examples"))
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "jax_multigpu.py")],
                       env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    print(out)
    assert out.count("Number of batches in training iterator = 300") == 2
    assert out.count("Number of batches in validation iterator = 50") == 2
    acc = [float(x) for x in re.findall(r"Test set accuracy ([0-9.]+)", out)]
    assert len(acc) == 10
    for half in (acc[:5], acc[5:]):
        for got, want in zip(half, REFERENCE):
            assert abs(got - want) <= 0.02, (acc, REFERENCE)
