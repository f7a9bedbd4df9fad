# SPDX-License-Identifier: Apache-2.0
"""crop_mirror_normalize and crop as DALI's tests write them for sequences (FHWC in, FHWC or FCHW
out: every frame cut, mirrored and normalised with its sequence's window and flag), channel
padding with a fill value per image channel (the padded channel 0, as DALI's) or per output
channel, and a layout they do not take; compared with numpy."""

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.types as types


def run(data, layout, **kwargs):
    pipe = sluice.Pipeline(batch_size=len(data), num_threads=2, device_id=None)
    with pipe:
        x = fn.external_source(source=lambda: data, layout=layout)
        pipe.set_outputs(fn.crop_mirror_normalize(x, **kwargs))
    pipe.build()
    (out,) = pipe.run()
    return out


def seqs(n=2):
    rng = np.random.default_rng(3)
    return [rng.integers(0, 255, (3 + i, 20, 30, 3)).astype(np.uint8) for i in range(n)]


@pytest.mark.parametrize("out_layout", ["FHWC", "FCHW"])
def test_sequences_frame_by_frame(out_layout):
    data = seqs()
    mean, std = [10.0, 20.0, 30.0], [2.0, 4.0, 8.0]
    out = run(data, "FHWC", crop_h=8, crop_w=16, crop_pos_x=0.3, crop_pos_y=0.2, mirror=1,
              mean=mean, std=std, dtype=types.FLOAT, output_layout=out_layout)
    assert out.layout() == out_layout
    y0, x0 = int(0.2 * (20 - 8) + 0.5), int(0.3 * (30 - 16) + 0.5)
    for i, s in enumerate(data):
        want = (s[:, y0:y0 + 8, x0:x0 + 16][:, :, ::-1].astype(np.float32) - np.float32(mean)) \
            / np.float32(std)
        if out_layout == "FCHW":
            want = want.transpose(0, 3, 1, 2)
        np.testing.assert_allclose(out.at(i), want, rtol=1e-6, atol=1e-5)


def test_crop_of_sequences_keeps_layout_and_type():
    data = seqs()
    pipe = sluice.Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        x = fn.external_source(source=lambda: data, layout="FHWC")
        pipe.set_outputs(fn.crop(x, crop=(5, 7), crop_pos_x=0.0, crop_pos_y=1.0))
    pipe.build()
    (out,) = pipe.run()
    assert out.layout() == "FHWC"
    for i, s in enumerate(data):
        np.testing.assert_array_equal(out.at(i), s[:, 15:20, 0:7])


def test_sequence_layout_needs_a_sequence():
    with pytest.raises(sluice.InvalidArgumentError, match="for sequences"):
        run([np.zeros((4, 4, 3), np.uint8)], "HWC", output_layout="FCHW")


@pytest.mark.parametrize("fill,want_pad", [((1.0, 2.0, 3.0), 0.0), ((1.0, 2.0, 3.0, 42.0), 42.0),
                                           (5.0, 5.0)])
def test_channel_padding_fill(fill, want_pad):
    img = [np.full((4, 6, 3), 100, np.uint8)]
    out = run(img, "HWC", crop_h=6, crop_w=6, crop_pos_y=0.5, out_of_bounds_policy="pad",
              fill_values=fill, pad_output=True, output_layout="HWC")
    got = np.asarray(out.at(0))
    assert got.shape == (6, 6, 4)
    np.testing.assert_array_equal(got[1:5, :, :3], 100.0)  # the image rows
    np.testing.assert_array_equal(got[0, 0, :3], np.broadcast_to(np.float32(fill)[:3]
                                                                 if np.ndim(fill) else fill, 3))
    np.testing.assert_array_equal(got[:, :, 3], want_pad)


def test_refuses_other_layouts():
    with pytest.raises(ValueError, match='The layout "ABC" does not match any of the allowed'):
        run([np.zeros((4, 6, 3), np.uint8)] * 2, "ABC", crop_h=2, crop_w=2)
