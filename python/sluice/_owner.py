# SPDX-License-Identifier: Apache-2.0
"""What pipelines and iterators share: the C object's lifetime, the batches handed to Python and
given back, the Python thread state each library thread keeps, and what happens at a fork and at
the interpreter's exit."""

import atexit
import ctypes
import functools
import os
import sys
import threading
import time
import weakref
from ctypes import c_void_p

from . import _c, errors
from ._state import exiting, local


class Hold:
    """A batch taken from the library; given back by its owner's next call once the last view of
    it is gone (the owner looks for holds that have died: no __del__, whose start is a place
    where a signal's handler runs, and where a Ctrl-C would lose the batch)."""

    __slots__ = ("_owner", "_batch", "__weakref__")

    def __init__(self, owner):
        self._owner = owner  # kept alive while views of its batches live
        self._batch = None


# Every Pipeline and iterator that has had a C object, for the interpreter's exit; and how many
# times this process has been forked into a child (the C objects of an earlier generation belong
# to the parent: their threads are not in this process).
owners = weakref.WeakSet()
generation = [0]


class Owner:
    """What pipelines and iterators share: the C object (one at a time; closed ones that still
    have live views are kept, stopped, until the owner goes), the batches handed out, and those
    whose views are gone, to give back. Calls on the C object go one thread at a time, through
    _guard()."""

    def _owner_init(self, free, stop, exports=None):
        self._handle = None
        self._retired = []
        # the batches handed out: {(C object, batch): weak reference to its Hold}
        self._out = {}
        self._free_fn = free
        self._stop_fn = stop
        self._exports_fn = exports  # the C object's live DLPack exports (iterators)
        self._lock = threading.RLock()
        self._generation = generation[0]
        self._pid = os.getpid()
        # where next() writes the batch it takes: one the caller never wrapped in a Hold (a
        # KeyboardInterrupt right after the call) is found here and handed over by the next call
        self._inflight = c_void_p()
        # the batch a call has taken and not yet returned: (thread, hold, what the call returns,
        # once made). A KeyboardInterrupt before the call returns leaves it here, and that
        # thread's next call returns it instead of taking another, so an interrupt loses no batch
        self._pending = None
        owners.add(self)

    def _sources(self):
        """The Python sources whose callbacks this object's pipelines call."""
        return ()

    def _forked_copy(self):
        """This is a fork()ed child's copy of the parent's owner: its C object's threads are not
        here. By the process id too: threading's own after-fork hook runs before ours and may
        collect (finalize) owners in the child before generation is counted up."""
        return self._generation != generation[0] or self._pid != os.getpid()

    def _guard(self, what):
        """The lock to hold while calling the C object; refuses calls that could never return."""
        src = getattr(local, "in_callback", None)
        if src is not None and src in self._sources():
            raise errors.StateError("%s from inside one of its own fn.external_source sources: "
                                    "the pipeline is waiting for that source to return, so it "
                                    "would wait forever" % what)
        if self._forked_copy():
            raise errors.StateError("%s in a child process made by fork(): the pipeline's threads "
                                    "are in the parent (process %d); make a new pipeline in the "
                                    "child" % (what, self._pid))
        return self._lock

    def _hold(self, me):
        h = Hold(self)
        ref = weakref.ref(h)
        # the batch that next() wrote into _inflight moves to _out and _pending in stores with no
        # call between them (a signal's handler runs as a call returns): it is in one place or
        # the other, never in both or neither
        h._batch = b = self._inflight.value
        self._out[self._handle, b] = ref
        self._pending = (me, h, None)
        self._inflight.value = None
        return h

    def _taken_before(self, me):
        """The hold of a batch taken for a call of thread `me` that never returned it (a Ctrl-C
        in between), wrapped now if it was never wrapped; None when there is none."""
        if self._inflight.value and self._handle:
            return self._hold(me)
        p = self._pending
        if p is not None and p[0] == me and p[1]._batch is not None and \
                self._out.get((self._handle, p[1]._batch)) is not None:
            return p[1]
        return None

    def _made_before(self, me):
        """What a call of thread `me` made and never returned (a Ctrl-C in between), or None."""
        p = self._pending
        return p[2] if p is not None and p[0] == me else None

    def _live(self, handle=None):
        """How many batches of the C object (the current one) have views alive."""
        handle = handle or self._handle
        return sum(1 for (x, _), ref in list(self._out.items()) if x == handle and ref() is not None)

    def _reclaim(self, release):
        """Gives back what went astray: batches whose views are gone, and one taken by a next()
        that a signal interrupted before it was wrapped."""
        out = self._out
        for key, ref in list(out.items()):
            if ref() is None:
                # off the list and given back with no call in between, so that a Ctrl-C can
                # neither lose it nor give it back twice
                del out[key]
                if key[0] == self._handle:  # a closed one's batches go with it
                    release(*key)
        if self._inflight.value and self._handle:
            b, self._inflight.value = self._inflight.value, None
            release(self._handle, b)

    def _given_back(self, hold, release):
        """Gives the batch of a live hold back now (its views are copies)."""
        key = (self._handle, hold._batch)
        if self._out.get(key) is not None:
            del self._out[key]
            hold._batch = None
            release(*key)

    @staticmethod
    def _wait(wait, handle):
        """Waits for the next batch in slices, so that Ctrl-C is seen while it is being made."""
        while wait(handle, 100) == _c.ETIMEOUT:
            pass

    def _exported(self, h):
        return self._exports_fn is not None and self._exports_fn(h) > 0

    def _close_handle(self):
        h = self._handle
        self._inflight.value = None  # a batch taken but never wrapped goes with its C object
        self._pending = None
        if not h:
            return
        # retired in the statement that clears it, and taken off that list only with no call
        # (where a signal is handled) before its free: a Ctrl-C anywhere in close() leaves the C
        # object either listed (stopped at exit, freed with the owner) or freed, never lost with
        # its threads running
        self._retired, self._handle = self._retired + [h], None
        if self._forked_copy():
            return
        if self._live(h) or self._exported(h):
            # views of its batches, or exports of them, are alive: its threads end now, its
            # memory when the owner goes
            stop_pipeline(h, self._stop_fn)
            return
        self._out.clear()
        if sys.is_finalizing():
            return  # the exit stopped its threads (_exit_stop); the process's end frees it
        # free_pipeline's rule, written out: a call to it between the del and the free is
        # where a Ctrl-C would lose h
        in_callback = getattr(local, "in_callback", None) is not None
        del self._retired[-1]  # h (calls on the owner go one at a time)
        if in_callback:  # not from inside one of its own callbacks; its sources live till then
            deferred_free.append((self._free_fn, h, tuple(self._sources())))
        else:
            self._free_fn(h)

    def _free_all(self):
        h, self._handle = self._handle, None
        handles, self._retired = ([h] if h else []) + self._retired, []
        if self._forked_copy():
            return  # the parent's: nothing of it runs here, and its memory is the parent's copy
        for x in handles:
            if self._exported(x):
                # a framework still holds arrays of its memory (their deleters count down in C):
                # stopped now, freed by a later call once they are gone
                stop_pipeline(x, self._stop_fn)
                orphans.append((x, self._free_fn, self._exports_fn, tuple(self._sources())))
            else:
                free_pipeline(x, self._free_fn, tuple(self._sources()))

    def _stop_for_exit(self, deadline):
        """At the interpreter's exit: ends the threads of every C object, frees nothing. Not
        while one of its sources is still running after the deadline, or another thread's call
        holds it: that may never return, and stopping waits for the threads."""
        if self._forked_copy():
            return
        while any(s.calling for s in self._sources()):
            if time.monotonic() > deadline:
                return
            time.sleep(0.005)
        if not self._lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            return
        try:
            for h in ([self._handle] if self._handle else []) + self._retired:
                self._stop_fn(h)
        finally:
            self._lock.release()


