/* SPDX-License-Identifier: Apache-2.0 */
/* decoders.image: JPEG (libjpeg-turbo through the libjpeg API: baseline, progressive, gray, 4:2:0,
 * 4:4:4, CMYK/YCCK) and PNG (libspng) to HWC uint8, with DALI's output_type (RGB, BGR, GRAY = the
 * JPEG luma plane, YCbCr BT.601, ANY_DATA) and EXIF orientation. The format comes from the magic
 * bytes. setup peeks at the headers with a small marker scanner (no decoder needed) to learn every
 * output shape; run_cpu decodes sample i straight into its output with the worker's decompressor,
 * which is created once per pool thread and reused across images. libjpeg's error_exit longjmps
 * back here, so bad data is an SL_EFORMAT naming the record, never an exit. The shared decode core
 * is also used by decoders.image_random_crop (image_random_crop.c). */
#include "ops/decode_image.h"
#include "ops/jpeg_ycc.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"
#include "core/size.h"

#include <stdio.h> /* before jpeglib.h, which uses FILE */

#include <jerror.h>
#include <jpeglib.h>
#include <math.h>
#include <setjmp.h>
#include <spng.h>
#include <stdlib.h>
#include <string.h>

#ifdef SLUICE_HAVE_NVJPEG
#include "core/cuda.h"
#include "ops/cast.h"
#include "ops/crop_mirror_normalize.h"
#include "ops/decode_image_nvjpeg.h"
#endif

