# SPDX-License-Identifier: Apache-2.0
"""fn.io.file.read as DALI's programs use it (EfficientNet's external-source pipelines): file names
fed as int8 / uint8 arrays of their bytes, each file's contents out as uint8, compared with the
bytes written; a missing file or a bad name is an error naming the file and the sample."""

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.ops as ops


def read(names, dtype=np.int8, legacy=False):
    pipe = sluice.Pipeline(batch_size=len(names), num_threads=2, device_id=None)
    with pipe:
        paths = fn.external_source(name="images", no_copy=True)
        pipe.set_outputs(ops.io.file.Read()(paths) if legacy else fn.io.file.read(paths))
    pipe.build()
    pipe.feed_input("images", [np.frombuffer(str(n).encode(), dtype=dtype) for n in names])
    (out,) = pipe.run()
    return out


@pytest.mark.parametrize("dtype,legacy", [(np.int8, False), (np.uint8, True)])
def test_reads_each_file_whole(tmp_path, dtype, legacy):
    blobs = [bytes(range(256)) * 3, b"", b"\xff\xd8 a few bytes"]
    names = []
    for k, b in enumerate(blobs):
        p = tmp_path / ("f%d.bin" % k)
        p.write_bytes(b)
        names.append(p)
    out = read(names, dtype, legacy)
    for k, b in enumerate(blobs):
        got = np.asarray(out.at(k))
        assert got.dtype == np.uint8 and got.ndim == 1
        assert got.tobytes() == b


def test_missing_file_names_it(tmp_path):
    p = tmp_path / "there.bin"
    p.write_bytes(b"x")
    with pytest.raises(sluice.Error, match=r"io.file.read: sample 1: .*missing.bin"):
        read([p, tmp_path / "missing.bin"])


def test_refuses_a_name_that_is_not_bytes(tmp_path):
    pipe = sluice.Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        x = fn.external_source(source=lambda: [np.zeros(4, np.float32)])
        pipe.set_outputs(fn.io.file.read(x))
    pipe.build()
    with pytest.raises(sluice.InvalidArgumentError, match="int8 or uint8"):
        pipe.run()
