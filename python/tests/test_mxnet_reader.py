# SPDX-License-Identifier: Apache-2.0
"""readers.mxnet (DALI's fn.readers.mxnet / ops.MXNetReader) on MXNet RecordIO files written here
by the format's description: each record magic, length word, the image header {flag, label, id,
id2}, flag labels, the image bytes, padding to 4 bytes; the index "key<TAB>offset". What it gives
is compared with what was written: the image bytes, the labels (float32 (1,) or (flag,)), the
key and the source info; several files are one stream; bad files fail naming file and offset."""

import struct

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.ops as ops

MAGIC = 0xCED7230A


def record(payload, cflag=0):
    pad = b"\0" * ((4 - len(payload) % 4) % 4)
    return struct.pack("<II", MAGIC, (cflag << 29) | len(payload)) + payload + pad


def image_payload(i, labels=None):
    body = bytes(range(i % 7, i % 7 + 5 + i))  # stands for the encoded image
    if labels is None:
        return struct.pack("<IfQQ", 0, float(i % 10), i, 0) + body, body, [float(i % 10)]
    return (struct.pack("<IfQQ", len(labels), 0.0, i, 0) + struct.pack("<%df" % len(labels),
                                                                        *labels) + body,
            body, labels)


def write(tmp_path, payloads, split_at=None):
    """payloads into one .rec (or two, split before record split_at), and the index"""
    files, offsets, data, pos = [], [], [b"", b""], 0
    for k, p in enumerate(payloads):
        part = 1 if split_at is not None and k >= split_at else 0
        offsets.append(pos)
        rec = record(p)
        data[part] += rec
        pos += len(rec)
    for part in (0, 1):
        if part == 1 and split_at is None:
            break
        f = tmp_path / ("train%d.rec" % part)
        f.write_bytes(data[part])
        files.append(str(f))
    idx = tmp_path / "train.idx"
    idx.write_text("".join("%d\t%d\n" % (100 + k, off) for k, off in enumerate(offsets)))
    return files, str(idx), offsets


def read_all(files, idx, n, legacy=False):
    pipe = sluice.Pipeline(batch_size=n, num_threads=1, device_id=None)
    with pipe:
        if legacy:
            jpegs, labels = ops.MXNetReader(path=files, index_path=[idx])(name="Reader")
        else:
            jpegs, labels = fn.readers.mxnet(path=files, index_path=[idx], name="Reader")
        pipe.set_outputs(jpegs, labels)
    pipe.build()
    return pipe.run()


@pytest.mark.parametrize("legacy", [False, True])
def test_images_and_labels_as_written(tmp_path, legacy):
    made = [image_payload(i) for i in range(6)]
    files, idx, offsets = write(tmp_path, [m[0] for m in made])
    jpegs, labels = read_all(files, idx, 6, legacy)
    for i, (_, body, lab) in enumerate(made):
        assert bytes(np.asarray(jpegs.at(i))) == body
        assert labels.at(i).dtype == np.float32
        np.testing.assert_array_equal(labels.at(i), np.float32(lab))
        assert jpegs[i].source_info() == "%s at index %d" % (files[0], offsets[i])


def test_label_lists_and_two_files(tmp_path):
    made = [image_payload(i, [float(i), 2.5, -1.0][: 1 + i % 3]) for i in range(5)]
    files, idx, offsets = write(tmp_path, [m[0] for m in made], split_at=3)
    jpegs, labels = read_all(files, idx, 5)
    for i, (_, body, lab) in enumerate(made):
        assert bytes(np.asarray(jpegs.at(i))) == body
        np.testing.assert_array_equal(labels.at(i), np.float32(lab))
    # the second file's records: their offsets count from the second file's start
    assert jpegs[4].source_info() == "%s at index %d" % (files[1], offsets[4] - offsets[3])


def test_refuses_bad_records(tmp_path):
    files, idx, _ = write(tmp_path, [image_payload(0)[0]])
    data = bytearray(open(files[0], "rb").read())
    data[0] ^= 0xFF
    open(files[0], "wb").write(bytes(data))
    with pytest.raises(sluice.FormatError, match=r"train0.rec at offset 0: not a RecordIO record"):
        read_all(files, idx, 1)
    p = tmp_path / "split.rec"
    p.write_bytes(record(image_payload(0)[0], cflag=1))
    with pytest.raises(sluice.NotSupportedError, match="split in parts"):
        read_all([str(p)], idx, 1)


def test_refuses_bad_index(tmp_path):
    files, idx, _ = write(tmp_path, [image_payload(0)[0]])
    open(idx, "w").write("0\t999999\n")
    with pytest.raises(sluice.FormatError, match=r"train.idx:1: offset 999999 is not inside"):
        read_all(files, idx, 1)
    pipe = sluice.Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        pipe.set_outputs(*fn.readers.mxnet(path=files, index_path=[idx, idx]))
    with pytest.raises(sluice.InvalidArgumentError, match="index_path is a list of one"):
        pipe.build()
        pipe.run()
