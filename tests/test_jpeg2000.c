/* SPDX-License-Identifier: Apache-2.0 */
/* JPEG 2000 in the image decoders. Random images are written losslessly by OpenJPEG's own encoder
 * (JP2 files and raw J2K codestreams; 1 to 4 components of 8, 12 and 16 bits, unsigned and signed,
 * subsampled) and decoded by the decoders' CPU path, whole and through a window, in every output
 * type, and compared with the pixels they were written from (exact: 8 bits as stored, more bits
 * scaled to 0..255 as DALI does); the ROI decoders (decoders.image_crop, decoders.image_slice) take
 * the same path through an operator instance. Cut files and a few hundred mutated ones are errors
 * with a reason, never a crash (the ASan build runs this too). A build without OpenJPEG refuses
 * JPEG 2000 by name. `test_jpeg2000 DIR [npy]` writes a few small files into DIR instead (the fuzz
 * corpus's seeds; with npy also the images they decode to, for the Python tests). */
#include "check.h"
#include "opharness.h"

#include "io/image_info.h"
#include "ops/decode_image_cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sl_err e;

#ifdef SLUICE_HAVE_OPENJPEG
#include <openjpeg.h>

/* ---- an in-memory encoder ------------------------------------------------------------------- */

typedef struct buf {
    uint8_t *d;
    size_t n, cap, pos;
} buf;

static OPJ_SIZE_T buf_write(void *p, OPJ_SIZE_T size, void *user) {
    buf *b = user;
    if (b->pos + size > b->cap) {
        size_t cap = (b->pos + size) * 2;
        uint8_t *d = realloc(b->d, cap);
        if (!d) return (OPJ_SIZE_T)-1;
        b->d = d, b->cap = cap;
    }
    memcpy(b->d + b->pos, p, size);
    b->pos += size;
    if (b->pos > b->n) b->n = b->pos;
    return size;
}

static OPJ_OFF_T buf_skip(OPJ_OFF_T off, void *user) {
    buf *b = user;
    b->pos += (size_t)off;
    return off;
}

static OPJ_BOOL buf_seek(OPJ_OFF_T off, void *user) {
    ((buf *)user)->pos = (size_t)off;
    return OPJ_TRUE;
}

typedef struct spec {
    int h, w, comps, prec;
    bool sgnd, jp2;
    int sub; /* components 1 and 2 sampled every sub pixels (1: none) */
    int ycc; /* 1: the JP2's colour space says sYCC */
} spec;

/* px: (h, w, comps) values of the image (within prec bits, signed when sgnd), each component at
 * its own sampling; returns the encoded bytes (malloc'd), lossless (reversible 5/3 wavelet) */
static uint8_t *encode(const spec *s, const int32_t *px, size_t *len) {
    opj_image_cmptparm_t cp[8];
    memset(cp, 0, sizeof cp);
    for (int c = 0; c < s->comps; c++) {
        int d = (c == 1 || c == 2) ? s->sub : 1;
        cp[c].dx = cp[c].dy = (OPJ_UINT32)d;
        cp[c].w = (OPJ_UINT32)((s->w + d - 1) / d), cp[c].h = (OPJ_UINT32)((s->h + d - 1) / d);
        cp[c].prec = (OPJ_UINT32)s->prec, cp[c].sgnd = s->sgnd;
    }
    OPJ_COLOR_SPACE cs = s->ycc          ? OPJ_CLRSPC_SYCC
                         : s->comps >= 3 ? OPJ_CLRSPC_SRGB
                                         : OPJ_CLRSPC_GRAY;
    opj_image_t *img = opj_image_create((OPJ_UINT32)s->comps, cp, cs);
    CHECK(img != NULL);
    img->x0 = img->y0 = 0, img->x1 = (OPJ_UINT32)s->w, img->y1 = (OPJ_UINT32)s->h;
    for (int c = 0; c < s->comps; c++) {
        opj_image_comp_t *k = &img->comps[c];
        for (uint32_t y = 0; y < k->h; y++)
            for (uint32_t x = 0; x < k->w; x++)
                k->data[y * k->w + x] = px[((y * k->dy) * s->w + x * k->dx) * s->comps + c];
        if ((s->comps == 2 || s->comps == 4) && c == s->comps - 1) k->alpha = 1;
    }
    opj_cparameters_t p;
    opj_set_default_encoder_parameters(&p);
    p.tcp_numlayers = 1, p.tcp_rates[0] = 0, p.cp_disto_alloc = 1; /* lossless */
    p.tcp_mct = s->comps == 3 && s->sub == 1 && !s->ycc ? 1 : 0;
    p.numresolution = 3;
    opj_codec_t *codec = opj_create_compress(s->jp2 ? OPJ_CODEC_JP2 : OPJ_CODEC_J2K);
    CHECK(opj_setup_encoder(codec, &p, img));
    buf b = {0};
    opj_stream_t *st = opj_stream_create(1 << 16, OPJ_FALSE);
    opj_stream_set_user_data(st, &b, NULL);
    opj_stream_set_write_function(st, buf_write);
    opj_stream_set_skip_function(st, buf_skip);
    opj_stream_set_seek_function(st, buf_seek);
    CHECK(opj_start_compress(codec, img, st));
    CHECK(opj_encode(codec, st));
    CHECK(opj_end_compress(codec, st));
    opj_stream_destroy(st);
    opj_destroy_codec(codec);
    opj_image_destroy(img);
    *len = b.n;
    return b.d;
}

