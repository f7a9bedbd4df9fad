# SPDX-License-Identifier: Apache-2.0
"""Policy: AutoAugment's sub-policies, as DALI's nvidia.dali.auto_aug.core.Policy."""

from ._augmentation import Augmentation


class Policy:
    """A name, a number of magnitude bins and a list of sub-policies: each a sequence of
    (augmentation, probability, magnitude bin) triples. Per sample one sub-policy is picked
    uniformly; then each of its augmentations runs with its probability, at its bin (None for an
    augmentation without a magnitude range)."""

    def __init__(self, name, num_magnitude_bins, sub_policies):
        self.name = name
        self.num_magnitude_bins = num_magnitude_bins
        if not isinstance(num_magnitude_bins, int) or num_magnitude_bins < 1:
            raise ValueError("Policy: num_magnitude_bins must be a positive int, got %r"
                             % (num_magnitude_bins,))
        if not isinstance(sub_policies, (list, tuple)):
            raise TypeError("Policy: sub_policies must be a list or tuple, got %s"
                            % type(sub_policies).__name__)
        for sp in sub_policies:
            if not isinstance(sp, (list, tuple)):
                raise TypeError("Policy: each sub-policy is a list or tuple, got %r" % (sp,))
            for t in sp:
                if not isinstance(t, (list, tuple)) or len(t) != 3:
                    raise TypeError("Policy: each step of a sub-policy is a triple "
                                    "(augmentation, probability, magnitude), got %r" % (t,))
                aug, p, mag = t
                if not isinstance(aug, Augmentation):
                    raise TypeError("Policy: %r is not an augmentation (made with "
                                    "@augmentation)" % (aug,))
                if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
                    raise ValueError("Policy: probability %r of `%s` is not in [0, 1]"
                                     % (p, aug.name))
                if mag is None and aug.mag_range is None:
                    continue
                if isinstance(mag, bool) or not isinstance(mag, int) or \
                        not 0 <= mag < num_magnitude_bins:
                    raise ValueError("Policy: magnitude %r of `%s` is not an int in [0, %d]"
                                     % (mag, aug.name, num_magnitude_bins - 1))
        self.sub_policies = _unique_names(sub_policies)

    @property
    def augmentations(self):
        """{name: augmentation} of every augmentation the sub-policies use, by name."""
        augs = {aug for sp in self.sub_policies for aug, _, _ in sp}
        return {a.name: a for a in sorted(augs, key=lambda a: a.name)}

    def __repr__(self):
        subs = ",\n\t".join(repr([(a.name, p, m) for a, p, m in sp]) for sp in self.sub_policies)
        augs = ",\n\t".join("'%s': %r" % kv for kv in self.augmentations.items())
        return "Policy(name=%r, num_magnitude_bins=%r, sub_policies=[%s], augmentations={%s})" % (
            self.name, self.num_magnitude_bins, "\n\t" + subs if subs else "",
            "\n\t" + augs if augs else "")


def _unique_names(sub_policies):
    """The sub-policies as tuples; distinct augmentations that share a name are renamed
    `<k>__<name>`, numbered in order of first use, so that names say which is which."""
    order = []
    for sp in sub_policies:
        for aug, _, _ in sp:
            if aug not in order:
                order.append(aug)
    if len({a.name for a in order}) == len(order):
        return tuple(tuple(tuple(t) for t in sp) for sp in sub_policies)
    width = len(str(len(order) - 1))
    renamed = {a: a.augmentation(name="%s__%s" % (str(k).zfill(width), a.name))
               for k, a in enumerate(order)}
    return tuple(tuple((renamed[a], p, m) for a, p, m in sp) for sp in sub_policies)
