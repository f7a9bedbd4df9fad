# SPDX-License-Identifier: Apache-2.0
"""readers.coco on the fixture data set (tests/make_coco.py: shapes with known boxes, category ids
with gaps, images without objects, a crowd, a box on the border, boxes too small or degenerate)
against a reference written here from the JSON with numpy, for every combination of ltrb, ratio,
skip_empty, size_threshold, avoid_class_remapping and include_iscrowd; shards cover the set once;
a shuffled order does not depend on the thread count and resumes exactly from a checkpoint;
hostile annotation files are errors naming the file and the entry."""

import itertools
import json
import os

import numpy as np
import pytest

import sluice
import sluice.fn as fn
from conftest import FIXTURES
from sluice import pipeline_def

ROOT = os.path.join(FIXTURES, "coco")
IMAGES = os.path.join(ROOT, "images")
ANN = os.path.join(ROOT, "instances.json")


def reference(doc, ltrb=False, ratio=False, skip_empty=False, size_threshold=0.1,
              avoid_class_remapping=False, include_iscrowd=True):
    """[(image id, file name, boxes (n, 4) float32, labels (n,) int32)] in DALI's order"""
    remap = {c["id"]: k + 1 for k, c in enumerate(doc["categories"])}
    out = []
    for im in sorted(doc["images"], key=lambda im: im["id"]):
        boxes, labels = [], []
        for a in doc["annotations"]:
            if a["image_id"] != im["id"]:
                continue
            b = np.float32(a["bbox"])
            if not (b[2] >= np.float32(size_threshold) and b[3] >= np.float32(size_threshold)):
                continue
            if a.get("iscrowd", 0) and not include_iscrowd:
                continue
            if ltrb:
                b[2] += b[0]
                b[3] += b[1]
            if ratio:
                b = b / np.float32([im["width"], im["height"], im["width"], im["height"]])
            boxes.append(b)
            labels.append(a["category_id"] if avoid_class_remapping else remap[a["category_id"]])
        if skip_empty and not boxes:
            continue
        out.append((im["id"], im["file_name"], np.float32(boxes).reshape(-1, 4),
                    np.int32(labels)))
    return out


def read(batch, batches=1, threads=2, ann=ANN, checkpoint=None, keep=None, **kw):
    @pipeline_def(batch_size=batch, num_threads=threads, device_id=None, checkpoint=checkpoint,
                  enable_checkpointing=True)
    def p():
        return fn.readers.coco(file_root=IMAGES, annotations_file=ann, image_ids=True, name="r",
                               **kw)

    pipe = p()
    pipe.build()
    got = []
    for _ in range(batches):
        o = pipe.run()
        got += [tuple(o[k].at(i) for k in range(4)) for i in range(batch)]
    if keep is not None:
        keep.append(pipe)
    else:
        pipe.close()
    return got


def load():
    with open(ANN) as f:
        return json.load(f)


OPTIONS = list(itertools.product([False, True], [False, True], [False, True], [0.1, 0.0, 15.0],
                                 [False, True], [True, False]))


@pytest.mark.parametrize("ltrb,ratio,skip_empty,thr,keep_ids,crowd", OPTIONS)
def test_every_option_as_the_reference(ltrb, ratio, skip_empty, thr, keep_ids, crowd):
    want = reference(load(), ltrb, ratio, skip_empty, thr, keep_ids, crowd)
    got = read(len(want), ltrb=ltrb, ratio=ratio, skip_empty=skip_empty, size_threshold=thr,
               avoid_class_remapping=keep_ids, include_iscrowd=crowd)
    assert len(got) == len(want)
    for (jpeg, boxes, labels, iid), (wid, name, wboxes, wlabels) in zip(got, want):
        assert iid.tolist() == [wid]
        with open(os.path.join(IMAGES, name), "rb") as f:
            assert bytes(jpeg) == f.read(), name
        assert boxes.dtype == np.float32 and boxes.shape == wboxes.shape, name
        assert np.array_equal(boxes, wboxes), name
        assert labels.dtype == np.int32 and labels.tolist() == wlabels.tolist(), name


