# SPDX-License-Identifier: Apache-2.0
"""The audio operators and readers.nemo_asr against references that are not sluice: the files
are made and read back with soundfile (tests/audio_files.py), and the spectrogram, the mel filter
banks (Slaney and HTK formulas), decibels, the DCT-II (scipy), pre-emphasis and the silence
detection are written here in numpy. Also the ASR pipeline NeMo builds with DALI (imports
changed), and bad files and manifests, which must fail naming the file and the line."""

import json
import os
import shutil

import numpy as np
import pytest

sf = pytest.importorskip("soundfile")
scipy_fft = pytest.importorskip("scipy.fft")

import sluice  # noqa: E402
import sluice.fn as fn  # noqa: E402
import sluice.types as types  # noqa: E402
from sluice import pipeline_def  # noqa: E402

import audio_files  # noqa: E402
from audio_ref import (db_ref, mel_bank_ref, nonsilent_ref, spectrogram_ref,  # noqa: E402
                       asr_features)


@pytest.fixture(scope="module")
def audio_dir(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("audio"))
    audio_files.write_all(d)
    return d


def run_op(make, samples, layout=None, batch=None):
    """The outputs of make(x) for the numpy samples fed in one batch, as lists of arrays."""
    n = len(samples)

    @pipeline_def(batch_size=batch or n, num_threads=2, device_id=None)
    def pipe():
        x = fn.external_source(source=lambda i: samples, layout=layout)
        out = make(x)
        return tuple(out) if isinstance(out, (tuple, list)) else (out,)

    p = pipe()
    p.build()
    outs = p.run()
    return [[o.at(i) for i in range(n)] for o in outs]


def decode(paths, **kw):
    """decoders.audio over files read by readers.file: (audio, rate) lists."""
    @pipeline_def(batch_size=len(paths), num_threads=2, device_id=None)
    def pipe():
        data, _ = fn.readers.file(files=paths)
        return fn.decoders.audio(data, **kw)

    p = pipe()
    p.build()
    a, r = p.run()
    return [a.at(i) for i in range(len(paths))], [float(r.at(i)) for i in range(len(paths))]


# ---- decoding -----------------------------------------------------------------------------------

def test_decode_matches_soundfile(audio_dir):
    names = list(audio_files.FILES)
    paths = [os.path.join(audio_dir, n) for n in names]
    audio, rates = decode(paths)
    for name, path, a, r in zip(names, paths, audio, rates):
        want, rate = sf.read(path, dtype="float32", always_2d=True)
        assert r == rate
        assert a.dtype == np.float32
        # without downmix every file is (time, channels), mono ones too (as DALI)
        assert a.shape == want.shape, name
        np.testing.assert_array_equal(a, want, err_msg=name)


def test_decode_downmix_int16_and_mono_shape(audio_dir):
    paths = [os.path.join(audio_dir, n) for n in ("tone16k.wav", "chirp22k_stereo.wav")]
    audio, _ = decode(paths, downmix=True)
    for p, a in zip(paths, audio):
        want = sf.read(p, dtype="float32", always_2d=True)[0].astype(np.float64).mean(axis=1)
        assert a.ndim == 1
        np.testing.assert_allclose(a, want, atol=1e-7)
    audio, _ = decode(paths[:1], dtype=types.INT16)
    want = sf.read(paths[0], dtype="int16", always_2d=True)[0]
    assert audio[0].dtype == np.int16 and audio[0].shape == want.shape  # (time, 1)
    # 16-bit PCM -> float -> int16 at full scale 32767: within one step of the file's values
    assert np.max(np.abs(audio[0].astype(np.int32) - want.astype(np.int32))) <= 1


def test_decode_resamples_a_tone(tmp_path):
    path = str(tmp_path / "tone44k.wav")
    n, rate = 44100, 44100
    sf.write(path, 0.5 * np.sin(2 * np.pi * 440 * np.arange(n) / rate), rate, subtype="FLOAT")
    for out_rate in (16000.0, 48000.0):
        audio, rates = decode([path], sample_rate=out_rate)
        assert audio[0].shape[1:] == (1,)
        a = audio[0][:, 0]
        assert rates[0] == out_rate
        assert len(a) == int(np.ceil(n * out_rate / rate))
        t = (np.arange(len(a)) + 0.5) / out_rate - 0.5 / rate
        want = 0.5 * np.sin(2 * np.pi * 440 * t)
        inner = slice(200, len(a) - 200)
        assert np.max(np.abs(a[inner] - want[inner])) < 2e-3, out_rate


