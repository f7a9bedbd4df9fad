#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `sluice train --checkpoint FILE` killed with SIGKILL at random points while it writes FILE anew
# at every epoch's end: afterwards FILE is absent (killed before the first) or a whole checkpoint
# of some epoch, never a torn one: `train --resume FILE` takes it and trains on (its CRC and
# lengths are checked as it is read), and `--metrics` holds whole lines only. 100 trials spread
# over the time one whole run takes, measured first; a quarter of them must land mid-way.
# ctest-labels: slow
set -uo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
mkdir "$work/data"
ln -s "$SL_FIXTURES/caffe2-fmnist-256" "$work/data/training"
ln -s "$SL_FIXTURES/caffe2-fmnist-256" "$work/data/testing"
epochs=12
train=("$tool" train --data "$work/data" --devices cpu --hidden 16 --batch-size 64)

now_ms() { date +%s%3N; }
t0=$(now_ms)
"${train[@]}" --epochs $epochs --checkpoint "$work/whole.ck" > /dev/null 2> "$work/err" ||
    fail "a whole run: $(cat "$work/err")"
span=$(($(now_ms) - t0))
[ "$span" -lt 1 ] && span=1

trials=100 mid=0
for ((i = 0; i < trials; i++)); do
    ck="$work/t$i.ck" metrics="$work/t$i.metrics"
    "${train[@]}" --epochs $epochs --checkpoint "$ck" --metrics "$metrics" > /dev/null 2>&1 &
    pid=$!
    ms=$(((RANDOM * 32768 + RANDOM) % (span + 1)))
    sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
    kill -KILL $pid 2> /dev/null
    { wait $pid; } 2> /dev/null
    rc=$?
    [ $rc -eq 137 ] && mid=$((mid + 1))
    [ $rc -eq 0 ] || [ $rc -eq 137 ] || fail "trial $i: train exited $rc before the kill"
    if [ -e "$ck" ]; then
        # one more epoch from it: it must read whole
        "${train[@]}" --epochs $((epochs + 1)) --resume "$ck" > "$work/out" 2> "$work/err" ||
            fail "trial $i (killed after $ms ms): $ck is there but: $(cat "$work/err")"
        grep -q "Epoch $epochs" "$work/out" || fail "trial $i: resumed, but: $(cat "$work/out")"
    elif [ $rc -eq 0 ]; then
        fail "trial $i: train finished, no $ck"
    fi
    if [ -e "$metrics" ]; then
        n=0
        while IFS= read -r line; do
            [[ $line =~ ^\{\"epoch\":\ $n,\ .*\}$ ]] || fail "trial $i: metrics line $n: $line"
            n=$((n + 1))
        done < "$metrics"
        [ -z "$(tail -c 1 "$metrics")" ] || fail "trial $i: the metrics end mid-line"
    fi
    rm -f "$ck" "$ck".tmp* "$metrics" "$metrics".tmp*
done
[ $mid -ge $((trials / 4)) ] || fail "only $mid of $trials kills landed while train ran"
echo "cli train_killed: ok ($mid of $trials killed mid-way, a run takes ${span} ms)"