def test_fixture_holds_what_the_tests_need():
    doc = load()
    ids = [c["id"] for c in doc["categories"]]
    assert ids != sorted(ids) and max(ids) > len(ids)  # out of order, with gaps
    used = {a["image_id"] for a in doc["annotations"]}
    assert sum(im["id"] not in used for im in doc["images"]) == 2
    assert any(a["iscrowd"] for a in doc["annotations"])
    on_border = [a for a in doc["annotations"] for im in doc["images"] if im["id"] == a["image_id"]
                 and (a["bbox"][0] == 0 or a["bbox"][0] + a["bbox"][2] == im["width"])]
    assert on_border
    assert any(a["bbox"][3] == 0 for a in doc["annotations"])
    # the default threshold drops the thin and the degenerate box, 0 keeps the thin one only... and
    # the degenerate one too (0 >= 0), as DALI
    n = lambda **kw: sum(len(r[2]) for r in reference(doc, **kw))
    assert n() == len(doc["annotations"]) - 2
    assert n(size_threshold=0.0) == len(doc["annotations"])


def test_boxes_are_where_the_shapes_are():
    """the boxes frame the drawn rectangles: inside is their colour"""
    dec = []

    @pipeline_def(batch_size=6, num_threads=1, device_id=None)
    def p():
        jpegs, boxes, labels = fn.readers.coco(file_root=IMAGES, annotations_file=ANN, ltrb=True,
                                               include_iscrowd=False)  # the crowd is no shape
        return fn.decoders.image(jpegs), boxes, labels

    pipe = p()
    pipe.build()
    o = pipe.run()
    for i in range(6):
        img, boxes, labels = o[0].at(i).astype(int), o[1].at(i), o[2].at(i)
        for (l, t, r, b), lab in zip(boxes, labels):
            if lab != 2:  # rectangles fill their box
                continue
            inner = img[int(t) + 1:int(b) - 1, int(l) + 1:int(r) - 1]
            assert (inner[..., 0] > 180).mean() > 0.95
            dec.append(lab)
    pipe.close()
    assert len(dec) >= 4


def test_shards_cover_the_set_once_and_meta_counts_it():
    want = [r[0] for r in reference(load())]
    seen = []
    for s in range(3):
        holder = []
        got = read(1, batches=2, num_shards=3, shard_id=s, keep=holder)
        assert holder[0].epoch_size("r") == len(want)
        holder[0].close()
        seen += [g[3][0] for g in got]
    assert sorted(seen) == sorted(want)


def test_shuffle_same_for_any_thread_count_and_resumes_from_checkpoint():
    kw = dict(random_shuffle=True, initial_fill=3, seed=11)
    one = read(2, batches=6, threads=1, **kw)
    three = read(2, batches=6, threads=3, **kw)
    ids = lambda got: [g[3][0] for g in got]
    assert ids(one) == ids(three)
    assert ids(one)[:6] != [r[0] for r in reference(load())]  # shuffled
    held = []
    read(2, batches=2, keep=held, **kw)
    ck = held[0].checkpoint()
    held[0].close()
    rest = read(2, batches=4, checkpoint=ck, **kw)
    assert ids(rest) == ids(one)[4:]
    for a, b in zip(rest, one[4:]):
        assert np.array_equal(a[1], b[1]) and np.array_equal(a[2], b[2])


def test_shuffle_after_epoch_same_order_on_every_shard_count_of_one():
    got = read(3, batches=4, shuffle_after_epoch=True)
    ids = [g[3][0] for g in got]
    assert sorted(ids[:6]) == sorted(ids[6:]) == sorted(r[0] for r in reference(load()))
    assert ids[:6] != ids[6:]


def bad(tmp_path, edit):
    doc = load()
    edit(doc)
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(doc))
    return str(p)


def _set(path, value):
    def f(doc):
        obj = doc
        for k in path[:-1]:
            obj = obj[k]
        obj[path[-1]] = value
    return f


