#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Damaged LMDB stores through `sluice inspect`, `sluice inspect --verify` and `sluice run`:
# copies of the caffe2-fmnist-256 fixture truncated (half, one page, 0 bytes), random bytes,
# bit-flipped meta and data pages. Each must exit non-zero (1 or 2, never by a signal: 128+N)
# with an error naming the store, within a timeout; --verify of the good fixture passes.
set -uo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
src="$SL_FIXTURES/caffe2-fmnist-256/data.mdb"
size=$(stat -c %s "$src")

mk() { mkdir -p "$work/$1"; cp "$src" "$work/$1/data.mdb"; }
flip() { # store offset byte-value
    printf "\\x$(printf %02x "$3")" | dd of="$work/$1/data.mdb" bs=1 seek="$2" conv=notrunc status=none
}
mk half && truncate -s $((size / 2)) "$work/half/data.mdb"
mk page && truncate -s 4096 "$work/page/data.mdb"
mk zero && truncate -s 0 "$work/zero/data.mdb"
mkdir -p "$work/random" && head -c "$size" /dev/urandom > "$work/random/data.mdb"
mk metalast && flip metalast $((4096 + 136 + 1)) 7      # meta 1: last page number
mk metacount && flip metacount $((4096 + 120 + 5)) 1    # meta 1: entry count (2^40 + 256)
mk metaroot && flip metaroot $((4096 + 128 + 2)) 1      # meta 1: root page
mk branch && flip branch $((4 * 4096 + 12)) 255         # the root branch page's bounds
mk leaf && flip leaf $((10 * 4096 + 16)) 255            # a leaf page's first node offset

cat > "$work/pipe.py" <<'PY'
def pipe(data_path):
    jpegs, labels = fn.readers.caffe2(path=data_path)
    images = fn.decoders.image(jpegs, output_type=types.GRAY)
    return images, labels
PY

# runs "$@" with a timeout; the exit status must be 1 or 2 and stderr must name the store
expect_error() {
    local name=$1 store=$2
    shift 2
    timeout 60 "$@" > "$work/out" 2> "$work/err"
    local rc=$?
    [ $rc -eq 124 ] && fail "$name: timed out: $*"
    [ $rc -gt 128 ] && fail "$name: killed by signal $((rc - 128)): $* ($(cat "$work/err"))"
    [ $rc -eq 0 ] && fail "$name: succeeded: $* ($(cat "$work/out"))"
    grep -qF "$store" "$work/err" || fail "$name: message does not name $store: $(cat "$work/err")"
}

for s in half page zero random metalast metacount metaroot branch leaf; do
    store="$work/$s"
    expect_error "$s inspect" "$store" "$tool" inspect "$store"
    expect_error "$s inspect --verify" "$store" "$tool" inspect --verify "$store"
    expect_error "$s run" "$store" "$tool" run "$work/pipe.py" --arg data_path="$store" \
        --batch-size 32 --devices cpu
done

# the good store: inspect, verify and run pass
out=$(timeout 60 "$tool" inspect --verify "$SL_FIXTURES/caffe2-fmnist-256") || fail "verify: $out"
case $out in *"verified: caffe2, 256 records"*) ;; *) fail "verify output: $out" ;; esac
timeout 120 "$tool" run "$work/pipe.py" --arg data_path="$SL_FIXTURES/caffe2-fmnist-256" \
    --batch-size 32 --devices cpu > /dev/null 2> "$work/err" || fail "run: $(cat "$work/err")"
echo "hostile_stores: ok"
