/* SPDX-License-Identifier: Apache-2.0 */
/* JPEG 2000 images through OpenJPEG (built where libopenjp2 is found; image_raw.h): JP2 files and
 * raw J2K codestreams, read from memory through an OpenJPEG stream of the open call's own. The
 * peek reads the main header (extents, components, precision; a JP2 palette box); the decode runs
 * OpenJPEG in strict mode, so a cut codestream is an error rather than an image with its missing
 * part black.
 * Components of up to 16 bits, unsigned or signed (signed ones shifted by half their range), are
 * scaled to 8 bits as DALI does (v * 255 / (2^precision - 1), rounded); subsampled components are
 * sampled at the nearest point below; a JP2 palette's colours come out, as many channels as it
 * maps, and sYCC is converted to RGB. OpenJPEG's messages go to handlers of the codec's own (never
 * to stderr): its first error becomes the reason, warnings and information are dropped. */
#include "io/image_raw.h"

#include <openjpeg.h>
#include <stdio.h>
#include <string.h>

typedef struct mem {
    const uint8_t *d;
    size_t n, pos;
    char *why; /* OpenJPEG's first error */
    size_t why_size;
    bool failed;
} mem;

static OPJ_SIZE_T mem_read(void *buf, OPJ_SIZE_T size, void *user) {
    mem *m = user;
    size_t k = m->pos < m->n ? m->n - m->pos : 0;
    if (size < k) k = size;
    if (k == 0) return (OPJ_SIZE_T)-1; /* the end of the stream */
    memcpy(buf, m->d + m->pos, k);
    m->pos += k;
    return k;
}

static OPJ_OFF_T mem_skip(OPJ_OFF_T off, void *user) {
    mem *m = user;
    if (off < 0) {
        if ((uint64_t)-off > m->pos) return -1;
        m->pos -= (size_t)-off;
        return off;
    }
    size_t left = m->pos < m->n ? m->n - m->pos : 0;
    if ((uint64_t)off > left) off = (OPJ_OFF_T)left; /* past the end: what is there */
    m->pos += (size_t)off;
    return off;
}

static OPJ_BOOL mem_seek(OPJ_OFF_T off, void *user) {
    mem *m = user;
    if (off < 0 || (uint64_t)off > m->n) return OPJ_FALSE;
    m->pos = (size_t)off;
    return OPJ_TRUE;
}

static void on_error(const char *msg, void *user) {
    mem *m = user;
    if (m->failed) return;
    size_t len = strlen(msg);
    while (len && (msg[len - 1] == '\n' || msg[len - 1] == ' ')) len--;
    snprintf(m->why, m->why_size, "JPEG 2000: %.*s", (int)(len > 200 ? 200 : len), msg);
    m->failed = true;
}

static void on_quiet(const char *msg, void *user) {
    (void)msg, (void)user;
}

/* the codec and stream over the record, its header read into *img; false with the reason */
static bool open_mem(mem *m, opj_codec_t **codec, opj_stream_t **stream, opj_image_t **img) {
    *codec = NULL, *stream = NULL, *img = NULL;
    bool jp2 = m->n >= 12 && !memcmp(m->d, "\0\0\0\x0c", 4);
    *codec = opj_create_decompress(jp2 ? OPJ_CODEC_JP2 : OPJ_CODEC_J2K);
    *stream = opj_stream_create(1 << 16, OPJ_TRUE);
    if (!*codec || !*stream) {
        snprintf(m->why, m->why_size, "out of memory for a JPEG 2000 decoder");
        return false;
    }
    opj_set_error_handler(*codec, on_error, m);
    opj_set_warning_handler(*codec, on_quiet, m);
    opj_set_info_handler(*codec, on_quiet, m);
    opj_stream_set_user_data(*stream, m, NULL);
    opj_stream_set_user_data_length(*stream, m->n);
    opj_stream_set_read_function(*stream, mem_read);
    opj_stream_set_skip_function(*stream, mem_skip);
    opj_stream_set_seek_function(*stream, mem_seek);
    opj_dparameters_t p;
    opj_set_default_decoder_parameters(&p);
    if (!opj_setup_decoder(*codec, &p) || !opj_decoder_set_strict_mode(*codec, OPJ_TRUE) ||
        !opj_read_header(*stream, *codec, img) || !*img) {
        if (!m->failed) snprintf(m->why, m->why_size, "JPEG 2000 header is invalid");
        return false;
    }
    return true;
}

