/* SPDX-License-Identifier: Apache-2.0 */
/* Image header peeking (image_info.h): a JPEG's markers are scanned up to its first scan (frame
 * size and components, sampling factors, JFIF / Adobe markers for libjpeg's colour-space guess,
 * the EXIF orientation) and a PNG's chunks up to its first IDAT (IHDR, tRNS, eXIf), without a
 * decoder. The extents are checked against the size limits before anything is sized from them. */
#include "io/image_info.h"
#include "io/image_raw.h"

#include "core/size.h"

#include <stdio.h>
#include <string.h>

static uint32_t rd16(const uint8_t *p, bool le) {
    return le ? (uint32_t)p[0] | (uint32_t)p[1] << 8 : (uint32_t)p[0] << 8 | p[1];
}
static uint32_t rd32(const uint8_t *p, bool le) {
    return le ? rd16(p, true) | rd16(p + 2, true) << 16 : rd16(p, false) << 16 | rd16(p + 2, false);
}

/* EXIF orientation from a TIFF block (after "Exif\0\0"); 1 when absent or malformed. */
static int tiff_orientation(const uint8_t *t, size_t n) {
    if (n < 8) return 1;
    bool le;
    if (t[0] == 'I' && t[1] == 'I')
        le = true;
    else if (t[0] == 'M' && t[1] == 'M')
        le = false;
    else
        return 1;
    uint32_t ifd = rd32(t + 4, le);
    if (ifd > n - 2) return 1;
    uint32_t count = rd16(t + ifd, le);
    for (uint32_t k = 0; k < count; k++) {
        size_t e = (size_t)ifd + 2 + (size_t)k * 12;
        if (e + 12 > n) return 1;
        if (rd16(t + e, le) == 0x0112) {
            uint32_t v = rd16(t + e + 8, le);
            return v >= 1 && v <= 8 ? (int)v : 1;
        }
    }
    return 1;
}

/* An EOI marker after offset scan (the first scan's): a stream cut short has none there (an EXIF
 * thumbnail's own EOI comes before the scan). Bytes after the EOI are allowed, as libjpeg allows
 * them. Searched from the end, so a whole stream costs a few bytes' look. */
static bool has_eoi_after(const uint8_t *d, size_t n, size_t scan) {
    for (size_t p = n; p > scan + 1; p--)
        if (d[p - 1] == 0xD9 && d[p - 2] == 0xFF) return true;
    return false;
}

static sl_status peek_jpeg(const uint8_t *d, size_t n, bool orient, sl__decode_image_info *info,
                           char *why, size_t why_size) {
    size_t p = 2, scan = 0;
    info->orientation = 1;
    int jfif = 0, adobe = -1; /* adobe: the APP14 transform, -1 without the marker */
    uint8_t id[3] = {0, 0, 0};
    for (;;) {
        while (p < n && d[p] != 0xFF) p++; /* tolerate junk before a marker, as libjpeg does */
        while (p < n && d[p] == 0xFF) p++;
        if (p >= n) break;
        uint8_t m = d[p++];
        if (m == 0xD8 || (m >= 0xD0 && m <= 0xD7) || m == 0x01) continue; /* no length */
        if (m == 0xDA) scan = p;
        if (m == 0xD9 || m == 0xDA) break; /* EOI, SOS */
        if (p + 2 > n) break;
        size_t len = rd16(d + p, false);
        if (len < 2 || p + len > n) break;
        const uint8_t *s = d + p + 2;
        size_t sl = len - 2;
        if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) {
            if (sl < 6) break;
            if (m == 0xC3 || m == 0xC7 || m == 0xCB || m == 0xCF) {
                snprintf(why, why_size, "lossless JPEG is not supported");
                return SL_EFORMAT;
            }
            info->h = rd16(s + 1, false);
            info->w = rd16(s + 3, false);
            info->comps = s[5];
            info->sof = m & 15;
            for (int k = 0; k < info->comps && k < 4 && 6 + 3 * (size_t)k + 1 < sl; k++) {
                if (k < 3) id[k] = s[6 + 3 * k];
                info->samp[k][0] = s[7 + 3 * k] >> 4;
                info->samp[k][1] = s[7 + 3 * k] & 15;
            }
        } else if (m == 0xE0 && sl >= 14 && !memcmp(s, "JFIF", 5)) {
            jfif = 1;
        } else if (m == 0xEE && sl >= 12 && !memcmp(s, "Adobe", 5)) {
            adobe = s[11];
        } else if (m == 0xE1 && orient && sl > 6 && !memcmp(s, "Exif\0\0", 6)) {
            info->orientation = tiff_orientation(s + 6, sl - 6);
        }
        p += len;
    }
    if (info->w <= 0 || info->h <= 0 ||
        !(info->comps == 1 || info->comps == 3 || info->comps == 4)) {
        snprintf(why, why_size, "JPEG header is truncated or has no frame (SOF) marker");
        return SL_EFORMAT;
    }
    info->complete = scan > 0 && has_eoi_after(d, n, scan);
    /* libjpeg's guess of the colour space of 3 components (jdapimin.c, default_decompress_parms) */
    if (info->comps == 3)
        info->ycbcr =
            jfif || (adobe >= 0 ? adobe != 0 : !(id[0] == 'R' && id[1] == 'G' && id[2] == 'B'));
    return SL_OK;
}

