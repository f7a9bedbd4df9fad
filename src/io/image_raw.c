/* SPDX-License-Identifier: Apache-2.0 */
/* BMP and PNM images (image_raw.h): the header parsed into the facts the decode needs (both the
 * peek and the decode parse it, so the decode trusts nothing the peek left behind), every read
 * checked against the record's size, every product against overflow. Palette indices beyond the
 * palette, PNM values above maxval and a record shorter than its pixels are errors, never a
 * read past the end. */
#include "io/image_raw.h"

#include "core/size.h"

#include <stdio.h>
#include <string.h>

static uint32_t le16(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}
static uint32_t le32(const uint8_t *p) {
    return le16(p) | le16(p + 2) << 16;
}

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(why, why_size, __VA_ARGS__);                                                      \
        return SL_EFORMAT;                                                                         \
    } while (0)

/* ---- BMP ------------------------------------------------------------------------------------ */

typedef struct bmp_hdr {
    int64_t w, h;
    bool top_down;
    int bpp;
    size_t off;       /* the pixels' offset */
    size_t stride;    /* bytes per stored row (a multiple of 4) */
    int ncolors;      /* palette entries (bpp <= 8) */
    size_t pal;       /* the palette's offset */
    int pal_size;     /* bytes per entry: 3 (core header) or 4 */
    uint32_t mask[4]; /* bit fields R, G, B, A (16 and 32 bits) */
    int comps;
} bmp_hdr;

bool sl__bmp_magic(const uint8_t *d, size_t n) {
    return n >= 2 && d[0] == 'B' && d[1] == 'M';
}

static bool gray_palette(const uint8_t *d, const bmp_hdr *b) {
    for (int k = 0; k < b->ncolors; k++) {
        const uint8_t *e = d + b->pal + (size_t)k * (size_t)b->pal_size;
        if (e[0] != e[1] || e[1] != e[2]) return false;
    }
    return true;
}

static sl_status bmp_parse(const uint8_t *d, size_t n, bmp_hdr *b, char *why, size_t why_size) {
    memset(b, 0, sizeof *b);
    if (n < 26) FAIL("BMP is truncated (%zu bytes, the headers need more)", n);
    b->off = le32(d + 10);
    uint32_t hs = le32(d + 14);
    uint32_t comp = 0, used = 0;
    if (hs == 12) { /* BITMAPCOREHEADER */
        b->w = le16(d + 18), b->h = le16(d + 20);
        b->bpp = (int)le16(d + 24);
        b->pal_size = 3;
    } else if (hs >= 40 && hs <= 124) {
        if (n < 14 + (size_t)hs) FAIL("BMP is truncated (%zu bytes, its header %u)", n, hs);
        int32_t w = (int32_t)le32(d + 18), h = (int32_t)le32(d + 22);
        b->w = w, b->h = h;
        b->top_down = h < 0;
        if (h < 0) b->h = -(int64_t)h;
        b->bpp = (int)le16(d + 28);
        comp = le32(d + 30);
        used = le32(d + 46);
        b->pal_size = 4;
    } else {
        FAIL("BMP header of %u bytes is not one sluice reads (12, or 40 to 124)", hs);
    }
    if (b->w <= 0 || b->h <= 0 || b->w > INT32_MAX || b->h > INT32_MAX)
        FAIL("BMP header gives %lldx%lld", (long long)b->w, (long long)b->h);
    if (comp == 1 || comp == 2) FAIL("BMP with RLE compression is not supported");
    if (comp == 4 || comp == 5)
        FAIL("BMP holding a %s is not supported", comp == 4 ? "JPEG" : "PNG");
    bool fields = comp == 3 || comp == 6;
    if (comp > 6 || (fields && b->bpp != 16 && b->bpp != 32))
        FAIL("BMP compression %u with %d bits per pixel is invalid", comp, b->bpp);
    switch (b->bpp) {
    case 1:
    case 4:
    case 8:
        b->ncolors = used ? (int)(used < (1u << b->bpp) ? used : 1u << b->bpp) : 1 << b->bpp;
        b->pal = 14 + (size_t)hs;
        if (b->pal + (size_t)b->ncolors * (size_t)b->pal_size > n)
            FAIL("BMP palette of %d colours is cut (%zu bytes)", b->ncolors, n);
        b->comps = gray_palette(d, b) ? 1 : 3;
        break;
    case 16:
    case 24:
    case 32:
        b->comps = 3;
        break;
    default:
        FAIL("BMP with %d bits per pixel is invalid", b->bpp);
    }
    if (b->bpp == 16 && !fields) { /* 5-5-5 */
        b->mask[0] = 0x7C00, b->mask[1] = 0x03E0, b->mask[2] = 0x001F;
    } else if (b->bpp == 32 && !fields) {
        b->mask[0] = 0xFF0000, b->mask[1] = 0xFF00, b->mask[2] = 0xFF;
    } else if (fields) { /* in the header (52 bytes and more) or after a 40-byte one */
        int nm = comp == 6 || hs >= 56 ? 4 : 3;
        size_t at = 14 + 40;
        if (at + 4 * (size_t)nm > n) FAIL("BMP bit-field masks are cut (%zu bytes)", n);
        for (int k = 0; k < nm; k++) b->mask[k] = le32(d + at + 4 * (size_t)k);
        if (!b->mask[0] || !b->mask[1] || !b->mask[2]) FAIL("BMP has an empty bit-field mask");
        if (b->bpp == 32 && b->mask[3]) b->comps = 4;
    }
    size_t bits;
    if (sl__size_mul((size_t)b->w, (size_t)b->bpp, &bits) || bits > SL__SIZE_LIMIT - 31)
        FAIL("BMP row of %lld pixels is too long", (long long)b->w);
    b->stride = (bits + 31) / 32 * 4;
    return SL_OK;
}

