#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `sluice train` scores the validation set's samples once each: with a batch that does not divide
# the test set (256 records in batches of 200: the second batch is 56 records and 144 repeats of
# the last, DALI's FILL policy), the accuracy is that of the 256 records, the same as in batches
# of 256 or 64 that divide it. --lr 0 keeps the model at its (seeded) initial weights, so the
# three runs score one and the same model.
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
mkdir "$work/data"
ln -s "$SL_FIXTURES/caffe2-fmnist-256" "$work/data/training"
ln -s "$SL_FIXTURES/caffe2-fmnist-256" "$work/data/testing"
for b in 256 200 64; do
    "$tool" train --data "$work/data" --devices cpu --epochs 1 --hidden 16 --lr 0 --seed 5 \
        --batch-size $b --json > "$work/j$b" 2> "$work/e$b" || fail "batch $b: $(cat "$work/e$b")"
done
python3 - "$work/j256" "$work/j200" "$work/j64" << 'PY' || fail "accuracies differ"
import json, sys
acc = [json.load(open(p))["epochs"][0]["accuracy"] for p in sys.argv[1:]]
print("accuracy with batches of 256, 200, 64:", acc)
n = round(acc[0] * 256)
assert abs(acc[0] * 256 - n) < 1e-3, "accuracy %s is no count out of 256" % acc[0]
assert 0 < n < 256, "the initial model scores %d of 256: the check would see nothing" % n
assert all(abs(a - acc[0]) < 1e-9 for a in acc), acc
PY
