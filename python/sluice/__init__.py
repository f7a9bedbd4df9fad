# SPDX-License-Identifier: Apache-2.0
"""sluice: DALI-style data pipelines on a C engine, for JAX, PyTorch and NumPy programs.

    from sluice import pipeline_def
    import sluice.fn as fn
    import sluice.types as types

    @pipeline_def(batch_size=200, num_threads=4, device_id=None)
    def mnist(path):
        jpegs, labels = fn.readers.caffe2(path=path, random_shuffle=True, name="reader")
        images = fn.decoders.image(jpegs, device="mixed", output_type=types.GRAY)
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, std=[255.0],
                                          output_layout="CHW")
        return fn.reshape(images, shape=[784]), labels

    pipe = mnist("data/training")
    pipe.build()
    images, labels = pipe.run()          # TensorList objects; numpy.from_dlpack(images) etc.

Iterators for frameworks: sluice.plugin.jax (data_iterator, DALIGenericIterator),
sluice.plugin.pytorch (DALIGenericIterator) and sluice.plugin.numpy. docs/python.md has the rest."""

from . import _c
from .errors import (ArgumentTypeError, ChecksumError, DeviceError, Error, FormatError,
                     InvalidArgumentError, NotFoundError, NotSupportedError, OutOfMemoryError,
                     PipelineSyntaxError, ReadError, SourceError, StateError)
from .data_node import DataNode, newaxis
from .pipeline import Pipeline, pipeline_def
from .tensors import Tensor, TensorCPU, TensorGPU, TensorList, TensorListCPU, TensorListGPU
from . import types  # noqa: F401 -- sluice.types
from . import tfrecord  # noqa: F401 -- sluice.tfrecord (DALI's nvidia.dali.tfrecord)
from . import fn  # noqa: F401 -- sluice.fn
from . import ops  # noqa: F401 -- sluice.ops (DALI's legacy nvidia.dali.ops)
from . import backend  # noqa: F401 -- sluice.backend (DALI's nvidia.dali.backend classes)
from . import backend_impl  # noqa: F401 -- the module DALI's backend re-exports, same classes
from . import pipeline as _pipeline_module
from . import _pipeline_experimental as _experimental
from .external import BatchInfo as _BatchInfo, SampleInfo as _SampleInfo

# `from sluice.pipeline.experimental import pipeline_def`, as DALI's nvidia.dali.pipeline.experimental
_pipeline_module.experimental = _experimental
import sys as _sys  # noqa: E402
_sys.modules[__name__ + ".pipeline.experimental"] = _experimental
types.SampleInfo, types.BatchInfo = _SampleInfo, _BatchInfo
del _sys
from . import math  # noqa: F401 -- sluice.math (DALI's nvidia.dali.math)
from . import experimental  # noqa: F401,E402 -- sluice.experimental (multi_crop)

__version__ = _c.u(_c.lib.sl_version_string())


def build_info() -> str:
    """What the loaded library was built with: its optional back ends (CUDA, nvJPEG, NCCL, MPI)
    and the libraries under it with their versions, then the back ends it lacks; one line, as
    `sluice --version` prints it. Also says where the library was loaded from."""
    return "%s; library: %s" % (_c.u(_c.lib.sl_build_info()), _c.lib._name)

__all__ = ["pipeline_def", "Pipeline", "DataNode", "newaxis", "Tensor", "TensorCPU", "TensorGPU",
           "TensorList", "TensorListCPU", "TensorListGPU", "Error", "ArgumentTypeError",
           "InvalidArgumentError", "NotFoundError", "ReadError", "FormatError", "ChecksumError",
           "NotSupportedError", "OutOfMemoryError", "DeviceError", "StateError", "SourceError",
           "PipelineSyntaxError", "fn", "ops", "types", "tfrecord", "backend", "backend_impl",
           "build_info",
           "__version__"]


def __getattr__(name):
    # sluice.auto_aug, imported when first named (as `import nvidia.dali.auto_aug` is separate)
    if name == "auto_aug":
        import importlib
        return importlib.import_module(__name__ + ".auto_aug")
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
