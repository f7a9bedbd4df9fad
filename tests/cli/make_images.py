# SPDX-License-Identifier: Apache-2.0
"""Writes a small labelled image set as a user would have it: ROOT/train/CLASS/*.png and
ROOT/test/CLASS/*.png, three classes (red, green, blue: that channel is brighter, under noise),
images of several sizes (32x32, 24x40, 48x36, 64x64 in turn). Standard library only.

usage: make_images.py ROOT N   (N images per class in train/, N // 3 in test/)"""
import os
import random
import struct
import sys
import zlib


def write_png(path, w, h, rows):
    """rows: h bytes objects of w RGB pixels each"""
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    raw = b"".join(b"\x00" + r for r in rows)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n"
                + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def main():
    root, n = sys.argv[1], int(sys.argv[2])
    rng = random.Random(0)
    sizes = [(32, 32), (24, 40), (48, 36), (64, 64)]
    for split, count in (("train", n), ("test", max(n // 3, 1))):
        for c, name in enumerate(("red", "green", "blue")):
            folder = os.path.join(root, split, name)
            os.makedirs(folder, exist_ok=True)
            for i in range(count):
                h, w = sizes[i % len(sizes)]
                rows = []
                for _ in range(h):
                    px = bytearray(rng.randrange(140) for _ in range(3 * w))
                    for x in range(w):
                        px[3 * x + c] += 100
                    rows.append(bytes(px))
                write_png(os.path.join(folder, "%03d.png" % i), w, h, rows)


if __name__ == "__main__":
    main()
