# SPDX-License-Identifier: Apache-2.0
"""The Python examples run as tests: examples/numpy_batches.py on the fixture; the PyTorch one
(slow) trains the seed's MLP on the full Fashion-MNIST and must reach `sluice train --devices
cpu`'s accuracies within 0.02."""

import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT, TOOL, run_tool

EXAMPLES = os.path.join(ROOT, "examples")


def run_example(name, *args, timeout=900):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    r = subprocess.run([sys.executable, os.path.join(EXAMPLES, name)] + list(args), env=env,
                       capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_numpy_example():
    out = run_example("numpy_batches.py")
    assert "4 batches of (64, 1, 28, 28)" in out
    assert "[0.0, 1.0, 4.0, 9.0]" in out


def accuracies(text):
    return [float(x) for x in re.findall(r"Test set accuracy ([0-9.]+)", text)]


@pytest.mark.slow
def test_pytorch_training_matches_sluice_train(tmp_path):
    subprocess.run([os.path.join(ROOT, "scripts", "make-data"), TOOL, str(tmp_path)], check=True,
                   capture_output=True)
    ours = run_tool("train", "--devices", "cpu", "--data", tmp_path)
    torch_out = run_example("pytorch_train.py", "--data", str(tmp_path), "--device", "cpu")
    assert "Number of batches in training iterator = 300" in torch_out
    assert "Number of batches in validation iterator = 50" in torch_out
    a, b = accuracies(ours), accuracies(torch_out)
    assert len(a) == len(b) == 5, (ours, torch_out)
    for x, y in zip(a, b):
        assert abs(x - y) <= 0.02, (a, b)
    assert b[-1] > 0.75
