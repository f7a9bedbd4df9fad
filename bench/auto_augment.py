# SPDX-License-Identifier: Apache-2.0
"""AutoAugment (the ImageNet policy) in sluice against torchvision's AutoAugment, on 224x224x3
uint8 images.

    /usr/bin/python3 bench/auto_augment.py [--images 512] [--runs 3] [--device cpu|gpu]
                                           [--threads N ...] [--each]

Every side augments the same pre-made images (no decoding: the augmentation is the work) and
hands out batches of 32. sluice's side is external_source -> auto_aug.auto_augment (its
sub-policies split the batch through conditionals) in a pipeline with enable_conditionals=True,
at the default thread count and the --threads counts; with --device gpu the images go to GPU 0
first and the augmentations run there. torchvision's AutoAugment(IMAGENET) runs on uint8 CHW
tensors in a plain loop and in a DataLoader with 2 worker processes (when torchvision is
importable). Prints images/s (median of the runs, interleaved) and the load average. --each
also times every augmentation of the suite alone (bin 5 of 11, the first thread count), and
TrivialAugment's select over 14 identities (the conditionals' split and merge alone): where the
time of a policy goes."""

import argparse
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
os.environ.setdefault("SLUICE_LIBRARY", os.path.join(HERE, "..", "build", "libsluice.so"))

import sluice  # noqa: E402
import sluice.fn as fn  # noqa: E402
from sluice.auto_aug import auto_augment  # noqa: E402

B = 32


def images(n):
    rng = np.random.default_rng(0)
    # smooth images with some structure (a gradient plus noise), not flat noise: equalize and
    # auto_contrast see real histograms
    yy, xx = np.mgrid[0:224, 0:224]
    out = []
    for _ in range(n):
        base = (rng.random(3) * 120)[None, None, :] + (xx[..., None] * rng.random(3) * 0.5) + \
            (yy[..., None] * rng.random(3) * 0.3)
        out.append(np.clip(base + rng.normal(0, 12, (224, 224, 3)), 0, 255).astype(np.uint8))
    return out


