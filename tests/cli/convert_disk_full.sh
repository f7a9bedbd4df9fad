#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `sluice convert` onto a small tmpfs (needs root to mount one; skipped with a message otherwise):
# a disk that is full from the start, and one that fills part-way through (after the first LMDB
# commits), for an LMDB into a new folder, into a folder that is there already, and a TFRecord
# file, and `sluice index` onto the full disk. Each must exit 1 -- no signal -- with a message
# naming the file and saying "no space left on device", and leave no store at --out (no index at
# OUT) and no temporary behind.
set -uo pipefail
tool=$1
work=$(mktemp -d)
mnt="$work/mnt"
mkdir -p "$mnt"
cleanup() { mountpoint -q "$mnt" && umount "$mnt"; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
if [ "$(id -u)" != 0 ] || ! mount -t tmpfs -o size=6m tmpfs "$mnt" 2> /dev/null; then
    echo "cli convert_disk_full: skipped (mounting a tmpfs needs root)"
    exit 0
fi
src=/usr/share/datasets/fashion-mnist
mkdir -p "$work/imgs/a"
cp "$SL_FIXTURES"/dali_extra/jpeg/padlock-406986_640.jpg "$work/imgs/a/x.jpg"
args=(convert --from idx --images "$src/t10k-images-idx3-ubyte.gz"
      --labels "$src/t10k-labels-idx1-ubyte.gz")

# case to out: convert must fail cleanly; nothing of it is left on the file system
expect_full() {
    local case=$1 to=$2 out=$3 rc
    "$tool" "${args[@]}" --to "$to" --out "$out" > "$work/out" 2> "$work/err"
    rc=$?
    [ $rc -eq 1 ] || fail "$case: exit $rc (want 1): $(cat "$work/err")"
    grep -qi "no space left on device" "$work/err" || fail "$case: message: $(cat "$work/err")"
    grep -q "$mnt" "$work/err" || fail "$case: the message names no file: $(cat "$work/err")"
    if [ "$to" = tfrecord ]; then
        [ -e "$out" ] && fail "$case: $out was left"
    else
        [ -e "$out/data.mdb" ] && fail "$case: $out/data.mdb was left"
    fi
    left=$(find "$mnt" -name '*tmp-*')
    [ -z "$left" ] || fail "$case: a temporary was left: $left"
}

# part-way: 6 MiB take the first commit of 4096 records (about 4 MiB), not all 10000
expect_full "fills, new folder" caffe2 "$mnt/db"
[ -e "$mnt/db" ] && fail "fills, new folder: $mnt/db was left"
mkdir "$mnt/there"
expect_full "fills, folder there" caffe2 "$mnt/there"
[ -d "$mnt/there" ] || fail "fills, folder there: the folder went"
expect_full "fills, tfrecord" tfrecord "$mnt/f.tfrecord"
[ -z "$(ls -A "$mnt/there")" ] || fail "fills, folder there: $(ls -A "$mnt/there")"

# full from the start: not a byte free
head -c 8m /dev/zero > "$mnt/filler" 2> /dev/null
[ "$(df --output=avail "$mnt" | tail -1 | tr -d ' ')" = 0 ] || fail "the tmpfs is not full"
expect_full "full, new folder" caffe2 "$mnt/db"
expect_full "full, folder there" caffe2 "$mnt/there"
expect_full "full, tfrecord" tfrecord "$mnt/f.tfrecord"
expect_full "full, deep folder" caffe "$mnt/a/b/db"

# sluice index onto the full disk: no index, cut or whole, and no temporary
"$tool" convert --from folder --in "$work/imgs" --to tfrecord --out "$work/f.tfrecord" > /dev/null ||
    fail "a TFRecord off the full disk"
if "$tool" index "$work/f.tfrecord" "$mnt/f.idx" 2> "$work/err"; then fail "index onto a full disk"; fi
grep -qi "no space left on device" "$work/err" || fail "index: message: $(cat "$work/err")"
[ -z "$(ls -A "$mnt" | grep -v '^filler$\|^there$\|^a$')" ] || fail "index: left $(ls -A "$mnt")"

# with room again, the same conversion goes through
rm -f "$mnt/filler"
umount "$mnt" && mount -t tmpfs -o size=64m tmpfs "$mnt" || fail "remount"
"$tool" "${args[@]}" --to caffe2 --out "$mnt/db" > /dev/null || fail "convert with room"
"$tool" inspect --verify "$mnt/db" | grep "verified: caffe2, 10000 records" > /dev/null ||
    fail "the store written with room does not verify"
echo "cli convert_disk_full: ok"
