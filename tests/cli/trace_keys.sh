#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `sluice run --trace` keeps one line per sample whatever the keys hold: readers.file keys (paths)
# with a tab, a newline or a backslash in a file name are escaped as LMDB keys are (\xHH), so every
# line has its five tab-separated fields and each file's key appears once.
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
mkdir -p "$work/root/cls"
printf 'x' > "$work/root/cls/plain.jpg"
printf 'x' > "$work/root/cls/tab"$'\t'"name.jpg"
printf 'x' > "$work/root/cls/new"$'\n'"line.jpg"
printf 'x' > "$work/root/cls/back\\slash.jpg"
cat > "$work/p.py" << 'PY'
@pipeline_def(batch_size=4, num_threads=1)
def p(root):
    files, labels = fn.readers.file(file_root=root, name="r")
    return files, labels
PY
"$tool" run "$work/p.py" --arg root="$work/root" --devices cpu --trace "$work/trace" \
    2> "$work/e" || fail "run: $(cat "$work/e")"
python3 - "$work/trace" << 'PY' || fail "trace: $(cat "$work/trace")"
import sys
lines = open(sys.argv[1], "rb").read().decode().split("\n")
assert lines[-1] == "", "no final newline"
lines = lines[1:-1]  # the header, the end
assert len(lines) == 4, "%d sample lines, 4 wanted: %r" % (len(lines), lines)
keys = set()
for l in lines:
    f = l.split("\t")
    assert len(f) == 5, "not 5 fields: %r" % l
    keys.add(f[4])
want = {"cls/plain.jpg", "cls/tab\\x09name.jpg", "cls/new\\x0aline.jpg", "cls/back\\x5cslash.jpg"}
assert keys == want, keys
PY
