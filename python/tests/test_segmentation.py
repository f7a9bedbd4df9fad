# SPDX-License-Identifier: Apache-2.0
"""roi_random_crop, segmentation.random_mask_pixel, segmentation.select_masks,
segmentation.random_object_bbox and multi_paste against references written here in numpy (and
scipy's blob labelling): the crop window's start always within the range DALI's rule allows (and
every value of a small range drawn), per-sample arguments, bounds from in_shape or the input;
drawn pixels that satisfy the foreground rule (value or threshold) and reach every foreground
pixel; the polygons and vertices of the masks asked for; object boxes that are blobs of a present
class, every blob reached, thresholds, k_largest, classes, weights and background; pasted canvases
across type conversions. The random draws are the same for any thread count and resume exactly
from a checkpoint."""

import glob
import os

import numpy as np
import pytest

import sluice
import sluice.fn as fn
from conftest import FIXTURES
from sluice import pipeline_def

COCO = os.path.join(FIXTURES, "coco")


def run(make, batch, *sources, batches=1, threads=3, **kw):
    @pipeline_def(batch_size=batch, num_threads=threads, device_id=None, **kw)
    def pipe():
        return make(*[fn.external_source(source=s) for s in sources])

    p = pipe()
    got = []
    for _ in range(batches):
        out = p.run()
        got.append([[np.array(o.at(i)) for i in range(batch)] for o in out])
    p.close()
    return got


def crop_range(start, ext, crop, in_shape=None):
    """DALI's range of window starts on one axis"""
    if ext == crop:
        return start, start
    if ext > crop:
        hi = start + ext - crop
        if in_shape is not None:
            hi = min(in_shape - crop, hi)
        return start, hi
    lo = start + ext - crop
    if in_shape is not None:
        lo = max(0, lo)
    return lo, start


def test_roi_random_crop_ranges_per_sample():
    rng = np.random.default_rng(3)
    B = 8
    crops = [rng.integers(1, 12, 2).astype(np.int32) for _ in range(B)]
    starts = [rng.integers(0, 20, 2).astype(np.int32) for _ in range(B)]
    shapes = [rng.integers(0, 15, 2).astype(np.int32) for _ in range(B)]
    ins = [np.int32(s + sh + rng.integers(12, 20, 2)) for s, sh in zip(starts, shapes)]
    seen = {}
    for b in range(40):
        (unb, bnd, end) = run(
            lambda c, s, sh, i: (fn.roi_random_crop(crop_shape=c, roi_start=s, roi_shape=sh),
                                 fn.roi_random_crop(crop_shape=c, roi_start=s, roi_shape=sh,
                                                    in_shape=i, seed=7),
                                 fn.roi_random_crop(crop_shape=c, roi_start=s,
                                                    roi_end=s + sh, seed=7 + b)),
            B, lambda: crops, lambda: starts, lambda: shapes, lambda: ins, seed=100 + b)[0]
        for i in range(B):
            for d in range(2):
                c, s, e = int(crops[i][d]), int(starts[i][d]), int(shapes[i][d])
                lo, hi = crop_range(s, e, c)
                assert unb[i].dtype == np.int64 and unb[i].shape == (2,)
                assert lo <= unb[i][d] <= hi and lo <= end[i][d] <= hi
                blo, bhi = crop_range(s, e, c, int(ins[i][d]))
                assert blo <= bnd[i][d] <= bhi
                assert 0 <= bnd[i][d] and bnd[i][d] + c <= ins[i][d]
                seen.setdefault((i, d), set()).add(int(unb[i][d]))
    for (i, d), vals in seen.items():  # small ranges: every start drawn
        lo, hi = crop_range(int(starts[i][d]), int(shapes[i][d]), int(crops[i][d]))
        if hi - lo <= 4:
            assert vals == set(range(lo, hi + 1)), (i, d)


def test_roi_random_crop_bounded_by_its_input():
    x = [np.zeros((10, 12, 3), np.uint8), np.zeros((30, 7, 3), np.uint8)]
    (got,) = run(lambda a: fn.roi_random_crop(a, crop_shape=[5, 5, 3], roi_start=[2, 1, 0],
                                              roi_shape=[8, 6, 3]), 2, lambda: x)[0]
    for i in range(2):
        for d in range(3):
            lo, hi = crop_range([2, 1, 0][d], [8, 6, 3][d], [5, 5, 3][d], x[i].shape[d])
            assert lo <= got[i][d] <= hi
    assert got[0][2] == 0


