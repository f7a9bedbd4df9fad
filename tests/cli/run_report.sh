#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What `sluice run` reports (small LMDB fixture, 256 records, batch 200 on cpu:2: 2 steps):
#  - timing: start-up on a line of its own and as "startup_s" in --json; epoch 0's time covers its
#    first batch (prefetching used to leave it ~0 s and millions of samples/s): it must not be
#    shorter than a quarter of what its ops took (summed per pipeline, over the 2 pipelines);
#  - outputs: listed once on stderr and as "outputs" in --json with name, global and per-device
#    shape, dtype, layout and device;
#  - --trace starts with the "# epoch\tstep\tdevice\tslot\tkey" header, once, also after a resume;
#  - a progress bar on a terminal only: under script(1) stderr is a tty and shows
#    "Epoch 0 [", redirected to a file it does not.
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
data="$SL_FIXTURES/caffe2-fmnist-256"
cat > "$work/p.py" <<'PY'
@data_iterator(output_map=["images", "labels"], reader_name="r")
def p(data_path, num_shards, shard_id):
    jpegs, labels = fn.readers.caffe2(path=data_path, name="r", num_shards=num_shards,
                                      shard_id=shard_id)
    images = fn.decoders.image(jpegs, device="mixed", output_type=types.GRAY)
    images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, std=[255.0], output_layout="CHW")
    return images, labels
PY
args=(--arg data_path="$data" --devices cpu:2 --batch-size 200)
"$tool" run "$work/p.py" "${args[@]}" --json > "$work/j" 2> /dev/null
python3 - "$work/j" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
def fail(m):
    sys.exit("FAIL: %s: %s" % (m, json.dumps(d)))
if not isinstance(d.get("startup_s"), float) or d["startup_s"] <= 0:
    fail("startup_s")
e, s = d["epochs"][0], d["stages"]
# the decoder and normaliser run one after the other in each of the 2 pipelines (side by side):
# the only epoch cannot have taken less than a fraction of half their time (it took ~0 before)
if e["seconds"] < 0.25 * (s["decode_s"] + s["cpu_ops_s"]) / 2:
    fail("epoch 0 took less time than its batches were made in")
want = [{"name": "images", "shape": [200, 1, 28, 28], "shape_per_device": [100, 1, 28, 28],
         "dtype": "float32", "layout": "NCHW", "device": "cpu"},
        {"name": "labels", "shape": [200, 1], "shape_per_device": [100, 1], "dtype": "int32",
         "layout": "", "device": "cpu"}]
if d.get("outputs") != want:
    fail("outputs")
PY
"$tool" run "$work/p.py" "${args[@]}" --epochs 2 2> "$work/e"
grep -q "^Start-up: [0-9.]* s" "$work/e" || fail "no start-up line: $(cat "$work/e")"
[ "$(grep -c "^outputs:" "$work/e")" = 1 ] || fail "outputs not listed once: $(cat "$work/e")"
grep -qF "images: (200, 1, 28, 28) global, (100, 1, 28, 28) per device (2), float32, layout NCHW, on cpu" \
    "$work/e" || fail "images line: $(cat "$work/e")"
! grep -q "\[=" "$work/e" || fail "a progress bar into a file"

"$tool" run "$work/p.py" "${args[@]}" --epochs 2 --trace "$work/t" --checkpoint "$work/ck" \
    --checkpoint-at 1 2> /dev/null
"$tool" run "$work/p.py" "${args[@]}" --epochs 2 --trace "$work/t" --resume "$work/ck" 2> /dev/null
[ "$(head -1 "$work/t")" = "$(printf '# epoch\tstep\tdevice\tslot\tkey')" ] || fail "trace header"
[ "$(grep -c "^#" "$work/t")" = 1 ] || fail "the header is not there once"
"$tool" run "$work/p.py" "${args[@]}" --epochs 2 --trace "$work/full" 2> /dev/null
cmp -s "$work/t" "$work/full" || fail "resumed trace differs"

if command -v script > /dev/null; then
    script -qec "$(printf '%q ' "$tool" run "$work/p.py" "${args[@]}")" /dev/null > "$work/tty"
    grep -q "Epoch 0 \[" "$work/tty" || fail "no progress bar on a terminal: $(cat "$work/tty")"
fi
echo "run_report: all checks passed"
