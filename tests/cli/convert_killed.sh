#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `sluice convert` killed with SIGKILL at random points: whatever the moment, --out is afterwards
# either no store at all or the whole one (6000 Fashion-MNIST records, `inspect --verify`
# passing), never a cut one that readers would take for the set. 200 trials, into a new folder,
# into a folder that is there already (empty), and to a TFRecord file. The kills are spread over
# the time one whole conversion takes, measured first, and a quarter of them must land mid-way
# (the others may find it done: that is checked too). About a minute: plain builds only (a sanitizer adds nothing to what a
# killed process leaves).
# ctest-labels: slow
set -uo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
src=/usr/share/datasets/fashion-mnist
# the first 6000 test records (two LMDB commits of 4096 and the rest): short runs, so that 200
# trials take about a minute, and kills between commits as before
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
"$py" - "$src" "$work" << 'PY' || fail "cutting the IDX files"
import gzip, struct, sys
src, out = sys.argv[1:3]
for kind, item in (("images", 28 * 28), ("labels", 1)):
    data = gzip.open(f"{src}/t10k-{kind}-idx{3 if kind == 'images' else 1}-ubyte.gz").read()
    head = 16 if kind == "images" else 8
    body = bytearray(data[:head]) + data[head:head + 6000 * item]
    struct.pack_into(">I", body, 4, 6000)
    with gzip.open(f"{out}/{kind}.gz", "wb", compresslevel=1) as f:
        f.write(bytes(body))
PY
args=(convert --from idx --images "$work/images.gz" --labels "$work/labels.gz")

now_ms() { date +%s%3N; }
t0=$(now_ms)
"$tool" "${args[@]}" --to caffe2 --out "$work/whole" > /dev/null || fail "a whole conversion"
span=$(( $(now_ms) - t0 ))
[ "$span" -lt 1 ] && span=1
"$tool" inspect --verify "$work/whole" | grep "verified: caffe2, 6000 records" > /dev/null ||
    fail "the whole conversion does not verify"

# out: a store that is there must be the whole set; none is fine
check() { # trial to path
    local out=$3 v
    case $2 in
    tfrecord)
        [ -e "$out" ] || return 0
        v=$("$tool" inspect --verify "$out" 2>&1) || fail "trial $1: $out is there but: $v"
        grep -q "verified: tfrecord, 6000 records" <<< "$v" || fail "trial $1: $out: $v" ;;
    *)
        [ -e "$out/data.mdb" ] || return 0
        v=$("$tool" inspect --verify "$out" 2>&1) || fail "trial $1: $out is there but: $v"
        grep -q "verified: caffe2, 6000 records" <<< "$v" || fail "trial $1: $out: $v"
        json=$("$tool" inspect "$out" --json)
        grep -q '"records": 6000,' <<< "$json" || fail "trial $1: $json" ;;
    esac
}

trials=200 mid=0
for ((i = 0; i < trials; i++)); do
    kind=$((i % 3))
    case $kind in
    0) to=caffe2 out="$work/t$i" ;;
    1) to=caffe2 out="$work/t$i" && mkdir -p "$out" ;;
    2) to=tfrecord out="$work/t$i.tfrecord" ;;
    esac
    "$tool" "${args[@]}" --to $to --out "$out" > /dev/null 2>&1 &
    pid=$!
    ms=$(( (RANDOM * 32768 + RANDOM) % (span + 1) )) # a loaded machine runs longer: mostly inside
    sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
    kill -KILL $pid 2> /dev/null
    { wait $pid; } 2> /dev/null
    rc=$?
    [ $rc -eq 137 ] && mid=$((mid + 1))
    [ $rc -eq 0 ] || [ $rc -eq 137 ] || fail "trial $i: convert exited $rc before the kill"
    check "$i" $to "$out"
    if [ $rc -eq 0 ]; then
        [ $kind -eq 2 ] && [ ! -e "$out" ] && fail "trial $i: convert finished, no $out"
        [ $kind -ne 2 ] && [ ! -e "$out/data.mdb" ] && fail "trial $i: convert finished, no $out"
    fi
    rm -rf "$out" "$out".tmp-*
done
[ $mid -ge $((trials / 4)) ] || fail "only $mid of $trials kills landed while convert ran"
echo "cli convert_killed: ok ($mid of $trials killed mid-way, a conversion takes ${span} ms)"
