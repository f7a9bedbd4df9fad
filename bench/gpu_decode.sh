#!/usr/bin/env bash
# bench/gpu_decode.sh BUILD_DIR OUT_DIR: issue 8's two remaining benchmarks, written to OUT_DIR.
# (c) the seed pipeline served from the decoded-image cache: a copy of
#     tests/fixtures/pipelines/seed_training_sharding.py with cache_size=256 (MB) on
#     decoders.image, Fashion-MNIST training JPEGs (scripts/make-data), batch 200 per GPU, 16
#     threads per GPU, 4 epochs (epoch 0 decodes and fills the cache, epochs 1-3 are hits), on GPU 0
#     and on GPUs 0,1;
# (b) the ImageNet-style pipeline of bench/gpu_pipeline.sh (decoders.image_random_crop mixed ->
#     resize 224 -> crop_mirror_normalize FLOAT16 CHW, random mirror) over the dali_extra photos
#     x500, batch 128, GPU 0, 3 epochs.
set -uo pipefail
build=${1:?usage: bench/gpu_decode.sh BUILD_DIR OUT_DIR}
out=${2:?usage: bench/gpu_decode.sh BUILD_DIR OUT_DIR}
tool=$build/sluice
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
root=$src/tests/fixtures/dali_extra/jpeg
: >"$out/photos.txt"
for k in $(seq 500); do
    i=0
    for f in "$root"/*.jpg; do echo "$(basename "$f") $i" >>"$out/photos.txt"; i=$((i + 1)); done
done
cat >"$out/imagenet.py" <<'PY'
def imagenet(file_root, file_list):
    jpegs, labels = fn.readers.file(file_root=file_root, file_list=file_list, random_shuffle=True)
    images = fn.decoders.image_random_crop(jpegs, device="mixed", output_type=types.RGB)
    images = fn.resize(images, resize_x=224, resize_y=224)
    coin = fn.random.coin_flip(probability=0.5)
    images = fn.crop_mirror_normalize(images, dtype=types.FLOAT16, output_layout="CHW",
                                      mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375],
                                      mirror=coin)
    return images, labels
PY
echo "== ImageNet-style pipeline, GPU 0, batch 128"
timeout 60 "$tool" run "$out/imagenet.py" --devices 0 --batch-size 128 --epochs 3 --threads 16 \
    --json --arg file_root="$root" --arg file_list="$out/photos.txt" 2>&1 |
    tee "$out/imagenet_gpu1.json"

timeout 90 scripts/make-data "$tool" "$out/data" >"$out/make-data.log" 2>&1 ||
    { tail -5 "$out/make-data.log"; exit 1; }
sed 's/output_type=types.GRAY)/output_type=types.GRAY, cache_size=256)/' \
    "$src/tests/fixtures/pipelines/seed_training_sharding.py" >"$out/seed_cached.py"
grep -q cache_size "$out/seed_cached.py" || { echo "seed copy lacks cache_size"; exit 1; }
for devs in 0 0,1; do
    n=$(( ${#devs} / 2 + 1 ))
    echo "== seed pipeline from the cache, GPUs $devs, batch $((200 * n)) global"
    timeout 40 "$tool" run "$out/seed_cached.py" --devices "$devs" --batch-size $((200 * n)) \
        --epochs 4 --threads 16 --json --arg data_path="$out/data/training" --arg image_size=28 \
        --arg num_classes=10 2>&1 | tee "$out/seed_cached_gpus$n.json"
done
