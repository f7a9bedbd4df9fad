#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `sluice run` honours a pipeline file's @pipeline_def settings (small LMDB fixture, 256 records):
#  - batch_size=4 is per pipeline: on cpu:2 batch_per_device is 4 (8 a step, 32 steps), on cpu 4;
#  - --batch-size 8 (global) wins and says "--batch-size 8 overrides the pipeline's batch_size=4";
#  - seed=11 gives the same trace as --seed 11 and not that of --seed 0 (which says it overrides);
#  - num_threads / prefetch_queue_depth flags say they override; device_id=None runs on the CPU.
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
data="$SL_FIXTURES/caffe2-fmnist-256"
cat > "$work/p.py" <<'PY'
@pipeline_def(batch_size=4, num_threads=2, seed=11, prefetch_queue_depth=3, device_id=None)
def p(data_path, num_shards, shard_id):
    jpegs, labels = fn.readers.caffe2(path=data_path, random_shuffle=True, name="r",
                                      num_shards=num_shards, shard_id=shard_id)
    images = fn.decoders.image(jpegs, device="mixed", output_type=types.GRAY)
    return images, labels
PY
field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

"$tool" run "$work/p.py" --arg data_path="$data" --devices cpu:2 --json > "$work/j" 2> "$work/e"
[ "$(field "$work/j" 'd["batch_per_device"], d["epochs"][0]["steps"]')" = "(4, 32)" ] ||
    fail "decorator batch_size on cpu:2: $(cat "$work/j")"
"$tool" run "$work/p.py" --arg data_path="$data" --json > "$work/j" 2> "$work/e"
[ "$(field "$work/j" 'd["batch_per_device"], d["epochs"][0]["steps"]')" = "(4, 64)" ] ||
    fail "decorator batch_size on cpu: $(cat "$work/j")"
[ "$(field "$work/j" 'd["outputs"][0]["device"]')" = cpu ] || fail "device_id=None: $(cat "$work/j")"
! grep -q overrides "$work/e" || fail "no flag given, yet: $(cat "$work/e")"

"$tool" run "$work/p.py" --arg data_path="$data" --devices cpu:2 --batch-size 8 --json \
    > "$work/j" 2> "$work/e"
grep -q "\-\-batch-size 8 overrides the pipeline's batch_size=4" "$work/e" || fail "$(cat "$work/e")"
[ "$(field "$work/j" 'd["batch_per_device"], d["epochs"][0]["steps"]')" = "(4, 32)" ] ||
    fail "--batch-size 8 on cpu:2: $(cat "$work/j")"
"$tool" run "$work/p.py" --arg data_path="$data" --batch-size 8 --json > "$work/j" 2> /dev/null
[ "$(field "$work/j" 'd["batch_per_device"]')" = 8 ] || fail "--batch-size 8 on cpu"

"$tool" run "$work/p.py" --arg data_path="$data" --trace "$work/t-deco" 2> /dev/null
"$tool" run "$work/p.py" --arg data_path="$data" --trace "$work/t-11" --seed 11 2> /dev/null
"$tool" run "$work/p.py" --arg data_path="$data" --trace "$work/t-0" --seed 0 --threads 1 \
    --prefetch 1 2> "$work/e"
cmp -s "$work/t-deco" "$work/t-11" || fail "the decorator's seed=11 is not --seed 11"
! cmp -s "$work/t-deco" "$work/t-0" || fail "--seed 0 gave the decorator's seed's order"
for m in "--seed 0 overrides the pipeline's seed=11" \
    "--threads 1 overrides the pipeline's num_threads=2" \
    "--prefetch 1 overrides the pipeline's prefetch_queue_depth=3"; do
    grep -qF -- "$m" "$work/e" || fail "no '$m' in: $(cat "$work/e")"
done
grep -q "per pipeline" < <("$tool" run --help) || fail "--help does not say batch_size is per pipeline"
echo "run_decorator: all checks passed"
