# SPDX-License-Identifier: Apache-2.0
"""Sequences and per-frame arguments, in the forms of DALI's programs: `sluice.newaxis` and `...`
in subscripts, fn.per_frame, transforms.* with per-frame arguments (a sequence of matrices),
warp_affine broadcasting an image into a sequence of crops, per-frame rotation and brightness of a
sequence, and the errors (frame counts that do not match, an argument given per frame to an op
that takes none)."""

import subprocess

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.types as types
from sluice import pipeline_def
from conftest import TOOL, gpu_or_skip, run_tool

RNG = np.random.default_rng(7)


def run(build, batch_size=2, device_id=None):
    """Builds a pipeline around build() (its outputs) and runs it once; the outputs as lists of
    numpy samples, and the TensorLists."""
    @pipeline_def(batch_size=batch_size, num_threads=2, device_id=device_id, seed=5)
    def pipe():
        return build()
    p = pipe()
    p.build()
    outs = p.run()
    outs = outs if isinstance(outs, tuple) else (outs,)
    cpu = [o.as_cpu() if hasattr(o, "as_cpu") else o for o in outs]
    return [[np.array(o.at(i)) for i in range(len(o))] for o in cpu], cpu


def feed(*samples, layout=None):
    """An external_source giving these samples (one per sample of the batch)."""
    kw = {"layout": layout} if layout else {}
    return fn.external_source(source=lambda: [np.asarray(s) for s in samples], batch=True, **kw)


# ---- newaxis and Ellipsis in subscripts --------------------------------------------------------

def test_newaxis_and_ellipsis_subscripts_match_numpy():
    a = RNG.integers(0, 100, (3, 4, 5)).astype(np.int16)
    b = RNG.integers(0, 100, (2, 6, 5)).astype(np.int16)
    forms = [  # na: sluice.newaxis for the pipeline, numpy.newaxis (None) for the reference
        lambda x, na: x[na],
        lambda x, na: x[None],
        lambda x, na: x[..., 1],
        lambda x, na: x[1, ...],
        lambda x, na: x[1:, ..., ::2],
        lambda x, na: x[..., na],
        lambda x, na: x[:, na, 1:3],
        lambda x, na: x[-1, None, ..., na, 0],
        lambda x, na: x[na, na],
        lambda x, na: x[...],
    ]
    got, _ = run(lambda: tuple(f(feed(a, b), sluice.newaxis) for f in forms))
    for k, f in enumerate(forms):
        for i, ref in enumerate((a, b)):
            want = f(ref, np.newaxis)
            assert got[k][i].shape == want.shape, (k, i, got[k][i].shape, want.shape)
            np.testing.assert_array_equal(got[k][i], want, err_msg="form %d sample %d" % (k, i))


def test_newaxis_of_a_scalar_and_named_new_dims():
    (n, img, frames), tl = run(lambda: (
        feed(np.int32(3), np.int32(4))[sluice.newaxis],
        feed(np.zeros((2, 3, 1), np.uint8), np.ones((2, 3, 1), np.uint8), layout="HWC")
        [sluice.newaxis("F")],
        feed(np.zeros((2, 3, 1), np.uint8), np.ones((2, 3, 1), np.uint8), layout="HWC")
        [:, sluice.newaxis, :, 0]))
    assert [x.tolist() for x in n] == [[3], [4]]
    assert img[1].shape == (1, 2, 3, 1) and tl[1].layout() == "FHWC"
    # as DALI: an unnamed new dim leaves the layout empty
    assert frames[0].shape == (2, 1, 3) and tl[2].layout() == ""
    with pytest.raises(ValueError, match="one character"):
        sluice.newaxis("FH")
    with pytest.raises(IndexError, match="single ellipsis"):
        run(lambda: feed(np.zeros((2, 2)), np.zeros((2, 2)))[..., 0, ...])


def test_subscripts_past_the_rank_are_refused():
    with pytest.raises(sluice.Error, match="3 subscripts for samples of 2 dims: Too many indices"):
        run(lambda: feed(np.zeros((2, 2)), np.zeros((2, 2)))[0, None, 0, ..., 1])


# ---- arithmetic broadcasting (what the multiple-crops example leans on) ------------------------

