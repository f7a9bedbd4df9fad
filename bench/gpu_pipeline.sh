#!/usr/bin/env bash
# bench/gpu_pipeline.sh BUILD_DIR OUT_DIR: issue 8's benchmarks on a GPU machine, written to OUT_DIR.
# (a) the seed pipeline (tests/fixtures/pipelines/seed_training_sharding.py, unchanged) over the
#     Fashion-MNIST training set as Caffe2 JPEGs (scripts/make-data), batch 200 per GPU, 16 CPU
#     threads per GPU, 3 epochs, on GPU 0 and on GPUs 0,1 (`sluice run --json`), and the peer:
#     PyTorch DataLoader, 16 workers, PIL, on the same JPEG bytes (bench/peer_gpu_pipeline.py);
# (b) an ImageNet-style pipeline (decoders.image_random_crop mixed -> resize 224x224 ->
#     crop_mirror_normalize FLOAT16 CHW with a random mirror) over the dali_extra photos repeated
#     (2000 files), batch 128 on GPU 0.
set -uo pipefail
build=${1:?usage: bench/gpu_pipeline.sh BUILD_DIR OUT_DIR}
out=${2:?usage: bench/gpu_pipeline.sh BUILD_DIR OUT_DIR}
tool=$build/sluice
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
scripts/make-data "$tool" "$out/data" >"$out/make-data.log" 2>&1 || { cat "$out/make-data.log"; exit 1; }

seed=$src/tests/fixtures/pipelines/seed_training_sharding.py
for devs in 0 0,1; do
    n=$(( ${#devs} / 2 + 1 ))
    echo "== seed pipeline, GPUs $devs, batch $((200 * n)) global"
    "$tool" run "$seed" --devices "$devs" --batch-size $((200 * n)) --epochs 3 --threads 16 \
        --json --arg data_path="$out/data/training" --arg image_size=28 --arg num_classes=10 \
        2>&1 | tee "$out/seed_gpus$n.json"
done
echo "== peer: PyTorch DataLoader, 16 workers, PIL"
python3 "$src/bench/peer_gpu_pipeline.py" "$out/data/training/data.mdb" 2>&1 | tee "$out/peer.txt"

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
"$tool" run "$out/imagenet.py" --devices 0 --batch-size 128 --epochs 3 --threads 16 --json \
    --arg file_root="$root" --arg file_list="$out/photos.txt" 2>&1 | tee "$out/imagenet_gpu1.json"
