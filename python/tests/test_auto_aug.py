# SPDX-License-Identifier: Apache-2.0
"""The automatic augmentation schemes of sluice.auto_aug (AutoAugment, RandAugment,
TrivialAugmentWide) in pipelines with conditionals: select puts each sample through the
augmentation its index picks and merges the batch back in order; each sub-policy, step,
augmentation and magnitude bin is chosen about as often as its probability says (marker
augmentations that write their choice into the image show it); the outputs are the same bytes
for any thread count and change with the seed; DALI's own example programs run with only the
imports changed; wrong arguments are refused by name."""

import os
import subprocess
import sys

import numpy as np
import pytest

import sluice.fn as fn
import sluice.types as types
from sluice import pipeline_def
from sluice.auto_aug import augmentations as a
from sluice.auto_aug import auto_augment, rand_augment, trivial_augment
from sluice.auto_aug.core import Policy, augmentation, select, signed_bin
from conftest import ROOT


def images(n, seed=1, size=None):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        h, w = size or (int(rng.integers(8, 40)), int(rng.integers(8, 40)))
        out.append(rng.integers(20, 230, (h, w, 3)).astype(np.uint8))
    return out


def run(make, xs, batch, iters=1, threads=2, seed=11, extra=()):
    @pipeline_def(batch_size=batch, num_threads=threads, device_id=None, seed=seed,
                  enable_conditionals=True)
    def pipe():
        x = fn.external_source(source=lambda info: xs[info.idx_in_epoch % len(xs)], batch=False,
                               layout="HWC")
        srcs = [fn.external_source(source=lambda info, e=e: e[info.idx_in_epoch % len(e)],
                                   batch=False) for e in extra]
        return make(x, *srcs)

    p = pipe()
    got = []
    for _ in range(iters):
        (out,) = p.run()
        got += [np.array(out.at(i)) for i in range(batch)]
    return got


def marker(v):
    """an augmentation that writes v over the whole image (so the output says it ran)"""
    @augmentation(name="mark%d" % v)
    def mark(sample, _):
        return sample * types.Constant(np.uint8(0)) + types.Constant(np.uint8(v))
    return mark


@augmentation(mag_range=(0, 30), as_param=lambda m: np.uint8(m), name="bin")
def write_bin(sample, v):
    """writes the magnitude (= the bin with range (0, bins - 1)) over the image"""
    return sample * types.Constant(np.uint8(0)) + v


def test_select_routes_each_sample_and_keeps_the_order():
    xs = images(12)
    idx = [np.array(i % 4, np.int32) for i in (0, 3, 1, 1, 2, 0, 3, 3, 2, 1, 0, 2)]
    augs = [a.invert, a.identity, a.equalize, marker(7)]
    got = run(lambda x, i: select(augs, i, x), xs, 12, extra=(idx,))
    for x, g, i in zip(xs, got, idx):
        want = {0: 255 - x, 1: x, 3: np.full_like(x, 7)}.get(int(i))
        if want is None:  # equalize: its own test checks the values; here, that it ran
            assert g.shape == x.shape and not np.array_equal(g, x)
        else:
            np.testing.assert_array_equal(g, want)


def test_custom_policy_choice_frequencies():
    """sub-policy i writes (i + 1) with probability p_i at step 0; step 1 adds 100 with its
    own probability; 25 sub-policies as in the ImageNet policy"""
    @augmentation(name="add100")
    def add100(sample, _):
        return sample + types.Constant(np.uint8(100))

    probs = [0.2 + 0.03 * i for i in range(25)]
    p2 = 0.5
    subs = [[(marker(i + 1), probs[i], None), (add100, p2, None)] for i in range(25)]
    policy = Policy("markers", 11, subs)
    xs = [np.zeros((2, 2, 3), np.uint8)]
    B, iters = 64, 40
    got = run(lambda x: auto_augment.apply_auto_augment(policy, x, seed=3), xs, B, iters)
    vals = np.array([int(g[0, 0, 0]) for g in got])
    assert all((g == g[0, 0, 0]).all() for g in got)  # one value per image
    n = len(vals)
    base = vals % 100
    ran2 = vals >= 100
    # the second step runs with probability p2 whatever the first did
    frac = ran2.mean()
    assert abs(frac - p2) < 4.5 * np.sqrt(p2 * (1 - p2) / n), frac
    # marker i + 1 appears with probability probs[i] / 25; 0 (no marker) with the rest
    for i in range(25):
        p = probs[i] / 25
        f = (base == i + 1).mean()
        assert abs(f - p) < 4.5 * np.sqrt(p * (1 - p) / n) + 1e-9, (i, f, p)
    p0 = 1 - sum(probs) / 25
    assert abs((base == 0).mean() - p0) < 4.5 * np.sqrt(p0 * (1 - p0) / n)