sl_status sl__bmp_peek(const uint8_t *d, size_t n, sl__decode_image_info *info, char *why,
                       size_t why_size) {
    bmp_hdr b;
    sl_status st = bmp_parse(d, n, &b, why, why_size);
    if (st != SL_OK) return st;
    info->w = b.w, info->h = b.h, info->comps = b.comps, info->orientation = 1;
    return SL_OK;
}

/* one channel from a bit field, scaled to 0..255 */
static uint8_t field(uint32_t v, uint32_t mask) {
    if (!mask) return 255;
    int shift = __builtin_ctz(mask);
    uint32_t m = mask >> shift;
    return (uint8_t)((((v & mask) >> shift) * 255u + m / 2) / m);
}

static sl_status bmp_decode(const uint8_t *d, size_t n, const sl__decode_image_info *info,
                            uint8_t *out, char *why, size_t why_size) {
    bmp_hdr b;
    sl_status st = bmp_parse(d, n, &b, why, why_size);
    if (st != SL_OK) return st;
    if (b.w != info->w || b.h != info->h || b.comps != info->comps)
        FAIL("BMP header changed since its peek");
    size_t need;
    if (sl__size_mul(b.stride, (size_t)b.h, &need) || b.off > n || need > n - b.off)
        FAIL("BMP pixel data is cut: %lld rows of %zu bytes from offset %zu, the file has %zu",
             (long long)b.h, b.stride, b.off, n);
    int c = b.comps;
    for (int64_t y = 0; y < b.h; y++) {
        const uint8_t *row = d + b.off + (size_t)(b.top_down ? y : b.h - 1 - y) * b.stride;
        uint8_t *o = out + (size_t)y * (size_t)b.w * (size_t)c;
        for (int64_t x = 0; x < b.w; x++, o += c) {
            if (b.bpp <= 8) {
                int per = 8 / b.bpp;
                int idx = (row[x / per] >> (8 - b.bpp * (int)(x % per + 1))) & ((1 << b.bpp) - 1);
                if (idx >= b.ncolors)
                    FAIL("BMP pixel (%lld, %lld) is colour %d, the palette has %d", (long long)x,
                         (long long)y, idx, b.ncolors);
                const uint8_t *e = d + b.pal + (size_t)idx * (size_t)b.pal_size;
                if (c == 1)
                    o[0] = e[0];
                else
                    o[0] = e[2], o[1] = e[1], o[2] = e[0];
            } else if (b.bpp == 24) {
                const uint8_t *p = row + 3 * x;
                o[0] = p[2], o[1] = p[1], o[2] = p[0];
            } else {
                uint32_t v = b.bpp == 16 ? le16(row + 2 * x) : le32(row + 4 * x);
                for (int k = 0; k < c; k++) o[k] = field(v, b.mask[k]);
            }
        }
    }
    return SL_OK;
}