def test_n_by_2_plus_1_by_2_broadcasts_as_numpy():
    s = [RNG.integers(0, 50, (k, 2)).astype(np.int32) for k in (3, 1)]
    z = [np.int32([[7, 9]]), np.int32([[1, 2]])]
    (got,), _ = run(lambda: feed(*s) + feed(*z))
    for i in range(2):
        np.testing.assert_array_equal(got[i], s[i] + z[i])


# ---- per_frame ---------------------------------------------------------------------------------

def test_per_frame_marks_the_layout_and_moves_no_data():
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    (a, b, c), tl = run(lambda: (fn.per_frame(feed(x, x)),
                                 fn.per_frame(feed(x, x, layout="FX")),
                                 fn.per_frame(feed(x, x, layout="HW"), replace=True)))
    assert [t.layout() for t in tl] == ["F*", "FX", "FW"]
    np.testing.assert_array_equal(a[1], x)
    with pytest.raises(sluice.Error, match="does not start with F"):
        run(lambda: fn.per_frame(feed(x, x, layout="HW")))
    with pytest.raises(sluice.Error, match="scalars"):
        run(lambda: fn.per_frame(feed(np.float32(1), np.float32(2))))


# ---- transforms with per-frame arguments -------------------------------------------------------

def crop_matrix(fs, fe, ts, te):
    k = (np.float64(te) - ts) / (np.float64(fe) - fs)
    return np.float32([[k[0], 0, ts[0] - fs[0] * k[0]], [0, k[1], ts[1] - fs[1] * k[1]]])


def test_transforms_crop_per_frame_gives_a_sequence_of_matrices():
    starts = [np.float32([[1, 2], [3, 4], [0, 5]]), np.float32([[2, 2]])]
    size = [np.float32([[4, 3]]), np.float32([[2, 6]])]  # one frame: the same for every frame
    (m, t), tl = run(lambda: (
        fn.transforms.crop(from_start=fn.per_frame(feed(*starts)),
                           from_end=fn.per_frame(feed(*starts) + feed(*size)),
                           to_start=0.0, to_end=fn.per_frame(feed(*size))),
        fn.transforms.translation(offset=fn.per_frame(feed(*starts)))))
    assert tl[0].layout() == "F**"
    for i in range(2):
        assert m[i].shape == (len(starts[i]), 2, 3)
        for f in range(len(starts[i])):
            want = crop_matrix(starts[i][f], starts[i][f] + size[i][0], np.zeros(2), size[i][0])
            np.testing.assert_allclose(m[i][f], want, rtol=1e-6, atol=1e-6)
            np.testing.assert_array_equal(t[i][f], [[1, 0, starts[i][f][0]],
                                                    [0, 1, starts[i][f][1]]])


def test_transforms_rotation_per_frame_chained_with_a_per_sample_scale():
    angles = [np.float32([0, 90, 180]), np.float32([45, -90, 30])]
    (m,), _ = run(lambda: (fn.transforms.rotation(
        fn.transforms.scale(scale=feed(np.float32([2, 2]), np.float32([1, 3]))),
        angle=fn.per_frame(feed(*angles))),))
    for i, sc in enumerate(([2, 2], [1, 3])):
        for f, a in enumerate(angles[i]):
            r = np.deg2rad(np.float64(a))
            rot = np.array([[np.cos(r), -np.sin(r)], [np.sin(r), np.cos(r)]])
            want = rot @ np.diag(sc)
            np.testing.assert_allclose(m[i][f][:, :2], want, atol=1e-6)


# ---- warp_affine: crops of one image, a sequence ------------------------------------------------

def test_multiple_crops_from_one_image_are_numpy_crops():
    """The multiple-crops example's form: per-frame crop origins, a per-sample crop size, a crop
    matrix per frame, warp_affine with nearest-neighbour sampling of the (non-sequence) image."""
    imgs = [RNG.integers(0, 255, (40, 50, 3), dtype=np.uint8),
            RNG.integers(0, 255, (30, 24, 3), dtype=np.uint8)]
    sizes = [(10, 7), (12, 5)]  # (w, h)
    starts = [np.int32([[0, 0], [40, 33], [13, 21], [5, 30]]), np.int32([[10, 20], [0, 3]])]

    def build():
        img = feed(*imgs, layout="HWC")
        crop_w = feed(*[np.int32(s[0]) for s in sizes])
        crop_h = feed(*[np.int32(s[1]) for s in sizes])
        crop_start = feed(*starts)
        crop_size = fn.stack(crop_w, crop_h, axis=0)[sluice.newaxis]
        crop_end = crop_start + crop_size
        mtx = fn.transforms.crop(from_start=fn.per_frame(crop_start + 0.0),
                                 from_end=fn.per_frame(crop_end + 0.0), to_start=0.0,
                                 to_end=fn.per_frame(crop_size + 0.0))
        return fn.warp_affine(img, mtx, size=fn.stack(crop_h, crop_w),
                              interp_type=types.INTERP_NN, inverse_map=False)

    (crops,), tl = run(build)
    assert tl[0].layout() == "FHWC"
    for i in range(2):
        w, h = sizes[i]
        assert crops[i].shape == (len(starts[i]), h, w, 3)
        for f, (x, y) in enumerate(starts[i]):
            np.testing.assert_array_equal(crops[i][f], imgs[i][y:y + h, x:x + w],
                                          err_msg="sample %d crop %d" % (i, f))