def test_rand_and_trivial_choice_frequencies():
    augs = [marker(v) for v in (1, 2, 3, 4, 5)]
    xs = [np.zeros((1, 1, 3), np.uint8)]
    B, iters = 64, 25
    got = run(lambda x: rand_augment.apply_rand_augment(augs, x, n=1, m=3), xs, B, iters)
    vals = np.array([int(g[0, 0, 0]) for g in got])
    counts = np.bincount(vals, minlength=6)[1:]
    n = len(vals)
    assert counts.sum() == n
    assert np.all(np.abs(counts / n - 0.2) < 4.5 * np.sqrt(0.2 * 0.8 / n)), counts
    # trivial augment: the bin is uniform over num_magnitude_bins too
    got = run(lambda x: trivial_augment.apply_trivial_augment([write_bin], x,
                                                              num_magnitude_bins=31), xs, B, iters)
    bins = np.bincount([int(g[0, 0, 0]) for g in got], minlength=31)
    assert bins.sum() == n and bins.min() > 0
    expect = n / 31
    assert ((bins - expect) ** 2 / expect).sum() < 75  # chi-square, 30 degrees of freedom


def test_rand_augment_n_levels_each_draw_their_own():
    # n = 2: two markers in turn; the second overwrites the first, so the output is the second
    # draw: still uniform, and the two draws differ in about 4/5 of the samples
    augs = [marker(v) for v in (1, 2, 3, 4, 5)]

    @augmentation(name="keep")
    def keep(sample, _):
        return sample

    xs = [np.zeros((1, 1, 3), np.uint8)]
    got = run(lambda x: rand_augment.apply_rand_augment(augs, x, n=2, m=0, seed=9), xs, 64, 10)
    vals = np.array([int(g[0, 0, 0]) for g in got])
    assert set(vals) <= {1, 2, 3, 4, 5} and len(set(vals)) == 5


@pytest.mark.parametrize("make", [
    lambda x: auto_augment.auto_augment_image_net(x),
    lambda x: auto_augment.auto_augment(x, "reduced_image_net"),
    lambda x: auto_augment.auto_augment(x, "svhn", shape=fn.shapes(x), fill_value=None),
    lambda x: auto_augment.auto_augment(x, "reduced_cifar10", interp_type=types.INTERP_NN),
    lambda x: rand_augment.rand_augment(x, n=2, m=9),
    lambda x: rand_augment.rand_augment(x, n=3, m=20, monotonic_mag=False, shape=fn.shapes(x),
                                        excluded=["equalize", "rotate"]),
    lambda x: trivial_augment.trivial_augment_wide(x),
    lambda x: trivial_augment.trivial_augment_wide(x, shape=fn.shapes(x),
                                                   max_translate_rel=(0.2, 0.3)),
])
def test_schemes_run_and_are_the_same_for_any_thread_count(make):
    xs = images(24, seed=5)
    one = run(make, xs, 8, iters=3, threads=1)
    four = run(make, xs, 8, iters=3, threads=4)
    changed = 0
    for x, p, q in zip(xs, one, four):
        assert p.dtype == np.uint8 and p.shape == x.shape
        np.testing.assert_array_equal(p, q)
        changed += not np.array_equal(p, x)
    assert changed >= 12  # most samples get something
    other = run(make, xs, 8, iters=3, threads=2, seed=12)
    assert any(not np.array_equal(p, q) for p, q in zip(one, other))


