#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# sluice ops --json: one JSON object whose ops are the ones `sluice ops` lists, in the same order,
# each with its arguments, plus the common arguments; one op by name; unknown names.
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
py=/usr/bin/python3

"$tool" ops > "$work/ops.txt"
"$tool" ops --json > "$work/ops.json"
# the text listing: an op's first line is "name  (devices: ...", flush left; the common arguments
# paragraph follows the last op
grep -E '^[a-z0-9_.]+  \(devices: ' "$work/ops.txt" | sed 's/  (devices:.*//' > "$work/names.txt"
grep -q '^Common arguments' "$work/ops.txt" || fail "no common arguments paragraph"
"$py" - "$work/ops.json" "$work/names.txt" <<'PY' || fail "ops --json"
import json, sys
d = json.load(open(sys.argv[1]))
names = open(sys.argv[2]).read().split()
got = [o["name"] for o in d["ops"]]
assert got == names, (got, names)
assert len(got) > 30
types = {"bool", "int", "float", "str", "dtype", "enum", "ints", "floats", "strs", "features"}
for o in d["ops"]:
    assert set(o) >= {"name", "doc", "devices", "min_inputs", "max_inputs", "reader", "random",
                      "args"}, o
    assert o["devices"] and set(o["devices"]) <= {"cpu", "mixed", "gpu"}, o
    for a in o["args"]:
        assert a["type"] in types, a
        assert (a["choices"] is not None) == (a["type"] == "enum"), a
        assert isinstance(a["required"], bool) and isinstance(a["per_sample"], bool)
        assert isinstance(a["per_frame"], bool) and (not a["per_frame"] or o["sequences"]), a
        assert a["default"] is None or isinstance(a["default"], str)
wa = next(o for o in d["ops"] if o["name"] == "warp_affine")
assert wa["sequences"] and next(a for a in wa["args"] if a["name"] == "matrix")["per_frame"], wa
assert not next(o for o in d["ops"] if o["name"] == "readers.caffe2")["sequences"]
c2 = next(o for o in d["ops"] if o["name"] == "readers.caffe2")
assert c2["reader"] and c2["min_inputs"] == 0
path = next(a for a in c2["args"] if a["name"] == "path")
assert path["required"] and path["type"] == "strs" and path["default"] is None, path
common = {a["name"]: a for a in d["common_args"]}
assert list(common) == ["device", "name", "seed", "preserve", "bytes_per_sample_hint"], common
assert common["device"]["choices"] == "cpu|mixed|gpu"
assert common["bytes_per_sample_hint"]["default"] == "[0]"
PY

# one op, with or without fn.
"$tool" ops --json fn.decoders.image | "$py" -c '
import json, sys
d = json.load(sys.stdin)
assert [o["name"] for o in d["ops"]] == ["decoders.image"], d["ops"]
assert any(a["name"] == "output_type" and a["type"] == "enum" for a in d["ops"][0]["args"])
assert len(d["common_args"]) == 5' || fail "ops --json fn.decoders.image"

# an alias (DALI's other name) shows its op, which lists its aliases; listings name it once
"$tool" ops --json experimental.equalize | "$py" -c '
import json, sys
d = json.load(sys.stdin)
assert [(o["name"], o["aliases"]) for o in d["ops"]] == [("equalize", ["experimental.equalize"])]
' || fail "ops --json experimental.equalize"
"$tool" ops image_decoder > "$work/alias.txt"
sed -n 2p "$work/alias.txt" | grep -x "  also named: image_decoder, experimental.decoders.image" > /dev/null ||
    fail "ops image_decoder: $(head -2 "$work/alias.txt")"
if grep -x "experimental.equalize" "$work/names.txt" > /dev/null; then fail "alias listed"; fi

# unknown names: a suggestion on stderr, exit status 1
if "$tool" ops --json decoders.imag > "$work/out" 2> "$work/err"; then fail "unknown op accepted"; fi
grep -q "did you mean 'decoders.image'" "$work/err" || fail "suggestion: $(cat "$work/err")"
if "$tool" ops --bogus > "$work/out" 2> "$work/err"; then fail "--bogus accepted"; fi
# --names --json: the names alone, as JSON (--names was ignored under --json)
[ "$("$tool" ops --names --json readers)" = '{"names": ["readers.caffe", "readers.caffe2", "readers.coco", "readers.file", "readers.mnist", "readers.mxnet", "readers.nemo_asr", "readers.numpy", "readers.sequence", "readers.tfrecord", "readers.webdataset"]}' ] ||
    fail "--names --json readers: $("$tool" ops --names --json readers)"
[ "$("$tool" ops --names --json resize)" = '{"names": ["resize"]}' ] || fail "--names --json resize"
"$tool" ops --names --json | python3 -c "
import json, sys
d = json.load(sys.stdin)
assert list(d) == ['names'] and 'readers.caffe2' in d['names'] and len(d['names']) > 20, d
" || fail "--names --json"
# the sequence trait in the text listing: the op's line and its per-frame arguments
"$tool" ops warp_affine > "$work/wa.txt"
grep "^warp_affine .*sequences: frame by frame" "$work/wa.txt" > /dev/null || fail "warp_affine: $(head -1 "$work/wa.txt")"
grep "^  matrix .*per-sample, per-frame" "$work/wa.txt" > /dev/null || fail "warp_affine matrix: $(cat "$work/wa.txt")"
"$tool" ops cast > "$work/cast.txt"
if grep "sequences\|per-frame" "$work/cast.txt" > /dev/null; then fail "cast: $(cat "$work/cast.txt")"; fi
echo "ops_json: ok"
