# SPDX-License-Identifier: Apache-2.0
"""readers.coco's masks and DALI's preprocessed annotation files, on the fixture data set
(tests/make_coco.py) and edits of it: polygons and vertices against the JSON (with ratio, ltrb,
skip_empty, size thresholds, crowds left out); pixel-wise masks against a rasteriser written here
in numpy after COCO's own rule (a grid five times finer, column crossings), checked itself on
shapes whose pixels are known; RLE masks as numbers and as COCO's compressed string; the
preprocessed files' bytes against numpy's view of the annotations, read back to the same outputs,
and broken ones refused naming the file."""

import json
import math
import os
import struct

import numpy as np
import pytest

import sluice
import sluice.fn as fn
from conftest import FIXTURES
from sluice import pipeline_def

ROOT = os.path.join(FIXTURES, "coco")
IMAGES = os.path.join(ROOT, "images")
ANN = os.path.join(ROOT, "instances.json")


def load():
    with open(ANN) as f:
        return json.load(f)


def write(tmp_path, doc, name="edit.json"):
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return str(p)


def run(batch, batches=1, **kw):
    """every output of readers.coco over batches of batch samples, a list per sample"""
    if "preprocessed_annotations" not in kw:
        kw.setdefault("annotations_file", ANN)

    @pipeline_def(batch_size=batch, num_threads=2, device_id=None)
    def p():
        return fn.readers.coco(file_root=IMAGES, image_ids=True, **kw)

    pipe = p()
    pipe.build()
    got = []
    for _ in range(batches):
        o = pipe.run()
        got += [[o[k].at(i) for k in range(len(o))] for i in range(batch)]
    pipe.close()
    return got


def kept(doc, ltrb=False, skip_empty=False, size_threshold=0.1, include_iscrowd=True):
    """[(image, [annotation, ...])] in DALI's order: the annotations readers.coco keeps"""
    out = []
    for im in sorted(doc["images"], key=lambda im: im["id"]):
        anns = []
        for a in doc["annotations"]:
            b = np.float32(a["bbox"])
            if a["image_id"] != im["id"] or not (b[2] >= np.float32(size_threshold) and
                                                 b[3] >= np.float32(size_threshold)):
                continue
            if a.get("iscrowd", 0) and not include_iscrowd:
                continue
            anns.append(a)
        if skip_empty and not anns:
            continue
        out.append((im, anns))
    return out


def polygon_reference(im, anns, ratio):
    """(polygons (P, 3) int32, vertices (V, 2) float32) of one image"""
    polys, verts = [], []
    for j, a in enumerate(anns):
        seg = a.get("segmentation")
        if not isinstance(seg, list):
            continue
        for poly in seg:
            v = np.float32(poly).reshape(-1, 2)
            if ratio:
                v = v / np.float32([im["width"], im["height"]])
            polys.append([j, len(verts), len(verts) + len(v)])
            verts += list(v)
    return np.int32(polys).reshape(-1, 3), np.float32(verts).reshape(-1, 2)


OPTIONS = [dict(), dict(ratio=True), dict(ltrb=True, skip_empty=True),
           dict(size_threshold=0.0), dict(size_threshold=15.0, include_iscrowd=False)]


@pytest.mark.parametrize("kw", OPTIONS)
def test_polygons_as_the_reference(kw):
    want = kept(load(), **{k: v for k, v in kw.items() if k != "ratio"})
    got = run(len(want), polygon_masks=True, **kw)
    assert len(got[0]) == 6  # images, boxes, labels, polygons, vertices, ids
    for (img, boxes, labels, polys, verts, iid), (im, anns) in zip(got, want):
        assert iid.tolist() == [im["id"]]
        wp, wv = polygon_reference(im, anns, kw.get("ratio", False))
        assert polys.dtype == np.int32 and polys.shape == wp.shape and np.array_equal(polys, wp)
        assert verts.dtype == np.float32 and np.array_equal(verts, wv), im["file_name"]
        assert len(boxes) == len(labels) == len(anns)
        if len(polys):
            assert polys[:, 0].max() < len(anns)


