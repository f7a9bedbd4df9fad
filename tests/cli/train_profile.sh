#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `sluice train --profile` on the Caffe2 fixture (256 records as both training and test set): each
# epoch reports the time spent waiting for data and in training steps (which together stay within
# the epoch's seconds) and the training pipeline's per-stage op seconds, in --json and as text;
# without --profile the JSON keeps its plain fields only; --profile's start-up and teardown lines
# go to stderr; the validation time is reported per epoch.
# Also --math: an unknown mode is refused with the modes named, and tf32 on the CPU trains exactly as
# fp32 (the CPU backend computes in float32 whatever it says).
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir "$work/data"
ln -s "$SL_FIXTURES/caffe2-fmnist-256" "$work/data/training"
ln -s "$SL_FIXTURES/caffe2-fmnist-256" "$work/data/testing"
train() { "$tool" train --data "$work/data" --devices cpu --epochs 2 --batch-size 64 --hidden 32 "$@"; }

train --profile --json > "$work/p.json" || fail "train --profile --json: $(cat "$work/p.json")"
train --json > "$work/plain.json" || fail "train --json"
train --profile > "$work/p.txt" 2> "$work/p.err" || fail "train --profile: $(cat "$work/p.txt")"
grep -qE "^startup: [0-9.-]+ s from the process's start \(libraries, device discovery\), then training pipelines [0-9.]+ s, validation pipeline [0-9.]+ s, trainer [0-9.]+ s$" \
    "$work/p.err" || fail "start-up line: $(cat "$work/p.err")"
grep -qE '^teardown: trainer [0-9.]+ s, comms [0-9.]+ s, pipelines [0-9.]+ s; [0-9.-]+ s since the process started$' \
    "$work/p.err" || fail "teardown line: $(cat "$work/p.err")"
if train --math fp64 > "$work/m.txt" 2>&1; then fail "--math fp64 was accepted"; fi
grep -q 'unknown math mode "fp64" (fp32, tf32 or bf16)' "$work/m.txt" || fail "--math fp64: $(cat "$work/m.txt")"
train --json --math tf32 > "$work/tf32.json" || fail "train --math tf32"
grep -qE '^Profile: [0-9.]+ s waiting for data, [0-9.]+ s in training steps, -?[0-9.]+ s other; pipeline op seconds: reader [0-9.]+, decode [0-9.]+, other ops [0-9.]+; validation [0-9.]+ s$' \
    "$work/p.txt" || fail "profile line: $(cat "$work/p.txt")"
[ "$(grep -c '^Profile: ' "$work/p.txt")" = 2 ] || fail "one profile line per epoch"
python3 - "$work/p.json" "$work/plain.json" "$work/tf32.json" <<'PY'
import json, sys
prof = json.load(open(sys.argv[1]))["epochs"]
plain = json.load(open(sys.argv[2]))["epochs"]
assert len(prof) == 2, prof
for r in prof:
    for k in ("wait_s", "step_s", "reader_s", "decode_s", "ops_s", "eval_s"):
        assert k in r and r[k] >= 0, (k, r)
    assert r["step_s"] > 0, r
    assert r["wait_s"] + r["step_s"] <= r["seconds"] * 1.001 + 1e-4, r
# decoding is counted in the epoch it happens in: the pipeline runs ahead, so with 4 batches an
# epoch the second epoch's images may all be decoded during the first (seen under ASan, in parallel)
assert sum(r["decode_s"] for r in prof) > 0, prof
for r in plain:
    assert "wait_s" not in r and "step_s" not in r and "eval_s" not in r, r
# the profile does not change what is trained, nor does --math on the CPU
assert [(r["loss"], r["accuracy"]) for r in prof] == [(r["loss"], r["accuracy"]) for r in plain]
tf32 = json.load(open(sys.argv[3]))["epochs"]
assert [(r["loss"], r["accuracy"]) for r in tf32] == [(r["loss"], r["accuracy"]) for r in plain], tf32
print("train_profile ok:", prof)
PY
echo "train_profile: all checks passed"
