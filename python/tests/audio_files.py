# SPDX-License-Identifier: Apache-2.0
"""Audio files made here for the audio tests, with numpy and soundfile (libsndfile): tones,
chirps and noise with known silences, in WAV 16-bit and float, FLAC and OGG/Vorbis, mono and
stereo, at several sample rates, and a NeMo manifest that lists them. Where soundfile is not
installed, only the 16-bit WAV files are written (with Python's wave module). Also a command line:
`python3 audio_files.py DIR [N]` writes the files (and N more utterances for a benchmark)."""

import json
import os
import sys
import wave

import numpy as np

try:
    import soundfile as sf
except ImportError:
    sf = None

# name: (rate, channels, subtype, seconds, silence before, silence after, kind, text)
FILES = {
    "tone16k.wav": (16000, 1, "PCM_16", 1.5, 0.3, 0.4, "tone", "a tone in silence"),
    "chirp22k_stereo.wav": (22050, 2, "FLOAT", 1.0, 0.0, 0.0, "chirp", "chirp \"and\" noise"),
    "noise44k.flac": (44100, 1, "PCM_16", 0.8, 0.1, 0.1, "noise", "noise \u00e9t\u00e9"),
    "tone48k_stereo.ogg": (48000, 2, "VORBIS", 1.2, 0.2, 0.2, "tone", ""),
    "tone8k.wav": (8000, 1, "PCM_16", 2.5, 0.5, 0.5, "tone", "the longest"),
}


def signal(rate, channels, seconds, before, after, kind, seed=0):
    """(frames, channels) float64 in [-0.9, 0.9], zeros for `before` and `after` seconds."""
    n = int(round(seconds * rate))
    t = np.arange(n) / rate
    rng = np.random.default_rng(seed)
    if kind == "tone":
        x = 0.5 * np.sin(2 * np.pi * 440 * t)
    elif kind == "chirp":
        f0, f1 = 100.0, 4000.0
        x = 0.6 * np.sin(2 * np.pi * (f0 * t + (f1 - f0) / (2 * seconds) * t * t))
    else:
        x = 0.3 * rng.uniform(-1, 1, n)
    out = np.zeros((n, channels))
    for c in range(channels):
        out[:, c] = x if c == 0 else (0.4 * rng.uniform(-1, 1, n) if kind == "chirp" else 0.5 * x)
    b, a = int(round(before * rate)), int(round(after * rate))
    out[:b] = 0
    if a:
        out[n - a:] = 0
    return out


def write_pcm16(path, x, rate):
    """A 16-bit PCM WAV of the (frames, channels) float signal x, without soundfile."""
    q = np.clip(np.rint(x * 32768), -32768, 32767).astype("<i2")
    with wave.open(path, "wb") as w:
        w.setnchannels(x.shape[1])
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(q.tobytes())


def write(path, x, rate, subtype="PCM_16", fmt="WAV"):
    if sf is not None:
        sf.write(path, x, rate, subtype=subtype, format=fmt)
    elif (fmt, subtype) == ("WAV", "PCM_16"):
        write_pcm16(path, x, rate)
    else:
        raise ImportError("writing %s %s needs soundfile" % (fmt, subtype))


def write_all(folder, extra=0):
    """Writes FILES, a manifest.json (relative paths) and `extra` more 16 kHz utterances;
    without soundfile, only the files of FILES that are 16-bit WAV."""
    os.makedirs(folder, exist_ok=True)
    lines = []
    for i, (name, (rate, ch, sub, secs, before, after, kind, text)) in enumerate(FILES.items()):
        x = signal(rate, ch, secs, before, after, kind, seed=i)
        fmt = {"wav": "WAV", "flac": "FLAC", "ogg": "OGG"}[name.rsplit(".", 1)[1]]
        if sf is None and (fmt, sub) != ("WAV", "PCM_16"):
            continue
        write(os.path.join(folder, name), x, rate, sub, fmt)
        lines.append({"audio_filepath": name, "duration": secs, "text": text})
    rng = np.random.default_rng(7)
    for k in range(extra):
        secs = float(rng.uniform(1.0, 4.0))
        name = "utt%05d.wav" % k
        x = signal(16000, 1, secs, 0.1, 0.1, ["tone", "chirp", "noise"][k % 3], seed=100 + k)
        write(os.path.join(folder, name), x, 16000)
        lines.append({"audio_filepath": name, "duration": round(secs, 4), "text": "utterance %d" % k})
    with open(os.path.join(folder, "manifest.json"), "w") as f:
        for e in lines:
            f.write(json.dumps(e) + "\n")
    return lines


if __name__ == "__main__":
    write_all(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 0)
