# SPDX-License-Identifier: Apache-2.0
"""Pipelines and iterators against how programs end, fork, interrupt and share them: the exit with
a Python source still being called, a source that never returns, a source that asks its own
pipeline for a batch, close() from another thread, a forked child, Ctrl-C in bursts. Each case
that could hang or crash runs in a child interpreter with a time limit."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.types as types
from conftest import LMDB, ROOT, thread_count
from sluice import pipeline_def
from sluice.plugin.numpy import DALIGenericIterator

PRELUDE = textwrap.dedent("""
    import os, signal, sys, threading, time
    import numpy as np
    sys.path.insert(0, %r)
    import sluice, sluice.fn as fn, sluice.types as types
    from sluice import pipeline_def
    from sluice.plugin.numpy import DALIGenericIterator
    LMDB = %r

    @pipeline_def(batch_size=16, num_threads=2, device_id=None)
    def decoded():
        jpegs, labels = fn.readers.caffe2(path=LMDB, name="r")
        return fn.decoders.image(jpegs, output_type=types.GRAY), labels
""") % (os.path.join(ROOT, "python"), LMDB)


def child(body, timeout=30, signal_after=None):
    """Runs PRELUDE + body in a new interpreter: (returncode, stdout, stderr); fails the test
    when it has not ended within timeout seconds. With signal_after, waits for the line "ready",
    then sends SIGINT that many seconds later."""
    p = subprocess.Popen([sys.executable, "-c", PRELUDE + textwrap.dedent(body)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if signal_after is not None:
        assert p.stdout.readline().strip() == "ready"
        time.sleep(signal_after)
        p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        pytest.fail("the child hung (killed after %d s)\nstdout:\n%s\nstderr:\n%s"
                    % (timeout, out, err[-3000:]))
    return p.returncode, out, err


def test_exit_while_a_source_is_being_called():
    # the pipeline prefetches past the last batch taken: at exit its threads are in the source's
    # callbacks, and must end before the interpreter stops running Python
    rc, out, err = child("""
        @pipeline_def(batch_size=4, num_threads=2, device_id=None)
        def pipe():
            return fn.external_source(source=lambda i: np.full((4, 3), i, np.float32))
        p = pipe()
        assert p.run()[0].as_array()[0, 0] == 0
        print("end")
    """)
    assert rc == 0 and out.strip() == "end", err


def test_exit_with_an_iterator_and_its_arrays_alive():
    rc, out, err = child("""
        @pipeline_def(batch_size=4, num_threads=2, device_id=None)
        def pipe():
            return fn.external_source(source=lambda i: np.full((4, 3), i, np.float32))
        it = DALIGenericIterator([pipe()], ["x"], size=100)
        batch = next(it)  # lives past the end of the program
        print("end", batch["x"][0, 0])
    """)
    assert rc == 0 and out.strip() == "end 0.0", err


def test_exit_while_a_source_never_returns():
    rc, out, err = child("""
        stuck = threading.Event()
        def source(i):
            if i >= 1:
                stuck.wait()
            return np.full((4, 3), i, np.float32)
        @pipeline_def(batch_size=4, num_threads=2, device_id=None)
        def pipe():
            return fn.external_source(source=source)
        p = pipe()
        p.run()
        print("end")
    """)
    assert rc == 0 and out.strip() == "end", err


def test_ctrl_c_while_a_source_never_returns():
    rc, out, err = child("""
        def source(i):
            if i >= 2:
                threading.Event().wait()
            return np.full((4, 3), i, np.float32)
        @pipeline_def(batch_size=4, num_threads=2, device_id=None)
        def pipe():
            return fn.external_source(source=source)
        p = pipe()
        p.build()
        print("ready", flush=True)
        try:
            while True:
                p.run()
        except KeyboardInterrupt:
            print("interrupted", flush=True)
    """, signal_after=0.5)
    assert rc == 0 and out.strip() == "interrupted", err


def test_interrupts_in_bursts_lose_no_batch():
    # SIGINT every few hundred microseconds, caught and ignored (as a notebook does): whatever
    # bytecode each lands on, no batch may be left taken and never given back, or the iterator
    # and the pipeline run out of slots and refuse the next step
    rc, out, err = child("""
        it = DALIGenericIterator([decoded(prefetch_queue_depth=1)], ["x", "y"], reader_name="r",
                                 auto_reset=True)
        p = decoded(prefetch_queue_depth=1)
        main = threading.main_thread().ident
        go = threading.Event()
        def interrupt():
            go.wait()
            for _ in range(2000):
                time.sleep(0.0003)
                signal.pthread_kill(main, signal.SIGINT)
        t = threading.Thread(target=interrupt)
        t.start()
        steps = interrupts = 0
        done = False
        go.set()
        while not done:
            try:
                if not t.is_alive() and steps >= 300:
                    done = True  # (a signal still on its way lands in this try)
                    continue
                next(it)
                p.run()
                steps += 1
            except KeyboardInterrupt:
                interrupts += 1
            except StopIteration:
                pass
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        print(steps, interrupts)
    """, timeout=120)
    assert rc == 0, err
    steps, interrupts = map(int, out.split())
    assert steps >= 300 and interrupts > 100, out


def test_fork_child_refuses_the_parents_pipeline_and_makes_its_own():
    rc, out, err = child("""
        p = decoded()
        first = p.run()[1].as_array().copy()
        pid = os.fork()
        if pid == 0:
            try:
                p.run()
                print("child: a batch from the parent's pipeline")
            except sluice.StateError as e:
                print("child refused:", e)
            q = decoded()
            print("child fresh:", bool((q.run()[1].as_array() == first).all()), flush=True)
            sys.exit(0)  # the parent's pipeline goes with the child's exit: nothing to join
        _, status = os.waitpid(pid, 0)
        print("parent goes on:", os.waitstatus_to_exitcode(status), p.run()[1].shape)
    """)
    assert rc == 0, err
    assert "child refused: run() in a child process made by fork()" in out, out
    assert "child fresh: True" in out, out
    assert "parent goes on: 0" in out, out


def test_close_from_another_thread_while_running():
    rc, out, err = child("""
        errors = []
        for rep in range(20):
            p = decoded()
            p.build()
            stop = threading.Event()
            def work():
                try:
                    while not stop.is_set():
                        images, labels = p.run()
                        assert images.as_array().shape[0] == 16
                except sluice.Error as e:
                    errors.append(e)
            t = threading.Thread(target=work)
            t.start()
            time.sleep(0.01)
            p.close()
            stop.set()
            t.join()
        print("ok", len(errors))
    """)
    assert rc == 0 and out.startswith("ok"), err


def test_a_source_that_asks_its_own_pipeline_is_refused(no_leaked_threads):
    box = {}

    def source(i):
        if i == 2:
            box["pipe"].run()
        return np.full((4, 3), i, np.float32)

    @pipeline_def(batch_size=4, num_threads=2, device_id=None)
    def pipe():
        return fn.external_source(source=source)

    p = box["pipe"] = pipe()
    with pytest.raises(sluice.SourceError, match=r"run\(\) from inside one of its own") as e:
        for _ in range(5):
            p.run()
    assert isinstance(e.value.__cause__, sluice.StateError)
    p.close()
    del box["pipe"], p, e


def test_a_source_that_steps_its_own_iterator_is_refused(no_leaked_threads):
    box = {}

    def source(i):
        if "it" in box:  # (the iterator prepares its first batches before it is in the box)
            next(box["it"])
        return np.full((4, 3), i, np.float32)

    @pipeline_def(batch_size=4, num_threads=2, device_id=None)
    def pipe():
        return fn.external_source(source=source)

    it = box["it"] = DALIGenericIterator([pipe()], ["x"], size=1000)
    with pytest.raises(sluice.SourceError, match=r"next\(\) from inside one of its own"):
        for _ in range(50):
            next(it)
    it.close()
    del box["it"], it


def test_a_source_may_use_another_pipeline():
    @pipeline_def(batch_size=4, num_threads=2, device_id=None)
    def inner():
        jpegs, labels = fn.readers.caffe2(path=LMDB)
        return labels

    feeder = inner()

    @pipeline_def(batch_size=4, num_threads=2, device_id=None)
    def outer():
        return fn.external_source(source=lambda i: feeder.run()[0].as_array().copy())

    want = inner()
    p = outer()
    for _ in range(3):
        assert (p.run()[0].as_array() == want.run()[0].as_array()).all()


def test_close_with_a_batch_alive_ends_the_threads():
    import gc
    gc.collect()
    before = thread_count()
    p = decoded_here()
    images, labels = p.run()
    assert thread_count() > before
    p.close()
    assert thread_count() == before  # the threads end now, the memory stays for the views
    assert images.as_array().shape == (16, 28, 28, 1) and labels.as_array().shape == (16, 1)
    with pytest.raises(sluice.Error):
        p.reader_meta("nothing")  # (a closed pipeline builds again on use: a fresh one)
    p.close()
    del images, labels, p


@pipeline_def(batch_size=16, num_threads=2, device_id=None)
def decoded_here():
    jpegs, labels = fn.readers.caffe2(path=LMDB, name="r")
    return fn.decoders.image(jpegs, output_type=types.GRAY), labels


def test_iterator_calls_from_two_threads_are_serialised():
    it = DALIGenericIterator([decoded_here()], ["x", "y"], reader_name="r", auto_reset=True)
    seen, errors = [], []

    def work():
        try:
            for _ in range(40):
                try:
                    b = next(it)
                except StopIteration:
                    continue
                seen.append(b["x"].shape[0])
        except Exception as e:  # noqa: BLE001 -- reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(seen) >= 100 and set(seen) == {16}
