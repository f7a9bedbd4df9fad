#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Source info in pipeline text: `sluice run` of fn.get_property(files, key="source_info") dumps
# each sample's file path (readers.file over folders made here) as uint8 bytes, and
# key="layout" the layout; `sluice ops` lists get_property and its key.
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
mkdir -p "$work/root/a" "$work/root/b"
printf 'one' > "$work/root/a/1.jpg"
printf 'two!' > "$work/root/b/2.jpg"
cat > "$work/p.py" << 'PY'
@pipeline_def(batch_size=2, num_threads=1)
def p(root):
    files, labels = fn.readers.file(file_root=root)
    info = fn.get_property(fn.cast(files, dtype=types.INT32), key="source_info")
    lay = fn.get_property(fn.reshape(files, layout="B"), key="layout")
    return info, lay
PY
"$tool" run "$work/p.py" --arg root="$work/root" --devices cpu --epochs 1 --dump "$work/d" \
    > "$work/o" 2> "$work/e" || fail "run: $(cat "$work/e")"
/usr/bin/python3 - "$work" << 'PY' || fail "dump: $(ls "$work/d")"
import sys, numpy as np
w = sys.argv[1]
info = np.load(w + "/d/info_0_0_0.npy")
assert info.dtype == np.uint8, info.dtype
got = [bytes(r).decode() for r in info]
assert got == [w + "/root/a/1.jpg", w + "/root/b/2.jpg"], got
lay = np.load(w + "/d/lay_0_0_0.npy")
assert [bytes(r).decode() for r in lay] == ["B", "B"], lay
PY
"$tool" ops > "$work/ops" 2>&1 || fail "ops: $(cat "$work/ops")"
grep '^get_property ' "$work/ops" > /dev/null || fail "sluice ops lacks get_property"
grep 'the property: "source_info" or "layout"' "$work/ops" > /dev/null || fail "no key doc"
echo "source_info: ok"