def test_audio_resample_op():
    x = (0.5 * np.sin(2 * np.pi * 100 * np.arange(8000) / 8000)).astype(np.float32)
    (a,), (b,), (c,) = run_op(lambda s: (fn.audio_resample(s, in_rate=8000.0, out_rate=12000.0),
                                         fn.audio_resample(s, scale=1.5),
                                         fn.audio_resample(s, out_length=12000)), [x])
    assert len(a) == len(b) == len(c) == 12000
    np.testing.assert_allclose(a, b, atol=1e-6)
    np.testing.assert_allclose(a, c, atol=1e-6)
    t = (np.arange(12000) + 0.5) / 12000 - 0.5 / 8000
    assert np.max(np.abs(a[100:-100] - 0.5 * np.sin(2 * np.pi * 100 * t[100:-100]))) < 2e-3


# DALI's audio_resample types: float and the integers up to 32 bits, each standing for -1..1 (a
# signed one x / max, an unsigned one x / max * 2 - 1); converting back rounds to nearest, ties
# to even, and saturates
RS_TYPES = [(np.float32, types.FLOAT), (np.uint8, types.UINT8), (np.int8, types.INT8),
            (np.uint16, types.UINT16), (np.int16, types.INT16), (np.uint32, types.UINT32),
            (np.int32, types.INT32)]


def to_unit(x):
    x = np.asarray(x)
    if x.dtype == np.float32:
        return x.astype(np.float64)
    info = np.iinfo(x.dtype)
    if info.min == 0:
        return x.astype(np.float64) / info.max * 2 - 1
    return x.astype(np.float64) / info.max


def from_unit(v, dtype):
    if dtype == np.float32:
        return np.float32(v)
    info = np.iinfo(dtype)
    w = (np.asarray(v) + 1) / 2 * info.max if info.min == 0 else np.asarray(v) * info.max
    return np.clip(np.round(w), info.min, info.max).astype(dtype)


@pytest.mark.parametrize("src", RS_TYPES, ids=lambda t: t[0].__name__)
@pytest.mark.parametrize("dst", RS_TYPES + [None], ids=lambda t: "same" if t is None
                         else t[0].__name__)
