#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `sluice train --resume` and `sluice run --resume` look at the file before reading it: a
# directory (which reads as any size) and a FIFO (whose open would wait for a writer for good)
# are "not a regular file"; a 4 GiB sparse file with a checkpoint's magic whose header gives other
# lengths is refused at once, not read whole first; a real checkpoint resumes.
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
data="$SL_FIXTURES/caffe2-fmnist-256"
mkdir "$work/data" "$work/dir"
ln -s "$data" "$work/data/training"
ln -s "$data" "$work/data/testing"
mkfifo "$work/fifo"
truncate -s 4G "$work/big"
printf 'SLMR\001\000\000\000\001\000\000\000' | dd of="$work/big" conv=notrunc 2> /dev/null
train() { timeout 120 "$tool" train --data "$work/data" --devices cpu --hidden 16 --epochs 1 "$@"; }
run() {
    timeout 120 "$tool" run "$SL_SOURCE_DIR/tools/pipelines/seed_validation.py" \
        --arg data_path="$data" --arg image_size=28 --devices cpu "$@"
}
for cmd in train run; do
    for f in dir fifo big; do
        st=0
        $cmd --resume "$work/$f" > /dev/null 2> "$work/e" || st=$?
        [ $st -ne 124 ] || fail "$cmd --resume $f: still waiting after 120 s"
        [ $st -eq 1 ] || fail "$cmd --resume $f: exit status $st: $(cat "$work/e")"
        case $f in
        dir) want="not a regular file (a directory)" ;;
        fifo) want="not a regular file (a FIFO)" ;;
        big) want="truncated or damaged" ;;
        esac
        grep -qF "$want" "$work/e" || fail "$cmd --resume $f: no '$want' in: $(cat "$work/e")"
    done
done
train --checkpoint "$work/ck" > /dev/null 2> "$work/e" || fail "train: $(cat "$work/e")"
train --epochs 2 --resume "$work/ck" > /dev/null 2> "$work/e" || fail "resume: $(cat "$work/e")"
