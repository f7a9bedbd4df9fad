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


def test_exit_while_per_sample_callbacks_run_on_every_worker():
    # per-sample sources and a python_function call back on the pool's workers and the stage
    # threads, each of which keeps its Python thread state for its life: at exit every one of
    # them ends (its state given back) before the interpreter stops running Python
    for _ in range(3):
        rc, out, err = child("""
            def f(x):
                time.sleep(0.001)
                return x * 2
            @pipeline_def(batch_size=16, num_threads=4, device_id=None)
            def pipe():
                x = fn.external_source(source=lambda info: np.full((8, 3), info.idx_in_epoch,
                                                                   np.float32), batch=False)
                return fn.python_function(x, function=f)
            p = pipe()
            for k in range(3):
                assert p.run()[0].as_array()[5, 0, 0] == 2 * (16 * k + 5)
            print("end")
        """)
        assert rc == 0 and out.strip() == "end", err


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
    assert thread_count() <= before  # the threads end now, the memory stays for the views
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


def test_a_collection_inside_a_source_frees_no_pipeline_from_its_own_thread():
    # an iterator is a reference cycle: a collection may run on one of its own pipeline's threads,
    # in a source's callback, which defers the free; a call on another pipeline from that source
    # must not do it there (it would join the very thread it runs on and free its memory)
    rc, out, err = child("""
        import gc
        @pipeline_def(batch_size=4, num_threads=2, device_id=None)
        def inner():
            jpegs, labels = fn.readers.caffe2(path=LMDB)
            return labels
        feeder = inner()
        feeder.build()
        dropped = threading.Event()
        def source(i):
            if i == 3:
                dropped.wait(5)
                gc.collect()
                feeder.run()
            return np.full((4, 3), i, np.float32)
        @pipeline_def(batch_size=4, num_threads=2, device_id=None)
        def pipe():
            return fn.external_source(source=source)
        gc.disable()
        it = DALIGenericIterator([pipe()], ["x"], size=100)
        next(it)
        del it
        dropped.set()
        time.sleep(0.5)
        feeder.run()  # (frees the iterator here)
        print("end")
    """)
    assert rc == 0 and out.strip() == "end", err


def test_a_pipeline_dropped_inside_another_ones_source_keeps_its_sources():
    # a pipeline dropped (or collected) inside another pipeline's callback is freed later, at the
    # next build: until then its threads run on and call its Python source, which must still be
    # there (its ctypes callback freed with it made the thread jump to freed memory: a crash).
    # (Whether the source is alive is not probed with a weakref during the wait: the collector
    # clears weak references to everything it found unreachable, the objects a finalizer then
    # keeps alive included, so a weakref is cleared or not as the source's thread happens to be
    # inside a call of it or between two when the collection runs. The list of pipelines waiting
    # to be freed is asked instead: it must hold the source, by identity.)
    rc, out, err = child("""
        import gc
        calls = [0]
        def slow(i):
            calls[0] += 1
            time.sleep(0.02)
            return np.full((2, 2), i, np.float32)
        @pipeline_def(batch_size=2, num_threads=1, device_id=None, prefetch_queue_depth=8)
        def busy():
            return fn.external_source(source=slow)
        import weakref
        holder = [busy()]
        holder[0].run()
        holder[0].cycle = holder[0]  # garbage only the collector finds, with its sources
        src = weakref.ref(holder[0]._sources()[0])
        sid = id(holder[0]._sources()[0])
        from sluice import _owner
        seen = []
        def drop(i):
            if holder:
                holder.clear()  # its last outside reference, gone inside this callback
                gc.collect()
                n = calls[0]
                time.sleep(0.3)  # its thread goes on calling `slow`
                kept = any(id(x) == sid for e in _owner.deferred_free for x in e[2])
                seen.append((calls[0] > n, kept))
            return np.full((2, 2), i, np.float32)
        @pipeline_def(batch_size=2, num_threads=1, device_id=None)
        def other():
            return fn.external_source(source=drop)
        o = other()
        o.run()
        o.run()
        @pipeline_def(batch_size=2, num_threads=1, device_id=None)
        def third():
            return fn.external_source(source=lambda i: np.zeros(2, np.float32))
        third().run()  # (the dropped pipeline is freed here)
        gc.collect()
        assert seen == [(True, True)], seen  # called after the drop, its source kept
        assert src() is None  # and gone with the pipeline
        print("end")
    """)
    assert rc == 0 and out.strip() == "end", err