def test_warp_affine_of_a_sequence_applies_frame_i_matrix_to_frame_i():
    seq = RNG.integers(0, 255, (3, 8, 9, 2), dtype=np.uint8)
    shifts = np.float32([[0, 0], [2, 1], [-3, 4]])  # translations, destination -> source
    (out, one), tl = run(lambda: (
        fn.warp_affine(feed(seq, seq, layout="FHWC"),
                       matrix=fn.per_frame(fn.transforms.translation(
                           offset=fn.per_frame(feed(shifts, shifts)))), interp_type=types.INTERP_NN,
                       fill_value=0),
        fn.warp_affine(feed(seq, seq, layout="FHWC"), matrix=[1, 0, 2, 0, 1, 1],
                       interp_type=types.INTERP_NN, fill_value=0)), batch_size=2)
    assert tl[0].layout() == "FHWC" and out[0].shape == seq.shape
    for f, (dx, dy) in enumerate(shifts.astype(int)):
        want = np.zeros_like(seq[f])
        ys, xs = np.mgrid[0:8, 0:9]
        sy, sx = ys + dy, xs + dx
        ok = (sy >= 0) & (sy < 8) & (sx >= 0) & (sx < 9)
        want[ok] = seq[f][sy[ok], sx[ok]]
        np.testing.assert_array_equal(out[1][f], want, err_msg="frame %d" % f)
    # a sequence with a per-sample matrix: the same map for every frame
    np.testing.assert_array_equal(one[0][:, :-1, :-2], seq[:, 1:, 2:])


def test_per_frame_rotation_of_a_sequence():
    seq = RNG.integers(0, 255, (4, 6, 6, 3), dtype=np.uint8)
    angles = np.float32([0, 90, 180, 270])
    (rot, ref1), _ = run(lambda: (
        fn.rotate(feed(seq, seq[::-1], layout="FHWC"), angle=fn.per_frame(feed(angles, angles)),
                  interp_type=types.INTERP_NN),
        fn.rotate(feed(seq[1], seq[2], layout="HWC"), angle=90.0, interp_type=types.INTERP_NN)))
    for i, s in enumerate((seq, seq[::-1])):
        assert rot[i].shape == s.shape
        for f in range(4):
            np.testing.assert_array_equal(rot[i][f], np.rot90(s[f], f),
                                          err_msg="sample %d frame %d" % (i, f))
    # frame 1 of the sequence is what a plain image rotated by its angle gives
    np.testing.assert_array_equal(rot[0][1], ref1[0])


def dali_canvas(h, w, degs):
    """DALI's rotated canvas for the frames of one sequence (one angle per frame): each frame's
    bounding box (its angle a float in radians, 0.01 trimmed before rounding up) with the parity
    of the side it mostly comes from; the sequence takes the largest of each side, made odd or
    even as most frames want."""
    side, odd = np.zeros(2, np.int64), np.zeros(2, np.int64)
    for d in degs:
        r = float(np.float32(d) * np.float32(np.pi / 180))
        c, s = abs(np.cos(r)), abs(np.sin(r))
        box = [int(np.ceil(c * h + s * w - 1e-2)), int(np.ceil(c * w + s * h - 1e-2))]
        odd += [h % 2, w % 2] if s <= c else [w % 2, h % 2]
        side = np.maximum(side, box)
    return tuple(int(v + ((v % 2) ^ (2 * k > len(degs)))) for v, k in zip(side, odd))