@pytest.mark.parametrize("kw,msg", [
    (dict(crop_shape=[4, 4], roi_start=[0, 0]), "either roi_end or roi_shape, not neither"),
    (dict(crop_shape=[4, 4], roi_start=[0, 0], roi_end=[1, 1], roi_shape=[1, 1]), "not both"),
    (dict(crop_shape=[4, 4], roi_start=[0], roi_shape=[1, 1]), "roi_start and roi_shape"),
    (dict(crop_shape=[40, 4], roi_start=[0, 0], roi_shape=[1, 1], in_shape=[10, 10]),
     "axis 0.*the crop .40. is larger than the input .10."),
    (dict(crop_shape=[4, 4], roi_start=[-1, 0], roi_shape=[1, 1], in_shape=[10, 10]),
     "axis 0.*out of the input's bounds"),
    # DALI's own sentences end the messages, which DALI's tests match
    (dict(crop_shape=[2, 2], roi_start=[1, 1], roi_shape=[1, 1], in_shape=[-4, 4]),
     "Input shape can't be negative."),
    (dict(crop_shape=[1, -1], roi_start=[1, 1], roi_shape=[1, 1], in_shape=[4, 4]),
     "Crop shape can't be negative"),
    (dict(crop_shape=[2, 2], roi_start=[1, 1], roi_end=[5, 5], in_shape=[4, 4]),
     "ROI can't be out of bounds."),
    (dict(crop_shape=[10, 10], roi_start=[1, 1], roi_shape=[1, 1], in_shape=[4, 4]),
     "Cropping shape can't be bigger than the input shape."),
    (dict(crop_shape=[4, 4], roi_start=[0, 0], roi_end=[1, 1], roi_shape=[1, 1]),
     "Either ROI end or ROI shape should be defined, but not both"),
])
def test_roi_random_crop_refuses(kw, msg):
    with pytest.raises(sluice.Error, match="roi_random_crop: .*" + msg):
        run(lambda: fn.roi_random_crop(**kw), 2)


def test_random_crop_generator_is_image_random_crops_window():
    # DALI's fn.random_crop_generator: from a shape, the window decoders.image_random_crop draws
    # with the same seed; sliced out of the whole image it gives that decoder's output
    jpegs = sorted(glob.glob(os.path.join(FIXTURES, "dali_extra", "jpeg", "*.jpg")))[:6]
    assert jpegs
    data = [np.fromfile(f, np.uint8) for f in jpegs]

    def make(enc):
        shapes = fn.peek_image_shape(enc)
        anchor, shape = fn.random_crop_generator(shapes, seed=77, random_area=[0.1, 0.9])
        whole = fn.decoders.image(enc)
        return (fn.decoders.image_random_crop(enc, seed=77, random_area=[0.1, 0.9]),
                fn.slice(whole, start=anchor, shape=shape, axes=[0, 1]), anchor, shape)

    (crop, sliced, anchor, shape), = run(make, len(data), lambda: data)
    for i in range(len(data)):
        assert anchor[i].dtype == np.int64 and anchor[i].shape == (2,) and shape[i].shape == (2,)
        assert crop[i].shape[:2] == tuple(shape[i])
        np.testing.assert_array_equal(crop[i], sliced[i])


def masks(rng, n):
    out = []
    for _ in range(n):
        m = np.zeros(rng.integers(3, 9, 2), np.int32)
        for _ in range(rng.integers(0, 4)):
            m[rng.integers(0, m.shape[0]), rng.integers(0, m.shape[1])] = rng.integers(1, 4)
        out.append(m)
    return out