# ---- COCO's rasterisation, written here from its rule ----

def poly_runs(xy, h, w):
    """column-major 0/1 runs of the polygon xy (k, 2) float32, by COCO's rule"""
    k = len(xy)
    if k == 0:
        return [h * w]
    gx = [int(5.0 * float(x) + .5) for x in xy[:, 0]]  # int(): towards zero, as C's cast
    gy = [int(5.0 * float(y) + .5) for y in xy[:, 1]]
    gx.append(gx[0])
    gy.append(gy[0])
    u, v = [], []
    for j in range(k):
        xs, xe, ys, ye = gx[j], gx[j + 1], gy[j], gy[j + 1]
        dx, dy = abs(xe - xs), abs(ys - ye)
        flip = (dx >= dy and xs > xe) or (dx < dy and ys > ye)
        if flip:
            xs, xe, ys, ye = xe, xs, ye, ys
        n = max(dx, dy)
        for d in range(n + 1):
            t = n - d if flip else d
            if dx >= dy:
                u.append(t + xs)
                v.append(-2 ** 31 if n == 0 else int(ys + (ye - ys) / dx * t + .5))
            else:
                v.append(t + ys)
                u.append(int(xs + (xe - xs) / dy * t + .5))
    a = []
    for j in range(1, len(u)):
        if u[j] == u[j - 1]:
            continue
        xd = (min(u[j], u[j - 1] + 1) if u[j] < u[j - 1] else u[j] - 1) if False else \
            (u[j] if u[j] < u[j - 1] else u[j] - 1)
        xd = (xd + .5) / 5.0 - .5
        if math.floor(xd) != xd or xd < 0 or xd > w - 1:
            continue
        yd = (min(v[j], v[j - 1]) + .5) / 5.0 - .5
        yd = math.ceil(min(max(yd, 0), h))
        a.append(int(xd) * h + yd)
    a = sorted(a + [h * w])
    d = np.diff([0] + a).tolist()
    runs = [d[0]]
    j = 1
    while j < len(d):
        if d[j] > 0:
            runs.append(d[j])
            j += 1
        else:
            j += 1
            if j < len(d):
                runs[-1] += d[j]
                j += 1
    return runs


def decode(runs, h, w):
    """column-major 0/1 runs as an (h, w) bool mask"""
    flat = np.zeros(h * w, bool)
    pos = 0
    for q, n in enumerate(runs):
        if q % 2:
            flat[pos:pos + n] = True
        pos += n
    return flat.reshape(w, h).T


def rle_string(counts):
    """COCO's compressed form of counts (its rleToString), written here"""
    out = []
    for i, c in enumerate(counts):
        x = c - counts[i - 2] if i > 2 else c
        more = True
        while more:
            ch = x & 0x1f
            x >>= 5
            more = x != -1 if ch & 0x10 else x != 0
            if more:
                ch |= 0x20
            out.append(chr(ch + 48))
    return "".join(out)


def mask_reference(im, anns, labels):
    """(h, w) int32: each label's objects' union painted in increasing label order"""
    h, w = im["height"], im["width"]
    out = np.zeros((h, w), np.int32)
    for lab in sorted(set(labels.tolist())):
        m = np.zeros((h, w), bool)
        for a, l in zip(anns, labels):
            if l != lab:
                continue
            seg = a.get("segmentation")
            if isinstance(seg, list):
                for poly in seg:
                    m |= decode(poly_runs(np.float32(poly).reshape(-1, 2), h, w), h, w)
            elif isinstance(seg, dict):
                c = seg["counts"]
                if isinstance(c, str):
                    c = unstring(c)
                m |= decode(c, h, w)
        out[m] = lab
    return out


def unstring(s):
    counts, p = [], 0
    while p < len(s):
        x, k, more = 0, 0, True
        while more:
            c = ord(s[p]) - 48
            x |= (c & 0x1f) << 5 * k
            more = c & 0x20
            p += 1
            k += 1
            if not more and c & 0x10:
                x |= -1 << 5 * k
        if len(counts) > 2:
            x += counts[-2]
        counts.append(x)
    return counts