HOSTILE = [
    # Python writes NaN and Infinity, which JSON does not have: the spot is named
    (_set(["annotations", 3, "bbox"], [1, 2, float("nan"), 4]), r"1:\d+: not valid JSON"),
    (_set(["annotations", 3, "bbox"], [1, 2, 1e300 * 1e300, 4]), r"1:\d+: not valid JSON"),
    (_set(["annotations", 3, "bbox"], [1, 2, 4e38, 4]), r"annotations\[3\] \(id 1003\).*bbox.*finite"),
    (_set(["annotations", 2, "bbox"], [1, 2, -3, 4]), r"annotations\[2\] \(id 1002\).*negative width"),
    (_set(["annotations", 0, "bbox"], [1, 2, 3]), r"annotations\[0\] \(id 1000\).*4 numbers"),
    (_set(["annotations", 1, "bbox"], "1 2 3 4"), r"annotations\[1\] \(id 1001\).*4 numbers"),
    (_set(["annotations", 4, "image_id"], 999), r"annotations\[4\] \(id 1004\).*image_id 999"),
    (_set(["annotations", 5, "category_id"], 2), r"annotations\[5\] \(id 1005\).*category_id 2"),
    (_set(["annotations", 5, "category_id"], "3"), r"annotations\[5\].*category_id.*not a number"),
    (_set(["annotations", 6, "image_id"], 1.5), r"annotations\[6\].*image_id.*not an integer"),
    (_set(["annotations", 6, "image_id"], 2 ** 40), r"annotations\[6\].*image_id.*int32"),
    (_set(["images", 2, "file_name"], 7), r"images\[2\] \(id 100\).*file_name"),
    (_set(["images", 1, "id"], 42), r"images\[0\] and images\[1\] share the id 42"),
    (_set(["images", 3], []), r"images\[3\] is not an object"),
    (_set(["categories", 1, "id"], 3), r"two categories have the id 3"),
    (_set(["annotations"], {}), r"the top-level object's \"annotations\" is not an array"),
    (lambda doc: doc.pop("images"), r"the top-level object has no \"images\" array"),
]


@pytest.mark.parametrize("edit,msg", HOSTILE)
def test_hostile_annotations_name_file_and_entry(tmp_path, edit, msg):
    path = bad(tmp_path, edit)
    with pytest.raises(sluice.FormatError, match=r"readers\.coco: .*bad\.json:\s?" + msg):
        read(1, ann=path)


