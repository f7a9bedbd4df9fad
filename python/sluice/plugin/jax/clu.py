# SPDX-License-Identifier: Apache-2.0
"""sluice.plugin.jax.clu: DALI's nvidia.dali.plugin.jax.clu on sluice -- the JAX iterator with
Common Loop Utils' PeekableDatasetIterator interface (T5X and other CLU loops take it):

    from sluice.plugin.jax.clu import peekable_data_iterator

    @peekable_data_iterator(output_map=["images", "labels"], reader_name="reader")
    def iterator_fn():
        jpegs, labels = fn.readers.file(file_root=root, name="reader")
        return fn.decoders.image(jpegs, device="mixed"), labels.gpu()

    it = iterator_fn(batch_size=128)
    it.element_spec          # {"images": ArraySpec(dtype, shape), "labels": ...}
    first = it.peek()        # the next step, not consumed: next(it) returns it
    later = it.peek_async()  # a concurrent.futures.Future of peek()

The outputs must keep their shapes and types from step to step (the element spec is the first
step's); a step that differs is a ValueError naming the output. ArraySpec is CLU's where CLU is
installed, else a frozen dataclass with the same fields."""

import concurrent.futures
import dataclasses
import threading
import typing

from . import DALIGenericIterator, LastBatchPolicy, data_iterator_impl

try:
    from clu.data.dataset_iterator import ArraySpec
except ImportError:  # CLU not installed: the same two fields
    @dataclasses.dataclass(frozen=True)
    class ArraySpec:
        """The shape and element type of one output of a step (CLU's ArraySpec)."""
        dtype: typing.Any
        shape: tuple

__all__ = ["DALIGenericPeekableIterator", "peekable_data_iterator", "ArraySpec"]


def _spec(array) -> ArraySpec:
    return ArraySpec(dtype=array.dtype, shape=tuple(array.shape))


class DALIGenericPeekableIterator(DALIGenericIterator):
    """DALIGenericIterator with peek(), peek_async() and element_spec, as DALI's: construction
    takes the first step (to know the element spec) and keeps it for the first next()."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._mutex = threading.Lock()
        self._pool = None
        self._peeked = None
        self._element_spec = None
        first = self.peek()
        self._element_spec = {name: _spec(first[name]) for name in self.output_map}

    def _checked(self, step):
        if self._element_spec is not None:
            for name, array in step.items():
                if _spec(array) != self._element_spec[name]:
                    raise ValueError(
                        "output %r changed its shape or type: %s, the first step's %s (a "
                        "peekable iterator's outputs keep theirs)"
                        % (name, _spec(array), self._element_spec[name]))
        return step

    def _take(self):
        """The next step: the peeked one if any, else the iterator's (StopIteration at the end)."""
        if self._peeked is None:
            return self._checked(DALIGenericIterator.__next__(self))
        step, self._peeked = self._peeked, None
        return step

    def __next__(self) -> dict:
        with self._mutex:
            return self._take()

    next = __next__

    def __iter__(self) -> "DALIGenericPeekableIterator":
        if self._peeked is None:
            super().__iter__()
        return self

    def peek(self) -> dict:
        """The next step, without consuming it (the next next() or peek() returns it)."""
        with self._mutex:
            if self._peeked is None:
                self._peeked = self._take()
            return self._peeked

    def peek_async(self) -> concurrent.futures.Future:
        """peek() on a thread of the iterator's own: a Future of the next step. Wait for it before
        the next next() or peek() to be sure they see the same step."""
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        return self._pool.submit(self.peek)

    @property
    def element_spec(self) -> dict:
        """{output name: ArraySpec(dtype, shape)} of every step."""
        return self._element_spec


def peekable_data_iterator(pipeline_fn: typing.Callable | None = None,
                           output_map: typing.Sequence[str] = (), size: int = -1,
                           reader_name: str | None = None, auto_reset: bool | str = False,
                           last_batch_padded: bool = False,
                           last_batch_policy: LastBatchPolicy = LastBatchPolicy.FILL,
                           prepare_first_batch: bool = True, sharding: typing.Any = None,
                           devices: typing.Any = None,
                           global_order: bool = False) -> typing.Callable:
    """sluice.plugin.jax.data_iterator making DALIGenericPeekableIterator (DALI's decorator of
    the same name): the same arguments, and the decorated function called the same way."""
    return data_iterator_impl(DALIGenericPeekableIterator, pipeline_fn, output_map, size,
                              reader_name, auto_reset, last_batch_padded, last_batch_policy,
                              prepare_first_batch, sharding, devices, global_order)