@pytest.mark.parametrize("scheme, only_seed", [
    (lambda x, s: auto_augment.auto_augment(x, "reduced_image_net", seed=s), False),
    (lambda x, s: rand_augment.rand_augment(x, n=2, m=12, seed=s), True),
    (lambda x, s: trivial_augment.trivial_augment_wide(x, seed=s), True),
])
def test_the_seed_argument_decides_the_draws(scheme, only_seed):
    # the choices and signs follow `seed`: another seed, other draws; RandAugment's and
    # TrivialAugment's draws are all seeded, so the pipeline's seed changes nothing (AutoAugment's
    # should_run draw is the pipeline's, as DALI's)
    xs = images(16, seed=6)
    a1 = run(lambda x: scheme(x, 2), xs, 8, iters=2, seed=11)
    a2 = run(lambda x: scheme(x, 3), xs, 8, iters=2, seed=11)
    assert any(not np.array_equal(p, q) for p, q in zip(a1, a2))
    b1 = run(lambda x: scheme(x, 2), xs, 8, iters=2, seed=99)
    same = all(np.array_equal(p, q) for p, q in zip(a1, b1))
    assert same == only_seed


def test_errors_name_the_argument():
    xs = images(2)
    with pytest.raises(ValueError, match="policy_name 'cifar'"):
        run(lambda x: auto_augment.auto_augment(x, "cifar"), xs, 2)
    with pytest.raises(ValueError, match="reduced_image_net has no translation.*shape"):
        run(lambda x: auto_augment.auto_augment(x, "reduced_image_net", shape=fn.shapes(x)), xs, 2)
    with pytest.raises(ValueError, match="max_translate_rel needs the image shape"):
        run(lambda x: auto_augment.auto_augment(x, max_translate_rel=0.5), xs, 2)
    with pytest.raises(ValueError, match="max_translate_abs cannot be used"):
        run(lambda x: rand_augment.rand_augment(x, 1, 2, shape=fn.shapes(x),
                                                max_translate_abs=3), xs, 2)
    with pytest.raises(ValueError, match="excluded names `blur`"):
        run(lambda x: rand_augment.rand_augment(x, 2, 3, excluded=["blur"]), xs, 2)
    with pytest.raises(ValueError, match="m must be an int in \\[0, 30\\]"):
        run(lambda x: rand_augment.rand_augment(x, 2, 31), xs, 2)
    with pytest.raises(ValueError, match="excluded names `solarize_add`"):
        run(lambda x: trivial_augment.trivial_augment_wide(x, excluded=["solarize_add"]), xs, 2)
    from sluice.auto_aug.core._args import UnusedArgException
    with pytest.raises(UnusedArgException, match="`colour`"):
        run(lambda x: trivial_augment.apply_trivial_augment([a.invert], x, colour=1), xs, 2)
    from sluice.auto_aug.core._args import MissingArgException
    with pytest.raises(MissingArgException, match="needs the image shape"):
        run(lambda x: rand_augment.apply_rand_augment([a.translate_x], x, 1, 2), xs, 2)

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def plain():
        x = fn.external_source(source=lambda: xs, layout="HWC")
        return trivial_augment.trivial_augment_wide(x)

    with pytest.raises(TypeError, match="enable_conditionals=True"):
        plain()


DALI_EXAMPLE = '''
import sys
from sluice import pipeline_def, fn, types
from sluice.auto_aug import auto_augment, rand_augment, trivial_augment


@pipeline_def(enable_conditionals=True)
def training_pipe(data_dir, image_size):
    jpegs, labels = fn.readers.file(file_root=data_dir, random_shuffle=True)
    shapes = fn.peek_image_shape(jpegs)
    images = fn.decoders.image(jpegs, device="mixed", output_type=types.RGB)
    augmented_images = auto_augment.auto_augment(images, shape=shapes)
    resized_images = fn.resize(augmented_images, size=[image_size, image_size])
    return resized_images, labels


@pipeline_def(enable_conditionals=True)
def rand_pipe(data_dir, image_size):
    jpegs, labels = fn.readers.file(file_root=data_dir, random_shuffle=True)
    shapes = fn.peek_image_shape(jpegs)
    images = fn.decoders.image(jpegs, device="mixed", output_type=types.RGB)
    augmented_images = rand_augment.rand_augment(images, shape=shapes, n=3, m=17)
    resized_images = fn.resize(augmented_images, size=[image_size, image_size])
    return resized_images, labels


@pipeline_def(enable_conditionals=True)
def trivial_pipe(data_dir, image_size):
    jpegs, labels = fn.readers.file(file_root=data_dir, random_shuffle=True)
    shapes = fn.peek_image_shape(jpegs)
    images = fn.decoders.image(jpegs, device="mixed", output_type=types.RGB)
    augmented_images = trivial_augment.trivial_augment_wide(images, shape=shapes)
    resized_images = fn.resize(augmented_images, size=[image_size, image_size])
    return resized_images, labels


for make in (training_pipe, rand_pipe, trivial_pipe):
    pipe = make(sys.argv[1], 64, batch_size=4, num_threads=2, device_id=None, seed=1)
    pipe.build()
    for _ in range(2):
        images, labels = pipe.run()
        for i in range(4):
            assert images.at(i).shape == (64, 64, 3), images.at(i).shape
print("ok")
'''


