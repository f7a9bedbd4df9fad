# SPDX-License-Identifier: Apache-2.0
"""Peers for bench_decode.c: PIL and torchvision.io.decode_jpeg, on one thread, decoding and
normalising the very bytes sluice decodes (a blob of (kind u32, length u32, bytes) records: kind 0
Fashion-MNIST, 1 photo). Prints "<peer> <set> <images per second>" lines.
Run with Debian's /usr/bin/python3 (it has PIL, torch and torchvision)."""
import io
import struct
import sys
import time

import numpy as np
import torch
import torchvision
from PIL import Image
from torchvision.io import ImageReadMode, decode_jpeg

torch.set_num_threads(1)


def load(path):
    data = open(path, "rb").read()
    out, p = {0: [], 1: []}, 0
    while p < len(data):
        kind, n = struct.unpack_from("<II", data, p)
        out[kind].append(data[p + 8:p + 8 + n])
        p += 8 + n
    return out


MEAN = np.array([123.675, 116.28, 103.53], np.float32).reshape(3, 1, 1)
STD = np.array([58.395, 57.12, 57.375], np.float32).reshape(3, 1, 1)
TMEAN, TSTD = torch.from_numpy(MEAN), torch.from_numpy(STD)


def pil_mnist(b):
    a = np.asarray(Image.open(io.BytesIO(b)).convert("L"), dtype=np.float32)
    return (a * np.float32(1 / 255.0)).reshape(1, 28, 28)


def pil_photo(b):
    a = np.asarray(Image.open(io.BytesIO(b)).convert("RGB"), dtype=np.float32)
    return (a.transpose(2, 0, 1) - MEAN) / STD


def tv_mnist(b):
    t = decode_jpeg(torch.frombuffer(bytearray(b), dtype=torch.uint8), mode=ImageReadMode.GRAY)
    return t.float() / 255.0


def tv_photo(b):
    t = decode_jpeg(torch.frombuffer(bytearray(b), dtype=torch.uint8), mode=ImageReadMode.RGB)
    return (t.float() - TMEAN) / TSTD


def rate(fn, recs, secs):
    for b in recs:
        fn(b)
    n, t0 = 0, time.perf_counter()
    while True:
        for b in recs:
            fn(b)
        n += len(recs)
        t = time.perf_counter() - t0
        if t >= secs:
            return n / t


def main():
    recs = load(sys.argv[1])
    secs = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
    print("pil mnist %.1f" % rate(pil_mnist, recs[0], secs), flush=True)
    print("torchvision mnist %.1f" % rate(tv_mnist, recs[0], secs), flush=True)
    print("pil photo %.2f" % rate(pil_photo, recs[1], secs), flush=True)
    print("torchvision photo %.2f" % rate(tv_photo, recs[1], secs), flush=True)
    print("versions pil=%s torch=%s torchvision=%s" % (Image.__version__, torch.__version__,
                                                       torchvision.__version__), file=sys.stderr)


if __name__ == "__main__":
    main()