/* random values of s's precision (signed ones around 0) */
static int32_t *random_pixels(const spec *s, uint32_t *seed) {
    size_t n = (size_t)s->h * s->w * s->comps;
    int32_t *px = malloc(n * sizeof *px);
    for (size_t i = 0; i < n; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        int32_t v = (int32_t)((*seed >> 8) & ((1u << s->prec) - 1));
        px[i] = s->sgnd ? v - (1 << (s->prec - 1)) : v;
    }
    return px;
}

/* what the decoder gives for value v: 8 bits as they are, others scaled, signed ones shifted */
static uint8_t to8(const spec *s, int32_t v) {
    int64_t maxv = ((int64_t)1 << s->prec) - 1, u = v + (s->sgnd ? 1 << (s->prec - 1) : 0);
    return s->prec == 8 ? (uint8_t)u : (uint8_t)((u * 255 + maxv / 2) / maxv);
}

/* the expected (h, w, comps) 8-bit image: every component at its own sampling */
static uint8_t *expected(const spec *s, const int32_t *px) {
    uint8_t *want = malloc((size_t)s->h * s->w * s->comps);
    for (int y = 0; y < s->h; y++)
        for (int x = 0; x < s->w; x++)
            for (int c = 0; c < s->comps; c++) {
                int d = (c == 1 || c == 2) ? s->sub : 1;
                int32_t v = px[((y / d * d) * s->w + x / d * d) * s->comps + c];
                want[(y * s->w + x) * s->comps + c] = to8(s, v);
            }
    return want;
}

/* YCbCr channel c (BT.601 studio swing), as the decoders convert every format */
static uint8_t ycc(int r, int g, int b, int c) {
    double v = c == 0   ? 16.5 + (65.481 * r + 128.553 * g + 24.966 * b) / 255.0
               : c == 1 ? 128.5 + (-37.797 * r - 74.203 * g + 112.0 * b) / 255.0
                        : 128.5 + (112.0 * r - 93.786 * g - 18.214 * b) / 255.0;
    int i = (int)v;
    return (uint8_t)(i < 0 ? 0 : i > 255 ? 255 : i);
}

static uint8_t luma(int r, int g, int b) {
    return (uint8_t)((19595 * r + 38470 * g + 7471 * b + 32768) >> 16);
}

