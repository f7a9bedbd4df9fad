#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `sluice ops` tells each reader's truth about the I/O arguments it accepts and ignores
# (read_ahead, dont_use_mmap, tensor_init_bytes): readers.file and readers.numpy read files, so
# their docs name no LMDB, maps or views; the LMDB readers speak of the LMDB, readers.mnist of its
# IDX files, readers.webdataset of its tar files.
set -euo pipefail
tool=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
io_docs() { # the docs of the three I/O arguments of reader $1
    "$tool" ops "$1" | grep -A1 -E '^  (read_ahead|dont_use_mmap|tensor_init_bytes) ' |
        grep -vE '^  [a-z_]+ |^--$'
}
for r in readers.file readers.numpy; do
    d=$(io_docs $r)
    [ "$(echo "$d" | wc -l)" -eq 3 ] || fail "$r: $d"
    grep -qiE 'lmdb|mapped:|always map|views' <<< "$d" && fail "$r docs: $d"
    grep -q "never mapped" <<< "$d" || fail "$r dont_use_mmap: $d"
done
for r in readers.caffe2 readers.caffe; do
    [ "$(io_docs $r | grep -c LMDB)" -eq 3 ] || fail "$r docs: $(io_docs $r)"
done
[ "$(io_docs readers.mnist | grep -c IDX)" -ge 2 ] || fail "mnist docs: $(io_docs readers.mnist)"
[ "$(io_docs readers.mnist | grep -c LMDB)" -eq 0 ] || fail "mnist docs: $(io_docs readers.mnist)"
[ "$(io_docs readers.webdataset | grep -c tar)" -eq 3 ] ||
    fail "webdataset docs: $(io_docs readers.webdataset)"
echo "cli reader docs: ok"