/* ---- PNM ------------------------------------------------------------------------------------ */

bool sl__pnm_magic(const uint8_t *d, size_t n) {
    return n >= 3 && d[0] == 'P' && d[1] >= '1' && d[1] <= '6' &&
           (d[2] == ' ' || d[2] == '\t' || d[2] == '\n' || d[2] == '\r' || d[2] == '\v' ||
            d[2] == '\f' || d[2] == '#');
}

static bool space(uint8_t ch) {
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f';
}

/* skips whitespace and comments ('#' to the end of the line) from *at */
static void skip(const uint8_t *d, size_t n, size_t *at) {
    while (*at < n) {
        if (d[*at] == '#')
            while (*at < n && d[*at] != '\n' && d[*at] != '\r') ++*at;
        else if (space(d[*at]))
            ++*at;
        else
            break;
    }
}

/* a decimal number at *at (after whitespace and comments), at most max; false if none */
static bool number(const uint8_t *d, size_t n, size_t *at, int64_t max, int64_t *v) {
    skip(d, n, at);
    if (*at >= n || d[*at] < '0' || d[*at] > '9') return false;
    *v = 0;
    while (*at < n && d[*at] >= '0' && d[*at] <= '9') {
        *v = *v * 10 + (d[(*at)++] - '0');
        if (*v > max) return false;
    }
    return true;
}

typedef struct pnm_hdr {
    int kind; /* 1..6 */
    int64_t w, h, maxval;
    size_t off; /* the raster's offset */
    int comps;
} pnm_hdr;

static sl_status pnm_parse(const uint8_t *d, size_t n, pnm_hdr *p, char *why, size_t why_size) {
    memset(p, 0, sizeof *p);
    if (!sl__pnm_magic(d, n)) FAIL("PNM magic number is invalid");
    p->kind = d[1] - '0';
    p->comps = p->kind == 3 || p->kind == 6 ? 3 : 1;
    size_t at = 2;
    if (!number(d, n, &at, INT32_MAX, &p->w) || !number(d, n, &at, INT32_MAX, &p->h))
        FAIL("PNM header has no valid width and height (at most 2^31-1 each)");
    p->maxval = 1;
    if (p->kind != 1 && p->kind != 4 && !number(d, n, &at, 65535, &p->maxval))
        FAIL("PNM header has no valid maxval (1 to 65535)");
    if (p->w <= 0 || p->h <= 0 || p->maxval <= 0)
        FAIL("PNM header gives %lldx%lld, maxval %lld", (long long)p->w, (long long)p->h,
             (long long)p->maxval);
    if (p->kind >= 4) { /* exactly one whitespace character before the raster */
        if (at >= n || !space(d[at])) FAIL("PNM header does not end in a whitespace");
        at++;
    }
    p->off = at;
    return SL_OK;
}

sl_status sl__pnm_peek(const uint8_t *d, size_t n, sl__decode_image_info *info, char *why,
                       size_t why_size) {
    pnm_hdr p;
    sl_status st = pnm_parse(d, n, &p, why, why_size);
    if (st != SL_OK) return st;
    info->w = p.w, info->h = p.h, info->comps = p.comps, info->orientation = 1;
    return SL_OK;
}

/* a value in 0..maxval scaled to 0..255 */
static uint8_t scale(int64_t v, int64_t maxval) {
    return maxval == 255 ? (uint8_t)v : (uint8_t)((v * 255 + maxval / 2) / maxval);
}