def test_random_mask_pixel_value_threshold_and_any():
    rng = np.random.default_rng(5)
    m = masks(rng, 10)
    m[0][:] = 0  # no foreground: any pixel
    hits = {}
    for b in range(30):
        fgv, fgt, anyp = run(lambda x: (fn.segmentation.random_mask_pixel(x, value=2, foreground=1),
                                        fn.segmentation.random_mask_pixel(x, threshold=1.5,
                                                                          foreground=1),
                                        fn.segmentation.random_mask_pixel(x)),
                             10, lambda: m, seed=b)[0]
        for i in range(10):
            for got in (fgv[i], fgt[i], anyp[i]):
                assert got.dtype == np.int64 and got.shape == (2,)
                assert 0 <= got[0] < m[i].shape[0] and 0 <= got[1] < m[i].shape[1]
            if (m[i] == 2).any():
                assert m[i][tuple(fgv[i])] == 2
                hits.setdefault(i, set()).add(tuple(fgv[i]))
            if (m[i] > 1.5).any():
                assert m[i][tuple(fgt[i])] > 1.5
    for i, h in hits.items():  # every foreground pixel is drawn
        assert h == set(map(tuple, np.argwhere(m[i] == 2))), i


def test_random_mask_pixel_per_sample_foreground_and_float_mask():
    rng = np.random.default_rng(6)
    m = [x.astype(np.float32) * 0.5 for x in masks(rng, 6)]
    fg = [np.int32(i % 2) for i in range(6)]
    (got,) = run(lambda x, f: fn.segmentation.random_mask_pixel(x, foreground=f, threshold=0.4),
                 6, lambda: m, lambda: fg)[0]
    for i in range(6):
        if i % 2 and (m[i] > 0.4).any():
            assert m[i][tuple(got[i])] > 0.4
    with pytest.raises(sluice.Error, match="value and threshold exclude each other"):
        run(lambda x: fn.segmentation.random_mask_pixel(x, value=1, threshold=0.5), 6, lambda: m)


def select_reference(ids, polys, verts, reindex):
    op, ov = [], []
    for k, mid in enumerate(ids):
        for p in polys:
            if p[0] != mid:
                continue
            n = p[2] - p[1]
            op.append([k if reindex else mid, len(ov), len(ov) + n])
            ov += list(verts[p[1]:p[2]])
    return np.int32(op).reshape(-1, 3), np.array(ov, verts.dtype).reshape(-1, verts.shape[1])


@pytest.mark.parametrize("reindex", [False, True])
def test_select_masks_as_the_reference(reindex):
    rng = np.random.default_rng(8)
    B = 6
    ids, polys, verts = [], [], []
    for i in range(B):
        nm = int(rng.integers(1, 5))
        p, v = [], []
        for mid in range(nm):  # masks of one to three polygons, vertices of 2 or 3 coordinates
            for _ in range(int(rng.integers(1, 4))):
                n = int(rng.integers(3, 6))
                p.append([mid * 10, len(v), len(v) + n])
                v += [rng.uniform(0, 1, 3 if i % 2 else 2) for _ in range(n)]
        order = rng.permutation(len(p))
        polys.append(np.int32(p)[order])
        verts.append(np.float32(v))
        ids.append(np.int32(rng.permutation(nm)[: int(rng.integers(0, nm + 1))] * 10))
    op, ov = run(lambda a, b, c: tuple(fn.segmentation.select_masks(a, b, c, reindex_masks=reindex)),
                 B, lambda: ids, lambda: polys, lambda: verts)[0]
    for i in range(B):
        wp, wv = select_reference(ids[i], polys[i], verts[i], reindex)
        assert op[i].dtype == np.int32 and np.array_equal(op[i], wp)
        assert ov[i].dtype == np.float32 and np.array_equal(ov[i], wv)


@pytest.mark.parametrize("ids,msg", [([1, 1], "mask id 1 is asked for twice"),
                                     ([5], "mask id 5 is not in the polygons"),
                                     ([2], "polygon 2 of mask 2 has vertices \\[3, 9\\)"),
                                     # DALI's sentences end them, which DALI's tests match
                                     ([5], "Selected mask_id 5 is not present in the input\\."),
                                     ([2], "Vertex index range for mask id 2 is out of bounds\\. "
                                           "Expected to be within the range of available "
                                           "vertices \\[0, 6\\)\\.")])
def test_select_masks_refuses(ids, msg):
    polys = [np.int32([[1, 0, 3], [0, 0, 2], [2, 3, 9]])]
    verts = [np.float32(np.zeros((6, 2)))]
    with pytest.raises(sluice.Error, match="segmentation.select_masks: .*" + msg):
        run(lambda a, b, c: tuple(fn.segmentation.select_masks(a, b, c)), 1,
            lambda: [np.int32(ids)], lambda: polys, lambda: verts)


