#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every argument a user types is used or refused with an error naming it:
#  - run/train --arg NAME that the pipeline text never uses (a typo would be ignored): refused,
#    naming NAME and the nearest name the text uses; a name used only inside a string or a
#    comment does not count;
#  - run --dump-steps without --dump; run --checkpoint-at STEP that the run never reaches (it
#    wrote no checkpoint and exited 0);
#  - convert --quality / --images / --labels with --from folder, --in with --from idx, --quality
#    with --raw;
#  - reader arguments that the reader would not read: readers.caffe2 num_labels with a non-sparse
#    label_type, initial_fill < 1 unshuffled, seed < -1 (read as -1), a negative
#    additional_inputs (it was reported as a wrong output count); readers.file labels without
#    files; readers.numpy file_filter with files or file_list;
#  - train on a pipeline whose epoch cannot be counted (two readers, none named) stops at once
#    instead of training forever;
#  - train --data DIR that reaches nothing: the pipelines do not use data_path (or --arg
#    data_path overrides it) and DIR holds no labels.txt.
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
data="$SL_FIXTURES/caffe2-fmnist-256"
refused() { # refused PATTERN CMD...: CMD exits non-zero (not by a timeout) saying PATTERN
    local pattern=$1 rc=0
    shift
    timeout 120 "$@" > "$work/o" 2> "$work/e" || rc=$?
    [ $rc -ne 0 ] || fail "accepted: $*"
    [ $rc -ne 124 ] || fail "ran until killed: $*"
    grep -qF -- "$pattern" "$work/e" || fail "$*: $(cat "$work/e")"
}
cat > "$work/p.py" << 'PY'
# image_size is in this comment only
@pipeline_def(batch_size=8)
def p(data_path):
    jpegs, labels = fn.readers.caffe2(path=data_path, name="image_size")
    return labels
PY
"$tool" run "$work/p.py" --arg data_path="$data" 2> "$work/e" || fail "run: $(cat "$work/e")"
refused "--arg data_pth=$data: $work/p.py does not use the name 'data_pth' (did you mean 'data_path'?)" \
    "$tool" run "$work/p.py" --arg data_path="$data" --arg data_pth="$data"
refused "--arg image_size=28: $work/p.py does not use the name 'image_size'" \
    "$tool" run "$work/p.py" --arg data_path="$data" --arg image_size=28
refused "--dump-steps 2 limits --dump DIR, which is not given" \
    "$tool" run "$work/p.py" --arg data_path="$data" --dump-steps 2
refused "--checkpoint-at 100: the run ended after 32 steps; no checkpoint was written" \
    "$tool" run "$work/p.py" --arg data_path="$data" --checkpoint "$work/ck" --checkpoint-at 100
[ ! -e "$work/ck" ] || fail "a checkpoint was written"
"$tool" run "$work/p.py" --arg data_path="$data" --checkpoint "$work/ck" --checkpoint-at 3 \
    2> "$work/e" || fail "--checkpoint-at 3: $(cat "$work/e")"
[ -s "$work/ck" ] || fail "no checkpoint at step 3"

mkdir -p "$work/imgs/a" && cp "$SL_FIXTURES"/dali_extra/jpeg/padlock-406986_640.jpg "$work/imgs/a/"
src=/usr/share/datasets/fashion-mnist
idx=(--from idx --images $src/t10k-images-idx3-ubyte.gz --labels $src/t10k-labels-idx1-ubyte.gz)
refused "--quality is for --from idx" \
    "$tool" convert --from folder --in "$work/imgs" --to caffe2 --out "$work/db1" --quality 50
refused "--images is for --from idx" \
    "$tool" convert --from folder --in "$work/imgs" --to caffe2 --out "$work/db2" --images x
refused "--labels is for --from idx" \
    "$tool" convert --from folder --in "$work/imgs" --to caffe2 --out "$work/db2" --labels x
refused "--in is for --from folder" \
    "$tool" convert "${idx[@]}" --in "$work/imgs" --to caffe2 --out "$work/db3"
