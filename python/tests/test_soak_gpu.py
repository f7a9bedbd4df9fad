# SPDX-License-Identifier: Apache-2.0
"""DALI's ResNet-50 training pipeline (mixed decoder, hardware JPEG engines where the GPU has them)
feeding a PyTorch ResNet-50 that trains on the same GPU, for several epochs with auto_reset: the
short version of bench/soak_torch.py. The GPU stays busy with the model's work while the pipeline
decodes, the condition under which nvJPEG's hardware back end used to stop for good; every image
is sent to the engines (photos of this size go to the CPU pool by default). Every run
must finish its steps; a run that makes no step for 60 s is a hang, and the script then prints
every thread's stack and fails instead of waiting for good. Needs a GPU, torch and torchvision:
label gpu."""

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, TOOL

pytestmark = pytest.mark.gpu


def test_resnet50_soak(tmp_path):
    try:
        import torch
        import torchvision  # noqa: F401
        cuda = torch.cuda.is_available()
    except ImportError:
        cuda = False
    if not cuda:
        if os.environ.get("SL_REQUIRE_GPU") == "1":
            raise RuntimeError("SL_REQUIRE_GPU=1, but torch with CUDA and torchvision are missing")
        pytest.skip("needs torch with CUDA and torchvision")
    photos = tmp_path / "photos"
    make_photos = os.path.join(os.path.dirname(TOOL), "make_photos")
    subprocess.run([make_photos, str(photos), "4", "96", "3"], check=True, timeout=300)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), PYTHONUNBUFFERED="1")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "soak_torch.py"), str(photos),
                        "--feeds", "sluice", "--runs", "3", "--warmup", "2", "--steps", "28",
                        "--batch", "64", "--stall", "60", "--hw-load", "1",
                        "--decoder-arg", "cpu_decode_max_pixels=0"],
                       env=env, capture_output=True, text=True, timeout=900)
    print(r.stdout, r.stderr)
    assert r.returncode == 0, r.stdout + r.stderr
    runs = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    assert [x["run"] for x in runs] == [0, 1, 2]
    for x in runs:  # 384 images, 6 batches an epoch: each run crosses five epochs
        assert x["feed"] == "sluice" and x["steps"] == 28 and x["images_per_s"] > 0
