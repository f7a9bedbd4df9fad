#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The CPU threads per pipeline that `sluice run` and `sluice train` take when neither --threads
# nor the decorator's num_threads gives them: the library's rule (the CPUs this process may run
# on over its pipelines, less one, 1..64), following the affinity mask (taskset), and said on
# stderr ("N CPU thread(s) per pipeline"), in train's header line and in --json as "threads".
# --threads and the decorator's num_threads are taken as given.
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
here=$(dirname "$0")
data="$SL_FIXTURES/caffe2-fmnist-256"
cat > "$work/auto.py" << 'PY'
@pipeline_def(batch_size=4, seed=1, device_id=None)
def p(data_path, num_shards, shard_id):
    jpegs, labels = fn.readers.caffe2(path=data_path, name="r", num_shards=num_shards,
                                      shard_id=shard_id)
    return fn.decoders.image(jpegs, output_type=types.GRAY), labels
PY
sed 's/seed=1,/seed=1, num_threads=2,/' "$work/auto.py" > "$work/two.py"
field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
rule() { python3 -c "import sys; c, n = map(int, sys.argv[1:]); print(max(1, min(64, c // n - 1)))" "$1" "$2"; }
# a CPU quota (a container's --cpus) may lower the count below the mask's: then only bounds hold
quota=$(python3 - << 'PY'
def read(p):
    try:
        return open(p).read().split()
    except OSError:
        return None
v2, v1 = read("/sys/fs/cgroup/cpu.max"), read("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")
print(1 if (v2 and v2[0] != "max") or (v1 and v1[0] != "-1") else 0)
PY
)
cpus=$(python3 -c "import os; print(len(os.sched_getaffinity(0)))")
first=$(python3 -c "import os; print(','.join(map(str, sorted(os.sched_getaffinity(0))[:4])))")
few=$(python3 -c "import sys; print(len(sys.argv[1].split(',')))" "$first")

check() { # check WHAT GOT WANT
    if [ "$quota" = 1 ]; then
        [ "$2" -ge 1 ] && [ "$2" -le "$3" ] || fail "$1: $2 threads, at most $3 wanted"
    else
        [ "$2" = "$3" ] || fail "$1: $2 threads, $3 wanted"
    fi
}
run() { "$tool" run "$1" --arg data_path="$data" --steps 2 "${@:2}"; }

# no count anywhere: the machine's, for one pipeline and for two sharing the CPUs
run "$work/auto.py" --json > "$work/j" 2> "$work/e" || fail "run: $(cat "$work/e")"
check "cpu" "$(field "$work/j" 'd["threads"]')" "$(rule "$cpus" 1)"
run "$work/auto.py" --devices cpu:2 --json > "$work/j" 2> "$work/e" || fail "$(cat "$work/e")"
check "cpu:2" "$(field "$work/j" 'd["threads"]')" "$(rule "$cpus" 2)"
# narrowed to at most four CPUs, and to one
taskset -c "$first" "$tool" run "$work/auto.py" --arg data_path="$data" --steps 2 --json \
    > "$work/j" 2> "$work/e" || fail "taskset $first: $(cat "$work/e")"
check "taskset -c $first" "$(field "$work/j" 'd["threads"]')" "$(rule "$few" 1)"
taskset -c "${first%%,*}" "$tool" run "$work/auto.py" --arg data_path="$data" --steps 2 \
    --devices cpu:2 --json > "$work/j" 2> "$work/e" || fail "taskset one CPU: $(cat "$work/e")"
[ "$(field "$work/j" 'd["threads"]')" = 1 ] || fail "one CPU, cpu:2: $(cat "$work/j")"
# said without --json too
run "$work/auto.py" > /dev/null 2> "$work/e" || fail "$(cat "$work/e")"
n=$(rule "$cpus" 1)
[ "$quota" = 1 ] || grep -q "on 1 device(s), 4 per device, $n CPU thread(s) per pipeline," "$work/e" ||
    fail "header: $(head -1 "$work/e")"

# given counts are kept: --threads, the decorator's num_threads, and --threads over it
run "$work/auto.py" --threads 3 --json > "$work/j" 2> /dev/null
[ "$(field "$work/j" 'd["threads"]')" = 3 ] || fail "--threads 3: $(cat "$work/j")"
run "$work/two.py" --devices cpu:2 --json > "$work/j" 2> /dev/null
[ "$(field "$work/j" 'd["threads"]')" = 2 ] || fail "num_threads=2: $(cat "$work/j")"
run "$work/two.py" --threads 5 --json > "$work/j" 2> "$work/e"
[ "$(field "$work/j" 'd["threads"]')" = 5 ] || fail "--threads 5 over num_threads=2"
grep -q "\-\-threads 5 overrides the pipeline's num_threads=2" "$work/e" || fail "$(cat "$work/e")"

# train: the same rule, in its header line and its JSON
python3 "$here/make_images.py" "$work/photos" 12
for split in train test; do
    dest=training
    [ $split = test ] && dest=testing
    "$tool" convert --from folder --in "$work/photos/$split" --to caffe2 \
        --out "$work/data/$dest" > /dev/null
done
cat > "$work/own.py" << 'PY'
@pipeline_def(batch_size=8, seed=3)
def own(data_path, num_shards, shard_id):
    files, labels = fn.readers.caffe2(path=data_path, name="reader", num_shards=num_shards,
                                      shard_id=shard_id)
    images = fn.decoders.image(files, device="cpu", output_type=types.RGB)
    images = fn.resize(images, resize_x=8, resize_y=8)
    return fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW"), labels
PY
train() { "$tool" train --data "$work/data" --train-pipeline "$work/own.py" \
    --val-pipeline "$work/own.py" --epochs 1 --hidden 8 "$@"; }
train --devices cpu > "$work/o" 2> "$work/e" || fail "train: $(cat "$work/e")"
[ "$quota" = 1 ] || grep -q "^Training on 1 CPU device(s), 8 samples each per step, $n CPU thread(s) per pipeline;" "$work/o" ||
    fail "train header: $(head -1 "$work/o")"
train --devices cpu:2 --json > "$work/j" 2> "$work/e" || fail "train cpu:2: $(cat "$work/e")"
check "train cpu:2" "$(field "$work/j" 'd["threads"]')" "$(rule "$cpus" 2)"
train --devices cpu --threads 3 --json > "$work/j" 2> "$work/e" || fail "$(cat "$work/e")"
[ "$(field "$work/j" 'd["threads"]')" = 3 ] || fail "train --threads 3: $(cat "$work/j")"
echo "run_threads: all checks passed"