def coco_random(batches, threads, checkpoint=None, keep=None):
    @pipeline_def(batch_size=3, num_threads=threads, device_id=None, seed=17,
                  enable_checkpointing=True, checkpoint=checkpoint)
    def p():
        _, _, _, m, ids = fn.readers.coco(file_root=os.path.join(COCO, "images"), name="r",
                                          annotations_file=os.path.join(COCO, "instances.json"),
                                          pixelwise_masks=True, image_ids=True,
                                          random_shuffle=True, seed=3)
        px = fn.segmentation.random_mask_pixel(m, foreground=1)
        win = fn.roi_random_crop(m, crop_shape=[8, 8, 1], roi_start=px, roi_shape=[1, 1, 1])
        box = fn.segmentation.random_object_bbox(m, format="box", foreground_prob=0.8)
        return ids, px, win, box

    pipe = p()
    pipe.build()
    got = []
    for _ in range(batches):
        o = pipe.run()
        got += [tuple(o[k].at(i).tolist() for k in range(4)) for i in range(3)]
    if keep is not None:
        keep.append(pipe)
    else:
        pipe.close()
    return got


def test_random_draws_same_for_any_thread_count_and_resume_from_checkpoint():
    one = coco_random(6, 1)
    assert coco_random(6, 3) == one
    held = []
    coco_random(2, 2, keep=held)
    ck = held[0].checkpoint()
    held[0].close()
    assert coco_random(4, 2, checkpoint=ck) == one[6:]


# ---- multi_paste ----

def convert_sat(x, dtype):
    """DALI's ConvertSat in numpy: round half to even, saturate"""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return x.astype(dtype)
    info = np.iinfo(dtype)
    return np.clip(np.rint(x.astype(np.float64)), info.min, info.max).astype(dtype)


def paste_reference(srcs, pastes, size, dtype, c):
    """srcs: the images of each paste; pastes: (in_anchor, shape, out_anchor); c channels"""
    out = np.zeros((size[0], size[1], c), dtype)
    for img, (ia, sh, oa) in zip(srcs, pastes):
        region = img[ia[0]:ia[0] + sh[0], ia[1]:ia[1] + sh[1]]
        out[oa[0]:oa[0] + sh[0], oa[1]:oa[1] + sh[1]] = convert_sat(region, dtype)
    return out


@pytest.mark.parametrize("dtype,out_dtype", [(np.uint8, None), (np.float32, np.uint8),
                                             (np.int16, np.float32), (np.int32, np.int16)])
def test_multi_paste_in_ids_as_the_reference(dtype, out_dtype):
    rng = np.random.default_rng(11)
    B = 5
    imgs = [(rng.uniform(-300, 300, (int(rng.integers(4, 12)), int(rng.integers(4, 12)), 2)))
            .astype(dtype) for _ in range(B)]
    ids, ianc, shp, oanc, size = [], [], [], [], []
    for i in range(B):
        k = int(rng.integers(0, 4))
        sz = rng.integers(6, 16, 2)
        idl, ia, sh, oa = [], [], [], []
        for _ in range(k):
            j = int(rng.integers(0, B))
            h, w = imgs[j].shape[:2]
            a = [int(rng.integers(0, h)), int(rng.integers(0, w))]
            s = [int(rng.integers(0, min(h - a[0], sz[0]) + 1)),
                 int(rng.integers(0, min(w - a[1], sz[1]) + 1))]
            o = [int(rng.integers(0, sz[0] - s[0] + 1)), int(rng.integers(0, sz[1] - s[1] + 1))]
            idl.append(j), ia.append(a), sh.append(s), oa.append(o)
        ids.append(np.int32(idl))
        ianc.append(np.int32(ia).reshape(-1, 2))
        shp.append(np.int32(sh).reshape(-1, 2))
        oanc.append(np.int32(oa).reshape(-1, 2))
        size.append(np.int32(sz))
    kw = {} if out_dtype is None else {"dtype": {np.uint8: sluice.types.UINT8,
                                                 np.int16: sluice.types.INT16,
                                                 np.float32: sluice.types.FLOAT}[out_dtype]}
    (got,) = run(lambda x, a, b, c, d, e: fn.multi_paste(x, in_ids=a, in_anchors=b, shapes=c,
                                                         out_anchors=d, output_size=e, **kw),
                 B, lambda: imgs, lambda: ids, lambda: ianc, lambda: shp, lambda: oanc,
                 lambda: size)[0]
    for i in range(B):
        want = paste_reference([imgs[j] for j in ids[i]],
                               list(zip(ianc[i], shp[i], oanc[i])), size[i],
                               out_dtype or dtype, imgs[i].shape[2])
        assert got[i].dtype == want.dtype and np.array_equal(got[i], want), i


