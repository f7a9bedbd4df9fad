# SPDX-License-Identifier: Apache-2.0
"""The ASR pipeline (examples/asr_pipeline.py: NeMo's DALI preprocessing) against peers that
compute the same features from the same files, in one run: utterances/s and audio seconds/s.

  sluice     the example's pipeline through the Python package (sluice.pipeline_def), with
             --threads threads; with --device cuda the features on GPU 0 (decoding on the CPU)
  scipy      soundfile + scipy.signal.resample_poly + numpy/scipy.fft: pre-emphasis, |STFT|^2
             (DALI's Hann), Slaney mel, log, per-feature normalisation, padding; --threads worker
             processes (multiprocessing), batches as the pipeline's
  torchaudio (where torchaudio is installed; --device cuda on a GPU machine) torchaudio.load,
             resample, the same chain with torch.stft and torchaudio's Slaney mel bank

usage: /usr/bin/python3 bench/asr_features.py [--utterances 400] [--batch 32] [--threads 2]
       [--runs 3] [--peers scipy,torchaudio] [--device cpu|cuda] [--data DIR]
The utterances (16 kHz WAV, 1-4 s, tones, chirps and noise; python/tests/audio_files.py) are made
in DIR (default: a temporary folder) unless it already holds a manifest.json. Each side reads every
file each epoch; the figures are the median of --runs epochs run back to back after a warm-up one, each side in
turn (a side's pipeline or pool is gone before the next side starts). Prints one JSON object.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "python", "tests"))

SR, NFFT, WIN, HOP, NMEL = 16000, 512, 320, 160, 64


def sluice_side(manifest, batch, threads, cuda):
    import sluice.fn as fn
    import sluice.types as types
    from sluice import pipeline_def
    dev = "gpu" if cuda else "cpu"

    @pipeline_def(batch_size=batch, num_threads=threads, device_id=0 if cuda else None)
    def pipe():
        audio, idx = fn.readers.nemo_asr(name="Reader", manifest_filepaths=[manifest],
                                         dtype=types.FLOAT, downmix=True, sample_rate=float(SR),
                                         read_sample_rate=False, read_text=False, read_idxs=True)
        if cuda:
            audio = audio.gpu()
        audio = fn.preemphasis_filter(audio, preemph_coeff=0.97, border="zero", device=dev)
        spec = fn.spectrogram(audio, nfft=NFFT, window_length=WIN, window_step=HOP, device=dev)
        mel = fn.mel_filter_bank(spec, sample_rate=float(SR), nfilter=NMEL, normalize=True,
                                 freq_low=0.0, freq_high=SR / 2, device=dev)
        log = fn.to_decibels(mel, multiplier=float(np.log(10)), reference=1.0,
                             cutoff_db=float(np.log(2.0 ** -24)), device=dev)
        n = fn.shapes(log, device=dev)
        log = fn.normalize(log, axes=[1], ddof=1, epsilon=1e-10, device=dev)
        return fn.pad(log, fill_value=0.0, axes=(0, 1), align=(16, 1), shape=(1, -1),
                      device=dev), n, idx

    p = pipe()
    p.build()
    size = p.epoch_size("Reader")

    def epoch():
        done = 0
        while done < size:
            out = p.run()
            if not cuda:  # on a GPU the batch stays there, as a training step takes it
                out[0].as_array()
            done += batch
        return min(done, size)
    return epoch, p


def _features_np(path):
    import soundfile as sf
    from scipy import fft, signal
    from audio_ref import hann, mel_bank_ref
    x, rate = sf.read(path, dtype="float32", always_2d=True)
    x = x.mean(axis=1)
    if rate != SR:
        g = np.gcd(int(rate), SR)
        x = signal.resample_poly(x, SR // g, int(rate) // g)
    x = np.concatenate([x[:1], x[1:] - 0.97 * x[:-1]]).astype(np.float32)
    xp = np.pad(x, (WIN // 2, WIN // 2), mode="reflect")
    nwin = len(x) // HOP + 1
    frames = np.lib.stride_tricks.sliding_window_view(xp, WIN)[::HOP][:nwin] * _features_np.win
    spec = np.abs(fft.rfft(frames, n=NFFT, axis=1)) ** 2
    if _features_np.mel is None:
        _features_np.mel = mel_bank_ref(NMEL, NFFT, SR, 0.0, SR / 2, False, True).astype(np.float32)
    log = np.log(np.maximum(_features_np.mel @ spec.T.astype(np.float32), 2.0 ** -24))
    m = log.mean(axis=1, keepdims=True)
    v = log.var(axis=1, ddof=1, keepdims=True)
    return (log - m) / np.sqrt(v + 1e-10)


_features_np.mel = None
_features_np.win = None


def _init_np():
    from audio_ref import hann
    _features_np.win = hann(WIN).astype(np.float32)


def _batch_np(paths):
    feats = [_features_np(p) for p in paths]
    t = max(f.shape[1] for f in feats)
    out = np.zeros((len(feats), NMEL, t), np.float32)
    for i, f in enumerate(feats):
        out[i, :, :f.shape[1]] = f
    return out.shape


def scipy_side(paths, batch, threads):
    import multiprocessing as mp
    import soundfile  # noqa: F401 (the workers read with it: skip this side where it is missing)
    pool = mp.get_context("fork").Pool(threads, initializer=_init_np)
    batches = [paths[k:k + batch] for k in range(0, len(paths), batch)]

    def epoch():
        for _ in pool.imap(_batch_np, batches):
            pass
        return len(paths)
    return epoch, pool


def _load_wav(path):
    """torchaudio.load's (channels, frames) float32 tensor and rate, for 16-bit PCM WAV."""
    import torch
    import wave
    with wave.open(path, "rb") as w:
        assert w.getsampwidth() == 2, path
        x = np.frombuffer(w.readframes(w.getnframes()), "<i2").reshape(-1, w.getnchannels())
        return torch.from_numpy(x.T.astype(np.float32) / 32768.0), w.getframerate()