def test_audio_resample_integer_types(src, dst):
    rng = np.random.default_rng(7)
    src_np, _ = src
    if src_np == np.float32:
        x = np.float32(rng.uniform(-1.2, 1.2, 64))
        x[:4] = [-1, 0, 1, 0.5]
    else:
        info = np.iinfo(src_np)
        x = rng.integers(info.min, info.max, 64, endpoint=True).astype(src_np)
        x[:4] = [info.min, info.max, (info.min + info.max) // 2, 0]
    kw = {} if dst is None else {"dtype": dst[1]}
    # scale 1, quality 0: the resampled signal is the signal (a sinc at whole steps)
    (out,) = run_op(lambda s: fn.audio_resample(s, scale=1.0, quality=0, **kw), [x])
    out_np = src_np if dst is None else dst[0]
    assert out[0].dtype == out_np and out[0].shape == x.shape
    want = from_unit(np.float32(to_unit(x)), out_np)  # through float, as the op
    if out_np == np.float32:
        np.testing.assert_allclose(out[0], want, rtol=1e-6, atol=1e-6)
    else:
        diff = np.abs(out[0].astype(np.int64) - want.astype(np.int64))
        assert diff.max() <= (1 if np.iinfo(out_np).bits < 32 else 256), diff.max()
    if dst is None and src_np != np.float32:  # the same type back: the values themselves
        tol = 0 if np.iinfo(src_np).bits < 32 else 256
        assert np.abs(out[0].astype(np.int64) - x.astype(np.int64)).max() <= tol


def test_audio_resample_integer_conversions_by_hand():
    # the middle of an unsigned range is 0; 0 to unsigned is the upper of the two middles
    x = [np.int8([-127, 0, 127]), np.uint8([0, 255, 128]), np.float32([-1, 0, 1])]
    (o,) = run_op(lambda s: fn.audio_resample(s, scale=1.0, quality=0, dtype=types.UINT8),
                  [x[0]])
    assert o[0].tolist() == [0, 128, 255]
    (o,) = run_op(lambda s: fn.audio_resample(s, scale=1.0, quality=0, dtype=types.FLOAT),
                  [x[1]])
    np.testing.assert_allclose(o[0], [-1, 1, 1 / 255], atol=1e-6)
    (o,) = run_op(lambda s: fn.audio_resample(s, scale=1.0, quality=0, dtype=types.UINT16),
                  [x[2]])
    assert o[0].tolist() == [0, 32768, 65535]
    # a resampled integer signal: the float result, scaled back
    t = np.arange(800)
    x16 = np.int16(np.round(20000 * np.sin(2 * np.pi * 0.01 * t)))
    (o16,) = run_op(lambda s: fn.audio_resample(s, scale=1.5), [x16])
    (of,) = run_op(lambda s: fn.audio_resample(s, scale=1.5), [np.float32(x16 / 32767)])
    assert o16[0].dtype == np.int16 and len(o16[0]) == 1200
    assert np.abs(o16[0].astype(np.int64) - np.round(of[0].astype(np.float64) * 32767)).max() <= 1


def test_audio_resample_refuses_other_types():
    for make, what in (
            (lambda s: fn.audio_resample(s, scale=1.0, dtype=types.INT64), "dtype int64"),
            (lambda s: fn.audio_resample(s, scale=1.0, dtype=types.FLOAT64), "dtype float64")):
        msg = failing_message(lambda: run_op(make, [np.zeros(8, np.float32)]))
        assert what in msg, msg
    msg = failing_message(lambda: run_op(lambda s: fn.audio_resample(s, scale=1.0),
                                         [np.zeros(8, np.float64)]))
    assert "up to 32 bits, not 1-D float64" in msg, msg


# ---- signal ops ---------------------------------------------------------------------------------

def test_preemphasis_borders():
    x = np.random.default_rng(1).normal(size=1000).astype(np.float32)
    outs = run_op(lambda s: (fn.preemphasis_filter(s),
                             fn.preemphasis_filter(s, preemph_coeff=0.5, border="zero"),
                             fn.preemphasis_filter(s, border="reflect")), [x])
    xd = x.astype(np.float64)
    for (got,), coeff, prev in zip(outs, (0.97, 0.5, 0.97), (xd[0], 0.0, xd[1])):
        want = xd - coeff * np.concatenate([[prev], xd[:-1]])
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_nonsilent_region_finds_the_tone(audio_dir):
    x = sf.read(os.path.join(audio_dir, "tone16k.wav"), dtype="float32")[0]
    noise = np.random.default_rng(2).normal(size=3000).astype(np.float32) * 1e-4
    samples = [x, noise, np.zeros(500, np.float32)]
    for kw, ref in (({}, {}), ({"window_length": 256, "cutoff_db": -40.0},
                              {"window": 256, "cutoff_db": -40.0})):
        begin, length = run_op(lambda s: fn.nonsilent_region(s, **kw), samples)
        for k, s in enumerate(samples):
            assert begin[k].shape == () and begin[k].dtype == np.int32
            assert (int(begin[k]), int(length[k])) == nonsilent_ref(s, **ref), (kw, k)
    begin, length = run_op(lambda s: fn.nonsilent_region(s, window_length=256, cutoff_db=-40.0),
                           [x])
    # the tone sounds from 0.3 s to 1.1 s
    assert abs(int(begin[0]) - int(0.3 * 16000)) <= 256
    assert abs(int(begin[0]) + int(length[0]) - int(1.1 * 16000)) <= 256


@pytest.mark.parametrize("nfft,wl,step,center,reflect,layout,power", [
    (512, 512, 256, True, True, "ft", 2),
    (512, 320, 160, True, True, "tf", 2),
    (400, 400, 100, False, True, "ft", 1),
    (256, 200, 80, True, False, "ft", 2),
])
def test_spectrogram_vs_numpy(nfft, wl, step, center, reflect, layout, power):
    rng = np.random.default_rng(3)
    samples = [rng.normal(size=n).astype(np.float32) for n in (4000, 1601, 777)]
    outs, = run_op(lambda s: fn.spectrogram(s, nfft=nfft, window_length=wl, window_step=step,
                                            center_windows=center, reflect_padding=reflect,
                                            layout=layout, power=power), samples)
    for x, got in zip(samples, outs):
        want = spectrogram_ref(x, nfft, wl, step, power=power, center=center, reflect=reflect)
        if layout == "tf":
            want = want.T
        assert got.shape == want.shape and got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=1e-4 * want.max())