/* decodes data as type (whole, or the window roi) and compares with want (h, w, comps) */
static void check_decode(sl__decode_image_worker *w, const uint8_t *data, size_t len, const spec *s,
                         const uint8_t *want, sl__img_type type, const sl__decode_image_roi *roi,
                         const char *what) {
    sl__decode_image_info info;
    char why[256] = "";
    sl_status st = sl__decode_image_peek(data, len, type, true, 0, &info, why, sizeof why);
    CHECK_MSG(st == SL_OK, "%s: peek: %s", what, why);
    if (st != SL_OK) return;
    int want_c = type == SL__IMG_GRAY ? 1 : type == SL__IMG_ANY ? s->comps : 3;
    CHECK_MSG(info.format == SL__IMG_JP2 && info.out_h == s->h && info.out_w == s->w &&
                  info.comps == s->comps && info.c == want_c,
              "%s: peek gave format %d %lldx%lld, %d comps, %d channels", what, info.format,
              (long long)info.out_w, (long long)info.out_h, info.comps, info.c);
    sl__decode_image_roi whole = {0, 0, s->h, s->w};
    const sl__decode_image_roi *r = roi ? roi : &whole;
    size_t n = (size_t)r->h * r->w * want_c;
    uint8_t *out = malloc(n);
    st = sl__decode_image_run(w, data, len, &info, type, roi, false, out, why, sizeof why);
    CHECK_MSG(st == SL_OK, "%s: decode: %s", what, why);
    int bad = 0;
    for (int64_t y = 0; st == SL_OK && y < r->h; y++)
        for (int64_t x = 0; x < r->w; x++) {
            const uint8_t *p = want + ((r->y + y) * s->w + r->x + x) * s->comps;
            const uint8_t *o = out + (y * r->w + x) * want_c;
            int rr = p[0], g = s->comps >= 3 ? p[1] : p[0], b = s->comps >= 3 ? p[2] : p[0];
            for (int c = 0; c < want_c; c++) {
                int v = type == SL__IMG_ANY     ? p[c]
                        : type == SL__IMG_YCBCR ? ycc(rr, g, b, c)
                        : type == SL__IMG_GRAY  ? (s->comps <= 2 ? p[0] : luma(rr, g, b))
                        : type == SL__IMG_BGR   ? (c == 0   ? b
                                                   : c == 1 ? g
                                                            : rr)
                                                : (c == 0   ? rr
                                                   : c == 1 ? g
                                                            : b);
                if (o[c] != v && bad++ < 3)
                    CHECK_MSG(0, "%s: pixel (%lld,%lld) channel %d: %d, want %d", what,
                              (long long)y, (long long)x, c, o[c], v);
            }
        }
    CHECK_MSG(bad == 0, "%s: %d values differ", what, bad);
    free(out);
}

static const spec specs[] = {
    {13, 17, 1, 8, false, true, 1, 0},  {13, 17, 2, 8, false, true, 1, 0},
    {13, 17, 3, 8, false, true, 1, 0},  {13, 17, 4, 8, false, true, 1, 0},
    {9, 21, 3, 8, false, false, 1, 0},  {9, 21, 1, 16, false, true, 1, 0},
    {9, 21, 3, 16, false, false, 1, 0}, {9, 21, 4, 16, false, true, 1, 0},
    {11, 6, 3, 12, false, true, 1, 0},  {11, 6, 1, 12, false, false, 1, 0},
    {8, 8, 3, 8, true, false, 1, 0},    {10, 12, 3, 8, false, false, 2, 0},
    {40, 33, 3, 8, false, true, 1, 0},
};

/* every spec, every output type, a window of each */
static void decode_cases(sl__decode_image_worker *w) {
    uint32_t seed = 7;
    for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++) {
        const spec *s = &specs[k];
        int32_t *px = random_pixels(s, &seed);
        size_t len;
        uint8_t *data = encode(s, px, &len);
        uint8_t *want = expected(s, px);
        char what[128];
        snprintf(what, sizeof what, "%s %dx%d, %d comps of %d bits%s%s", s->jp2 ? "JP2" : "J2K",
                 s->w, s->h, s->comps, s->prec, s->sgnd ? ", signed" : "",
                 s->sub > 1 ? ", subsampled" : "");
        for (int t = 0; t < 5; t++) {
            check_decode(w, data, len, s, want, (sl__img_type)t, NULL, what);
            sl__decode_image_roi roi = {s->h / 3, s->w / 4, s->h / 2, s->w / 2};
            check_decode(w, data, len, s, want, (sl__img_type)t, &roi, what);
        }
        free(data);
        free(want);
        free(px);
    }
}