def test_rasteriser_reference_on_known_shapes():
    """the reference itself: an axis-aligned rectangle covers exactly its pixels, a triangle
    covers about its area, and the string form of counts round-trips"""
    m = decode(poly_runs(np.float32([4, 6, 24, 6, 24, 20, 4, 20]).reshape(-1, 2), 48, 64), 48, 64)
    want = np.zeros((48, 64), bool)
    want[6:20, 4:24] = True
    assert np.array_equal(m, want)
    tri = decode(poly_runs(np.float32([20, 0, 40, 40, 0, 40]).reshape(-1, 2), 50, 50), 50, 50)
    assert abs(tri.sum() - 800) < 40
    counts = [3880, 20, 44, 20, 2180, 0, 7]
    assert unstring(rle_string(counts)) == counts


@pytest.mark.parametrize("kw", [dict(), dict(ratio=True), dict(include_iscrowd=False),
                                dict(skip_empty=True, size_threshold=0.0)])
def test_pixelwise_masks_as_the_reference(kw):
    want = kept(load(), **{k: v for k, v in kw.items() if k != "ratio"})
    got = run(len(want), pixelwise_masks=True, **kw)
    assert len(got[0]) == 5  # images, boxes, labels, masks, ids
    for (img, boxes, labels, mask, iid), (im, anns) in zip(got, want):
        assert mask.dtype == np.int32 and mask.shape == (im["height"], im["width"], 1)
        ref = mask_reference(im, anns, labels)
        assert np.array_equal(mask[..., 0], ref), im["file_name"]
    # the shapes are there: a rectangle (label 2) of f_many, and its crowd (two columns of 20
    # pixels) under the triangle (label 3) or not
    f_many = [g for g in got if g[4][0] == 9][0]
    assert (f_many[3][2:12, 2:12, 0] == 2).all()
    crowd = f_many[3][40:60, 60:62, 0]
    assert (crowd != 0).all() if kw.get("include_iscrowd", True) else (crowd != 2).all()


def test_rle_counts_as_string_same_mask(tmp_path):
    doc = load()
    crowd = [a for a in doc["annotations"] if a["iscrowd"]][0]
    plain = run(6, pixelwise_masks=True)
    crowd["segmentation"]["counts"] = rle_string(crowd["segmentation"]["counts"])
    assert isinstance(crowd["segmentation"]["counts"], str)
    got = run(6, pixelwise_masks=True, annotations_file=write(tmp_path, doc))
    for a, b in zip(plain, got):
        assert np.array_equal(a[3], b[3])


def test_overlapping_labels_larger_wins(tmp_path):
    doc = load()
    # a large rectangle (label 1 -> remapped 2) over the ellipse (3 -> 1) of b_mixed
    doc["annotations"].append({"id": 3000, "image_id": 7, "category_id": 1,
                               "bbox": [5, 5, 40, 30], "iscrowd": 0,
                               "segmentation": [[5, 5, 45, 5, 45, 35, 5, 35]]})
    got = run(6, pixelwise_masks=True, annotations_file=write(tmp_path, doc))
    b = [g for g in got if g[4][0] == 7][0]
    assert (b[3][6:34, 6:44, 0] == 2).all()  # the rectangle, labelled 2, wins over 1


HOSTILE = [
    (lambda d: d["annotations"][0].update(segmentation=[[1, 2, 3]]), r"annotations\[0\] "
     r"\(id 1000\).*segmentation.*\[0\] is a list of an odd number"),
    (lambda d: d["annotations"][1].update(segmentation=[[1, 2, "x", 4]]),
     r"annotations\[1\].*segmentation.*\[0\]\[2\] is not a finite number"),
    (lambda d: d["annotations"][1].update(segmentation="poly"),
     r"annotations\[1\].*neither a list of polygons nor an RLE"),
    (lambda d: d["annotations"][-3]["segmentation"].update(size=[10, 10]),
     r"annotations\[11\] \(id 2000\).*size.*64 x 96"),
    (lambda d: d["annotations"][-3]["segmentation"].update(counts=[3880, 20]),
     r"annotations\[11\].*counts add up to 3900 pixels, its image has 6144"),
    (lambda d: d["annotations"][-3]["segmentation"].update(counts="0\x7f"),
     r"annotations\[11\].*counts.*string is not COCO's encoding"),
    (lambda d: d["annotations"][-3]["segmentation"].update(counts=[-1, 6145]),
     r"annotations\[11\].*counts.*\[0\] is not a count of pixels"),
    (lambda d: d["images"][1].update(width=80.5), r"images\[1\] \(id 7\).*width.*whole number"),
]


