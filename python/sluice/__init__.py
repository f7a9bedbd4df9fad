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
from .pipeline import DataNode, Pipeline, pipeline_def
from .tensors import Tensor, TensorCPU, TensorGPU, TensorList, TensorListCPU, TensorListGPU
from . import types  # noqa: F401 -- sluice.types
from . import tfrecord  # noqa: F401 -- sluice.tfrecord (DALI's nvidia.dali.tfrecord)
from . import fn  # noqa: F401 -- sluice.fn
from . import math  # noqa: F401 -- sluice.math (DALI's nvidia.dali.math)

__version__ = _c.u(_c.lib.sl_version_string())

__all__ = ["pipeline_def", "Pipeline", "DataNode", "Tensor", "TensorCPU", "TensorGPU",
           "TensorList", "TensorListCPU", "TensorListGPU", "Error", "ArgumentTypeError",
           "InvalidArgumentError", "NotFoundError", "ReadError", "FormatError", "ChecksumError",
           "NotSupportedError", "OutOfMemoryError", "DeviceError", "StateError", "SourceError",
           "PipelineSyntaxError", "fn", "types", "tfrecord", "__version__"]
