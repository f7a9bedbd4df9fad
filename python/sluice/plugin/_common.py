# SPDX-License-Identifier: Apache-2.0
"""What the plugins share: pipelines' devices and shards, DALI's argument checks, and the
iterator protocol (len, size, reset, StopIteration, auto_reset, checkpoints) over SlIterator."""

import threading
import typing
import weakref

from .. import _c, errors
from .._owner import guarded
from ._iterator import LAYOUT_SHARDED, LastBatchPolicy, SlIterator, global_batch


def _int_arg(rec, name):
    for k, v in rec.args:
        if k == name:
            try:
                return int(v)
            except ValueError:
                return None
    return None


def reader_shards(pipes, reader_name):
    """(shard_offset, total_shards) of the pipelines' reader, from what their definitions pass
    it (num_shards, shard_id); (0, len(pipes)) without one."""
    ids, total = [], None
    for i, p in enumerate(pipes):
        readers = p._graph.readers
        rec = None
        for name, r in readers:
            if reader_name is None or name == reader_name:
                rec = r
                break
        if rec is None:
            if reader_name is not None:
                raise errors.InvalidArgumentError("reader_name=%r: pipeline %d has no reader of "
                                                  "that name (it has %s)" % (
                                                      reader_name, i,
                                                      [n for n, _ in readers] or "none"))
            return 0, len(pipes)
        n = _int_arg(rec, "num_shards") or 1
        sid = _int_arg(rec, "shard_id") or 0
        if total is not None and n != total:
            raise errors.InvalidArgumentError("pipelines 0 and %d give their reader num_shards %d "
                                              "and %d" % (i, total, n))
        total = n
        ids.append(sid)
    if ids != list(range(ids[0], ids[0] + len(ids))):
        raise errors.InvalidArgumentError("the pipelines' shard_id values %s are not consecutive "
                                          "(pipeline i must read shard first + i)" % ids)
    return ids[0], total


def pipeline_device(p):
    return (_c.DEVICE_CPU, 0) if p.device_id is None else (_c.DEVICE_CUDA, p.device_id)


