# SPDX-License-Identifier: Apache-2.0
"""The iterator behind the framework plugins: the library's sl_iter (one pipeline per device,
global batches, DALI's epoch rules, checkpoints), fed by graphs traced in Python.

Batches are handed out without a copy while few are held; sl_iter lets the caller hold
sl_iter_max_held batches (prefetch_queue_depth + 1), and the one that would take the last free
slot is copied instead and given back at once, so the next step can always be taken and no buffer
is reused while a view of it -- or a framework array made from it through DLPack -- lives."""

import ctypes
import enum
import threading
from ctypes import byref, c_char_p, c_void_p

from .. import _c, errors
from .._owner import Owner, drain_deferred, guarded
from .._values import INT64_MAX, c_text, checkpoint_bytes, is_int
from ..pipeline import consumed, random_seed
from ..tensors import Shape, Tensor, from_c_list, from_c_tensor


class LastBatchPolicy(enum.IntEnum):
    """DALI's nvidia.dali.plugin.base_iterator.LastBatchPolicy."""
    FILL = 0
    DROP = 1
    PARTIAL = 2

    @classmethod
    def _missing_(cls, value):
        # a policy's name as a string ("PARTIAL", "partial") is that policy
        if isinstance(value, str) and value.upper() in cls.__members__:
            return cls[value.upper()]
        return None


LAYOUT_NONE, LAYOUT_SHARDED, LAYOUT_STACKED = 0, 1, 2


def _tri(v, what):
    if v is None:
        return -1
    if v in (True, "yes"):
        return 1
    if v in (False, "no"):
        return 0
    raise errors.InvalidArgumentError("%s=%r (True or False)" % (what, v))


def global_batch(per_pipeline, ndevices, total_shards, layout):
    """The iterator's global batch for pipelines of per_pipeline samples each: the library's rule
    for a decorator's batch_size (sl_iter_settle), the same as `sluice run` and `sluice train`
    apply -- times the shards, unless one pipeline runs without a layout."""
    c = _c.IterConfig()
    _c.lib.sl_iter_config_init(byref(c))
    c.ndevices, c.total_shards, c.layout = ndevices, total_shards, layout
    c.filename = b"the pipelines"
    d = _c.PipelineDecorator(size=-1, layout=layout, batch_size=per_pipeline, num_threads=-1,
                             seed=-1, prefetch_queue_depth=-1, device_id=-1)
    s = _c.IterSettings()
    _c.lib.sl_iter_settings_init(byref(s))
    err = _c.Err()
    errors.check(_c.lib.sl_iter_settle(byref(c), byref(d), byref(s), None, byref(err)), err)
    return c.batch_size