def test_truncated_and_huge_files(tmp_path):
    with open(ANN) as f:
        text = f.read()
    p = tmp_path / "cut.json"
    p.write_text(text[: len(text) // 2])
    with pytest.raises(sluice.FormatError, match=r"cut\.json:\d+:\d+: not valid JSON"):
        read(1, ann=str(p))
    p = tmp_path / "deep.json"
    p.write_text('{"images": ' + "[" * 100000 + "]" * 100000 + "}")
    with pytest.raises(sluice.FormatError, match=r"deep\.json:1:\d+: not valid JSON"):
        read(1, ann=str(p))
    p = tmp_path / "many.json"  # many annotations, all checked: the last one is bad
    doc = load()
    doc["annotations"] = [dict(doc["annotations"][0], id=i) for i in range(200000)]
    doc["annotations"][-1]["bbox"] = [0, 0, 1e39, 1]
    p.write_text(json.dumps(doc))
    with pytest.raises(sluice.FormatError, match=r"annotations\[199999\] \(id 199999\).*finite"):
        read(1, ann=str(p))
    with pytest.raises(sluice.Error, match=r"nothere\.json"):
        read(1, ann=str(tmp_path / "nothere.json"))


def test_ratio_needs_image_sizes(tmp_path):
    path = bad(tmp_path, lambda doc: doc["images"][1].pop("width"))
    read(1, ann=path)  # without ratio the size is not needed
    with pytest.raises(sluice.FormatError, match=r"images\[1\] \(id 7\).*width.*ratio"):
        read(1, ann=path, ratio=True)


@pytest.mark.parametrize("arg", [dict(images=["a.jpg"])])
def test_unsupported_arguments_refused(arg):
    with pytest.raises(sluice.NotSupportedError, match="readers.coco: " + next(iter(arg))):
        read(1, **arg)


def test_missing_image_file_names_it(tmp_path):
    path = bad(tmp_path, _set(["images", 0, "file_name"], "gone.jpg"))
    with pytest.raises(sluice.Error, match=r"readers\.coco: key gone\.jpg: .*gone\.jpg"):
        read(6, ann=path)


def flip_reference(boxes, h, v, ltrb):
    """DALI's bb_flip in float32: corners mirrored (x -> 1 - x) and swapped"""
    b = boxes.astype(np.float32).copy()
    one = np.float32(1)
    for axis, on in ((0, h), (1, v)):
        if not on:
            continue
        lo = b[:, axis].copy()
        hi = b[:, axis + 2].copy() if ltrb else lo + b[:, axis + 2]
        nlo, nhi = one - hi, one - lo
        b[:, axis] = nlo
        b[:, axis + 2] = nhi if ltrb else nhi - nlo
    return b


@pytest.mark.parametrize("ltrb", [False, True])
def test_bb_flip_per_sample_as_the_reference(ltrb):
    """boxes on the border, empty box lists and a degenerate box, flipped by per-sample coins"""
    @pipeline_def(batch_size=6, num_threads=3, device_id=None, seed=5)
    def p():
        _, boxes, _ = fn.readers.coco(file_root=IMAGES, annotations_file=ANN, ratio=True,
                                      ltrb=ltrb, size_threshold=0.0)
        h = fn.random.coin_flip(probability=0.5)
        v = fn.random.coin_flip(probability=0.5, seed=9)
        return boxes, h, v, fn.bb_flip(boxes, ltrb=ltrb, horizontal=h, vertical=v), \
            fn.bb_flip(boxes, ltrb=ltrb)

    pipe = p()
    pipe.build()
    flags = set()
    for _ in range(3):
        o = pipe.run()
        for i in range(6):
            boxes, h, v, got, plain = (o[k].at(i) for k in range(5))
            flags.add((int(h), int(v)))
            want = flip_reference(boxes, int(h), int(v), ltrb)
            assert got.dtype == np.float32 and got.shape == boxes.shape
            assert np.array_equal(got, want)
            assert np.array_equal(plain, flip_reference(boxes, 1, 0, ltrb))  # DALI's defaults
    pipe.close()
    assert len(flags) >= 3


def test_bb_flip_refuses_what_are_not_boxes():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def p():
        _, _, labels = fn.readers.coco(file_root=IMAGES, annotations_file=ANN)
        return fn.bb_flip(labels)

    with pytest.raises(sluice.Error, match="bb_flip: boxes must be float"):
        pipe = p()
        pipe.build()
        pipe.run()


def ssd_like_anchors():
    """a small SSD-style set: 4x4 and 2x2 grids, two aspect ratios each, clipped to [0, 1]"""
    out = []
    for fm, size in ((4, 0.3), (2, 0.6)):
        for j in range(fm):
            for i in range(fm):
                cx, cy = (i + 0.5) / fm, (j + 0.5) / fm
                for w, h in ((size, size), (size * 1.4, size / 1.4)):
                    out.append([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2])
    return np.clip(np.float32(out), 0, 1)


def encode_reference(boxes, labels, anchors, criteria=0.5, offset=False, scale=1.0,
                     means=(0, 0, 0, 0), stds=(1, 1, 1, 1)):
    """DALI's box_encoder in float32 (box_encoder.c has the rule in words)"""
    f = np.float32
    m = len(anchors)
    ce = lambda b: np.stack([(b[:, 0] + b[:, 2]) * f(0.5), (b[:, 1] + b[:, 3]) * f(0.5),
                             b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]], 1)
    out = np.zeros((m, 4), f) if offset else ce(anchors)
    lab = np.zeros(m, np.int32)
    if len(boxes) == 0:
        return out, lab
    a, b = anchors[None], boxes[:, None]
    l, t = np.maximum(b[..., 0], a[..., 0]), np.maximum(b[..., 1], a[..., 1])
    r, btm = np.minimum(b[..., 2], a[..., 2]), np.minimum(b[..., 3], a[..., 3])
    ok = (r > l) & (btm > t)
    inter = (r - l) * (btm - t)
    uni = (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1]) + \
        (a[..., 2] - a[..., 0]) * (a[..., 3] - a[..., 1]) - inter
    with np.errstate(all="ignore"):
        ious = np.where(ok & (uni > 0), inter / uni, f(0)).astype(f)
    last_argmax = lambda x, axis: x.shape[axis] - 1 - np.argmax(np.flip(x, axis), axis)
    best_anchor = last_argmax(ious, 1)
    ious[np.arange(len(boxes)), best_anchor] = 2
    best_box = last_argmax(ious, 0)
    matched = ious[best_box, np.arange(m)] > f(criteria)
    bc, ac = ce(boxes)[best_box] * f(scale), ce(anchors) * f(scale)
    if offset:
        enc = np.empty((m, 4), f)
        enc[:, :2] = ((bc[:, :2] - ac[:, :2]) / ac[:, 2:] - f(means)[:2]) / f(stds)[:2]
        with np.errstate(divide="ignore"):  # a degenerate box's log(0): -inf, as DALI
            enc[:, 2:] = (np.log(bc[:, 2:] / ac[:, 2:]) - f(means)[2:]) / f(stds)[2:]
    else:
        enc = ce(boxes)[best_box]
    out[matched] = enc[matched]
    lab[matched] = labels[best_box][matched]
    return out, lab


