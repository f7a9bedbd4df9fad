# SPDX-License-Identifier: Apache-2.0
"""Small writers of BMP and PNM files from numpy arrays, written from the formats' specifications
for the decoder tests (independent of the library's readers): BMP with the 12-byte core header or
the 40-byte info header, 1/4/8-bit palettes, 16-bit 5-5-5, 24-bit, 32-bit with bit-field masks,
bottom-up or top-down; PNM P1-P6 with comments and maxval up to 65535; baseline uncompressed
TIFF (gray, gray+alpha, RGB, RGBA, palette; either byte order; several strips)."""

import struct

import numpy as np


def bmp(img, bpp=24, palette=None, top_down=False, core=False, masks=None):
    """img: (H, W, 3) uint8 RGB for 16/24/32 bits, or (H, W) palette indices for bpp <= 8 with
    palette (N, 3) uint8 RGB. masks: (r, g, b[, a]) for 32 bits (BI_BITFIELDS, the pixel values
    then img (H, W) uint32)."""
    h, w = img.shape[:2]
    stride = (w * bpp + 31) // 32 * 4
    rows = []
    for y in (range(h) if top_down else range(h - 1, -1, -1)):
        if bpp <= 8:
            bits = "".join(format(int(v), "0%db" % bpp) for v in img[y])
            bits += "0" * (-len(bits) % 8)
            row = bytes(int(bits[k:k + 8], 2) for k in range(0, len(bits), 8))
        elif bpp == 16:
            px = img[y].astype(np.uint16)
            v = (px[:, 0] >> 3) << 10 | (px[:, 1] >> 3) << 5 | (px[:, 2] >> 3)
            row = v.astype("<u2").tobytes()
        elif bpp == 24:
            row = img[y][:, ::-1].tobytes()
        else:
            row = (img[y].astype("<u4") if masks else
                   np.concatenate([img[y][:, ::-1], np.zeros((w, 1), np.uint8)], 1)).tobytes()
        rows.append(row + b"\0" * (stride - len(row)))
    pal = b""
    if bpp <= 8:
        ent = 3 if core else 4
        pal = b"".join(bytes([b, g, r] + [0] * (ent - 3)) for r, g, b in palette)
    if core:
        dib = struct.pack("<IHHHH", 12, w, h, 1, bpp)
    else:
        comp = 3 if masks else 0
        dib = struct.pack("<IiiHHIIiiII", 40, w, -h if top_down else h, 1, bpp, comp,
                          stride * h, 2835, 2835, len(palette) if bpp <= 8 else 0, 0)
        if masks:
            dib += struct.pack("<%dI" % len(masks), *masks)
    off = 14 + len(dib) + len(pal)
    data = b"".join(rows)
    return b"BM" + struct.pack("<IHHI", off + len(data), 0, 0, off) + dib + pal + data


def pnm(img, kind, maxval=255, comment=True):
    """img: (H, W) for P1/P2/P4/P5 (P1/P4: 1 is black), (H, W, 3) for P3/P6; values <= maxval."""
    h, w = img.shape[:2]
    head = "P%d\n%s%d %d\n" % (kind, "# made by the tests\n" if comment else "", w, h)
    if kind not in (1, 4):
        head += "%d\n" % maxval
    flat = img.reshape(-1)
    if kind in (1, 2, 3):
        body = "\n".join(" ".join(str(int(v)) for v in flat[k:k + 17])
                         for k in range(0, len(flat), 17)) + "\n"
        return head.encode() + body.encode()
    if kind == 4:
        return head.encode() + b"".join(np.packbits(img[y].astype(np.uint8)).tobytes()
                                        for y in range(h))
    return head.encode() + flat.astype(">u2" if maxval > 255 else np.uint8).tobytes()


def tiff(img, big_endian=False, photometric=None, palette=None, rows_per_strip=2, extra=None):
    """A baseline uncompressed TIFF, 8 bits a sample, chunky: img (H, W) or (H, W, S). photometric
    (default: 1 black-is-zero for one or two samples, 2 RGB for more), palette (256, 3) uint8 for
    photometric 3, extra: the ExtraSamples value (2: unassociated alpha) of the last sample."""
    e = ">" if big_endian else "<"
    h, w = img.shape[:2]
    spp = 1 if img.ndim == 2 else img.shape[2]
    if photometric is None:
        photometric = 1 if spp <= 2 else 2
    strips = [img[y:y + rows_per_strip].tobytes() for y in range(0, h, rows_per_strip)]
    blob = bytearray(b"MM\0*" if big_endian else b"II*\0") + b"\0\0\0\0"
    offsets = []
    for s in strips:
        offsets.append(len(blob))
        blob += s
    entries = []  # (tag, type, values): SHORT 3, LONG 4

    def add(tag, typ, values):
        entries.append((tag, typ, list(values)))
    add(256, 4, [w])
    add(257, 4, [h])
    add(258, 3, [8] * spp)
    add(259, 3, [1])
    add(262, 3, [photometric])
    add(273, 4, offsets)
    add(277, 3, [spp])
    add(278, 4, [rows_per_strip])
    add(279, 4, [len(s) for s in strips])
    add(284, 3, [1])
    if palette is not None:  # 16-bit entries: all reds, then greens, then blues
        add(320, 3, [int(v) * 257 for c in range(3) for v in palette[:, c]])
    if extra is not None:
        add(338, 3, [extra])
    ifd_at = len(blob) + len(blob) % 2
    blob += b"\0" * (ifd_at - len(blob))
    after = ifd_at + 2 + 12 * len(entries) + 4
    ifd, outside = bytearray(struct.pack(e + "H", len(entries))), bytearray()
    for tag, typ, values in sorted(entries):
        raw = struct.pack(e + ("H" if typ == 3 else "I") * len(values), *values)
        if len(raw) <= 4:
            field = raw + b"\0" * (4 - len(raw))
        else:
            field = struct.pack(e + "I", after + len(outside))
            outside += raw
        ifd += struct.pack(e + "HHI", tag, typ, len(values)) + field
    ifd += b"\0\0\0\0"
    blob[4:8] = struct.pack(e + "I", ifd_at)
    return bytes(blob + ifd + outside)
