#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Python package on the GPU machine, in one go: builds, runs the Python suites (pytest, where
# the machine has it) and the seed's program on sluice (examples/jax_multigpu.py), then times, in
# the same run: the seed's JAX loop fed by sluice (bench/jax_epoch.py) against the same loop fed
# from NumPy arrays (the JAX reference, jax_reference.py), the Python iterators against
# `sluice run` (bench/python_iterator.py), and PyTorch on the GPU fed by sluice.plugin.pytorch
# (examples/pytorch_train.py) against a DataLoader (bench/peer_torch_train.py).
# usage (GPU machine, repo root): [FASHION_MNIST_DIR=DIR] [JAX_REFERENCE=DIR] [PARTS="tests bench"]
#     [JAX_CONFIGS="auto:2 12:4"] (threads:prefetch_queue_depth of the sluice-fed JAX loop's
#     pipeline, one run each; auto: the library's choice, the default)
#     bench/gpu_python.sh [OUT]
# FASHION_MNIST_DIR: the four Fashion-MNIST IDX .gz files (default: Debian's, see scripts/make-data).
# JAX_REFERENCE: a folder holding jax_reference.py, the seed's JAX loop over NumPy arrays (not part
# of this repository), run there as `python3 jax_reference.py shard` with the .gz files linked into
# its data/; without it that peer is skipped and the summary says so. Figures: bench/RESULTS.md,
# section 9.
set -uo pipefail
out=${1:-out}
mkdir -p "$out"
out=$(cd "$out" && pwd)
b=${BUILD:-/tmp/b}
parts=${PARTS:-tests bench}
log() { echo "== $*" | tee -a "$out/summary.txt"; }
export PYTHONPATH=$PWD/python:$PWD/examples SLUICE_LIBRARY=$b/libsluice.so SL_TOOL=$b/sluice
export SL_FIXTURES=$PWD/tests/fixtures

log "machine: $(nvidia-smi -L | tr '\n' ' ') $(nproc) cores; $(date -u +%FT%TZ); commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'); $(python3 -c 'import sys, jax, torch, numpy; print(sys.version.split()[0], "jax", jax.__version__, "torch", torch.__version__, "numpy", numpy.__version__)' 2>&1)"
if [ ! -x "$b/sluice" ]; then
    cmake -S . -B "$b" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLUICE_PYTHON="$(command -v python3)" \
        > "$out/configure.log" 2>&1
    cmake --build "$b" -j "$(nproc)" > "$out/build.log" 2>&1 || { log "build failed"; tail -30 "$out/build.log"; exit 1; }
fi
log "build ok"
scripts/make-data "$b/sluice" data > "$out/data.log" 2>&1 || { log "make-data failed"; cat "$out/data.log"; }

if [[ " $parts " == *" tests "* ]]; then
    if python3 -c 'import pytest' 2> /dev/null; then
        SL_REQUIRE_GPU=1 timeout 400 python3 -m pytest -q -p no:cacheprovider python/tests \
            -m "not slow" > "$out/pytest.log" 2>&1
        log "pytest (rc $?): $(tail -1 "$out/pytest.log")"
        grep -E "^(FAILED|ERROR)" "$out/pytest.log" | head -20 | tee -a "$out/summary.txt"
    else
        log "no pytest on this machine: the suites not run"
    fi
    mkdir -p "$out/extra/db/MNIST"
    ln -sfn "$PWD/data/training" "$out/extra/db/MNIST/training"
    ln -sfn "$PWD/data/testing" "$out/extra/db/MNIST/testing"
    DALI_EXTRA_PATH=$out/extra timeout 400 python3 examples/jax_multigpu.py > "$out/seed_program.log" 2>&1
    log "seed program (rc $?): $(grep -E 'Number of|accuracy' "$out/seed_program.log" | tr '\n' ' ')"
    tail -5 "$out/seed_program.log" >> "$out/summary.txt"
fi

if [[ " $parts " == *" bench "* ]]; then
    for cfg in ${JAX_CONFIGS:-auto:2 12:4}; do
        th=${cfg%:*} pf=${cfg#*:}
        timeout 200 python3 bench/jax_epoch.py --data data --threads "$th" --prefetch "$pf" \
            > "$out/jax_sluice_$th.$pf.log" 2>&1
        log "jax fed by sluice, $th threads, prefetch $pf: $(tr '\n' ';' < "$out/jax_sluice_$th.$pf.log" | tail -c 900)"
    done
    timeout 200 python3 bench/jax_step_profile.py --data data --threads "$th" > "$out/jax_profile.log" 2>&1
    log "jax step profile, $th threads: $(grep epoch "$out/jax_profile.log" | tail -3 | tr '\n' ';')"
    timeout 200 python3 bench/jax_step_profile.py --data data --threads 2 --imports 2000 \
        > "$out/jax_imports.log" 2>&1
    log "jax hand-over: $(grep imports "$out/jax_imports.log" | tr '\n' ';')"
    ref=${JAX_REFERENCE:-}
    if [ -z "$ref" ] || [ ! -f "$ref/jax_reference.py" ]; then
        log "jax fed from numpy: skipped (set JAX_REFERENCE to a folder holding jax_reference.py)"
    else
        ln -sfn "$(cd "${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}" && pwd)" "$ref/data"
        (cd "$ref" && timeout 200 python3 jax_reference.py shard) > "$out/jax_numpy.log" 2>&1
        log "jax fed from numpy: $(tr '\n' ';' < "$out/jax_numpy.log" | tail -c 600)"
    fi
    timeout 200 python3 bench/python_iterator.py --data data --devices all --epochs 4 \
        --tool "$b/sluice" > "$out/iterator.log" 2>&1
    log "iterators: $(tr '\n' ';' < "$out/iterator.log")"
    timeout 200 python3 examples/pytorch_train.py --data data --device cuda --threads 8 \
        > "$out/torch_sluice.log" 2>&1
    log "torch fed by sluice: $(grep -E 'Epoch|accuracy' "$out/torch_sluice.log" | tr '\n' ' ')"
    cmake --build "$b" -j "$(nproc)" --target export_jpegs >> "$out/build.log" 2>&1
    "$b/export_jpegs" data/training "$out/train.jpegs" > /dev/null
    "$b/export_jpegs" data/testing "$out/test.jpegs" > /dev/null
    timeout 250 python3 bench/peer_torch_train.py "$out/train.jpegs" "$out/test.jpegs" --epochs 5 \
        --device cuda --workers 16 > "$out/torch_dataloader.log" 2>&1
    log "torch fed by a DataLoader: $(tail -c 700 "$out/torch_dataloader.log")"
    rm -f "$out/train.jpegs" "$out/test.jpegs"
fi
