#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/gpu_decode.sh BUILD_DIR OUT_DIR: the decoded-image cache and the ImageNet-style pipeline on
# a GPU machine, written to OUT_DIR.
# (c) the seed pipeline served from the decoded-image cache: a copy of
#     tools/pipelines/seed_training_sharding.py with cache_size=256 (MB) on
#     decoders.image, Fashion-MNIST training JPEGs (scripts/make-data), batch 200 per GPU, 16
#     threads per GPU, 4 epochs (epoch 0 decodes and fills the cache, epochs 1-3 are hits), on GPU 0
#     and on GPUs 0,1;
# (b) the ImageNet-style pipeline (bench/gpu_imagenet.sh at hw_decoder_load 0.65: decoders.
#     image_random_crop mixed -> resize 224 -> crop_mirror_normalize FLOAT16 CHW, random mirror)
#     over the dali_extra photos x500, batch 128, GPU 0, 3 epochs.
set -uo pipefail
build=${1:?usage: bench/gpu_decode.sh BUILD_DIR OUT_DIR}
out=${2:?usage: bench/gpu_decode.sh BUILD_DIR OUT_DIR}
tool=$build/sluice
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
if [ -z "${NO_IMAGENET:-}" ]; then # (b) -- gpu_e2e.sh runs it itself
    echo "== ImageNet-style pipeline, GPU 0, batch 128 (bench/gpu_imagenet.sh)"
    timeout 120 "$src/bench/gpu_imagenet.sh" "$build" "$out/imagenet" 0.65
fi

timeout 90 scripts/make-data "$tool" "$out/data" >"$out/make-data.log" 2>&1 ||
    { tail -5 "$out/make-data.log"; exit 1; }
sed 's/output_type=types.GRAY)/output_type=types.GRAY, cache_size=256)/' \
    "$src/tools/pipelines/seed_training_sharding.py" >"$out/seed_cached.py"
grep -q cache_size "$out/seed_cached.py" || { echo "seed copy lacks cache_size"; exit 1; }
for devs in 0 0,1; do
    n=$(( ${#devs} / 2 + 1 ))
    echo "== seed pipeline from the cache, GPUs $devs, batch $((200 * n)) global"
    timeout 40 "$tool" run "$out/seed_cached.py" --devices "$devs" --batch-size $((200 * n)) \
        --epochs 4 --threads 16 --json --arg data_path="$out/data/training" --arg image_size=28 \
        --arg num_classes=10 2>&1 | tee "$out/seed_cached_gpus$n.json"
done
