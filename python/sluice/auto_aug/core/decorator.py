# SPDX-License-Identifier: Apache-2.0
"""The `@augmentation` decorator, as DALI's nvidia.dali.auto_aug.core.augmentation."""

from ._augmentation import Augmentation


def augmentation(function=None, *, mag_range=None, randomly_negate=None, mag_to_param=None,
                 param_device=None, name=None, augmentation_cls=None, as_param=None):
    """Makes `function(sample, parameter, **extra)`, written with sluice operators, an
    augmentation the schemes can run: called with `magnitude_bin` and `num_magnitude_bins`
    instead of the parameter, which is `mag_to_param(magnitudes[bin] * (-1) ** random_sign)` with
    `magnitudes = linspace(*mag_range, num_magnitude_bins)` (or mag_range itself, an array).
    Without mag_range the parameter is None. `randomly_negate` negates the magnitude for a random
    half of the samples; `param_device` is where the parameter is: "cpu" (the default), "gpu",
    or "auto" (where the samples are); `name` defaults to the function's. `as_param` is an older
    name of `mag_to_param`."""

    def wrap(f):
        return (augmentation_cls or Augmentation)(f, mag_range=mag_range,
                                                  mag_to_param=mag_to_param, as_param=as_param,
                                                  randomly_negate=randomly_negate,
                                                  param_device=param_device, name=name)

    if function is None:
        return wrap
    if isinstance(function, Augmentation):
        raise TypeError("augmentation `%s`: The `@augmentation` was applied to already "
                        "decorated Augmentation. Use its .augmentation(...) method to change its "
                        "settings" % function.name)
    if not callable(function):
        raise TypeError("@augmentation decorates a function, not %r" % (function,))
    return wrap(function)
