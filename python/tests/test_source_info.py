# SPDX-License-Identifier: Apache-2.0
"""Source info, as DALI's: each sample's source_info() (where its reader read it), passed on by the
ops after the reader, and fn.get_property(x, key="source_info" / "layout") as a graph op giving
uint8 arrays -- for readers.file, readers.numpy and readers.tfrecord over files made here, and
for external_source data (no source info; its layouts); DataNode.property() and source_info();
an unknown key, also given as a list, refused with DALI's words; strings with both quotes and
backslashes carried whole."""

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.tfrecord as tfrec
import sluice.types as types
import tfrecord_writer as w
from conftest import gpu_or_skip
from sluice import pipeline_def


def text(a):
    return np.asarray(a).tobytes().decode()


@pytest.fixture
def files(tmp_path):
    paths = []
    for i, name in enumerate(["cat/one.jpg", "cat/two.jpg", "dog/x y.jpg"]):
        p = tmp_path / name
        p.parent.mkdir(exist_ok=True)
        p.write_bytes(bytes([i]) * (3 + i))
        paths.append(str(p))
    return paths


def test_readers_file_source_info_on_outputs_and_through_ops(files):
    @pipeline_def(batch_size=3, num_threads=2, device_id=None)
    def p():
        data, label = fn.readers.file(files=files, labels=[0, 1, 2])
        x = fn.cast(data, dtype=types.INT32) * 2
        g = data.gpu()  # (sluice's CPU device runs it on the CPU)
        return (data, x, label, fn.get_property(x, key="source_info"),
                fn.get_property(g, key="source_info"),
                fn.get_property(fn.reshape(data, layout="B"), key="layout"))

    data, x, label, info, ginfo, lay = p().run()
    assert data.source_info() == files and x.source_info() == files
    assert [t.source_info() for t in label] == files
    assert data[2].source_info() == files[2] and data[2].as_cpu().source_info() == files[2]
    assert [text(t) for t in info] == files
    assert [text(t) for t in ginfo.as_cpu()] == files
    assert info.at(0).dtype == np.uint8 and info.at(0).shape == (len(files[0]),)
    assert [text(t) for t in lay] == ["B"] * 3
    kept = data.copy()  # a copy keeps it after the batch goes back
    assert kept.source_info() == files


def test_readers_file_from_a_folder_gives_the_root_joined_path(files, tmp_path):
    @pipeline_def(batch_size=3, num_threads=1, device_id=None)
    def p():
        data, _ = fn.readers.file(file_root=str(tmp_path))
        return data

    (data,) = p().run()
    assert data.source_info() == [str(tmp_path / "cat/one.jpg"), str(tmp_path / "cat/two.jpg"),
                                  str(tmp_path / "dog/x y.jpg")]


def test_readers_numpy_and_tfrecord(tmp_path):
    for i in range(2):
        np.save(tmp_path / ("a%d.npy" % i), np.full((2, 2), i, np.float32))
    path = str(tmp_path / "t.tfrecord")
    spans = w.write(path, [{"v": ("int64", [i])} for i in range(4)])

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def p():
        arr = fn.readers.numpy(file_root=str(tmp_path), files=["a0.npy", "a1.npy"])
        rec = fn.readers.tfrecord(path=path, features={"v": tfrec.FixedLenFeature([1],
                                                                                 tfrec.int64, 0)})
        return arr, fn.get_property(arr, key="source_info"), rec["v"], \
            fn.get_property(rec["v"], key="source_info")

    arr, ainfo, v, vinfo = p().run()
    want = [str(tmp_path / "a0.npy"), str(tmp_path / "a1.npy")]
    assert arr.source_info() == want and [text(t) for t in ainfo] == want
    want = ["%s at index %d" % (path, off) for off, _ in spans[:2]]
    assert v.source_info() == want and [text(t) for t in vinfo] == want


def test_external_source_has_no_source_info_and_gives_its_layouts():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def p():
        a, b = fn.external_source(source=lambda: np.zeros((2, 3, 4, 5), np.uint8), num_outputs=2,
                                  layout=["ABC", "XYZ"], batch=False)
        return a, fn.get_property(a, key="source_info"), fn.get_property(a, key="layout"), \
            fn.get_property(b, key="layout")

    a, info, la, lb = p().run()
    assert a.source_info() == ["", ""] and a[0].source_info() == ""
    assert [text(t) for t in info] == ["", ""] and info.at(0).shape == (0,)
    assert [text(t) for t in la] == ["ABC"] * 2 and [text(t) for t in lb] == ["XYZ"] * 2


def test_get_property_refuses_an_unknown_key(files):
    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def p():
        data, _ = fn.readers.file(files=files)
        return fn.get_property(data, key="size")

    with pytest.raises(sluice.Error, match="get_property: Unsupported property key: size"):
        p().build()

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def q():
        data, _ = fn.readers.file(files=files)
        return fn.get_property(data, key=["this key doesn't exist"])

    # a string argument takes str() of another value, as DALI's Python layer does: no key
    with pytest.raises(RuntimeError) as e:
        q().build()
    assert """Unsupported property key: ["this key doesn't exist"]""" in str(e.value)


