# SPDX-License-Identifier: Apache-2.0
"""fn.noise.gaussian, salt_and_pepper and shot. gaussian and salt_and_pepper are checked bit for
bit against the test's own numpy implementation of their definition (Philox4x32-10 keyed by the
seed; salt_and_pepper: counter = (element << 8 | draw, the sample's global index), the
replacement rule, one draw per pixel along the layout's 'C' wherever it is; gaussian: block k of
the sample's stream for element k, Box-Muller, as random.normal draws, so that
noise.gaussian(x, seed=s) equals x + random.normal(x, seed=s) as in DALI); shot against the
Poisson distribution's moments. Every dtype, per-sample arguments, the same bytes at any thread
count and batch size, a checkpoint resumed exactly, and the errors."""

import numpy as np
import pytest

import sluice.fn as fn
import sluice.types as types
from sluice import Pipeline, errors, pipeline_def
from conftest import LMDB

M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
MASK = np.uint64(0xFFFFFFFF)


def philox(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 on numpy uint64 arrays holding 32-bit words."""
    c0, c1, c2, c3 = (np.asarray(c, np.uint64) & MASK for c in (c0, c1, c2, c3))
    k0, k1 = np.uint64(k0), np.uint64(k1)
    for _ in range(10):
        p0, p1 = np.uint64(M0) * c0, np.uint64(M1) * c2
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ k0) & MASK, p1 & MASK, \
            ((p0 >> np.uint64(32)) ^ c3 ^ k1) & MASK, p0 & MASK
        k0, k1 = (k0 + np.uint64(W0)) & MASK, (k1 + np.uint64(W1)) & MASK
    return c0, c1, c2, c3


def uniforms(seed, sample, elems, count):
    """The first `count` (0, 1) doubles of each element's stream."""
    words = []
    blocks = (count * 2 + 3) // 4
    for b in range(blocks):
        c = (elems.astype(np.uint64) << np.uint64(8)) | np.uint64(b)
        words.extend(philox(c & MASK, c >> np.uint64(32), sample & 0xFFFFFFFF, sample >> 32,
                            seed & 0xFFFFFFFF, seed >> 32))
    out = []
    for j in range(count):
        hi, lo = words[2 * j], words[2 * j + 1]
        bits = (hi << np.uint64(21)) ^ (lo >> np.uint64(11))
        out.append((bits.astype(np.float64) + 0.5) / 9007199254740992.0)
    return out


def normals(seed, sample, n):
    """N(0, 1) for elements 0..n-1: element k from block k of the sample's stream."""
    e = np.arange(n, dtype=np.uint64)
    b = philox(e & MASK, e >> np.uint64(32), sample & 0xFFFFFFFF, sample >> 32,
               seed & 0xFFFFFFFF, seed >> 32)
    u1, u2 = (((hi << np.uint64(32)) | lo) >> np.uint64(11) for hi, lo in ((b[0], b[1]),
                                                                         (b[2], b[3])))
    u1 = np.maximum(u1.astype(np.float64) / 9007199254740992.0, 1e-300)
    u2 = u2.astype(np.float64) / 9007199254740992.0
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(6.283185307179586 * u2)


def ref_gaussian(x, seed, sample, mean, std):
    noise = (mean + std * normals(seed, sample, x.size)).astype(np.float32)
    if x.dtype == np.float64:  # added in double; else in float, as DALI adds
        v = x.reshape(-1) + noise.astype(np.float64)
    else:
        v = (x.reshape(-1).astype(np.float32) + noise).astype(np.float64)
    return convert(v, x.dtype).reshape(x.shape)


def convert(v, dtype):
    """cast's rules: round half to even, saturate; floats rounded once."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return v.astype(dtype)
    info = np.iinfo(dtype)
    return np.clip(np.rint(v), info.min, info.max).astype(dtype)


def run(make, xs, seed=7, threads=2, batch=None, layout=None):
    batch = batch or len(xs)

    @pipeline_def(batch_size=batch, num_threads=threads, device_id=None, seed=seed)
    def pipe():
        kw = {"layout": layout} if layout else {}
        return make(fn.external_source(source=lambda info: xs[info.idx_in_epoch % len(xs)],
                                       batch=False, **kw))

    p = pipe()
    got = []
    for _ in range(len(xs) // batch):
        out = p.run()
        out = out if isinstance(out, (list, tuple)) else [out]
        got.append([[np.array(o.at(i)) for i in range(batch)] for o in out])
    return [sum((g[k] for g in got), []) for k in range(len(got[0]))]


DTYPES = [np.uint8, np.int16, np.int32, np.float32, np.float64, np.uint32]


@pytest.mark.parametrize("dtype", DTYPES)
def test_gaussian_bit_exact(dtype):
    rng = np.random.default_rng(1)
    xs = [(rng.uniform(0, 200, (5, 7, 3))).astype(dtype) for _ in range(4)]
    sd = [np.array(s, np.float32) for s in (0.5, 3.0, 10.0, 0.0)]
    (got,) = run(lambda x: fn.noise.gaussian(x, mean=2.0, stddev=fn.external_source(
        source=lambda info: sd[info.idx_in_epoch % 4], batch=False), seed=1234), xs)
    for i, x in enumerate(xs):
        want = ref_gaussian(x, 1234, i, 2.0, float(sd[i]))
        assert got[i].dtype == np.dtype(dtype)
        if np.dtype(dtype).kind == "f":  # glibc's log and cos against numpy's: an ulp apart
            np.testing.assert_allclose(got[i], want, rtol=1e-6 if dtype == np.float32 else 1e-13)
        else:
            assert np.abs(got[i].astype(np.int64) - want.astype(np.int64)).max() <= 1
            assert (got[i] == want).mean() > 0.99


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.float32, np.uint16])
def test_salt_and_pepper_bit_exact(per_channel, dtype):
    rng = np.random.default_rng(2)
    xs = [rng.integers(20, 100, (6, 5, 3)).astype(dtype) for _ in range(3)]
    (got,) = run(lambda x: fn.noise.salt_and_pepper(x, prob=0.3, salt_vs_pepper=0.25,
                                                    per_channel=per_channel, seed=1234),
                 xs, layout="HWC")
    kind = np.dtype(dtype).kind
    salt = 1.0 if kind == "f" else np.iinfo(dtype).max
    pepper = -1.0 if kind == "f" else np.iinfo(dtype).min
    for i, x in enumerate(xs):
        elems = np.arange(x.size) // (1 if per_channel else 3)
        u, w = uniforms(1234, i, elems, 2)
        want = np.where(u < 0.3, np.where(w < 0.25, salt, pepper), x.reshape(-1))
        np.testing.assert_array_equal(got[i], want.astype(dtype).reshape(x.shape))
        hit = got[i] != x
        if not per_channel:  # a pixel's channels go together
            assert (hit.all(axis=2) | ~hit.any(axis=2)).all()
        assert 0.15 < hit.mean() < 0.45


@pytest.mark.parametrize("layout", ["CHW", "HCW", "HWC"])
def test_salt_and_pepper_one_draw_per_pixel_wherever_c_is(layout):
    rng = np.random.default_rng(3)
    hwc = [rng.integers(20, 100, (6, 5, 3)).astype(np.uint8) for _ in range(2)]
    perm = {"CHW": (2, 0, 1), "HCW": (0, 2, 1), "HWC": (0, 1, 2)}[layout]
    xs = [np.ascontiguousarray(x.transpose(perm)) for x in hwc]
    (got,) = run(lambda x: fn.noise.salt_and_pepper(x, prob=0.3, per_channel=False, seed=99),
                 xs, layout=layout)
    for i, x in enumerate(hwc):
        g = got[i].transpose(np.argsort(perm))  # back to HWC
        # the draw of pixel (y, x) is the element's index with the channel taken out: y * 5 + x
        u, w = uniforms(99, i, np.arange(x.size) // 3, 2)
        want = np.where(u < 0.3, np.where(w < 0.5, 255, 0), x.reshape(-1)).reshape(x.shape)
        np.testing.assert_array_equal(g, want.astype(np.uint8))
        hit = g != x
        assert (hit.all(axis=2) | ~hit.any(axis=2)).all()


@pytest.mark.parametrize("dtype", [np.float32, np.uint8])
def test_gaussian_equals_input_plus_random_normal(dtype):
    # DALI: noise.gaussian(x, seed=s) and x + random.normal(x, seed=s) give the same values
    rng = np.random.default_rng(4)
    xs = [rng.uniform(0, 255, (9, 11, 3)).astype(dtype) for _ in range(6)]
    mean = [np.array(m, np.float32) for m in (-20.0, 0.0, 5.5, 10.0, 31.0, -3.0)]

    @pipeline_def(batch_size=3, num_threads=2, device_id=None)
    def pipe():
        x = fn.external_source(source=lambda info: xs[info.idx_in_epoch % 6], batch=False)
        m = fn.external_source(source=lambda info: mean[info.idx_in_epoch % 6], batch=False)
        return (fn.noise.gaussian(x, mean=m, stddev=57.0, seed=12345),
                x + fn.random.normal(x, mean=m, stddev=57.0, seed=12345))

    p = pipe()
    for _ in range(2):
        a, b = p.run()
        for i in range(3):
            got, want = np.array(a.at(i)), np.array(b.at(i))
            if dtype == np.float32:
                np.testing.assert_array_equal(got, want)
            else:  # the sum converted as cast converts it
                np.testing.assert_array_equal(got, convert(want.astype(np.float64), dtype))


def test_salt_and_pepper_values_given():
    xs = [np.full((40, 40), 50, np.uint8)]
    (got,) = run(lambda x: fn.noise.salt_and_pepper(x, prob=1.0, salt_val=9, pepper_val=3,
                                                    seed=5), xs)
    assert set(np.unique(got[0]).tolist()) == {3, 9}


@pytest.mark.parametrize("level", [5.0, 500.0])
def test_shot_moments(level):
    x = [np.full((200, 200), level, np.float32)]
    (got,) = run(lambda a: fn.noise.shot(a, factor=2.0, seed=3), x)
    k = got[0] / 2.0
    lam = level / 2.0
    assert np.all(k == np.round(k))  # multiples of the factor
    assert abs(k.mean() - lam) < 4 * np.sqrt(lam / k.size) + 1e-9
    assert abs(k.var() - lam) < 0.05 * lam
    (u8,) = run(lambda a: fn.noise.shot(fn.cast(a, dtype=types.UINT8), factor=0.0, seed=3), x)
    assert (u8[0] == min(level, 255)).all()  # factor 0: no noise


def test_same_bytes_any_threads_and_batches():
    rng = np.random.default_rng(4)
    xs = [rng.integers(0, 255, (9, 11, 3)).astype(np.uint8) for _ in range(8)]

    def make(x):
        return (fn.noise.gaussian(x, stddev=20.0), fn.noise.salt_and_pepper(x),
                fn.noise.shot(x, factor=3.0))

    a = run(make, xs, seed=99, threads=1, batch=8)
    b = run(make, xs, seed=99, threads=4, batch=2)
    for k in range(3):
        for i in range(8):
            np.testing.assert_array_equal(a[k][i], b[k][i])
    c = run(make, xs, seed=100, threads=1, batch=8)
    assert not np.array_equal(a[0][0], c[0][0])


def test_checkpoint_resumes_the_noise():
    def define():
        pipe = Pipeline(batch_size=4, num_threads=2, device_id=None, seed=11,
                        enable_checkpointing=True)
        with pipe:
            jpegs, _ = fn.readers.caffe2(path=LMDB)
            img = fn.decoders.image(jpegs, output_type=types.GRAY)
            pipe.set_outputs(fn.noise.gaussian(img, stddev=30.0),
                             fn.noise.salt_and_pepper(img, prob=0.2))
        return pipe

    whole = define()
    batches = [[o.as_array().copy() for o in whole.run()] for _ in range(3)]
    first = define()
    first.run()
    ck = first.checkpoint()
    pipe = Pipeline(batch_size=4, num_threads=3, device_id=None, seed=11, checkpoint=ck)
    with pipe:
        jpegs, _ = fn.readers.caffe2(path=LMDB)
        img = fn.decoders.image(jpegs, output_type=types.GRAY)
        pipe.set_outputs(fn.noise.gaussian(img, stddev=30.0),
                         fn.noise.salt_and_pepper(img, prob=0.2))
    for want in batches[1:]:
        got = [o.as_array() for o in pipe.run()]
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


def test_errors():
    xs = [np.zeros((2, 2), np.float32)]
    with pytest.raises(errors.Error, match="noise.gaussian: sample 0: stddev -1 is negative"):
        run(lambda x: fn.noise.gaussian(x, stddev=-1.0), xs)
    with pytest.raises(errors.Error, match="noise.salt_and_pepper: sample 0: prob 2 and "
                                           "salt_vs_pepper 0.5 must be in"):
        run(lambda x: fn.noise.salt_and_pepper(x, prob=2.0), xs)
    with pytest.raises(errors.Error, match="noise.shot: sample 0: factor -3 is negative"):
        run(lambda x: fn.noise.shot(x, factor=-3.0), xs)
