# SPDX-License-Identifier: Apache-2.0
"""NVIDIA's SSD training pipeline in sluice against a PyTorch DataLoader doing the same
augmentations with torchvision, in the same run, on COCO-like images made here.

    /usr/bin/python3 bench/ssd_pipeline.py [--data DIR] [--images 256] [--runs 3] [--threads 2]
                                           [--device cpu|gpu]

The data set (made once into DIR, default /tmp/sluice-ssd-bench): JPEGs (quality 90, PIL) of the
sizes COCO's images mostly have (640x480, 480x640, 640x427, 427x640, 500x375, 640x360), noise
with 1 to 8 filled rectangles and ellipses each, and an instances.json of their boxes over 80
categories with gaps in their ids, as COCO's.

sluice's side is the pipeline of NVIDIA's SSD example with sluice's imports: readers.coco (ltrb,
ratio, skip_empty), random_bbox_crop (SSD's thresholds, aspect ratios [0.5, 2], scaling [0.3, 1],
50 attempts), decoders.image_slice of the window, a coin flip shared by bb_flip and
crop_mirror_normalize's mirror, resize to 300x300, hsv and brightness_contrast with the example's
ranges, crop_mirror_normalize (CHW float, ImageNet mean and std) and box_encoder against SSD300's
8732 default boxes; batch 32, `--threads` threads (the example's resize min_filter is left out:
sluice's resize does not have it). The peer is a map-style Dataset in a DataLoader with
`--threads` worker processes: PIL decode, the same random crop (SSD's algorithm, numpy), crop,
torchvision's resize to 300x300, horizontal flip of image and boxes, ColorJitter with the same
ranges, ToTensor + Normalize, and the same box encoding in torch. Each run is one epoch of both
(interleaved, after a warm-up epoch each), timed from a fresh pipeline's build, and from the
DataLoader's worker start, to the last batch; prints images/s, the median of the runs, and the load
average. With --device gpu sluice's decoder is "mixed" and its ops after it run on the GPU."""

import argparse
import io
import json
import math
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
os.environ.setdefault("SLUICE_LIBRARY", os.path.join(HERE, "..", "build", "libsluice.so"))