class SlIterator(Owner):
    """sl_iter over pipelines whose graphs `graph_for(index, shard_id, num_shards)` returns."""

    def __init__(self, graph_for, devices, batch_size, num_threads=None, seed=-1,
                 prefetch_queue_depth=2, shard_offset=0, total_shards=0, output_map=None,
                 reader_name=None, size=-1, last_batch_policy=LastBatchPolicy.FILL,
                 last_batch_padded=False, prepare_first_batch=True, auto_reset=False,
                 layout=LAYOUT_SHARDED, checkpoint=None, global_order=False, device_seeds=None,
                 stream_priority=0):
        try:
            policy = LastBatchPolicy(last_batch_policy)
        except ValueError:
            raise errors.InvalidArgumentError("last_batch_policy=%r (FILL, DROP or PARTIAL)"
                                              % (last_batch_policy,)) from None
        if size is None:
            size = -1
        if not is_int(size) or size < -1 or size > INT64_MAX:
            raise errors.InvalidArgumentError("size=%r (a sample count, or -1)" % (size,))
        size = int(size)
        if reader_name is not None and not isinstance(reader_name, str):
            raise errors.ArgumentTypeError("reader_name=%r (a string)" % (reader_name,))
        if reader_name is not None:
            c_text(reader_name, "reader_name")
        if reader_name is not None and (size != -1 or last_batch_padded):
            raise errors.InvalidArgumentError("reader_name cannot go with size or "
                                              "last_batch_padded: they come from the reader")
        if len(devices) < 1 or len(devices) > _c.MAX_DEVICES:
            raise errors.InvalidArgumentError("%d devices (1..%d)" % (len(devices),
                                                                      _c.MAX_DEVICES))
        self._graph_for = graph_for
        self._graphs = {}
        self._exc = None
        self._owner_init(_c.lib.sl_iter_free, _c.lib.sl_iter_stop, _c.lib.sl_iter_exports)
        self.policy = policy
        c = self._cfg = _c.IterConfig()
        _c.lib.sl_iter_config_init(byref(c))
        self._build_cb = _c.BUILD_FN(self._build)
        c.build = self._build_cb
        c.ndevices = len(devices)
        for i, (kind, ident) in enumerate(devices):
            c.devices[i].kind, c.devices[i].id = kind, ident
        c.batch_size = batch_size
        # None: the library chooses for the len(devices) pipelines (sl_iter_config.num_threads)
        c.num_threads = _c.NUM_THREADS_AUTO if num_threads is None else num_threads
        # no seed: a random one, as a pipeline's (in global order every process and device count
        # must see the same order, so there it is 0)
        if seed is None or seed < 0:
            seed = 0 if global_order else random_seed()
        c.seed = seed
        if device_seeds is not None:  # one per pipeline, in device order
            self._seeds = (ctypes.c_uint64 * len(devices))(*device_seeds)
            c.device_seeds = self._seeds
        if isinstance(prefetch_queue_depth, dict):
            c.prefetch_cpu = prefetch_queue_depth.get("cpu_size", 2)
            c.prefetch_gpu = prefetch_queue_depth.get("gpu_size", 2)
        else:
            c.prefetch_cpu = c.prefetch_gpu = prefetch_queue_depth
        c.shard_offset, c.total_shards = shard_offset, total_shards
        c.stream_priority = stream_priority
        self._names = None
        if output_map is not None:
            names = list(output_map)
            for x in names:
                if not isinstance(x, str):
                    raise errors.ArgumentTypeError("output_map: %r is not a name (a string)"
                                                   % (x,))
                if not x:
                    raise errors.InvalidArgumentError("output_map: an empty name")
                c_text(x, "output_map")
            if len(set(names)) != len(names):
                raise errors.InvalidArgumentError("output_map has a name twice: %r" % (names,))
            self._names = names
            self._cnames = (c_char_p * len(names))(*[_c.s(x) for x in names])  # kept alive here
            c.num_outputs = len(names)
            c.output_map = self._cnames
        self._reader = _c.s(reader_name) if reader_name else None
        c.reader_name = self._reader
        c.size = size
        c.last_batch_policy = int(policy)
        c.last_batch_padded = 1 if last_batch_padded else 0
        c.prepare_first_batch = 1 if prepare_first_batch else 0
        c.auto_reset = _tri(auto_reset, "auto_reset")
        c.layout = layout
        c.caller_releases = 1
        c.global_order = 1 if global_order else 0
        self._resume = None
        if checkpoint is not None:
            self._resume = checkpoint_bytes(checkpoint, "checkpoint")
            c.resume_bytes = ctypes.cast(ctypes.c_char_p(self._resume), c_void_p)
            c.resume_size = len(self._resume)
        self._create()

    def _build(self, p, shard_id, num_shards, user, err):
        index = shard_id - self._cfg.shard_offset
        try:
            g = self._graph_for(index, shard_id, num_shards)
            self._graphs[index] = g
            g.replay(p)
            return _c.OK
        except BaseException as e:  # noqa: B902 -- raised again once sl_iter_create returns
            if self._exc is None:
                self._exc = e
            err.contents.msg = str(e).encode("utf-8", "replace")[:_c.ERRMSG_MAX - 1]
            return _c.EINVAL

    def _create(self):
        drain_deferred()
        err = _c.Err()
        it = c_void_p()
        try:
            st = _c.lib.sl_iter_create(byref(self._cfg), byref(it), byref(err))
        except BaseException:
            # a Ctrl-C handled as the call returned: the iterator it made, threads running,
            # would be lost
            if it.value:
                _c.lib.sl_iter_free(it)
            raise
        if st != _c.OK:
            exc, self._exc = self._exc, None
            if exc is not None:
                raise exc
            src = self._source_error()
            if src is not None:
                raise src
            errors.check(st, err)
        self._handle = it.value
        self.num_devices = _c.lib.sl_iter_num_devices(it)
        self.device_batch = _c.lib.sl_iter_device_batch(it)
        # each pipeline's CPU workers: as given, or as the library chose for them
        self.num_threads = _c.lib.sl_pipeline_num_threads(_c.lib.sl_iter_pipeline(it, 0))
        n = _c.lib.sl_iter_num_outputs(it)
        self.output_names = [_c.u(_c.lib.sl_iter_output_name(it, i)) for i in range(n)]
        self._max_zero_copy = max(0, _c.lib.sl_iter_max_held(it) - 1)
        self.copies = 0  # batches handed over as copies (too many others still out)
        self._exhausted = False

    def _source_error(self):
        for g in self._graphs.values():
            exc = g.source_error()
            if exc is not None:
                self._exhausted = isinstance(exc, StopIteration)
                return exc
        return None

    @property
    def _it(self):
        if not self._handle:
            raise errors.StateError("the iterator is closed")
        return self._handle

    def _sources(self):
        return [s for g in self._graphs.values() for s in g.sources]

    def _give_back(self):
        self._reclaim(_c.lib.sl_iter_release)

    def next(self):
        """The next step: per device, per output, a TensorList (None at the end of the epoch)."""
        me = threading.get_ident()
        out = self.hand_over(me, self.rows)
        # no call from here to the return (see hand_over())
        p = self._pending
        if p is not None and p[0] == me:
            self._pending = None
        return out

    @guarded("next()")
    def hand_over(self, me, convert):
        """The next step as convert(batch, hold, copy) makes it (from take()), or None at the
        end of the epoch. It stays pending for thread `me` (what that thread's next call returns
        instead of taking another) until the caller clears _pending with no call between that
        and its return, so that a Ctrl-C anywhere loses no batch."""
        out = self._made_before(me)
        if out is not None:
            return out
        taken = self.take(me)
        if taken is None:
            return None
        b, hold, copy = taken
        out = convert(b, hold, copy)
        if copy:
            # the copies stay pending, the batch goes back now (not when the last view goes); a
            # batch handed over without a copy stays pending as its hold alone, made again if
            # need be (views of it in _pending would tie the iterator to itself through arrays,
            # whose references to the batch Python's collector cannot see)
            self._pending = (me, hold, out)
            self._given_back(hold, _c.lib.sl_iter_release)
        return out

    @guarded("next()")
    def take(self, me=None):
        """The next batch, not yet wrapped: (batch, hold, copy) or None at the end of the epoch;
        the one a call of thread `me` took and never handed over, if there is one. The batch
        goes back once `hold` and every export of it are gone; `copy`: too many are out to hand
        this one over without a copy (rows() copies it)."""
        if me is None:
            me = threading.get_ident()
        hold = self._taken_before(me)
        if hold is None:
            if self._exhausted:
                return None
            drain_deferred()
            self._give_back()
            it = self._it
            self._wait(_c.lib.sl_iter_wait, it)
            st = _c.lib.sl_iter_next(it, byref(self._inflight))
            if st == _c.EOF:
                return None
            if st != _c.OK:
                src = self._source_error()
                if isinstance(src, StopIteration):
                    return None
                if src is not None:
                    raise src
                raise errors.from_status(st, _c.u(_c.lib.sl_iter_errmsg(self._it)))
            hold = self._hold(me)
        consumed(self._sources())
        b = c_void_p(hold._batch)
        if self.policy == LastBatchPolicy.PARTIAL:
            self._valid = [_c.lib.sl_iter_batch_valid(b, d) for d in range(self.num_devices)]
        # batches out: those with views in Python, and those given back whose DLPack exports a
        # framework still holds (this one included)
        copy = _c.lib.sl_iter_held(self._it) > self._max_zero_copy
        self.copies += copy
        return b, hold, copy

    @guarded("next()")
    def rows(self, b, hold, copy=False):
        """Batch b (from take()) as Tensor / TensorList views, per device, per output; copies
        with `copy` (step() then gives the batch back at once)."""
        out = []
        for d in range(self.num_devices):
            row = []
            for o in range(len(self.output_names)):
                row.append(self._shard(b, o, d, hold))
            out.append(row)
        if copy:
            out = [[x.copy() for x in row] for row in out]
        return out

    def _pipeline_of(self, index):
        """The C pipeline of local device `index` (the iterator's own)."""
        return _c.lib.sl_iter_pipeline(self._it, index)

    def valid_counts(self):
        """PARTIAL: how many samples of each device's part of the last step are real."""
        return list(self._valid)

    def _shard(self, b, o, d, hold):
        t = _c.Tensor()
        if _c.lib.sl_iter_shard(b, o, d, byref(t), None) == _c.OK:
            x = from_c_tensor(t, hold)
            x._export = (b, o, d, 0)
            return x
        tl = _c.lib.sl_iter_shard_list(b, o, d)
        return from_c_list(tl.contents, None, hold)

    @guarded("reset()")
    def reset(self):
        if self._exhausted:
            # a Python source ended the epoch: the pipelines start again from scratch
            self.close()
            consumed(self._sources())  # the sources start again from their beginning
            for src in self._sources():
                if hasattr(src, "next_epoch"):
                    src.next_epoch()  # (their SampleInfo and BatchInfo say the next epoch)
            self._graphs = {}
            self._resume = None
            self._cfg.resume_bytes = None
            self._cfg.resume_size = 0
            self._create()
            return
        _c.lib.sl_iter_reset(self._it)

    @guarded("len()")
    def __len__(self):
        return max(0, _c.lib.sl_iter_len(self._it))

    @property
    @guarded("size")
    def size(self):
        return _c.lib.sl_iter_size(self._it)

    @property
    @guarded("epoch")
    def epoch(self):
        return _c.lib.sl_iter_epoch(self._it)

    @property
    @guarded("step")
    def step(self):
        return _c.lib.sl_iter_step(self._it)

    @guarded("checkpoints()")
    def save(self, extra=b""):
        ptr, size = c_void_p(), ctypes.c_size_t()
        if _c.lib.sl_iter_save(self._it, extra or None, len(extra or b""), byref(ptr),
                               byref(size)):
            raise errors.from_status(_c.EINVAL, _c.u(_c.lib.sl_iter_errmsg(self._it)))
        return _c.take_bytes(ptr, size.value)

    @guarded("checkpoints()")
    def resumed_extra(self):
        size = ctypes.c_size_t()
        ptr = _c.lib.sl_iter_resumed_extra(self._it, byref(size))
        return ctypes.string_at(ptr, size.value) if ptr else b""

    @guarded("close()")
    def close(self):
        """Stops the pipelines and frees them (their memory is kept while views of their batches
        live)."""
        self._close_handle()

    def __del__(self):
        try:
            self._free_all()
        except Exception:
            pass


def stacked(t):
    """t (B, ...) seen as (1, B, ...): one device's slice of a stacked output."""
    ex = t._export
    return Tensor(t._ptr, t._dtype, Shape((1,) + tuple(t._shape)), t._device, t._layout, t,
                  None if ex is None else ex[:3] + (_c.DLPACK_STACKED,))