static void close_mem(opj_codec_t *codec, opj_stream_t *stream, opj_image_t *img) {
    opj_image_destroy(img);
    opj_stream_destroy(stream);
    opj_destroy_codec(codec);
}

static uint64_t be(const uint8_t *p, int k) {
    uint64_t v = 0;
    for (int i = 0; i < k; i++) v = v << 8 | p[i];
    return v;
}

/* the box of type t among the boxes in d[0, n): its contents in *at, *len; false when absent */
static bool find_box(const uint8_t *d, size_t n, const char *t, size_t *at, size_t *len) {
    for (size_t o = 0; n - o >= 8;) {
        uint64_t l = be(d + o, 4), head = 8;
        if (l == 1) {
            if (n - o < 16) return false;
            l = be(d + o + 8, 8), head = 16;
        } else if (l == 0) {
            l = n - o;
        }
        if (l < head || l > n - o) return false;
        if (!memcmp(d + o + 4, t, 4)) {
            *at = o + head, *len = l - head;
            return true;
        }
        o += l;
    }
    return false;
}

/* the channels a JP2 palette (pclr, mapped by cmap) gives the image; 0 without one. OpenJPEG
 * applies the palette in the decode, so its header shows the one component of indices. */
static int palette_channels(const uint8_t *d, size_t n) {
    size_t h, hl, p, pl, m, ml;
    if (n < 12 || memcmp(d, "\0\0\0\x0c", 4) || !find_box(d, n, "jp2h", &h, &hl) ||
        !find_box(d + h, hl, "pclr", &p, &pl))
        return 0;
    if (find_box(d + h, hl, "cmap", &m, &ml)) return ml / 4 > 1000 ? 1000 : (int)(ml / 4);
    return pl >= 3 ? d[h + p + 2] : 0;
}

/* the image's extents and channels, every component checked (count, precision, sampling) */
static sl_status check(const opj_image_t *img, int palette, sl__decode_image_info *info, char *why,
                       size_t why_size) {
    if (img->x1 <= img->x0 || img->y1 <= img->y0 || img->x1 - img->x0 > INT32_MAX ||
        img->y1 - img->y0 > INT32_MAX) {
        snprintf(why, why_size, "JPEG 2000 header gives the area (%u,%u)-(%u,%u)", img->x0, img->y0,
                 img->x1, img->y1);
        return SL_EFORMAT;
    }
    if (img->numcomps < 1 || img->numcomps > 4 || !img->comps) {
        snprintf(why, why_size,
                 "JPEG 2000 image of %u components (sluice decodes 1 to 4: gray, gray+alpha, "
                 "RGB, RGBA)",
                 img->numcomps);
        return SL_EFORMAT;
    }
    for (uint32_t c = 0; c < img->numcomps; c++) {
        const opj_image_comp_t *k = &img->comps[c];
        if (k->prec < 1 || k->prec > 16 || k->dx < 1 || k->dy < 1 || k->dx > 255 || k->dy > 255) {
            snprintf(why, why_size,
                     "JPEG 2000 component %u has %u bits and sampling %ux%u (at most 16 bits)", c,
                     k->prec, k->dx, k->dy);
            return SL_EFORMAT;
        }
    }
    info->w = img->x1 - img->x0, info->h = img->y1 - img->y0, info->orientation = 1;
    info->comps = (int)img->numcomps;
    if (palette > 0 && img->numcomps == 1) { /* indices: the palette's colours come out */
        if (palette > 4) {
            snprintf(why, why_size, "JPEG 2000 palette of %d channels (sluice decodes 1 to 4)",
                     palette);
            return SL_EFORMAT;
        }
        info->comps = palette;
    }
    return SL_OK;
}

sl_status sl__jp2_peek(const uint8_t *d, size_t n, sl__decode_image_info *info, char *why,
                       size_t why_size) {
    mem m = {d, n, 0, why, why_size, false};
    opj_codec_t *codec;
    opj_stream_t *stream;
    opj_image_t *img;
    sl_status st = SL_EFORMAT;
    if (open_mem(&m, &codec, &stream, &img))
        st = check(img, palette_channels(d, n), info, why, why_size);
    close_mem(codec, stream, img);
    return st;
}