def guarded(what):
    """Decorates a method of an Owner (or of an object whose _guard is one's) that calls the C
    object: one thread at a time, refused from its own sources and in a forked child."""
    def decorate(method):
        @functools.wraps(method)
        def call(self, *args, **kwargs):
            with self._guard(what):
                return method(self, *args, **kwargs)
        return call
    return decorate


# C pipelines are never freed from inside one of their own callbacks (a garbage collection that
# runs in a source's callback, on a pipeline thread): those wait here for the next call.
deferred_free = []


def free_pipeline(handle, free=None, keep=()):
    """Frees a C pipeline now, or (from inside a callback) at the next build; until then its
    threads run on, so `keep`, the Python sources they call (whose ctypes callbacks they hold),
    stays alive with the entry: a pipeline dropped by the garbage collector inside another
    pipeline's callback must not call a freed callback."""
    free = free or _c.lib.sl_pipeline_free
    if sys.is_finalizing():
        return  # the exit stopped its threads (_exit_stop); the process's end frees its memory
    if getattr(local, "in_callback", None) is not None:
        deferred_free.append((free, handle, keep))  # not from inside one of its own callbacks
    else:
        free(handle)


def stop_pipeline(handle, stop):
    if getattr(local, "in_callback", None) is None:  # (from inside a callback: freed later)
        stop(handle)


