# SPDX-License-Identifier: Apache-2.0
"""decoders.image and peek_image_shape on BMP, PNM and TIFF files (written by image_writers.py
from numpy arrays): every header and pixel layout the decoder reads, in RGB, GRAY, BGR and
ANY_DATA, compared with the arrays; malformed files are errors naming the record; TIFF without
libtiff in the build, and JPEG 2000 without OpenJPEG, are refused by name. JPEG 2000 files (JP2
and J2K, written by OpenJPEG's encoder through the C test test_jpeg2000, with the images they
hold) through the CPU and mixed decoders and the ROI decoders."""

import os
import subprocess

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.types as types
from image_writers import bmp, pnm, tiff

RNG = np.random.default_rng(21)
RGB = RNG.integers(0, 256, (5, 7, 3), dtype=np.uint8)
PAL = RNG.integers(0, 256, (16, 3), dtype=np.uint8)
IDX = RNG.integers(0, 16, (6, 9)).astype(np.uint8)
GRAYPAL = np.repeat(np.arange(0, 256, 1, dtype=np.uint8)[:, None], 3, 1)
GIDX = RNG.integers(0, 256, (4, 11)).astype(np.uint8)
BITS = RNG.integers(0, 2, (3, 13)).astype(np.uint8)
G16 = RNG.integers(0, 1000, (4, 6)).astype(np.int64)


def gray(rgb):
    """BT.601 luma in libjpeg's fixed point, as the decoder converts RGB to GRAY"""
    r, g, b = (rgb[..., k].astype(np.int64) for k in range(3))
    return ((19595 * r + 38470 * g + 7471 * b + 32768) >> 16).astype(np.uint8)[..., None]