/* ---- header peek ---------------------------------------------------------------------------- */

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
    } else {
        snprintf(why, why_size, "not a JPEG or PNG (first bytes %02x %02x %02x %02x, %zu bytes)",
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

int sl__decode_image_type(const char *name) {
    static const char *const names[] = {"RGB", "BGR", "GRAY", "YCbCr", "ANY_DATA"};
    for (int i = 0; i < 5; i++)
        if (name && !strcmp(name, names[i])) return i;
    return -1;
}

/* ---- pixel conversions ---------------------------------------------------------------------- */

static inline uint8_t clamp_u8(int v) {
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* One row of n pixels: src has sc channels in "from" (0 RGB, 1 CMYK, 2 inverted CMYK, 3 gray),
 * dst gets the channels of type. In place is fine (dst channels <= src channels). */
static void convert_row(const uint8_t *src, int sc, int from, uint8_t *dst, int64_t n,
                        sl__img_type type, int dc) {
    for (int64_t i = 0; i < n; i++) {
        const uint8_t *s = src + i * sc;
        int r, g, b;
        if (from == 3) {
            r = g = b = s[0];
        } else if (from == 0) {
            r = s[0], g = s[1], b = s[2];
        } else { /* CMYK: Adobe files store inverted values, so R = C*K/255 there */
            int c = s[0], m = s[1], y = s[2], k = s[3];
            if (from == 1) c = 255 - c, m = 255 - m, y = 255 - y, k = 255 - k;
            r = (c * k + 127) / 255, g = (m * k + 127) / 255, b = (y * k + 127) / 255;
        }
        uint8_t *o = dst + i * dc;
        switch (type) {
        case SL__IMG_BGR:
            o[0] = (uint8_t)b, o[1] = (uint8_t)g, o[2] = (uint8_t)r;
            break;
        case SL__IMG_GRAY: /* BT.601 luma, fixed point as libjpeg's rgb_gray_convert */
            o[0] = (uint8_t)((19595 * r + 38470 * g + 7471 * b + 32768) >> 16);
            break;
        case SL__IMG_YCBCR: /* ITU-R BT.601 studio swing */
            o[0] = clamp_u8((int)(16.5 + (65.481 * r + 128.553 * g + 24.966 * b) / 255.0));
            o[1] = clamp_u8((int)(128.5 + (-37.797 * r - 74.203 * g + 112.0 * b) / 255.0));
            o[2] = clamp_u8((int)(128.5 + (112.0 * r - 93.786 * g - 18.214 * b) / 255.0));
            break;
        default:
            if (dc == 1)
                o[0] = (uint8_t)r;
            else
                o[0] = (uint8_t)r, o[1] = (uint8_t)g, o[2] = (uint8_t)b;
        }
    }
}

/* Copies the roi of the oriented image from src (h, w, c) to dst (roi.h, roi.w, c). */
static void orient_copy(const uint8_t *src, int64_t h, int64_t w, int c, int orientation,
                        const sl__decode_image_roi *roi, uint8_t *dst) {
    for (int64_t oy = roi->y; oy < roi->y + roi->h; oy++) {
        uint8_t *o = dst + (oy - roi->y) * roi->w * c;
        for (int64_t ox = roi->x; ox < roi->x + roi->w; ox++, o += c) {
            int64_t sy, sx;
            switch (orientation) {
            case 2:
                sy = oy, sx = w - 1 - ox;
                break;
            case 3:
                sy = h - 1 - oy, sx = w - 1 - ox;
                break;
            case 4:
                sy = h - 1 - oy, sx = ox;
                break;
            case 5:
                sy = ox, sx = oy;
                break;
            case 6:
                sy = h - 1 - ox, sx = oy;
                break;
            case 7:
                sy = h - 1 - ox, sx = w - 1 - oy;
                break;
            case 8:
                sy = ox, sx = w - 1 - oy;
                break;
            default:
                sy = oy, sx = ox;
            }
            memcpy(o, src + (sy * w + sx) * c, (size_t)c);
        }
    }
}

/* ---- the per-thread decoder ----------------------------------------------------------------- */

typedef struct jerr {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
} jerr;

struct sl__decode_image_worker {
    struct jpeg_decompress_struct cinfo;
    jerr err;
    bool cinfo_ok;
    uint8_t *scratch; /* whole decoded images (orientation, conversions, PNG) */
    size_t scratch_size;
    JSAMPROW *rows;
    size_t rows_cap;
};

static void jerr_exit(j_common_ptr c) {
    longjmp(((jerr *)c->err)->jump, 1);
}

/* Warnings: libjpeg pads a truncated or corrupt entropy stream with gray and carries on; here a
 * stream that ends early (no data, or a marker where data should be), a bad Huffman code or a lost
 * restart marker is an error, so a damaged record is never handed on as an image. Benign warnings
 * (extraneous bytes before a marker, odd APP segments) are tolerated, as PIL and DALI do. */
static void jerr_emit(j_common_ptr c, int level) {
    if (level >= 0) return;
    c->err->num_warnings++;
    switch (c->err->msg_code) {
    case JWRN_JPEG_EOF:
    case JWRN_HIT_MARKER:
    case JWRN_HUFF_BAD_CODE:
    case JWRN_MUST_RESYNC:
    case JWRN_NOT_SEQUENTIAL:
        longjmp(((jerr *)c->err)->jump, 1);
    default:
        break;
    }
}

sl_status sl__decode_image_worker_create(bool save_exif, sl__decode_image_worker **out,
                                         sl_err *err) {
    sl__decode_image_worker *w = sl__calloc(1, sizeof *w, err);
    if (!w) return SL_ENOMEM;
    w->cinfo.err = jpeg_std_error(&w->err.pub);
    w->err.pub.error_exit = jerr_exit;
    w->err.pub.emit_message = jerr_emit;
    if (setjmp(w->err.jump)) {
        free(w);
        return sl_err_set(err, SL_ENOMEM, "cannot create a JPEG decompressor");
    }
    jpeg_create_decompress(&w->cinfo);
    w->cinfo_ok = true;
    if (save_exif) jpeg_save_markers(&w->cinfo, JPEG_APP0 + 1, 0xFFFF);
    *out = w;
    return SL_OK;
}

void sl__decode_image_worker_free(sl__decode_image_worker *w) {
    if (!w) return;
    if (w->cinfo_ok) jpeg_destroy_decompress(&w->cinfo);
    free(w->scratch);
    free(w->rows);
    free(w);
}

static uint8_t *scratch(sl__decode_image_worker *w, size_t n) {
    if (n > w->scratch_size) {
        free(w->scratch);
        w->scratch = malloc(n);
        w->scratch_size = w->scratch ? n : 0;
    }
    return w->scratch;
}

static JSAMPROW *rows(sl__decode_image_worker *w, size_t n) {
    if (n > w->rows_cap) {
        free(w->rows);
        w->rows = malloc(n * sizeof *w->rows);
        w->rows_cap = w->rows ? n : 0;
    }
    return w->rows;
}

/* The decode proper; libjpeg errors longjmp out of it to decode_jpeg. */
static sl_status jpeg_body(sl__decode_image_worker *w, const uint8_t *data, size_t size,
                           const sl__decode_image_info *info, sl__img_type type,
                           const sl__decode_image_roi *roi, bool fast_idct, uint8_t *out, char *why,
                           size_t why_size) {
    struct jpeg_decompress_struct *ci = &w->cinfo;
    int c = info->c;
    /* what libjpeg writes (sc channels) and what we convert from */
    J_COLOR_SPACE cs = JCS_RGB;
    int sc = 3, from = 0;
    bool direct = false; /* libjpeg's output is already the requested format */
    bool cmyk = info->comps == 4;
    uint8_t *buf = NULL;
    int64_t H = info->h, W = info->w;
    bool oriented = info->orientation != 1;
    bool full = roi->y == 0 && roi->x == 0 && roi->h == info->out_h && roi->w == info->out_w;
    if (cmyk) {
        cs = JCS_CMYK, sc = 4;
    } else if (type == SL__IMG_GRAY || (type == SL__IMG_ANY && info->comps == 1)) {
        cs = JCS_GRAYSCALE, sc = 1, from = 3, direct = true; /* the luma plane, as nvJPEG's Y */
    } else if (type == SL__IMG_BGR) {
        cs = JCS_EXT_BGR, direct = true;
    } else if (type == SL__IMG_RGB || type == SL__IMG_ANY) {
        direct = true;
    }
    /* whole images that need orientation go through scratch; so do PNG-like conversions */
    size_t need; /* H, W <= 65535 (a JPEG's sides), and peek checked H * W * 4 */
    if (sl__size_mul((size_t)W, (size_t)sc, &need) ||
        (oriented && sl__size_mul(need, (size_t)H, &need))) {
        snprintf(why, why_size, "a %lldx%lld image is too large", (long long)W, (long long)H);
        return SL_EFORMAT;
    }
    buf = scratch(w, need);
    if (!buf || !rows(w, (size_t)H)) {
        snprintf(why, why_size, "out of memory for a %lldx%lld image", (long long)W, (long long)H);
        return SL_ENOMEM;
    }
    ci->err->num_warnings = 0;
    jpeg_mem_src(ci, data, (unsigned long)size);
    jpeg_read_header(ci, TRUE);
    if ((int64_t)ci->image_width != W || (int64_t)ci->image_height != H) {
        snprintf(why, why_size, "JPEG frame size %ux%u does not match its header scan",
                 ci->image_width, ci->image_height);
        jpeg_abort_decompress(ci);
        return SL_EFORMAT;
    }
    if (cmyk) from = ci->saw_Adobe_marker ? 2 : 1;
    if (cs == JCS_GRAYSCALE && ci->jpeg_color_space != JCS_GRAYSCALE &&
        ci->jpeg_color_space != JCS_YCbCr && ci->jpeg_color_space != JCS_RGB) {
        cs = JCS_RGB, sc = 3, from = 0, direct = false;
    }
    ci->out_color_space = cs;
    ci->dct_method = fast_idct ? JDCT_IFAST : JDCT_ISLOW;
    jpeg_start_decompress(ci);
    JSAMPROW *rp = w->rows;
    if (oriented) {
        for (int64_t y = 0; y < H; y++) rp[y] = buf + y * W * sc;
        while (ci->output_scanline < ci->output_height)
            jpeg_read_scanlines(ci, rp + ci->output_scanline,
                                ci->output_height - ci->output_scanline);
        jpeg_finish_decompress(ci);
        if (!direct) convert_row(buf, sc, from, buf, H * W, type, c);
        orient_copy(buf, H, W, c, info->orientation, roi, out);
        return SL_OK;
    }
    if (full && direct) { /* straight into the output */
        for (int64_t y = 0; y < H; y++) rp[y] = out + y * W * c;
        while (ci->output_scanline < ci->output_height)
            jpeg_read_scanlines(ci, rp + ci->output_scanline,
                                ci->output_height - ci->output_scanline);
        jpeg_finish_decompress(ci);
        return SL_OK;
    }
    /* The window, cut from a cropped decode, equals the full decode's pixels when libjpeg's fancy
       (triangle) chroma upsampling sees the same neighbours as in the full decode. It treats both
       ends of a cropped scanline as image edges, so: ask for up to one iMCU more on the right;
       start one column left of the window, so that jpeg_crop_scanline, which moves the start left
       to an iMCU boundary, goes one iMCU further back when the window begins on a boundary
       (else the window's first column would be upsampled as an edge column); and keep the crop
       more than one iMCU wide, or libjpeg switches a chroma plane narrower than 2 samples to
       plain replication. Rows need nothing: jpeg_skip_scanlines keeps the context rows that
       h2v2/h1v2 fancy upsampling reads. tests/test_crop_exact.c checks all of this. */
    int64_t mcu_w = (int64_t)ci->max_h_samp_factor * DCTSIZE;
    int64_t extra = W - (roi->x + roi->w) < mcu_w ? W - (roi->x + roi->w) : mcu_w;
    int64_t left = roi->x - 1 < W - mcu_w - 1 ? roi->x - 1 : W - mcu_w - 1;
    if (left < 0) left = 0;
    JDIMENSION x0 = (JDIMENSION)left, cw = (JDIMENSION)(roi->x + roi->w + extra - left);
    if (!full && (x0 > 0 || cw < (JDIMENSION)W)) jpeg_crop_scanline(ci, &x0, &cw);
    if (roi->y > 0) jpeg_skip_scanlines(ci, (JDIMENSION)roi->y);
    int64_t dx = roi->x - (int64_t)x0;
    for (int64_t y = 0; y < roi->h; y++) {
        JSAMPROW r = buf;
        jpeg_read_scanlines(ci, &r, 1);
        uint8_t *o = out + y * roi->w * c;
        if (direct)
            memcpy(o, buf + dx * sc, (size_t)(roi->w * c));
        else
            convert_row(buf + dx * sc, sc, from, o, roi->w, type, c);
    }
    if (full)
        jpeg_finish_decompress(ci);
    else
        jpeg_abort_decompress(ci);
    return SL_OK;
}

static sl_status decode_jpeg(sl__decode_image_worker *w, const uint8_t *data, size_t size,
                             const sl__decode_image_info *info, sl__img_type type,
                             const sl__decode_image_roi *roi, bool fast_idct, uint8_t *out,
                             char *why, size_t why_size) {
    if (setjmp(w->err.jump)) {
        char msg[JMSG_LENGTH_MAX];
        (*w->cinfo.err->format_message)((j_common_ptr)&w->cinfo, msg);
        snprintf(why, why_size, "JPEG decode failed: %s", msg);
        jpeg_abort_decompress(&w->cinfo);
        return SL_EFORMAT;
    }
    return jpeg_body(w, data, size, info, type, roi, fast_idct, out, why, why_size);
}

static sl_status decode_png(sl__decode_image_worker *w, const uint8_t *data, size_t size,
                            const sl__decode_image_info *info, sl__img_type type,
                            const sl__decode_image_roi *roi, uint8_t *out, char *why,
                            size_t why_size) {
    int c = info->c;
    int fmt, sc, from = 0;
    if (type == SL__IMG_ANY) {
        fmt = c == 1   ? SPNG_FMT_G8
              : c == 2 ? SPNG_FMT_GA8
              : c == 3 ? SPNG_FMT_RGB8
                       : SPNG_FMT_RGBA8;
        sc = c;
    } else {
        fmt = SPNG_FMT_RGB8, sc = 3;
    }
    spng_ctx *ctx = spng_ctx_new(0);
    if (!ctx) {
        snprintf(why, why_size, "out of memory for a PNG decoder");
        return SL_ENOMEM;
    }
    sl_status st = SL_EFORMAT;
    size_t n = 0;
    int e = spng_set_png_buffer(ctx, data, size);
    if (!e) e = spng_set_image_limits(ctx, (uint32_t)info->w, (uint32_t)info->h);
    struct spng_ihdr ihdr;
    if (!e) e = spng_get_ihdr(ctx, &ihdr);
    /* 16-bit gray has no G8 path in libspng: decode RGB8 and keep one channel */
    if (!e && type == SL__IMG_ANY && (c == 1 || c == 2) && ihdr.bit_depth == 16)
        fmt = c == 1 ? SPNG_FMT_RGB8 : SPNG_FMT_RGBA8, sc = c == 1 ? 3 : 4;
    if (!e) e = spng_decoded_image_size(ctx, fmt, &n);
    uint8_t *buf = NULL;
    if (!e) {
        buf = scratch(w, n);
        if (!buf) {
            snprintf(why, why_size, "out of memory for a %lldx%lld image", (long long)info->w,
                     (long long)info->h);
            st = SL_ENOMEM;
            goto done;
        }
        e = spng_decode_image(ctx, buf, n, fmt, SPNG_DECODE_TRNS);
    }
    if (e) {
        snprintf(why, why_size, "PNG decode failed: %s", spng_strerror(e));
        goto done;
    }
    int64_t px = info->w * info->h;
    if (type == SL__IMG_ANY && sc != c) { /* 16-bit gray via RGB(A): keep G (and A) */
        for (int64_t i = 0; i < px; i++) {
            buf[i * c] = buf[i * sc];
            if (c == 2) buf[i * c + 1] = buf[i * sc + 3];
        }
    } else if (type != SL__IMG_ANY && type != SL__IMG_RGB) {
        convert_row(buf, sc, from, buf, px, type, c);
    }
    orient_copy(buf, info->h, info->w, c, info->orientation, roi, out);
    st = SL_OK;
done:
    spng_ctx_free(ctx);
    return st;
}

sl_status sl__decode_image_run(sl__decode_image_worker *w, const uint8_t *data, size_t size,
                               const sl__decode_image_info *info, sl__img_type type,
                               const sl__decode_image_roi *roi, bool fast_idct, uint8_t *out,
                               char *why, size_t why_size) {
    sl__decode_image_roi whole = {0, 0, info->out_h, info->out_w};
    if (!roi) roi = &whole;
    if (info->format == SL__IMG_JPEG)
        return decode_jpeg(w, data, size, info, type, roi, fast_idct, out, why, why_size);
    return decode_png(w, data, size, info, type, roi, out, why, why_size);
}

/* ---- the decoded-image cache (decoders.image: cache_size, cache_type, cache_threshold) --------
 */

/* DALI's decoder cache, per op instance: decoded images keyed by record key, in host memory on a
 * CPU pipeline and in device memory on a GPU one, in one arena of cache_size MB that is filled
 * front to back and never evicted. "threshold" keeps every image of at least cache_threshold
 * bytes until the arena is full. "largest" (as DALI's) only notes sizes in the first epoch; when a
 * key comes back it picks the largest images that fit and keeps those from then on. Every
 * decision is made in setup (it knows the keys and shapes); a key is a hit from the batch after
 * the one that stored it (the copy into the cache has happened by then: the CPU stage runs
 * batches in order, and on a GPU the copies are ordered on the pipeline's stream). */
typedef struct cache_ent {
    uint64_t hash;
    char small[24]; /* the key when it is shorter: one cache line less to fetch per lookup */
    char *key;      /* else the key (malloc'd); NULL when it is in small */
    int64_t shape[3];
    sl__decode_image_info info; /* the stored image's header facts: setup needs no peek */
    size_t enc_len;             /* its record's length: a record of another length under this
                                   key is another image (decoded, not served from here) */
    size_t bytes;
    size_t off;    /* in the arena; SIZE_MAX while not stored */
    int64_t batch; /* the batch that stored it */
    bool want;     /* largest: chosen to be kept */
} cache_ent;

typedef struct sl__decode_cache {
    size_t cap, used, threshold;
    bool largest, debug, device, chosen;
    uint8_t *host; /* the arena on a CPU pipeline */
    void *dev;     /* the arena on a GPU, allocated in the GPU stage */
    int dev_id;
    cache_ent *ents;
    int n, ents_cap;
    int *slots; /* open addressing: entry index + 1, 0 empty */
    int nslots;
    int64_t hits, misses; /* atomic reads by sl__decode_image_cache_hits */
    /* per sample of the current batch (setup, then run_cpu on a CPU pipeline) */
    size_t *hit, *put; /* offset + 1, 0 none (CPU pipelines) */
    uint64_t *hash;    /* its key's hash */
    int *ent;          /* its key's entry + 1 as setup found it, 0 none */
    int *run;          /* the samples run_cpu still has work for (io->run_index) */
    int cap_batch;
} sl__decode_cache;

/* A CPU pipeline's setup copies a batch's hits itself up to this many bytes; the rest are
 * copied by run_cpu on the pool. */
#define CACHE_INLINE_BYTES ((size_t)256 << 10)

/* FNV-1a, then a 64-bit finaliser (splitmix64's): FNV's low bits, which pick the slot, hardly
 * differ between keys like "00000001" and "00000257", and linear probing made long runs of them */
static uint64_t key_hash(const char *k) {
    uint64_t h = 1469598103934665603ull;
    for (; *k; k++) h = (h ^ (uint8_t)*k) * 1099511628211ull;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
    return h ^ (h >> 31);
}

static cache_ent *cache_find(sl__decode_cache *c, const char *key, uint64_t h) {
    if (!c->nslots) return NULL;
    for (int m = c->nslots - 1, j = (int)(h & (uint64_t)m);; j = (j + 1) & m) {
        int e = c->slots[j];
        if (!e) return NULL;
        cache_ent *x = &c->ents[e - 1];
        if (x->hash == h && !strcmp(x->key ? x->key : x->small, key)) return x;
    }
}

static cache_ent *cache_add(sl__decode_cache *c, const char *key, uint64_t h) {
    if (2 * (c->n + 1) > c->nslots) { /* grow the table, keep the load under one half */
        int ns = c->nslots ? 2 * c->nslots : 1024;
        int *sl = calloc((size_t)ns, sizeof *sl);
        if (!sl) return NULL;
        for (int e = 0; e < c->n; e++)
            for (int j = (int)(c->ents[e].hash & (uint64_t)(ns - 1));; j = (j + 1) & (ns - 1))
                if (!sl[j]) {
                    sl[j] = e + 1;
                    break;
                }
        free(c->slots);
        c->slots = sl;
        c->nslots = ns;
    }
    if (c->n == c->ents_cap) {
        int nc = c->ents_cap ? 2 * c->ents_cap : 1024;
        cache_ent *ne = realloc(c->ents, (size_t)nc * sizeof *ne);
        if (!ne) return NULL;
        c->ents = ne;
        c->ents_cap = nc;
    }
    cache_ent *x = &c->ents[c->n];
    memset(x, 0, sizeof *x);
    size_t kn = strlen(key);
    if (kn < sizeof x->small)
        memcpy(x->small, key, kn + 1);
    else if (!(x->key = strdup(key)))
        return NULL;
    x->hash = h;
    x->off = SIZE_MAX;
    x->batch = -1;
    for (int j = (int)(h & (uint64_t)(c->nslots - 1));; j = (j + 1) & (c->nslots - 1))
        if (!c->slots[j]) {
            c->slots[j] = ++c->n;
            break;
        }
    return x;
}

static void cache_free(sl__decode_cache *c) {
    if (!c) return;
    for (int e = 0; e < c->n; e++) free(c->ents[e].key);
    free(c->ents);
    free(c->slots);
    free(c->hit);
    free(c->put);
    free(c->hash);
    free(c->ent);
    free(c->run);
    sl__alloc_host_free(c->host);
#ifdef SLUICE_HAVE_NVJPEG
    if (c->dev) {
        sl_err e;
        sl__devpool *pool = sl__devpool_get(c->dev_id, &e);
        if (pool) sl__devpool_free(pool, c->dev);
    }
#endif
    free(c);
}

static int cmp_bytes_desc(const void *a, const void *b) {
    const cache_ent *x = *(cache_ent *const *)a, *y = *(cache_ent *const *)b;
    return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : 0;
}

/* largest: a key came back, so one epoch has been seen; keep the largest images that fit. */
static void cache_choose(sl__decode_cache *c) {
    c->chosen = true;
    cache_ent **v = malloc((size_t)(c->n ? c->n : 1) * sizeof *v);
    if (!v) return; /* nothing kept: the cache stays empty, outputs are the same */
    for (int e = 0; e < c->n; e++) v[e] = &c->ents[e];
    qsort(v, (size_t)c->n, sizeof *v, cmp_bytes_desc);
    size_t sum = 0;
    for (int e = 0; e < c->n; e++)
        if (sum + v[e]->bytes <= c->cap) v[e]->want = true, sum += v[e]->bytes;
    free(v);
}

/* Decides a sample of batch `batch` (its key's hash h, and its entry + 1 as setup found it, 0 when
 * it found none; the header facts info, its record's length enc_len): *hit = offset + 1 of its
 * stored image, or *put = offset + 1 where its decoded image is to be kept (both 0: decode, do not
 * keep). */
static sl_status cache_decide(sl__decode_cache *c, const char *key, uint64_t h, int ent,
                              const sl__decode_image_info *info, size_t enc_len,
                              const int64_t *shape, int64_t batch, size_t *hit, size_t *put,
                              sl_err *err) {
    *hit = *put = 0;
    size_t bytes = (size_t)(shape[0] * shape[1] * shape[2]);
    /* none found by setup: an earlier sample of this batch may have added the key since */
    cache_ent *x = ent ? &c->ents[ent - 1] : cache_find(c, key, h);
    if (x && x->off != SIZE_MAX) {
        if (x->batch < batch && x->enc_len == enc_len && x->shape[0] == shape[0] &&
            x->shape[1] == shape[1] && x->shape[2] == shape[2]) {
            *hit = x->off + 1;
            return SL_OK;
        }
        /* stored by this very batch (a key twice in it), or another record under the same key
         * (two stores with overlapping keys): decoded, not kept */
        return SL_OK;
    }
    if (c->largest && !c->chosen && x) cache_choose(c); /* a key is back: epoch 1 is over */
    bool keep;
    if (c->largest)
        keep = c->chosen && x && x->want;
    else
        keep = bytes >= c->threshold;
    if (keep && c->used + bytes > c->cap) keep = false;
    if (!x && (keep || (c->largest && !c->chosen))) {
        if (!(x = cache_add(c, key, h)))
            return sl_err_set(err, SL_ENOMEM, "decoders.image: out of memory for the cache index");
        x->bytes = bytes;
    }
    if (!keep) return SL_OK;
    if (!c->device && !c->host) {
        c->host = sl__alloc_host(c->cap, 64, err);
        if (!c->host) return err->status;
    }
    x->off = c->used;
    x->batch = batch;
    memcpy(x->shape, shape, sizeof x->shape);
    x->info = *info;
    x->enc_len = enc_len;
    c->used += (bytes + 15) & ~(size_t)15;
    if (c->used > c->cap) c->used = c->cap;
    *put = x->off + 1;
    return SL_OK;
}

/* The per-sample arrays for a batch of n. */
static sl_status cache_batch_arrays(sl__decode_cache *c, int n, sl_err *err) {
    if (n <= c->cap_batch) return SL_OK;
    free(c->hit), free(c->put), free(c->hash), free(c->ent), free(c->run);
    c->cap_batch = 0;
    c->hit = sl__calloc((size_t)n, sizeof *c->hit, err);
    c->put = sl__calloc((size_t)n, sizeof *c->put, err);
    c->hash = sl__calloc((size_t)n, sizeof *c->hash, err);
    c->ent = sl__calloc((size_t)n, sizeof *c->ent, err);
    c->run = sl__calloc((size_t)n, sizeof *c->run, err);
    if (!c->hit || !c->put || !c->hash || !c->ent || !c->run) return SL_ENOMEM;
    c->cap_batch = n;
    return SL_OK;
}

/* setup's first step: finds every key of the batch (c->hash, c->ent). The index is far larger
 * than the CPU caches and each lookup would wait on its slot, then its entry: all slots are
 * fetched ahead first, then all entries, then they are read. */
static void cache_lookup(sl__decode_cache *c, const sl__op_io *io) {
    int n = io->batch, m = c->nslots - 1;
    for (int i = 0; i < n; i++) {
        c->ent[i] = 0;
        c->hash[i] = io->keys && io->keys[i] ? key_hash(io->keys[i]) : 0;
        if (c->nslots) __builtin_prefetch(&c->slots[c->hash[i] & (uint64_t)m]);
    }
    if (!c->nslots || !io->keys) return;
    for (int i = 0; i < n; i++) {
        int e = c->slots[c->hash[i] & (uint64_t)m];
        if (e) __builtin_prefetch(&c->ents[e - 1]), __builtin_prefetch(&c->ents[e - 1].info);
    }
    for (int i = 0; i < n; i++) {
        if (!io->keys[i]) continue;
        cache_ent *x = cache_find(c, io->keys[i], c->hash[i]);
        c->ent[i] = x ? (int)(x - c->ents) + 1 : 0;
    }
}

/* Then for sample i: when the cache holds its image (stored by an earlier batch, from a record of
 * the same length), fills *info from the entry instead of peeking at the record's headers. */
static bool cache_known(sl__decode_cache *c, const sl__op_io *io, int i,
                        sl__decode_image_info *info) {
    if (!c->ent[i]) return false;
    const cache_ent *x = &c->ents[c->ent[i] - 1];
    if (x->off == SIZE_MAX || x->batch >= io->iteration ||
        x->enc_len != sl_tlist_sample_nbytes(io->in[0], i))
        return false;
    *info = x->info;
    return true;
}

/* setup's cache step: decides every sample from its key and shape (io->out[0] is sized). */
static sl_status cache_plan(sl__decode_image_state *s, sl__op_io *io, size_t *hit, size_t *put,
                            sl_err *err) {
    sl__decode_cache *c = s->cache;
    const sl_tlist *out = io->out[0];
    int nh = 0, np = 0;
    for (int i = 0; i < io->batch; i++) {
        hit[i] = put[i] = 0;
        if (!io->keys || !io->keys[i] || s->info[i].format == 0) continue;
        SL_TRY(cache_decide(c, io->keys[i], c->hash[i], c->ent[i], &s->info[i],
                            sl_tlist_sample_nbytes(io->in[0], i), sl_tlist_shape(out, i),
                            io->iteration, &hit[i], &put[i], err));
        nh += hit[i] != 0;
        np += put[i] != 0;
    }
    __atomic_fetch_add(&c->hits, nh, __ATOMIC_RELAXED);
    __atomic_fetch_add(&c->misses, io->batch - nh, __ATOMIC_RELAXED);
    if (c->debug)
        sl__log(SL_LOG_INFO, "%s cache: batch %lld: %d hits, %d misses, %d kept (%zu of %zu bytes)",
                s->name, (long long)io->iteration, nh, io->batch - nh, np, c->used, c->cap);
    return SL_OK;
}

static sl_status cache_create(sl__decode_image_state *s, const sl__args *a, const sl__op_init *init,
                              sl_err *err) {
    bool has = false;
    for (const sl__arg_schema *x = a->op->args; x->name && !has; x++)
        has = !strcmp(x->name, "cache_size");
    if (!has) return SL_OK; /* decoders.image_random_crop has no cache */
    int64_t mb = sl__args_int(a, "cache_size");
    const char *type = sl__args_str(a, "cache_type");
    int64_t thr = sl__args_int(a, "cache_threshold");
    if (mb < 0 || thr < 0)
        return sl_err_set(err, SL_EINVAL, "%s: cache_size and cache_threshold must be >= 0",
                          s->name);
    bool largest = type && !strcmp(type, "largest");
    if (type && type[0] && !largest && strcmp(type, "threshold"))
        return sl_err_set(err, SL_EINVAL,
                          "%s: cache_type must be \"threshold\" or \"largest\", not \"%s\"",
                          s->name, type);
    if (mb == 0) return SL_OK; /* off, as in DALI */
    sl__decode_cache *c = sl__calloc(1, sizeof *c, err);
    if (!c) return SL_ENOMEM;
    c->cap = (size_t)mb << 20;
    c->threshold = (size_t)thr;
    c->largest = largest;
    c->debug = sl__args_bool(a, "cache_debug");
    c->dev_id = init->device.id;
#ifdef SLUICE_HAVE_NVJPEG /* split: the GPU half keeps the images in device memory */
    c->device = init->device.kind == SL_DEVICE_CUDA;
#endif
    s->cache = c;
    return SL_OK;
}

/* ---- the operator --------------------------------------------------------------------------- */

#define SL__DECODE_CACHE_ARGS                                                                      \
    {"cache_size",                                                                                 \
     SL_ARG_INT,                                                                                   \
     "0",                                                                                          \
     "MB of decoded images kept per op instance, keyed by record key (in device memory on a GPU "  \
     "pipeline, host memory on a CPU one), so later epochs skip decoding; 0 = off",                \
     0,                                                                                            \
     NULL},                                                                                        \
        {"cache_type",                                                                             \
         SL_ARG_STR,                                                                               \
         "\"\"",                                                                                   \
         "\"threshold\" (the default): keep every image of at least cache_threshold bytes until "  \
         "the cache is full; \"largest\": after one epoch, keep the largest images that fit",      \
         0,                                                                                        \
         NULL},                                                                                    \
        {"cache_threshold",                                                                        \
         SL_ARG_INT,                                                                               \
         "0",                                                                                      \
         "threshold cache: smallest decoded image (bytes) that is kept",                           \
         0,                                                                                        \
         NULL},                                                                                    \
        {"cache_debug",                                                                            \
         SL_ARG_BOOL,                                                                              \
         "False",                                                                                  \
         "log the cache's hits and misses per batch (sl_log_set_callback)",                        \
         0,                                                                                        \
         NULL},                                                                                    \
    {                                                                                              \
        "cache_batch_copy", SL_ARG_BOOL, "True",                                                   \
            "accepted; a GPU batch's hits are always copied in one launch", 0, NULL                \
    }

static const sl__arg_schema decode_args[] = {
    SL__DECODE_IMAGE_ARGS, SL__DECODE_CACHE_ARGS, {NULL, 0, NULL, NULL, 0, NULL}};

/* The per-sample arrays of a batch state (sized for b->cap samples). */
static void free_batch_arrays(sl__decode_image_batch *b) {
    free(b->on_gpu);
    free(b->hw);
    free(b->roi);
    free(b->info);
    free(b->hit_off);
    free(b->put_off);
    free(b->run);
}

void sl__decode_image_free_batch(void *batch_state) {
    sl__decode_image_batch *b = batch_state;
    if (!b) return;
#ifdef SLUICE_HAVE_NVJPEG
    sl__nvjpeg_ahead_free(b->ahead);
#endif
    free(b->ajobs), free(b->aidx), free(b->adone);
    free_batch_arrays(b);
    sl__alloc_pinned_free(b->pinned);
    free(b);
}

/* The chroma layout of a peeked 3-component JPEG (jpeg_ycc.h); 0 when jpeg_ycc.h does not handle
 * it. */
static int ycc_layout(const sl__decode_image_info *inf, sl__ycc_layout *l) {
    return sl__ycc_layout_of(inf->h, inf->w, (const uint8_t(*)[2])inf->samp, l);
}

/* What the hardware JPEG engines take (JPEG layouts they decode: baseline or extended Huffman,
 * gray or 4:4:4 / 4:2:2 / 4:4:0 / 4:2:0), as far as the header tells. */
static bool engine_fits(const sl__decode_image_info *inf) {
    if (inf->sof > 1) return false;
    if (inf->comps == 1) return true;
    sl__ycc_layout l;
    return ycc_layout(inf, &l) && l.hs <= 2 && l.vs <= 2;
}

/* ---- which images the engines take, and the order the pool decodes in ---------------------------
 * A window's CPU decode (jpeg_body) entropy-decodes every row down to the window's bottom and
 * runs the IDCT, upsampling and colour conversion on the window only; the engines always decode
 * the whole image. Timed with libjpeg-turbo on the DALI_extra photos (300 random windows each),
 * a window costs about 0.65 x (its bottom row / the height) + 0.35 x (its area / the image's) of
 * the whole image's decode, within 0.01-0.03. */
static double cpu_share(const sl__decode_image_info *inf, const sl__decode_image_roi *roi) {
    if (!roi || inf->format != SL__IMG_JPEG || inf->orientation != 1 || inf->out_h < 1 ||
        inf->out_w < 1)
        return 1.0; /* decoded whole */
    double h = (double)inf->out_h, w = (double)inf->out_w;
    return 0.65 * (double)(roi->y + roi->h) / h + 0.35 * (double)roi->h * (double)roi->w / (h * w);
}

typedef struct {
    double key;
    int i;
} rank_ent;

static int by_key_desc(const void *a, const void *b) {
    const rank_ent *x = a, *y = b;
    if (x->key != y->key) return x->key > y->key ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* Sorts the n samples listed in idx by their CPU decode's cost, dearest first, equal costs in
 * their order: the cost relative to a whole decode (whole: false), or in pixels (whole: true).
 * false, and idx as it was, when all costs are equal. */
static bool order_by_cost(sl__decode_image_state *s, int *idx, int n,
                          const sl__decode_image_roi *rois, bool whole) {
    rank_ent *r = s->rank;
    bool same = true;
    for (int k = 0; k < n; k++) {
        const sl__decode_image_info *inf = &s->info[idx[k]];
        double share = cpu_share(inf, rois ? &rois[idx[k]] : NULL);
        r[k].key = whole ? share * (double)inf->h * (double)inf->w : share;
        r[k].i = idx[k];
        same &= r[k].key == r[0].key;
    }
    if (same) return false;
    qsort(r, (size_t)n, sizeof *r, by_key_desc);
    for (int k = 0; k < n; k++) idx[k] = r[k].i;
    return true;
}

/* hw_decoder_load, on a GPU with JPEG engines (or before that is known): of the images bound for
 * nvJPEG, ceil(hw_load * n) of those the engines take stay there; the others are decoded on the
 * CPU pool in this stage, in parallel with the engines (libjpeg-turbo, like the small images).
 * The pool gets the windows cheapest to decode on the CPU relative to a whole decode (a small
 * window near the top costs the engines a whole image and the CPU a fraction of one); the
 * plain decoder's images all cost the same, so the engines take the first ones. Without engines
 * everything stays with nvJPEG's GPU/hybrid back end. idx: scratch for n samples. */
static void route_engines(sl__decode_image_state *s, int n, sl__decode_image_batch *b,
                          const sl__decode_image_roi *rois, int *idx) {
    if (__atomic_load_n(&s->engines, __ATOMIC_RELAXED) == 0) return;
    int fit = 0;
    for (int i = 0; i < n; i++) {
        if (b->on_gpu[i] != 1) continue;
        if (engine_fits(&b->info[i]))
            idx[fit++] = i;
        else
            b->on_gpu[i] = 0; /* the engines would refuse it: the CPU pool */
    }
    double load = s->hw_load < 0 ? 0 : s->hw_load > 1 ? 1 : s->hw_load;
    int quota = (int)ceil(load * (double)fit);
    order_by_cost(s, idx, fit, rois, false);
    for (int k = quota; k < fit; k++) b->on_gpu[idx[k]] = 0;
}

/* plan's scratch: s->rank and s->order for n samples. */
static sl_status plan_scratch(sl__decode_image_state *s, int n, sl_err *err) {
    if (n <= s->rank_cap) return SL_OK;
    free(s->rank), free(s->order);
    s->rank_cap = 0;
    s->rank = sl__calloc((size_t)n, sizeof(rank_ent), err);
    s->order = sl__calloc((size_t)n, sizeof *s->order, err);
    if (!s->rank || !s->order) return SL_ENOMEM;
    s->rank_cap = n;
    return SL_OK;
}

sl_status sl__decode_image_plan(sl__decode_image_state *s, sl__op_io *io,
                                const sl__decode_image_roi *rois, sl_err *err) {
    SL_TRY(plan_scratch(s, io->batch, err));
    if (io->device.kind != SL_DEVICE_CUDA) {
        sl__decode_cache *c = s->cache;
        if (!c) { /* every sample, the dearest first when they differ */
            for (int i = 0; i < io->batch; i++) s->order[i] = i;
            if (order_by_cost(s, s->order, io->batch, rois, true)) {
                io->run_index = s->order;
                io->run_count = io->batch;
            }
            return SL_OK;
        }
        SL_TRY(cache_plan(s, io, c->hit, c->put, err));
        /* hits are copies: made here, on the stage thread, up to CACHE_INLINE_BYTES a batch
         * (waking the pool costs more than that); what is left goes to run_cpu */
        const sl_tlist *out = io->out[0];
        size_t inl = 0;
        int n = 0;
        for (int i = 0; i < io->batch; i++) {
            if (s->info[i].format == 0) continue; /* skipped: nothing to do */
            size_t nb = sl_tlist_sample_nbytes(out, i);
            if (c->hit[i] && inl + nb <= CACHE_INLINE_BYTES) {
                memcpy(out->data[i], c->host + c->hit[i] - 1, nb);
                inl += nb;
                continue;
            }
            c->run[n++] = i;
        }
        order_by_cost(s, c->run, n, rois, true);
        io->run_index = c->run;
        io->run_count = n;
        return SL_OK;
    }
    sl__decode_image_batch *b = *io->batch_state;
    if (!b) {
        b = sl__calloc(1, sizeof *b, err);
        if (!b) return SL_ENOMEM;
        *io->batch_state = b;
    }
    if (io->batch > b->cap) {
        free_batch_arrays(b);
        b->cap = 0;
        size_t n = (size_t)io->batch;
        b->on_gpu = sl__calloc(n, 1, err);
        b->hw = sl__calloc(n * 2, sizeof *b->hw, err);
        b->roi = sl__calloc(n, sizeof *b->roi, err);
        b->info = sl__calloc(n, sizeof *b->info, err);
        b->hit_off = sl__calloc(n, sizeof *b->hit_off, err);
        b->put_off = sl__calloc(n, sizeof *b->put_off, err);
        b->run = sl__calloc(n, sizeof *b->run, err);
        if (!b->on_gpu || !b->hw || !b->roi || !b->info || !b->hit_off || !b->put_off || !b->run)
            return SL_ENOMEM;
        b->cap = io->batch;
    }
    const sl_tlist *out = io->out[0];
    size_t need = out->buf_used ? out->buf_used : 1;
    if (need > b->pinned_cap) {
        sl__alloc_pinned_free(b->pinned);
        b->pinned_cap = 0;
        b->pinned = sl__alloc_pinned(need, err);
        if (!b->pinned) return err->status;
        b->pinned_cap = need;
    }
    memcpy(b->info, s->info, (size_t)io->batch * sizeof *b->info);
    if (s->cache)
        SL_TRY(cache_plan(s, io, b->hit_off, b->put_off, err));
    else
        memset(b->hit_off, 0, (size_t)io->batch * sizeof *b->hit_off),
            memset(b->put_off, 0, (size_t)io->batch * sizeof *b->put_off);
    for (int i = 0; i < io->batch; i++) {
        const sl__decode_image_info *inf = &s->info[i];
        b->hw[2 * i] = inf->h, b->hw[2 * i + 1] = inf->w;
        bool gray = s->type == SL__IMG_GRAY;
        sl__ycc_layout l;
        /* a stream cut short stays on the CPU, where libjpeg reports it (nvJPEG pads it) */
        bool fits = inf->format == SL__IMG_JPEG && inf->complete && inf->orientation == 1 &&
                    !s->skip_bad &&
                    (gray || ((s->type == SL__IMG_RGB || s->type == SL__IMG_BGR) &&
                              inf->comps == 3 && inf->ycbcr && ycc_layout(inf, &l)));
#ifdef SLUICE_HAVE_NVJPEG
        b->on_gpu[i] = b->hit_off[i] ? 2 : fits && inf->h * inf->w > s->cpu_max_pixels;
#else
        (void)fits;
        b->on_gpu[i] = 0;
#endif
    }
    route_engines(s, io->batch, b, rois, s->order);
    /* run_cpu decodes the CPU's share only: nvJPEG reads its samples' bytes from the input in the
     * GPU half (the batch slot keeps them until the batch is released, op.h), and cache hits are
     * copied there too */
    int m = 0;
    for (int i = 0; i < io->batch; i++)
        if (b->on_gpu[i] == 0 && s->info[i].format != 0) b->run[m++] = i;
    order_by_cost(s, b->run, m, rois, true); /* the dearest first: the batch's tail is shorter */
    b->an = 0;
#ifdef SLUICE_HAVE_NVJPEG
    /* once the GPU stage has made the decoder (its first batch) and it has engines: the engines'
     * share is started from this stage too (the batch job, run_cpu's sample -1, on the stage's
     * thread beside the pool: sl__decode_image_ahead), so that they work on this batch while the
     * GPU stage finishes the one before */
    sl__nvjpeg *nvj = __atomic_load_n((sl__nvjpeg **)&s->nvjpeg, __ATOMIC_ACQUIRE);
    bool engine_work = false;
    for (int i = 0; i < io->batch && !engine_work; i++) engine_work = b->on_gpu[i] == 1;
    io->batch_job = nvj && engine_work && sl__nvjpeg_has_engines(nvj);
#endif
    io->run_index = b->run;
    io->run_count = m;
    return SL_OK;
}

uint8_t *sl__decode_image_target(const sl__op_io *io, int i) {
    const sl_tlist *out = io->out[0];
    if (io->device.kind != SL_DEVICE_CUDA) return out->data[i];
    sl__decode_image_batch *b = *io->batch_state;
    return b->pinned + ((uint8_t *)out->data[i] - (uint8_t *)out->buf);
}

#ifdef SLUICE_HAVE_NVJPEG
/* The GPU stage's CPU fallback: sample i, which nvJPEG did not decode, decoded with libjpeg-turbo
 * into its pinned slot and copied to its output. */
static sl_status cpu_fallback(sl__decode_image_state *s, sl__op_io *io, int i,
                              const sl__decode_image_roi *roi, sl_err *err) {
    sl__decode_image_batch *b = *io->batch_state;
    if (!s->gpu_worker) SL_TRY(sl__decode_image_worker_create(s->orient, &s->gpu_worker, err));
    if (!__atomic_exchange_n(&s->said_fallback, 1, __ATOMIC_RELAXED))
        sl__log(SL_LOG_INFO,
                "%s: nvJPEG did not decode record %s; it and any other image nvJPEG does not "
                "decode are decoded on the CPU",
                s->name, io->keys && io->keys[i] ? io->keys[i] : "?");
    const sl_tlist *in = io->in[0];
    sl_tlist *out = io->out[0];
    uint8_t *to = sl__decode_image_target(io, i);
    char why[JMSG_LENGTH_MAX + 64];
    sl_status st =
        sl__decode_image_run(s->gpu_worker, in->data[i], sl_tlist_sample_nbytes(in, i), &b->info[i],
                             s->type, roi, s->fast_idct, to, why, sizeof why);
    if (st != SL_OK) return sl__op_fail(err, st, io, i, s->name, "%s", why);
    return sl__cuda_memcpy(out->data[i], true, to, false, sl_tlist_sample_nbytes(out, i),
                           io->stream, err);
}

/* Cache hits (cache -> output) and the misses it keeps (output -> cache), one launch. */
static sl_status cache_copies(sl__decode_image_state *s, sl__op_io *io, sl_err *err) {
    sl__decode_cache *c = s->cache;
    sl__decode_image_batch *b = *io->batch_state;
    sl_tlist *out = io->out[0];
    int n = 0;
    for (int i = 0; i < io->batch; i++) n += (b->hit_off[i] || b->put_off[i]);
    if (n == 0) return SL_OK;
    if (!c->dev) {
        c->dev_id = io->device.id; /* freed into the same device's pool */
        sl__devpool *pool = sl__devpool_get(io->device.id, err);
        if (!pool || !(c->dev = sl__devpool_alloc(pool, c->cap, err)))
            return sl_err_set(err, err->status ? err->status : SL_ENOMEM,
                              "%s: cannot allocate the %zu-byte decoded-image cache on the GPU",
                              s->name, c->cap);
    }
    sl__cuda_cast_desc *d =
        sl__gpu_args_host(&s->copies, io->device.id, (size_t)n * sizeof *d, err);
    if (!d) return err->status;
    int64_t maxb = 0, k = 0;
    for (int i = 0; i < io->batch; i++) {
        size_t nb = sl_tlist_sample_nbytes(out, i);
        if (b->hit_off[i])
            d[k].in = (uint8_t *)c->dev + b->hit_off[i] - 1, d[k].out = out->data[i];
        else if (b->put_off[i])
            d[k].in = out->data[i], d[k].out = (uint8_t *)c->dev + b->put_off[i] - 1;
        else
            continue;
        d[k++].n = (int64_t)nb;
        if ((int64_t)nb > maxb) maxb = (int64_t)nb;
    }
    void *dd = NULL;
    SL_TRY(sl__gpu_args_send(&s->copies, (size_t)n * sizeof *d, io->stream, &dd, err));
    return sl__cuda_cast(dd, n, maxb, SL_DTYPE_U8, SL_DTYPE_U8, io->stream, err);
}

/* Sample i's nvJPEG job; false when its window must be cut from the whole image in device scratch
 * (a cropping decoder's image that does not go through planes: j->dst is then left NULL). */
static bool make_job(const sl__decode_image_state *s, const sl__op_io *io,
                     const sl__decode_image_batch *b, int i, const sl__decode_image_roi *rois,
                     sl__nvjpeg_job *j) {
    const sl_tlist *in = io->in[0];
    memset(j, 0, sizeof *j);
    j->data = in->data[i]; /* pageable host memory, valid until the batch is released */
    j->len = sl_tlist_sample_nbytes(in, i);
    j->w = b->hw[2 * i + 1];
    if (s->type != SL__IMG_GRAY && !ycc_layout(&b->info[i], &j->ycc))
        j->ycc.w = 0;           /* setup only sends layouts it handles; nvJPEG's RGB if not */
    if (rois && j->ycc.w > 0) { /* the planes' kernel writes the window itself */
        j->y0 = (int32_t)rois[i].y, j->x0 = (int32_t)rois[i].x;
        j->out_h = (int32_t)rois[i].h, j->out_w = (int32_t)rois[i].w;
    } else if (rois) {
        return false;
    }
    j->dst = io->out[0]->data[i];
    return true;
}

sl_status sl__decode_image_ahead(sl__decode_image_state *s, sl__op_io *io,
                                 const sl__decode_image_roi *rois, sl_err *err) {
    sl__decode_image_batch *b = *io->batch_state;
    sl__nvjpeg *nvj = __atomic_load_n((sl__nvjpeg **)&s->nvjpeg, __ATOMIC_ACQUIRE);
    if (!nvj) return SL_OK; /* (plan only asks once it is made) */
    if (io->batch > b->acap) {
        free(b->ajobs), free(b->aidx), free(b->adone);
        b->acap = 0;
        b->ajobs = sl__calloc((size_t)io->batch, sizeof *b->ajobs, err);
        b->aidx = sl__calloc((size_t)io->batch, sizeof *b->aidx, err);
        b->adone = sl__calloc((size_t)io->batch, 1, err);
        if (!b->ajobs || !b->aidx || !b->adone) return SL_ENOMEM;
        b->acap = io->batch;
    }
    int k = 0;
    for (int i = 0; i < io->batch; i++)
        if (b->on_gpu[i] == 1 && make_job(s, io, b, i, rois, &b->ajobs[k])) b->aidx[k++] = i;
    if (k == 0) return SL_OK;
    sl_status st = sl__nvjpeg_ahead_run(nvj, &b->ahead, k, b->ajobs, s->type, b->adone, err);
    if (st != SL_OK) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        return sl__op_fail(err, st, io, b->aidx[0], s->name, "nvJPEG: %s", msg);
    }
    b->an = k;
    for (int a = 0; a < k; a++)
        if (b->adone[a]) b->on_gpu[b->aidx[a]] = 3; /* the GPU stage only finishes it */
    return SL_OK;
}

sl_status sl__decode_image_run_gpu(sl__decode_image_state *s, sl__op_io *io, bool crop,
                                   sl_err *err) {
    sl__decode_image_batch *b = *io->batch_state;
    const sl__decode_image_roi *rois = crop ? b->roi : NULL;
    sl_tlist *out = io->out[0];
    int n = io->batch, ngpu = 0;
    /* CPU-decoded samples: one copy per run of consecutive ones */
    for (int i = 0; i < n;) {
        if (b->on_gpu[i]) {
            ngpu += b->on_gpu[i] == 1;
            i++;
            continue;
        }
        int j = i;
        while (j + 1 < n && !b->on_gpu[j + 1]) j++;
        size_t a = (size_t)((uint8_t *)out->data[i] - (uint8_t *)out->buf);
        size_t z = (size_t)((uint8_t *)out->data[j] - (uint8_t *)out->buf) +
                   sl_tlist_sample_nbytes(out, j);
        if (z > a)
            SL_TRY(sl__cuda_memcpy((uint8_t *)out->buf + a, true, b->pinned + a, false, z - a,
                                   io->stream, err));
        i = j + 1;
    }
    int ahead = 0; /* the engines' images decoded ahead: their planes are finished here */
    for (int a = 0; a < b->an; a++) ahead += b->adone[a];
    if (ahead) {
        SL_TRY(sl__nvjpeg_ahead_finish(s->nvjpeg, b->ahead, b->an, b->ajobs, s->type, io->stream,
                                       err));
        __atomic_fetch_add(&s->decodes, ahead, __ATOMIC_RELAXED);
    }
    if (ngpu == 0) return s->cache ? cache_copies(s, io, err) : SL_OK;
    int first = 0;
    while (b->on_gpu[first] != 1) first++;
    if (!s->nvjpeg) {
        sl__nvjpeg *nvj = NULL;
        sl_status st = sl__nvjpeg_create(&nvj, err);
        if (st != SL_OK) {
            char msg[sizeof err->msg];
            snprintf(msg, sizeof msg, "%s", err->msg);
            return sl__op_fail(err, st, io, first, s->name, "%s", msg);
        }
        __atomic_store_n(&s->engines, sl__nvjpeg_has_engines(nvj) ? 1 : 0, __ATOMIC_RELAXED);
        /* the engines take at most ceil(hw_decoder_load x batch) images of a batch */
        int most = (int)ceil(s->hw_load * s->batch_size);
        if (s->prealloc_w > 0 && s->prealloc_h > 0 && most > 0)
            sl__nvjpeg_preallocate(nvj, most, s->prealloc_w, s->prealloc_h,
                                   s->type == SL__IMG_GRAY);
        __atomic_store_n((sl__nvjpeg **)&s->nvjpeg, nvj, __ATOMIC_RELEASE); /* plan reads it */
    }
    sl__nvjpeg_job *jobs = sl__calloc((size_t)ngpu, sizeof *jobs, err);
    int *idx = sl__malloc((size_t)ngpu * sizeof *idx, err);
    char *failed = sl__malloc((size_t)ngpu, err);
    sl_status st = jobs && idx && failed ? SL_OK : SL_ENOMEM;
    int c = s->type == SL__IMG_GRAY ? 1 : 3;
    size_t full = 0; /* bytes of whole images to crop from (cropping decoder, not via planes) */
    for (int i = 0, k = 0; i < n && st == SL_OK; i++) {
        if (b->on_gpu[i] != 1) continue;
        sl__nvjpeg_job *j = &jobs[k];
        idx[k++] = i;
        if (make_job(s, io, b, i, rois, j)) continue;
        j->dst = (uint8_t *)(uintptr_t)full; /* an offset in the scratch block, set below */
        full += ((size_t)(b->hw[2 * i] * b->hw[2 * i + 1] * c) + 255) & ~(size_t)255;
    }
    uint8_t *scratch = NULL;
    if (st == SL_OK && full) {
        scratch = sl__gpu_scratch_get(&s->full, io->device.id, full, io->stream, err);
        if (!scratch) st = err->status;
        for (int k = 0; k < ngpu && st == SL_OK; k++)
            if (jobs[k].out_w == 0) jobs[k].dst = scratch + (uintptr_t)jobs[k].dst;
    }
    int hw = 0;
    if (st == SL_OK) {
        st = sl__nvjpeg_decode(s->nvjpeg, ngpu, jobs, s->type, io->stream, &hw, failed, err);
        if (st != SL_OK) { /* not about one image (out of memory): name the batch's first */
            char msg[sizeof err->msg];
            snprintf(msg, sizeof msg, "%s", err->msg);
            st = sl__op_fail(err, st, io, first, s->name, "nvJPEG: %s", msg);
        }
    }
    int ncrop = 0;
    for (int k = 0; k < ngpu && st == SL_OK; k++) ncrop += rois && !failed[k] && !jobs[k].out_w;
    if (st == SL_OK && ncrop) { /* crop whole images: cmn's kernel as an exact uint8 copy */
        sl__cuda_cmn_desc *d =
            sl__gpu_args_host(&s->crop, io->device.id, (size_t)ncrop * sizeof *d, err);
        if (!d) st = err->status;
        int64_t maxpix = 0, m = 0;
        for (int k = 0; k < ngpu && st == SL_OK; k++) {
            if (failed[k] || jobs[k].out_w) continue; /* the CPU / the planes' kernel wrote it */
            int i = idx[k];
            sl__cmn_sample *p = &d[m].p;
            memset(p, 0, sizeof *p);
            p->in_h = b->hw[2 * i], p->in_w = b->hw[2 * i + 1], p->in_c = c;
            p->anchor_y = rois[i].y, p->anchor_x = rois[i].x;
            p->out_h = rois[i].h, p->out_w = rois[i].w, p->out_c = c;
            for (int ch = 0; ch < c; ch++) p->inv_std[ch] = 1.0f;
            d[m].in = jobs[k].dst;
            d[m].out = out->data[i];
            if (p->out_h * p->out_w > maxpix) maxpix = p->out_h * p->out_w;
            m++;
        }
        void *dd = NULL;
        if (st == SL_OK)
            st = sl__gpu_args_send(&s->crop, (size_t)m * sizeof *d, io->stream, &dd, err);
        if (st == SL_OK)
            st = sl__cuda_cmn(dd, (int)m, maxpix, SL_DTYPE_U8, SL_DTYPE_U8, io->stream, err);
    }
    /* what nvJPEG did not decode: on the CPU into the pinned slot, then copied (after the crop
     * kernel on the stream, so nothing overwrites it) */
    for (int k = 0; k < ngpu && st == SL_OK; k++)
        if (failed[k]) st = cpu_fallback(s, io, idx[k], rois ? &rois[idx[k]] : NULL, err);
    if (st == SL_OK) __atomic_fetch_add(&s->decodes, ngpu, __ATOMIC_RELAXED);
    if (st == SL_OK && s->cache) st = cache_copies(s, io, err);
    if (st == SL_ENOMEM && !err->msg[0]) sl_err_set(err, st, "%s: out of memory", s->name);
    free(jobs);
    free(idx);
    free(failed);
    return st;
}

static sl_status decode_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    return sl__decode_image_run_gpu(state, io, false, err);
}
#endif

void sl__decode_image_destroy(void *state) {
    sl__decode_image_state *s = state;
    if (!s) return;
#ifdef SLUICE_HAVE_NVJPEG
    sl__nvjpeg_free(s->nvjpeg);
#endif
    cache_free(s->cache);
    sl__gpu_scratch_free(&s->full);
    sl__gpu_args_free(&s->crop);
    sl__gpu_args_free(&s->copies);
    sl__decode_image_worker_free(s->gpu_worker);
    for (int i = 0; s->workers && i < s->threads; i++) sl__decode_image_worker_free(s->workers[i]);
    free(s->workers);
    free(s->info);
    free(s->rank);
    free(s->order);
    free(s);
}

sl_status sl__decode_image_create(const sl__args *a, const sl__op_init *init, void **out,
                                  sl_err *err) {
    sl__decode_image_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->name = "decoders.image";
    s->type = (sl__img_type)sl__decode_image_type(sl__args_str(a, "output_type"));
    s->orient = sl__args_bool(a, "adjust_orientation");
    s->fast_idct = sl__args_bool(a, "use_fast_idct");
    s->skip_bad = sl__args_bool(a, "skip_bad_records");
    s->max_pixels = sl__args_int(a, "max_image_pixels");
    s->hw_load = sl__args_float(a, "hw_decoder_load");
    int64_t pw = sl__args_int(a, "preallocate_width_hint");
    int64_t ph = sl__args_int(a, "preallocate_height_hint");
    s->batch_size = init->batch_size;
    s->engines = -1;
    s->cpu_max_pixels = sl__args_int(a, "cpu_decode_max_pixels");
    sl_status st = SL_OK;
#if defined(SLUICE_HAVE_CUDA) && !defined(SLUICE_HAVE_NVJPEG)
    static int said;
    if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED) && sl__cuda_available())
        sl__log(SL_LOG_INFO, "this build has no nvJPEG: the mixed image decoders decode every "
                             "image on the CPU (into pinned memory, one copy per batch)");
#endif
    if (sl__args_dtype(a, "dtype") != SL_DTYPE_U8)
        st = sl_err_set(err, SL_ENOTSUP, "%s: only dtype=types.UINT8 is supported", s->name);
    if (st == SL_OK && (pw < 0 || pw > 65535 || ph < 0 || ph > 65535))
        st = sl_err_set(err, SL_EINVAL,
                        "%s: preallocate_width_hint %lld and preallocate_height_hint %lld must "
                        "be 0..65535 (a JPEG's largest side)",
                        s->name, (long long)pw, (long long)ph);
    s->prealloc_w = (int)pw; /* in range when st is SL_OK; the op is not made otherwise */
    s->prealloc_h = (int)ph;
    if (st == SL_OK) st = cache_create(s, a, init, err);
    s->threads = init->threads < 1 ? 1 : init->threads;
    if (st == SL_OK && !(s->workers = sl__calloc((size_t)s->threads, sizeof *s->workers, err)))
        st = SL_ENOMEM;
    for (int i = 0; st == SL_OK && i < s->threads; i++)
        st = sl__decode_image_worker_create(s->orient, &s->workers[i], err);
    if (st != SL_OK) {
        sl__decode_image_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

static sl_status decode_setup(void *state, sl__op_io *io, sl_err *err) {
    sl__decode_image_state *s = state;
    const sl_tlist *in = io->in[0];
    if (in->dtype != SL_DTYPE_U8 || in->ndim != 1)
        return sl_err_set(err, SL_EINVAL, "%s: input must be encoded bytes (uint8, 1-D)", s->name);
    if (io->batch > s->info_cap) {
        sl__decode_image_info *ni = realloc(s->info, (size_t)io->batch * sizeof *ni);
        if (!ni) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", s->name);
        s->info = ni;
        s->info_cap = io->batch;
    }
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, SL_DTYPE_U8, 3, io->device, err));
    if (s->cache) {
        SL_TRY(cache_batch_arrays(s->cache, io->batch, err));
        cache_lookup(s->cache, io);
    }
    int64_t *shapes = sl__malloc((size_t)io->batch * 3 * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    for (int i = 0; i < io->batch; i++) {
        char why[256];
        sl__decode_image_info *inf = &s->info[i];
        sl_status st = SL_OK;
        if (!s->cache || !cache_known(s->cache, io, i, inf))
            st = sl__decode_image_peek(in->data[i], sl_tlist_sample_nbytes(in, i), s->type,
                                       s->orient, s->max_pixels, inf, why, sizeof why);
        if (st != SL_OK && !s->skip_bad) {
            free(shapes);
            return sl__op_fail(err, st, io, i, s->name, "%s", why);
        }
        if (st != SL_OK) {
            __atomic_fetch_add(&s->skipped, 1, __ATOMIC_RELAXED);
            memset(inf, 0, sizeof *inf);
            inf->c = s->type == SL__IMG_GRAY ? 1 : 3;
        }
        shapes[i * 3] = inf->out_h;
        shapes[i * 3 + 1] = inf->out_w;
        shapes[i * 3 + 2] = inf->c;
    }
    sl_status st = sl_tlist_alloc(out, shapes, err);
    free(shapes);
    if (st == SL_OK) memcpy(out->layout, "HWC", 4);
    if (st == SL_OK) st = sl__decode_image_plan(s, io, NULL, err);
    return st;
}

static sl_status decode_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    sl__decode_image_state *s = state;
#ifdef SLUICE_HAVE_NVJPEG
    if (i < 0) return sl__decode_image_ahead(s, io, NULL, err); /* the engines' job */
#endif
    const sl__decode_image_info *inf = &s->info[i];
    /* (on a GPU pipeline nvJPEG's samples and the cache's hits are never in the run: see
     * sl__decode_image_plan) */
    if (inf->format == 0) return SL_OK; /* skipped */
    /* a host cache (CPU pipelines, or mixed without nvJPEG): hits are copies */
    sl__decode_cache *c = io->device.kind != SL_DEVICE_CUDA ? s->cache : NULL;
    uint8_t *to = sl__decode_image_target(io, i);
    size_t nb = sl_tlist_sample_nbytes(io->out[0], i);
    if (c && c->hit[i]) {
        memcpy(to, c->host + c->hit[i] - 1, nb);
        return SL_OK;
    }
    const sl_tlist *in = io->in[0];
    char why[JMSG_LENGTH_MAX + 64];
    sl_status st =
        sl__decode_image_run(s->workers[worker], in->data[i], sl_tlist_sample_nbytes(in, i), inf,
                             s->type, NULL, s->fast_idct, to, why, sizeof why);
    if (st == SL_EFORMAT && s->skip_bad) {
        __atomic_fetch_add(&s->skipped, 1, __ATOMIC_RELAXED);
        memset(to, 0, nb);
        if (c && c->put[i]) memset(c->host + c->put[i] - 1, 0, nb); /* as a decode would give */
        return SL_OK;
    }
    if (st != SL_OK) return sl__op_fail(err, st, io, i, s->name, "%s", why);
    __atomic_fetch_add(&s->decodes, 1, __ATOMIC_RELAXED);
    if (c && c->put[i]) memcpy(c->host + c->put[i] - 1, to, nb);
    return SL_OK;
}

