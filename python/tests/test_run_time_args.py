# SPDX-License-Identifier: Apache-2.0
"""When an argument value is refused, as DALI refuses it: values of arguments DALI takes per sample
(its tensor arguments), given as literals, are DALI's to check when the op runs -- so a program
that builds the pipeline and catches the error from run() (DALI's test_pad does) gets it there, a
RuntimeError in DALI's words; what DALI checks when it builds still fails build(). In the forms
DALI's tests write: pipeline_def, build() then run(), and the ops API."""

import re

import numpy as np
import pytest

import sluice.fn as fn
import sluice.ops as ops
import sluice.types as types
from sluice import Pipeline, errors, pipeline_def


def data():
    return types.Constant(np.arange(24, dtype=np.float32).reshape(2, 3, 4), layout="HWC")


@pytest.mark.parametrize("make,message", [
    (lambda: fn.pad(data(), axis_names="H", align=0),
     "Values of `align` argument must be positive."),
    (lambda: fn.pad(data(), axes=[0], shape=[-2]), "pad: shape value -2"),
    (lambda: fn.random.uniform(range=[1.0, -1.0]), "range must be [lo, hi] with lo < hi"),
    (lambda: fn.random.normal(stddev=-1.0), "random.normal: stddev -1 is negative"),
    (lambda: fn.random.coin_flip(probability=2.0), "probability 2 outside [0, 1]"),
    (lambda: fn.random.beta(alpha=-1.0), "random.beta: alpha -1 and beta 1 must be > 0"),
    (lambda: fn.jpeg_compression_distortion(fn.cast(data(), dtype=types.UINT8), quality=101),
     "jpeg_compression_distortion: quality 101 (1 to 100)"),
    (lambda: fn.reshape(data(), src_dims=[2, 0, 1], rel_shape=[1, -1]),
     "``src_dims`` and ``rel_shape`` have different lengths: 3 vs 2"),
])
def test_a_value_dali_checks_as_it_runs_fails_run_not_build(make, message):
    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def p():
        return make()

    pipe = p()
    pipe.build()  # builds, as DALI's does
    for _ in range(2):  # and every run fails the same way
        with pytest.raises(RuntimeError, match=re.escape(message)) as e:
            pipe.run()
        assert isinstance(e.value, errors.InvalidArgumentError)


def test_the_ops_api_and_a_pipeline_of_its_own():
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    pad = ops.Pad(axis_names="H", align=0)
    with pipe:
        pipe.set_outputs(pad(data()))
    pipe.build()
    with pytest.raises(RuntimeError, match=re.escape("`align` argument must be positive.")):
        pipe.run()


def test_what_dali_checks_when_it_builds_still_fails_build():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def p():
        x = data()
        return fn.pad(x, align=0), fn.pad(x, axes=[0], axis_names="H")

    with pytest.raises(RuntimeError, match="pad: give axes or axis_names, not both"):
        p().build()


def test_values_in_range_run():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def p():
        return fn.pad(data(), axis_names="H", align=4), fn.random.uniform(range=[1.0, 2.0])

    padded, u = p().run()
    assert padded.at(0).shape == (4, 3, 4)
    np.testing.assert_array_equal(padded.at(1)[:2],
                                  np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    assert (padded.at(1)[2:] == 0).all() and 1.0 <= float(u.at(0)) < 2.0