static sl_status peek_png(const uint8_t *d, size_t n, bool orient, sl__decode_image_info *info,
                          char *why, size_t why_size) {
    if (n < 33 || memcmp(d + 12, "IHDR", 4) != 0) {
        snprintf(why, why_size, "PNG is truncated or lacks IHDR");
        return SL_EFORMAT;
    }
    info->w = rd32(d + 16, false);
    info->h = rd32(d + 20, false);
    int ct = d[25];
    bool trns = false;
    info->orientation = 1;
    for (size_t p = 8; p + 12 <= n;) {
        uint32_t len = rd32(d + p, false);
        const uint8_t *type = d + p + 4;
        if (!memcmp(type, "IDAT", 4) || len > n - p - 12) break;
        if (!memcmp(type, "tRNS", 4)) trns = true;
        if (!memcmp(type, "eXIf", 4) && orient) info->orientation = tiff_orientation(type + 4, len);
        p += 12 + (size_t)len;
    }
    switch (ct) {
    case 0:
        info->comps = trns ? 2 : 1;
        break;
    case 4:
        info->comps = 2;
        break;
    case 2:
    case 3:
        info->comps = trns ? 4 : 3;
        break;
    case 6:
        info->comps = 4;
        break;
    default:
        snprintf(why, why_size, "PNG color type %d is invalid", ct);
        return SL_EFORMAT;
    }
    if (info->w <= 0 || info->h <= 0) {
        snprintf(why, why_size, "PNG has a zero extent");
        return SL_EFORMAT;
    }
    if (info->w > INT32_MAX || info->h > INT32_MAX) { /* the PNG limit, and libspng's */
        snprintf(why, why_size, "PNG header gives %lldx%lld (at most 2^31-1 a side)",
                 (long long)info->w, (long long)info->h);
        return SL_EFORMAT;
    }
    return SL_OK;
}

/* the formats this build decodes besides JPEG, PNG and BMP, for the refusal's message */
#if defined(SLUICE_HAVE_TIFF) && defined(SLUICE_HAVE_OPENJPEG)
#define TIFF_TOO ", PNM, TIFF and JPEG 2000"
#elif defined(SLUICE_HAVE_TIFF)
#define TIFF_TOO ", PNM and TIFF"
#elif defined(SLUICE_HAVE_OPENJPEG)
#define TIFF_TOO ", PNM and JPEG 2000"
#else
#define TIFF_TOO " and PNM"
#endif

/* the name of an image format DALI reads and sluice does not, from its magic bytes; else NULL */
static const char *other_format(const uint8_t *d, size_t n) {
    if (sl__tiff_magic(d, n)) return "TIFF";     /* (a build without libtiff) */
    if (sl__jp2_magic(d, n)) return "JPEG 2000"; /* (a build without OpenJPEG) */
    if (n >= 12 && !memcmp(d, "RIFF", 4) && !memcmp(d + 8, "WEBP", 4)) return "WebP";
    if (n >= 4 && !memcmp(d, "GIF8", 4)) return "GIF";
    return NULL;
}

