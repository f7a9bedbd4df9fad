#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: slow
# The seed's training pipeline through `sluice run` on the converted Fashion-MNIST (60000 records):
#  - cpu:3, batch 200, 2 epochs: the trace is every pipeline's shard, then the next, each key once
#    per shard pass (DALI's reader rules), and the dumped images are pixel/255 of the decoded JPEGs
#    of their keys;
#  - the same outputs (byte-equal dumps) for 1 and 8 threads and prefetch depth 1 and 4;
#  - checkpoint after step 437 (inside the second epoch), resume, finish epoch 3: the two traces
#    together equal the uninterrupted run's, key for key.
set -euo pipefail
tool=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
check() { python3 "$here/seedcheck.py" "$@"; }
src=/usr/share/datasets/fashion-mnist

"$SL_SOURCE_DIR/scripts/make-data" "$tool" "$work/data" > /dev/null
seed="$SL_SOURCE_DIR/tools/pipelines/seed_training_sharding.py"
args=(--arg data_path="$work/data/training" --arg image_size=28 --arg num_classes=10)

# the seed pipeline, plus its decoded uint8 images as a third output for the dump check
sed -e 's/output_map=\["images", "labels"\]/output_map=["images", "labels", "decoded"]/' \
    -e 's/^    images = fn.decoders.image(\(.*\))$/    images = fn.decoders.image(\1)\n    decoded = images/' \
    -e 's/^    return images, labels$/    return images, labels, decoded/' "$seed" > "$work/seed3.py"
grep -q "decoded = images" "$work/seed3.py" || fail "could not derive the dump pipeline"

"$tool" run "$seed" "${args[@]}" --devices cpu:3 --batch-size 200 --epochs 2 \
    --trace "$work/trace" 2> "$work/log" || { cat "$work/log"; fail "run"; }
grep -q "Epoch 1:" "$work/log" || fail "no epoch lines: $(cat "$work/log")"
check trace "$work/trace" 60000 3
[ "$(grep -vc "^#" "$work/trace")" -eq $(( (304 + 303) * 66 * 3 )) ] || fail "trace length"

"$tool" run "$work/seed3.py" "${args[@]}" --devices cpu:3 --batch-size 200 --epochs 1 \
    --trace "$work/trace3" --dump "$work/dump" --dump-steps 2 2> /dev/null
check dump "$work/dump" "$src/train-images-idx3-ubyte.gz" "$work/trace3"

for cfg in "1 1" "8 1" "1 4" "8 4"; do
    set -- $cfg
    "$tool" run "$seed" "${args[@]}" --devices cpu:3 --batch-size 200 --epochs 2 \
        --threads "$1" --prefetch "$2" --dump "$work/d-$1-$2" --dump-steps 3 2> /dev/null
done
check same "$work/d-1-1" "$work/d-8-1"
check same "$work/d-1-1" "$work/d-1-4"
check same "$work/d-1-1" "$work/d-8-4"

"$tool" run "$seed" "${args[@]}" --devices cpu:3 --batch-size 200 --epochs 3 \
    --trace "$work/full" 2> /dev/null
"$tool" run "$seed" "${args[@]}" --devices cpu:3 --batch-size 200 --epochs 3 \
    --trace "$work/part" --checkpoint "$work/ck" --checkpoint-at 437 2> "$work/log1"
grep -q "checkpoint after 437 steps (epoch 1 step 132)" "$work/log1" || fail "$(cat "$work/log1")"
"$tool" run "$seed" "${args[@]}" --devices cpu:3 --batch-size 200 --epochs 3 \
    --trace "$work/part" --resume "$work/ck" 2> /dev/null
cmp -s "$work/full" "$work/part" || fail "interrupted + resumed trace differs from the full run"
echo "resume ok: $(wc -l < "$work/full") trace lines identical"

# a damaged checkpoint is refused with a clear error
head -c 100 "$work/ck" > "$work/bad"
if "$tool" run "$seed" "${args[@]}" --devices cpu:3 --resume "$work/bad" 2> "$work/err"; then
    fail "a truncated checkpoint was accepted"
fi
grep -q "truncated" "$work/err" || fail "error: $(cat "$work/err")"
echo "seed_run: all checks passed"
