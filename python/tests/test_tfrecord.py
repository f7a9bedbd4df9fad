# SPDX-License-Identifier: Apache-2.0
"""readers.tfrecord against TFRecord files that another writer made (tfrecord_writer: the protobuf
library, else a hand encoder): every record read back, feature for feature, with and without an
index file; `sluice index` writes what DALI's tfrecord2idx would; corrupt files (length, its CRC,
the data's CRC, a truncated record) and a feature of the wrong type are errors naming the file and
the record's byte offset; the seed's pipeline over a TFRecord copy of the caffe2-fmnist-256 LMDB
gives the LMDB's decoded images and labels, batch for batch."""

import os
import subprocess

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.tfrecord as tfrec
import sluice.types as types
import tfrecord_writer as w
from conftest import LMDB, TOOL, run_tool
from sluice import pipeline_def

N = 23


def records():
    rs = []
    for i in range(N):
        r = {"image/encoded": ("bytes", [bytes([i]) * (i * 7 % 50)]),
             "image/class/label": ("int64", [i % 5 - 2]),
             "box": ("float", [i + 0.5, -i, 2.25, 1e-3 * i, 7.0, -0.0][: 6 if i % 4 else 4]),
             "ids": ("int64", list(range(i % 4)) if i % 3 else [2 ** 40 + i])}
        if i % 6 == 5:
            del r["image/class/label"]  # a missing feature
        rs.append(r)
    return rs


FEATURES = {
    "image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
    "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1),
    "box": tfrec.FixedLenFeature([2, 3], tfrec.float32, 9.5),
    "ids": tfrec.VarLenFeature(tfrec.int64, 0),
}


def read_all(path, batch, features=FEATURES, **kw):
    @pipeline_def(batch_size=batch, num_threads=2, device_id=None)
    def p():
        out = fn.readers.tfrecord(path=path, features=features, name="r", **kw)
        return tuple(out[k] for k in features)

    pipe = p()
    pipe.build()
    outs = pipe.run()
    return [[outs[k].at(i) for i in range(batch)] for k in range(len(features))]


def check_records(got, rs):
    enc, lab, box, ids = got
    for i, r in enumerate(rs):
        assert bytes(enc[i]) == r["image/encoded"][1][0], i
        if "image/class/label" in r:
            assert lab[i].dtype == np.int64 and lab[i].tolist() == r["image/class/label"][1]
        else:  # absent: an empty (0,) output, as DALI
            assert lab[i].shape == (0,)
        want = r["box"][1] + [9.5] * (6 - len(r["box"][1]))  # short: the default after
        assert box[i].dtype == np.float32 and box[i].shape == (2, 3)
        assert box[i].ravel().tolist() == np.float32(want).tolist(), i
        assert ids[i].dtype == np.int64 and ids[i].tolist() == r["ids"][1], i


def test_reads_another_writers_records(tmp_path):
    print("writer:", w.WRITER)
    path = str(tmp_path / "a.tfrecord")
    rs = records()
    w.write(path, rs)
    check_records(read_all(path, N), rs)


def test_index_as_dali_and_index_path(tmp_path):
    path = str(tmp_path / "a.tfrecord")
    rs = records()
    spans = w.write(path, rs)
    got = run_tool("index", path)
    assert got == w.dali_index(path)
    assert got == "".join("%d %d\n" % s for s in spans)
    run_tool("index", path, tmp_path / "a.idx")
    assert open(tmp_path / "a.idx").read() == got
    check_records(read_all(path, N, index_path=str(tmp_path / "a.idx")), rs)


def test_two_files_sharded_in_order(tmp_path):
    rs = records()
    a, b = str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")
    w.write(a, rs[:10])
    w.write(b, rs[10:])
    # shard 1 of 2: records [11, 23) of the two files read as one data set
    got = read_all([a, b], 12, num_shards=2, shard_id=1)
    check_records(got, rs[11:])


def error_of(path, features=FEATURES, **kw):
    with pytest.raises(sluice.Error) as ei:
        read_all(path, N, features=features, **kw)
    return str(ei.value)


def corrupt(tmp_path, name, fn_bytes):
    path = str(tmp_path / name)
    spans = w.write(path, records())
    data = bytearray(open(path, "rb").read())
    off = spans[3][0]
    fn_bytes(data, off)
    open(path, "wb").write(bytes(data))
    return path, off, spans


def test_corrupt_length(tmp_path):
    path, off, _ = corrupt(tmp_path, "len.tfrecord", lambda d, o: d.__setitem__(o, d[o] ^ 1))
    msg = error_of(path)
    assert path in msg and "offset %d" % off in msg and "bad length CRC" in msg, msg


def test_corrupt_length_crc(tmp_path):
    path, off, _ = corrupt(tmp_path, "lcrc.tfrecord",
                           lambda d, o: d.__setitem__(o + 9, d[o + 9] ^ 0x40))
    msg = error_of(path)
    assert path in msg and "offset %d" % off in msg and "bad length CRC" in msg, msg


