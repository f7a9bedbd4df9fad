# SPDX-License-Identifier: Apache-2.0
"""References for the audio tests, in numpy alone (no sluice): DALI's Hann window, the power
spectrogram, mel filter banks from the Slaney and HTK formulas, decibels, silence detection, and
the ASR features NeMo's DALI pipeline computes."""

import numpy as np

def hann(n):
    return 0.5 * (1 - np.cos(2 * np.pi * (np.arange(n) + 0.5) / n))


def spectrogram_ref(x, nfft, wl, step, window=None, power=2, center=True, reflect=True):
    """(bins, windows)"""
    w = hann(wl) if window is None else np.asarray(window, np.float64)
    x = np.asarray(x, np.float64)
    if center:
        pad = wl // 2
        xp = np.pad(x, (pad, wl), mode="reflect" if reflect else "constant")
        nwin = len(x) // step + 1
    else:
        xp = x
        nwin = (len(x) - wl) // step + 1 if len(x) >= wl else 0
    frames = np.stack([xp[k * step:k * step + wl] * w for k in range(nwin)]) if nwin else \
        np.zeros((0, wl))
    s = np.abs(np.fft.rfft(frames, n=nfft, axis=1)) ** power
    return s.T


def hz_to_mel(f, htk):
    f = np.asarray(f, np.float64)
    if htk:
        return 2595.0 * np.log10(1 + f / 700.0)
    lin = f / (200.0 / 3)
    return np.where(f < 1000, lin, 15.0 + np.log(np.maximum(f, 1e-9) / 1000) / (np.log(6.4) / 27))


def mel_to_hz(m, htk):
    m = np.asarray(m, np.float64)
    if htk:
        return 700.0 * (10 ** (m / 2595.0) - 1)
    return np.where(m < 15, m * 200.0 / 3, 1000 * np.exp(np.log(6.4) / 27 * (m - 15)))


def mel_bank_ref(nfilter, nfft, sr, fmin, fmax, htk, normalize):
    nb = nfft // 2 + 1
    freqs = np.arange(nb) * sr / nfft
    pts = mel_to_hz(np.linspace(hz_to_mel(fmin, htk), hz_to_mel(fmax, htk), nfilter + 2), htk)
    W = np.zeros((nfilter, nb))
    for m in range(nfilter):
        lo, c, hi = pts[m], pts[m + 1], pts[m + 2]
        up = (freqs - lo) / (c - lo)
        down = (hi - freqs) / (hi - c)
        W[m] = np.maximum(0, np.minimum(up, down))
        if normalize:
            W[m] *= 2.0 / (hi - lo)
    return W


def db_ref(x, mult=10.0, ref=None, cutoff=-200.0):
    ref = np.max(x) if ref is None else ref
    return mult * np.log10(np.maximum(10 ** (cutoff / mult), x / ref))


def nonsilent_ref(x, cutoff_db=-60.0, window=2048, ref_power=None):
    x = np.asarray(x, np.float64)
    p = np.convolve(x * x, np.ones(window))[:len(x)] / window
    ref = p.max() if ref_power is None else ref_power
    if ref <= 0:
        return 0, 0
    loud = np.nonzero((p > 0) & (p >= ref * 10 ** (cutoff_db / 10)))[0]
    if len(loud) == 0:
        return 0, 0
    b = max(0, loud[0] - window + 1)
    return b, loud[-1] - b + 1



def asr_features(x, sr=16000, nfft=512, win=320, hop=160, nmel=64, window=None):
    """Pre-emphasis 0.97 (a zero before the first sample), |STFT|^2, Slaney mel (normalised), ln with a 2^-24 floor, each feature
    normalised over time (ddof 1, epsilon 1e-10 on the variance): (nmel, frames)."""
    x = np.asarray(x, np.float64)
    x = x - 0.97 * np.concatenate([[0.0], x[:-1]])
    spec = spectrogram_ref(x, nfft, win, hop, window=window)
    mel = mel_bank_ref(nmel, nfft, sr, 0.0, sr / 2, False, True) @ spec
    log = np.log(np.maximum(mel, 2.0 ** -24))
    mean = log.mean(axis=1, keepdims=True)
    var = log.var(axis=1, ddof=1, keepdims=True)
    return (log - mean) / np.sqrt(var + 1e-10)
