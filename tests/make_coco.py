# SPDX-License-Identifier: Apache-2.0
"""Writes the small COCO-format data set of tests/fixtures/coco: shapes (filled rectangles,
ellipses, triangles) drawn with numpy on noisy backgrounds, encoded to JPEG by cjpeg
(libjpeg-turbo-progs), and an annotations file with each shape's box, polygon and category.
What the tests need is in it: categories whose ids have gaps (1, 3, 7, 12) and are listed out of
order; image ids that are not in file order; two images without objects; a crowd annotation (an RLE
segmentation); a box on the image's border; a box below the default size_threshold (0.05 wide)
and a degenerate one (0 high). Deterministic: the same bytes every run.

usage: make_coco.py OUT_DIR   (writes OUT_DIR/images/*.jpg and OUT_DIR/instances.json)"""
import json
import os
import subprocess
import sys

import numpy as np

# (id listed, name): out of order, with gaps
CATEGORIES = [(3, "ellipse"), (1, "rectangle"), (12, "triangle"), (7, "unused")]
# (image id, file name, width, height, shapes); a shape is (kind, x, y, w, h)
IMAGES = [
    (42, "a_rects.jpg", 64, 48, [("rectangle", 4, 6, 20, 14), ("rectangle", 30, 20, 34, 28)]),
    (7, "b_mixed.jpg", 80, 60, [("ellipse", 10, 10, 30, 20), ("triangle", 45, 25, 24, 30),
                                ("rectangle", 0, 0, 12, 9)]),
    (100, "c_empty.jpg", 48, 48, []),
    (3, "d_border.jpg", 56, 40, [("ellipse", 36, 18, 20, 22), ("triangle", 0, 4, 18, 16)]),
    (55, "e_empty.jpg", 40, 56, []),
    (9, "f_many.jpg", 96, 64, [("rectangle", 2, 2, 10, 10), ("ellipse", 20, 5, 16, 30),
                               ("triangle", 50, 30, 30, 30), ("rectangle", 70, 4, 20, 12)]),
]
COLOURS = {"rectangle": (220, 40, 40), "ellipse": (40, 200, 60), "triangle": (50, 60, 230)}


def draw(img, kind, x, y, w, h):
    H, W, _ = img.shape
    yy, xx = np.mgrid[0:H, 0:W]
    cx, cy = xx + 0.5, yy + 0.5
    if kind == "rectangle":
        m = (cx >= x) & (cx < x + w) & (cy >= y) & (cy < y + h)
        poly = [x, y, x + w, y, x + w, y + h, x, y + h]
    elif kind == "ellipse":
        m = ((cx - x - w / 2) / (w / 2)) ** 2 + ((cy - y - h / 2) / (h / 2)) ** 2 <= 1
        t = np.linspace(0, 2 * np.pi, 12, endpoint=False)
        poly = np.round(np.stack([x + w / 2 + w / 2 * np.cos(t),
                                  y + h / 2 + h / 2 * np.sin(t)], 1).ravel(), 2).tolist()
    else:  # apex at the top middle, base along the bottom
        f = (cy - y) / h
        m = (cy >= y) & (cy < y + h) & (np.abs(cx - x - w / 2) <= f * w / 2)
        poly = [x + w / 2, y, x + w, y + h, x, y + h]
    img[m] = COLOURS[kind]
    return poly


def main():
    out = sys.argv[1]
    os.makedirs(os.path.join(out, "images"), exist_ok=True)
    rng = np.random.default_rng(43)
    cat_id = {name: cid for cid, name in CATEGORIES}
    images, anns = [], []
    for image_id, name, w, h, shapes in IMAGES:
        img = rng.integers(90, 150, size=(h, w, 3), dtype=np.uint8)
        for kind, x, y, bw, bh in shapes:
            poly = draw(img, kind, x, y, bw, bh)
            anns.append({"id": 1000 + len(anns), "image_id": image_id,
                         "category_id": cat_id[kind], "bbox": [x, y, bw, bh],
                         "area": bw * bh, "iscrowd": 0, "segmentation": [poly]})
        ppm = b"P6\n%d %d\n255\n" % (w, h) + img.tobytes()
        jpg = subprocess.run(["cjpeg", "-quality", "92"], input=ppm, capture_output=True,
                             check=True).stdout
        with open(os.path.join(out, "images", name), "wb") as f:
            f.write(jpg)
        images.append({"id": image_id, "file_name": name, "width": w, "height": h})
    # a crowd region over part of f_many (RLE, as COCO writes crowds), a box too thin for the
    # default size_threshold and a degenerate one, both on a_rects
    anns.append({"id": 2000, "image_id": 9, "category_id": 1, "bbox": [60, 40, 30, 20],
                 "area": 600, "iscrowd": 1,
                 "segmentation": {"size": [64, 96], "counts": [3880, 20, 44, 20, 2180]}})
    anns.append({"id": 2001, "image_id": 42, "category_id": 3, "bbox": [10.5, 30.25, 0.05, 8],
                 "area": 0.4, "iscrowd": 0, "segmentation": [[10.5, 30.25, 10.55, 38.25, 10.5, 38.25]]})
    anns.append({"id": 2002, "image_id": 42, "category_id": 12, "bbox": [50, 2, 6, 0],
                 "area": 0, "iscrowd": 0, "segmentation": [[50, 2, 56, 2, 53, 2]]})
    doc = {"info": {"description": "sluice test shapes", "version": "1.0"},
           "licenses": [],
           "images": images,
           "annotations": anns,
           "categories": [{"id": cid, "name": name, "supercategory": "shape"}
                          for cid, name in CATEGORIES]}
    with open(os.path.join(out, "instances.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