class BaseIterator:
    """DALI's iterator protocol over an SlIterator made by subclasses (self._it)."""

    def _init_from_pipelines(self, pipelines, output_map, size, reader_name, auto_reset,
                             last_batch_padded, last_batch_policy, prepare_first_batch,
                             checkpoint=None, layout=LAYOUT_SHARDED, global_order=False):
        from ..pipeline import Pipeline
        if isinstance(pipelines, Pipeline):
            pipelines = [pipelines]
        pipelines = list(pipelines)
        if not pipelines:
            raise errors.InvalidArgumentError("no pipelines")
        for i, p in enumerate(pipelines):
            if not isinstance(p, Pipeline):
                raise errors.ArgumentTypeError("pipelines[%d] is a %s, not a sluice Pipeline"
                                               % (i, type(p).__name__))
            # a Pipeline subclass (define_graph) that was not built is traced here, as DALI's
            # iterators build every pipeline they are given
            p._define_from_subclass()
            p._require_graph()
            if p._restore is not None:
                raise errors.InvalidArgumentError(
                    "pipelines[%d] was given checkpoint=: an iterator makes its own pipelines from "
                    "the definition, so pass the iterator's checkpoints() to the iterator's "
                    "checkpoint= instead" % i)
            if p._taken:
                raise errors.StateError(
                    "pipelines[%d] has already handed out %d batches with run(): an iterator makes "
                    "its own pipelines from the definition and would start again at the first "
                    "batch; give it a pipeline that has not been run" % (i, p._taken))
            # one definition listed twice runs in two of the iterator's pipelines at once: its
            # Python sources (one object each) cannot feed both
            same = [j for j in range(i) if pipelines[j] is p]
            if same and p._sources():
                raise errors.StateError(
                    "pipelines[%d] is pipelines[%d], and its fn.external_source sources cannot "
                    "feed two pipelines at once: define one pipeline per device" % (i, same[0]))
            if p._feeding() is not None and p._sources():
                raise errors.StateError(
                    "pipelines[%d] already runs in another iterator, and its fn.external_source "
                    "sources cannot feed two at once: define another pipeline" % i)
        bs = {p.batch_size for p in pipelines}
        if len(bs) != 1:
            raise errors.InvalidArgumentError("the pipelines' batch sizes differ: %s" % sorted(bs))
        B = bs.pop()
        if B < 1:
            raise errors.InvalidArgumentError("the pipelines have no batch_size")
        if output_map is None or isinstance(output_map, str):
            raise errors.ArgumentTypeError("output_map: a list of output names")
        n_out = len(pipelines[0]._graph.outputs)
        if len(output_map) != n_out:
            raise errors.InvalidArgumentError("output_map has %d names, the pipelines return %d"
                                              % (len(output_map), n_out))
        offset, total = reader_shards(pipelines, reader_name)
        # the iterator runs its pipelines with one thread count and prefetch depth; each keeps
        # its own seed, as in DALI (pipelines given none draw one each, or share the iterator's).
        # Pipelines given no thread count get the library's choice for as many pipelines as
        # there are here, all running at once (sl_iter_config.num_threads), set below.
        chosen = all(p._threads_chosen for p in pipelines)
        for attr, name in (("num_threads", "num_threads"), ("_prefetch", "prefetch_queue_depth"),
                           ("default_cuda_stream_priority", "default_cuda_stream_priority")):
            if attr == "num_threads" and chosen:
                continue
            values = [getattr(p, attr) for p in pipelines]
            if len(set(values)) != 1:
                raise errors.InvalidArgumentError(
                    "the pipelines' %s differ (%s): an iterator runs all of them with one"
                    % (name, ", ".join(map(str, values))))
        seeds = [p.seed for p in pipelines]
        if all(x < 0 for x in seeds):
            seeds = None
        else:
            seeds = [p.resolved_seed() for p in pipelines]
        # the iterator runs the definitions in pipelines of its own: one built ahead of time
        # stops here (what its Python sources gave it is given again to the iterator's), and
        # may not run beside the iterator while they share those sources
        for p in pipelines:
            p._shut()
        p0 = pipelines[0]
        self.batch_size = B
        self._pipes = pipelines
        self._it = SlIterator(
            lambda index, shard, nshards: pipelines[index]._graph,
            [pipeline_device(p) for p in pipelines],
            global_batch(B, len(pipelines), total, layout),
            None if chosen else p0.num_threads, p0.seed,
            p0.prefetch_queue_depth, offset, total, output_map, reader_name, size,
            last_batch_policy, last_batch_padded, prepare_first_batch, auto_reset, layout,
            checkpoint, global_order, device_seeds=seeds,
            stream_priority=p0.default_cuda_stream_priority)
        if chosen:
            threads = self._it.num_threads
            for p in pipelines:
                p.num_threads = threads
        for p in pipelines:
            p._feeds = weakref.ref(self)
        self.output_map = list(output_map)
        self._auto_reset = auto_reset in (True, "yes")
        self._ended = False
        self._ever = False

    def _guard(self, what):
        return self._it._guard(what)

    # -- protocol
    def __iter__(self) -> "BaseIterator":
        if self._ended and not self._auto_reset:
            self.reset()
        return self

    def __next__(self) -> typing.Any:
        """The next step in the framework's form; StopIteration at the end of the epoch."""
        me = threading.get_ident()
        out = self._next_of(me)
        # from here to the return no call, so no place for a Ctrl-C: the step is either
        # returned or still pending for this thread's next call (SlIterator.hand_over)
        it = self._it
        p = it._pending
        if p is not None and p[0] == me:
            it._pending = None
        return out

    next = __next__

    @guarded("next()")
    def _next_of(self, me):
        self._ever = True
        out = self._next_step(me)
        if out is None:
            self._ended = not self._auto_reset
            raise StopIteration
        return out

    def _next_step(self, me):
        """The next step in the framework's form, None at the end of the epoch."""
        return self._it.hand_over(me, self._hand_over)

    def _hand_over(self, b, hold, copy):
        return self._convert(self._it.rows(b, hold, copy))

    @guarded("reset()")
    def reset(self) -> None:
        """Starts the next epoch (ignored, with a warning in the log, in the middle of one)."""
        self._ended = False
        self._it.reset()

    def __len__(self) -> int:
        return len(self._it)

    @property
    def size(self) -> int:
        """DALI's iterator.size: samples per shard in this epoch."""
        return self._it.size

    def checkpoints(self) -> bytes:
        """The iterator's state (reader positions, RNG states, epoch counters) as bytes; pass
        it as checkpoint=... to an iterator over the same pipelines to continue there."""
        return self._it.save()

    def close(self) -> None:
        """Stops the pipelines and frees them (their memory is kept while views of their batches
        live)."""
        self._it.close()


__all__ = ["BaseIterator", "LastBatchPolicy"]
