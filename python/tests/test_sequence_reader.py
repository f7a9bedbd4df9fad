# SPDX-License-Identifier: Apache-2.0
"""readers.sequence (DALI's fn.readers.sequence, fn.sequence_reader, ops.SequenceReader): frame
sequences from a folder of streams written here as PPM files (lossless, so every decoded frame is
compared with the array written). The sequences expected are worked out in the test from the rule
DALI documents: per stream (sorted sub-folders, sorted frames), a sequence at every step-th frame
while its last frame, (sequence_length - 1) * stride later, is in the stream; none crosses a
stream. Also: keys and source info, shards, GRAY frames as decoders.image gives them, and the
errors (no stream long enough, frames of different extents, arguments out of range)."""

import numpy as np
import pytest

import sluice
import sluice.fn as fn
import sluice.ops as ops
import sluice.types as types
from image_writers import pnm

STREAMS = {"s0": 7, "s1": 3, "s2": 10}  # frames per stream


def frame(stream, k, h=6, w=5):
    rng = np.random.default_rng(1000 * int(stream[1:]) + k)
    return rng.integers(0, 256, (h, w, 3), dtype=np.uint8)


def make_root(tmp_path, streams=STREAMS, extents=None):
    root = tmp_path / "frames"
    for s, n in streams.items():
        (root / s).mkdir(parents=True)
        for k in range(n):
            h, w = (extents or {}).get((s, k), (6, 5))
            (root / s / ("%05d.ppm" % (k + 1))).write_bytes(pnm(frame(s, k, h, w), 6))
        (root / s / "notes.txt").write_text("not a frame")
    (root / "README.txt").write_text("not a stream")
    return root


def expected(length, step, stride, streams=STREAMS):
    """(stream, first frames) of every sequence, by the documented rule"""
    seqs = []
    for s in sorted(streams):
        n = streams[s]
        start = 0
        while start + (length - 1) * stride < n:
            seqs.append((s, [start + j * stride for j in range(length)]))
            start += step
    return seqs


