#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# sluice inspect and convert on IDX files whose header extents wrap in 64 bits (2^16 items of
# 2^16 x 2^16 x 2^16 bytes = 2^64, which matches the 0 data bytes present when unchecked): each is
# refused with a message naming the file, never a crash.
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# magic 0x00000804 (u8, 4 dims), each extent 0x00010000, no data
printf '\x00\x00\x08\x04\x00\x01\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00' \
    > "$work/wrap-images"
printf '\x00\x00\x08\x01\x00\x00\x00\x01\x07' > "$work/labels"

if out=$("$tool" inspect "$work/wrap-images" 2>&1); then fail "inspect accepted it: $out"; fi
case $out in *"$work/wrap-images"*"give more than"*) ;; *) fail "inspect: $out" ;; esac

if out=$("$tool" convert --from idx --images "$work/wrap-images" --labels "$work/labels" \
    --to caffe2 --raw --out "$work/lmdb" 2>&1); then
    fail "convert accepted it: $out"
fi
case $out in *"$work/wrap-images"*"give more than"*) ;; *) fail "convert: $out" ;; esac
echo "ok"