@pytest.mark.parametrize("edit,msg", HOSTILE)
def test_hostile_segmentations_name_file_and_entry(tmp_path, edit, msg):
    doc = load()
    edit(doc)
    path = write(tmp_path, doc, "bad.json")
    with pytest.raises(sluice.FormatError, match=r"readers\.coco: .*bad\.json: " + msg):
        run(1, pixelwise_masks=True, annotations_file=path)


def test_polygon_far_outside_the_image_is_an_error_naming_it(tmp_path):
    doc = load()
    doc["annotations"][0]["segmentation"] = [[0, 0, 3e7, 0, 3e7, 3e7]]
    path = write(tmp_path, doc)
    got = run(6, polygon_masks=True, annotations_file=path)  # polygons alone are fine
    assert got[3][5][0] == 42 and got[3][4][1, 0] == np.float32(3e7)
    with pytest.raises(sluice.FormatError, match=r"key a_rects\.jpg \(image id 42\): pixelwise "
                       r"mask: object 0 \(polygon 0\).*outline"):
        run(6, pixelwise_masks=True, annotations_file=path)


@pytest.mark.parametrize("kw,msg", [
    (dict(polygon_masks=True, pixelwise_masks=True), "exclude each other"),
    (dict(save_preprocessed_annotations=True), "go together"),
    (dict(save_preprocessed_annotations_dir="/tmp"), "go together"),
    (dict(preprocessed_annotations="/tmp", ltrb=True),
     "ltrb has no meaning with preprocessed"),
    (dict(annotations_file=""), "annotations_file or preprocessed_annotations is required"),
])
def test_argument_rules(kw, msg):
    with pytest.raises(sluice.Error, match="readers.coco: .*" + msg):
        run(1, **kw)


# ---- DALI's preprocessed files ----

def read_dat(path, dtype, per=1):
    with open(path, "rb") as f:
        b = f.read()
    n = struct.unpack("<I", b[:4])[0]
    a = np.frombuffer(b[4:], dtype)
    assert len(a) == n * per, path
    return a


@pytest.mark.parametrize("masks", ["polygon_masks", "pixelwise_masks"])
def test_preprocessed_round_trip_and_layout(tmp_path, masks):
    kw = {masks: True, "ratio": masks == "polygon_masks", "skip_empty": True}
    direct = run(4, batches=2, save_preprocessed_annotations=True,
                 save_preprocessed_annotations_dir=str(tmp_path), **kw)
    want = kept(load(), skip_empty=True)
    # the files, as numpy reads them
    offsets = read_dat(tmp_path / "offsets.dat", np.int32)
    counts = read_dat(tmp_path / "counts.dat", np.int32)
    assert counts.tolist() == [len(a) for _, a in want]
    assert offsets.tolist() == np.cumsum([0] + counts.tolist())[:-1].tolist()
    boxes = read_dat(tmp_path / "boxes.dat", np.float32).reshape(-1, 4)
    assert np.array_equal(boxes, np.concatenate([d[1] for d in direct[:len(want)]]))
    names = (tmp_path / "filenames.dat").read_text().split("\n")[:-1]
    assert names == [im["file_name"] for im, _ in want]
    assert read_dat(tmp_path / "original_ids.dat", np.int32).tolist() == [im["id"] for im, _ in
                                                                          want]
    polys = read_dat(tmp_path / "polygon_data.dat", np.int32, 3).reshape(-1, 3)
    verts = read_dat(tmp_path / "vertices.dat", np.float32, 2).reshape(-1, 2)
    poff = read_dat(tmp_path / "polygon_offset.dat", np.int64)
    voff = read_dat(tmp_path / "vertices_offset.dat", np.int64)
    vcnt = read_dat(tmp_path / "vertices_count.dat", np.int64)
    for k, (im, anns) in enumerate(want):
        wp, wv = polygon_reference(im, anns, kw["ratio"])
        assert np.array_equal(polys[poff[k]:poff[k] + len(wp)], wp)
        assert np.array_equal(verts[voff[k]:voff[k] + vcnt[k]], wv)
    if masks == "pixelwise_masks":
        assert read_dat(tmp_path / "heights.dat", np.int32).tolist() == [im["height"] for im, _ in
                                                                         want]
        with open(tmp_path / "masks_rles.dat", "rb") as f:
            b = f.read()
        n = struct.unpack("<I", b[:4])[0]
        h, w, m = struct.unpack("<QQQ", b[4:28])
        assert n == 1 and (h, w) == (64, 96) and m == 5
        assert list(struct.unpack("<5I", b[28:48])) == [3880, 20, 44, 20, 2180]
    # read back: the same outputs, without the JSON
    again = run(4, batches=2, preprocessed_annotations=str(tmp_path),
                **{masks: True})
    assert len(again) == len(direct)
    for a, b in zip(direct, again):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert x.dtype == y.dtype and np.array_equal(x, y)


