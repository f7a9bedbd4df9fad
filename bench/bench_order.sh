#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What global order costs: the seed's training pipeline (decode, normalise, one-hot; shuffled,
# batch 200) on the Fashion-MNIST training LMDB through `sluice run` in DALI's order and in global
# order, interleaved RUNS times, on DEVICES (default cpu; `all` on a GPU machine), epochs 1..E-1
# (epoch 0 warms the page cache); then the reader alone (the same pipeline returning the encoded
# records: its cost per record is the order's). Prints a Markdown table of medians.
# usage (repository root, after `make build` and `make data`): bench/bench_order.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
RUNS=${RUNS:-3}
EPOCHS=${EPOCHS:-3}
DEVICES=${DEVICES:-cpu}
PY=${PY:-/usr/bin/python3}
tool=$BUILD/sluice
[ -x "$tool" ] || { echo "run: make build" >&2; exit 1; }
[ -f data/training/data.mdb ] || { echo "run: make data" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
seed=tools/pipelines/seed_training_sharding.py
cat > "$work/reader.py" <<'PY'
def pipe(data_path, num_shards, shard_id):
    jpegs, labels = fn.readers.caffe2(path=data_path, random_shuffle=True, name="r",
                                      num_shards=num_shards, shard_id=shard_id)
    return jpegs, labels
PY
for i in $(seq "$RUNS"); do
    for what in seed reader; do
        for order in dali global; do
            args=(--arg image_size=28 --arg num_classes=10)
            pipe=$seed
            [ $what = reader ] && pipe=$work/reader.py && args=()
            "$tool" run "$pipe" --devices "$DEVICES" --arg data_path=data/training "${args[@]}" \
                --batch-size 200 --epochs "$EPOCHS" --order $order --json \
                > "$work/$what.$order.$i.json" 2> "$work/err" ||
                { cat "$work/err" >&2; exit 1; }
        done
    done
done
"$PY" - "$work" "$RUNS" "$DEVICES" <<'PY'
import json, statistics, sys
work, runs, devices = sys.argv[1], int(sys.argv[2]), sys.argv[3]
print("| pipeline (%s) | DALI's order, samples/s | global order | global / DALI |" % devices)
print("|---|---|---|---|")
for what in ("seed", "reader"):
    rate = {}
    for order in ("dali", "global"):
        r = []
        for i in range(1, runs + 1):
            ep = json.load(open("%s/%s.%s.%d.json" % (work, what, order, i)))["epochs"][1:]
            r += [e["samples_per_s"] for e in ep]
        rate[order] = statistics.median(r)
    print("| %s | %.0f | %.0f | %.3f |" % ("the seed's training pipeline" if what == "seed"
                                          else "the reader alone", rate["dali"], rate["global"],
                                          rate["global"] / rate["dali"]))
PY