# C iterators gone from Python whose memory DLPack consumers still use: (handle, free, exports,
# the Python sources their threads may still call)
orphans = []


def drain_deferred():
    if getattr(local, "in_callback", None) is not None:
        return  # a pipeline's thread, perhaps one of these pipelines' own: freeing would join it
    with _drain_lock:  # (one thread at a time: the orphans are looked at by their index)
        # each is listed until its free is called, with no call in between: a signal (handled
        # as a call returns) can neither lose one, its threads running on, nor free one twice
        while deferred_free:
            free, handle, keep = deferred_free[-1]
            del deferred_free[-1]
            free(handle)
            del keep  # its sources may go now that its threads are gone
        i = 0
        while i < len(orphans):
            handle, free, exports, _keep = orphans[i]
            if exports(handle) > 0:
                i += 1
            else:
                del orphans[i]
                free(handle)


_drain_lock = threading.Lock()


# Every thread the library starts keeps one interpreter state for its life. A ctypes callback on
# a thread without one (the sources' and python_function's callbacks run on the library's
# threads) makes one and ends it again, which costs a page-faulted allocation each time: most of
# what a per-sample callback cost. The start hook, itself a callback, takes the thread's state a
# second time, so the callback's own release leaves it in place; the stop hook gives it back, and
# the thread's last callback ends it.
_gil_ensure = ctypes.pythonapi.PyGILState_Ensure
_gil_ensure.restype = ctypes.c_int
_gil_ensure.argtypes = []
_gil_release = ctypes.pythonapi.PyGILState_Release
_gil_release.restype = None
_gil_release.argtypes = [ctypes.c_int]
_GIL_LOCKED = 0  # PyGILState_LOCKED: what Ensure gives on a thread that holds the GIL already


@_c.HOOK_FN
def _thread_start(user):
    _gil_ensure()


@_c.HOOK_FN
def _thread_stop(user):
    _gil_release(_GIL_LOCKED)


_c.lib.sl_set_thread_hooks(ctypes.byref(_c.ThreadHooks(_thread_start, _thread_stop, None)))


@atexit.register
def _exit_stop():
    """Ends every pipeline thread while the interpreter can still run their Python sources'
    callbacks: a thread that calls into Python once the interpreter is finalizing never returns,
    and freeing a pipeline waits for its threads. Memory stays for arrays still alive. Sources
    are not called again; one that is running gets a second to return."""
    exiting[0] = True
    deadline = time.monotonic() + 1.0
    for owner in list(owners):
        if hasattr(owner, "_cancel_feeds"):
            owner._cancel_feeds()  # (a source waiting for feed_input data returns)
    for owner in list(owners):
        owner._stop_for_exit(deadline)
    # a thread that outlived that (its source still running) must not call Python once the
    # interpreter is finalizing: it keeps its state instead
    _c.lib.sl_set_thread_hooks(None)


def _after_fork_in_child():
    global _drain_lock
    generation[0] += 1
    _drain_lock = threading.Lock()  # (a thread of the parent's may have held it)
    deferred_free.clear()
    orphans.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
