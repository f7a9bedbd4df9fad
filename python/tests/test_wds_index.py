# SPDX-License-Identifier: Apache-2.0
"""WebDataset index files: the `wds2idx` command (the package's console script, `sluice wds2idx`)
writes what DALI's wds2idx writes for tar files that Python's tarfile makes here (plain ustar, GNU
long names, PAX headers, directories and hidden files among the members), checked against a
reading of the format written here from tarfile's own offsets; the default index path is DALI's;
readers.webdataset given the index (index_paths, as DALI's webdataset example passes it) gives the
same batches as without, and an index that lists other samples gives those; a bad index or one of
another tar is refused naming the index file and line."""

import io
import os
import subprocess
import sys
import tarfile

import numpy as np
import pytest

from conftest import ROOT, TOOL

from sluice import fn, pipeline_def
from sluice.errors import Error as SluiceError


def make_tar(path, fmt):
    """A WebDataset shard: 5 samples (jpg-like bytes, cls), one with a long path, a directory,
    and a hidden file that is no part of any sample."""
    with tarfile.open(path, "w", format=fmt) as t:
        def add(name, data):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
        d = tarfile.TarInfo("sub")
        d.type = tarfile.DIRTYPE
        t.addfile(d)
        for i in range(5):
            key = ("sub/" + "long_folder_name_" * 8 + "/s%d" % i) if i == 3 else "s%d" % i
            add(key + ".jpg", bytes([i]) * (100 + 37 * i))
            add(key + ".cls", str(i).encode())
            if i == 1:
                add(key + ".seg.png", b"png")
        add(".hidden", b"x")


def expected_index(path):
    """What DALI's wds2idx gives: "v1.2 N", then per run of members sharing a key, each regular
    member as "ext offset size name", offset being that of its data."""
    samples, last = [], None
    with tarfile.open(path) as t:
        for m in t:
            if not m.isreg():
                continue
            base = m.name.rfind("/") + 1
            dot = m.name.find(".", base)
            key, ext = m.name[:dot], m.name[dot + 1:]
            if not key or key.endswith("/"):
                continue
            part = "%s %d %d %s" % (ext, m.offset_data, m.size, m.name)
            if key != last:
                samples.append([part])
                last = key
            else:
                samples[-1].append(part)
    return "v1.2 %d\n" % len(samples) + "".join(" ".join(s) + "\n" for s in samples)


def console_script(*args, cwd=None):
    """The `wds2idx` console script as pip installs it: sluice.__main__:wds2idx."""
    env = dict(os.environ, SLUICE_TOOL=TOOL, PYTHONPATH=os.path.join(ROOT, "python"))
    return subprocess.run([sys.executable, "-c", "import sys; from sluice.__main__ import wds2idx;"
                           " sys.exit(wds2idx())"] + [str(a) for a in args],
                          capture_output=True, text=True, env=env, cwd=cwd)


