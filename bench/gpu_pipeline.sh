#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/gpu_pipeline.sh BUILD_DIR OUT_DIR: the GPU pipeline benchmarks, written to OUT_DIR.
# (a) the seed pipeline (tools/pipelines/seed_training_sharding.py, unchanged) over the
#     Fashion-MNIST training set as Caffe2 JPEGs (scripts/make-data), batch 200 per GPU, 16 CPU
#     threads per GPU, 3 epochs, on GPU 0 and on GPUs 0,1 (`sluice run --json`), and the peer:
#     PyTorch DataLoader, 16 workers, PIL, on the same JPEG bytes (bench/peer_gpu_pipeline.py);
# (b) an ImageNet-style pipeline (decoders.image_random_crop mixed -> resize 224x224 ->
#     crop_mirror_normalize FLOAT16 CHW with a random mirror) over the dali_extra photos repeated
#     (2000 files), batch 128 on GPU 0: bench/gpu_imagenet.sh at hw_decoder_load 0.65.
set -uo pipefail
build=${1:?usage: bench/gpu_pipeline.sh BUILD_DIR OUT_DIR}
out=${2:?usage: bench/gpu_pipeline.sh BUILD_DIR OUT_DIR}
tool=$build/sluice
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
scripts/make-data "$tool" "$out/data" >"$out/make-data.log" 2>&1 || { cat "$out/make-data.log"; exit 1; }

seed=$src/tools/pipelines/seed_training_sharding.py
for devs in 0 0,1; do
    n=$(( ${#devs} / 2 + 1 ))
    echo "== seed pipeline, GPUs $devs, batch $((200 * n)) global"
    "$tool" run "$seed" --devices "$devs" --batch-size $((200 * n)) --epochs 3 --threads 16 \
        --json --arg data_path="$out/data/training" --arg image_size=28 --arg num_classes=10 \
        2>&1 | tee "$out/seed_gpus$n.json"
done
echo "== peer: PyTorch DataLoader, 16 workers, PIL"
python3 "$src/bench/peer_gpu_pipeline.py" "$out/data/training/data.mdb" 2>&1 | tee "$out/peer.txt"

echo "== ImageNet-style pipeline, GPU 0, batch 128 (bench/gpu_imagenet.sh)"
"$src/bench/gpu_imagenet.sh" "$build" "$out/imagenet" 0.65
