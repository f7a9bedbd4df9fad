#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/gpu_imagenet.sh BUILD_DIR OUT_DIR [hw_decoder_load ...]: the ImageNet-style pipeline of
# DALI's rn50 decoder benchmark (docs/dali.md, section 7: decoders.image_random_crop mixed ->
# resize 224x224 -> crop_mirror_normalize FLOAT16 CHW, random mirror) over the DALI_extra photos
# x2000 (8000-image epochs: shorter ones vary too much from run to run), batch 128, GPU 0, 3
# epochs, once per hw_decoder_load given (default: 0.65 1.0 0), and once with every image decoded
# on the CPU pool (cpu_decode_max_pixels large). One JSON line per run in
# OUT_DIR/imagenet_*.json. PHOTOS=DIR takes the photos from DIR instead (bench/shrink_jpegs writes
# them at ImageNet's size); REPEAT=N repeats each N times instead of 2000; EPOCHS=N runs N epochs
# instead of 3 (epoch 0 includes the start-up; later ones differ by up to 30% with the crops the
# fixed seed draws, the same in every run); ARGS=", name=value..." adds decoder arguments;
# NO_CPU=1 skips the CPU-pool-only run.
set -uo pipefail
build=${1:?usage: bench/gpu_imagenet.sh BUILD_DIR OUT_DIR [hw_decoder_load ...]}
out=${2:?usage: bench/gpu_imagenet.sh BUILD_DIR OUT_DIR [hw_decoder_load ...]}
shift 2
loads=("$@")
[ ${#loads[@]} -gt 0 ] || loads=(0.65 1.0 0)
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
root=${PHOTOS:-$src/tests/fixtures/dali_extra/jpeg}
: >"$out/photos.txt"
for k in $(seq "${REPEAT:-2000}"); do
    i=0
    for f in "$root"/*.jpg; do echo "$(basename "$f") $i" >>"$out/photos.txt"; i=$((i + 1)); done
done
pipeline() { # decoder arguments
    cat <<PY
def imagenet(file_root, file_list):
    jpegs, labels = fn.readers.file(file_root=file_root, file_list=file_list, random_shuffle=True)
    images = fn.decoders.image_random_crop(jpegs, device="mixed", output_type=types.RGB$1)
    images = fn.resize(images, resize_x=224, resize_y=224)
    coin = fn.random.coin_flip(probability=0.5)
    images = fn.crop_mirror_normalize(images, dtype=types.FLOAT16, output_layout="CHW",
                                      mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375],
                                      mirror=coin)
    return images, labels
PY
}
run() { # name, decoder arguments
    pipeline "$2" >"$out/$1.py"
    echo "== $1 ($2)"
    timeout 60 "$build/sluice" run "$out/$1.py" --devices 0 --batch-size 128 --epochs "${EPOCHS:-3}" \
        --threads "${THREADS:-$(nproc)}" --json --arg file_root="$root" \
        --arg file_list="$out/photos.txt" 2>&1 | tee "$out/$1.json"
}
for l in "${loads[@]}"; do run "imagenet_hw$l" ", hw_decoder_load=$l${ARGS:-}"; done
[ -n "${NO_CPU:-}" ] || run imagenet_cpu ", cpu_decode_max_pixels=100000000"
