#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The ASR pipeline of examples/asr_pipeline.py (NeMo's preprocessing as written for DALI) through
# `sluice run` (and its device="gpu" variant, on a CPU device): WAV files made here with Python's wave module (16 kHz, and one at 8 kHz that the
# reader resamples), a NeMo manifest; the dumped features, lengths and indices are checked
# against numpy (python/tests/audio_ref.py), the padding against the lengths; a checkpoint of the
# shuffled reader resumes where it stopped.
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
py=/usr/bin/python3
src=${SL_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
"$tool" ops --names | grep -x readers.nemo_asr > /dev/null || fail "no readers.nemo_asr"

"$py" - "$work" <<'PY' || fail "making the audio"
import json, sys, wave
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(1)
with open(d + "/manifest.json", "w") as m:
    for k, (rate, secs) in enumerate([(16000, 1.3), (16000, 0.7), (8000, 1.0), (16000, 2.1),
                                      (16000, 0.35)]):
        n = int(rate * secs)
        t = np.arange(n) / rate
        x = 0.4 * np.sin(2 * np.pi * (200 + 150 * k) * t) + 0.05 * rng.normal(size=n)
        x[: n // 10] = 0
        pcm = np.clip(np.round(x * 32767), -32768, 32767).astype("<i2")
        with wave.open("%s/u%d.wav" % (d, k), "wb") as w:
            w.setnchannels(1), w.setsampwidth(2), w.setframerate(rate)
            w.writeframes(pcm.tobytes())
        m.write(json.dumps({"audio_filepath": "u%d.wav" % k, "duration": secs,
                            "text": "utterance %d" % k}) + "\n")
PY

"$tool" run "$src/examples/asr_pipeline.py" --arg manifest="$work/manifest.json" --batch-size 2 \
    --json --dump "$work/dump" > "$work/j" 2> "$work/e" || fail "run: $(cat "$work/e")"
# the GPU variant's text on a CPU device (.gpu() an alias, the CPU runs): the same features
"$tool" run "$src/examples/asr_pipeline.py" --arg manifest="$work/manifest.json" --batch-size 2 \
    --arg device=gpu --devices cpu --dump "$work/dump_gpu" > /dev/null 2> "$work/e" ||
    fail "run, device=gpu: $(cat "$work/e")"
for f in "$work"/dump/*.npy; do
    cmp -s "$f" "$work/dump_gpu/$(basename "$f")" || fail "device=gpu text: $(basename "$f") differs"
done

# readers.nemo_asr's checkpoint: shuffled, stopped after step 3 and resumed, the same samples in
# the same places as one run through both epochs
run() { "$tool" run "$src/examples/asr_pipeline.py" --arg manifest="$work/manifest.json" \
    --arg shuffle=True --batch-size 2 --epochs 2 "$@" > /dev/null 2> "$work/e" ||
    fail "run $*: $(cat "$work/e")"; }
run --trace "$work/full"
run --trace "$work/first" --checkpoint "$work/ck" --checkpoint-at 3
run --trace "$work/rest" --resume "$work/ck"
[ "$(wc -l < "$work/full")" -eq 13 ] || fail "trace: $(cat "$work/full")"
diff <(sed -n 2,7p "$work/full") <(tail -n +2 "$work/first") > /dev/null || fail "before the checkpoint"
diff <(tail -n +8 "$work/full") <(tail -n +2 "$work/rest") > /dev/null || fail "after the resume"

PYTHONPATH="$src/python/tests" "$py" - "$work" <<'PY' || fail "the features"
import glob, json, sys, wave
import numpy as np
from audio_ref import asr_features
d = sys.argv[1]
j = json.load(open(d + "/j"))
assert j["epochs"][0]["steps"] == 3 and j["epochs"][0]["samples"] == 6, j["epochs"]
names = [o["name"] for o in j["outputs"]]
assert names == ["log", "log_len", "indices"], names
seen = set()
for f in sorted(glob.glob(d + "/dump/log_0_*.npy")):
    suffix = f[len(d + "/dump/log"):]
    feats = np.load(f)
    lens = np.load(d + "/dump/log_len" + suffix)
    idx = np.load(d + "/dump/indices" + suffix)
    assert feats.shape[1] == 64 and feats.dtype == np.float32
    for i in range(feats.shape[0]):
        k = int(idx[i, 0])
        with wave.open("%s/u%d.wav" % (d, k)) as w:
            rate = w.getframerate()
            x = np.frombuffer(w.readframes(w.getnframes()), "<i2") / 32768.0
        n = int(np.ceil(len(x) * 16000 / rate))
        frames = int(lens[i, 1])
        assert lens[i, 0] == 64 and frames == n // 160 + 1, (k, lens[i], n)
        assert not feats[i, :, frames:].any()
        if rate == 16000:
            want = asr_features(x)
            err = np.abs(feats[i, :, :frames] - want).max()
            assert err < 2e-3, (k, err)
        seen.add(k)
assert seen == {0, 1, 2, 3, 4}, seen
PY
echo "cli asr pipeline: ok"
