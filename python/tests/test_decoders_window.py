# SPDX-License-Identifier: Apache-2.0
"""fn.decoders.image_slice and fn.decoders.image_crop: the window each decodes equals the whole
image (fn.decoders.image) cut with numpy at the window slice's and crop's rules give (computed
here), for anchor/shape inputs, named arguments and crop positions, RGB and GRAY; and a window
that leaves the image is an error naming the sample. The JPEGs are made with libjpeg's cjpeg."""

import shutil
import subprocess

import numpy as np
import pytest

import sluice.fn as fn
import sluice.types as types
from sluice import errors, pipeline_def

pytestmark = pytest.mark.skipif(not shutil.which("cjpeg"),
                                reason="needs libjpeg's cjpeg (libjpeg-turbo-progs)")


def jpegs(tmp_path, n=4):
    rng = np.random.default_rng(7)
    out = []
    for k in range(n):
        h, w = int(rng.integers(20, 70)), int(rng.integers(20, 70))
        yy, xx = np.mgrid[0:h, 0:w]
        img = np.stack([(xx * 4 + k * 9) % 256, (yy * 3) % 256, (xx + yy) % 256], -1)
        img = img.astype(np.uint8)
        p = tmp_path / ("i%d.ppm" % k)
        p.write_bytes(b"P6\n%d %d\n255\n" % (w, h) + img.tobytes())
        out.append(np.frombuffer(subprocess.run(["cjpeg", "-quality", "90", str(p)],
                                                capture_output=True, check=True).stdout,
                                 np.uint8))
    return out


def run(make, data, *extra):
    @pipeline_def(batch_size=len(data), num_threads=2, device_id=None)
    def pipe():
        srcs = [fn.external_source(source=lambda: data)]
        srcs += [fn.external_source(source=lambda e=e: e) for e in extra]
        return make(*srcs)

    out = pipe().run()
    out = out if isinstance(out, (list, tuple)) else [out]
    return [[np.array(o.at(i)) for i in range(len(data))] for o in out]


def rnd(v):
    return int(np.floor(v + 0.5))


@pytest.mark.parametrize("gray", [False, True])
def test_image_slice(tmp_path, gray):
    data = jpegs(tmp_path)
    ot = types.GRAY if gray else types.RGB
    anc = [np.array([0.1 * k, 0.2], np.float32) for k in range(4)]
    shp = [np.array([0.5, 0.6], np.float32) for _ in range(4)]
    full, a, b = run(lambda d, an, sh: (fn.decoders.image(d, output_type=ot),
                                        fn.decoders.image_slice(d, an, sh, output_type=ot),
                                        fn.decoders.image_slice(d, start=[3, 2], end=[17, 19],
                                                                output_type=ot)),
                     data, anc, shp)
    for k, img in enumerate(full):
        h, w = img.shape[:2]
        x0, y0 = rnd(float(anc[k][0]) * w), rnd(float(anc[k][1]) * h)
        x1 = rnd((float(anc[k][0]) + float(shp[k][0])) * w)
        y1 = rnd((float(anc[k][1]) + float(shp[k][1])) * h)
        np.testing.assert_array_equal(a[k], img[y0:y1, x0:x1])
        np.testing.assert_array_equal(b[k], img[2:19, 3:17])


def test_image_crop(tmp_path):
    data = jpegs(tmp_path)
    px = [np.array(p, np.float32) for p in (0.0, 0.3, 0.5, 1.0)]
    full, a, b = run(lambda d, p: (fn.decoders.image(d),
                                   fn.decoders.image_crop(d, crop=[12, 15], crop_pos_x=p,
                                                          crop_pos_y=0.25),
                                   fn.decoders.image_crop(d, crop_h=10, crop_w=9,
                                                          rounding="truncate")),
                     data, px)
    for k, img in enumerate(full):
        h, w = img.shape[:2]
        y0 = int(np.floor(np.float32(0.25 * (h - 12)) + np.float32(0.5)))  # half away from 0
        x0 = int(np.floor(np.float32(float(px[k]) * (w - 15)) + np.float32(0.5)))
        np.testing.assert_array_equal(a[k], img[y0:y0 + 12, x0:x0 + 15])
        y0, x0 = int(0.5 * (h - 10)), int(0.5 * (w - 9))
        np.testing.assert_array_equal(b[k], img[y0:y0 + 10, x0:x0 + 9])


def test_windows_outside_are_errors(tmp_path):
    data = jpegs(tmp_path, 2)
    with pytest.raises(errors.Error, match=r"decoders.image_slice: sample 0: Slice can.t be placed "
                                           r"out of bounds with current policy. Got: the window"):
        run(lambda d: fn.decoders.image_slice(d, start=[0, 0], shape=[500, 5]), data)
    with pytest.raises(errors.Error, match=r"decoders.image_crop: sample 0: the window"):
        run(lambda d: fn.decoders.image_crop(d, crop=[500, 5]), data)
    with pytest.raises(errors.Error, match="decoders.image_crop: crop and crop_h/crop_w are"):
        run(lambda d: fn.decoders.image_crop(d, crop=[5, 5], crop_h=3), data)