def read_epoch(root, batch, legacy=False, **kw):
    pipe = sluice.Pipeline(batch_size=batch, num_threads=2, device_id=None)
    with pipe:
        if legacy:
            seq = ops.SequenceReader(file_root=str(root), **kw)(name="Reader")
        else:
            seq = fn.readers.sequence(file_root=str(root), name="Reader", **kw)
        pipe.set_outputs(seq)
    pipe.build()
    n = pipe.reader_meta("Reader")["epoch_size"]  # every shard's together
    shards, shard = kw.get("num_shards", 1), kw.get("shard_id", 0)
    n = n * (shard + 1) // shards - n * shard // shards
    got = []
    for _ in range(-(-n // batch)):
        (out,) = pipe.run()
        got += [(np.asarray(out.at(i)), out[i].source_info()) for i in range(len(out))]
    return got[:n], out.layout()


@pytest.mark.parametrize("length,step,stride", [(3, 1, 1), (3, 2, 2), (1, 3, 1), (4, 5, 2)])
def test_sequences_follow_the_rule(tmp_path, length, step, stride):
    root = make_root(tmp_path)
    want = expected(length, step, stride)
    got, layout = read_epoch(root, 4, sequence_length=length, step=step, stride=stride)
    assert layout == "FHWC"
    assert len(got) == len(want)
    for (arr, info), (s, frames) in zip(got, want):
        assert arr.dtype == np.uint8 and arr.shape == (length, 6, 5, 3)
        for j, k in enumerate(frames):
            np.testing.assert_array_equal(arr[j], frame(s, k))
        assert info == str(root / s / ("%05d.ppm" % (frames[0] + 1)))


@pytest.mark.parametrize("form", ["fn", "alias", "legacy"])
def test_the_three_spellings(tmp_path, form):
    root = make_root(tmp_path)
    if form == "fn":
        got, _ = read_epoch(root, 2, sequence_length=2)
    elif form == "legacy":
        got, _ = read_epoch(root, 2, legacy=True, sequence_length=2)
    else:
        pipe = sluice.Pipeline(batch_size=2, num_threads=1, device_id=None)
        with pipe:
            pipe.set_outputs(fn.sequence_reader(file_root=str(root), sequence_length=2))
        pipe.build()
        (out,) = pipe.run()
        got = [(np.asarray(out.at(i)), None) for i in range(2)]
    np.testing.assert_array_equal(got[0][0], np.stack([frame("s0", 0), frame("s0", 1)]))
    np.testing.assert_array_equal(got[1][0], np.stack([frame("s0", 1), frame("s0", 2)]))


def test_shards_split_the_sequences(tmp_path):
    root = make_root(tmp_path)
    want = expected(3, 1, 1)  # 5 + 1 + 8 = 14 sequences
    seen = []
    for shard in range(2):
        got, _ = read_epoch(root, 3, sequence_length=3, num_shards=2, shard_id=shard)
        first = len(want) * shard // 2
        assert len(got) == len(want) * (shard + 1) // 2 - first
        for j, (arr, _) in enumerate(got):
            s, frames = want[first + j]
            np.testing.assert_array_equal(arr[0], frame(s, frames[0]))
            seen.append((s, frames[0]))
    assert len(set(seen)) == len(want)


def test_shuffled_epoch_is_every_sequence_once(tmp_path):
    root = make_root(tmp_path)
    want = expected(2, 1, 1)
    got, _ = read_epoch(root, 4, sequence_length=2, random_shuffle=True, initial_fill=8, seed=7)
    firsts = sorted(info for _, info in got)
    assert firsts == sorted(str(root / s / ("%05d.ppm" % (f[0] + 1))) for s, f in want)


def test_gray_frames_as_the_image_decoder_gives_them(tmp_path):
    root = make_root(tmp_path)
    got, _ = read_epoch(root, 3, sequence_length=3, image_type=types.GRAY)
    pipe = sluice.Pipeline(batch_size=3, num_threads=1, device_id=None)
    with pipe:
        files = [str(root / "s0" / ("%05d.ppm" % k)) for k in (1, 2, 3)]
        raw, _ = fn.readers.file(files=files)
        pipe.set_outputs(fn.decoders.image(raw, output_type=types.GRAY))
    pipe.build()
    (dec,) = pipe.run()
    assert got[0][0].shape == (3, 6, 5, 1)
    for j in range(3):
        np.testing.assert_array_equal(got[0][0][j], np.asarray(dec.at(j)))


def test_no_stream_long_enough_names_the_longest(tmp_path):
    root = make_root(tmp_path)
    with pytest.raises(sluice.errors.Error, match=r"longest has 10 frames"):
        read_epoch(root, 2, sequence_length=6, stride=2)


def test_frames_of_different_extents_name_the_frame(tmp_path):
    root = make_root(tmp_path, {"s0": 4}, extents={("s0", 2): (6, 7)})
    with pytest.raises(sluice.errors.Error,
                       match=r"frame 2 \(s0/00003.ppm\) is 6x7x3, the sequence's first frame 6x5x3"):
        read_epoch(root, 2, sequence_length=4)


@pytest.mark.parametrize("arg", ["sequence_length", "step", "stride"])
def test_arguments_below_one_are_refused(tmp_path, arg):
    root = make_root(tmp_path)
    kw = {"sequence_length": 2, arg: 0}
    with pytest.raises(sluice.errors.Error, match=arg + r" must be 1"):
        read_epoch(root, 2, **kw)


def test_a_root_without_streams_is_an_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(sluice.errors.Error, match=r"empty: no image or audio files found"):
        read_epoch(tmp_path / "empty", 2, sequence_length=2)
    with pytest.raises(sluice.errors.Error, match=r"missing"):
        read_epoch(tmp_path / "missing", 2, sequence_length=2)