def scale(v, maxval):
    return ((v * 255 + maxval // 2) // maxval).astype(np.uint8)


# (file name, bytes, the decoded RGB image, channels of ANY_DATA)
CASES = [
    ("bmp24.bmp", bmp(RGB), RGB, 3),
    ("bmp24_top_down.bmp", bmp(RGB, top_down=True), RGB, 3),
    ("bmp24_core.bmp", bmp(RGB, core=True), RGB, 3),
    ("bmp32.bmp", bmp(RGB, bpp=32), RGB, 3),
    ("bmp32_fields.bmp",
     bmp((RGB[..., 0].astype(np.uint32) << 8 | RGB[..., 1].astype(np.uint32) << 16 |
          RGB[..., 2].astype(np.uint32) << 24), bpp=32, masks=(0xFF00, 0xFF0000, 0xFF000000)),
     RGB, 3),
    ("bmp16.bmp", bmp(RGB, bpp=16), scale((RGB >> 3).astype(np.int64), 31), 3),
    ("bmp8_palette.bmp", bmp(IDX, bpp=8, palette=PAL), PAL[IDX], 3),
    ("bmp4_palette.bmp", bmp(IDX, bpp=4, palette=PAL), PAL[IDX], 3),
    ("bmp4_core.bmp", bmp(IDX, bpp=4, palette=PAL, core=True), PAL[IDX], 3),
    ("bmp1.bmp", bmp(BITS, bpp=1, palette=np.uint8([[255, 0, 0], [0, 0, 255]])),
     np.uint8([[255, 0, 0], [0, 0, 255]])[BITS], 3),
    ("bmp8_gray.bmp", bmp(GIDX, bpp=8, palette=GRAYPAL), GRAYPAL[GIDX], 1),
    ("p6.ppm", pnm(RGB, 6), RGB, 3),
    ("p3.ppm", pnm(RGB, 3, comment=False), RGB, 3),
    ("p5.pgm", pnm(GIDX, 5), np.repeat(GIDX[..., None], 3, 2), 1),
    ("p2.pgm", pnm(GIDX, 2), np.repeat(GIDX[..., None], 3, 2), 1),
    ("p5_16bit.pgm", pnm(G16, 5, maxval=999), np.repeat(scale(G16, 999)[..., None], 3, 2), 1),
    ("p2_maxval_15.pgm", pnm(G16 % 16, 2, maxval=15),
     np.repeat(scale(G16 % 16, 15)[..., None], 3, 2), 1),
    ("p4.pbm", pnm(BITS, 4), np.repeat(np.where(BITS == 1, 0, 255).astype(np.uint8)[..., None],
                                      3, 2), 1),
    ("p1.pbm", pnm(BITS, 1), np.repeat(np.where(BITS == 1, 0, 255).astype(np.uint8)[..., None],
                                      3, 2), 1),
]


def decode(tmp_path, name, data, output_type):
    """decoders.image and peek_image_shape of one file, through readers.file"""
    root = tmp_path / name.replace(".", "_")
    os.makedirs(root / "0")
    (root / "0" / name).write_bytes(data)
    pipe = sluice.Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        enc, _ = fn.readers.file(file_root=str(root))
        pipe.set_outputs(fn.decoders.image(enc, output_type=output_type),
                         fn.peek_image_shape(enc, image_type=output_type))
    pipe.build()
    img, shape = pipe.run()
    pipe.close()
    return np.asarray(img.at(0)), np.asarray(shape.at(0))


@pytest.mark.parametrize("name,data,want,any_c", CASES, ids=[c[0] for c in CASES])
def test_bmp_and_pnm_decode_as_written(tmp_path, name, data, want, any_c):
    img, shape = decode(tmp_path, name, data, output_type=types.RGB)
    np.testing.assert_array_equal(img, want)
    assert list(shape) == list(want.shape)
    img, shape = decode(tmp_path, "g_" + name, data, output_type=types.GRAY)
    np.testing.assert_array_equal(img, want[..., :1] if any_c == 1 else gray(want))
    assert list(shape) == [want.shape[0], want.shape[1], 1]
    img, _ = decode(tmp_path, "b_" + name, data, output_type=types.BGR)
    np.testing.assert_array_equal(img, want[..., ::-1])
    img, shape = decode(tmp_path, "a_" + name, data, output_type=types.ANY_DATA)
    np.testing.assert_array_equal(img, want[..., :any_c])
    assert list(shape) == [want.shape[0], want.shape[1], any_c]


def test_bmp_and_pnm_match_pillow(tmp_path):
    """the same files through an independent reader, where Pillow is installed"""
    Image = pytest.importorskip("PIL.Image")
    import io
    for name, data, want, _ in CASES:
        # Pillow scales 5 bits as v << 3 (sluice to 0..255), reads no mask but its own and
        # clips 16-bit gray to 255 (sluice scales maxval to 255)
        if name in ("bmp16.bmp", "bmp32_fields.bmp", "p5_16bit.pgm"):
            continue
        ref = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
        img, _ = decode(tmp_path, name, data, output_type=types.RGB)
        if "maxval" in name:  # Pillow's own rounding of other maxvals
            np.testing.assert_allclose(img, ref, atol=1, err_msg=name)
        else:
            np.testing.assert_array_equal(img, ref, err_msg=name)


BAD = [
    ("cut.bmp", bmp(RGB)[:-10], "BMP pixel data is cut"),
    ("rle.bmp", bmp(RGB)[:30] + b"\1\0\0\0" + bmp(RGB)[34:], "RLE compression is not supported"),
    ("zero.bmp", bmp(RGB)[:18] + b"\0\0\0\0" + bmp(RGB)[22:], "BMP header gives 0x5"),
    ("header.bmp", bmp(RGB)[:14] + b"\x07\0\0\0" + bmp(RGB)[18:], "BMP header of 7 bytes"),
    ("index.bmp", bmp(IDX, bpp=8, palette=PAL[:4]), "the palette has 4"),
    ("cut.ppm", pnm(RGB, 6)[:-1], "PNM raster is cut"),
    ("maxval.pgm", pnm(GIDX, 5, maxval=100), "above maxval 100"),
    ("noheight.pgm", b"P5\n12\n", "no valid width and height"),
    ("bigmax.pgm", b"P5 2 2 70000\n....", "no valid maxval"),
    ("ascii.pbm", b"P1 4 1\n0 1 2 1\n", "PBM raster is cut or invalid at value 2"),
    ("img.jp2", b"\0\0\0\x0cjP  \r\n\x87\n" + bytes(60), "JPEG 2000"),
]


@pytest.mark.parametrize("name,data,msg", BAD, ids=[b[0] for b in BAD])
def test_bad_files_are_errors_naming_the_record(tmp_path, name, data, msg):
    with pytest.raises(sluice.Error) as e:
        decode(tmp_path, name, data, output_type=types.RGB)
    assert msg in str(e.value) and name in str(e.value), str(e.value)


HAVE_TIFF = "libtiff" in sluice.build_info().split(";")[0]
RGBA = RNG.integers(0, 256, (5, 7, 4), dtype=np.uint8)
GA = RNG.integers(0, 256, (6, 3, 2), dtype=np.uint8)
TIFFS = [
    ("rgb_le.tiff", tiff(RGB), RGB, 3),
    ("rgb_be_one_strip.tiff", tiff(RGB, big_endian=True, rows_per_strip=5), RGB, 3),
    ("rgba.tiff", tiff(RGBA, extra=2), RGBA[..., :3], 4),
    ("gray.tiff", tiff(GIDX), np.repeat(GIDX[..., None], 3, 2), 1),
    ("gray_alpha.tiff", tiff(GA, extra=2), np.repeat(GA[..., :1], 3, 2), 2),
    ("palette.tiff", tiff(IDX, photometric=3, palette=np.resize(PAL, (256, 3))), PAL[IDX], 3),
]


@pytest.mark.skipif(not HAVE_TIFF, reason="built without libtiff (see the next test)")
@pytest.mark.parametrize("name,data,want,any_c", TIFFS, ids=[c[0] for c in TIFFS])
def test_tiff_decodes_as_written(tmp_path, name, data, want, any_c):
    img, shape = decode(tmp_path, name, data, output_type=types.RGB)
    np.testing.assert_array_equal(img, want)
    assert list(shape) == list(want.shape)
    img, shape = decode(tmp_path, "a_" + name, data, output_type=types.ANY_DATA)
    assert list(shape) == [want.shape[0], want.shape[1], any_c] and img.shape[2] == any_c
    full = {"rgba.tiff": RGBA, "gray_alpha.tiff": GA}.get(name, want[..., :any_c])
    np.testing.assert_array_equal(img, full)
    img, _ = decode(tmp_path, "g_" + name, data, output_type=types.GRAY)
    np.testing.assert_array_equal(img, want[..., :1] if any_c <= 2 else gray(want))


@pytest.mark.skipif(not HAVE_TIFF, reason="built without libtiff")
def test_tiff_compressed_by_pillow(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    import io
    for comp in ("tiff_lzw", "tiff_adobe_deflate", "packbits"):
        buf = io.BytesIO()
        Image.fromarray(RGB).save(buf, format="TIFF", compression=comp)
        img, _ = decode(tmp_path, comp + ".tiff", buf.getvalue(), output_type=types.RGB)
        np.testing.assert_array_equal(img, RGB, err_msg=comp)


def test_tiff_without_libtiff_is_refused_by_name(tmp_path):
    data = tiff(RGB)
    if HAVE_TIFF:  # a broken one instead: libtiff's reason, the record named
        with pytest.raises(sluice.Error, match="cut_tiff.tiff.*TIFF"):
            decode(tmp_path, "cut_tiff.tiff", data[:40], output_type=types.RGB)
    else:
        with pytest.raises(sluice.Error, match="img.tiff.*TIFF images are not supported"):
            decode(tmp_path, "img.tiff", data, output_type=types.RGB)


HAVE_OPENJPEG = "OpenJPEG" in sluice.build_info().split(";")[0]
J2K_WRITER = os.path.join(os.path.dirname(os.environ.get("SLUICE_LIBRARY", "")), "test_jpeg2000")


def jpeg2000_files(tmp_path):
    """{name: (bytes, the (h, w, c) image it holds)}, written by the C test's OpenJPEG encoder"""
    if not os.path.exists(J2K_WRITER):
        pytest.skip("no test_jpeg2000 in this build (it writes the files)")
    out = tmp_path / "j2k_files"
    os.makedirs(out)
    subprocess.run([J2K_WRITER, str(out), "npy"], check=True, capture_output=True)
    names = sorted(f for f in os.listdir(out) if not f.endswith(".npy"))
    assert len(names) == 4, names
    return {n: ((out / n).read_bytes(), np.load(out / (n + ".npy"))) for n in names}


@pytest.mark.skipif(not HAVE_OPENJPEG, reason="built without OpenJPEG (see the next test)")
def test_jpeg2000_decodes_as_written(tmp_path):
    for name, (data, full) in jpeg2000_files(tmp_path).items():
        c = full.shape[2]
        want = full[..., :3] if c >= 3 else np.repeat(full[..., :1], 3, 2)
        ext = name + ".jp2"  # (the format comes from the bytes: a J2K codestream too)
        img, shape = decode(tmp_path, ext, data, output_type=types.RGB)
        np.testing.assert_array_equal(img, want, err_msg=name)
        assert list(shape) == list(want.shape), name
        img, shape = decode(tmp_path, "a_" + ext, data, output_type=types.ANY_DATA)
        np.testing.assert_array_equal(img, full, err_msg=name)
        assert list(shape) == list(full.shape), name
        img, _ = decode(tmp_path, "g_" + ext, data, output_type=types.GRAY)
        np.testing.assert_array_equal(img, full[..., :1] if c <= 2 else gray(want), err_msg=name)
        img, _ = decode(tmp_path, "b_" + ext, data, output_type=types.BGR)
        np.testing.assert_array_equal(img, want[..., ::-1], err_msg=name)


@pytest.mark.skipif(not HAVE_OPENJPEG, reason="built without OpenJPEG")
def test_jpeg2000_mixed_and_roi_decoders(tmp_path):
    files = jpeg2000_files(tmp_path)
    root = tmp_path / "mixed"
    os.makedirs(root / "0")
    for name, (data, _) in files.items():  # (readers.file lists .jp2, not .j2k, as DALI's does)
        (root / "0" / (name + ".jp2")).write_bytes(data)
    names = sorted(files)
    pipe = sluice.Pipeline(batch_size=len(names), num_threads=2, device_id=None)
    with pipe:
        enc, _ = fn.readers.file(file_root=str(root))
        pipe.set_outputs(fn.decoders.image(enc, device="mixed", output_type=types.ANY_DATA),
                         fn.decoders.image_crop(enc, crop=[2, 3], crop_pos_x=1.0, crop_pos_y=0.0,
                                                output_type=types.ANY_DATA),
                         fn.decoders.image_slice(enc, start=[1, 2], end=[4, 4],
                                                 output_type=types.ANY_DATA))
    pipe.build()
    whole, crop, sliced = pipe.run()
    pipe.close()
    for i, name in enumerate(names):
        full = files[name][1]
        np.testing.assert_array_equal(np.asarray(whole.as_cpu().at(i)), full, err_msg=name)
        w = full.shape[1]
        np.testing.assert_array_equal(np.asarray(crop.at(i)), full[0:2, w - 3:w], err_msg=name)
        np.testing.assert_array_equal(np.asarray(sliced.at(i)), full[2:4, 1:4], err_msg=name)


def test_jpeg2000_without_openjpeg_is_refused_by_name(tmp_path):
    data = b"\0\0\0\x0cjP  \r\n\x87\n\0\0\0\x14ftypjp2 \0\0\0\0jp2 "
    if HAVE_OPENJPEG:  # a cut one instead: OpenJPEG's reason, the record named
        with pytest.raises(sluice.Error, match="cut.jp2.*JPEG 2000"):
            decode(tmp_path, "cut.jp2", data, output_type=types.RGB)
    else:
        with pytest.raises(sluice.Error, match="img.jp2.*JPEG 2000 images are not supported"):
            decode(tmp_path, "img.jp2", data, output_type=types.RGB)


@pytest.mark.skipif(not HAVE_OPENJPEG, reason="built without OpenJPEG")
def test_jpeg2000_random_crop_is_a_window(tmp_path):
    """decoders.image_random_crop of JPEG 2000 files: each output is a window of the image"""
    files = jpeg2000_files(tmp_path)
    root = tmp_path / "random_crop"
    os.makedirs(root / "0")
    for name, (data, _) in files.items():
        (root / "0" / (name + ".jp2")).write_bytes(data)
    names = sorted(files)
    pipe = sluice.Pipeline(batch_size=len(names), num_threads=2, device_id=None, seed=5)
    with pipe:
        enc, _ = fn.readers.file(file_root=str(root))
        pipe.set_outputs(fn.decoders.image_random_crop(enc, output_type=types.ANY_DATA,
                                                       random_area=[0.3, 0.6]))
    pipe.build()
    for _ in range(3):
        (out,) = pipe.run()
        for i, name in enumerate(names):
            full, win = files[name][1], np.asarray(out.at(i))
            h, w = win.shape[:2]
            assert win.shape[2] == full.shape[2] and h <= full.shape[0] and w <= full.shape[1], name
            found = [(y, x) for y in range(full.shape[0] - h + 1)
                     for x in range(full.shape[1] - w + 1)
                     if np.array_equal(full[y:y + h, x:x + w], win)]
            assert found, "%s: the %dx%d output is no window of the image" % (name, w, h)
    pipe.close()


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_OPENJPEG, reason="built without OpenJPEG")
def test_jpeg2000_mixed_decoder_on_gpu(tmp_path):
    """device="mixed" on GPU 0: JPEG 2000 files decoded on the CPU pool, beside a JPEG large
    enough for nvJPEG, in one batch; the JPEG 2000 images exactly as written"""
    from conftest import FIXTURES, gpu_or_skip
    gpu_or_skip()
    files = jpeg2000_files(tmp_path)
    root = tmp_path / "gpu"
    os.makedirs(root / "0")
    for name, (data, _) in files.items():
        (root / "0" / (name + ".jp2")).write_bytes(data)
    photo = os.path.join(FIXTURES, "dali_extra", "jpeg", "snail-4291306_1280.jpg")
    with open(photo, "rb") as f:
        (root / "0" / "zz_photo.jpg").write_bytes(f.read())
    names = sorted(files)
    outs = {}
    for dev, device_id in (("mixed", 0), ("cpu", None)):
        pipe = sluice.Pipeline(batch_size=len(names) + 1, num_threads=2, device_id=device_id)
        with pipe:
            enc, _ = fn.readers.file(file_root=str(root))
            pipe.set_outputs(fn.decoders.image(enc, device=dev, output_type=types.RGB))
        pipe.build()
        (out,) = pipe.run()
        out = out.as_cpu() if dev == "mixed" else out
        outs[dev] = [np.asarray(out.at(i)) for i in range(len(names) + 1)]
        pipe.close()
    for i, name in enumerate(names):
        full = files[name][1]
        want = full[..., :3] if full.shape[2] >= 3 else np.repeat(full[..., :1], 3, 2)
        np.testing.assert_array_equal(outs["mixed"][i], want, err_msg=name)
    assert outs["mixed"][-1].shape == outs["cpu"][-1].shape