/* decoders.image_crop and decoders.image_slice, the ROI decoders, on a batch of two */
static void roi_ops(void) {
    spec s = {20, 30, 3, 8, false, true, 1, 0};
    uint32_t seed = 99;
    int32_t *px = random_pixels(&s, &seed);
    size_t len[2];
    spec s2 = s;
    s2.jp2 = false;
    uint8_t *data[2] = {encode(&s, px, &len[0]), encode(&s2, px, &len[1])};
    uint8_t *want = expected(&s, px);
    sl_tlist in = {0};
    CHECK_OK(oph_bytes(&in, 2, (const void *const *)data, len, &e), &e);
    sl_tlist *ins[] = {&in};
    /* a 10x12 window at (5, 9): crop_pos = anchor / (extent - crop) */
    const char *crop[] = {"crop_h=10", "crop_w=12", "crop_pos_y=0.5", "crop_pos_x=0.5", NULL};
    const char *slice[] = {"start=[9, 5]", "end=[21, 15]", NULL};
    const char *const *args[] = {crop, slice};
    const char *ops[] = {"decoders.image_crop", "decoders.image_slice"};
    for (int k = 0; k < 2; k++) {
        oph h;
        CHECK_OK(oph_create(&h, ops[k], args[k], 2, 2, 1, &e), &e);
        CHECK_OK(oph_run(&h, 2, ins, 1, NULL, 0, NULL, 0, &e), &e);
        for (int i = 0; i < 2 && h.out[0].count == 2; i++) {
            const int64_t *sh = h.out[0].shapes + i * h.out[0].ndim;
            CHECK_MSG(sh[0] == 10 && sh[1] == 12 && sh[2] == 3, "%s: %lldx%lldx%lld", ops[k],
                      (long long)sh[0], (long long)sh[1], (long long)sh[2]);
            const uint8_t *o = h.out[0].data[i];
            int bad = 0;
            for (int y = 0; y < 10; y++)
                for (int x = 0; x < 12 * 3; x++)
                    bad += o[y * 36 + x] != want[((5 + y) * 30 + 9) * 3 + x];
            CHECK_MSG(bad == 0, "%s sample %d: %d values differ", ops[k], i, bad);
        }
        oph_destroy(&h);
    }
    /* a bad record in the batch: the op's error names it */
    uint8_t *cut = malloc(len[0] / 2);
    memcpy(cut, data[0], len[0] / 2);
    const void *bd[] = {data[0], cut};
    size_t bl[] = {len[0], len[0] / 2};
    sl_tlist bad = {0};
    CHECK_OK(oph_bytes(&bad, 2, bd, bl, &e), &e);
    sl_tlist *bins[] = {&bad};
    const char *keys[] = {"good.jp2", "cut.jp2"};
    oph h;
    CHECK_OK(oph_create(&h, "decoders.image", (const char *[]){NULL}, 1, 2, 1, &e), &e);
    CHECK_FAILS(oph_run(&h, 2, bins, 1, NULL, 0, keys, 0, &e), SL_EFORMAT, &e, "cut.jp2");
    CHECK_MSG(strstr(e.msg, "JPEG 2000") != NULL, "%s", e.msg);
    oph_destroy(&h);
    sl_tlist_free(&bad);
    sl_tlist_free(&in);
    free(cut);
    free(data[0]);
    free(data[1]);
    free(want);
    free(px);
}

/* a JP2 of palette indices (4 bits), its jp2h box given a pclr box of 16 RGB colours and a cmap
 * box mapping them to 3 channels: decoded to the colours */
