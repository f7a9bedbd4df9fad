# SPDX-License-Identifier: Apache-2.0
"""The Augmentation wrapper (what `@augmentation` makes) and signed magnitude bins, as DALI's
nvidia.dali.auto_aug.core has them.

An augmentation is a function `op(sample, parameter, **extra)` built from sluice operators, with a
magnitude range: `num_magnitude_bins` magnitudes spaced evenly over `mag_range` (float32, as
numpy's linspace), optionally negated at random per sample, turned into parameters by
`mag_to_param` (DALI's name; `as_param` is accepted for it).
Every parameter of every bin is computed once, in numpy, and kept in a constant table; each
sample's parameter is the table's row at its (signed) bin, looked up per sample
(`types.Constant(table)[index]`)."""

import warnings

import numpy as np

from ... import fn, types
from ...data_node import DataNode as _DataNode
from ._args import MissingArgException, accepted_kwargs, missing_kwargs, num_positional


class _Unset:
    """A default that tells `kwarg=None` from a kwarg not given."""


class _SignedMagnitudeBin:
    """A magnitude bin with a random sign per sample: index 2 * bin + sign into the table of
    signed magnitudes [m0, -m0, m1, -m1, ...]."""

    def __init__(self, magnitude_bin, random_sign=None, seed=None, shape=None):
        if not isinstance(magnitude_bin, (int, np.integer, _DataNode)) or \
                isinstance(magnitude_bin, bool):
            raise TypeError("magnitude_bin must be an int or an op output of ints from "
                            "[0, num_magnitude_bins - 1], got %r" % (magnitude_bin,))
        if isinstance(magnitude_bin, np.integer):
            magnitude_bin = int(magnitude_bin)
        self._bin = magnitude_bin
        if random_sign is None:
            kw = {} if shape is None else {"shape": list(shape)}
            if seed is not None:
                kw["seed"] = seed
            random_sign = fn.random.uniform(values=[0, 1], dtype=types.INT32, **kw)
        self._sign = random_sign
        # made here, outside any conditional branch the augmentations may run in
        self._signed = 2 * magnitude_bin + random_sign

    def __getitem__(self, k):
        """The k-th of a batch of sequences of bins (one per stage of a scheme)."""
        b = self._bin if isinstance(self._bin, int) else self._bin[k]
        return _SignedMagnitudeBin(b, self._sign[k])

    @staticmethod
    def _signed_magnitudes(magnitudes):
        return np.array([m * s for m in magnitudes for s in (1, -1)])

    @property
    def bin(self):
        return self._bin

    @property
    def random_sign(self):
        return self._sign

    @property
    def signed_magnitude_idx(self):
        return self._signed


def signed_bin(magnitude_bin, random_sign=None, seed=None, shape=None):
    """A magnitude bin (an int, or an op output of ints) with a random sign per sample (0: the
    magnitude as it is, 1: negated), drawn here unless `random_sign` gives it; `shape` draws a
    sequence of signs per sample (index the result per stage). Made before a conditional split,
    the sign is drawn once for the whole batch."""
    return _SignedMagnitudeBin(magnitude_bin, random_sign, seed, shape)