def pipeline(imgs, threads, device, augment=True):
    gpu = device == "gpu"

    @sluice.pipeline_def(batch_size=B, num_threads=threads, device_id=0 if gpu else None,
                         enable_conditionals=True, seed=7)
    def pipe():
        x = fn.external_source(source=lambda info: imgs[info.idx_in_epoch % len(imgs)],
                               batch=False, layout="HWC")
        if gpu:
            x = x.gpu()
        return auto_augment.auto_augment(x) if augment else x

    p = pipe()
    p.build()
    p.run()  # the first batch: start-up
    t = time.perf_counter()
    for _ in range(len(imgs) // B - 1):
        out = p.run()
    if gpu:
        out[0].as_cpu()  # the last batch done
    rate = (len(imgs) - B) / (time.perf_counter() - t)
    p.close()
    return rate


def each_augmentation(imgs, threads, device):
    """images/s of each augmentation alone, at bin 5 of 11 (sign +)"""
    import numpy as np
    from sluice import types
    from sluice.auto_aug import augmentations as a
    from sluice.auto_aug.core import signed_bin
    gpu = device == "gpu"
    out = {}
    for name in ("identity", "invert", "posterize", "solarize", "solarize_add", "equalize",
                 "auto_contrast", "brightness", "contrast", "color", "sharpness", "rotate",
                 "shear_x", "translate_x_no_shape"):
        aug = getattr(a, name)

        @sluice.pipeline_def(batch_size=B, num_threads=threads, device_id=0 if gpu else None,
                             seed=7)
        def pipe():
            x = fn.external_source(source=lambda info: imgs[info.idx_in_epoch % len(imgs)],
                                   batch=False, layout="HWC")
            if gpu:
                x = x.gpu()
            b = signed_bin(5, random_sign=types.Constant(np.int32(0))) \
                if aug.randomly_negate else 5
            return aug(x, magnitude_bin=b, num_magnitude_bins=11)

        p = pipe()
        p.build()
        p.run()
        t = time.perf_counter()
        for _ in range(len(imgs) // B - 1):
            o = p.run()
        if gpu:
            o[0].as_cpu()
        out[name] = (len(imgs) - B) / (time.perf_counter() - t)
        p.close()
    # the conditionals alone: TrivialAugment's select over 14 identities
    from sluice.auto_aug import trivial_augment
    ids = [a.identity.augmentation(name="identity%d" % k) for k in range(14)]

    @sluice.pipeline_def(batch_size=B, num_threads=threads, device_id=0 if gpu else None,
                         seed=7, enable_conditionals=True)
    def sel():
        x = fn.external_source(source=lambda info: imgs[info.idx_in_epoch % len(imgs)],
                               batch=False, layout="HWC")
        return trivial_augment.apply_trivial_augment(ids, x.gpu() if gpu else x)

    p = sel()
    p.build()
    p.run()
    t = time.perf_counter()
    for _ in range(len(imgs) // B - 1):
        o = p.run()
    if gpu:
        o[0].as_cpu()
    out["select over 14 identities"] = (len(imgs) - B) / (time.perf_counter() - t)
    p.close()
    return out


def torchvision_loop(timgs, aa):
    import torch
    t = time.perf_counter()
    for k in range(0, len(timgs), B):
        torch.stack([aa(x) for x in timgs[k:k + B]])
    return len(timgs) / (time.perf_counter() - t)


def torchvision_loader(timgs, aa, workers):
    import torch.utils.data as tud

    class DS(tud.Dataset):
        def __len__(self):
            return len(timgs)

        def __getitem__(self, i):
            return aa(timgs[i])

    dl = tud.DataLoader(DS(), batch_size=B, num_workers=workers, persistent_workers=False)
    t = time.perf_counter()
    for _ in dl:
        pass
    return len(timgs) / (time.perf_counter() - t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", type=int, default=512)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--threads", type=int, nargs="*", default=[2])
    ap.add_argument("--each", action="store_true", help="also time each augmentation alone")
    a = ap.parse_args()
    imgs = images(a.images)
    default_threads = sluice.Pipeline(batch_size=B, device_id=0 if a.device == "gpu"
                                      else None).num_threads
    sides = {"sluice auto_augment (%s), %d threads (default)" % (a.device, default_threads):
             lambda: pipeline(imgs, None, a.device)}
    for n in a.threads:
        sides["sluice auto_augment (%s), %d threads" % (a.device, n)] = \
            lambda n=n: pipeline(imgs, n, a.device)
    sides["sluice external_source only (%s), %d threads" % (a.device, a.threads[0])] = \
        lambda: pipeline(imgs, a.threads[0], a.device, False)
    try:
        import torch
        from torchvision.transforms import AutoAugment, AutoAugmentPolicy
        torch.manual_seed(7)
        aa = AutoAugment(AutoAugmentPolicy.IMAGENET)
        timgs = [torch.from_numpy(x).permute(2, 0, 1).contiguous() for x in imgs]
        sides["torchvision AutoAugment, plain loop"] = lambda: torchvision_loop(timgs, aa)
        sides["torchvision AutoAugment, DataLoader 2 workers"] = \
            lambda: torchvision_loader(timgs, aa, 2)
    except ImportError as e:
        print("torchvision is not importable here (%s): its side is left out" % e)
    got = {k: [] for k in sides}
    for _ in range(a.runs):
        for k, run in sides.items():
            got[k].append(run())
    print("load average: %.2f %.2f %.2f, %d CPUs" % (os.getloadavg() + (os.cpu_count(),)))
    for k, v in got.items():
        print("%-52s %8.0f images/s" % (k, statistics.median(v)))
    if a.each:
        for k, v in each_augmentation(imgs, a.threads[0], a.device).items():
            print("  one augmentation, %-32s %8.0f images/s" % (k, v))


if __name__ == "__main__":
    main()
