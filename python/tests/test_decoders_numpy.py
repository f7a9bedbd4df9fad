# SPDX-License-Identifier: Apache-2.0
"""decoders.numpy (DALI's fn.decoders.numpy): serialized .npy files, written here by numpy's own
writer (np.save, np.lib.format.write_array), given as uint8 bytes through external_source or read
from disk by readers.file; what comes out is compared with the arrays written: every type, C and
Fortran order, shapes of 0 to 4 dims, empty arrays, format versions 1.0 and 2.0, dtype
conversion as fn.cast converts, and the errors (mixed types without dtype, mixed ranks, bytes
that are not .npy, a file cut short) naming the sample."""

import io

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.types as types


def npy(arr, version=None):
    buf = io.BytesIO()
    if version is None:
        np.save(buf, arr)
    else:
        np.lib.format.write_array(buf, arr, version=version)
    return np.frombuffer(buf.getvalue(), dtype=np.uint8)


def decode(blobs, **kw):
    pipe = sluice.Pipeline(batch_size=len(blobs), num_threads=2, device_id=None)
    with pipe:
        raw = fn.external_source(source=lambda: blobs, batch=True)
        pipe.set_outputs(fn.decoders.numpy(raw, **kw))
    pipe.build()
    (out,) = pipe.run()
    return [np.asarray(out.at(i)) for i in range(len(blobs))]


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint16, np.int16, np.int32, np.int64,
                                   np.uint32, np.uint64, np.float16, np.float32, np.float64,
                                   np.bool_])
def test_every_type_round_trips(dtype):
    rng = np.random.default_rng(3)
    arrs = [(rng.standard_normal((3, 4)) * 50).astype(dtype),
            (rng.standard_normal((2, 5)) * 50).astype(dtype)]
    got = decode([npy(a) for a in arrs])
    for g, a in zip(got, arrs):
        assert g.dtype == a.dtype
        np.testing.assert_array_equal(g, a)


@pytest.mark.parametrize("shape", [(), (7,), (3, 4), (2, 3, 4), (2, 1, 3, 2), (0, 3)])
def test_shapes_and_fortran_order(shape):
    a = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    c, f = decode([npy(a), npy(np.asfortranarray(a) if a.ndim else a)])  # (asfortranarray: >= 1-D)
    np.testing.assert_array_equal(c, a)
    np.testing.assert_array_equal(f, a)
    assert c.shape == f.shape == shape


def test_format_version_2():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    (g,) = decode([npy(a, version=(2, 0))])
    np.testing.assert_array_equal(g, a)


def test_dtype_converts_as_cast():
    arrs = [np.float64([[-3.7, 0.5], [300.2, 1.5]]), np.int16([[-5, 7], [1000, 2]])]
    got = decode([npy(arrs[0]), npy(np.asfortranarray(arrs[1]))], dtype=types.UINT8)
    pipe = sluice.Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        a = fn.external_source(source=lambda: [arrs[0]], batch=True)
        b = fn.external_source(source=lambda: [arrs[1]], batch=True)
        pipe.set_outputs(fn.cast(a, dtype=types.UINT8), fn.cast(b, dtype=types.UINT8))
    pipe.build()
    want = [np.asarray(o.at(0)) for o in pipe.run()]
    for g, w in zip(got, want):
        assert g.dtype == np.uint8
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(got[0], np.uint8([[0, 0], [255, 2]]))  # saturated, rounded to even


def test_files_read_by_readers_file(tmp_path):
    arrs = [np.arange(6, dtype=np.float32).reshape(2, 3) * k for k in range(3)]
    files = []
    for k, a in enumerate(arrs):
        p = tmp_path / ("a%d.npy" % k)
        np.save(p, a)
        files.append(str(p))
    pipe = sluice.Pipeline(batch_size=3, num_threads=2, device_id=None)
    with pipe:
        raw, _ = fn.readers.file(files=files)
        pipe.set_outputs(fn.decoders.numpy(raw))
    pipe.build()
    (out,) = pipe.run()
    for k, a in enumerate(arrs):
        np.testing.assert_array_equal(np.asarray(out.at(k)), a)


def test_mixed_types_need_dtype():
    blobs = [npy(np.zeros(3, np.float32)), npy(np.zeros(3, np.int16))]
    with pytest.raises(sluice.errors.Error, match=r"sample 1.*int16, the batch's first sample "
                                                  r"float32: give dtype"):
        decode(blobs)
    got = decode(blobs, dtype=types.FLOAT)
    assert all(g.dtype == np.float32 for g in got)


def test_mixed_ranks_are_refused():
    with pytest.raises(sluice.errors.Error, match=r"sample 1.*a 2-D array in a batch whose first "
                                                  r"sample's is 1-D"):
        decode([npy(np.zeros(3, np.uint8)), npy(np.zeros((1, 3), np.uint8))])


def test_bad_bytes_name_the_sample():
    good = npy(np.arange(10, dtype=np.int32))
    with pytest.raises(sluice.errors.Error, match=r"decoders.numpy.*sample 1"):
        decode([good, np.frombuffer(b"not an npy file at all, really", np.uint8)])
    with pytest.raises(sluice.errors.Error, match=r"sample 1.*40 bytes, but 20 bytes follow"):
        decode([good, good[:-20]])
    with pytest.raises(sluice.errors.Error, match=r"sample 0.*fewer than the \.npy header"):
        decode([good[:12]])
    with pytest.raises(sluice.errors.Error, match=r"uint8, 1-D"):
        decode([np.zeros((2, 2), np.uint8)])