@pytest.mark.parametrize("offset,criteria", [(False, 0.5), (True, 0.5), (True, 0.2),
                                             (False, 0.0)])
def test_box_encoder_as_the_reference(offset, criteria):
    """empty box lists, boxes on the border and a degenerate one (threshold 0) included"""
    anchors = ssd_like_anchors()
    kw = dict(criteria=criteria, offset=offset)
    if offset:
        kw.update(scale=300.0, means=[0.0, 0.0, 0.0, 0.0], stds=[0.1, 0.1, 0.2, 0.2])

    @pipeline_def(batch_size=6, num_threads=2, device_id=None)
    def p():
        _, boxes, labels = fn.readers.coco(file_root=IMAGES, annotations_file=ANN, ratio=True,
                                           ltrb=True, size_threshold=0.0)
        enc, lab = fn.box_encoder(boxes, labels, anchors=anchors.ravel().tolist(), **kw)
        return boxes, labels, enc, lab

    pipe = p()
    pipe.build()
    o = pipe.run()
    matched = 0
    for i in range(6):
        boxes, labels, enc, lab = (o[k].at(i) for k in range(4))
        want, wlab = encode_reference(boxes, labels, anchors, **kw)
        assert enc.shape == (len(anchors), 4) and enc.dtype == np.float32
        assert lab.tolist() == wlab.tolist(), i
        assert np.array_equal(enc[:, :2], want[:, :2]), i
        # log: numpy's float32 log and libm's logf may differ in the last bit
        np.testing.assert_allclose(enc[:, 2:], want[:, 2:], rtol=2e-6, atol=0)
        if not offset:
            assert np.array_equal(enc, want)
        matched += int((lab != 0).sum())
    pipe.close()
    assert matched >= 10


@pytest.mark.parametrize("kw,msg", [(dict(anchors=[0.0, 0.0, 1.0]), "4 numbers per anchor"),
                                    (dict(anchors=[0.0, 0.0, 1.0, 1.0], criteria=1.5),
                                     r"criteria must be in \[0, 1\]"),
                                    (dict(anchors=[0.0, 0.0, 1.0, 1.0], stds=[1.0, 0.0, 1.0, 1.0]),
                                     "stds must be finite and nonzero")])
