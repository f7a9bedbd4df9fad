# SPDX-License-Identifier: Apache-2.0
"""The ASR pipeline (examples/asr_pipeline.py) on GPU 0 against the same text on the CPU. Apart
from test_audio.py, which needs soundfile for its references: this one reads 16-bit WAV files
only, which tests/audio_files.py writes without it (GPU machines may lack soundfile)."""

import os

import numpy as np
import pytest

import audio_files


@pytest.fixture(scope="module")
def audio_dir(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("audio"))
    audio_files.write_all(d)
    return d


@pytest.mark.gpu
def test_asr_pipeline_on_gpu_matches_cpu(audio_dir, tmp_path):
    """examples/asr_pipeline.py with device="gpu" on GPU 0 (cuFFT, the mel/decibel/normalise/pad
    kernels) against the same text on the CPU."""
    import subprocess
    from conftest import ROOT, TOOL, gpu_or_skip
    gpu_or_skip()
    man = os.path.join(audio_dir, "manifest.json")
    dumps = {}
    for dev, devices in (("cpu", "cpu"), ("gpu", "0")):
        out = tmp_path / dev
        r = subprocess.run([TOOL, "run", os.path.join(ROOT, "examples", "asr_pipeline.py"),
                            "--arg", "manifest=" + man, "--arg", "device=" + dev, "--devices",
                            devices, "--batch-size", "3", "--dump", str(out)],
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        dumps[dev] = {f: np.load(str(out / f)) for f in sorted(os.listdir(str(out)))}
    assert list(dumps["cpu"]) == list(dumps["gpu"]) and dumps["cpu"]
    for f, a in dumps["cpu"].items():
        b = dumps["gpu"][f]
        assert a.shape == b.shape and a.dtype == b.dtype, f
        if a.dtype == np.float32:  # normalised log-mel features: cuFFT in float against double
            np.testing.assert_allclose(b, a, atol=2e-3, err_msg=f)
        else:
            assert (a == b).all(), f
