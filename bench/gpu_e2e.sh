#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The seed end to end on a GPU machine, in one go: builds, runs the gpu-labelled tests, converts
# Fashion-MNIST, then times `sluice train` start to exit on 1 GPU, 2 GPUs (sharding and devices
# modes), 2 processes of one GPU each (mpirun), `make demo`, and the peers in the same run: the
# seed's JAX loop fed from NumPy arrays (JAX_REFERENCE, below) and PyTorch (DataLoader + the same
# MLP, bench/peer_torch_train.py --device cuda). Writes logs and a summary under OUT (default out/).
# Also: training from the decoded-image cache (a copy of the seed's training pipeline with
# cache_size=256), with --math tf32, with fewer decode threads, and the GPU pipeline benchmarks
# (bench/gpu_imagenet.sh, bench/gpu_decode.sh). Figures: bench/RESULTS.md, sections 5 and 6.
# usage (GPU machine, repo root): [FASHION_MNIST_DIR=DIR] [JAX_REFERENCE=DIR] [BUILD=DIR]
#     bench/gpu_e2e.sh [OUT]
# FASHION_MNIST_DIR: the four Fashion-MNIST IDX .gz files (default: Debian's, see scripts/make-data).
# JAX_REFERENCE: a folder holding jax_reference.py, the seed's model and loop in JAX over NumPy
# arrays (not part of this repository), run there as `python3 jax_reference.py one shard pmap`
# (1 GPU, sharding, pmap) with the .gz files linked into its data/. Without it, or without JAX, the
# JAX peer is skipped and the summary says so.
set -uo pipefail
out=${1:-out}
mkdir -p "$out"
out=$(cd "$out" && pwd)
b=${BUILD:-/tmp/b}
log() { echo "== $*" | tee -a "$out/summary.txt"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
nproc_=$(nproc)

log "machine: $(nvidia-smi -L | tr '\n' ' ') $(nproc) cores; $(date -u +%FT%TZ); commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
cmake -S . -B "$b" -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$out/configure.log" 2>&1
cmake --build "$b" -j "$nproc_" > "$out/build.log" 2>&1 || { log "build failed"; tail -30 "$out/build.log"; exit 1; }
cmake --build "$b" -j "$nproc_" --target export_jpegs shrink_jpegs >> "$out/build.log" 2>&1
log "build ok"
(cd "$b" && SL_REQUIRE_GPU=1 ctest -L gpu --output-on-failure > "$out/gpu-tests.log" 2>&1)
log "gpu tests: $(grep -E 'tests passed|tests failed' "$out/gpu-tests.log")"

scripts/make-data "$b/sluice" data > "$out/data.log" 2>&1 || { log "make-data failed"; cat "$out/data.log"; }

train() { # name, args...
    local name=$1
    shift
    local t0
    t0=$(now)
    "$b/sluice" train --data data "$@" --json > "$out/$name.json" 2> "$out/$name.err"
    local rc=$?
    log "$name (rc $rc, $(since "$t0") s start to exit): $(cat "$out/$name.json")"
}
train gpu1 --devices 0
train gpu2_sharding --devices 0,1 --mode sharding
train gpu2_devices --devices 0,1 --mode devices
# the decoded-image cache in training: the seed's training pipeline with cache_size=256 on its
# decoder (epoch 0 fills the cache, later epochs are hits); and the decode threads per pipeline
sed 's/output_type=types.GRAY)/output_type=types.GRAY, cache_size=256)/' \
    tools/pipelines/seed_training_sharding.py > "$out/seed_cached.py"
train gpu1_cached --devices 0 --train-pipeline "$out/seed_cached.py" --profile
train gpu2_cached --devices 0,1 --mode sharding --train-pipeline "$out/seed_cached.py" --profile
train gpu2_tf32 --devices 0,1 --mode sharding --math tf32
train gpu2_cached_tf32 --devices 0,1 --mode sharding --math tf32 --train-pipeline "$out/seed_cached.py"
for t in 8 12; do train "gpu2_threads$t" --devices 0,1 --mode sharding --threads $t; done
# start to exit again, three times each, with --profile's start-up and teardown lines (stderr)
for rep in 1 2 3; do
    train "startup_gpu1_$rep" --devices 0 --profile
    train "startup_gpu2_$rep" --devices 0,1 --mode sharding --profile
    grep -hE '^(startup|teardown):' "$out/startup_gpu1_$rep.err" "$out/startup_gpu2_$rep.err" \
        | tee -a "$out/summary.txt"
done
ngpu=$(nvidia-smi -L | wc -l)
if [ "$ngpu" -ge 4 ]; then
    train gpu4_sharding --devices 0,1,2,3 --mode sharding
    train gpu4_devices --devices 0,1,2,3 --mode devices
fi
# the pipeline alone, every epoch decoded: samples/s on 1 and all GPUs
for d in 0 all; do
    "$b/sluice" run tools/pipelines/seed_training_sharding.py --arg data_path=data/training \
        --arg image_size=28 --arg num_classes=10 --devices $d --epochs 3 --json \
        > "$out/run_$d.json" 2> /dev/null
    log "pipeline --devices $d: $(grep -o '"epochs": \[[^]]*\]' "$out/run_$d.json")"
done
# the GPU pipelines: the ImageNet-style one (hw_decoder_load variants, CPU only; 6000 images an
# epoch; 16 decode threads as on the one-GPU machine, and every core) over the DALI_extra photos and
# over the same photos at ImageNet's size (bench/shrink_jpegs), and the seed's from the cache
mkdir -p "$out/small"
"$b/shrink_jpegs" 200000 "$out/small" tests/fixtures/dali_extra/jpeg/*.jpg > /dev/null
for t in $(printf "%s\n" 16 "$nproc_" | sort -un); do # 16 and every core (once on 16 cores)
    REPEAT=1500 THREADS=$t bench/gpu_imagenet.sh "$b" "$out/imagenet$t" 0.65 0.9 0.5 \
        > "$out/imagenet$t.log" 2>&1
    log "imagenet, $t threads: $(grep -o '"pipeline": "[^"]*"\|"samples_per_s": [0-9.]*' "$out/imagenet$t.log" | tr '\n' ' ')"
    REPEAT=1500 THREADS=$t PHOTOS="$out/small" bench/gpu_imagenet.sh "$b" "$out/imagenet_small$t" \
        0.65 0.4 > "$out/imagenet_small$t.log" 2>&1
    log "imagenet at ImageNet's size, $t threads: $(grep -o '"pipeline": "[^"]*"\|"samples_per_s": [0-9.]*' "$out/imagenet_small$t.log" | tr '\n' ' ')"
done
NO_IMAGENET=1 bench/gpu_decode.sh "$b" "$out/decode" > "$out/decode.log" 2>&1
log "cache: $(grep -o '== .*\|"samples_per_s": [0-9.]*' "$out/decode.log" | tr '\n' ' ')"
cmake --build "$b" -j "$nproc_" --target bench_train_gpu >> "$out/build.log" 2>&1 &&
    "$b/bench_train_gpu" 2000 > "$out/bench_train_gpu.log" 2>&1
log "bench_train_gpu: $(grep -E 'step|all-reduce|scaling|efficiency' "$out/bench_train_gpu.log" | head -20 | tr '\n' ';')"
t0=$(now)
mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 -x NCCL_NVLS_ENABLE=0 \
    -x LD_LIBRARY_PATH \
    "$b/sluice" train --data data --devices all --json > "$out/mpi2.json" 2> "$out/mpi2.err"
log "mpi2 (rc $?, $(since "$t0") s): $(cat "$out/mpi2.json")"
t0=$(now)
mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 -x NCCL_NVLS_ENABLE=0 \
    -x LD_LIBRARY_PATH \
    "$b/sluice" train --data data --devices all --json --train-pipeline "$out/seed_cached.py" \
    > "$out/mpi2_cached.json" 2> "$out/mpi2_cached.err"
log "mpi2_cached (rc $?, $(since "$t0") s): $(cat "$out/mpi2_cached.json")"
t0=$(now)
make demo BUILD="$b" > "$out/demo.log" 2>&1
log "make demo (rc $?, $(since "$t0") s): $(grep -E 'accuracy|Training on' "$out/demo.log" | tr '\n' ' ')"

# peers, same run
ref=${JAX_REFERENCE:-}
fmnist=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
if [ -z "$ref" ] || [ ! -f "$ref/jax_reference.py" ]; then
    log "jax: skipped (set JAX_REFERENCE to a folder holding jax_reference.py)"
elif ! python3 -c 'import jax' 2> /dev/null; then
    log "jax: skipped (python3 cannot import jax)"
else
    ln -sfn "$(cd "$fmnist" && pwd)" "$ref/data"
    (cd "$ref" && timeout 300 python3 jax_reference.py one shard pmap) > "$out/jax.log" 2>&1
    log "jax: $(grep -E 'epoch 4|compute' "$out/jax.log" | tr '\n' ' ')"
fi
if [ -f bench/peer_torch_train.py ] && [ -x "$b/export_jpegs" ]; then
    "$b/export_jpegs" data/training "$out/train.jpegs" > /dev/null
    "$b/export_jpegs" data/testing "$out/test.jpegs" > /dev/null
    timeout 300 python3 bench/peer_torch_train.py "$out/train.jpegs" "$out/test.jpegs" --epochs 5 \
        --device cuda --workers 16 > "$out/torch.log" 2>&1
    log "torch: $(tail -c 600 "$out/torch.log")"
    rm -f "$out/train.jpegs" "$out/test.jpegs"
fi
