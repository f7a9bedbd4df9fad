# SPDX-License-Identifier: Apache-2.0
"""fn.random_bbox_crop (and ops.RandomBBoxCrop) in the forms DALI's programs use, checked against
the properties DALI documents: the output count follows the inputs and arguments (boxes alone:
anchor, shape, boxes; labels add one, output_bbox_indices one more); 2-D and 3-D boxes in every
bbox_layout permutation; windows of relative size within scaling and aspect_ratio (fixed ratios
met exactly, absolute ones with input_shape) or of crop_shape at an integer anchor inside
input_shape (shape_layout reorders both, per-sample values from another op); the kept boxes are
those whose centre (or, with bbox_prune_threshold, that share) lies in the window, clipped and
relative to it; thresholds are met ("iou", "overlap", all or any box); total_num_attempts bounds
the search; the same outputs for any thread count; bad arguments and inputs are errors naming
the argument or the sample. The boxes are drawn here with numpy."""

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.ops as ops
import sluice.types as types
from sluice import Pipeline, _c, pipeline_def

F = np.float32


def make_boxes(rng, n, ndim, lo=0.0, hi=0.7, ext=(0.05, 0.3)):
    """(n, 2 * ndim) float32 boxes, start then end, inside [0, 1]"""
    start = rng.uniform(lo, hi, (n, ndim))
    return np.concatenate([start, start + rng.uniform(ext[0], ext[1], (n, ndim))], 1).astype(F)


class Source:
    """batches of boxes (counts cycling through `counts`, 0 included) and labels"""

    def __init__(self, ndim, batch, counts=(3, 0, 1, 7, 12), labels=True, seed=0, convert=None,
                 ext=(0.05, 0.3)):
        self.rng, self.ext = np.random.default_rng(seed), ext
        self.ndim, self.batch, self.counts, self.labels, self.k = ndim, batch, counts, labels, 0
        self.convert = convert

    def __call__(self):
        boxes, labels = [], []
        for _ in range(self.batch):
            n = self.counts[self.k % len(self.counts)]
            self.k += 1
            boxes.append(make_boxes(self.rng, n, self.ndim, hi=1 - self.ext[1], ext=self.ext))
            labels.append(self.rng.integers(0, 80, (n,), dtype=np.int32))
        if self.convert:
            return boxes, labels, [self.convert(b) for b in boxes]
        return (boxes, labels) if self.labels else boxes


def run(ndim=2, batches=3, batch=4, labels=True, threads=2, convert=None, ext=(0.05, 0.3), **kw):
    """[(boxes, [labels,] outputs...)] per sample: boxes in xy(z)XY(Z) order; the op is given them
    as convert(boxes) gives them, where it is set"""
    src = Source(ndim, batch, labels=labels, convert=convert, ext=ext)

    @pipeline_def(batch_size=batch, num_threads=threads, device_id=None, seed=1234)
    def p():
        ins = fn.external_source(source=src, num_outputs=3 if convert else 2 if labels else None)
        ins = list(ins) if labels else [ins]
        given = ([ins[2]] if convert else ins[:1]) + ins[1:2]
        out = fn.random_bbox_crop(*given, **kw)
        return tuple(ins[:2]) + tuple(out)

    pipe = p()
    pipe.build()
    got = []
    for _ in range(batches):
        o = pipe.run()
        got += [[x.at(i) for x in o] for i in range(batch)]
    pipe.close()
    return got


def kept_reference(boxes, anchor, shape, prune=None):
    """indices of the boxes kept for the window (relative), and the boxes relative to it"""
    d = boxes.shape[1] // 2
    lo, hi = anchor.astype(F), (anchor + shape).astype(F)
    b0, b1 = boxes[:, :d], boxes[:, d:]
    if prune is None:
        c = (b0 + b1) * F(0.5)
        keep = np.all((c >= lo) & (c < hi), 1)
    else:
        inter = np.prod(np.clip(np.minimum(b1, hi) - np.maximum(b0, lo), 0, None), 1)
        vol = np.prod(b1 - b0, 1)
        keep = (inter > 0) & (inter / np.where(vol > 0, vol, 1) >= F(prune))
    idx = np.nonzero(keep)[0]
    k0, k1 = b0[idx], b1[idx]
    rel = np.concatenate([(np.maximum(k0, lo) - lo) / shape, (np.minimum(k1, hi) - lo) / shape], 1)
    return idx, np.clip(rel, 0, 1)


