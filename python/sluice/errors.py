# SPDX-License-Identifier: Apache-2.0
"""sluice's exceptions: one hierarchy under sluice.Error, each carrying the library's status code
(``.status``, e.g. ``"SL_EFORMAT"``) and its message, which names the file, record, op or pipeline
line involved. Every one is a RuntimeError, as DALI's errors from a pipeline are (its tests catch
RuntimeError); where Python has a more precise built-in exception the class derives from it too,
so ``except ValueError`` and ``except FileNotFoundError`` work as a Python user expects."""

from . import _c


class Error(RuntimeError):
    """Any error the sluice library reports."""

    status = "SL_ERROR"

    def __init__(self, message, status=None):
        super().__init__(message)
        if status is not None:
            self.status = status


class InvalidArgumentError(Error, ValueError):
    """A value the library refuses: an argument out of range, a setting that contradicts another."""
    status = "SL_EINVAL"


class ArgumentTypeError(Error, TypeError):
    """An argument of the wrong type, or one an op does not take (found at definition time)."""
    status = "SL_EINVAL"


class PipelineSyntaxError(Error, ValueError):
    """Pipeline text outside the accepted syntax (docs/pipelines.md), named by line and column."""
    status = "SL_ESYNTAX"


class NotFoundError(Error, FileNotFoundError):
    """A file, store, record, reader or output that is not there."""
    status = "SL_ENOENT"


class ReadError(Error, OSError):
    """A file or store that could not be read or written (the system's reason in the message)."""
    status = "SL_EIO"


class FormatError(Error, ValueError):
    """Malformed data: a corrupt record, JPEG or file."""
    status = "SL_EFORMAT"


class ChecksumError(FormatError):
    """Data whose checksum does not match: a damaged TFRecord or checkpoint."""
    status = "SL_ECHECKSUM"


class NotSupportedError(Error, NotImplementedError):
    """DALI behaviour sluice does not have (the message says what to use instead, where any)."""
    status = "SL_ENOTSUP"


class OutOfMemoryError(Error, MemoryError):
    """Memory ran out, or a batch would pass its limit (max_batch_bytes, docs/design.md)."""
    status = "SL_ENOMEM"


class DeviceError(Error, RuntimeError):
    """CUDA, NCCL or MPI reported an error."""
    status = "SL_ECUDA"


class StateError(Error, RuntimeError):
    """A call at the wrong time (e.g. run() before build(), too many batches held)."""
    status = "SL_ESTATE"


class SourceError(Error, RuntimeError):
    """A Python source of fn.external_source raised; the original exception is its __cause__."""
    status = "SL_EINVAL"


_BY_STATUS = {
    _c.EINVAL: InvalidArgumentError, _c.ESYNTAX: PipelineSyntaxError, _c.ENOENT: NotFoundError,
    _c.EIO: ReadError, _c.EFORMAT: FormatError, _c.ECHECKSUM: ChecksumError,
    _c.ENOTSUP: NotSupportedError, _c.ENOMEM: OutOfMemoryError, _c.ECUDA: DeviceError,
    _c.ENCCL: DeviceError, _c.EMPI: DeviceError, _c.ESTATE: StateError, _c.ECLOSED: StateError,
    _c.ETIMEOUT: Error,
}


def from_status(status, message):
    """The exception for a library status code and message."""
    cls = _BY_STATUS.get(status, Error)
    name = _c.u(_c.lib.sl_status_name(status))
    return cls(message or _c.u(_c.lib.sl_status_str(status)), name)


def check(status, err=None, where=None):
    """Raises the exception for a failed call (status < 0); returns status otherwise."""
    if status < 0:
        msg = err.text if err is not None else ""
        if where:
            msg = "%s: %s" % (where, msg) if msg else where
        raise from_status(status, msg)
    return status
