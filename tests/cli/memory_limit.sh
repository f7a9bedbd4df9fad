#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The tool under an address-space limit (ulimit -v). OpenBLAS maps a work buffer for each of its
# threads as it loads and for each thread calling sgemm, and retries a mapping that fails for
# ever: `sluice version` under 300 MB spun and never exited (OpenBLAS's exit waited for a thread
# still trying), `sluice train` under 1 GB spun in its first step. Now every command ends within
# its timeout: with a clean error (exit 1, "sluice <cmd>: ..." naming what could not be had) or
# done; a thread count the user asked for that does not fit is lowered, and said.
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
if [ -n "${SL_SANITIZE:-}" ]; then
    echo "skipped: a sanitizer's runtime reserves more address space than any limit leaves"
    exit 0
fi
if [ "$(ulimit -v)" != unlimited ]; then
    echo "skipped: the test runs under an address-space limit already ($(ulimit -v) KiB)"
    exit 0
fi
mkdir "$work/data"
ln -s "$SL_FIXTURES/caffe2-fmnist-256" "$work/data/training"
ln -s "$SL_FIXTURES/caffe2-fmnist-256" "$work/data/testing"
# four OpenBLAS threads want 512 MiB of buffers: more than 300 MB, whatever the machine's CPUs
export OPENBLAS_NUM_THREADS=4

# limited KIB OUT ERR CMD...: runs CMD under ulimit -v KIB with a timeout; prints the exit status
limited() {
    local kib=$1 out=$2 err=$3
    shift 3
    local rc=0
    (ulimit -v "$kib" && exec timeout -s KILL 120 "$@") > "$out" 2> "$err" || rc=$?
    echo "$rc"
}

rc=$(limited 300000 "$work/out" "$work/err" "$tool" version)
[ "$rc" = 0 ] || fail "version under 300000 KiB: exit $rc (137: killed by the timeout): $(cat "$work/err")"
grep -q "^sluice " "$work/out" || fail "version under 300000 KiB printed: $(cat "$work/out")"
grep -q "OPENBLAS_NUM_THREADS=4: .*using 1 thread" "$work/err" ||
    fail "the lowered thread count is not said: $(cat "$work/err")"

# every limit from too little to start a pipeline to enough to train: done or a clean error
done_at=
for kib in 300000 400000 500000 600000 700000 800000 1000000 1500000 3000000; do
    rc=$(limited $kib "$work/out" "$work/err" "$tool" train --data "$work/data" --devices cpu \
        --epochs 1 --threads 1 --batch-size 64)
    last=$(grep -v "^sluice: OPENBLAS_NUM_THREADS" "$work/err" | tail -n 1 || true)
    echo "ulimit -v $kib: exit $rc: ${last:-(no message)}"
    case $rc in
    0)
        grep -q "Test set accuracy" "$work/out" || fail "$kib KiB: exit 0 without an epoch"
        done_at=${done_at:-$kib}
        ;;
    1)
        [[ $last == "sluice train: "* ]] || fail "$kib KiB: exit 1 without a message: $(cat "$work/err")"
        [[ $last =~ memory|Cannot\ allocate|Resource\ temporarily\ unavailable ]] ||
            fail "$kib KiB: the message does not say memory ran out: $last"
        ;;
    *) fail "$kib KiB: exit $rc (137: killed by the 120 s timeout, spinning): $(cat "$work/err")" ;;
    esac
done
[ -n "$done_at" ] || fail "training never ran, even under 3000000 KiB"
echo "trained from ulimit -v $done_at KiB up"