def overlaps(boxes, anchor, shape, kind):
    d = boxes.shape[1] // 2
    lo, hi = anchor, anchor + shape
    inter = np.prod(np.clip(np.minimum(boxes[:, d:], hi) - np.maximum(boxes[:, :d], lo), 0, None),
                    1)
    vol = np.prod(boxes[:, d:] - boxes[:, :d], 1)
    return inter / vol if kind == "overlap" else inter / (np.prod(shape) + vol - inter)


def check_kept(boxes, anchor, shape, out_boxes, prune=None, indices=None, labels=None,
               out_labels=None):
    idx, rel = kept_reference(boxes, anchor, shape, prune)
    if indices is not None:
        assert indices.dtype == np.int32 and indices.tolist() == idx.tolist()
    assert out_boxes.dtype == np.float32 and out_boxes.shape == rel.shape
    np.testing.assert_allclose(out_boxes, rel, atol=1e-6)
    if labels is not None:
        assert out_labels.dtype == np.int32 and out_labels.tolist() == labels[idx].tolist()
    if len(boxes):
        assert len(idx) > 0  # a window keeps a box


def check_relative_window(anchor, shape, scaling, aspect_ratio, ndim):
    assert anchor.dtype == shape.dtype == np.float32
    assert anchor.shape == shape.shape == (ndim,)
    assert np.all(anchor >= 0) and np.all(anchor + shape <= 1) and np.all(shape > 0)
    assert scaling[0] - 1e-6 <= shape.max() <= scaling[1] + 1e-6
    pairs = [(0, 1)] if ndim == 2 else [(0, 1), (0, 2), (1, 2)]
    ranges = [aspect_ratio[2 * (k % (len(aspect_ratio) // 2)):][:2] for k in range(len(pairs))]
    for (a, b), (rmin, rmax) in zip(pairs, ranges):
        r = shape[a] / shape[b]
        if rmin == rmax:
            assert np.isclose(r, rmin, rtol=1e-5), (r, rmin)
        else:
            assert rmin <= r <= rmax


# ---- output counts and the two APIs -------------------------------------------------------------

@pytest.mark.parametrize("labels,indices,count", [(False, False, 3), (True, False, 4),
                                                  (False, True, 4), (True, True, 5)])
def test_output_count_follows_inputs_and_arguments(labels, indices, count):
    got = run(labels=labels, batches=2, output_bbox_indices=indices, aspect_ratio=[0.5, 2.0],
              scaling=[0.3, 1.0], thresholds=[0.0, 0.3])
    nin = 2 if labels else 1
    for s in got:
        assert len(s) == nin + count
        boxes, anchor, shape, out_boxes = s[0], s[nin], s[nin + 1], s[nin + 2]
        extra = s[nin + 3:]
        check_relative_window(anchor, shape, [0.3, 1.0], [0.5, 2.0], 2)
        check_kept(boxes, anchor, shape, out_boxes,
                   indices=extra[-1] if indices else None,
                   labels=s[1] if labels else None, out_labels=extra[0] if labels else None)


def test_ops_api_without_labels():
    """ops.RandomBBoxCrop called on the boxes alone (arguments given as None are not given)"""
    src = Source(2, 3, labels=False)

    class P(Pipeline):
        def __init__(self):
            super().__init__(3, 1, None, seed=7)
            self.crop = ops.RandomBBoxCrop(device="cpu", aspect_ratio=[0.5, 2.0],
                                           scaling=[0.3, 0.9],
                                           thresholds=[0.0, 0.1], bbox_layout="xyXY",
                                           all_boxes_above_threshold=False, num_attempts=100,
                                           allow_no_crop=False, input_shape=None,
                                           crop_shape=None, bbox_prune_threshold=None)

        def define_graph(self):
            boxes = fn.external_source(source=src)
            return (boxes,) + tuple(self.crop(boxes))

    pipe = P()
    pipe.build()
    for _ in range(3):
        o = pipe.run()
        assert len(o) == 4
        for i in range(3):
            boxes, anchor, shape, out_boxes = (x.at(i) for x in o)
            check_relative_window(anchor, shape, [0.3, 0.9], [0.5, 2.0], 2)
            check_kept(boxes, anchor, shape, out_boxes)


# ---- relative windows, 2-D and 3-D --------------------------------------------------------------

@pytest.mark.parametrize("ndim,aspect_ratio", [
    (2, [0.5, 2.0]), (2, [1.0, 1.0]), (2, [0.75, 0.75]), (3, [1.0, 1.0]),
    (3, [0.5, 2.0, 0.6, 2.1, 0.4, 1.9]), (3, [0.5, 0.5, 0.25, 0.25, 0.5, 0.5])])
@pytest.mark.parametrize("prune", [None, 0.0, 0.4])
def test_relative_windows(ndim, aspect_ratio, prune):
    kw = dict(aspect_ratio=aspect_ratio, scaling=[0.3, 0.9], thresholds=[0.0, 0.05, 0.1],
              all_boxes_above_threshold=False, allow_no_crop=False, num_attempts=100,
              output_bbox_indices=True, bbox_layout="xyXY" if ndim == 2 else "xyzXYZ")
    if prune is not None:
        kw["bbox_prune_threshold"] = prune
    for boxes, labels, anchor, shape, out_boxes, out_labels, idx in run(ndim=ndim, **kw):
        check_relative_window(anchor, shape, [0.3, 0.9], aspect_ratio, ndim)
        check_kept(boxes, anchor, shape, out_boxes, prune, idx, labels, out_labels)


@pytest.mark.parametrize("kind", ["iou", "overlap"])
@pytest.mark.parametrize("all_boxes", [True, False])
def test_thresholds_met(kind, all_boxes):
    thr = 0.3 if kind == "overlap" or not all_boxes else 0.02
    got = run(ndim=2, thresholds=[thr], threshold_type=kind, all_boxes_above_threshold=all_boxes,
              allow_no_crop=False, scaling=[0.3, 1.0], aspect_ratio=[0.5, 2.0], num_attempts=50,
              ext=(0.2, 0.5))
    for boxes, labels, anchor, shape, out_boxes, out_labels in got:
        if len(boxes) == 0:
            continue
        m = overlaps(boxes, anchor, shape, kind)
        assert (m.min() if all_boxes else m.max()) >= thr - 1e-6


def test_no_crop_is_the_whole_input_with_every_box():
    got = run(ndim=3, thresholds=[0.9], allow_no_crop=True, scaling=[0.1, 0.2],
              total_num_attempts=5, output_bbox_indices=True)
    whole = 0
    for boxes, labels, anchor, shape, out_boxes, out_labels, idx in got:
        if anchor.tolist() == [0, 0, 0] and shape.tolist() == [1, 1, 1]:
            whole += 1
            assert np.array_equal(out_boxes, boxes) and idx.tolist() == list(range(len(boxes)))
    assert whole > 0


def test_same_outputs_for_any_thread_count():
    kw = dict(ndim=3, aspect_ratio=[0.5, 2.0], scaling=[0.3, 1.0], thresholds=[0.0, 0.1, 0.3],
              num_attempts=10, allow_no_crop=True, output_bbox_indices=True)
    one, four = run(threads=1, **kw), run(threads=4, **kw)
    for a, b in zip(one, four):
        assert all(np.array_equal(x, y) for x, y in zip(a, b))


# ---- layouts ------------------------------------------------------------------------------------

CANON = {2: "xyXY", 3: "xyzXYZ"}


@pytest.mark.parametrize("layout", ["yxYX", "XYxy", "xyWH", "HWyx", "zyxZYX", "xyzWHD", "zDyHxW"])
def test_layouts_permute_coordinates(layout):
    """the same windows as for the start-end layout, the boxes read and written in `layout`"""
    ndim = len(layout) // 2
    canon = CANON[ndim]
    kw = dict(ndim=ndim, aspect_ratio=[0.5, 2.0], scaling=[0.3, 1.0], thresholds=[0.0, 0.1],
              allow_no_crop=True, num_attempts=10)

    def convert(boxes):  # start-end (n, 2d) to layout
        d = boxes.shape[1] // 2
        cols = []
        for c in layout:
            if c in "xyz":
                cols.append(boxes[:, "xyz".index(c)])
            elif c in "XYZ":
                cols.append(boxes[:, d + "XYZ".index(c)])
            else:
                k = "WHD".index(c)
                cols.append(boxes[:, d + k] - boxes[:, k])
        return np.stack(cols, 1).astype(F) if len(boxes) else np.zeros((0, 2 * d), F)

    ref = run(bbox_layout=canon, **kw)
    got = run(bbox_layout=layout, convert=convert, **kw)
    for r, g in zip(ref, got):
        assert np.array_equal(r[2], g[2]) and np.array_equal(r[3], g[3])  # the same window
        np.testing.assert_allclose(g[4], convert(r[4]), atol=1e-6)
        assert np.array_equal(r[5], g[5])


def test_ltrb_false_is_start_and_extent():
    kw = dict(aspect_ratio=[0.5, 2.0], scaling=[0.3, 1.0], thresholds=[0.0, 0.2])
    a = run(ndim=3, bbox_layout="xyzWHD", **kw)
    b = run(ndim=3, ltrb=False, **kw)
    for x, y in zip(a, b):
        assert all(np.array_equal(p, q) for p, q in zip(x, y))


# ---- absolute windows ---------------------------------------------------------------------------

@pytest.mark.parametrize("ndim,input_shape,crop_shape", [
    (2, [400, 300], [100, 50]), (2, [400, 300], [400, 300]), (2, [400, 300], [600, 400]),
    (3, [400, 300, 64], [100, 50, 32]), (3, [400, 300, 64], [600, 400, 48])])
@pytest.mark.parametrize("prune", [None, 0.3])
def test_crop_shape_windows(ndim, input_shape, crop_shape, prune):
    kw = dict(input_shape=input_shape, crop_shape=crop_shape, thresholds=[0.0, 0.01, 0.05],
              all_boxes_above_threshold=False, num_attempts=100)
    if prune is not None:
        kw["bbox_prune_threshold"] = prune
    ins, crop = np.array(input_shape), np.array(crop_shape)
    for boxes, labels, anchor, shape, out_boxes, out_labels in run(ndim=ndim, **kw):
        assert shape.tolist() == crop_shape and anchor.dtype == np.float32
        assert np.all(anchor == np.round(anchor)) and np.all(anchor >= 0)
        assert np.all(anchor <= np.maximum(ins - crop, 0))
        check_kept(boxes, (anchor / ins).astype(F), (crop / ins).astype(F), out_boxes, prune,
                   labels=labels, out_labels=out_labels)


def test_crop_shape_overlap_one_keeps_a_whole_box():
    """threshold 1.0 of "overlap" with one box enough: some box lies wholly in the window"""
    ins = np.array([400, 300, 64])
    got = run(ndim=3, input_shape=ins.tolist(), crop_shape=[300, 250, 60], thresholds=[1.0],
              threshold_type="overlap", all_boxes_above_threshold=False, num_attempts=1000)
    for boxes, labels, anchor, shape, out_boxes, out_labels in got:
        if len(boxes):
            lo, hi = anchor / ins, (anchor + shape) / ins
            inside = np.all((boxes[:, :3] >= lo - 1e-6) & (boxes[:, 3:] <= hi + 1e-6), 1)
            assert inside.any()


def test_shape_layout_and_per_sample_shapes():
    """input_shape from another op, per sample; shape_layout "HW" gives both as (h, w)"""
    src = Source(2, 3)

    @pipeline_def(batch_size=3, num_threads=2, device_id=None, seed=3)
    def p():
        boxes, labels = fn.external_source(source=src, num_outputs=2)
        hw = fn.random.uniform(range=(200, 400), shape=(2,), dtype=types.INT32)
        out = fn.random_bbox_crop(boxes, labels, input_shape=hw, crop_shape=[100, 150],
                                  shape_layout="HW", thresholds=[0.0])
        return (boxes, hw) + tuple(out)

    pipe = p()
    pipe.build()
    for _ in range(4):
        o = pipe.run()
        for i in range(3):
            boxes, hw, anchor, shape, out_boxes, out_labels = (x.at(i) for x in o)
            ins = hw[::-1].astype(np.int64)  # (w, h)
            assert shape.tolist() == [150, 100]
            assert np.all(anchor >= 0) and np.all(anchor <= np.maximum(ins - [150, 100], 0))
            check_kept(boxes, (anchor / ins).astype(F), (shape / ins).astype(F), out_boxes)


@pytest.mark.parametrize("use_input_shape", [False, True])
def test_fixed_aspect_ratio_absolute_with_input_shape(use_input_shape):
    """aspect_ratio (1, 1): square relative windows, or square in pixels with input_shape"""
    src = Source(2, 3, labels=False)

    @pipeline_def(batch_size=3, num_threads=1, device_id=None, seed=1234)
    def p():
        in_sh = fn.random.uniform(range=(400, 600), shape=(2,), dtype=types.INT32)
        boxes = fn.external_source(source=src)
        out = fn.random_bbox_crop(boxes, aspect_ratio=(1.0, 1.0), scaling=(0.5, 0.8),
                                  thresholds=[0.0], bbox_layout="xyXY", total_num_attempts=100,
                                  allow_no_crop=False,
                                  input_shape=in_sh if use_input_shape else None)
        return in_sh, out[0], out[1]

    pipe = p()
    pipe.build()
    for _ in range(3):
        o = pipe.run()
        for i in range(3):
            ins, anchor, shape = (x.at(i) for x in o)
            assert np.all(anchor >= 0) and np.all(anchor + shape <= 1)
            if use_input_shape:
                np.testing.assert_allclose(ins[0] * shape[0], ins[1] * shape[1], rtol=1e-6)
            else:
                np.testing.assert_allclose(shape[0], shape[1], rtol=1e-6)


def test_empty_sample_with_crop_shape():
    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def p():
        boxes = fn.external_source(source=lambda: [np.zeros((0, 4), F)])
        return fn.random_bbox_crop(boxes, thresholds=[1.0], bbox_layout="xyXY",
                                   allow_no_crop=False, input_shape=[600, 400],
                                   crop_shape=[200, 200])

    pipe = p()
    pipe.build()
    for _ in range(3):
        anchor, shape, boxes = pipe.run()
        assert boxes.at(0).shape == (0, 4) and shape.at(0).tolist() == [200, 200]
        assert np.all(anchor.at(0) <= [400, 200])


# ---- total_num_attempts -------------------------------------------------------------------------

def test_total_num_attempts_takes_the_best_window():
    """an impossible threshold: after total_num_attempts windows the one of the best overlap so
    far, its boxes kept as any window's; without the bound, an error naming the sample"""
    got = run(ndim=2, thresholds=[1.0], allow_no_crop=False, total_num_attempts=10,
              scaling=[0.3, 0.6], aspect_ratio=[0.5, 2.0])
    for boxes, labels, anchor, shape, out_boxes, out_labels in got:
        check_relative_window(anchor, shape, [0.3, 0.6], [0.5, 2.0], 2)
        idx, rel = kept_reference(boxes, anchor, shape)
        np.testing.assert_allclose(out_boxes, rel, atol=1e-6)
        assert out_labels.tolist() == labels[idx].tolist()
    # the window was the best found: the log has DALI's warning, once per sample with boxes
    logs = []
    cb = _c.LOG_FN(lambda level, msg, user: logs.append((level, msg.decode())))
    _c.lib.sl_log_set_callback(cb, None)
    try:
        got = run(ndim=3, batches=1, thresholds=[1.0], allow_no_crop=False, total_num_attempts=10)
    finally:
        _c.lib.sl_log_set_callback(_c.LOG_FN(), None)
    warned = [(level, m) for level, m in logs if "could not find a valid cropping window" in m]
    for i, s in enumerate(got):  # (the stages ran ahead: later batches warned too)
        if len(s[0]):
            assert any(m.startswith("random_bbox_crop: sample %d:" % i) for _, m in warned)
    assert all(level == 2 and "(attempted 10 times)" in m and "best cropping window" in m
               for level, m in warned)
    with pytest.raises(sluice.Error, match=r"random_bbox_crop: sample \d+: no window met a "
                                           "threshold in 1000000 attempts"):
        run(ndim=2, batches=1, thresholds=[1.0], allow_no_crop=False, scaling=[0.3, 0.6])


# ---- errors -------------------------------------------------------------------------------------

@pytest.mark.parametrize("kw,msg", [
    (dict(crop_shape=[10, 10]), "crop_shape needs input_shape"),
    (dict(crop_shape=[10, 10], input_shape=[20, 20], scaling=[0.5, 1.0]),
     "scaling is incompatible with crop_shape"),
    (dict(crop_shape=[10, 10], input_shape=[20, 20], aspect_ratio=[0.5, 1.0]),
     "aspect_ratio is incompatible with crop_shape"),
    (dict(crop_shape=[10, 10], input_shape=[20, 20], allow_no_crop=True),
     "allow_no_crop=True is incompatible with crop_shape"),
    (dict(bbox_layout="xyXZ"), "bbox_layout \"xyXZ\" is not a permutation"),
    (dict(bbox_layout="xyXH"), "bbox_layout \"xyXH\" is not a permutation"),
    (dict(bbox_layout="xyXY", ltrb=True), "ltrb and bbox_layout cannot both be given"),
    (dict(shape_layout="WW", input_shape=[4, 4], crop_shape=[2, 2]), "shape_layout \"WW\""),
    (dict(shape_layout="HW"), "shape_layout orders crop_shape and input_shape"),
    (dict(aspect_ratio=[0.5, 1.0, 2.0]), "aspect_ratio must be"),
    (dict(aspect_ratio=[0.0, 1.0]), r"aspect_ratio must be \[min, max\] with 0 < min"),
    (dict(aspect_ratio=[2.0, 1.0]), "aspect_ratio must be"),
    (dict(scaling=[0.5, 1.5]), r"scaling must lie within \[0, 1\]"),
    (dict(thresholds=[]), "thresholds needs at least one value"),
    (dict(thresholds=[-0.1]), r"thresholds must be in \[0, 1\]"),
    (dict(threshold_type="area"), "threshold_type"),
    (dict(num_attempts=0), "num_attempts must be >= 1"),
    (dict(total_num_attempts=0), "total_num_attempts must be >= 1 or -1"),
    (dict(bbox_prune_threshold=1.5), r"bbox_prune_threshold must be in \[0, 1\]"),
])
def test_bad_arguments_are_refused(kw, msg):
    with pytest.raises(sluice.Error, match="random_bbox_crop: " + msg):
        run(batches=1, **kw)


@pytest.mark.parametrize("kw,ndim,msg", [
    (dict(aspect_ratio=[0.5, 2.0, 0.5, 2.0, 0.5, 2.0]), 2,
     "aspect_ratio has three ranges .* but the boxes are 2-D"),
    (dict(bbox_layout="xyzXYZ"), 2, r"sample 0: boxes are \(3, 4\); expected \(N, 6\)"),
    (dict(input_shape=[10, 10, 10], crop_shape=[5, 5, 5]), 2,
     "sample 0: input_shape has 3 values but the boxes are 2-D"),
    (dict(input_shape=[10, 0], crop_shape=[5, 5]), 2, "sample 0: input_shape must be positive"),
    (dict(input_shape=[10, 10], crop_shape=[5, -5]), 2, "sample 0: crop_shape must be positive"),
    (dict(shape_layout="WHD", input_shape=[4, 4], crop_shape=[2, 2]), 2,
     "shape_layout \"WHD\" has 3 axes but the boxes are 2-D"),
])
def test_bad_arguments_for_the_boxes_fail_the_batch(kw, ndim, msg):
    with pytest.raises(sluice.Error, match="random_bbox_crop: .*" + msg):
        run(ndim=ndim, batches=1, **kw)


def boxes_pipe(boxes, labels=None, **kw):
    @pipeline_def(batch_size=len(boxes), num_threads=1, device_id=None)
    def p():
        ins = [fn.external_source(source=lambda: boxes)]
        if labels is not None:
            ins.append(fn.external_source(source=lambda: labels))
        return fn.random_bbox_crop(*ins, **kw)

    pipe = p()
    pipe.build()
    return pipe.run()


@pytest.mark.parametrize("boxes,labels,msg", [
    ([np.zeros((2, 5), F)], None, r"sample 0: boxes are \(2, 5\); expected \(N, 4\)"),
    ([np.zeros((2, 4), F), np.zeros((2, 6), F)], None,
     r"sample 1: boxes are \(2, 6\); expected \(N, 4\)"),
    ([np.zeros((2, 4), np.float64)], None, "boxes must be float"),
    ([np.zeros(4, F)], None, "boxes must be float .* 1 dims"),
    ([make_boxes(np.random.default_rng(1), 3, 2)], [np.zeros(2, np.int32)],
     "sample 0: 3 boxes but 2 labels"),
    ([make_boxes(np.random.default_rng(1), 3, 2)], [np.zeros(3, F)], "labels must be int32"),
])
def test_bad_inputs_fail_the_batch(boxes, labels, msg):
    with pytest.raises(sluice.Error, match="random_bbox_crop: .*" + msg):
        boxes_pipe(boxes, labels)


def test_labels_of_any_trailing_shape_follow_their_boxes():
    rng = np.random.default_rng(2)
    boxes = [make_boxes(rng, 6, 2), make_boxes(rng, 4, 2)]
    labels = [np.arange(12, dtype=np.int32).reshape(6, 2),
              np.arange(8, dtype=np.int32).reshape(4, 2)]
    anchor, shape, out_boxes, out_labels, idx = boxes_pipe(
        boxes, labels, scaling=[0.5, 0.9], aspect_ratio=[0.5, 2.0], output_bbox_indices=True)
    for i in range(2):
        assert out_labels.at(i).shape == (len(idx.at(i)), 2)
        assert np.array_equal(out_labels.at(i), labels[i][idx.at(i)])
