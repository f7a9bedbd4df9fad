#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The training pipeline of NVIDIA's SSD example, as text with DALI's imports, runs through
# `sluice run` on the COCO fixture: readers.coco, random_bbox_crop, decoders.image_slice of the
# crop window, coin_flip, bb_flip, resize, hsv, brightness_contrast, crop_mirror_normalize and
# box_encoder (the example's resize min_filter is left out: sluice's resize does not have it). Checks the dumped batches: images (4, 3, 300, 300) float, one encoded box and label per
# anchor, every sample with a matched anchor, labels among the fixture's categories, centres
# inside the image; two epochs in different orders (shuffle_after_epoch).
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
coco=${SL_FIXTURES:-$(dirname "$0")/../fixtures}/coco
cat > "$work/ssd.py" << 'PY'
from nvidia.dali import pipeline_def
import nvidia.dali.fn as fn
import nvidia.dali.types as types

ANCHORS = [0.0, 0.0, 0.5, 0.5, 0.5, 0.0, 1.0, 0.5, 0.0, 0.5, 0.5, 1.0, 0.5, 0.5, 1.0, 1.0,
           0.1, 0.1, 0.9, 0.9, 0.25, 0.25, 0.75, 0.75]


@pipeline_def(batch_size=4, num_threads=2, seed=7)
def ssd_pipeline(file_root, annotations_file):
    inputs, bboxes, labels = fn.readers.coco(
        file_root=file_root, annotations_file=annotations_file, skip_empty=True, ratio=True,
        ltrb=True, random_shuffle=False, shuffle_after_epoch=True, name="Reader")
    crop_begin, crop_size, bboxes, labels = fn.random_bbox_crop(
        bboxes, labels, device="cpu", aspect_ratio=[0.5, 2.0],
        thresholds=[0, 0.1, 0.3, 0.5, 0.7, 0.9], scaling=[0.3, 1.0], bbox_layout="xyXY",
        allow_no_crop=True, num_attempts=50)
    images = fn.decoders.image_slice(inputs, crop_begin, crop_size, device="mixed",
                                     output_type=types.RGB)
    flip_coin = fn.random.coin_flip(probability=0.5)
    bboxes = fn.bb_flip(bboxes, ltrb=True, horizontal=flip_coin)
    images = fn.resize(images, resize_x=300, resize_y=300)
    saturation = fn.random.uniform(range=[0.5, 1.5])
    contrast = fn.random.uniform(range=[0.5, 1.5])
    brightness = fn.random.uniform(range=[0.875, 1.125])
    hue = fn.random.uniform(range=[-0.5, 0.5])
    images = fn.hsv(images, dtype=types.FLOAT, hue=hue, saturation=saturation)
    images = fn.brightness_contrast(images, brightness=brightness, contrast_center=128,
                                    contrast=contrast)
    images = fn.crop_mirror_normalize(images, crop=(300, 300),
                                      mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
                                      std=[0.229 * 255, 0.224 * 255, 0.225 * 255],
                                      mirror=flip_coin, dtype=types.FLOAT, output_layout="CHW",
                                      pad_output=False)
    bboxes, labels = fn.box_encoder(bboxes, labels, criteria=0.5, anchors=ANCHORS)
    labels = labels.gpu()
    bboxes = bboxes.gpu()
    return images, bboxes, labels
PY
"$tool" run "$work/ssd.py" --arg file_root="$coco/images" \
    --arg annotations_file="$coco/instances.json" --devices cpu --epochs 2 --dump "$work/d" \
    --trace "$work/trace" > "$work/out" 2> "$work/e" || fail "run: $(cat "$work/e")"
"$py" - "$work/d" "$work/trace" << 'PY' || fail "outputs"
import sys
import numpy as np
d, trace = sys.argv[1], sys.argv[2]
for epoch in (0, 1):
    img = np.load("%s/images_%d_0_0.npy" % (d, epoch))
    box = np.load("%s/bboxes_%d_0_0.npy" % (d, epoch))
    lab = np.load("%s/labels_%d_0_0.npy" % (d, epoch))
    assert img.shape == (4, 3, 300, 300) and img.dtype == np.float32, img.shape
    assert box.shape == (4, 6, 4) and box.dtype == np.float32, box.shape
    assert lab.shape == (4, 6) and lab.dtype == np.int32, lab.shape
    assert set(np.unique(lab)) <= {0, 1, 2, 3}, np.unique(lab)
    assert (lab != 0).any(axis=1).all(), lab  # every sample keeps a box, matched to an anchor
    m = lab != 0
    assert (box[m][:, :2] >= 0).all() and (box[m][:, :2] <= 1).all()  # centres
    assert np.isfinite(img).all() and abs(img.mean()) < 3
keys = [l.split("\t")[4] for l in open(trace).read().splitlines()[1:]]
assert len(keys) == 8 and sorted(keys[:4]) == sorted(keys[4:]) and keys[:4] != keys[4:], keys
PY
echo "cli ssd text: ok"
