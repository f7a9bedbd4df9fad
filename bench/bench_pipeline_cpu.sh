#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The seed's training pipeline on the CPU (decode GRAY, x/255 CHW, reshape 784, one-hot 10,
# shuffled, batch 200) through `sluice run --devices cpu` and `cpu:2` against PyTorch's DataLoader
# (2 worker processes, PIL decode, bench/peer_dataloader.py) on the same JPEG bytes, interleaved
# RUNS times (sluice cpu, sluice cpu:2, torch, ...); medians, per-stage time, load average.
# Prints a Markdown section and appends it to bench/RESULTS.md (NO_APPEND=1: print only).
# usage (repository root, after `make build bench` and `make data`): bench/bench_pipeline_cpu.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
RUNS=${RUNS:-3}
PY=${PY:-/usr/bin/python3}
tool=$BUILD/sluice
[ -x "$tool" ] && [ -x "$BUILD/export_jpegs" ] || { echo "run: make build bench" >&2; exit 1; }
[ -f data/training/data.mdb ] || { echo "run: make data" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$BUILD/export_jpegs" data/training "$work/train.jpegs" 2>/dev/null
pipe=tools/pipelines/seed_training_sharding.py
cmd_sluice="$tool run $pipe --devices DEV --arg data_path=data/training --arg image_size=28 --arg num_classes=10 --batch-size 200 --json"
cmd_torch="$PY bench/peer_dataloader.py TRAIN_JPEGS --batch 200 --workers 2"
for i in $(seq "$RUNS"); do
    for dev in cpu cpu:2; do
        echo "load $(cut -d' ' -f1 /proc/loadavg)" > "$work/sluice_${dev}_$i.load"
        ${cmd_sluice/DEV/$dev} > "$work/sluice_${dev}_$i.json"
        echo "sluice $dev run $i: $(cat "$work/sluice_${dev}_$i.json")" >&2
    done
    echo "load $(cut -d' ' -f1 /proc/loadavg)" > "$work/torch_$i.load"
    ${cmd_torch/TRAIN_JPEGS/$work/train.jpegs} > "$work/torch_$i.json"
    echo "torch run $i: $(cat "$work/torch_$i.json")" >&2
done

"$PY" - "$work" "$RUNS" "$cmd_sluice" "$cmd_torch" > "$work/section.md" <<'PY'
import glob, json, os, platform, statistics as st, subprocess, sys, time
work, runs, cmd_sluice, cmd_torch = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def load(f): return json.load(open(f))
def loadavg(f): return float(open(f).read().split()[1])
med = st.median
lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
model = next((l.split(":", 1)[1].strip() for l in lscpu.splitlines() if l.startswith("Model name")), "?")
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True).stdout.strip()
rows, loads = {}, []
for dev in ("cpu", "cpu:2"):
    rs = [load(f"{work}/sluice_{dev}_{i}.json") for i in range(1, runs + 1)]
    loads += [loadavg(f"{work}/sluice_{dev}_{i}.load") for i in range(1, runs + 1)]
    sps = [r["epochs"][0]["samples_per_s"] for r in rs]
    # per-stage thread-seconds of the median run
    m = sorted(rs, key=lambda r: r["epochs"][0]["samples_per_s"])[len(rs) // 2]
    rows[dev] = (sps, m)
ts = [load(f"{work}/torch_{i}.json")["epochs"][0] for i in range(1, runs + 1)]
loads += [loadavg(f"{work}/torch_{i}.load") for i in range(1, runs + 1)]
tsps = [t["samples_per_s"] for t in ts]
tm = sorted(ts, key=lambda t: t["samples_per_s"])[len(ts) // 2]
out = []
p = out.append
p(f"\n## Seed training pipeline on the CPU vs PyTorch DataLoader (bench/bench_pipeline_cpu.sh)\n")
p(f"- Machine: {model}, {os.cpu_count()} cores ({platform.platform()}); load average (1 min) before "
  f"each run: min {min(loads):.1f}, median {med(loads):.1f}, max {max(loads):.1f} -- the machine is "
  f"shared with other builds, so absolute figures are low and noisy; the ratio is the figure.")
p(f"- Date: {time.strftime('%Y-%m-%d %H:%M %Z')}; commit {commit}{' (+ local changes)' if dirty else ''}.")
p(f"- Commands ({runs} runs each, interleaved sluice cpu, sluice cpu:2, torch; medians):")
p(f"  - `{cmd_sluice}` with DEV = `cpu` (one pipeline) and `cpu:2` (two pipelines of 100), default pipeline threads")
p(f"  - `{cmd_torch}`, TRAIN_JPEGS = the LMDB's JPEG bytes and labels exported by "
  f"`{os.environ.get('BUILD', 'build')}/export_jpegs data/training FILE` (same bytes, LMDB order)")
p(f"- One epoch of 60000 samples. sluice: the epoch's time as `sluice run` reports it (the pipelines are "
  f"built before it starts). torch: from `iter(loader)` to the last batch (worker start-up included, as in "
  f"every epoch of a non-persistent DataLoader), torch {load(f'{work}/torch_1.json')['torch']}.\n")
p("| run | samples/s (median) | runs | vs torch |")
p("|---|---|---|---|")
for dev, (sps, m) in rows.items():
    p(f"| sluice `--devices {dev}` | {med(sps):.0f} | {', '.join(f'{x:.0f}' for x in sps)} | "
      f"**{med(sps) / med(tsps):.1f}x** |")
p(f"| torch DataLoader, 2 workers, PIL | {med(tsps):.0f} | {', '.join(f'{x:.0f}' for x in tsps)} | 1.0x |")
p("\n" + "Where the time goes (median run). sluice: each op's time per batch (setup + the per-sample runs spread over the pipeline's 4 threads, from dispatch to the last sample: wall time, not thread-seconds, as `sluice run` reports it), summed over batches and pipelines; on an overloaded machine a tiny op such as one_hot is billed for waiting on descheduled pool threads (cpu:2 runs 8 pool threads on 2 cores). torch: seconds inside each sample's decode + normalise, summed over the 2 workers." + "\n")
p("| run | epoch s | reader | decode | other ops | not decode | consumer waited |")
p("|---|---|---|---|---|---|---|")
for dev, (sps, m) in rows.items():
    s = m["stages"]
    tot = s["reader_s"] + s["decode_s"] + s["cpu_ops_s"] + s["gpu_s"]
    ops = ", ".join(f"{k} {v:.3f}" for k, v in m["ops"].items() if k not in ("decoders.image",) and "reader" not in k)
    p(f"| sluice `{dev}` | {m['epochs'][0]['seconds']:.3f} | {s['reader_s']:.3f} | {s['decode_s']:.3f} | "
      f"{s['cpu_ops_s'] + s['gpu_s']:.3f} ({ops}) | {100 * (1 - s['decode_s'] / tot):.0f}% | {s['consumer_wait_s']:.3f} |")
p(f"| torch | {tm['seconds']:.3f} | - | {tm['decode_s']:.3f} (PIL open+convert+/255 in the workers) | - | "
  f"{100 * (1 - tm['decode_s'] / (2 * tm['seconds'])):.0f}% of 2 workers' time | {tm['wait_s']:.3f} |")
print("\n".join(out))
PY
cat "$work/section.md"
if [ "${NO_APPEND:-0}" != 1 ]; then cat "$work/section.md" >> bench/RESULTS.md; echo "appended to bench/RESULTS.md" >&2; fi