def test_data_node_property_and_source_info(files):
    """DALI's DataNode.property(key) and DataNode.source_info(): get_property, on the CPU."""
    @pipeline_def(batch_size=3, num_threads=1, device_id=None)
    def p():
        data, _ = fn.readers.file(files=files)
        x = fn.reshape(data, layout="B")
        return x.source_info(), x.property("layout"), x.gpu().source_info(device="cpu"), \
            x.property("source_info")

    info, lay, ginfo, info2 = p().run()
    assert [text(t) for t in info] == files and [text(t) for t in info2] == files
    assert [text(t) for t in ginfo] == files and ginfo.device == "cpu"
    assert [text(t) for t in lay] == ["B"] * 3


def test_strings_with_both_quotes_and_backslashes_reach_the_library(tmp_path):
    """A path with ', " and \\ in it is carried whole to the reader (and back as source info)."""
    d = tmp_path / "it's \"quoted\" \\ here"
    d.mkdir()
    f = d / "a\\b\\\\c'd.bin"  # (one backslash, then two)
    f.write_bytes(b"xyz")

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def p():
        data, _ = fn.readers.file(files=[str(f)])
        return data, data.source_info()

    data, info = p().run()
    assert bytes(np.asarray(data.at(0))) == b"xyz"
    assert text(info.at(0)) == str(f) and data.source_info() == [str(f)]


@pytest.mark.gpu
def test_on_a_cuda_pipeline_get_property_of_gpu_data(files):
    gpu_or_skip()

    @pipeline_def(batch_size=3, num_threads=1, device_id=0)
    def p():
        data, _ = fn.readers.file(files=files)
        g = fn.reshape(data.gpu(), layout="B")
        return g, fn.get_property(g, key="source_info"), fn.get_property(g, key="layout")

    g, info, lay = p().run()
    assert g.source_info() == files
    assert info.device == "gpu" and [text(t) for t in info.as_cpu()] == files
    assert [text(t) for t in lay.as_cpu()] == ["B"] * 3


def test_permute_batch_and_multi_paste_carry_source_info(tmp_path):
    """permute_batch moves each sample's source info with it; multi_paste's output sample has the
    pasted samples' source info joined by ';', in paste order (DALI's)."""
    paths = []
    for k in range(3):
        p = tmp_path / ("f%d.npy" % k)
        np.save(p, np.full((4, 5, 3), k, np.uint8))
        paths.append(str(p))

    @pipeline_def(batch_size=3, num_threads=2, device_id=None)
    def p():
        x = fn.readers.numpy(files=paths)
        x = fn.reshape(x, layout="HWC")
        perm = fn.permute_batch(x, indices=[2, 0, 1])
        ids = fn.external_source(source=lambda: [np.int32([1, 2]), np.int32([0]),
                                                 np.int32([2, 2, 0])])
        return perm, fn.multi_paste(x, in_ids=ids), fn.multi_paste(x, perm)

    perm, pasted, two = p().run()
    assert [perm[i].source_info() for i in range(3)] == [paths[2], paths[0], paths[1]]
    assert [pasted[i].source_info() for i in range(3)] == [
        paths[1] + ";" + paths[2], paths[0], ";".join([paths[2], paths[2], paths[0]])]
    assert two[1].source_info() == paths[1] + ";" + paths[0]
    np.testing.assert_array_equal(perm.at(0), np.full((4, 5, 3), 2, np.uint8))


def test_per_sample_argument_given_as_an_array():
    """a 2-D array for a per-sample argument is a constant tensor for every sample (DALI's)"""
    img = np.arange(8 * 8 * 3, dtype=np.uint8).reshape(8, 8, 3)

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def p():
        x = fn.external_source(source=lambda: [img, img], layout="HWC")
        return fn.multi_paste(x, in_ids=fn.external_source(source=lambda: [np.int32([1])] * 2),
                              in_anchors_rel=np.float32([[0.5, 0.0]]),
                              shapes_rel=np.float32([[0.5, 0.5]]), output_size=[8, 8])

    (out,) = p().run()
    want = np.zeros((8, 8, 3), np.uint8)
    want[0:4, 0:4] = img[4:8, 0:4]
    np.testing.assert_array_equal(out.at(0), want)


def test_scalar_argument_refuses_an_array():
    """a scalar per-sample argument given a 2-D array is refused, as DALI's ("cannot be
    converted"), even of one element"""
    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def p():
        return fn.random.beta(alpha=1.0, beta=np.float32([[1.0]]))

    with pytest.raises(sluice.Error, match="cannot be converted"):
        p().run()