static void palette(sl__decode_image_worker *w) {
    spec s = {7, 9, 1, 4, false, true, 1, 0};
    uint32_t seed = 11;
    int32_t *px = random_pixels(&s, &seed);
    size_t len;
    uint8_t *data = encode(&s, px, &len);
    uint8_t boxes[8 + 3 + 3 + 48 + 8 + 12], *b = boxes;
    memcpy(b, "\0\0\0\076pclr", 8);
    b[8] = 0, b[9] = 16, b[10] = 3, b[11] = b[12] = b[13] = 7; /* 16 entries, 3 of 8 bits */
    uint8_t colours[16][3];
    for (int i = 0; i < 16; i++)
        for (int c = 0; c < 3; c++)
            colours[i][c] = b[14 + i * 3 + c] = (uint8_t)(i * 16 + c * 85 + 3);
    b += 62;
    memcpy(b, "\0\0\0\024cmap", 8);
    for (int c = 0; c < 3; c++)
        b[8 + c * 4] = 0, b[9 + c * 4] = 0, b[10 + c * 4] = 1, b[11 + c * 4] = (uint8_t)c;
    /* the jp2h box follows the signature (12 bytes) and ftyp boxes: append to it */
    size_t at = 12 + (size_t)(data[12] << 24 | data[13] << 16 | data[14] << 8 | data[15]);
    CHECK(!memcmp(data + at + 4, "jp2h", 4));
    size_t hl = (size_t)(data[at] << 24 | data[at + 1] << 16 | data[at + 2] << 8 | data[at + 3]);
    uint8_t *pal = malloc(len + sizeof boxes);
    memcpy(pal, data, at + hl);
    memcpy(pal + at + hl, boxes, sizeof boxes);
    memcpy(pal + at + hl + sizeof boxes, data + at + hl, len - at - hl);
    size_t nl = hl + sizeof boxes;
    pal[at] = (uint8_t)(nl >> 24), pal[at + 1] = (uint8_t)(nl >> 16),
    pal[at + 2] = (uint8_t)(nl >> 8), pal[at + 3] = (uint8_t)nl;
    spec rgb = s;
    rgb.comps = 3, rgb.prec = 8;
    uint8_t *want = malloc((size_t)s.h * s.w * 3);
    for (int i = 0; i < s.h * s.w; i++) memcpy(want + i * 3, colours[px[i]], 3);
    check_decode(w, pal, len + sizeof boxes, &rgb, want, SL__IMG_ANY, NULL, "JP2 palette");
    check_decode(w, pal, len + sizeof boxes, &rgb, want, SL__IMG_GRAY, NULL, "JP2 palette");
    free(want);
    free(pal);
    free(data);
    free(px);
}

/* a JP2 whose colr box says sYCC: its Y, Cb, Cr (here 4:2:0, as such files usually are)
 * converted to RGB with the full-range BT.601 matrix */
static void sycc(sl__decode_image_worker *w) {
    spec s = {10, 12, 3, 8, false, true, 2, 1};
    uint32_t seed = 17;
    int32_t *px = random_pixels(&s, &seed);
    size_t len;
    uint8_t *data = encode(&s, px, &len);
    uint8_t *want = expected(&s, px);
    for (int i = 0; i < s.h * s.w; i++) {
        uint8_t *p = want + i * 3;
        double y = p[0], cb = p[1] - 128.0, cr = p[2] - 128.0,
               rgb[3] = {y + 1.402 * cr, y - 0.344136 * cb - 0.714136 * cr, y + 1.772 * cb};
        for (int c = 0; c < 3; c++)
            p[c] = (uint8_t)(rgb[c] < 0 ? 0 : rgb[c] > 255 ? 255 : rgb[c] + 0.5);
    }
    check_decode(w, data, len, &s, want, SL__IMG_RGB, NULL, "JP2 sYCC 4:2:0");
    check_decode(w, data, len, &s, want, SL__IMG_BGR, NULL, "JP2 sYCC 4:2:0");
    free(want);
    free(data);
    free(px);
}