def test_spectrogram_window_fn():
    x = np.random.default_rng(4).normal(size=2000).astype(np.float32)
    w = np.hanning(320)
    (got,), = run_op(lambda s: fn.spectrogram(s, nfft=512, window_length=320, window_step=160,
                                              window_fn=w.tolist()), [x])
    want = spectrogram_ref(x, 512, 320, 160, window=w)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=1e-4 * want.max())


@pytest.mark.parametrize("htk,normalize,fmin,fmax", [
    (False, True, 0.0, 8000.0), (True, True, 0.0, 8000.0), (False, False, 300.0, 5000.0),
    (True, False, 20.0, 7600.0)])
def test_mel_filter_bank_vs_formulas(htk, normalize, fmin, fmax):
    rng = np.random.default_rng(5)
    specs = [rng.uniform(0, 3, size=(257, t)).astype(np.float32) for t in (10, 33)]
    outs, = run_op(lambda s: fn.mel_filter_bank(s, nfilter=40, sample_rate=16000.0,
                                                freq_low=fmin, freq_high=fmax, normalize=normalize,
                                                mel_formula="htk" if htk else "slaney"),
                   specs, layout="ft")
    W = mel_bank_ref(40, 512, 16000.0, fmin, fmax, htk, normalize)
    for s, got in zip(specs, outs):
        want = W @ s.astype(np.float64)
        assert got.shape == (40, s.shape[1])
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * want.max())
    # time-major input: the filters run along "f"
    outs, = run_op(lambda s: fn.mel_filter_bank(s, nfilter=40, sample_rate=16000.0,
                                                freq_low=fmin, freq_high=fmax, normalize=normalize,
                                                mel_formula="htk" if htk else "slaney"),
                   [np.ascontiguousarray(s.T) for s in specs], layout="tf")
    for s, got in zip(specs, outs):
        np.testing.assert_allclose(got, (W @ s.astype(np.float64)).T, rtol=1e-4,
                                   atol=1e-5 * np.abs(got).max())


@pytest.mark.parametrize("shape,axis,nfft,power", [
    ((64,), -1, None, 2), ((100,), 0, 128, 2), ((2, 50), 1, 32, 1), ((3, 16, 2), 1, None, 2),
    ((17, 3), 0, 20, 2), ((5,), 0, 1, 2)])
def test_power_spectrum_vs_numpy(shape, axis, nfft, power):
    rng = np.random.default_rng(4)
    xs = [rng.standard_normal(shape).astype(np.float32) for _ in range(2)]
    xs.append(rng.integers(-50, 50, shape).astype(np.int16))
    kw = {"axis": axis, "power": power}
    if nfft is not None:
        kw["nfft"] = nfft
    for x in xs:
        (out,) = run_op(lambda s: fn.power_spectrum(s, **kw), [x])
        n = nfft or x.shape[axis]
        spec = np.abs(np.fft.rfft(x.astype(np.float64), n=n, axis=axis)) ** power
        assert out[0].dtype == np.float32 and out[0].shape == spec.shape
        np.testing.assert_allclose(out[0], spec, rtol=1e-4, atol=1e-3)


def test_power_spectrum_refusals():
    x = [np.zeros((4, 8), np.float32)]
    for kw, msg in (({"axis": 2}, "axis 2 for 2-D input"), ({"power": 3}, "power 3"),
                    ({"nfft": 0}, "nfft 0")):
        got = failing_message(lambda: run_op(lambda s: fn.power_spectrum(s, **kw), x))
        assert "power_spectrum" in got and msg in got, got
    got = failing_message(lambda: run_op(lambda s: fn.power_spectrum(s), [np.zeros(4, bool)]))
    assert "input type bool" in got, got