refused "--quality is for JPEG records; --raw stores pixels" \
    "$tool" convert "${idx[@]}" --raw --quality 80 --to caffe2 --out "$work/db4"
for d in db1 db2 db3 db4; do [ ! -e "$work/$d" ] || fail "$d written"; done

reader() { # reader 'ARGS' PATTERN: fn.readers.ARGS in a pipeline is refused, saying PATTERN
    printf '@pipeline_def(batch_size=2)\ndef p():\n    a, b = fn.readers.%s\n    return a\n' \
        "$1" > "$work/r.py"
    refused "$2" "$tool" run "$work/r.py" --steps 1
}
reader "caffe2(path=\"$data\", num_labels=5)" \
    "readers.caffe2: num_labels=5 is for the sparse label types (label_type 1 or 3)"
reader "caffe2(path=\"$data\", initial_fill=0)" "readers.caffe2: initial_fill must be >= 1 (got 0)"
reader "caffe2(path=\"$data\", seed=-7)" "readers.caffe2: seed must be >= 0, or -1 for the pipeline's"
reader "caffe2(path=\"$data\", additional_inputs=-1)" "readers.caffe2: additional_inputs -1 out of range"
mkdir -p "$work/imgs/b" && cp "$work/imgs/a/"* "$work/imgs/b/"
reader "file(file_root=\"$work/imgs\", labels=[1, 0])" \
    "readers.file: labels go with files=[...]; file_root's class sub-folders give the labels"
python3 -c "
import struct, sys
h = \"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\"
h += ' ' * (63 - (10 + len(h)) % 64) + '\n'
open(sys.argv[1], 'wb').write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(h)) + h.encode() + b'\0' * 8)
" "$work/x.npy"
printf '@pipeline_def(batch_size=2)\ndef p():\n    return fn.readers.numpy(file_root="%s", files=["x.npy"], file_filter="*.txt")\n' \
    "$work" > "$work/r.py"
refused "readers.numpy: file_filter picks files under file_root; with files it would be ignored" \
    "$tool" run "$work/r.py" --steps 1
printf '@pipeline_def(batch_size=2)\ndef p():\n    return fn.readers.numpy(file_root="%s", files=["x.npy"])\n' \
    "$work" > "$work/r.py"
"$tool" run "$work/r.py" --steps 1 2> "$work/e" || fail "numpy files=: $(cat "$work/e")"

cat > "$work/two.py" << 'PY'
@data_iterator(output_map=["images", "labels"], sharding=sharding)
def two(data_path, num_shards, shard_id):
    jpegs, labels = fn.readers.caffe2(path=data_path, name="first", num_shards=num_shards,
                                      shard_id=shard_id)
    more, _ = fn.readers.caffe2(path=data_path, name="second")
    images = fn.decoders.image(jpegs, device="mixed", output_type=types.GRAY)
    images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, std=[255.0])
    return images, fn.one_hot(labels.gpu(), num_classes=num_classes)
PY
mkdir -p "$work/data" && ln -s "$data" "$work/data/training" && ln -s "$data" "$work/data/testing"
refused "two.py: the epoch has no size: the pipeline has 2 readers ('first', 'second')" \
    "$tool" train --data "$work/data" --devices cpu --train-pipeline "$work/two.py" --epochs 1
sed 's/def two(data_path, num_shards, shard_id):/def two(num_shards, shard_id):/; s/path=data_path/path=path/g' \
    "$work/two.py" > "$work/fixed.py"
refused "--data $work/nowhere: neither pipeline uses data_path, and it holds no training/labels.txt" \
    "$tool" train --data "$work/nowhere" --devices cpu --train-pipeline "$work/fixed.py" \
    --val-pipeline "$work/fixed.py" --arg path="$data" --epochs 1
refused "--data $work/nowhere: --arg data_path overrides it" \
    "$tool" train --data "$work/nowhere" --devices cpu --arg data_path="$data" --epochs 1
echo "args_refused: all checks passed"