/* what sluice refuses, by name: more than 4 components, more than 16 bits, e-YCC and CMYK */
static void refused(sl__decode_image_worker *w) {
    static const struct {
        spec s;
        const char *why;
    } cases[] = {{{4, 4, 5, 8, false, false, 1, 0}, "JPEG 2000 image of 5 components"},
                 {{4, 4, 1, 20, false, true, 1, 0}, "component 0 has 20 bits"}};
    uint32_t seed = 13;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        spec s = cases[k].s;
        int32_t *px = random_pixels(&s, &seed);
        size_t len;
        uint8_t *data = encode(&s, px, &len);
        sl__decode_image_info info;
        char why[256] = "";
        CHECK_EQ_INT(sl__decode_image_peek(data, len, SL__IMG_RGB, true, 0, &info, why, sizeof why),
                     SL_EFORMAT);
        CHECK_MSG(strstr(why, cases[k].why) != NULL, "'%s' lacks '%s'", why, cases[k].why);
        free(data);
        free(px);
    }
    /* colour spaces the decode finds (OpenJPEG reads the colr box there) */
    for (int k = 0; k < 2; k++) {
        spec s = {4, 4, 3 + k, 8, false, true, 1, 0};
        int32_t *px = random_pixels(&s, &seed);
        size_t len;
        uint8_t *data = encode(&s, px, &len);
        /* the colr box's enumerated colour space (after METH, PREC, APPROX): 24 e-YCC, 12 CMYK */
        uint8_t *colr = NULL;
        for (size_t i = 0; i + 11 < len && !colr; i++)
            if (!memcmp(data + i, "colr", 4) && data[i + 4] == 1) colr = data + i + 7;
        CHECK(colr != NULL);
        if (colr) colr[3] = k ? 12 : 24;
        sl__decode_image_info info;
        char why[256] = "";
        CHECK_OK(sl__decode_image_peek(data, len, SL__IMG_RGB, true, 0, &info, why, sizeof why),
                 NULL);
        uint8_t out[4 * 4 * 3];
        CHECK_EQ_INT(sl__decode_image_run(w, data, len, &info, SL__IMG_RGB, NULL, false, out, why,
                                          sizeof why),
                     SL_EFORMAT);
        const char *want = k ? "colour space CMYK is not supported" : "e-YCC is not supported";
        CHECK_MSG(strstr(why, want) != NULL, "'%s' lacks '%s'", why, want);
        free(data);
        free(px);
    }
}

/* one peek and decode of a damaged record: SL_OK, or an error with its reason */
static int try_decode(sl__decode_image_worker *w, const uint8_t *d, size_t n) {
    sl__decode_image_info info;
    char why[256] = "";
    sl_status st = sl__decode_image_peek(d, n, SL__IMG_ANY, true, 1 << 22, &info, why, sizeof why);
    if (st == SL_OK) {
        uint8_t *out = malloc((size_t)info.out_h * info.out_w * info.c);
        CHECK(out != NULL);
        why[0] = 0;
        st = sl__decode_image_run(w, d, n, &info, SL__IMG_ANY, NULL, false, out, why, sizeof why);
        free(out);
    }
    CHECK_MSG(st == SL_OK || (st == SL_EFORMAT && why[0]), "status %s, reason '%s'",
              sl_status_name(st), why);
    return st == SL_OK;
}

/* cut at many lengths (strict decoding: each an error), and 400 mutations of 1 to 4 bytes */
static void damaged(sl__decode_image_worker *w) {
    uint32_t seed = 3;
    for (int k = 0; k < 2; k++) {
        spec s = {24, 20, 3, 8, false, k == 0, 1, 0};
        int32_t *px = random_pixels(&s, &seed);
        size_t len;
        uint8_t *data = encode(&s, px, &len);
        uint8_t *copy = malloc(len);
        int cut_ok = 0;
        for (size_t n = 0; n < len; n += 1 + len / 97) {
            memcpy(copy, data, n);
            cut_ok += try_decode(w, copy, n);
        }
        CHECK_MSG(cut_ok == 0, "%d cut %s files decoded", cut_ok, k == 0 ? "JP2" : "J2K");
        int ok = 0;
        for (int m = 0; m < 200; m++) {
            memcpy(copy, data, len);
            seed = seed * 1664525u + 1013904223u;
            int flips = 1 + (int)(seed >> 30);
            for (int f = 0; f < flips; f++) {
                seed = seed * 1664525u + 1013904223u;
                copy[(seed >> 8) % len] ^= (uint8_t)(1u << ((seed >> 4) & 7));
            }
            ok += try_decode(w, copy, len);
        }
        printf("%s: %zu bytes; of 200 mutations %d decoded, the rest refused with a reason\n",
               k == 0 ? "JP2" : "J2K", len, ok);
        free(copy);
        free(data);
        free(px);
    }
}

