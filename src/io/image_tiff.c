/* SPDX-License-Identifier: Apache-2.0 */
/* TIFF images through libtiff (built where libtiff is found; image_raw.h): the record is read
 * from memory through libtiff's client I/O, its first directory's extents and samples per pixel
 * peeked, and the image decoded with TIFFReadRGBAImageOriented (any compression, bit depth and
 * photometric libtiff converts to 8-bit RGBA), top row first. libtiff's messages go to a handler
 * of the open call's own (never to stderr): an error becomes the reason, warnings are dropped. A
 * decode's allocations are capped (libtiff's per-allocation limit) by the image's and record's
 * sizes. */
#include "io/image_raw.h"

#include "core/size.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tiffio.h>

typedef struct mem {
    const uint8_t *d;
    size_t n, pos;
    char *why; /* libtiff's first error */
    size_t why_size;
    bool failed;
} mem;

static tmsize_t mem_read(thandle_t h, void *buf, tmsize_t size) {
    mem *m = h;
    if (size < 0) return -1;
    size_t k = m->pos < m->n ? m->n - m->pos : 0;
    if ((size_t)size < k) k = (size_t)size;
    if (k) memcpy(buf, m->d + m->pos, k);
    m->pos += k;
    return (tmsize_t)k;
}

static tmsize_t mem_write(thandle_t h, void *buf, tmsize_t size) {
    (void)h, (void)buf, (void)size;
    return -1;
}

static toff_t mem_seek(thandle_t h, toff_t off, int whence) {
    mem *m = h;
    uint64_t base = whence == SEEK_CUR ? m->pos : whence == SEEK_END ? m->n : 0;
    if (off > UINT64_MAX - base || base + off > SL__SIZE_LIMIT) return (toff_t)-1;
    m->pos = (size_t)(base + off);
    return m->pos;
}

static int mem_close(thandle_t h) {
    (void)h;
    return 0;
}

static toff_t mem_size(thandle_t h) {
    return ((mem *)h)->n;
}

static int on_error(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap) {
    (void)tif;
    mem *m = user;
    if (m && !m->failed) {
        char msg[192];
        vsnprintf(msg, sizeof msg, fmt, ap);
        snprintf(m->why, m->why_size, "TIFF: %s%s%s", module ? module : "", module ? ": " : "",
                 msg);
        m->failed = true;
    }
    return 1; /* handled: nothing printed */
}

static int on_warning(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap) {
    (void)tif, (void)user, (void)module, (void)fmt, (void)ap;
    return 1;
}

/* opens the record; NULL with the reason in m->why */
static TIFF *open_mem(mem *m, tmsize_t cap) {
    TIFFOpenOptions *o = TIFFOpenOptionsAlloc();
    if (!o) {
        snprintf(m->why, m->why_size, "out of memory for a TIFF decoder");
        return NULL;
    }
    TIFFOpenOptionsSetErrorHandlerExtR(o, on_error, m);
    TIFFOpenOptionsSetWarningHandlerExtR(o, on_warning, m);
    if (cap > 0) TIFFOpenOptionsSetMaxSingleMemAlloc(o, cap);
    TIFF *t = TIFFClientOpenExt("record", "rm", m, mem_read, mem_write, mem_seek, mem_close,
                                mem_size, NULL, NULL, o);
    TIFFOpenOptionsFree(o);
    if (!t && !m->failed) snprintf(m->why, m->why_size, "TIFF header is invalid");
    return t;
}

sl_status sl__tiff_peek(const uint8_t *d, size_t n, sl__decode_image_info *info, char *why,
                        size_t why_size) {
    mem m = {d, n, 0, why, why_size, false};
    TIFF *t = open_mem(&m, 0);
    if (!t) return SL_EFORMAT;
    uint32_t w = 0, h = 0;
    uint16_t spp = 1, photo = PHOTOMETRIC_MINISBLACK;
    int ok = TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &w) && TIFFGetField(t, TIFFTAG_IMAGELENGTH, &h);
    TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLESPERPIXEL, &spp);
    TIFFGetField(t, TIFFTAG_PHOTOMETRIC, &photo);
    TIFFClose(t);
    if (!ok || w == 0 || h == 0 || w > INT32_MAX || h > INT32_MAX) {
        snprintf(why, why_size, "TIFF header gives %ux%u", w, h);
        return SL_EFORMAT;
    }
    info->w = w, info->h = h, info->orientation = 1;
    /* the channels: gray (and alpha) for a gray photometric, else RGB (and alpha when a sample
       is left beyond the colour's: 3 for RGB and YCbCr, 4 for CMYK, 1 through a palette) */
    int colour = photo == PHOTOMETRIC_SEPARATED ? 4 : photo == PHOTOMETRIC_PALETTE ? 1 : 3;
    if (photo == PHOTOMETRIC_MINISBLACK || photo == PHOTOMETRIC_MINISWHITE)
        info->comps = spp >= 2 ? 2 : 1;
    else
        info->comps = spp > colour ? 4 : 3;
    return SL_OK;
}

