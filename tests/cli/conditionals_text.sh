#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `sluice run` takes a pipeline with conditionals on data (docs/pipelines.md, "Conditionals on
# data": its example): images of labels < 5 flipped, of the others rotated where a coin says so.
# Checked against numpy from the dumped outputs: the flipped ones are the plain decode mirrored,
# the others are either the plain decode or not (rotated); the same bytes for 1 and 3 threads.
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
data="$SL_FIXTURES/caffe2-fmnist-256"

cat > "$work/cond.py" <<'PY'
from nvidia.dali import pipeline_def
import nvidia.dali.fn as fn
import nvidia.dali.types as types


@pipeline_def(enable_conditionals=True)
def pipe(data_path):
    jpegs, labels = fn.readers.caffe2(path=data_path)
    images = fn.decoders.image(jpegs, output_type=types.GRAY)
    plain = images
    if labels < 5:
        images = fn.flip(images, horizontal=1)
    elif fn.random.coin_flip(dtype=types.BOOL):
        images = fn.rotate(images, angle=fn.random.uniform(range=[-10.0, 10.0]), keep_size=True)
    return images, labels, plain
PY
for t in 1 3; do
    "$tool" run "$work/cond.py" --arg data_path="$data" --batch-size 32 --steps 4 --threads $t \
        --dump "$work/d$t" > "$work/out$t.txt" 2>&1 || fail "threads $t: $(cat "$work/out$t.txt")"
done
/usr/bin/python3 - "$work" <<'PY' || fail "outputs differ from numpy's"
import glob, os, sys
import numpy as np
work = sys.argv[1]
files = sorted(os.path.relpath(f, work + "/d1") for f in glob.glob(work + "/d1/**/*.npy", recursive=True))
assert files, "nothing dumped"
for f in files:  # any thread count: the same bytes
    assert open(work + "/d1/" + f, "rb").read() == open(work + "/d3/" + f, "rb").read(), f
def load(kind):
    return [np.load(f) for f in sorted(glob.glob(work + "/d1/**/*%s*.npy" % kind, recursive=True))]
imgs, labs, plain = load("images_"), load("labels_"), load("plain_")
assert len(imgs) == len(labs) == len(plain) > 0, (len(imgs), len(labs), len(plain))
flipped = rotated = 0
for im, lab, pl in zip(imgs, labs, plain):
    for i in range(len(lab)):
        if int(lab[i].reshape(-1)[0]) < 5:
            assert np.array_equal(im[i], pl[i][:, ::-1]), "a flip"
            flipped += 1
        else:
            rotated += not np.array_equal(im[i], pl[i])
assert flipped and rotated, (flipped, rotated)
PY
echo ok