@pytest.mark.parametrize("fmt", [tarfile.USTAR_FORMAT, tarfile.GNU_FORMAT, tarfile.PAX_FORMAT])
def test_wds2idx_writes_dalis_format(tmp_path, fmt):
    tar = tmp_path / "shard-0.tar"
    make_tar(tar, fmt)
    r = console_script(tar, tmp_path / "i.idx")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "i.idx").read_text() == expected_index(tar)
    # the default index: the archive's path up to the first '.' of its file name, then ".idx"
    r = console_script(tar)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "shard-0.idx").read_text() == expected_index(tar)
    # and the tool's own subcommand
    r = subprocess.run([TOOL, "wds2idx", str(tar), str(tmp_path / "j.idx")], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    assert "wrote the index of 5 samples" in r.stderr
    assert (tmp_path / "j.idx").read_text() == expected_index(tar)


def test_wds2idx_refuses(tmp_path):
    r = console_script(tmp_path / "none.tar", tmp_path / "x.idx")
    assert r.returncode == 1 and "none.tar" in r.stderr
    assert not (tmp_path / "x.idx").exists()
    bad = tmp_path / "bad.tar"
    bad.write_bytes(b"\x01" * 1024)
    r = console_script(bad, tmp_path / "x.idx")
    assert r.returncode == 1 and "bad.tar: bad tar header at offset 0" in r.stderr, r.stderr
    blank = tmp_path / "blank.tar"
    with tarfile.open(blank, "w") as t:
        info = tarfile.TarInfo("a b.jpg")
        info.size = 1
        t.addfile(info, io.BytesIO(b"x"))
    r = console_script(blank, tmp_path / "x.idx")
    assert r.returncode == 1 and "\"a b.jpg\" has a blank in its name" in r.stderr, r.stderr
    r = console_script()
    assert r.returncode == 2 and "usage: sluice wds2idx" in r.stderr


def read_all(tars, idx=None, ext=("jpg", "cls"), n=None):
    """Every sample of the reader over tars (index files idx): lists of bytes per output."""
    kw = {} if idx is None else {"index_paths": [str(i) for i in idx]}

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def p():
        return tuple(fn.readers.webdataset(paths=[str(t) for t in tars], ext=list(ext),
                                           name="r", **kw))
    pipe = p()
    pipe.build()
    size = pipe.epoch_size("r")
    out = [[] for _ in ext]
    for _ in range(size if n is None else n):
        got = pipe.run()
        for k, o in enumerate(got):
            out[k].append(np.asarray(o.at(0)).tobytes())
    return size, out


def test_reader_uses_the_index(tmp_path):
    a, b = tmp_path / "a.tar", tmp_path / "b.tar"
    make_tar(a, tarfile.GNU_FORMAT)
    make_tar(b, tarfile.PAX_FORMAT)
    for t in (a, b):
        assert console_script(t).returncode == 0
    ia, ib = tmp_path / "a.idx", tmp_path / "b.idx"
    assert read_all([a, b], [ia, ib]) == read_all([a, b])
    # an index lists the samples: the last two of b.tar, in reverse order
    lines = ib.read_text().splitlines()
    (tmp_path / "b2.idx").write_text("v1.2 2\n%s\n%s\n" % (lines[5], lines[4]))
    size, (jpg, cls) = read_all([b], [tmp_path / "b2.idx"])
    assert size == 2 and cls == [b"4", b"3"] and jpg == [bytes([4]) * 248, bytes([3]) * 211]


@pytest.mark.parametrize("text,needle", [
    ("v1.0 5\n", "x.idx:1: not a WebDataset index"),
    ("v1.2 5\njpg 1024 100 s0.jpg\n", "x.idx:2: the index ends after 1 samples, but line 1 gives 5"),
    ("v1.2 1\njpg 1025 100 s0.jpg\n", "x.idx:2: no member of"),
    ("v1.2 1\njpg 1024 101 s0.jpg\n", "x.idx:2: the member at offset 1024 of"),
    ("v1.2 1\ncls 1024 100 s0.jpg\n", "x.idx:2: the member at offset 1024 of"),
    ("v1.2 1\njpg 1024 100 s1.jpg\n", "the index says \"s1.jpg\""),
    ("v1.2 1\njpg 1024\n", "x.idx:2: a member is \"ext offset size name\""),
])
def test_reader_refuses_a_bad_index(tmp_path, text, needle):
    a = tmp_path / "a.tar"
    make_tar(a, tarfile.USTAR_FORMAT)
    assert console_script(a).returncode == 0
    assert (tmp_path / "a.idx").read_text().splitlines()[1].startswith("jpg 1024 100 s0.jpg ")
    (tmp_path / "x.idx").write_text(text)
    with pytest.raises(SluiceError) as e:
        read_all([a], [tmp_path / "x.idx"], n=1)
    assert needle in str(e.value) and "readers.webdataset" in str(e.value)
    with pytest.raises(SluiceError, match="2 index_paths for 1 paths"):
        read_all([a], [tmp_path / "a.idx", tmp_path / "a.idx"], n=1)


def test_index_creator_writes_the_same_index(tmp_path, monkeypatch, capsys):
    """DALI's `from wds2idx import IndexCreator`, as its webdataset tests and examples use it."""
    monkeypatch.setenv("SLUICE_TOOL", TOOL)
    from wds2idx import IndexCreator
    tar = tmp_path / "shard-0.tar"
    make_tar(tar, tarfile.GNU_FORMAT)
    idx = tmp_path / "made.idx"
    with IndexCreator(str(tar), str(idx)) as ic:
        assert not idx.exists()  # (DALI's opens it here: sluice writes it whole, later)
        ic.create_index()
    assert idx.read_text() == expected_index(tar)
    assert "wrote the index of 5 samples" in capsys.readouterr().err
    quiet = tmp_path / "quiet.idx"
    IndexCreator(tar, quiet, verbose=False).create_index()  # (path objects too)
    assert quiet.read_text() == expected_index(tar) and capsys.readouterr().err == ""
    assert IndexCreator.split_name("a/b.seg.png") == ("a/b", "seg.png")
    bad = tmp_path / "bad.tar"
    bad.write_bytes(b"\x01" * 1024)
    with pytest.raises(ValueError, match="bad.tar: bad tar header at offset 0"):
        IndexCreator(bad, tmp_path / "bad.idx", verbose=False).create_index()
    assert not (tmp_path / "bad.idx").exists()


@pytest.mark.parametrize("indexed", [False, True])
def test_webdataset_source_info_names_the_tar_the_offset_and_the_member(tmp_path, indexed):
    """As DALI's: "TAR:OFFSET:NAME" of the member, its data's offset in the tar as tarfile gives
    it; sluice gives every output the member of the first output (jpg here)."""
    tar = tmp_path / "shard-0.tar"
    make_tar(tar, tarfile.GNU_FORMAT)
    with tarfile.open(tar) as t:
        want = ["%s:%d:%s" % (tar, m.offset_data, m.name) for m in t if m.name.endswith(".jpg")]
    assert len(want) == 5 and any(len(w.split(":")[2]) > 100 for w in want)  # (a GNU long name)
    kw = {}
    if indexed:
        assert console_script(tar, tmp_path / "i.idx").returncode == 0
        kw = {"index_paths": [str(tmp_path / "i.idx")]}

    @pipeline_def(batch_size=5, num_threads=1, device_id=None)
    def p():
        jpg, cls = fn.readers.webdataset(paths=[str(tar)], ext=["jpg", "cls"], **kw)
        return jpg, cls, jpg.source_info(), fn.get_property(cls, key="source_info"), \
            jpg.gpu().source_info()

    jpg, cls, info, cls_info, gpu_info = p().run()
    text = [np.asarray(t).tobytes().decode() for t in info]
    assert text == want
    assert [np.asarray(t).tobytes().decode() for t in cls_info] == want
    assert [np.asarray(t).tobytes().decode() for t in gpu_info.as_cpu()] == want
    assert jpg.source_info() == want and cls.source_info() == want
