# SPDX-License-Identifier: Apache-2.0
"""Bad definitions and bad data raise the right exception, naming the cause, and leave nothing
running: a bad op, a bad argument, a missing path, a corrupt store, Ctrl-C mid-epoch."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

import sluice
import sluice.fn as fn
import sluice.types as types
from conftest import LMDB, ROOT
from sluice import pipeline_def


def test_unknown_op():
    with pytest.raises(AttributeError, match="crop_mirror_normalise"):
        fn.crop_mirror_normalise


def test_unknown_argument_names_op_and_suggests():
    @pipeline_def(batch_size=2, device_id=None)
    def pipe():
        jpegs, labels = fn.readers.caffe2(path=LMDB, random_shufle=True)
        return labels

    with pytest.raises(TypeError, match=r"fn\.readers\.caffe2.*'random_shufle'.*random_shuffle"):
        pipe()


def test_wrong_argument_type():
    @pipeline_def(batch_size=2, device_id=None)
    def pipe():
        jpegs, labels = fn.readers.caffe2(path=LMDB)
        return fn.one_hot(labels, num_classes="ten")

    with pytest.raises(TypeError, match=r"fn\.one_hot: argument 'num_classes' takes int"):
        pipe()


def test_bad_value_is_value_error():
    @pipeline_def(batch_size=2, device_id=None)
    def pipe():
        jpegs, _ = fn.readers.caffe2(path=LMDB)
        return fn.decoders.image(jpegs, output_type="PURPLE")

    with pytest.raises(ValueError, match="PURPLE"):
        pipe()


def test_node_where_no_per_sample_argument():
    @pipeline_def(batch_size=2, device_id=None)
    def pipe():
        jpegs, labels = fn.readers.caffe2(path=LMDB)
        return fn.one_hot(labels, num_classes=labels)

    with pytest.raises(TypeError, match="not a per-sample argument"):
        pipe()


def test_op_outside_a_pipeline_is_checked_at_the_call():
    # DALI makes an op called outside a definition where its outputs are used; a wrong argument
    # is still an error at the call, and an output used with no pipeline is refused
    with pytest.raises(sluice.Error, match="unexpected argument 'pth'"):
        fn.readers.caffe2(pth=LMDB)
    jpegs, labels = fn.readers.caffe2(path=LMDB)
    with pytest.raises(sluice.StateError, match="outside a pipeline definition"):
        labels.node()


def test_no_truth_value_for_data():
    @pipeline_def(batch_size=2, device_id=None)
    def pipe():
        jpegs, labels = fn.readers.caffe2(path=LMDB)
        return jpegs if labels else labels

    with pytest.raises(TypeError, match="no truth value"):
        pipe()


def test_missing_path(tmp_path, no_leaked_threads):
    @pipeline_def(batch_size=2, device_id=None)
    def pipe():
        jpegs, labels = fn.readers.caffe2(path=str(tmp_path / "nothing"))
        return labels

    p = pipe()
    with pytest.raises(sluice.Error, match="nothing") as e:
        p.build()
    assert e.value.status.startswith("SL_E")
    del p, e


def test_corrupt_store_names_record(tmp_path, no_leaked_threads):
    import shutil
    shutil.copytree(LMDB, tmp_path / "db")
    data = bytearray((tmp_path / "db" / "data.mdb").read_bytes())
    # some records' images are no longer JPEGs (their start marker overwritten)
    pos = [i for i in range(len(data) - 4) if data[i:i + 3] == b"\xff\xd8\xff"]
    for p in pos[100:140]:
        data[p:p + 3] = b"BAD"
    (tmp_path / "db" / "data.mdb").write_bytes(bytes(data))

    @pipeline_def(batch_size=64, device_id=None)
    def pipe():
        jpegs, labels = fn.readers.caffe2(path=str(tmp_path / "db"))
        return fn.decoders.image(jpegs, output_type=types.GRAY)

    p = pipe()
    with pytest.raises(sluice.Error, match="record"):
        for _ in range(8):
            p.run()
    del p


def test_keyboard_interrupt_mid_epoch():
    script = textwrap.dedent("""
        import os, sys, time
        sys.path.insert(0, %r)
        import sluice.fn as fn, sluice.types as types
        from sluice import pipeline_def
        from sluice.plugin.numpy import DALIGenericIterator

        @pipeline_def(batch_size=8, num_threads=2, device_id=None)
        def pipe():
            jpegs, labels = fn.readers.caffe2(path=%r, name="r")
            return fn.decoders.image(jpegs, output_type=types.GRAY), labels

        base = len(os.listdir("/proc/self/task"))  # the library's own (OpenBLAS) threads too
        it = DALIGenericIterator([pipe()], ["x", "y"], reader_name="r")
        b = None  # the signal may come before the first batch (a loaded machine)
        print("ready", flush=True)
        try:
            while True:
                for b in it:
                    time.sleep(0.01)
        except KeyboardInterrupt:
            pass
        # (after the handler: while it runs, the frames of a next() the signal interrupted hold
        # the iterator)
        del it, b
        import gc; gc.collect()
        print("threads left", len(os.listdir("/proc/self/task")) - base, flush=True)
        raise KeyboardInterrupt
    """) % (os.path.join(ROOT, "python"), LMDB)
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    import time
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert p.returncode != 0
    assert "KeyboardInterrupt" in err
    assert "threads left 0" in out, out


def test_struct_layouts_are_checked():
    """The package's copies of the C structs have the library's sizes (checked at import), and the
    check would say which one differs."""
    import ctypes

    from sluice import _c
    assert _c.struct_mismatches(_c.lib, _c.STRUCTS) == []
    assert _c.lib.sl_abi_struct_size(b"sl_no_such_struct") == 0

    class Short(ctypes.Structure):
        _fields_ = [("batch_size", ctypes.c_int)]
    wrong = _c.struct_mismatches(_c.lib, {"sl_iter_config": Short})
    assert len(wrong) == 1 and wrong[0].startswith("sl_iter_config (")