def test_dali_example_programs_with_only_imports_changed(tmp_path):
    """DALI's documentation examples of auto_augment, rand_augment and trivial_augment_wide
    (nvidia.dali replaced by sluice), on JPEG photos made by the build's make_photos"""
    from conftest import TOOL
    photos = tmp_path / "photos"
    make_photos = os.path.join(os.path.dirname(TOOL), "make_photos")
    if not os.path.exists(make_photos):
        pytest.skip("make_photos is not built")
    subprocess.run([make_photos, str(photos), "2", "4", "2"], check=True, timeout=300)
    prog = tmp_path / "dali_auto_aug_example.py"
    prog.write_text(DALI_EXAMPLE)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    r = subprocess.run([sys.executable, str(prog), str(photos)], capture_output=True, text=True,
                       env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_peek_image_shape_matches_the_decoder(tmp_path):
    from conftest import TOOL
    photos = tmp_path / "photos"
    make_photos = os.path.join(os.path.dirname(TOOL), "make_photos")
    if not os.path.exists(make_photos):
        pytest.skip("make_photos is not built")
    subprocess.run([make_photos, str(photos), "2", "3", "3"], check=True, timeout=300)

    @pipeline_def(batch_size=6, num_threads=2, device_id=None)
    def pipe():
        jpegs, _ = fn.readers.file(file_root=str(photos))
        return (fn.peek_image_shape(jpegs), fn.peek_image_shape(jpegs, dtype=types.FLOAT,
                                                                image_type=types.GRAY),
                fn.decoders.image(jpegs))

    s, g, d = pipe().run()
    for i in range(6):
        img = np.array(d.at(i))
        np.testing.assert_array_equal(np.array(s.at(i)), img.shape)
        assert np.array(s.at(i)).dtype == np.int64
        np.testing.assert_array_equal(np.array(g.at(i)), [img.shape[0], img.shape[1], 1])
    from sluice import errors

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def bad():
        return fn.peek_image_shape(fn.external_source(source=lambda: [np.frombuffer(
            b"not an image at all", np.uint8)]))

    with pytest.raises(errors.Error, match="peek_image_shape: sample 0"):
        bad().run()


@pytest.mark.gpu
def test_schemes_on_the_gpu():
    try:
        import torch
        cuda = torch.cuda.is_available()
    except ImportError:
        cuda = False
    if not cuda:
        if os.environ.get("SL_REQUIRE_GPU") == "1":
            raise RuntimeError("SL_REQUIRE_GPU=1, but torch has no CUDA to check for a GPU")
        pytest.skip("needs a GPU")
    xs = images(16, seed=8)
    for make in (lambda x: auto_augment.auto_augment_image_net(x.gpu(), shape=fn.shapes(x)),
                 lambda x: rand_augment.rand_augment(x.gpu(), n=2, m=9),
                 lambda x: trivial_augment.trivial_augment_wide(x.gpu())):
        @pipeline_def(batch_size=8, num_threads=2, device_id=0, seed=3, enable_conditionals=True)
        def pipe():
            x = fn.external_source(source=lambda info: xs[info.idx_in_epoch % len(xs)],
                                   batch=False, layout="HWC")
            return make(x)

        p = pipe()
        for k in range(2):
            (out,) = p.run()
            out = out.as_cpu()
            for i in range(8):
                assert np.array(out.at(i)).shape == xs[8 * k + i].shape
