#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: slow
# `sluice train` on the real Fashion-MNIST, on the CPU:
#  - the seed's model and SGD: test accuracy per epoch within 0.02 of the JAX reference
#    (docs/dali.md, section 1: 0.6530 0.7255 0.7533 0.7709 0.7806);
#  - --optimizer adam reaches >= 0.87 in 5 epochs;
#  - --resume from the checkpoint written after epoch 2 reproduces epochs 3-5 exactly;
#  - the printed lines are the tutorial's ("Epoch N: T s, R samples/s", "Test set accuracy A");
#  - malformed numbers in options are refused (exit 2, naming the option and the value).
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$SL_SOURCE_DIR/scripts/make-data" "$tool" "$work/data" > /dev/null
train() { "$tool" train --data "$work/data" --devices cpu "$@"; }

train --epochs 5 --metrics "$work/sgd.jsonl" --checkpoint "$work/ck.{epoch}" > "$work/out" ||
    fail "train: $(cat "$work/out")"
[ -f "$work/ck.0" ] && [ -f "$work/ck.4" ] || fail "per-epoch checkpoints"
cat "$work/out"
grep -qE '^Epoch 4: [0-9.]+ s, [0-9]+ samples/s$' "$work/out" || fail "epoch line"
grep -qE '^Test set accuracy 0\.[0-9]{4}$' "$work/out" || fail "accuracy line"
python3 - "$work/sgd.jsonl" <<'PY'
import json, sys
ref = [0.6530, 0.7255, 0.7533, 0.7709, 0.7806]
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["epoch"] for r in rows] == [0, 1, 2, 3, 4], rows
for r, want in zip(rows, ref):
    if abs(r["accuracy"] - want) > 0.02:
        sys.exit("epoch %d: accuracy %.4f, JAX %.4f" % (r["epoch"], r["accuracy"], want))
    assert r["seconds"] > 0 and r["samples_per_s"] > 0 and r["loss"] > 0, r
print("sgd ok:", " ".join("%.4f" % r["accuracy"] for r in rows))
PY

train --epochs 5 --optimizer adam --json > "$work/adam.json"
python3 - "$work/adam.json" <<'PY'
import json, sys
acc = json.load(open(sys.argv[1]))["epochs"][-1]["accuracy"]
if acc < 0.87:
    sys.exit("adam: final accuracy %.4f < 0.87" % acc)
print("adam ok: %.4f" % acc)
PY

# the checkpoint written after the second epoch (epoch 1), resumed to the end
head -n 2 "$work/sgd.jsonl" > "$work/resumed.jsonl"
train --epochs 5 --resume "$work/ck.1" --metrics "$work/resumed.jsonl" > /dev/null
python3 - "$work/sgd.jsonl" "$work/resumed.jsonl" <<'PY'
import json, sys
full = [json.loads(l) for l in open(sys.argv[1])]
part = [json.loads(l) for l in open(sys.argv[2])]
assert [r["epoch"] for r in part] == [0, 1, 2, 3, 4], part
for a, b in zip(full, part):
    if (a["loss"], a["accuracy"]) != (b["loss"], b["accuracy"]):
        sys.exit("epoch %d: resumed %s != uninterrupted %s" % (a["epoch"], b, a))
print("resume ok: epochs 3-5 identical")
PY

# a checkpoint written by `sluice run` has no model: a clear error
if "$tool" train --data "$work/data" --devices cpu --resume /nonexistent/ck 2> "$work/err"; then
    fail "a missing checkpoint was accepted"
fi
grep -q "/nonexistent/ck" "$work/err" || fail "error: $(cat "$work/err")"
# a malformed number is refused before anything runs: exit 2, naming the option and the value
# (these used to be read with atoi/strtof: --lr abc trained with a learning rate of 0)
bad_option() { # command, option, value
    local rc=0 data=(--data "$work/data")
    [ "$1" = train ] || data=()
    "$tool" "$1" "${data[@]}" --devices cpu "$2" "$3" > /dev/null 2> "$work/err" || rc=$?
    [ "$rc" = 2 ] || fail "$1 $2 $3: exit $rc"
    grep -qF -- "$2 wants" "$work/err" && grep -qF -- "'$3'" "$work/err" ||
        fail "$1 $2 $3: $(cat "$work/err")"
}
for opt in "--lr abc" "--lr -1" "--weight-decay nan" "--epochs 5x" "--epochs 0" \
    "--batch-size 1e3" "--seed -3" "--threads 2000"; do
    bad_option train $opt
done
for opt in "--prefetch 0" "--batch-size x" "--dump-steps -1" "--seed 1.5"; do
    bad_option run $opt
done
echo "train_seed: all checks passed"
