#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: slow
# Many processes under mpirun, on the CPU:
#  - mpirun -np 2 sluice train --devices cpu --epochs 1 gives the loss and accuracy of
#    sluice train --devices cpu:2 --epochs 1 (within 1e-6);
#  - mpirun -np 3 sluice run: the three ranks' traces deliver every record per the DALI rules;
#  - a rank killed with kill -9 mid-epoch makes mpirun stop the others at once (bounded here by
#    60 s), and --resume from the last checkpoint completes the run.
set -euo pipefail
tool=$1
here=$(cd "$(dirname "$0")" && pwd)
command -v mpirun > /dev/null || { echo "skipped: no mpirun"; exit 0; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
mpi() { timeout 600 mpirun --oversubscribe --allow-run-as-root --bind-to none -np "$@"; }

"$SL_SOURCE_DIR/scripts/make-data" "$tool" "$work/data" > /dev/null

"$tool" train --data "$work/data" --devices cpu:2 --epochs 1 --json > "$work/one.json"
mpi 2 "$tool" train --data "$work/data" --devices cpu --epochs 1 --json > "$work/two.json"
python3 - "$work/one.json" "$work/two.json" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))["epochs"][0]
b = json.load(open(sys.argv[2]))["epochs"][0]
if abs(a["loss"] - b["loss"]) > 1e-6 * abs(a["loss"]) or abs(a["accuracy"] - b["accuracy"]) > 1e-6:
    sys.exit("cpu:2 %s != mpirun -np 2 %s" % (a, b))
print("np 2 == cpu:2: loss %.8g accuracy %.4f" % (b["loss"], b["accuracy"]))
PY

seed="$SL_SOURCE_DIR/tools/pipelines/seed_training_sharding.py"
mpi 3 "$tool" run "$seed" --arg data_path="$work/data/training" --arg image_size=28 \
    --arg num_classes=10 --devices cpu --batch-size 200 --epochs 2 --trace "$work/tr" 2> /dev/null
cat "$work/tr.0" "$work/tr.1" "$work/tr.2" > "$work/trace"
python3 "$here/seedcheck.py" trace "$work/trace" 60000 3

# kill -9 of rank 1 in the second epoch (after the first checkpoint is written)
mpi 2 "$tool" train --data "$work/data" --devices cpu --epochs 2 --checkpoint "$work/ck" \
    > "$work/killed.out" 2> "$work/killed.err" &
mpirun_pid=$!
for _ in $(seq 600); do [ -f "$work/ck" ] && break; sleep 0.5; done
[ -f "$work/ck" ] || fail "no checkpoint after the first epoch"
victim=""
for pid in $(pgrep -f "sluice train --data $work/data" || true); do
    if grep -qx OMPI_COMM_WORLD_RANK=1 < <(tr '\0' '\n' < /proc/$pid/environ 2> /dev/null); then
        victim=$pid
    fi
done
[ -n "$victim" ] || fail "rank 1 not found"
start=$(date +%s)
kill -9 "$victim"
if wait "$mpirun_pid"; then fail "mpirun succeeded although rank 1 was killed"; fi
took=$(( $(date +%s) - start ))
[ "$took" -le 60 ] || fail "the other rank took $took s to stop"
echo "killed rank 1: mpirun stopped the job in ${took}s"
mpi 2 "$tool" train --data "$work/data" --devices cpu --epochs 2 --resume "$work/ck" --json \
    > "$work/resumed.json"
python3 - "$work/resumed.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["epochs"]
assert rows and rows[-1]["epoch"] == 1, rows
print("resumed run completed epochs", [r["epoch"] for r in rows])
PY
echo "mpi: all checks passed"
