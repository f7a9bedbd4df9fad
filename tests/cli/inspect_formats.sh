#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `sluice inspect` recognises every store the readers read, by what the path holds: a Caffe2 LMDB
# (with the class names of labels.txt), an image folder (class sub-folders, their names shown),
# an IDX file (plain and gzip), a WebDataset tar (labels from its .cls members), a folder of .npy
# files and one .npy file (their shapes); anything else is "unrecognised format" naming the path
# and what was looked for, with exit status 1 (an empty folder, a text file, a missing path).
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
here=$(dirname "$0")

python3 "$here/make_images.py" "$work/photos" 4
"$tool" convert --from folder --in "$work/photos/train" --to caffe2 --out "$work/db" > /dev/null
python3 - "$work" << 'PY'
import io, os, struct, sys, tarfile
work = sys.argv[1]
png = open(os.path.join(work, "photos/train/green/000.png"), "rb").read()
with tarfile.open(os.path.join(work, "shard.tar"), "w") as t:
    for i in range(5):
        for ext, data in (("png", png), ("cls", str(i % 2).encode())):
            ti = tarfile.TarInfo("sample%02d.%s" % (i, ext))
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
os.makedirs(os.path.join(work, "arrays"))
for i in range(3):  # float32 (4, 5, 3) arrays, written as numpy.save would
    hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 5, 3), }"
    hdr += " " * (63 - (10 + len(hdr)) % 64) + "\n"
    with open(os.path.join(work, "arrays/a%d.npy" % i), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
        f.write(b"\x00" * (4 * 5 * 3 * 4))
os.makedirs(os.path.join(work, "empty"))
open(os.path.join(work, "notes.txt"), "w").write("not a store\n")
PY

check() { # check PATH FORMAT PATTERN: inspect --json PATH says FORMAT and matches PATTERN
    "$tool" inspect "$1" --json > "$work/j" 2> "$work/e" || fail "inspect $1: $(cat "$work/e")"
    grep -q "^{\"format\": \"$2\"" "$work/j" || fail "$1 is not $2: $(cat "$work/j")"
    grep -q -- "$3" "$work/j" || fail "$1: no '$3' in $(cat "$work/j")"
}
check "$work/db" caffe2 '"classes": \["blue", "green", "red"\]'
check "$work/photos/train" folder '"records": 12, "labels": {"0": 4, "1": 4, "2": 4}, "classes": \["blue", "green", "red"\]'
grep -q "0(blue):4 1(green):4 2(red):4" < <("$tool" inspect "$work/photos/train") ||
    fail "folder classes: $("$tool" inspect "$work/photos/train")"
src=/usr/share/datasets/fashion-mnist
check $src/t10k-labels-idx1-ubyte.gz idx '"records": 10000'
gzip -dc $src/t10k-labels-idx1-ubyte.gz > "$work/labels-idx1-ubyte"
check "$work/labels-idx1-ubyte" idx '"labels": {"0": 1000, "1": 1000'
check "$work/shard.tar" webdataset '"records": 5, "labels": {"0": 3, "1": 2}'
grep -q '"key": "sample00", "bytes": [0-9]*, "image": "png", "height": 32, "width": 32, "channels": 3' "$work/j" ||
    fail "tar members: $(cat "$work/j")"
check "$work/arrays" npy '"records": 3, .*"key": "a0.npy", "bytes": 240, "image": "npy", "height": 4, "width": 5, "channels": 3'
check "$work/arrays/a1.npy" npy '"records": 1'
grep -q "verified: webdataset, 5 records" < <("$tool" inspect --verify "$work/shard.tar") ||
    fail "--verify of a tar"

for p in "$work/empty" "$work/notes.txt"; do
    if "$tool" inspect "$p" > "$work/o" 2> "$work/e"; then fail "$p: accepted: $(cat "$work/o")"; fi
    grep -q "^sluice inspect: $p: unrecognised format.*looked for an LMDB .*an IDX file .*a WebDataset tar .*a NumPy .npy file or a folder of them, and an image folder" "$work/e" ||
        fail "$p: $(cat "$work/e")"
done
if "$tool" inspect "$work/nothere" 2> "$work/e"; then fail "a missing path was accepted"; fi
grep -q "$work/nothere: no such file or folder" "$work/e" || fail "missing: $(cat "$work/e")"
echo "inspect_formats: all checks passed"