/* one decoded component into channel c of out: (h, w, comps) uint8 */
static void put_component(const opj_image_t *img, const opj_image_comp_t *k, int c, int comps,
                          const sl__decode_image_info *info, uint8_t *out) {
    uint32_t maxv = (1u << k->prec) - 1, half = maxv / 2;
    int32_t shift = k->sgnd ? (int32_t)(1u << (k->prec - 1)) : 0;
    for (int64_t y = 0; y < info->h; y++) {
        /* the component's row for image row y: y0 + y on the reference grid, divided by dy */
        int64_t ky = ((int64_t)img->y0 + y) / k->dy - (int64_t)k->y0;
        ky = ky < 0 ? 0 : ky >= (int64_t)k->h ? (int64_t)k->h - 1 : ky;
        const OPJ_INT32 *row = k->data + ky * (int64_t)k->w;
        uint8_t *o = out + (size_t)y * (size_t)info->w * (size_t)comps + c;
        for (int64_t x = 0; x < info->w; x++) {
            int64_t kx = ((int64_t)img->x0 + x) / k->dx - (int64_t)k->x0;
            kx = kx < 0 ? 0 : kx >= (int64_t)k->w ? (int64_t)k->w - 1 : kx;
            int64_t v = (int64_t)row[kx] + shift;
            v = v < 0 ? 0 : v > maxv ? maxv : v;
            o[x * comps] = k->prec == 8 ? (uint8_t)v : (uint8_t)((v * 255 + half) / maxv);
        }
    }
}

static inline uint8_t clamp_u8(double v) {
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v + 0.5);
}

/* sYCC (full-range BT.601 YCbCr, JP2's colour space 18) to RGB in place: px pixels of c channels
 * (the first three Y, Cb, Cr; an alpha after them kept) */
static void sycc_to_rgb(uint8_t *p, size_t px, int c) {
    for (size_t i = 0; i < px; i++, p += c) {
        double y = p[0], cb = p[1] - 128.0, cr = p[2] - 128.0;
        p[0] = clamp_u8(y + 1.402 * cr);
        p[1] = clamp_u8(y - 0.344136 * cb - 0.714136 * cr);
        p[2] = clamp_u8(y + 1.772 * cb);
    }
}

sl_status sl__jp2_decode(const uint8_t *d, size_t n, const sl__decode_image_info *info,
                         uint8_t *out, char *why, size_t why_size) {
    mem m = {d, n, 0, why, why_size, false};
    opj_codec_t *codec;
    opj_stream_t *stream;
    opj_image_t *img;
    sl_status st = SL_EFORMAT;
    if (!open_mem(&m, &codec, &stream, &img)) goto done;
    sl__decode_image_info now = *info;
    if (check(img, palette_channels(d, n), &now, why, why_size) != SL_OK) goto done;
    if (now.w != info->w || now.h != info->h || now.comps != info->comps) {
        snprintf(why, why_size, "JPEG 2000 header changed since its peek");
        goto done;
    }
    if (!opj_decode(codec, stream, img) || !opj_end_decompress(codec, stream) || m.failed) {
        if (!m.failed) snprintf(why, why_size, "JPEG 2000 decode failed");
        goto done;
    }
    /* the decoded components (a JP2 palette has made its colours of the indices) */
    if ((int)img->numcomps != info->comps) {
        snprintf(why, why_size, "JPEG 2000 image decodes to %u components, its header says %d",
                 img->numcomps, info->comps);
        goto done;
    }
    for (uint32_t c = 0; c < img->numcomps; c++) {
        const opj_image_comp_t *k = &img->comps[c];
        if (!k->data || k->w < 1 || k->h < 1 || k->prec < 1 || k->prec > 16) {
            snprintf(why, why_size, "JPEG 2000 component %u decoded to no data", c);
            goto done;
        }
    }
    /* the colour space a JP2's colr box gives (OpenJPEG sets it in the decode) */
    if (img->color_space == OPJ_CLRSPC_EYCC || img->color_space == OPJ_CLRSPC_CMYK) {
        snprintf(why, why_size,
                 "JPEG 2000 colour space %s is not supported (sluice decodes gray, RGB and sYCC)",
                 img->color_space == OPJ_CLRSPC_CMYK ? "CMYK" : "e-YCC");
        goto done;
    }
    for (uint32_t c = 0; c < img->numcomps; c++)
        put_component(img, &img->comps[c], (int)c, info->comps, info, out);
    if (img->color_space == OPJ_CLRSPC_SYCC && info->comps >= 3)
        sycc_to_rgb(out, (size_t)info->w * (size_t)info->h, info->comps);
    st = SL_OK;
done:
    close_mem(codec, stream, img);
    return st;
}