def test_multi_paste_several_inputs_default_regions():
    rng = np.random.default_rng(12)
    a = [rng.integers(0, 255, (6, 8, 3)).astype(np.uint8) for _ in range(3)]
    b = [rng.integers(0, 255, (3, 4, 3)).astype(np.uint8) for _ in range(3)]
    oanc = [np.int32([[0, 0], [i, 2 * i]]) for i in range(3)]
    (got,) = run(lambda x, y, o: fn.multi_paste(x, y, out_anchors=o, output_size=[6, 8]), 3,
                 lambda: a, lambda: b, lambda: oanc)[0]
    for i in range(3):
        want = a[i].copy()
        want[i:i + 3, 2 * i:2 * i + 4] = b[i]
        assert np.array_equal(got[i], want)
    (same,) = run(lambda x: fn.multi_paste(x, x), 3, lambda: a)[0]  # canvas: the shared size
    assert all(np.array_equal(same[i], a[i]) for i in range(3))


def test_multi_paste_relative_coordinates():
    """*_rel: fractions of the pasted image (anchor rounded down, shape up) and of the canvas"""
    rng = np.random.default_rng(13)
    B = 4
    imgs = [rng.integers(0, 255, (int(rng.integers(5, 13)), int(rng.integers(5, 13)), 3))
            .astype(np.uint8) for _ in range(B)]
    size = [np.int32(rng.integers(12, 20, 2)) for _ in range(B)]
    ids, ia_rel, sh_rel, oa_rel, want = [], [], [], [], []
    for i in range(B):
        k = int(rng.integers(1, 4))
        idl = rng.integers(0, B, k).astype(np.int32)
        ia = rng.uniform(0, 0.5, (k, 2)).astype(np.float32)
        sh = rng.uniform(0, 0.5, (k, 2)).astype(np.float32)
        oa = rng.uniform(0, 0.3, (k, 2)).astype(np.float32)
        pastes = []
        for j, a, h, o in zip(idl, ia, sh, oa):
            shape = np.array(imgs[j].shape[:2], np.float32)
            pastes.append((np.floor(shape * a).astype(int), np.ceil(shape * h).astype(int),
                           np.floor(size[i].astype(np.float32) * o).astype(int)))
        want.append(paste_reference([imgs[j] for j in idl], pastes, size[i], np.uint8, 3))
        ids.append(idl), ia_rel.append(ia), sh_rel.append(sh), oa_rel.append(oa)
    (got,) = run(lambda x, a, b, c, d, e: fn.multi_paste(x, in_ids=a, in_anchors_rel=b,
                                                         shapes_rel=c, out_anchors_rel=d,
                                                         output_size=e),
                 B, lambda: imgs, lambda: ids, lambda: ia_rel, lambda: sh_rel, lambda: oa_rel,
                 lambda: size)[0]
    for i in range(B):
        assert np.array_equal(got[i], want[i]), i
    # literal fractions; no shape: the rest of the image from the anchor
    (got,) = run(lambda x: fn.multi_paste(x, in_ids=[1], in_anchors_rel=[0.5, 0.25],
                                          out_anchors_rel=[0.5, 0.5], output_size=[20, 20]),
                 2, lambda: imgs[:2])[0]
    h, w = imgs[1].shape[:2]
    ay, ax = int(np.floor(h * np.float32(0.5))), int(np.floor(w * np.float32(0.25)))
    ref = np.zeros((20, 20, 3), np.uint8)
    ref[10:10 + h - ay, 10:10 + w - ax] = imgs[1][ay:, ax:]
    assert np.array_equal(got[0], ref) and np.array_equal(got[1], ref)


