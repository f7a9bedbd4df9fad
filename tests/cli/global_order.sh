#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# --order global through the tool, on the Caffe2 fixture (256 records) as training and test set:
#  - `sluice run`: the same global batches (the keys of every step, in order) on cpu, cpu:2, cpu:3,
#    cpu:4 and under `mpirun -np 2 --devices cpu:2` (four shards in two processes), two epochs;
#  - `sluice train`: the per-epoch losses of cpu, cpu:2 and cpu:4 agree within 1e-5 (relative) and
#    the accuracies are equal; a checkpoint written on cpu:4 resumes on cpu:2 (and under mpirun)
#    with the losses of the uninterrupted cpu:4 run;
#  - --order takes dali or global only; a DALI-order checkpoint is refused in global order.
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
good=$(cd "$SL_FIXTURES/caffe2-fmnist-256" && pwd)
cat > "$work/pipe.py" <<'PY'
def pipe(data_path, num_shards, shard_id):
    jpegs, labels = fn.readers.caffe2(path=data_path, num_shards=num_shards, shard_id=shard_id,
                                      random_shuffle=True, name="r")
    images = fn.decoders.image(jpegs, output_type=types.GRAY)
    return fn.flip(images, horizontal=fn.random.coin_flip()), labels
PY
run() { "$tool" run "$work/pipe.py" --arg data_path="$good" --batch-size 24 --epochs 2 --order global "$@"; }
for d in cpu cpu:2 cpu:3 cpu:4; do
    run --devices "$d" --trace "$work/t.$d" > /dev/null 2> "$work/err" || fail "run $d: $(cat "$work/err")"
done
# under AddressSanitizer, Open MPI's own start-up allocations would be reported as leaks
mpi() {
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
        timeout 300 mpirun --oversubscribe --allow-run-as-root --bind-to none -x ASAN_OPTIONS -np "$@"
}
have_mpi=0
command -v mpirun > /dev/null && have_mpi=1
if [ $have_mpi = 1 ]; then
    mpi 2 "$tool" run "$work/pipe.py" --arg data_path="$good" --batch-size 24 --epochs 2 \
        --order global --devices cpu:2 --trace "$work/t.mpi" > /dev/null 2> "$work/err" ||
        fail "mpirun run: $(cat "$work/err")"
    cat "$work"/t.mpi.* > "$work/t.mpi"
fi
# the keys of each step in global order: sorted by (epoch, step, global device, slot)
"$py" - "$work" $have_mpi <<'PY'
import sys
work, have_mpi = sys.argv[1], sys.argv[2] == "1"
def steps(path):
    rows = []
    for line in open(path):
        if line.startswith("#"):
            continue
        e, s, d, slot, key = line.rstrip("\n").split("\t")
        rows.append((int(e), int(s), int(d), int(slot), key))
    rows.sort()
    return [(e, s, k) for e, s, d, slot, k in rows]
ref = steps(work + "/t.cpu")
assert len(ref) == 2 * 11 * 24, len(ref)
for name in ["cpu:2", "cpu:3", "cpu:4"] + (["mpi"] if have_mpi else []):
    assert steps(work + "/t." + name) == ref, name + " gives other global batches than cpu"
for ep in (0, 1):
    keys = [k for e, s, k in ref if e == ep]
    assert len(set(keys[:256])) == 256, "epoch %d repeats a record" % ep
PY

# ---- training
mkdir "$work/data"
ln -s "$good" "$work/data/training"
ln -s "$good" "$work/data/testing"
train() { "$tool" train --data "$work/data" --epochs 2 --batch-size 32 --hidden 64 --order global "$@"; }
for d in cpu cpu:2 cpu:4; do
    train --devices "$d" --json > "$work/j.$d" 2> "$work/err" || fail "train $d: $(cat "$work/err")"
done
train --devices cpu:4 --epochs 1 --checkpoint "$work/ck" > /dev/null 2> "$work/err" ||
    fail "train --checkpoint: $(cat "$work/err")"
train --devices cpu:2 --resume "$work/ck" --json > "$work/j.resumed" 2> "$work/err" ||
    fail "train --resume on cpu:2: $(cat "$work/err")"
if [ $have_mpi = 1 ]; then
    mpi 2 "$tool" train --data "$work/data" --epochs 2 --batch-size 32 --hidden 64 --order global \
        --devices cpu --resume "$work/ck" --json > "$work/j.mpi" 2> "$work/err" ||
        fail "mpirun train --resume: $(cat "$work/err")"
fi
"$py" - "$work" $have_mpi <<'PY'
import json, sys
work, have_mpi = sys.argv[1], sys.argv[2] == "1"
def epochs(name):
    return {e["epoch"]: (e["loss"], e["accuracy"]) for e in json.load(open(work + "/j." + name))["epochs"]}
ref = epochs("cpu")
assert sorted(ref) == [0, 1], ref
def close(a, b):
    return abs(a - b) <= 1e-5 * abs(b)
for name in ["cpu:2", "cpu:4", "resumed"] + (["mpi"] if have_mpi else []):
    got = epochs(name)
    for ep, (loss, acc) in got.items():
        assert close(loss, ref[ep][0]), (name, ep, loss, ref[ep][0])
        assert acc == ref[ep][1], (name, ep, acc, ref[ep][1])
    assert name in ("resumed", "mpi") or sorted(got) == [0, 1], (name, got)
    assert name not in ("resumed", "mpi") or sorted(got) == [1], (name, got)
PY

# ---- refused
if "$tool" run "$work/pipe.py" --arg data_path="$good" --order random > /dev/null 2> "$work/err"; then
    fail "--order random was accepted"
fi
grep -q "order dali or global, not 'random'" "$work/err" || fail "--order random: $(cat "$work/err")"
"$tool" train --data "$work/data" --epochs 1 --batch-size 32 --hidden 64 --devices cpu:2 \
    --checkpoint "$work/dali.ck" > /dev/null 2>&1 || fail "train in DALI's order"
if train --devices cpu:2 --resume "$work/dali.ck" > /dev/null 2> "$work/err"; then
    fail "a DALI-order checkpoint resumed in global order"
fi
grep -q "dali.ck was written in DALI's order; this run is in global order" "$work/err" ||
    fail "DALI checkpoint in global order: $(cat "$work/err")"
echo "global_order: ok"
