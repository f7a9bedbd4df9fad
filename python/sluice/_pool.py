# SPDX-License-Identifier: Apache-2.0
"""The worker processes of fn.external_source(parallel=True), as DALI's: one pool per pipeline
definition, ``py_num_workers`` processes started by ``py_start_method`` ("fork": they inherit the
sources; "spawn": the sources are pickled to them), shared by its parallel sources.

A task is one call of a source: the samples of a range of a batch (``batch=False``: one
SampleInfo each), one batch of a callable (its BatchInfo or iteration number), or the next batch
of an iterable or generator function (always the same worker, which keeps the iterator). Tasks
go down a pipe per worker; the worker sends back the result pickled (protocol 5, numpy arrays as
out-of-band buffers, so no array is copied into the pickle), StopIteration, or the exception with
its traceback. Results are matched to tasks by id, so they come out in batch order whatever order
the workers finish in. A worker that dies (killed, out of memory) is seen through its process
sentinel while its results are waited for: an error naming it, never a wait for ever."""

import multiprocessing
import multiprocessing.connection as mpc
import os
import pickle
import signal
import struct
import threading
import traceback
from collections import namedtuple

SampleInfo = namedtuple("SampleInfo", "idx_in_epoch idx_in_batch iteration epoch_idx")
BatchInfo = namedtuple("BatchInfo", "iteration epoch_idx")

# what a worker needs of each parallel source: the source, "callable", "iterable" or "genfunc",
# and cycle (for iterables)
Spec = namedtuple("Spec", "source kind cycle")


class WorkerLost(RuntimeError):
    """A worker process of a parallel external source died (or the pool was closed)."""


def _plain(x):
    """x with torch tensors as numpy arrays (lists and tuples walked): what the parent takes."""
    if isinstance(x, (list, tuple)):
        return type(x)(_plain(v) for v in x)
    if hasattr(x, "detach") and hasattr(x, "numpy"):
        return x.detach().cpu().numpy()
    return x


def _send(conn, obj):
    bufs = []
    head = pickle.dumps(obj, protocol=5, buffer_callback=bufs.append)
    conn.send_bytes(struct.pack("<I", len(bufs)) + head)
    for b in bufs:
        conn.send_bytes(b.raw())


def _recv(conn):
    head = conn.recv_bytes()
    (n,) = struct.unpack("<I", head[:4])
    bufs = [conn.recv_bytes() for _ in range(n)]
    return pickle.loads(head[4:], buffers=bufs)


def _iterate(spec):
    return spec.source() if spec.kind == "genfunc" else iter(spec.source)