def test_box_encoder_refuses_bad_arguments(kw, msg):
    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def p():
        _, boxes, labels = fn.readers.coco(file_root=IMAGES, annotations_file=ANN)
        return fn.box_encoder(boxes, labels, **kw)

    with pytest.raises(sluice.Error, match="box_encoder: .*" + msg):
        pipe = p()
        pipe.build()


def crop_reference(boxes, labels, anchor, shape, ltrb, prune=None):
    """the boxes random_bbox_crop keeps for this window, relative to it (float32)"""
    f = np.float32
    b = boxes.astype(f).copy()
    if not ltrb:
        b[:, 2:] += b[:, :2]
    lo, ext = anchor.astype(f), shape.astype(f)
    hi = lo + ext
    if prune is None:
        c = (b[:, :2] + b[:, 2:]) * f(0.5)
        keep = np.all((c >= lo) & (c < hi), 1)
    else:
        iw = np.clip(np.minimum(b[:, 2:], hi) - np.maximum(b[:, :2], lo), 0, None)
        ar = np.prod(b[:, 2:] - b[:, :2], 1)
        keep = (ar > 0) & (np.prod(iw, 1) / np.where(ar > 0, ar, 1) >= f(prune))
    idx = np.nonzero(keep)[0]
    k = b[idx]
    out = np.empty_like(k)
    out[:, :2] = (np.maximum(k[:, :2], lo) - lo) / ext
    out[:, 2:] = (np.minimum(k[:, 2:], hi) - lo) / ext
    out = np.clip(out, f(0), f(1))
    if not ltrb:
        out[:, 2:] -= out[:, :2]
    return out, labels[idx], idx


def window_iou(box_ltrb, anchor, shape):
    lo, hi = anchor, anchor + shape
    iw = np.clip(np.minimum(box_ltrb[:, 2:], hi) - np.maximum(box_ltrb[:, :2], lo), 0, None)
    inter = np.prod(iw, 1)
    return inter / (np.prod(shape) + np.prod(box_ltrb[:, 2:] - box_ltrb[:, :2], 1) - inter)


def run_crop(threads=2, batches=2, ltrb=True, **kw):
    @pipeline_def(batch_size=6, num_threads=threads, device_id=None, seed=3)
    def p():
        _, boxes, labels = fn.readers.coco(file_root=IMAGES, annotations_file=ANN, ratio=True,
                                           ltrb=ltrb, random_shuffle=True, seed=4)
        out = fn.random_bbox_crop(boxes, labels, output_bbox_indices=True, ltrb=ltrb, **kw)
        return (boxes, labels) + tuple(out)

    pipe = p()
    pipe.build()
    got = []
    for _ in range(batches):
        o = pipe.run()
        got += [[o[k].at(i) for k in range(7)] for i in range(6)]
    pipe.close()
    return got


SSD_CROP = dict(aspect_ratio=[0.5, 2.0], thresholds=[0.0, 0.1, 0.3, 0.5, 0.7, 0.9],
                scaling=[0.3, 1.0], allow_no_crop=True, num_attempts=50)


@pytest.mark.parametrize("ltrb", [True, False])
def test_random_bbox_crop_ssd_arguments(ltrb):
    """SSD's arguments: windows within scaling and aspect_ratio (or the whole image), the boxes
    kept by their centres, clipped and made relative to the window, labels and indices with them;
    the same for any thread count"""
    one = run_crop(threads=1, batches=4, ltrb=ltrb, **SSD_CROP)
    three = run_crop(threads=3, batches=4, ltrb=ltrb, **SSD_CROP)
    whole = cropped = 0
    for a, b in zip(one, three):
        assert all(np.array_equal(x, y) for x, y in zip(a, b))
        boxes, labels, anchor, shape, cboxes, clabels, idx = a
        assert anchor.dtype == shape.dtype == np.float32 and anchor.shape == shape.shape == (2,)
        if np.array_equal(anchor, [0, 0]) and np.array_equal(shape, [1, 1]):
            whole += 1
        else:
            cropped += 1
            assert np.all(shape >= np.float32(0.3)) and np.all(shape <= 1)
            assert 0.5 <= shape[0] / shape[1] <= 2.0
            assert np.all(anchor >= 0) and np.all(anchor + shape <= 1.0 + 1e-6)
        want, wlab, widx = crop_reference(boxes, labels, anchor, shape, ltrb)
        assert idx.tolist() == widx.tolist()
        assert clabels.tolist() == wlab.tolist()
        assert cboxes.shape == want.shape and np.array_equal(cboxes, want)
        if len(boxes):
            assert len(idx) > 0  # a window keeps a box
    assert whole and cropped


