# SPDX-License-Identifier: Apache-2.0
"""Subscripts as DALI programs write them, in pipeline text and in Python: readers.tfrecord taken
whole is a dict of its outputs by feature name (`inputs["image/encoded"]`); a list's items can be
indexed; an op output's indices and slices (`images[1:, :-1, 2]`, DALI's tensor indexing) are the
tensor_subscript op, compared with numpy; what is wrong is an error at its column."""

import subprocess

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.tfrecord as tfrec
import tfrecord_writer as w
from conftest import TOOL, run_tool

N = 6


def write_records(path):
    w.write(str(path), [{"image/encoded": ("bytes", [bytes([i + 1]) * (3 + i)]),
                         "image/class/label": ("int64", [10 * i])} for i in range(N)])


TEXT = '''import nvidia.dali.fn as fn
import nvidia.dali.tfrecord as tfrec

def tfrecord_pipeline(path):
    inputs = fn.readers.tfrecord(
        path=path,
        features={"image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
                  "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1)})
    names = ["image/encoded", "image/class/label"]
    return inputs[names[-1]], inputs["image/encoded"]
'''


def test_text_indexes_the_readers_dict_as_python(tmp_path):
    path = tmp_path / "r.tfrecord"
    write_records(path)
    text = tmp_path / "p.py"
    text.write_text(TEXT)
    dump = tmp_path / "dump"
    run_tool("run", str(text), "--arg", "path=%s" % path, "--devices", "cpu", "--batch-size",
             str(N), "--steps", "1", "--dump", str(dump))
    def dumped(k):  # a dense output is one file of the batch, a ragged one a file per sample
        files = sorted(dump.glob("out%d_*.npy" % k))
        return list(np.load(files[0])) if len(files) == 1 else [np.load(f) for f in files]

    labels, data = dumped(0), dumped(1)

    p = sluice.Pipeline(batch_size=N, num_threads=1, device_id=None)
    with p:
        inputs = fn.readers.tfrecord(path=str(path), features={
            "image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
            "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1)})
        p.set_outputs(inputs["image/class/label"], inputs["image/encoded"])
    lab, enc = p.run()
    assert len(labels) == len(data) == N
    for i in range(N):
        np.testing.assert_array_equal(labels[i], lab.at(i))
        np.testing.assert_array_equal(data[i], enc.at(i))
        assert labels[i].tolist() == [10 * i] and bytes(data[i]) == bytes([i + 1]) * (3 + i)


@pytest.mark.parametrize("expr,message", [
    ('inputs["image/label"]', "no key 'image/label' in the dict (its keys: 'image/encoded', "
                              "'image/class/label')"),
    ('inputs["image/encoded"][::0]', "a slice's step cannot be 0"),
    ('inputs["image/encoded"][1.5]', "ints, op outputs and slices of them"),
    ('inputs["image/encoded"][]', "an empty subscript"),
    ("inputs[0]", "a dict's keys are strings"),
    ('[1, 2][5]', "index 5 is out of range (2 items)"),
    ('(3)["x"]', "int is not subscriptable"),
])
def test_text_subscript_errors(tmp_path, expr, message):
    path = tmp_path / "r.tfrecord"
    write_records(path)
    text = tmp_path / "p.py"
    body = TEXT.split("    names =")[0] + "    return %s\n" % expr
    text.write_text(body)
    r = subprocess.run([TOOL, "run", str(text), "--arg", "path=%s" % path, "--devices", "cpu",
                        "--steps", "1"], capture_output=True, text=True)
    assert r.returncode != 0
    assert message in r.stderr, r.stderr
    assert "p.py:9:" in r.stderr  # the line of the subscript


SUBSCRIPTS = ["[1:, :-1, 2]", "[::-1]", "[:, ::2]", "[-1]", "[1:2, 3, ::-3]", "[10:]",
              "[:, -100:100:3]", "[0][1:][::2]"]
RNG = np.random.default_rng(4)
VOLS = [RNG.integers(0, 99, (3, 5, 4), dtype=np.int16), RNG.integers(0, 99, (2, 6, 4),
                                                                   dtype=np.int16)]


def test_python_subscripts_as_numpy():
    p = sluice.Pipeline(batch_size=2, num_threads=1, device_id=None)
    with p:
        x = fn.external_source(source=lambda: VOLS, layout="HWC")
        p.set_outputs(*[eval("x" + sub, {"x": x}) for sub in SUBSCRIPTS])
    outs = p.run()
    for sub, out in zip(SUBSCRIPTS, outs):
        for i in range(2):
            np.testing.assert_array_equal(out.at(i), eval("VOLS[i]" + sub), err_msg=sub)
    assert outs[0].layout() == "HW" and outs[3].layout() == "WC" and outs[1].layout() == "HWC"


def test_text_subscripts_as_python(tmp_path):
    files = []
    for i, v in enumerate(VOLS):
        np.save(tmp_path / ("v%d.npy" % i), v)
        files.append(str(tmp_path / ("v%d.npy" % i)))
    text = tmp_path / "p.py"
    text.write_text("import nvidia.dali.fn as fn\n"
                    "def p(files):\n"
                    "    x = fn.readers.numpy(files=files)\n"
                    "    return %s\n" % ", ".join("x" + sub for sub in SUBSCRIPTS))
    dump = tmp_path / "dump"
    run_tool("run", str(text), "--arg", "files=%s" % files, "--devices", "cpu", "--batch-size",
             "2", "--steps", "1", "--dump", str(dump))
    for k, sub in enumerate(SUBSCRIPTS):
        got = sorted(dump.glob("out%d_*.npy" % k))
        got = list(np.load(got[0])) if len(got) == 1 else [np.load(f) for f in got]
        for i in range(2):
            np.testing.assert_array_equal(got[i], eval("VOLS[i]" + sub), err_msg=sub)


def test_python_subscript_refusals():
    p = sluice.Pipeline(batch_size=1, num_threads=1, device_id=None)
    with p:
        x = fn.external_source(source=lambda: [np.zeros((4, 4), np.uint8)])
        i = fn.external_source(source=lambda: [np.int32(1)])
        with pytest.raises(TypeError, match="not supported: float"):
            x[..., 1.5]  # noqa: B018 -- (newaxis and ... are test_per_frame.py's)
        p.set_outputs(x[5])
    with pytest.raises(sluice.Error, match="index 5 of dim 0 is out of range"):
        p.run()
