# SPDX-License-Identifier: Apache-2.0
"""Jasper/QuartzNet-style ASR features, as NVIDIA NeMo builds its preprocessing with DALI, the
imports unchanged (sluice reads this text): a NeMo manifest, audio decoded and resampled to
16 kHz, pre-emphasis (0.97, a zero before the first sample), a power spectrogram (20 ms windows
every 10 ms, nfft 512), 64 Slaney mel filters, natural log (to_decibels with multiplier ln 10 and
a floor of 2^-24), each feature normalised over time, and the batch padded (features to a
multiple of 16, frames to the longest utterance). Outputs: the features (batch, 64, frames), each
one's shape (64, frames) before padding, and the manifest index. With device="gpu" the features
are computed on the GPU (the reader decodes on the CPU, as DALI's does); on a CPU device the same
text runs on the CPU.

    sluice run examples/asr_pipeline.py --arg manifest=data/manifest.json --json
    sluice run examples/asr_pipeline.py --arg manifest=data/manifest.json --arg device=gpu --devices 0
"""
import nvidia.dali.fn as fn
import nvidia.dali.types as types
from nvidia.dali import pipeline_def

sample_rate = 16000.0
window_length = 320  # 0.02 s
window_step = 160  # 0.01 s
nfft = 512
nfilter = 64
log_zero_guard = -16.635532333438686  # ln(2 ** -24)
ln10 = 2.302585092994046


@pipeline_def(batch_size=8, num_threads=2)
def asr_pipeline(manifest, shuffle=False, device="cpu"):
    audio, indices = fn.readers.nemo_asr(
        name="Reader", manifest_filepaths=[manifest], dtype=types.FLOAT, downmix=True,
        sample_rate=sample_rate, read_sample_rate=False, read_text=False, read_idxs=True,
        random_shuffle=shuffle, pad_last_batch=True)
    if device == "gpu":
        audio = audio.gpu()
    audio = fn.preemphasis_filter(audio, preemph_coeff=0.97, border="zero", device=device)
    spec = fn.spectrogram(audio, nfft=nfft, window_length=window_length,
                          window_step=window_step, device=device)
    mel = fn.mel_filter_bank(spec, sample_rate=sample_rate, nfilter=nfilter, normalize=True,
                             freq_low=0.0, freq_high=sample_rate / 2, device=device)
    log = fn.to_decibels(mel, multiplier=ln10, reference=1.0, cutoff_db=log_zero_guard,
                         device=device)
    log_len = fn.shapes(log, device=device)
    log = fn.normalize(log, axes=[1], ddof=1, epsilon=1e-10, device=device)
    # features padded to a multiple of 16, frames to the batch's longest utterance
    log = fn.pad(log, fill_value=0.0, axes=(0, 1), align=(16, 1), shape=(1, -1), device=device)
    return log, log_len, indices