def test_broken_preprocessed_files_are_named(tmp_path):
    run(1, save_preprocessed_annotations=True, save_preprocessed_annotations_dir=str(tmp_path),
        polygon_masks=True)
    pre = dict(preprocessed_annotations=str(tmp_path), polygon_masks=True)
    run(6, **pre)

    cases = [
        ("boxes.dat", lambda b: b[:-6], r"truncated"),
        ("labels.dat", lambda b: b[:2], r"too short"),
        ("offsets.dat", lambda b: b + b"\0\0\0\0", r"bytes after the count"),
        ("counts.dat", lambda b: b[:4] + struct.pack("<i", 99) + b[8:],
         r"image 0 \(d_border\.jpg\): entries 0\.\.99 of labels\.dat"),
        ("polygon_data.dat", lambda b: b[:4] + struct.pack("<iii", 0, 0, 999) + b[16:],
         r"points outside"),
        ("filenames.dat", lambda b: b + b"extra.jpg\n", r"more file names"),
    ]
    for name, change, msg in cases:
        p = tmp_path / name
        old = p.read_bytes()
        p.write_bytes(change(old))
        named = name.replace(".", r"\.") + ".*" if name != "counts.dat" else ""
        with pytest.raises(sluice.Error, match=r"readers\.coco: preprocessed annotations .*"
                           + named + msg):
            run(1, **pre)
        p.write_bytes(old)
    os.remove(tmp_path / "vertices_count.dat")
    with pytest.raises(sluice.Error, match=r"vertices_count\.dat"):
        run(1, **pre)
    os.remove(tmp_path / "labels.dat")
    with pytest.raises(sluice.Error, match=r"labels\.dat"):
        run(1, **pre)


def test_a_failed_save_leaves_the_old_set(tmp_path):
    """the files are written beside their names and renamed only once all are written: a save
    that fails leaves the set that was there, and no temporary"""
    run(1, save_preprocessed_annotations=True, save_preprocessed_annotations_dir=str(tmp_path),
        skip_empty=True)
    old = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    os.remove(tmp_path / "original_ids.dat")
    os.mkdir(tmp_path / "original_ids.dat")  # in the way of the last file of the set
    with pytest.raises(sluice.Error, match=r"original_ids\.dat: not a regular file"):
        run(1, save_preprocessed_annotations=True,
            save_preprocessed_annotations_dir=str(tmp_path))  # another set: no skip_empty
    for name, data in old.items():
        if name != "original_ids.dat":
            assert (tmp_path / name).read_bytes() == data, name
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    with pytest.raises(sluice.Error, match=r"no folder this process can write to"):
        run(1, save_preprocessed_annotations=True,
            save_preprocessed_annotations_dir=str(tmp_path / "absent"))