def test_rotated_sequences_share_dali_canvas():
    seq = RNG.integers(0, 255, (3, 9, 7, 3), dtype=np.uint8)
    angles = np.float32([10, -35, 120])
    (rot, one), _ = run(lambda: (
        fn.rotate(feed(seq, seq[:2], layout="FHWC"), angle=fn.per_frame(feed(angles, angles[:2]))),
        fn.rotate(feed(seq[0], seq[1], layout="HWC"), angle=feed(angles[1:2], angles[2:3]))))
    assert rot[0].shape == (3,) + dali_canvas(9, 7, angles) + (3,)
    assert rot[1].shape == (2,) + dali_canvas(9, 7, angles[:2]) + (3,)
    assert one[0].shape == dali_canvas(9, 7, angles[1:2]) + (3,)
    assert one[1].shape == dali_canvas(9, 7, angles[2:3]) + (3,)


def test_per_frame_brightness_of_a_sequence():
    seq = RNG.integers(0, 100, (3, 4, 5, 3), dtype=np.uint8)
    gains = np.float32([0.5, 1.0, 2.0])
    (out,), tl = run(lambda: (fn.brightness(feed(seq, seq, layout="FHWC"),
                                            brightness=fn.per_frame(feed(gains, gains))),))
    assert tl[0].layout() == "FHWC"
    for f, g in enumerate(gains):
        np.testing.assert_array_equal(out[0][f], np.clip(np.round(seq[f] * np.float32(g)), 0, 255))


# ---- errors ------------------------------------------------------------------------------------

def test_a_frame_count_that_does_not_match_names_op_argument_sample_and_counts():
    seq = np.zeros((3, 4, 4, 1), np.uint8)
    with pytest.raises(sluice.Error) as e:
        run(lambda: fn.rotate(feed(seq, seq, layout="FHWC"),
                              angle=fn.per_frame(feed(np.float32([1, 2, 3]),
                                                      np.float32([1, 2])))))
    msg = str(e.value)
    assert "rotate" in msg and "angle has 2 frames" in msg and "input 0 has 3" in msg, msg
    assert "sample 1" in msg, msg
    # two per-frame arguments of 3 and 2 frames (neither 1)
    with pytest.raises(sluice.Error, match="argument from_end has 2 frames, but argument "
                                           "from_start has 3"):
        run(lambda: fn.transforms.crop(from_start=fn.per_frame(feed(np.zeros((3, 2), np.float32),
                                                                    np.zeros((3, 2), np.float32))),
                                       from_end=fn.per_frame(feed(np.ones((2, 2), np.float32),
                                                                  np.ones((2, 2), np.float32)))))


def test_a_per_frame_argument_is_refused_where_the_op_takes_none():
    img = np.zeros((4, 4, 3), np.uint8)
    with pytest.raises(sluice.Error, match="slice: argument rel_start is given per frame .* "
                                           "takes no per-frame arguments"):
        run(lambda: fn.slice(feed(img, img, layout="HWC"), rel_shape=[0.5, 0.5], axes=[0, 1],
                             rel_start=fn.per_frame(feed(np.float32([[0.1, 0.1]]),
                                                         np.float32([[0.1, 0.1]])))))
    # crop_mirror_normalize takes sequences whole (one window per sequence): no per-frame values
    with pytest.raises(sluice.Error, match="crop_mirror_normalize: argument crop_pos_x is given "
                                           "per frame .* takes no per-frame arguments"):
        run(lambda: fn.crop_mirror_normalize(feed(img, img, layout="HWC"), crop=(2, 2),
                                             crop_pos_x=fn.per_frame(feed(np.float32([0.5]),
                                                                          np.float32([0.5])))))
    with pytest.raises(sluice.Error, match="resize: argument resize_x is given per frame.*one "
                                           "value per sample"):
        run(lambda: fn.resize(feed(img, img, layout="HWC"),
                              resize_x=fn.per_frame(feed(np.float32([2]), np.float32([2])))))


def test_the_operator_table_shows_the_trait():
    assert fn.warp_affine.schema.sequences and fn.transforms.crop.schema.sequences
    assert fn.transforms.crop.schema.args["from_start"].per_frame
    assert not fn.cast.schema.sequences
    assert "per-frame" in fn.rotate.__doc__ and "frame by frame" in fn.rotate.__doc__


# ---- on the GPU --------------------------------------------------------------------------------