def test_corrupt_data_crc(tmp_path):
    path, off, spans = corrupt(tmp_path, "dcrc.tfrecord",
                               lambda d, o: d.__setitem__(o + 13, d[o + 13] ^ 0x10))
    msg = error_of(path)
    assert path in msg and "offset %d" % off in msg and "bad data CRC" in msg, msg
    # sluice index checks the data too, and names the record
    r = subprocess.run([TOOL, "index", path], capture_output=True, text=True)
    assert r.returncode == 1 and "offset %d" % off in r.stderr and "bad data CRC" in r.stderr


def test_truncated_record(tmp_path):
    path = str(tmp_path / "t.tfrecord")
    spans = w.write(path, records())
    data = open(path, "rb").read()
    last = spans[-1][0]
    open(path, "wb").write(data[: last + 20])  # the last record's header and 8 of its bytes
    msg = error_of(path)
    assert path in msg and "offset %d" % last in msg and "truncated record" in msg, msg


def test_index_past_the_file(tmp_path):
    path = str(tmp_path / "i.tfrecord")
    w.write(path, records())
    size = os.path.getsize(path)
    (tmp_path / "i.idx").write_text("0 %d\n%d 40\n" % (size, size - 10))
    msg = error_of(path, index_path=str(tmp_path / "i.idx"))
    assert "i.idx:2" in msg and "not inside" in msg, msg
    # an index whose lengths do not match the records: named at the record's offset
    spans = w.dali_index(path).splitlines()
    o1, l1 = map(int, spans[1].split())
    (tmp_path / "j.idx").write_text("0 %d\n" % (o1 + l1))
    msg = error_of(path, index_path=str(tmp_path / "j.idx"))
    assert "offset 0" in msg and "its index says %d" % (o1 + l1) in msg, msg


def test_wrong_feature_type(tmp_path):
    path = str(tmp_path / "w.tfrecord")
    rs = records()
    rs[4]["ids"] = ("float", [1.0])
    spans = w.write(path, rs)
    msg = error_of(path)
    assert path in msg and "offset %d" % spans[4][0] in msg, msg
    assert "'ids' is a float_list, but features asks for tfrec.int64" in msg, msg


def test_bad_feature_specs(tmp_path):
    path = str(tmp_path / "s.tfrecord")
    w.write(path, records())
    msg = error_of(path, features={"ids": tfrec.VarLenFeature(tfrec.string, "")})
    assert "tensors of strings are not supported" in msg, msg
    msg = error_of(path, features={"ids": tfrec.FixedLenFeature([2], tfrec.int64, 0)})
    assert "'ids' has 3 values, more than its shape holds (2)" in msg, msg
    with pytest.raises(sluice.ArgumentTypeError):
        tfrec.FixedLenFeature([1], "int64", 0)
    with pytest.raises(sluice.ArgumentTypeError):
        read_all(path, N, features={"ids": ("int64",)})


def test_partial_shape(tmp_path):
    path = str(tmp_path / "p.tfrecord")
    w.write(path, [{"v": ("float", [float(k) for k in range(2 * i)])} for i in range(4)])
    got = read_all(path, 4, features={"v": tfrec.VarLenFeature([2], tfrec.float32, 0.0)})[0]
    for i in range(4):
        assert got[i].shape == (i, 2) and got[i].ravel().tolist() == list(range(2 * i))


def seed(reader):
    def pipe():
        if reader == "lmdb":
            jpegs, labels = fn.readers.caffe2(path=LMDB, name="r")
        else:
            out = fn.readers.tfrecord(path=reader, name="r", features={
                "image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
                "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1)})
            jpegs, labels = out["image/encoded"], out["image/class/label"]
        images = fn.decoders.image(jpegs, device="mixed", output_type=types.GRAY)
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, std=[255.0],
                                          output_layout="CHW")
        images = fn.reshape(images, shape=[28 * 28])
        labels = fn.one_hot(labels.gpu(), num_classes=10)
        return images, labels
    return pipe


def test_seed_pipeline_same_as_lmdb(tmp_path):
    # the LMDB's records, as they are, into a TFRecord file by the other writer
    @pipeline_def(batch_size=256, num_threads=2, device_id=None)
    def raw():
        return fn.readers.caffe2(path=LMDB, name="r")

    p = raw()
    p.build()
    jpegs, labels = p.run()
    path = str(tmp_path / "fmnist.tfrecord")
    w.write(path, [{"image/encoded": ("bytes", [bytes(jpegs.at(i))]),
                    "image/class/label": ("int64", [int(labels.at(i)[0])])} for i in range(256)])
    pipes = []
    for reader in ("lmdb", path):
        q = pipeline_def(seed(reader), batch_size=64, num_threads=2, device_id=None, seed=3)()
        q.build()
        pipes.append(q)
    for step in range(5):  # past the end of the epoch (4 batches) into the next
        a, b = pipes[0].run(), pipes[1].run()
        assert len(a) == len(b) == 2
        for x, y in zip(a, b):
            xa, ya = x.as_array(), y.as_array()
            assert xa.dtype == ya.dtype and xa.shape == ya.shape
            assert xa.tobytes() == ya.tobytes(), step
