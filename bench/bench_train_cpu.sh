#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One epoch of the seed workload on the CPU (training pipeline + the MLP 784-1024-1024-10,
# tanh, SGD lr 0.001, batch 200, numpy RandomState(0) init) through `sluice train --devices cpu` and
# `cpu:2` against PyTorch on the CPU (bench/peer_torch_train.py: DataLoader with 2 workers, PIL
# decode, the same JPEG bytes, the same model, init and SGD) with 1 and 2 intra-op threads,
# interleaved RUNS times (sluice cpu, sluice cpu:2, torch 1 thread, torch 2 threads, ...); medians
# (the faster torch setting is the reference), the time split (waiting, compute, decode), load.
# Prints a Markdown section and appends it to bench/RESULTS.md (NO_APPEND=1: print only).
# usage (repository root, after `make build bench` and `make data`): bench/bench_train_cpu.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
RUNS=${RUNS:-3}
TORCH_THREADS=${TORCH_THREADS:-"1 2"} # torch intra-op threads to try; the faster is the reference
PY=${PY:-/usr/bin/python3}
tool=$BUILD/sluice
[ -x "$tool" ] && [ -x "$BUILD/export_jpegs" ] || { echo "run: make build bench" >&2; exit 1; }
[ -f data/training/data.mdb ] || { echo "run: make data" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$BUILD/export_jpegs" data/training "$work/train.jpegs" 2>/dev/null
"$BUILD/export_jpegs" data/testing "$work/test.jpegs" 2>/dev/null
cmd_sluice="$tool train --data data --devices DEV --epochs 1 --profile --json"
cmd_torch="$PY bench/peer_torch_train.py TRAIN_JPEGS TEST_JPEGS --epochs 1 --threads T"
for i in $(seq "$RUNS"); do
    for dev in cpu cpu:2; do
        echo "load $(cut -d' ' -f1 /proc/loadavg)" > "$work/sluice_${dev}_$i.load"
        ${cmd_sluice/DEV/$dev} > "$work/sluice_${dev}_$i.json"
        echo "sluice $dev run $i: $(cat "$work/sluice_${dev}_$i.json")" >&2
    done
    for t in $TORCH_THREADS; do
        echo "load $(cut -d' ' -f1 /proc/loadavg)" > "$work/torch${t}_$i.load"
        c=${cmd_torch/TRAIN_JPEGS/$work/train.jpegs}
        c=${c/TEST_JPEGS/$work/test.jpegs}
        ${c/--threads T/--threads $t} > "$work/torch${t}_$i.json"
        echo "torch $t thread(s) run $i: $(cat "$work/torch${t}_$i.json")" >&2
    done
done

"$PY" - "$work" "$RUNS" "$cmd_sluice" "$cmd_torch" "$TORCH_THREADS" > "$work/section.md" <<'PY'
import json, os, platform, statistics as st, subprocess, sys, time
work, runs, cmd_sluice, cmd_torch = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
torch_threads = sys.argv[5].split()
def load(f): return json.load(open(f))
def loadavg(f): return float(open(f).read().split()[1])
med = st.median
lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
model = next((l.split(":", 1)[1].strip() for l in lscpu.splitlines() if l.startswith("Model name")), "?")
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True).stdout.strip()
runs_by, loads = {}, []
for dev in ("cpu", "cpu:2"):
    runs_by[f"sluice `--devices {dev}`"] = [load(f"{work}/sluice_{dev}_{i}.json")["epochs"][0] for i in range(1, runs + 1)]
    loads += [loadavg(f"{work}/sluice_{dev}_{i}.load") for i in range(1, runs + 1)]
tj = load(f"{work}/torch{torch_threads[0]}_1.json")
tnames = []
for t in torch_threads:
    tnames.append(f"torch, {t} thread{'s' if t != '1' else ''} + DataLoader 2 workers")
    runs_by[tnames[-1]] = [load(f"{work}/torch{t}_{i}.json")["epochs"][0] for i in range(1, runs + 1)]
    loads += [loadavg(f"{work}/torch{t}_{i}.load") for i in range(1, runs + 1)]
tname = max(tnames, key=lambda n: med(r["samples_per_s"] for r in runs_by[n]))
tmed = med(r["samples_per_s"] for r in runs_by[tname])
out = []
p = out.append
p(f"\n## One epoch of the seed workload on the CPU vs PyTorch (bench/bench_train_cpu.sh)\n")
p(f"- Machine: {model}, {os.cpu_count()} cores ({platform.platform()}); load average (1 min) before "
  f"each run: min {min(loads):.1f}, median {med(loads):.1f}, max {max(loads):.1f} -- shared with other "
  f"builds: absolute figures are low and noisy; the ratio is the figure.")
p(f"- Date: {time.strftime('%Y-%m-%d %H:%M %Z')}; commit {commit}{' (+ local changes)' if dirty else ''}.")
p(f"- Commands ({runs} runs each, interleaved sluice cpu, sluice cpu:2, torch with "
  f"{' and '.join(torch_threads)} threads; medians; the faster torch setting is the reference):")
p(f"  - `{cmd_sluice}` with DEV = `cpu` (one replica, OpenBLAS on both cores, one pipeline, default threads) "
  f"and `cpu:2` (two replicas of 100 samples, one OpenBLAS thread each, gradients averaged)")
p(f"  - `{cmd_torch}` (torch {tj['torch']}), the JPEG files exported from the LMDBs by "
  f"`{os.environ.get('BUILD', 'build')}/export_jpegs` (same bytes); weights from numpy RandomState(0) "
  f"in the seed's order, i.e. the same initial values as sluice; `torch.optim.SGD(lr=0.001)`; "
  f"T = torch.set_num_threads (Debian's torch starts with 1 here; with 2, its OpenMP element-wise "
  f"ops slow down badly on this loaded machine: tanh of (200, 1024) 1.5 ms -> 19 ms)")
p("- Epoch time: the training loop only (300 steps); test accuracy is computed after the clock stops. "
  "Waiting = time blocked on the iterator (sl_iter_next / next(DataLoader)); compute = "
  "sl_trainer_step / forward+backward+step+loss.item(); other = the rest of the loop; decode = "
  "decoders.image's time per batch summed over batches and pipelines (`sluice train --profile`) / "
  "the seconds inside each sample's PIL open+convert+/255 summed over the 2 DataLoader workers; "
  "decode overlaps waiting and compute.\n")
p("| run | samples/s (median) | runs | vs torch | epoch s | waiting | compute | other | decode | loss | test accuracy |")
p("|---|---|---|---|---|---|---|---|---|---|---|")
for name, rs in runs_by.items():
    sps = [r["samples_per_s"] for r in rs]
    m = sorted(rs, key=lambda r: r["samples_per_s"])[len(rs) // 2]
    comp = m.get("step_s", m.get("compute_s"))
    p(f"| {name} | {med(sps):.0f} | {', '.join(f'{x:.0f}' for x in sps)} | "
      f"{'**%.2fx**' % (med(sps) / tmed) if name not in tnames else '%.2fx' % (med(sps) / tmed)} | {m['seconds']:.2f} | "
      f"{m['wait_s']:.2f} | {comp:.2f} | {m['seconds'] - m['wait_s'] - comp:.2f} | {m['decode_s']:.2f} | "
      f"{m['loss']:.4f} | {m['accuracy']:.4f} |")
print("\n".join(out))
PY
cat "$work/section.md"
if [ "${NO_APPEND:-0}" != 1 ]; then cat "$work/section.md" >> bench/RESULTS.md; echo "appended to bench/RESULTS.md" >&2; fi