@pytest.mark.gpu
def test_on_the_gpu_sequences_match_the_cpu():
    gpu_or_skip()
    seq = RNG.integers(0, 255, (3, 9, 7, 3), dtype=np.uint8)
    angles = np.float32([10, -35, 120])
    gains = np.float32([0.25, 1.5, 1.0])
    sigmas = [np.float32([0.6, 2.0, 1.2]), np.float32([1.5])]  # per frame; one for all frames
    windows = np.int32([[3, 5], [1, 7], [5, 1]])  # [y, x] per frame

    def build(dev):
        s = feed(seq, seq[::-1], layout="FHWC")
        s = s.gpu() if dev == "gpu" else s
        return (fn.rotate(s, angle=fn.per_frame(feed(angles, angles)), device=dev),
                fn.brightness(s, brightness=fn.per_frame(feed(gains, gains)), device=dev),
                fn.gaussian_blur(s, sigma=fn.per_frame(feed(*sigmas)), device=dev),
                fn.gaussian_blur(s, window_size=fn.per_frame(feed(windows, windows)),
                                 dtype=types.FLOAT, device=dev))
    gpu, _ = run(lambda: build("gpu"), device_id=0)
    cpu, _ = run(lambda: build("cpu"))
    for k in range(4):
        for i in range(2):
            np.testing.assert_array_equal(gpu[k][i], cpu[k][i])
    # each frame blurred with its own sigma: frame 0 (0.6) keeps more of its detail than frame 1
    assert np.abs(np.diff(cpu[2][0][0].astype(float), axis=1)).mean() > \
        np.abs(np.diff(cpu[2][0][1].astype(float), axis=1)).mean()


# ---- in pipeline text --------------------------------------------------------------------------

TEXT = '''import nvidia.dali as dali
import nvidia.dali.fn as fn

def sequences():
    angles = fn.random.uniform(range=[-90.0, 90.0], shape=[3])
    mats = fn.transforms.rotation(angle=fn.per_frame(angles))
    return (angles, mats, mats[dali.newaxis], mats[..., 0], mats[None, ..., dali.newaxis("C")],
            mats[1, ..., ::2])
'''


def test_pipeline_text_per_frame_and_newaxis_subscripts(tmp_path):
    text = tmp_path / "p.py"
    text.write_text(TEXT)
    dump = tmp_path / "dump"
    run_tool("run", str(text), "--devices", "cpu", "--batch-size", "2", "--steps", "1",
             "--dump", str(dump))

    def dumped(k):  # a dense output is one file of the batch, named as the variable
        files = sorted(dump.glob("%s_*.npy" % ["angles", "mats", "out2", "out3", "out4", "out5"][k]))
        return list(np.load(files[0])) if len(files) == 1 else [np.load(f) for f in files]
    angles, mats = dumped(0), dumped(1)
    for i in range(2):
        assert mats[i].shape == (3, 2, 3)
        for f, a in enumerate(angles[i]):
            r = np.deg2rad(np.float64(a))
            np.testing.assert_allclose(mats[i][f][:, :2], [[np.cos(r), -np.sin(r)],
                                                           [np.sin(r), np.cos(r)]], atol=1e-6)
        for k, f in ((2, lambda m: m[np.newaxis]), (3, lambda m: m[..., 0]),
                     (4, lambda m: m[None, ..., np.newaxis]), (5, lambda m: m[1, ..., ::2])):
            np.testing.assert_array_equal(dumped(k)[i], f(mats[i]), err_msg="output %d" % k)


def test_pipeline_text_refuses_a_second_ellipsis_at_its_column(tmp_path):
    text = tmp_path / "p.py"
    text.write_text("import nvidia.dali.fn as fn\n\ndef p():\n"
                    "    u = fn.random.uniform(range=[0.0, 1.0], shape=[2, 2])\n"
                    "    return u[..., 0, ...]\n")
    r = subprocess.run([TOOL, "run", str(text), "--devices", "cpu", "--steps", "1"],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "p.py:5:" in r.stderr and "single ellipsis" in r.stderr, r.stderr


def test_per_frame_errors_end_in_dalis_sentences():
    with pytest.raises(sluice.Error, match="Cannot mark zero-dimensional input as a sequence"):
        run(lambda: fn.per_frame(feed(np.float32(1), np.float32(2))))
    with pytest.raises(sluice.Error, match="Per-frame argument input must be a sequence. The input "
                                           "layout should start with 'F'"):
        run(lambda: fn.per_frame(feed(np.zeros((2, 3)), np.zeros((2, 3)), layout="XY")))