@pytest.mark.parametrize("kw,msg", [
    (dict(in_ids=[0], out_anchors=[5, 5], output_size=[6, 6]), "paste 0: the region"),
    (dict(in_ids=[3], output_size=[6, 6]),
     "The `in_idx` must be in range \\[0, 2\\). Got in_idx: 3. Input batch size is: 2."),
    (dict(in_ids=[0, 1], in_anchors=[0, 0], output_size=[6, 6]), "in_anchors must give 2"),
    (dict(in_ids=[0, 1]), "If the `output_size` is not specified, all the input samples must "
                          "have the same shape"),
    # DALI's rule: the whole batch, not only the pasted samples, must share a size
    (dict(in_ids=[0]), "If the `output_size` is not specified, all the input samples"),
    (dict(in_ids=[0], output_size=[6, 6], in_anchors=[0, 0], in_anchors_rel=[0.5, 0.5]),
     "give in_anchors or in_anchors_rel, not both"),
    (dict(in_ids=[0], output_size=[6, 6], shapes_rel=[0.5, 1.5]), "shapes_rel\\[1\\] = 1.5"),
    (dict(in_ids=[0, 1], output_size=[6, 6], out_anchors_rel=[0.5, 0.5]),
     "out_anchors_rel must give 2"),
])
def test_multi_paste_refuses(kw, msg):
    imgs = [np.zeros((4, 4, 3), np.uint8), np.zeros((5, 4, 3), np.uint8)]
    with pytest.raises(sluice.Error, match="multi_paste: .*" + msg):
        run(lambda x: fn.multi_paste(x, **kw), 2, lambda: imgs)


# ---- segmentation.random_object_bbox ----

def blob_boxes(mask, cls=None, bg=0):
    """[(lo, hi)] of the connected blobs (neighbours along an axis) of class cls, or with cls None
    of every class but bg (a blob one class), by scipy's labelling"""
    from scipy import ndimage
    out = []
    classes = [cls] if cls is not None else sorted(set(np.unique(mask).tolist()) - {bg})
    for c in classes:
        lab, n = ndimage.label(mask == c)
        for sl in ndimage.find_objects(lab):
            out.append((tuple(s.start for s in sl), tuple(s.stop for s in sl)))
    return out


def object_masks(rng, n, shape=(12, 14)):
    out = []
    for _ in range(n):
        m = np.zeros(shape, np.int32)
        for _ in range(rng.integers(0, 6)):
            c = int(rng.choice([1, 2, 5]))
            y, x = rng.integers(0, shape[0] - 2), rng.integers(0, shape[1] - 2)
            h, w = rng.integers(1, 5, 2)
            m[y:y + h, x:x + w] = c
        out.append(m)
    return out


def test_random_object_bbox_picks_a_blob_of_a_present_class():
    rng = np.random.default_rng(21)
    m = object_masks(rng, 8)
    m[0][:] = 0  # nothing: the whole input
    seen = {}
    for b in range(80):
        anc, shp, cls = run(lambda x: tuple(fn.segmentation.random_object_bbox(
            x, output_class=True)), 8, lambda: m, seed=b)[0]
        for i in range(8):
            assert anc[i].dtype == np.int32 and cls[i].shape == ()
            box = (tuple(anc[i].tolist()), tuple((anc[i] + shp[i]).tolist()))
            if not (m[i] != 0).any():
                assert box == ((0, 0), m[i].shape) and cls[i] == 0
                continue
            assert cls[i] in np.unique(m[i]) and cls[i] != 0
            assert box in blob_boxes(m[i], int(cls[i])), (i, box)
            seen.setdefault(i, set()).add(box)
    for i, boxes in seen.items():  # every blob is drawn, whatever its class
        assert boxes == set(blob_boxes(m[i])), i