static sl_status pnm_decode(const uint8_t *d, size_t n, const sl__decode_image_info *info,
                            uint8_t *out, char *why, size_t why_size) {
    pnm_hdr p;
    sl_status st = pnm_parse(d, n, &p, why, why_size);
    if (st != SL_OK) return st;
    if (p.w != info->w || p.h != info->h || p.comps != info->comps)
        FAIL("PNM header changed since its peek");
    size_t count = (size_t)p.w * (size_t)p.h * (size_t)p.comps; /* w, h < 2^31: no wrap */
    size_t at = p.off;
    if (p.kind == 4) { /* packed bits, each row whole bytes; 1 is black */
        size_t row = ((size_t)p.w + 7) / 8;
        if (at > n || row * (size_t)p.h > n - at)
            FAIL("PBM raster is cut: %lld rows of %zu bytes, %zu left", (long long)p.h, row,
                 at > n ? 0 : n - at);
        for (int64_t y = 0; y < p.h; y++)
            for (int64_t x = 0; x < p.w; x++) {
                uint8_t byte = d[at + (size_t)y * row + (size_t)x / 8];
                out[(size_t)y * (size_t)p.w + (size_t)x] = (byte >> (7 - x % 8)) & 1 ? 0 : 255;
            }
        return SL_OK;
    }
    if (p.kind >= 5) { /* one or two bytes a value, big-endian */
        size_t bytes = p.maxval < 256 ? 1 : 2;
        if (at > n || count > (n - at) / bytes)
            FAIL("PNM raster is cut: %zu values of %zu bytes, %zu bytes left", count, bytes,
                 at > n ? 0 : n - at);
        for (size_t k = 0; k < count; k++) {
            const uint8_t *v = d + at + k * bytes;
            int64_t x = bytes == 1 ? v[0] : (int64_t)v[0] << 8 | v[1];
            if (x > p.maxval)
                FAIL("PNM value %lld at %zu is above maxval %lld", (long long)x, k,
                     (long long)p.maxval);
            out[k] = scale(x, p.maxval);
        }
        return SL_OK;
    }
    for (size_t k = 0; k < count; k++) { /* ASCII; P1's digits need no whitespace between */
        int64_t x;
        if (p.kind == 1) {
            skip(d, n, &at);
            if (at >= n || (d[at] != '0' && d[at] != '1'))
                FAIL("PBM raster is cut or invalid at value %zu of %zu", k, count);
            out[k] = d[at++] == '1' ? 0 : 255;
            continue;
        }
        if (!number(d, n, &at, p.maxval, &x))
            FAIL("PNM raster is cut or invalid at value %zu of %zu (maxval %lld)", k, count,
                 (long long)p.maxval);
        out[k] = scale(x, p.maxval);
    }
    return SL_OK;
}

bool sl__tiff_magic(const uint8_t *d, size_t n) {
    return n >= 4 && (!memcmp(d, "II*\0", 4) || !memcmp(d, "MM\0*", 4));
}

bool sl__jp2_magic(const uint8_t *d, size_t n) {
    return (n >= 12 && !memcmp(d, "\0\0\0\x0cjP  \r\n\x87\n", 12)) ||
           (n >= 4 && !memcmp(d, "\xff\x4f\xff\x51", 4));
}

sl_status sl__raw_image_decode(const uint8_t *d, size_t n, const sl__decode_image_info *info,
                               uint8_t *out, char *why, size_t why_size) {
#ifdef SLUICE_HAVE_TIFF
    if (info->format == SL__IMG_TIFF) return sl__tiff_decode(d, n, info, out, why, why_size);
#endif
#ifdef SLUICE_HAVE_OPENJPEG
    if (info->format == SL__IMG_JP2) return sl__jp2_decode(d, n, info, out, why, why_size);
#endif
    if (info->format == SL__IMG_BMP) return bmp_decode(d, n, info, out, why, why_size);
    if (info->format == SL__IMG_PNM) return pnm_decode(d, n, info, out, why, why_size);
    FAIL("not a BMP or PNM image");
}