def torchaudio_side(paths, batch, device):
    import torch
    import torchaudio
    win = torch.tensor(np.asarray(__import__("audio_ref").hann(WIN), np.float32), device=device)
    melfb = torchaudio.functional.melscale_fbanks(NFFT // 2 + 1, 0.0, SR / 2, NMEL, SR,
                                                  norm="slaney", mel_scale="slaney").to(device)

    load = torchaudio.load
    try:
        load(paths[0])
    except (ImportError, RuntimeError) as e:  # torchaudio 2.9+ reads through torchcodec
        print("torchaudio.load unusable (%s): reading the WAV files with Python's wave" % e,
              file=sys.stderr)
        load = _load_wav

    def epoch():
        for k in range(0, len(paths), batch):
            feats = []
            for p in paths[k:k + batch]:
                x, rate = load(p)
                x = x.to(device).mean(dim=0)
                if rate != SR:
                    x = torchaudio.functional.resample(x, rate, SR)
                x = torch.cat([x[:1], x[1:] - 0.97 * x[:-1]])
                s = torch.stft(x, NFFT, HOP, WIN, win, center=True, pad_mode="reflect",
                               return_complex=True).abs() ** 2
                log = torch.log(torch.clamp(melfb.T @ s, min=2.0 ** -24))
                m, v = log.mean(dim=1, keepdim=True), log.var(dim=1, keepdim=True)
                feats.append((log - m) / torch.sqrt(v + 1e-10))
            t = max(f.shape[1] for f in feats)
            out = torch.zeros(len(feats), NMEL, t, device=device)
            for i, f in enumerate(feats):
                out[i, :, :f.shape[1]] = f
            if device != "cpu":
                torch.cuda.synchronize()
        return len(paths)
    return epoch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--utterances", type=int, default=400)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--peers", default="scipy,torchaudio")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--data")
    a = ap.parse_args()
    data = a.data or tempfile.mkdtemp(prefix="sluice-asr-")
    manifest = os.path.join(data, "manifest.json")
    if not os.path.exists(manifest):
        import audio_files
        audio_files.FILES.clear()
        audio_files.write_all(data, a.utterances)
    entries = [json.loads(s) for s in open(manifest)]
    paths = [os.path.join(data, e["audio_filepath"]) for e in entries]
    seconds = sum(e["duration"] for e in entries)
    # one side at a time, its pipeline or pool torn down before the next starts: sluice's
    # pipeline prepares batches ahead in the background, which would run during a peer's epochs
    def make(name):
        if name == "sluice":
            return sluice_side(manifest, a.batch, a.threads, a.device == "cuda")
        if name == "scipy":
            return scipy_side(paths, a.batch, a.threads)
        return torchaudio_side(paths, a.batch, a.device), None

    times = {}
    for name in ["sluice"] + a.peers.split(","):
        try:
            ep, owner = make(name)
        except ImportError as e:
            print("%s peer skipped: %s" % (name, e), file=sys.stderr)
            continue
        ep()  # warm-up: page cache, pools, JIT
        times[name] = []
        for _ in range(a.runs):  # back to back: steady state
            t = time.perf_counter()
            n = ep()
            times[name].append((time.perf_counter() - t, n))
        if hasattr(owner, "close"):
            owner.close()
        del ep, owner
    res = {"utterances": len(paths), "audio_seconds": round(seconds, 1), "batch": a.batch,
           "threads": a.threads, "device": a.device, "load": os.getloadavg()[0], "sides": {}}
    for k, v in times.items():
        s = statistics.median(t for t, _ in v)
        n = v[0][1]
        res["sides"][k] = {"seconds": round(s, 4), "utterances_per_s": round(n / s, 1),
                           "audio_s_per_s": round(seconds * n / len(paths) / s, 1)}
    base = res["sides"]["sluice"]["utterances_per_s"]
    for k in res["sides"]:
        res["sides"][k]["sluice_ratio"] = round(base / res["sides"][k]["utterances_per_s"], 2)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