def worker_main(conn, specs):
    """A worker's loop: tasks in, results out, until told to stop or the parent goes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    iters = {}  # source index -> its iterator (None once it ended this epoch)
    try:
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                break  # the parent is gone
            if msg[0] == "stop":
                break
            if msg[0] == "epoch":  # an iterable starts again
                iters.pop(msg[1], None)
                continue
            _, tid, si, kind, arg = msg
            spec = specs[si]
            try:
                if kind == "samples":  # (a range: the message stays small for any batch)
                    idx0, i0, n, k, epoch = arg
                    out = [_plain(spec.source(SampleInfo(idx0 + j, i0 + j, k, epoch)))
                           for j in range(n)]
                elif kind == "batch":
                    out = _plain(spec.source(arg if arg is None or isinstance(arg, int)
                                             else BatchInfo(*arg)))
                else:
                    if si not in iters:
                        iters[si] = _iterate(spec)
                    it = iters[si]
                    if it is None:
                        raise StopIteration
                    try:
                        out = next(it)
                    except StopIteration:
                        if spec.cycle not in (True, "quiet"):
                            iters[si] = None
                            raise
                        iters[si] = it = _iterate(spec)
                        out = next(it)
                    out = _plain(out)
                reply = (tid, "ok", out)
            except StopIteration:
                reply = (tid, "stop", None)
            except BaseException as e:  # noqa: B902 -- goes back to the parent
                tb = traceback.format_exc()
                try:
                    pickle.dumps(e)
                    reply = (tid, "err", (e, tb))
                except Exception:
                    reply = (tid, "err", ("%s: %s" % (type(e).__name__, e), tb))
            try:
                _send(conn, reply)
            except (pickle.PicklingError, TypeError, AttributeError) as e:
                _send(conn, (tid, "err", ("the source returned what cannot be sent back from "
                                          "its worker (%s: %s)" % (type(e).__name__, e), "")))
            except (BrokenPipeError, OSError):
                break
    finally:
        conn.close()
    os._exit(0)  # no atexit handler, no finaliser of the parent's objects


class Pool:
    """py_num_workers processes running the parallel sources specs[0 ..]; labels name them."""

    def __init__(self, specs, labels, workers, method):
        self.labels = labels
        self.workers = workers
        self.method = method
        self.lock = threading.Lock()
        self.results = {}  # task id -> (status, payload)
        self.wanted = set()  # task ids whose results are still to be taken
        self.next_tid = 0
        self.rr = 0
        self.broken = None  # the WorkerLost every later call raises
        if method == "spawn":  # each source must survive pickling: say which one does not
            for spec, label in zip(specs, labels):
                try:
                    pickle.dumps(spec)
                except Exception as e:
                    raise pickle.PicklingError(
                        "fn.external_source %r: py_start_method='spawn' sends the source to the "
                        "workers pickled, and it cannot be pickled (%s: %s); define it at the top "
                        "level of a module, or use py_start_method='fork'"
                        % (label, type(e).__name__, e)) from None
        ctx = multiprocessing.get_context(method)
        self.procs, self.conns = [], []
        try:
            for _ in range(workers):
                parent, child = ctx.Pipe(duplex=True)
                p = ctx.Process(target=worker_main, args=(child, specs), daemon=True,
                                name="sluice-source-worker")
                p.start()
                child.close()
                self.procs.append(p)
                self.conns.append(parent)
        except BaseException:
            self.close()
            raise

    def submit(self, si, kind, arg, worker=None):
        """Sends a task (to worker, else the next in turn); its id."""
        with self.lock:
            if self.broken is not None:
                raise self.broken
            if worker is None:
                worker = self.rr
                self.rr = (self.rr + 1) % self.workers
            tid = self.next_tid
            self.next_tid += 1
            self.wanted.add(tid)
            try:
                self.conns[worker].send(("task", tid, si, kind, arg))
            except (BrokenPipeError, OSError):
                self.wanted.discard(tid)
                self._lost(worker)
            return tid

    def restart(self, si, worker):
        """An iterable source starts again (its worker makes a new iterator)."""
        with self.lock:
            if self.broken is None:
                try:
                    self.conns[worker].send(("epoch", si))
                except (BrokenPipeError, OSError):
                    self._lost(worker)

    def drop(self, tids):
        """Results no longer wanted (an epoch that ended, a pipeline started again)."""
        with self.lock:
            for t in tids:
                self.wanted.discard(t)
                self.results.pop(t, None)

    def _lost(self, w, what=""):
        p = self.procs[w]
        p.join(0.1)
        code = p.exitcode
        how = ("killed by signal %d" % -code if code is not None and code < 0 else
               "exit status %s" % code if code is not None else "its pipe closed")
        self.broken = WorkerLost("worker process %d of %d (pid %s) of the parallel sources %s "
                                 "died (%s)%s" % (w + 1, self.workers, p.pid,
                                                  ", ".join(repr(x) for x in self.labels), how,
                                                  what))
        raise self.broken

    def take(self, tids, cancelled, what):
        """The results of tids, in their order: waits for them, each wait bounded, and raises
        WorkerLost for a worker that died and for cancelled() (the pipeline is closing)."""
        with self.lock:
            while True:
                if self.broken is not None:
                    raise self.broken
                if all(t in self.results for t in tids):
                    out = [self.results.pop(t) for t in tids]
                    for t in tids:
                        self.wanted.discard(t)
                    return out
                if cancelled():
                    raise WorkerLost("the pipeline was closed while its parallel source waited "
                                     "for its workers")
                sentinels = {p.sentinel: w for w, p in enumerate(self.procs)}
                conns = {id(c): w for w, c in enumerate(self.conns)}
                ready = mpc.wait(self.conns + list(sentinels), timeout=0.2)
                for r in ready:
                    if not isinstance(r, int):
                        w = conns[id(r)]
                        try:
                            tid, status, payload = _recv(r)
                        except (EOFError, OSError):
                            self._lost(w, " while " + what)
                        if tid in self.wanted:
                            self.results[tid] = (status, payload)
                for r in ready:
                    if isinstance(r, int) and not self.conns[sentinels[r]].poll():
                        self._lost(sentinels[r], " while " + what)

    def close(self):
        """Stops the workers (each asked, then terminated if it does not go within a second)."""
        for c in getattr(self, "conns", []):
            try:
                c.send(("stop",))
            except (BrokenPipeError, OSError):
                pass
        for p in getattr(self, "procs", []):
            p.join(1.0)
            if p.is_alive():
                p.terminate()
                p.join(1.0)
        for c in getattr(self, "conns", []):
            c.close()
        self.procs, self.conns = [], []
        if self.broken is None:
            self.broken = WorkerLost("the parallel sources' workers were stopped (the pipeline "
                                     "was closed)")