def test_random_object_bbox_formats_threshold_k_largest_ignore_class():
    rng = np.random.default_rng(22)
    m = object_masks(rng, 6)
    for b in range(10):
        box, = run(lambda x: (fn.segmentation.random_object_bbox(x, format="box", seed=3 + b,
                                                                 threshold=[2, 3], k_largest=2),),
                   6, lambda: m, seed=b)[0]
        se = run(lambda x: tuple(fn.segmentation.random_object_bbox(
            x, format="start_end", ignore_class=True)), 6, lambda: m, seed=b)[0]
        for i in range(6):
            lo, hi = tuple(box[i][:2].tolist()), tuple(box[i][2:].tolist())
            ok = [bx for c in set(np.unique(m[i]).tolist()) - {0} for bx in blob_boxes(m[i], c)
                  if bx[1][0] - bx[0][0] >= 2 and bx[1][1] - bx[0][1] >= 3]
            if not ok:
                assert (lo, hi) == ((0, 0), m[i].shape)
            else:
                assert (lo, hi) in ok
                # among the two largest of its class
                c = int(m[i][lo])
                cand = [bx for bx in ok if m[i][bx[0]] == c]
                vols = sorted([(bx[1][0] - bx[0][0]) * (bx[1][1] - bx[0][1]) for bx in cand],
                              reverse=True)
                vol = (hi[0] - lo[0]) * (hi[1] - lo[1])
                assert vol >= vols[min(2, len(vols)) - 1]
            start, end = se[0][i], se[1][i]
            got = (tuple(start.tolist()), tuple(end.tolist()))
            assert got in blob_boxes(m[i]) or (not (m[i] != 0).any() and
                                               got == ((0, 0), m[i].shape))


def test_random_object_bbox_classes_weights_background():
    m = [np.array([[1, 1, 0, 2], [0, 0, 0, 2], [7, 0, 0, 0]], np.uint8)] * 4
    # only class 2 weighs anything: its blob every time
    (anc, shp, cls) = run(lambda x: tuple(fn.segmentation.random_object_bbox(
        x, classes=[1, 2], class_weights=[0.0, 1.0], output_class=True)), 4, lambda: m)[0]
    for i in range(4):
        assert anc[i].tolist() == [0, 3] and shp[i].tolist() == [2, 1] and cls[i] == 2
    # class 0 among the classes: the background moves below them (-1)
    (anc, shp, cls) = run(lambda x: tuple(fn.segmentation.random_object_bbox(
        x, classes=[0], output_class=True, foreground_prob=0.0)), 4, lambda: m)[0]
    assert all(c == -1 for c in cls) and all(s.tolist() == [3, 4] for s in shp)
    # 0 and the least int32 among the classes: the least minus 1 wraps in int32, then goes down
    # past every class it meets (DALI's rule)
    for classes, want in (([0, -5], -6), ([-2 ** 31, 2 ** 31 - 1, 0, 2 ** 31 - 2], 2 ** 31 - 3)):
        (anc, shp, cls) = run(lambda x: tuple(fn.segmentation.random_object_bbox(
            x, classes=classes, output_class=True, foreground_prob=0.0)), 4, lambda: m)[0]
        assert all(int(c) == want for c in cls), (classes, cls)
    # one threshold value stands for every axis; another count is refused in DALI's words
    (anc, shp) = run(lambda x: tuple(fn.segmentation.random_object_bbox(
        x, threshold=2, foreground_prob=1.0)), 4, lambda: m)[0]
    for i in range(4):  # only class 1's 1x2 blob and class 2's 2x1 fall short: the whole input
        assert anc[i].tolist() == [0, 0] and shp[i].tolist() == [3, 4]
    for kw, msg in (
            ({"classes": [0], "background": 0}, "Class label 0 coincides with background label"),
            ({"ignore_class": True, "output_class": True},
             "Class-related arguments (classes, class_weights, output_class) cannot be used "
             "when ``ignore_class`` is True"),
            ({"k_largest": 0}, "``k_largest`` must be at least 1; got 0"),
            ({"classes": [1, 2], "class_weights": [1.0]},
             "If both ``classes`` and ``class_weights`` are provided, their shapes must match. "
             "Got:\n  classes.shape = {2}\n  weights.shape = {1}"),
            ({"threshold": [1, 2, 3]}, "Argument \"threshold\" expected shape 2 but got 3 "
                                       "values, which can't be interpreted as the expected shape.")):
        with pytest.raises(sluice.Error) as e:
            run(lambda x: tuple(fn.segmentation.random_object_bbox(x, **kw)), 4, lambda: m)
        assert "segmentation.random_object_bbox" in str(e.value) and msg in str(e.value), \
            str(e.value)


def test_multi_paste_refuses_mixed_channels():
    imgs = [np.zeros((4, 4, 3), np.uint8), np.zeros((4, 4, 1), np.uint8)]
    with pytest.raises(sluice.Error, match="multi_paste: .*All regions pasted into given output "
                                           "sample must have the same number of channels"):
        run(lambda x: fn.multi_paste(x, in_ids=[0, 1], output_size=[6, 6]), 2, lambda: imgs)