class Augmentation:
    """A transformation built from sluice operators, for the automatic augmentation schemes;
    made by the `@augmentation` decorator."""

    def __init__(self, op, mag_range=None, randomly_negate=None, mag_to_param=None,
                 param_device=None, name=None, as_param=None):
        if as_param is not None:
            if mag_to_param is not None:
                raise TypeError("augmentation: give mag_to_param or its older name as_param, "
                                "not both")
            mag_to_param = as_param
        self._op = op
        self._mag_range = mag_range
        self._randomly_negate = randomly_negate
        self._mag_to_param = mag_to_param
        self._param_device = param_device
        self._name = name
        if param_device not in (None, "cpu", "gpu", "auto"):
            raise ValueError("augmentation `%s`: param_device %r (\"cpu\", \"gpu\" or \"auto\")"
                             % (self.name, param_device))
        n = num_positional(op)
        if n < 2:
            raise TypeError("The augmentation `%s` accepts %d positional argument(s), but the "
                            "functions decorated with `@augmentation` must accept at least two "
                            "positional arguments: the samples and the parameter"
                            % (self.name, n))

    def __repr__(self):
        conf = ["%s=%r" % kv for kv in self._config().items() if kv[1] is not None]
        return "Augmentation(%s)" % ", ".join([repr(self._op)] + conf)

    def __call__(self, sample, *, magnitude_bin=None, num_magnitude_bins=None, **kwargs):
        """op(sample, param, **the kwargs op takes), param from the (signed) magnitude bin."""
        param = self._param(sample, magnitude_bin, num_magnitude_bins)
        missing = missing_kwargs(self._op, kwargs, 2)
        if missing:
            raise MissingArgException(
                "augmentation `%s` needs %s, not given to the call: %s"
                % (self.name, "an argument" if len(missing) == 1 else "arguments",
                   ", ".join(missing)), self, missing)
        return self._op(sample, param, **accepted_kwargs(self._op, kwargs, 2))

    @property
    def op(self):
        return self._op

    @property
    def mag_range(self):
        return self._mag_range

    @property
    def mag_to_param(self):
        return self._mag_to_param or np.array

    @property
    def as_param(self):  # the older name
        return self.mag_to_param

    @property
    def randomly_negate(self):
        return bool(self._randomly_negate)

    @property
    def param_device(self):
        return self._param_device or "cpu"

    @property
    def name(self):
        return self._name or self._op.__name__

    def augmentation(self, mag_range=_Unset, randomly_negate=_Unset, mag_to_param=_Unset,
                     param_device=_Unset, name=_Unset, augmentation_cls=None, as_param=_Unset):
        """A copy with the given settings changed (the function is the same); a setting given
        None goes back to its default."""
        if as_param is not _Unset:
            mag_to_param = as_param
        conf = self._config()
        for k, v in (("mag_range", mag_range), ("randomly_negate", randomly_negate),
                     ("mag_to_param", mag_to_param), ("param_device", param_device),
                     ("name", name)):
            if v is not _Unset:
                conf[k] = v
        return (augmentation_cls or type(self))(self._op, **conf)

    def _config(self):
        return {"mag_range": self._mag_range, "randomly_negate": self._randomly_negate,
                "mag_to_param": self._mag_to_param, "param_device": self._param_device,
                "name": self._name}

    # ---- parameters ---------------------------------------------------------------------------

    def _magnitudes(self, num_magnitude_bins):
        r = self._mag_range
        if r is None:
            return None
        if isinstance(r, np.ndarray):
            if num_magnitude_bins is not None and len(r) != num_magnitude_bins:
                raise ValueError("augmentation `%s`: %d magnitudes in mag_range, but "
                                 "num_magnitude_bins is %d" % (self.name, len(r),
                                                               num_magnitude_bins))
            return r
        if num_magnitude_bins is None:
            raise ValueError("augmentation `%s` has a mag_range: give num_magnitude_bins "
                             "with the magnitude_bin" % self.name)
        if not hasattr(r, "__len__") or len(r) != 2:
            raise ValueError("augmentation `%s`: mag_range must be (low, high) or an array of "
                             "magnitudes, got %r" % (self.name, r))
        return np.linspace(r[0], r[1], num_magnitude_bins, dtype=np.float32)

    def _table(self, magnitudes):
        params = []
        for m in magnitudes:
            p = self.mag_to_param(m)
            if _is_node(p) or (isinstance(p, (list, tuple)) and any(_is_node(x) for x in p)):
                raise TypeError("augmentation `%s`: the `mag_to_param` callback must return "
                                "parameter that is `np.ndarray` or a value numpy makes one of "
                                "(computed once for every magnitude), not an op output"
                                % self.name)
            params.append(np.array(p))
        for p, m in zip(params, magnitudes):
            if p.shape != params[0].shape or p.dtype != params[0].dtype:
                raise ValueError("augmentation `%s`: the `mag_to_param` callback of the "
                                 "augmentation must return the arrays of the same type and "
                                 "shape for every magnitude: for magnitude %s it has shape %s "
                                 "and type %s, while for magnitude %s it has shape %s and type "
                                 "%s." % (self.name, magnitudes[0], params[0].shape,
                                          params[0].dtype, m, p.shape, p.dtype))
        return np.array(params)

    def _param(self, sample, magnitude_bin, num_magnitude_bins):
        mags = self._magnitudes(num_magnitude_bins)
        if mags is None:
            return None
        if magnitude_bin is None:
            raise ValueError("augmentation `%s` has a mag_range: its call needs a magnitude_bin"
                             % self.name)
        if self.randomly_negate:
            if not isinstance(magnitude_bin, _SignedMagnitudeBin):
                warnings.warn("augmentation `%s` negates magnitudes at random "
                              "(randomly_negate=True) but unsigned `magnitude_bin` was passed to "
                              "the augmentation call: the sign is drawn here; draw it once with "
                              "signed_bin() before splitting the batch" % self.name)
                magnitude_bin = signed_bin(magnitude_bin)
            b = magnitude_bin.bin
            if isinstance(b, int):
                _check_bin(self, b, len(mags))
                table, index = self._table(_SignedMagnitudeBin._signed_magnitudes([mags[b]])), \
                    magnitude_bin.random_sign
            else:
                table = self._table(_SignedMagnitudeBin._signed_magnitudes(mags))
                index = magnitude_bin.signed_magnitude_idx
            param = types.Constant(table)[index]
        else:
            b = magnitude_bin.bin if isinstance(magnitude_bin, _SignedMagnitudeBin) \
                else magnitude_bin
            if isinstance(b, (int, np.integer)):
                _check_bin(self, int(b), len(mags))
                param = types.Constant(self._table([mags[int(b)]])[0])
            else:
                param = types.Constant(self._table(mags))[b]
        # "gpu": the parameter on the GPU; "auto": where the samples are (DALI's rule)
        if self.param_device == "gpu" or (self.param_device == "auto" and
                                          getattr(sample, "_gpu", False)):
            param = param.gpu()
        return param


def _is_node(v):
    from ..._deferred import Deferred
    return isinstance(v, (_DataNode, Deferred))


def _check_bin(aug, b, n):
    if not 0 <= b < n:
        raise ValueError("augmentation `%s`: magnitude_bin %d outside [0, %d]" % (aug.name, b,
                                                                                   n - 1))
