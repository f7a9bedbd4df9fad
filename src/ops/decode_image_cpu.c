/* SPDX-License-Identifier: Apache-2.0 */
/* The image decoders' CPU decoder (decode_image_cpu.h): JPEG through libjpeg-turbo's libjpeg API
 * (baseline, progressive, gray, 4:2:0, 4:4:4, CMYK/YCCK), whole or a window of it, PNG through
 * libspng, and BMP, PNM, TIFF and JPEG 2000 through io/image_raw.c, to HWC uint8 in DALI's output
 * types (RGB, BGR, GRAY = the JPEG luma plane, YCbCr BT.601, ANY_DATA) and the EXIF orientation,
 * with the pixel conversions and the orientation done here. A worker, created once per pool thread,
 * keeps its decompressor and scratch across images. libjpeg's error_exit longjmps back here, so bad
 * data is an SL_EFORMAT with the reason, never an exit. */
#include "ops/decode_image_cpu.h"

#include "io/image_raw.h"

#include "core/alloc.h"
#include "core/size.h"

#include <stdio.h> /* before jpeglib.h, which uses FILE */

#include <jerror.h>
#include <jpeglib.h>
#include <setjmp.h>
#include <spng.h>
#include <stdlib.h>
#include <string.h>

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

/* BMP, PNM, TIFF and JPEG 2000 (io/image_raw.h): the file's channels (1 gray, 2 gray+alpha, 3 RGB,
 * 4 RGBA) into scratch, then to the output type's channels */
static sl_status decode_raw(sl__decode_image_worker *w, const uint8_t *data, size_t size,
                            const sl__decode_image_info *info, sl__img_type type,
                            const sl__decode_image_roi *roi, uint8_t *out, char *why,
                            size_t why_size) {
    int fc = info->comps, c = info->c;
    size_t px = (size_t)info->w * (size_t)info->h; /* the peek bounded px * 4 */
    bool convert = type != SL__IMG_ANY && !(type == SL__IMG_GRAY && fc == 1);
    uint8_t *buf = scratch(w, px * (size_t)fc + (convert ? px * (size_t)c : 0));
    if (!buf) {
        snprintf(why, why_size, "out of memory for a %lldx%lld image", (long long)info->w,
                 (long long)info->h);
        return SL_ENOMEM;
    }
    sl_status st = sl__raw_image_decode(data, size, info, buf, why, why_size);
    if (st != SL_OK) return st;
    const uint8_t *img = buf;
    if (convert) { /* gray (from 3) or RGB (from 0: alpha dropped) to the type's channels */
        convert_row(buf, fc, fc <= 2 ? 3 : 0, buf + px * (size_t)fc, (int64_t)px, type, c);
        img = buf + px * (size_t)fc;
    }
    orient_copy(img, info->h, info->w, c, info->orientation, roi, out);
    return SL_OK;
}

sl_status sl__decode_image_run(sl__decode_image_worker *w, const uint8_t *data, size_t size,
                               const sl__decode_image_info *info, sl__img_type type,
                               const sl__decode_image_roi *roi, bool fast_idct, uint8_t *out,
                               char *why, size_t why_size) {
    sl__decode_image_roi whole = {0, 0, info->out_h, info->out_w};
    if (!roi) roi = &whole;
    if (info->format == SL__IMG_JPEG)
        return decode_jpeg(w, data, size, info, type, roi, fast_idct, out, why, why_size);
    if (info->format == SL__IMG_BMP || info->format == SL__IMG_PNM ||
        info->format == SL__IMG_TIFF || info->format == SL__IMG_JP2)
        return decode_raw(w, data, size, info, type, roi, out, why, why_size);
    return decode_png(w, data, size, info, type, roi, out, why, why_size);
}