B = 32
SIZES = [(640, 480), (480, 640), (640, 427), (427, 640), (500, 375), (640, 360)]
THRESHOLDS = [0, 0.1, 0.3, 0.5, 0.7, 0.9]
MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def make_data(root, n):
    """n COCO-like JPEGs with shapes drawn on noise, and their annotations"""
    from PIL import Image
    os.makedirs(os.path.join(root, "images"), exist_ok=True)
    rng = np.random.default_rng(2026)
    cats = [c for c in range(1, 91) if c not in (12, 26, 29, 30, 45, 66, 68, 69, 71, 83)]
    images, anns = [], []
    for i in range(n):
        w, h = SIZES[i % len(SIZES)]
        img = rng.integers(60, 200, (h, w, 3), dtype=np.uint8)
        yy, xx = np.mgrid[0:h, 0:w]
        for _ in range(int(rng.integers(1, 9))):
            bw, bh = int(rng.integers(16, w // 2)), int(rng.integers(16, h // 2))
            x, y = int(rng.integers(0, w - bw)), int(rng.integers(0, h - bh))
            colour = rng.integers(0, 256, 3, dtype=np.uint8)
            if rng.random() < 0.5:
                img[y:y + bh, x:x + bw] = colour
            else:
                m = ((xx + 0.5 - x - bw / 2) / (bw / 2)) ** 2 + \
                    ((yy + 0.5 - y - bh / 2) / (bh / 2)) ** 2 <= 1
                img[m] = colour
            anns.append({"id": len(anns) + 1, "image_id": i + 1,
                         "category_id": int(rng.choice(cats)), "bbox": [x, y, bw, bh],
                         "area": bw * bh, "iscrowd": 0})
        name = "%06d.jpg" % (i + 1)
        Image.fromarray(img).save(os.path.join(root, "images", name), quality=90)
        images.append({"id": i + 1, "file_name": name, "width": w, "height": h})
    doc = {"images": images, "annotations": anns,
           "categories": [{"id": c, "name": "c%d" % c} for c in cats]}
    with open(os.path.join(root, "instances.json"), "w") as f:
        json.dump(doc, f)


def default_boxes():
    """SSD300's 8732 default boxes, [l, t, r, b] clipped to [0, 1]"""
    fig, feats, steps = 300, [38, 19, 10, 5, 3, 1], [8, 16, 32, 64, 100, 300]
    scales, ratios = [21, 45, 99, 153, 207, 261, 315], [[2], [2, 3], [2, 3], [2, 3], [2], [2]]
    out = []
    for k, f in enumerate(feats):
        sk1, sk2 = scales[k] / fig, scales[k + 1] / fig
        shapes = [(sk1, sk1), (math.sqrt(sk1 * sk2),) * 2]
        for a in ratios[k]:
            w, h = sk1 * math.sqrt(a), sk1 / math.sqrt(a)
            shapes += [(w, h), (h, w)]
        for i in range(f):
            for j in range(f):
                for w, h in shapes:
                    cx, cy = (j + 0.5) / (fig / steps[k]), (i + 0.5) / (fig / steps[k])
                    out.append([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2])
    return np.clip(np.float32(out), 0, 1)


def sluice_pipeline(root, threads, device):
    import sluice
    import sluice.fn as fn
    import sluice.types as types
    anchors = default_boxes().ravel().tolist()
    mixed = device == "gpu"

    @sluice.pipeline_def(batch_size=B, num_threads=threads, device_id=0 if mixed else None,
                         seed=7)
    def ssd():
        jpegs, bboxes, labels = fn.readers.coco(
            file_root=os.path.join(root, "images"),
            annotations_file=os.path.join(root, "instances.json"), skip_empty=True, ratio=True,
            ltrb=True, random_shuffle=True, shuffle_after_epoch=False, name="Reader")
        crop_begin, crop_size, bboxes, labels = fn.random_bbox_crop(
            bboxes, labels, device="cpu", aspect_ratio=[0.5, 2.0], thresholds=THRESHOLDS,
            scaling=[0.3, 1.0], bbox_layout="xyXY", allow_no_crop=True, num_attempts=50)
        images = fn.decoders.image_slice(jpegs, crop_begin, crop_size,
                                         device="mixed" if mixed else "cpu",
                                         output_type=types.RGB)
        flip = fn.random.coin_flip(probability=0.5)
        bboxes = fn.bb_flip(bboxes, ltrb=True, horizontal=flip)
        images = fn.resize(images, resize_x=300, resize_y=300)
        saturation = fn.random.uniform(range=[0.5, 1.5])
        contrast = fn.random.uniform(range=[0.5, 1.5])
        brightness = fn.random.uniform(range=[0.875, 1.125])
        hue = fn.random.uniform(range=[-0.5, 0.5])
        images = fn.hsv(images, dtype=types.FLOAT, hue=hue, saturation=saturation)
        images = fn.brightness_contrast(images, brightness=brightness, contrast_center=128,
                                        contrast=contrast)
        images = fn.crop_mirror_normalize(images, crop=(300, 300),
                                          mean=[m * 255 for m in MEAN],
                                          std=[s * 255 for s in STD], mirror=flip,
                                          dtype=types.FLOAT, output_layout="CHW",
                                          pad_output=False)
        bboxes, labels = fn.box_encoder(bboxes, labels, criteria=0.5, anchors=anchors)
        return images, bboxes, labels

    pipe = ssd()
    pipe.build()
    return pipe


def iou(a, b):
    """IoU of boxes a (N, 4) against b (M, 4), [l, t, r, b]: (N, M)"""
    import torch
    lt = torch.max(a[:, None, :2], b[None, :, :2])
    rb = torch.min(a[:, None, 2:], b[None, :, 2:])
    inter = (rb - lt).clamp(min=0).prod(2)
    area = lambda x: (x[:, 2] - x[:, 0]) * (x[:, 3] - x[:, 1])
    return inter / (area(a)[:, None] + area(b)[None, :] - inter)


class SSDDataset:
    """The peer's sample: the same augmentations, with PIL, numpy, torch and torchvision"""

    def __init__(self, root):
        import torch
        import torchvision.transforms as T
        with open(os.path.join(root, "instances.json")) as f:
            doc = json.load(f)
        remap = {c["id"]: k + 1 for k, c in enumerate(doc["categories"])}
        self.root = os.path.join(root, "images")
        by = {}
        for a in doc["annotations"]:
            by.setdefault(a["image_id"], []).append(a)
        self.items = []
        for im in sorted(doc["images"], key=lambda im: im["id"]):
            anns = by.get(im["id"], [])
            if not anns:
                continue
            b = np.float32([a["bbox"] for a in anns])
            b[:, 2:] += b[:, :2]
            b /= np.float32([im["width"], im["height"]] * 2)
            self.items.append((im["file_name"], b, np.int64([remap[a["category_id"]]
                                                             for a in anns])))
        self.anchors = torch.from_numpy(default_boxes())
        self.jitter = T.ColorJitter(brightness=0.125, contrast=0.5, saturation=0.5,
                                    hue=0.5 / 360)
        self.norm = T.Compose([T.ToTensor(), T.Normalize(MEAN, STD)])

    def __len__(self):
        return len(self.items)

    def crop(self, boxes, labels, rng):
        """SSD's random crop: a threshold (or none), up to 50 windows each"""
        while True:
            opt = rng.integers(0, len(THRESHOLDS) + 1)
            if opt == len(THRESHOLDS):
                return (0, 0, 1, 1), boxes, labels
            thr = THRESHOLDS[opt]
            for _ in range(50):
                w, h = rng.uniform(0.3, 1.0, 2)
                if not 0.5 <= w / h <= 2:
                    continue
                l, t = rng.uniform(0, 1 - w), rng.uniform(0, 1 - h)
                win = np.float32([l, t, l + w, t + h])
                lt = np.maximum(boxes[:, :2], win[:2])
                rb = np.minimum(boxes[:, 2:], win[2:])
                inter = np.clip(rb - lt, 0, None).prod(1)
                union = (boxes[:, 2:] - boxes[:, :2]).prod(1) + w * h - inter
                if (inter / union < thr).any():
                    continue
                c = (boxes[:, :2] + boxes[:, 2:]) / 2
                keep = ((c > win[:2]) & (c < win[2:])).all(1)
                if not keep.any():
                    continue
                b = boxes[keep].copy()
                b[:, :2] = (np.maximum(b[:, :2], win[:2]) - win[:2]) / [w, h]
                b[:, 2:] = (np.minimum(b[:, 2:], win[2:]) - win[:2]) / [w, h]
                return (l, t, w, h), np.float32(b), labels[keep]

    def encode(self, boxes, labels):
        import torch
        ious = iou(boxes, self.anchors)  # (N, 8732)
        best_box_iou, best_box = ious.max(0)
        best_anchor = ious.argmax(1)
        best_box_iou.index_fill_(0, best_anchor, 2.0)
        best_box[best_anchor] = torch.arange(len(boxes))
        m = best_box_iou > 0.5
        out_l = torch.zeros(len(self.anchors), dtype=torch.int64)
        out_l[m] = labels[best_box[m]]
        out_b = self.anchors.clone()
        out_b[m] = boxes[best_box[m]]
        xy = (out_b[:, :2] + out_b[:, 2:]) / 2
        wh = out_b[:, 2:] - out_b[:, :2]
        return torch.cat([xy, wh], 1), out_l

    def __getitem__(self, i):
        import torch
        import torchvision.transforms.functional as TF
        from PIL import Image
        name, boxes, labels = self.items[i]
        rng = np.random.default_rng((i, int(time.time() * 1e6) & 0xffffffff))
        img = Image.open(os.path.join(self.root, name)).convert("RGB")
        (l, t, w, h), boxes, labels = self.crop(boxes, labels, rng)
        W, H = img.size
        img = img.crop((int(l * W), int(t * H), int((l + w) * W), int((t + h) * H)))
        img = TF.resize(img, [300, 300])
        if rng.random() < 0.5:
            img = TF.hflip(img)
            boxes = np.stack([1 - boxes[:, 2], boxes[:, 1], 1 - boxes[:, 0], boxes[:, 3]], 1)
        img = self.norm(self.jitter(img))
        b, lab = self.encode(torch.from_numpy(np.float32(boxes)), torch.from_numpy(labels))
        return img, b, lab


def peer_loader(root, workers):
    from torch.utils.data import DataLoader
    return DataLoader(SSDDataset(root), batch_size=B, shuffle=True, num_workers=workers,
                      drop_last=True)


def epoch_sluice(root, threads, device, n):
    """images/s of a fresh pipeline's first epoch, from its build to its last batch (a pipeline
    kept between runs would have prefetched while the peer ran)"""
    t = time.perf_counter()
    pipe = sluice_pipeline(root, threads, device)
    for _ in range(n // B):
        o = pipe.run()
        assert o[0].at(0).shape == (3, 300, 300)
    dt = time.perf_counter() - t
    pipe.close()
    return (n // B) * B / dt


def epoch_peer(loader):
    """images/s of one epoch, from starting its workers to its last batch"""
    t, k = time.perf_counter(), 0
    for img, box, lab in loader:
        assert img.shape == (B, 3, 300, 300) and box.shape == (B, 8732, 4)
        k += len(img)
    return k / (time.perf_counter() - t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/tmp/sluice-ssd-bench")
    ap.add_argument("--images", type=int, default=256)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu", choices=["cpu", "gpu"])
    ap.add_argument("--skip-peer", action="store_true")
    a = ap.parse_args()
    if not os.path.exists(os.path.join(a.data, "instances.json")):
        make_data(a.data, a.images)
    n = len(SSDDataset(a.data))
    loader = None if a.skip_peer else peer_loader(a.data, a.threads)
    epoch_sluice(a.data, a.threads, a.device, n)  # warm-up epochs (page cache, imports)
    if loader:
        epoch_peer(loader)
    s, p = [], []
    for _ in range(a.runs):
        s.append(epoch_sluice(a.data, a.threads, a.device, n))
        if loader:
            p.append(epoch_peer(loader))
    res = {"images": n, "batch": B, "threads": a.threads, "device": a.device,
           "sluice_images_s": round(statistics.median(s), 1),
           "sluice_runs": [round(x, 1) for x in s], "loadavg": os.getloadavg()}
    if p:
        res.update(peer_images_s=round(statistics.median(p), 1),
                   peer_runs=[round(x, 1) for x in p],
                   ratio=round(statistics.median(s) / statistics.median(p), 2))
    print(json.dumps(res))


if __name__ == "__main__":
    main()