def test_random_bbox_crop_thresholds_and_pruning():
    got = run_crop(thresholds=[0.3], allow_no_crop=False, scaling=[0.3, 1.0],
                   aspect_ratio=[0.5, 2.0], num_attempts=100, bbox_prune_threshold=0.5,
                   threshold_type="overlap", batches=3)
    for boxes, labels, anchor, shape, cboxes, clabels, idx in got:
        if len(boxes) == 0:
            continue
        lo, hi = anchor, anchor + shape
        iw = np.clip(np.minimum(boxes[:, 2:], hi) - np.maximum(boxes[:, :2], lo), 0, None)
        ar = np.prod(boxes[:, 2:] - boxes[:, :2], 1)
        with np.errstate(all="ignore"):
            share = np.where(ar > 0, np.prod(iw, 1) / ar, 0)
        # every box (the degenerate ones have no area: dropped at size_threshold) meets 0.3
        assert np.all(share >= np.float32(0.3) - 1e-6)
        want, wlab, widx = crop_reference(boxes, labels, anchor, shape, True, prune=0.5)
        assert idx.tolist() == widx.tolist() and np.array_equal(cboxes, want)
    # IoU 0.5 with every box is impossible on the spread-out images: one box is enough here
    got = run_crop(thresholds=[0.5], allow_no_crop=False, scaling=[0.3, 1.0],
                   aspect_ratio=[0.5, 2.0], num_attempts=100, all_boxes_above_threshold=False,
                   batches=3)
    for boxes, labels, anchor, shape, cboxes, clabels, idx in got:
        if len(boxes):
            assert np.max(window_iou(boxes, anchor, shape)) >= np.float32(0.5) - 1e-6
            assert not (np.array_equal(anchor, [0, 0]) and np.array_equal(shape, [1, 1]))


def test_random_bbox_crop_impossible_thresholds():
    """bounded: after total_num_attempts the window of the best overlap so far (as DALI); unbounded:
    an error, not a hang"""
    got = run_crop(thresholds=[1.0], allow_no_crop=False, scaling=[0.3, 0.5],
                   total_num_attempts=20, batches=1)
    for boxes, labels, anchor, shape, cboxes, clabels, idx in got:
        # a window of a valid shape, its boxes those it keeps
        assert np.all(shape >= np.float32(0.3)) and np.all(shape <= np.float32(0.5))
        assert shape[0] == shape[1]
        want, wlab, widx = crop_reference(boxes, labels, anchor, shape, True)
        assert idx.tolist() == widx.tolist() and np.array_equal(cboxes, want)
    with pytest.raises(sluice.Error, match=r"random_bbox_crop: .*: no window met a threshold"):
        run_crop(thresholds=[1.0], allow_no_crop=False, scaling=[0.3, 0.5], batches=1)


@pytest.mark.parametrize("kw,msg", [(dict(thresholds=[1.5]), r"thresholds must be in \[0, 1\]"),
                                    (dict(scaling=[0.5, 0.2]), "scaling must be"),
                                    (dict(bbox_layout="xyXY"), "ltrb and bbox_layout"),
                                    (dict(crop_shape=[10, 10]), "crop_shape needs input_shape"),
                                    (dict(num_attempts=0), "num_attempts must be"),
                                    (dict(threshold_type="area"), "threshold_type")])
