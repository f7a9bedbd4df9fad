# SPDX-License-Identifier: Apache-2.0
"""The parts of DALI's ``Pipeline`` class that older programs and DALI's own tests use, on top of
sluice's Pipeline: subclasses that define the graph in ``define_graph()`` and feed data in
``iter_setup()`` with ``feed_input()``; ``Pipeline.current()``; the scheduling calls
``schedule_run()``, ``share_outputs()``, ``release_outputs()`` and ``outputs()``; and
``serialize()``, which sluice refuses (a sluice pipeline is Python or pipeline text,
docs/pipelines.md, not DALI's protobuf)."""

import typing

from . import errors


class PipelineAPI:
    """Mixed into sluice.Pipeline."""

    @staticmethod
    def current() -> "typing.Any":
        """The pipeline being defined on this thread (inside ``with pipe:``, a pipeline_def call
        or define_graph()), or None (DALI's Pipeline.current())."""
        from ._state import current
        return current()

    # -- the graph from a subclass
    def define_graph(self) -> typing.Any:
        """Override in a subclass: makes the ops (legacy ``sluice.ops`` objects or ``fn``
        calls) and returns the outputs. build() calls it once."""
        raise NotImplementedError("define_graph: a Pipeline subclass defines its graph here, or "
                                  "use `with pipe:` and set_outputs(), or @pipeline_def")

    def iter_setup(self) -> None:
        """Override in a subclass: called before each batch is taken (feed_input goes here)."""

    def _defines_graph(self):
        return type(self).define_graph is not PipelineAPI.define_graph

    def _define_from_subclass(self):
        """Traces define_graph() once, as DALI's build() does."""
        from .pipeline import trace
        if (self._graph is None or self._graph.outputs is None) and self._defines_graph():
            trace(self, lambda: self.define_graph(), (), {})

    def _calls_iter_setup(self):
        return type(self).iter_setup is not PipelineAPI.iter_setup

    # -- feed_input
    def _feed_source(self, data_node):
        from .data_node import DataNode
        g = self._graph
        if g is None:
            raise errors.StateError("feed_input: the pipeline has no graph yet (define it first)")
        if isinstance(data_node, DataNode):
            src = g.feeds.get(data_node._id)
            what = data_node.name
        elif isinstance(data_node, str):
            srcs = [s for s in g.sources if s.label == data_node]
            src = srcs[0] if srcs else None
            what = repr(data_node)
        else:
            raise errors.ArgumentTypeError("feed_input: give the external_source's output or its "
                                           "name, not a %s" % type(data_node).__name__)
        if src is None:
            names = sorted({s.label for s in g.sources if s.kind == "feed"})
            raise errors.NotFoundError("feed_input: %s is no fn.external_source of this pipeline "
                                       "(those without a source: %s)"
                                       % (what, ", ".join(names) or "none"))
        if src.kind != "feed":
            raise errors.StateError("feed_input: external_source %r has a source of its own; "
                                    "only one made without a source takes feed_input"
                                    % src.label)
        return src

    def feed_input(self, data_node: typing.Any, data: typing.Any, layout: str | None = None,
                   cuda_stream: typing.Any = None, use_copy_kernel: bool = False) -> None:
        """The next batch of an fn.external_source made without a source (by its output node or
        its name): a list of samples, or one array whose first axis is the batch. Batches are used
        in the order fed, one per run()."""
        if cuda_stream is not None:
            raise errors.NotSupportedError("feed_input: cuda_stream (data is fed from the CPU)")
        if use_copy_kernel:
            raise errors.NotSupportedError("feed_input: use_copy_kernel (data is fed from the "
                                           "CPU)")
        self._define_from_subclass()
        src = self._feed_source(data_node)
        if layout is not None and not isinstance(layout, str):
            raise errors.ArgumentTypeError("feed_input: layout=%r (a string)" % (layout,))
        src.feed(data, layout)

    def _check_fed(self):
        """Refuses a run() that would wait for ever on feed_input data that never comes."""
        for src in self._sources():
            if getattr(src, "kind", None) == "feed" and src.fed <= self._taken and \
                    not src.blocking:  # (blocking=True: run() waits for another thread's feed)
                raise errors.StateError(
                    "run(): batch %d needs data from feed_input for external_source %r (fed "
                    "%d batches so far)" % (self._taken, src.label, src.fed))

    def _cancel_feeds(self):
        for src in self._sources():
            # (python_function callables too); a parallel source stops waiting for its workers
            if getattr(src, "kind", None) == "feed" or getattr(src, "parallel", False):
                src.cancel()

    # -- DALI's scheduling calls
    def schedule_run(self) -> None:
        """DALI's first half of run(): here it only starts the pipeline (build() if need be);
        the batch is taken by share_outputs() or outputs()."""
        if not self._built:
            self.build()

    def share_outputs(self) -> tuple:
        """The next batch (as run(); its buffers are the pipeline's until the views go)."""
        return self.run()

    def release_outputs(self) -> None:
        """DALI's release of shared outputs: sluice gives a batch back when its last view goes,
        so there is nothing to do."""

    # -- DALI's read-only properties
    @property
    def max_batch_size(self) -> int:
        """The most samples a batch may have (DALI's max_batch_size): batch_size. An external
        source that gives fewer makes a shorter batch."""
        return self.batch_size

    @property
    def num_outputs(self) -> int:
        """How many outputs the pipeline has (defining it first, for a subclass)."""
        self._define_from_subclass()
        g = self._graph
        return len(g.outputs) if g is not None and g.outputs is not None else 0

    @property
    def cpu_queue_size(self) -> int:
        """Batches the CPU stage prepares ahead (prefetch_queue_depth's cpu_size)."""
        return self._prefetch[0]

    @property
    def gpu_queue_size(self) -> int:
        """Batches the GPU stage prepares ahead (prefetch_queue_depth's gpu_size)."""
        return self._prefetch[1]

    @property
    def enable_checkpointing(self) -> bool:
        """The enable_checkpointing the pipeline was made with (sluice can always checkpoint)."""
        return self._checkpointing

    def is_restored_from_checkpoint(self) -> bool:
        """Whether the pipeline was made from a checkpoint (Pipeline(checkpoint=...))."""
        return self._restore is not None

    # -- serialization
    def serialize(self, *args, **kwargs) -> typing.NoReturn:
        """Refused: sluice does not write DALI's serialized (protobuf) pipelines."""
        raise errors.NotSupportedError(
            "serialize(): sluice does not write DALI's serialized pipelines (protobuf); keep the "
            "Python definition, or write the pipeline as text (docs/pipelines.md)")

    @classmethod
    def deserialize(cls, *args, **kwargs) -> typing.NoReturn:
        """Refused: sluice does not read DALI's serialized (protobuf) pipelines."""
        raise errors.NotSupportedError(
            "Pipeline.deserialize(): sluice does not read DALI's serialized pipelines (protobuf)")