def test_ctrl_c_at_every_place_it_can_land_loses_nothing():
    # CPython runs a signal's handler where a function starts, after a call returns and at a
    # loop's jump back: a KeyboardInterrupt raised at each of those places in the package, in
    # turn, in run(), next(), close(), build and iterator creation, must leave no batch taken and
    # never given back or given back twice, and no C pipeline or iterator unfreed (its threads
    # running on) or freed twice
    rc, out, err = child(SWEEP, timeout=240)
    assert rc == 0, err
    lines = out.splitlines()
    assert len(lines) == 5 and all(x.endswith(" points") for x in lines), out
    assert "Exception ignored" not in err, err


INTERRUPT = r"""
import ctypes, dis, gc
from sluice import _c
PKG = os.path.dirname(sluice.__file__)
AFTER = {"CALL", "CALL_FUNCTION_EX", "CALL_KW", "JUMP_BACKWARD"}

class Interrupt:
    '''Raises KeyboardInterrupt at the k-th place in the package's code where CPython runs a
    signal's handler: a function's start, after a call returns, a loop's jump back.'''
    def __init__(self, k):
        self.k, self.n, self.where = k, 0, None
    def __enter__(self):
        sys.settrace(self.trace)
        return self
    def __exit__(self, *exc):
        sys.settrace(None)
    def trace(self, frame, event, arg):
        if self.where or not frame.f_code.co_filename.startswith(PKG):
            return None
        frame.f_trace_opcodes, frame.f_trace_lines = True, False
        ops = {i.offset: i.opname for i in dis.get_instructions(frame.f_code, show_caches=True)}
        last = [None]
        def local(frame, event, arg):
            if event == "opcode" and not self.where:
                op = ops.get(frame.f_lasti)
                point, last[0] = op == "RESUME" or last[0] in AFTER, op
                if point:
                    if self.n == self.k:
                        self.where = "%s:%d" % (frame.f_code.co_name, frame.f_lineno)
                        raise KeyboardInterrupt
                    self.n += 1
            return local
        return local

"""

SWEEP = INTERRUPT + r"""
# what the library was asked for, seen through spies on its functions: batches held
# {batch: C object}, C objects made and not freed {handle: kind}, and what went wrong
held, problems = {}, []
def spy(name, f):
    real = getattr(_c.lib, name)
    setattr(_c.lib, name, lambda *a: f(real, *a))
def took(real, h, out):
    st = real(h, out)
    if st == _c.OK and out._obj.value:
        held[out._obj.value] = h
    return st
def gave(real, h, b):
    if held.pop(b, None) != h:
        problems.append("a batch given back twice")
    real(h, b)
spy("sl_pipeline_next", took); spy("sl_pipeline_release", gave)
spy("sl_iter_next", took); spy("sl_iter_release", gave)

def sweep(what, setup, step, check):
    '''step(setup()) with a Ctrl-C at its k-th place, for k = 0, 1, ... until five steps in a
    row ended before k (steps take different paths); check() says what was lost.'''
    k = misses = 0
    while misses < 5:
        state = setup()
        with Interrupt(k) as i:
            try:
                step(state)
            except (KeyboardInterrupt, StopIteration):
                pass
        misses = 0 if i.where else misses + 1
        bad = check(state)
        if bad:
            print("%s, Ctrl-C at %s: %s" % (what, i.where, bad), flush=True)
        k += 1
    print(what, k, "points", flush=True)

def run_step(p):
    p.run()  # the batch taken by the last one goes back in this call
    p.run()
def run_check(p):
    for _ in range(3):
        p.run()
    p._give_back()
    bad = problems[:] + (["%d batches never given back" % len(held)] if held else [])
    held.clear(); problems.clear()
    return bad
pipe = decoded(prefetch_queue_depth=1)
sweep("run()", lambda: pipe, run_step, run_check)
it = DALIGenericIterator([decoded(prefetch_queue_depth=1)], ["x", "y"], reader_name="r",
                         auto_reset=True)
def next_step(it):
    for _ in range(2):
        try:
            next(it)
        except StopIteration:
            pass
def next_check(it):
    for _ in range(3):
        try:
            next(it)
        except StopIteration:
            pass
    it._it._give_back()
    bad = problems[:] + (["%d batches never given back" % len(held)] if held else [])
    held.clear(); problems.clear()
    return bad
sweep("next()", lambda: it, next_step, next_check)

made, freed = {}, set()
def val(h):
    if isinstance(h, ctypes.c_void_p):
        return h.value
    return h._obj.value if hasattr(h, "_obj") else h
def made_by(kind):
    def f(real, *a):
        st = real(*a)
        h = val(a[1] if kind == "iter" else a[0])
        if st == _c.OK:
            made[h] = kind
            freed.discard(h)
        return st
    return f
def free_of(real, h):
    h = val(h)
    if h in freed:
        problems.append("freed twice")
    if made.pop(h, None):
        freed.add(h)
    real(h)
def created(real, cfg, out, err):
    st = real(cfg, out, err)
    freed.discard(val(out))
    return st
spy("sl_pipeline_create", created)
spy("sl_pipeline_build", made_by("pipe")); spy("sl_pipeline_free", free_of)
spy("sl_iter_create", made_by("iter")); spy("sl_iter_free", free_of)
def gone_check(box):
    box.clear()
    gc.collect()
    sluice._owner.drain_deferred()
    bad = problems[:] + (["%s never freed" % list(made.values())] if made else [])
    made.clear(); problems.clear(); held.clear()
    return bad
def close_setup():
    p = decoded(prefetch_queue_depth=1)
    return {"p": p, "view": p.run()}
def close_step(box):
    box["p"].close()
sweep("close() with a batch alive", close_setup, close_step, gone_check)
sweep("close()", lambda: {"p": decoded(prefetch_queue_depth=1)}, lambda b: (b["p"].build(), b["p"].close()), gone_check)
def it_step(box):
    box["it"] = DALIGenericIterator([decoded(prefetch_queue_depth=1)], ["x", "y"], reader_name="r")
    box["b"] = next(box["it"])
    box["it"].reset()
sweep("iterator creation, next, reset", dict, it_step, gone_check)
"""


