#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `sluice train` sizes its model from the training pipeline's outputs, on a 3-class data set of
# 32x32 RGB images (made here, converted with `sluice convert --from folder`), with no flag about
# sizes:
#  - one-hot labels (num_classes bound from labels.txt): "model: 3072 -> 1024 -> 1024 -> 3",
#    accuracy above chance (1/3) after the first epochs; class-id labels: the same model;
#  - --hidden 64 gives 3072 -> 64 -> 3; --arg num_classes that the pipelines do not use and that
#    contradicts the one-hot width (num_classes=3 written in the file), a
#    validation pipeline of another image size, and --resume of a checkpoint of another model are
#    errors naming both shapes; class ids with no class count anywhere say how to give one;
#  - the decorator's batch_size (per pipeline) is used, and --batch-size overrides it, saying so;
#  - an --arg that neither pipeline uses is refused, naming it; training and testing stores whose
#    labels.txt name other classes are refused.
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
here=$(dirname "$0")

python3 "$here/make_images.py" "$work/photos" 60
for split in train test; do
    dest=training
    [ $split = test ] && dest=testing
    "$tool" convert --from folder --in "$work/photos/$split" --to caffe2 \
        --out "$work/data/$dest" > /dev/null
done
pipe() { # pipe FILE SIZE LABELS: a pipeline resizing to SIZE x SIZE, labels one_hot or ids
    local labels="labels = labels.gpu()"
    [ "$3" = one_hot ] && labels="labels = fn.one_hot(labels.gpu(), num_classes=num_classes)"
    cat > "$1" << PY
@pipeline_def(batch_size=16, num_threads=2, seed=3)
def own(data_path, num_shards, shard_id):
    files, labels = fn.readers.caffe2(path=data_path, random_shuffle=True, name="reader",
                                      num_shards=num_shards, shard_id=shard_id)
    images = fn.decoders.image(files, device="cpu", output_type=types.RGB)
    images = fn.resize(images, resize_x=$2, resize_y=$2)
    images = fn.crop_mirror_normalize(images.gpu(), dtype=types.FLOAT, std=[255.0, 255.0, 255.0],
                                      output_layout="CHW")
    $labels
    return images, labels
PY
}
pipe "$work/hot.py" 32 one_hot
pipe "$work/ids.py" 32 ids
pipe "$work/ids28.py" 28 ids
sed 's/num_classes=num_classes/num_classes=3/' "$work/hot.py" > "$work/hot3.py"
train() { "$tool" train --data "$work/data" --devices cpu --epochs 3 "$@"; }

train --train-pipeline "$work/hot.py" --val-pipeline "$work/ids.py" --json > "$work/j" 2> "$work/e" ||
    fail "one-hot: $(cat "$work/e")"
python3 - "$work/j" << 'PY' || fail "one-hot run: $(cat "$work/j")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["model"] == [3072, 1024, 1024, 3], d["model"]
assert d["batch_per_device"] == 16, d  # the decorator's batch_size
best = max(e["accuracy"] for e in d["epochs"])
assert best > 0.6, "accuracy %s is not above chance (0.33)" % best
PY
train --train-pipeline "$work/ids.py" --val-pipeline "$work/ids.py" > "$work/o" 2> "$work/e" ||
    fail "class ids: $(cat "$work/e")"
grep -q "^model: 3072 -> 1024 -> 1024 -> 3 (inputs: 'images' (3, 32, 32) per sample; classes: 'labels' class ids, 3 in .*labels.txt)" "$work/o" ||
    fail "model line: $(cat "$work/o")"
acc=$(grep "^Test set accuracy" "$work/o" | tail -1 | cut -d' ' -f4)
python3 -c "import sys; sys.exit(float('$acc') <= 0.6)" || fail "class ids: accuracy $acc"

train --train-pipeline "$work/hot.py" --val-pipeline "$work/ids.py" --hidden 64 --epochs 1 \
    --batch-size 32 > "$work/o" 2> "$work/e"
grep -q "^model: 3072 -> 64 -> 3 " "$work/o" || fail "--hidden 64: $(cat "$work/o")"
grep -q "32 samples each per step" "$work/o" || fail "--batch-size 32: $(cat "$work/o")"
grep -qF -- "--batch-size 32 overrides the pipeline's batch_size=16" "$work/e" ||
    fail "no override message: $(cat "$work/e")"

expect_error() { # expect_error WHAT PATTERN ARGS...
    local what=$1 pattern=$2
    shift 2
    if train "$@" > "$work/o" 2> "$work/e"; then fail "$what: no error"; fi
    grep -qF -- "$pattern" "$work/e" || fail "$what: $(cat "$work/e")"
}
expect_error "other image size" "'images' are (3, 32, 32) per sample (3072 inputs), the validation pipeline's 'images' (3, 28, 28) (2352 inputs)" \
    --train-pipeline "$work/hot.py" --val-pipeline "$work/ids28.py"
expect_error "num_classes against one-hot" "--arg num_classes=5, but $work/hot3.py's labels 'labels' are one-hot of width 3" \
    --train-pipeline "$work/hot3.py" --val-pipeline "$work/ids.py" --arg num_classes=5
expect_error "unused --arg" "--arg imgsize=32: neither $work/hot.py nor $work/ids.py uses the name 'imgsize'" \
    --train-pipeline "$work/hot.py" --val-pipeline "$work/ids.py" --arg imgsize=32

train --train-pipeline "$work/ids.py" --val-pipeline "$work/ids.py" --epochs 1 \
    --checkpoint "$work/ck" > /dev/null 2>&1 || fail "checkpoint"
expect_error "resume another model" "the checkpoint holds a 3072 -> 1024 -> 1024 -> 3 model; the pipelines and --hidden make 2352 -> 1024 -> 1024 -> 3" \
    --train-pipeline "$work/ids28.py" --val-pipeline "$work/ids28.py" --resume "$work/ck" --epochs 2
train --train-pipeline "$work/ids.py" --val-pipeline "$work/ids.py" --resume "$work/ck" \
    --epochs 2 > "$work/o" 2> "$work/e" || fail "resume: $(cat "$work/e")"
grep -q "^Epoch 1:" "$work/o" || fail "resume: $(cat "$work/o")"

mv "$work/data/training/labels.txt" "$work/train-labels.txt"
mv "$work/data/testing/labels.txt" "$work/test-labels.txt"
expect_error "class ids, no count" "the labels 'labels' are class ids and nothing says how many classes there are: give --arg num_classes=N" \
    --train-pipeline "$work/ids.py" --val-pipeline "$work/ids.py"
train --train-pipeline "$work/ids.py" --val-pipeline "$work/ids.py" --epochs 1 \
    --arg num_classes=4 > "$work/o" 2> "$work/e" || fail "--arg num_classes=4: $(cat "$work/e")"
grep -q "^model: 3072 -> 1024 -> 1024 -> 4 .*--arg num_classes=4" "$work/o" ||
    fail "--arg num_classes=4: $(cat "$work/o")"
mv "$work/test-labels.txt" "$work/data/testing/labels.txt"
printf 'red\nblue\ngreen\n' > "$work/data/training/labels.txt"
expect_error "other class maps" "labels.txt do not name the same classes (label 0: 'red' and 'blue')" \
    --train-pipeline "$work/ids.py" --val-pipeline "$work/ids.py"
echo "train_shapes: all checks passed"
