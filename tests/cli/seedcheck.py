# SPDX-License-Identifier: Apache-2.0
"""Checks for the CLI tests of the seed pipeline (standard library only).

Trace files start with a "# epoch\tstep\tdevice\tslot\tkey" header; lines starting with '#' are
skipped (mpi.sh concatenates several ranks' files).
trace FILE N S: every pipeline's stream of keys, over the epochs of the trace, is its shard, then
    the next shard, ... (DALI's reader rules: shard d first, rotation, read-ahead carried): each
    consecutive block of a shard's size holds each key of that shard exactly once.
dump DIR IDX_IMAGES TRACE: every dumped (B, 784) float32 image equals the dumped decoded uint8
    image / 255 (to float32 rounding), and is close to the Fashion-MNIST source image of its key
    (JPEG q95 is lossy), so images and keys belong together.
same A B: two dump folders hold byte-identical files.
"""
import gzip
import os
import struct
import sys


def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    sys.exit(1)


def read_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        fail(path + ": not npy")
    hlen = struct.unpack("<H", data[8:10])[0]
    header = data[10:10 + hlen].decode()
    shape = tuple(int(x) for x in header.split("(")[1].split(")")[0].split(",") if x.strip())
    descr = header.split("'descr': '")[1].split("'")[0]
    body = data[10 + hlen:]
    n = 1
    for s in shape:
        n *= s
    if descr == "<f4":
        vals = struct.unpack("<%df" % n, body[:4 * n])
    elif descr == "|u1":
        vals = body[:n]
    elif descr == "<i4":
        vals = struct.unpack("<%di" % n, body[:4 * n])
    else:
        fail(path + ": dtype " + descr)
    return shape, vals


def check_trace(path, n, s):
    n, s = int(n), int(s)
    starts = [i * n // s for i in range(s + 1)]
    streams = {}
    epochs = set()
    with open(path) as f:
        for line in f:
            if line.startswith("#"):  # the header line
                continue
            epoch, step, dev, slot, key = line.rstrip("\n").split("\t")
            epochs.add(int(epoch))
            streams.setdefault(int(dev), []).append((int(epoch), int(step), int(slot), int(key)))
    if sorted(streams) != list(range(s)):
        fail("devices in the trace: %s" % sorted(streams))
    for dev, recs in streams.items():
        if recs != sorted(recs):
            fail("device %d: trace lines out of order" % dev)
        keys = [r[3] for r in recs]
        shard, pos = dev, 0
        while pos < len(keys):
            size = starts[shard + 1] - starts[shard]
            block = keys[pos:pos + size]
            want = set(range(starts[shard], starts[shard + 1]))
            if len(block) == size:
                if set(block) != want or len(set(block)) != size:
                    fail("device %d: block at %d is not shard %d exactly once" % (dev, pos, shard))
            elif not set(block) <= want or len(set(block)) != len(block):
                fail("device %d: partial block at %d is not within shard %d" % (dev, pos, shard))
            pos += size
            shard = (shard + 1) % s
    print("trace ok: %d devices, epochs %s, %d samples" %
          (s, sorted(epochs), sum(len(v) for v in streams.values())))


def load_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    n, h, w = struct.unpack(">III", data[4:16])
    return data[16:], h * w


def check_dump(d, idx_images, trace):
    pixels, size = load_idx(idx_images)
    keys = {}
    with open(trace) as f:
        for line in f:
            if line.startswith("#"):
                continue
            epoch, step, dev, slot, key = line.rstrip("\n").split("\t")
            keys[(epoch, step, dev, int(slot))] = int(key)
    count = 0
    for name in sorted(os.listdir(d)):
        if not name.startswith("images_"):
            continue
        _, epoch, step, dev = name[:-4].split("_")
        shape, f32 = read_npy(os.path.join(d, name))
        shape8, u8 = read_npy(os.path.join(d, "decoded_%s_%s_%s.npy" % (epoch, step, dev)))
        if shape[1] != 784 or shape8[0] != shape[0]:
            fail("%s: shapes %s %s" % (name, shape, shape8))
        for slot in range(shape[0]):
            row = f32[slot * 784:(slot + 1) * 784]
            raw = u8[slot * 784:(slot + 1) * 784]
            for a, b in zip(row, raw):
                if abs(a - b / 255.0) > 1e-7:
                    fail("%s slot %d: %r is not %d/255" % (name, slot, a, b))
            key = keys[(epoch, step, dev, slot)]
            src = pixels[key * size:(key + 1) * size]
            diff = sum(abs(a - b) for a, b in zip(raw, src)) / 784.0
            if diff > 3.0:
                fail("%s slot %d: mean |decoded - source %d| = %.2f" % (name, slot, key, diff))
            count += 1
    if count == 0:
        fail("no images dumped in " + d)
    print("dump ok: %d images equal pixel/255 and match their keys' source images" % count)


def check_same(a, b):
    fa, fb = sorted(os.listdir(a)), sorted(os.listdir(b))
    if fa != fb or not fa:
        fail("dump folders differ in files: %d vs %d" % (len(fa), len(fb)))
    for name in fa:
        with open(os.path.join(a, name), "rb") as x, open(os.path.join(b, name), "rb") as y:
            if x.read() != y.read():
                fail("%s differs" % name)
    print("same: %d files byte-equal" % len(fa))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "trace":
        check_trace(*sys.argv[2:])
    elif cmd == "dump":
        check_dump(*sys.argv[2:])
    elif cmd == "same":
        check_same(*sys.argv[2:])
    else:
        fail("unknown check " + cmd)