def test_ctrl_c_anywhere_in_run_or_next_loses_no_batch():
    # a KeyboardInterrupt at each place in turn where one can land in run() and in the numpy
    # iterator's next(), with the outputs dropped at once (handed over as views) or kept (copies,
    # once too many are out): the batches the calls that returned gave, in order, are those of
    # an uninterrupted run -- the one an interrupted call took comes from the next call
    rc, out, err = child(LOSSLESS, timeout=400)
    assert rc == 0, out + err
    lines = out.splitlines()
    assert len(lines) == 4 and all(x.endswith(" batches") for x in lines), out
    assert "Exception ignored" not in err, err


LOSSLESS = INTERRUPT + r"""
import hashlib

def digest(out):
    # (outside the Interrupt: what the test does with a batch is no part of the hand-over)
    arrays = [out["x"], out["y"]] if isinstance(out, dict) else [t.as_array() for t in out]
    return hashlib.sha1(b"".join(np.ascontiguousarray(a).tobytes() for a in arrays)).hexdigest()

def lossless(what, make, take, keep):
    '''take(make()) with a Ctrl-C at its k-th place, for k = 0, 1, ... on one pipeline, until
    five calls in a row ended before k; every batch returned, against as many calls of an
    uninterrupted pipeline.'''
    src, got, kept, k, misses, fired = make(), [], [], 0, 0, 0
    while misses < 5:
        out = None
        with Interrupt(k) as i:
            try:
                out = take(src)
            except KeyboardInterrupt:
                pass
        if out is not None:
            got.append(digest(out))
            if keep:
                kept = (kept + [out])[-4:]
        misses = 0 if i.where else misses + 1
        fired += i.where is not None
        k += 1
    ref = make()
    want = [digest(take(ref)) for _ in range(len(got))]
    if got != want:
        lost = [x for x in want if x not in got]
        print("%s: %d batches differ from an uninterrupted run (%d missing)"
              % (what, sum(a != b for a, b in zip(got, want)), len(lost)), flush=True)
        sys.exit(1)
    assert fired > 20, fired
    print(what, len(got), "batches", flush=True)

def run_take(p):
    return p.run()
def next_take(it):
    while True:
        try:
            return next(it)
        except StopIteration:
            pass  # the end of an epoch (auto_reset): not a batch
make_pipe = lambda: decoded(prefetch_queue_depth=1, seed=3)
make_iter = lambda: DALIGenericIterator([decoded(prefetch_queue_depth=1, seed=3)], ["x", "y"],
                                        reader_name="r", auto_reset=True)
lossless("run(), views dropped", make_pipe, run_take, False)
lossless("run(), views kept", make_pipe, run_take, True)
lossless("next(), views dropped", make_iter, next_take, False)
lossless("next(), views kept", make_iter, next_take, True)
"""