def test_random_bbox_crop_refuses_bad_arguments(kw, msg):
    with pytest.raises(sluice.Error, match="random_bbox_crop: " + msg):
        run_crop(batches=1, **kw)


def paste_reference(boxes, ratio, px, py, ltrb):
    f = np.float32
    ratio, px, py = f(ratio), f(px), f(py)
    scale = f(1) / ratio
    ofs = []
    for p in (px, py):
        o = p * ((ratio - f(1)) / ratio)
        if scale + o > 1:
            o = f(1) - scale
            while scale + o > 1:
                o = np.nextafter(o, f(-1))
        ofs.append(o)
    out = boxes.astype(f) * scale
    out[:, 0] += ofs[0]
    out[:, 1] += ofs[1]
    if ltrb:
        out[:, 2] += ofs[0]
        out[:, 3] += ofs[1]
    return out


@pytest.mark.parametrize("ltrb", [False, True])
def test_bbox_paste_per_sample_as_the_reference(ltrb):
    @pipeline_def(batch_size=6, num_threads=2, device_id=None, seed=8)
    def p():
        _, boxes, _ = fn.readers.coco(file_root=IMAGES, annotations_file=ANN, ratio=True,
                                      ltrb=ltrb, size_threshold=0.0)
        ratio = fn.random.uniform(range=[1.0, 3.0])
        px = fn.random.uniform(range=[0.0, 1.0])
        return boxes, ratio, px, fn.bbox_paste(boxes, ltrb=ltrb, ratio=ratio, paste_x=px,
                                               paste_y=1.0)

    pipe = p()
    pipe.build()
    o = pipe.run()
    for i in range(6):
        boxes, ratio, px, got = (o[k].at(i) for k in range(4))
        want = paste_reference(boxes, ratio, px, 1.0, ltrb)
        assert got.dtype == np.float32 and np.array_equal(got, want), i
        if len(boxes):  # boxes that were inside the image stay inside the canvas
            b = got.copy()
            if not ltrb:
                b[:, 2:] += b[:, :2]
            assert b.min() >= 0 and b.max() <= 1
    pipe.close()


def test_bbox_paste_refuses_ratio_below_one():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def p():
        _, boxes, _ = fn.readers.coco(file_root=IMAGES, annotations_file=ANN, ratio=True)
        return fn.bbox_paste(boxes, ratio=0.5)

    with pytest.raises(sluice.Error, match=r"bbox_paste: sample 0: ratio must be >= 1"):
        pipe = p()
        pipe.build()
        pipe.run()


@pytest.mark.parametrize("layout", ["", "yx"])
def test_coord_flip_per_sample_as_the_reference(layout):
    @pipeline_def(batch_size=6, num_threads=2, device_id=None, seed=2)
    def p():
        _, boxes, _ = fn.readers.coco(file_root=IMAGES, annotations_file=ANN, ratio=True,
                                      ltrb=True)
        pts = fn.reshape(boxes, shape=[-1, 2])
        fx = fn.random.coin_flip()
        cy = fn.random.uniform(range=[0.0, 1.0])
        return pts, fx, cy, fn.coord_flip(pts, layout=layout, flip_x=fx, flip_y=1, center_y=cy)

    pipe = p()
    pipe.build()
    flips = set()
    for _ in range(2):
        o = pipe.run()
        for i in range(6):
            pts, fx, cy, got = (o[k].at(i) for k in range(4))
            f = np.float32
            want = pts.astype(f).copy()
            cx_col, cy_col = (0, 1) if layout == "" else (1, 0)
            if int(fx):
                want[:, cx_col] = f(2) * f(0.5) - pts[:, cx_col]
            want[:, cy_col] = f(2) * f(cy) - pts[:, cy_col]
            assert got.dtype == f and np.array_equal(got, want), i
            flips.add(int(fx))
    pipe.close()
    assert flips == {0, 1}