/* an (h, w, c) uint8 array as a .npy file */
static void write_npy(const char *path, const uint8_t *d, int h, int w, int c) {
    char head[128];
    int n = snprintf(head, sizeof head,
                     "{'descr': '|u1', 'fortran_order': False, 'shape': (%d, %d, %d), }", h, w, c);
    int pad = 64 - (10 + n + 1) % 64;
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    uint8_t pre[10] = {0x93,
                       'N',
                       'U',
                       'M',
                       'P',
                       'Y',
                       1,
                       0,
                       (uint8_t)((n + pad + 1) & 255),
                       (uint8_t)((n + pad + 1) >> 8)};
    fwrite(pre, 1, 10, f);
    fwrite(head, 1, (size_t)n, f);
    for (int k = 0; k < pad; k++) fputc(' ', f);
    fputc('\n', f);
    CHECK(fwrite(d, 1, (size_t)h * w * c, f) == (size_t)h * w * c && fclose(f) == 0);
}

/* small files: DIR/jp2_rgb_8bit, ... (the fuzz corpus's seeds); with npy, each also with
 * DIR/<name>.npy, the (h, w, comps) image the decoder gives for it (the Python tests') */
static int write_files(const char *dir, bool npy) {
    static const struct {
        const char *name;
        spec s;
    } files[] = {{"jp2_rgb_8bit", {6, 7, 3, 8, false, true, 1, 0}},
                 {"jp2_gray_alpha_16bit", {5, 4, 2, 16, false, true, 1, 0}},
                 {"j2k_rgba_12bit", {4, 6, 4, 12, false, false, 1, 0}},
                 {"j2k_subsampled_signed", {6, 6, 3, 8, true, false, 2, 0}}};
    uint32_t seed = 5;
    for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
        const spec *s = &files[k].s;
        int32_t *px = random_pixels(s, &seed);
        size_t len;
        uint8_t *d = encode(s, px, &len);
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, files[k].name);
        FILE *f = fopen(path, "wb");
        CHECK(f && fwrite(d, 1, len, f) == len && fclose(f) == 0);
        if (npy) {
            uint8_t *want = expected(s, px);
            snprintf(path, sizeof path, "%s/%s.npy", dir, files[k].name);
            write_npy(path, want, s->h, s->w, s->comps);
            free(want);
        }
        free(d);
        free(px);
    }
    return check_done();
}

int main(int argc, char **argv) {
    if (argc > 1) return write_files(argv[1], argc > 2 && !strcmp(argv[2], "npy"));
    sl__decode_image_worker *w;
    CHECK_OK(sl__decode_image_worker_create(true, &w, &e), &e);
    decode_cases(w);
    roi_ops();
    palette(w);
    sycc(w);
    refused(w);
    damaged(w);
    sl__decode_image_worker_free(w);
    return check_done();
}

#else /* a build without OpenJPEG: refused by name */

int main(void) {
    static const uint8_t jp2[] = "\0\0\0\x0cjP  \r\n\x87\n\0\0\0\x14"
                                 "ftypjp2 ";
    static const uint8_t j2k[] = "\xff\x4f\xff\x51\0\x29\0\0";
    const uint8_t *d[] = {jp2, j2k};
    size_t n[] = {sizeof jp2 - 1, sizeof j2k - 1};
    for (int k = 0; k < 2; k++) {
        sl__decode_image_info info;
        char why[256] = "";
        CHECK_EQ_INT(
            sl__decode_image_peek(d[k], n[k], SL__IMG_RGB, true, 0, &info, why, sizeof why),
            SL_EFORMAT);
        CHECK_MSG(strstr(why, "JPEG 2000 images are not supported") != NULL, "%s", why);
    }
    (void)e;
    return check_done();
}
#endif