int64_t sl__decode_image_skipped(void *state) {
    return __atomic_load_n(&((sl__decode_image_state *)state)->skipped, __ATOMIC_RELAXED);
}

int64_t sl__decode_image_decodes(void *state) {
    return __atomic_load_n(&((sl__decode_image_state *)state)->decodes, __ATOMIC_RELAXED);
}

int64_t sl__decode_image_cache_hits(void *state) {
    sl__decode_cache *c = ((sl__decode_image_state *)state)->cache;
    return c ? __atomic_load_n(&c->hits, __ATOMIC_RELAXED) : 0;
}

const sl__op_def sl__decode_image_op = {
    .name = "decoders.image",
    .doc = "Decodes JPEG and PNG images to HWC uint8 (format from the magic bytes).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = decode_args,
    .devices = SL_OPDEV_CPU | SL_OPDEV_MIXED,
    .create = sl__decode_image_create,
    .setup = decode_setup,
    .run_cpu = decode_run_cpu,
#ifdef SLUICE_HAVE_NVJPEG /* split on GPU pipelines: small images on the CPU pool, the rest nvJPEG \
                           */
    .run_gpu = decode_run_gpu,
    .free_batch_state = sl__decode_image_free_batch,
#endif
    .destroy = sl__decode_image_destroy,
};