/* 8-bit chunky RGB or black-is-zero gray in strips: read row by row as stored, the samples kept
 * exactly (libtiff's RGBA image would premultiply an unassociated alpha) */
static bool plain(TIFF *t) {
    uint16_t bps = 0, planar = PLANARCONFIG_CONTIG, photo = 0, orient = ORIENTATION_TOPLEFT;
    TIFFGetFieldDefaulted(t, TIFFTAG_BITSPERSAMPLE, &bps);
    TIFFGetFieldDefaulted(t, TIFFTAG_PLANARCONFIG, &planar);
    TIFFGetFieldDefaulted(t, TIFFTAG_ORIENTATION, &orient);
    TIFFGetField(t, TIFFTAG_PHOTOMETRIC, &photo);
    return bps == 8 && planar == PLANARCONFIG_CONTIG && orient == ORIENTATION_TOPLEFT &&
           !TIFFIsTiled(t) && (photo == PHOTOMETRIC_RGB || photo == PHOTOMETRIC_MINISBLACK);
}

static sl_status read_rows(TIFF *t, const mem *m, const sl__decode_image_info *info, uint8_t *out,
                           char *why, size_t why_size) {
    uint16_t spp = 1;
    TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLESPERPIXEL, &spp);
    int c = info->comps;
    tmsize_t line = TIFFScanlineSize(t);
    if (spp < c || line < 0 || (uint64_t)line < (uint64_t)info->w * spp) {
        snprintf(why, why_size, "TIFF rows of %lld bytes for %lld pixels of %u samples",
                 (long long)line, (long long)info->w, spp);
        return SL_EFORMAT;
    }
    uint8_t *row = malloc((size_t)line);
    if (!row) {
        snprintf(why, why_size, "out of memory for a TIFF row");
        return SL_ENOMEM;
    }
    for (int64_t y = 0; y < info->h; y++) {
        if (TIFFReadScanline(t, row, (uint32_t)y, 0) < 0) {
            free(row);
            if (!m->failed)
                snprintf(why, why_size, "TIFF row %lld could not be read", (long long)y);
            return SL_EFORMAT;
        }
        uint8_t *o = out + (size_t)y * (size_t)info->w * (size_t)c;
        for (int64_t x = 0; x < info->w; x++)
            for (int k = 0; k < c; k++) /* gray (alpha) or RGB (alpha): the first samples */
                o[x * c + k] = row[x * spp + k];
    }
    free(row);
    return SL_OK;
}

sl_status sl__tiff_decode(const uint8_t *d, size_t n, const sl__decode_image_info *info,
                          uint8_t *out, char *why, size_t why_size) {
    size_t px = (size_t)info->w * (size_t)info->h; /* the peek bounded px * 4 */
    mem m = {d, n, 0, why, why_size, false};
    /* one allocation at most: the image twice over in RGBA, the record, and libtiff's own
       working buffers; a header that asks for more (a strip larger than any image) fails */
    TIFF *t = open_mem(&m, (tmsize_t)(px * 8 + n + ((size_t)1 << 20)));
    if (!t) return SL_EFORMAT;
    uint32_t w = 0, h = 0;
    TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &w);
    TIFFGetField(t, TIFFTAG_IMAGELENGTH, &h);
    if (w == info->w && h == info->h && plain(t)) {
        sl_status st = read_rows(t, &m, info, out, why, why_size);
        TIFFClose(t);
        return m.failed ? SL_EFORMAT : st;
    }
    uint32_t *rgba = w == info->w && h == info->h ? malloc(px * 4) : NULL;
    if (!rgba) {
        TIFFClose(t);
        snprintf(why, why_size,
                 w == info->w && h == info->h ? "out of memory for a %lldx%lld TIFF"
                                              : "TIFF header changed since its peek",
                 (long long)info->w, (long long)info->h);
        return w == info->w && h == info->h ? SL_ENOMEM : SL_EFORMAT;
    }
    int ok = TIFFReadRGBAImageOriented(t, w, h, rgba, ORIENTATION_TOPLEFT, 0);
    TIFFClose(t);
    if (!ok || m.failed) {
        if (!m.failed) snprintf(why, why_size, "TIFF decode failed");
        free(rgba);
        return SL_EFORMAT;
    }
    int c = info->comps;
    for (size_t k = 0; k < px; k++) {
        uint32_t v = rgba[k];
        uint8_t r = (uint8_t)TIFFGetR(v), g = (uint8_t)TIFFGetG(v), b = (uint8_t)TIFFGetB(v),
                a = (uint8_t)TIFFGetA(v);
        uint8_t *o = out + k * (size_t)c;
        if (c == 1)
            o[0] = r;
        else if (c == 2)
            o[0] = r, o[1] = a;
        else if (c == 3)
            o[0] = r, o[1] = g, o[2] = b;
        else
            o[0] = r, o[1] = g, o[2] = b, o[3] = a;
    }
    free(rgba);
    return SL_OK;
}