sl_status sl__decode_image_peek(const uint8_t *d, size_t n, sl__img_type type, bool orient,
                                int64_t max_pixels, sl__decode_image_info *info, char *why,
                                size_t why_size) {
    memset(info, 0, sizeof *info);
    sl_status st;
    if (n == 0) {
        snprintf(why, why_size, "empty record (0 bytes)");
        return SL_EFORMAT;
    }
    if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF) {
        info->format = SL__IMG_JPEG;
        st = peek_jpeg(d, n, orient, info, why, why_size);
    } else if (n >= 8 && !memcmp(d, "\x89PNG\r\n\x1a\n", 8)) {
        info->format = SL__IMG_PNG;
        st = peek_png(d, n, orient, info, why, why_size);
    } else if (sl__bmp_magic(d, n)) {
        info->format = SL__IMG_BMP;
        st = sl__bmp_peek(d, n, info, why, why_size);
    } else if (sl__pnm_magic(d, n)) {
        info->format = SL__IMG_PNM;
        st = sl__pnm_peek(d, n, info, why, why_size);
#ifdef SLUICE_HAVE_TIFF
    } else if (sl__tiff_magic(d, n)) {
        info->format = SL__IMG_TIFF;
        st = sl__tiff_peek(d, n, info, why, why_size);
#endif
#ifdef SLUICE_HAVE_OPENJPEG
    } else if (sl__jp2_magic(d, n)) {
        info->format = SL__IMG_JP2;
        st = sl__jp2_peek(d, n, info, why, why_size);
#endif
    } else {
        const char *known = other_format(d, n);
        if (known)
            snprintf(why, why_size, "%s images are not supported (sluice decodes JPEG, PNG, BMP%s)",
                     known, TIFF_TOO);
        else
            snprintf(why, why_size,
                     "not a JPEG, PNG, BMP or PNM image (first bytes %02x %02x %02x %02x, %zu "
                     "bytes)",
                     d[0], n > 1 ? d[1] : 0, n > 2 ? d[2] : 0, n > 3 ? d[3] : 0, n);
        return SL_EFORMAT;
    }
    if (st != SL_OK) return st;
    /* the extents come from the file: the pixel count and the decoded size (at most 4 channels
       of 8 bits; libjpeg and libspng decode to that) are checked, so that neither wraps past the
       limit or into a short buffer */
    size_t px, bytes;
    if (sl__size_mul((size_t)info->h, (size_t)info->w, &px) || sl__size_mul(px, 4, &bytes)) {
        snprintf(why, why_size, "image %lldx%lld is too large to decode (more than %zu bytes)",
                 (long long)info->w, (long long)info->h, SL__SIZE_LIMIT);
        return SL_EFORMAT;
    }
    if (max_pixels > 0 && px > (uint64_t)max_pixels) {
        snprintf(why, why_size, "image %lldx%lld exceeds max_image_pixels=%lld", (long long)info->w,
                 (long long)info->h, (long long)max_pixels);
        return SL_EFORMAT;
    }
    bool swap = info->orientation >= 5;
    info->out_h = swap ? info->w : info->h;
    info->out_w = swap ? info->h : info->w;
    switch (type) {
    case SL__IMG_GRAY:
        info->c = 1;
        break;
    case SL__IMG_ANY:
        info->c = info->format == SL__IMG_JPEG ? (info->comps == 1 ? 1 : 3) : info->comps;
        break;
    default:
        info->c = 3;
    }
    return SL_OK;
}

void sl__decode_image_prefetch(const uint8_t *d, size_t n) {
    if (!d || n == 0 || n == SIZE_MAX) return;
    for (size_t o = 0; o < n && o < 512; o += 64) __builtin_prefetch(d + o);
    __builtin_prefetch(d + n - 1);
}

int sl__decode_image_type(const char *name) {
    static const char *const names[] = {"RGB", "BGR", "GRAY", "YCbCr", "ANY_DATA"};
    for (int i = 0; i < 5; i++)
        if (name && !strcmp(name, names[i])) return i;
    return -1;
}