def test_to_decibels_vs_numpy():
    rng = np.random.default_rng(6)
    xs = [rng.uniform(0, 10, size=(20, 7)).astype(np.float32) for _ in range(2)]
    xs[1][3, 3] = 0
    a, b = run_op(lambda s: (fn.to_decibels(s),
                             fn.to_decibels(s, multiplier=float(np.log(10)), reference=1.0,
                                            cutoff_db=float(np.log(2.0 ** -24)))), xs)
    for x, g1, g2 in zip(xs, a, b):
        np.testing.assert_allclose(g1, db_ref(x.astype(np.float64)), rtol=1e-5, atol=1e-4)
        want = np.log(np.maximum(x.astype(np.float64), 2.0 ** -24))
        np.testing.assert_allclose(g2, want, rtol=1e-5, atol=1e-4)


def test_mfcc_vs_scipy_dct():
    rng = np.random.default_rng(8)
    xs = [rng.normal(size=(40, t)).astype(np.float32) for t in (5, 12)]
    plain, ortho, lift = run_op(lambda s: (fn.mfcc(s, n_mfcc=13),
                                           fn.mfcc(s, n_mfcc=13, normalize=True),
                                           fn.mfcc(s, n_mfcc=13, normalize=True, lifter=22.0)), xs)
    k = np.arange(13)
    lifter = 1 + 22.0 / 2 * np.sin(np.pi * (k + 1) / 22.0)
    for x, p, o, l in zip(xs, plain, ortho, lift):
        x = x.astype(np.float64)
        # scipy's unnormalised DCT-II is twice DALI's
        np.testing.assert_allclose(p, scipy_fft.dct(x, type=2, axis=0)[:13] / 2, rtol=1e-4,
                                   atol=1e-4)
        want = scipy_fft.dct(x, type=2, axis=0, norm="ortho")[:13]
        np.testing.assert_allclose(o, want, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(l, want * lifter[:, None], rtol=1e-4, atol=1e-4)


def test_shapes():
    xs = [np.zeros((3, 5), np.float32), np.zeros((2, 7), np.float32)]
    (a, b), = run_op(lambda s: fn.shapes(s), xs)
    assert a.dtype == np.int64 and a.tolist() == [3, 5] and b.tolist() == [2, 7]


# ---- readers.nemo_asr ---------------------------------------------------------------------------

def nemo(manifests, batch, **kw):
    @pipeline_def(batch_size=batch, num_threads=2, device_id=None)
    def pipe():
        return fn.readers.nemo_asr(manifest_filepaths=manifests, name="Reader", **kw)
    p = pipe()
    p.build()
    return p


def test_nemo_reader_outputs(audio_dir):
    man = os.path.join(audio_dir, "manifest.json")
    lines = [json.loads(s) for s in open(man)]
    p = nemo([man], 5, read_idxs=True)
    audio, rate, text, idx = p.run()
    for i, e in enumerate(lines):
        want, r = sf.read(os.path.join(audio_dir, e["audio_filepath"]), dtype="float32",
                          always_2d=True)
        np.testing.assert_allclose(audio.at(i), want.astype(np.float64).mean(axis=1), atol=1e-7)
        assert rate.at(i).tolist() == [r]
        assert bytes(text.at(i)).decode("utf-8") == e["text"]
        assert idx.at(i).tolist() == [i]
    assert audio.keys() == [e["audio_filepath"] for e in lines]
    assert p.epoch_size("Reader") == 5


def test_nemo_reader_filters_resamples_and_shards(audio_dir):
    man = os.path.join(audio_dir, "manifest.json")
    p = nemo([man], 2, min_duration=1.0, max_duration=2.0, sample_rate=16000.0,
             read_text=False, read_sample_rate=True)
    audio, rate = p.run()
    # kept: tone16k (1.5 s), chirp (1.0 s), tone48k (1.2 s)
    assert p.epoch_size("Reader") == 3
    assert [rate.at(i).tolist() for i in range(2)] == [[16000.0], [16000.0]]
    assert [len(audio.at(i)) for i in range(2)] == [24000, 16000]
    s0 = nemo([man], 1, num_shards=2, shard_id=1, read_text=False, read_sample_rate=False,
              read_idxs=True)
    (a, idx) = s0.run()
    assert idx.at(0).tolist() == [2]  # shard 1 of 2 over 5 entries starts at 5 * 1 // 2


def test_nemo_offset_cuts(tmp_path, audio_dir):
    man = tmp_path / "m.json"
    path = os.path.join(audio_dir, "tone16k.wav")
    man.write_text(json.dumps({"audio_filepath": path, "offset": 0.25, "duration": 0.5}) + "\n")
    (a,) = nemo([str(man)], 1, read_text=False, read_sample_rate=False).run()
    want = sf.read(path, dtype="float32")[0][4000:12000]
    np.testing.assert_array_equal(a.at(0), want)


# ---- bad input ----------------------------------------------------------------------------------

def failing_message(make):
    with pytest.raises(sluice.Error) as e:
        make()
    return str(e.value)


def test_bad_files_named(tmp_path, audio_dir):
    good = os.path.join(audio_dir, "tone16k.wav")
    data = open(good, "rb").read()
    (tmp_path / "cut.wav").write_bytes(data[:len(data) // 3])
    (tmp_path / "text.wav").write_bytes(b"this is not audio at all, not even close" * 10)
    (tmp_path / "empty.flac").write_bytes(b"")
    flac = open(os.path.join(audio_dir, "noise44k.flac"), "rb").read()
    (tmp_path / "cut.flac").write_bytes(flac[:len(flac) // 2])
    for name, what in (("text.wav", "not an audio file"), ("empty.flac", "empty"),
                       ("cut.flac", "frames")):
        msg = failing_message(lambda: decode([str(tmp_path / name)]))
        assert name in msg and what in msg and "decoders.audio" in msg, msg
    # a WAV cut short: libsndfile reads what is there, the frames its data chunk still holds
    audio, _ = decode([str(tmp_path / "cut.wav")])
    assert 0 < len(audio[0]) < 24000
    lines = [
        ("{\"duration\": 1.0}", "no \"audio_filepath\""),
        ("{\"audio_filepath\": \"tone16k.wav\", \"duration\": -3}", "duration"),
        ("{\"audio_filepath\": \"tone16k.wav\", \"duration\": 1e300}", "duration"),
        ("{\"audio_filepath\": 5}", "must be a string"),
        ("[1, 2]", "not a JSON object"),
        ("{\"audio_filepath\": \"a.wav\" \"text\": \"x\"}", "expected"),
    ]
    for line, what in lines:
        man = tmp_path / "bad.json"
        man.write_text("{\"audio_filepath\": \"tone16k.wav\"}\n\n" + line + "\n")
        msg = failing_message(lambda: nemo([str(man)], 1))
        assert "bad.json:3" in msg and what in msg, msg
    man = tmp_path / "missing.json"
    man.write_text(json.dumps({"audio_filepath": "nowhere.wav", "text": "x"}) + "\n")
    p = nemo([str(man)], 1)
    msg = failing_message(p.run)
    assert "missing.json:1" in msg and "nowhere.wav" in msg, msg
    man = tmp_path / "nodur.json"
    man.write_text(json.dumps({"audio_filepath": good}) + "\n")
    msg = failing_message(lambda: nemo([str(man)], 1, max_duration=3.0))
    assert "nodur.json:1" in msg and "duration" in msg, msg
    msg = failing_message(lambda: nemo([str(tmp_path / "none.json")], 1))
    assert "none.json" in msg, msg
    man = tmp_path / "blank.json"
    man.write_text("\n   \n")
    msg = failing_message(lambda: nemo([str(man)], 1))
    assert "blank.json" in msg and "no entries" in msg, msg
    man = tmp_path / "corrupt.json"
    shutil.copy(str(tmp_path / "text.wav"), str(tmp_path / "t.wav"))
    man.write_text(json.dumps({"audio_filepath": "t.wav"}) + "\n")
    msg = failing_message(nemo([str(man)], 1).run)
    assert "corrupt.json:1" in msg and "t.wav" in msg and "not an audio file" in msg, msg


def test_bad_arguments_refused():
    for make, what in (
            (lambda s: fn.spectrogram(s, window_length=512, nfft=256), "nfft"),
            (lambda s: fn.spectrogram(s, power=3), "power"),
            (lambda s: fn.spectrogram(s, window_length=10, window_fn=[1.0, 2.0]), "window_fn"),
            (lambda s: fn.mel_filter_bank(s, sample_rate=16000.0, freq_high=9000.0), "freq_high"),
            (lambda s: fn.mfcc(s, dct_type=3), "dct_type"),
            (lambda s: fn.audio_resample(s, scale=2.0, out_length=5), "exactly one"),
            (lambda s: fn.to_decibels(s, multiplier=0.0), "multiplier"),
            (lambda s: fn.to_decibels(s, reference=0.0), "`reference` argument can't be zero")):
        msg = failing_message(lambda: run_op(make, [np.zeros((3, 4), np.float32)]))
        assert what in msg, msg
    # an op DALI has on the GPU but sluice runs on the CPU only: device="gpu" runs it on the CPU
    # of a CPU pipeline, as every gpu op there (a CUDA pipeline refuses it at build)
    x = [np.arange(120, dtype=np.float32).reshape(30, 4)]
    (gpu,) = run_op(lambda s: fn.mfcc(s.gpu(), device="gpu"), x)
    (cpu,) = run_op(lambda s: fn.mfcc(s), x)
    np.testing.assert_array_equal(gpu[0], cpu[0])


# ---- the ASR pipeline ---------------------------------------------------------------------------

SR = 16000
NFFT, WIN, HOP, NMEL = 512, 320, 160, 64


@pipeline_def
def nemo_asr_pipeline(manifest):
    # as NeMo's AudioToCharDALIDataset builds it (imports changed; no dither, whose
    # normal_distribution(audio) sluice lacks, and the lengths as whole shapes: no fn.slice)
    audio, indices = fn.readers.nemo_asr(
        name="Reader", manifest_filepaths=manifest, dtype=types.FLOAT, downmix=True,
        sample_rate=float(SR), min_duration=0.0, max_duration=0.0, read_sample_rate=False,
        read_text=False, read_idxs=True, random_shuffle=False, shard_id=0, num_shards=1,
        pad_last_batch=True)
    audio_len = fn.shapes(audio)
    decoded = audio
    audio = fn.preemphasis_filter(audio, preemph_coeff=0.97, border="zero")
    spec = fn.spectrogram(audio, nfft=NFFT, window_length=WIN, window_step=HOP,
                          window_fn=np.hanning(WIN).tolist())
    mel = fn.mel_filter_bank(spec, sample_rate=SR, nfilter=NMEL, normalize=True, freq_low=0.0,
                             freq_high=SR / 2)
    log = fn.to_decibels(mel, multiplier=float(np.log(10)), reference=1.0,
                         cutoff_db=float(np.log(2.0 ** -24)))
    log_len = fn.shapes(log)
    log = fn.normalize(log, axes=[1], ddof=1, epsilon=1e-5 * 1e-5)
    log = fn.pad(log, fill_value=0.0, axes=(0, 1), align=(16, 1), shape=(1, -1))
    return log, log_len, audio_len, indices, decoded


def test_asr_pipeline_vs_numpy(audio_dir):
    man = os.path.join(audio_dir, "manifest.json")
    lines = [json.loads(s) for s in open(man)]
    p = nemo_asr_pipeline([man], batch_size=3, num_threads=2, device_id=None)
    p.build()
    seen = 0
    for _ in range(2):
        feats, flen, alen, idx, decoded = p.run()
        f = feats.as_array()
        assert f.dtype == np.float32 and f.ndim == 3 and f.shape[1] == NMEL
        for i in range(3):
            k = int(idx.at(i)[0])
            e = lines[k]
            x, r = sf.read(os.path.join(audio_dir, e["audio_filepath"]), always_2d=True)
            x = x.mean(axis=1)
            assert int(alen.at(i)[0]) == int(np.ceil(len(x) * SR / r))
            if r != SR:  # resampled by the reader (tested above): the features of its audio
                x = decoded.at(i)
            want = asr_features(x, window=np.hanning(WIN))
            t = int(flen.at(i)[1])
            assert flen.at(i).tolist() == [NMEL, want.shape[1]]
            np.testing.assert_allclose(f[i, :, :t], want, rtol=1e-3, atol=2e-3)
            assert not f[i, :, t:].any()  # padded with zeros
            seen += 1
    assert seen == 6  # two batches of 3: 5 entries and the last repeated (pad_last_batch)
