/* SPDX-License-Identifier: Apache-2.0 */
/* jpeg_compression_distortion (DALI's fn.jpeg_compression_distortion): each uint8 HWC image (3
 * channels, or 1) encoded as a baseline JPEG at `quality` (1-100, per sample; libjpeg's defaults:
 * 4:2:0 chroma for colour) and decoded again (libjpeg's defaults: the accurate integer IDCT and
 * fancy upsampling), so it carries the JPEG artefacts of that quality. The shape is kept.
 * Sequences (FHWC) go frame by frame, every frame at its sample's quality, as DALI's. CPU
 * only here: the CUDA run (DALI's uses nvJPEG's encoder) is not written. */
#include "operator/argin.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"
#include "io/jpegenc.h"

#include <stdio.h> /* before jpeglib.h, which uses FILE */

#include <jpeglib.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

static const sl__arg_schema jd_args[] = {
    {"quality", SL_ARG_INT, "50", "JPEG quality, 1 (worst) to 100", SL_ARGF_PER_SAMPLE, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct jd_state {
    int quality, node;
    int *q; /* per sample of the batch */
    int cap;
} jd_state;

static void jd_destroy(void *state) {
    jd_state *s = state;
    if (!s) return;
    free(s->q);
    free(s);
}

static sl_status jd_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    jd_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->quality = (int)sl__args_int(a, "quality");
    s->node = sl__args_node(a, "quality");
    if (s->node < 0 && (s->quality < 1 || s->quality > 100)) {
        int q = s->quality;
        free(s);
        return sl__op_at_run(init,
                             sl_err_set(err, SL_EINVAL, /* DALI checks it when it runs */
                                        "jpeg_compression_distortion: quality %d (1 to 100)", q));
    }
    *out = s;
    return SL_OK;
}

static sl_status jd_setup(void *state, sl__op_io *io, sl_err *err) {
    jd_state *s = state;
    const sl_tlist *in = io->in[0];
    if (in->dtype != SL_DTYPE_U8 || in->ndim != 3)
        return sl_err_set(err, SL_EINVAL,
                          "jpeg_compression_distortion: %s %d-d input (uint8 HWC images)",
                          sl_dtype_name(in->dtype), in->ndim);
    if (io->batch > s->cap) {
        int *q = realloc(s->q, (size_t)io->batch * sizeof *q);
        if (!q) return sl_err_set(err, SL_ENOMEM, "jpeg_compression_distortion: out of memory");
        s->q = q, s->cap = io->batch;
    }
    for (int i = 0; i < io->batch; i++) {
        const int64_t *sh = sl_tlist_shape(in, i);
        if (sh[2] != 1 && sh[2] != 3)
            return sl__op_fail(err, SL_EINVAL, io, i, "jpeg_compression_distortion",
                               "%lld channels (1 or 3)", (long long)sh[2]);
        if (sh[0] > 65500 || sh[1] > 65500)
            return sl__op_fail(err, SL_EINVAL, io, i, "jpeg_compression_distortion",
                               "%lld x %lld is beyond JPEG's 65500 pixels a side", (long long)sh[0],
                               (long long)sh[1]);
        double q = s->quality;
        if (s->node >= 0 && sl__argin_values(io, s->node, i, &q, 1) != 1)
            return sl__op_fail(err, SL_EINVAL, io, i, "jpeg_compression_distortion",
                               "quality must be one value per sample");
        if (!(q >= 1 && q <= 100))
            return sl__op_fail(err, SL_EINVAL, io, i, "jpeg_compression_distortion",
                               "quality %g (1 to 100)", q);
        s->q[i] = (int)q;
    }
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, SL_DTYPE_U8, 3, sl_cpu(), err));
    SL_TRY(sl_tlist_alloc(out, in->shapes, err));
    memcpy(out->layout, in->layout, sizeof out->layout);
    return SL_OK;
}

typedef struct jerr {
    struct jpeg_error_mgr pub;
    jmp_buf jb;
    char msg[JMSG_LENGTH_MAX];
} jerr;

static void on_error(j_common_ptr c) {
    jerr *e = (jerr *)c->err;
    c->err->format_message(c, e->msg);
    longjmp(e->jb, 1);
}

static void no_output(j_common_ptr c) {
    (void)c;
}

/* data: a JPEG we wrote; out: (h, w, c) */
static sl_status decode(const uint8_t *data, size_t size, uint8_t *out, int64_t h, int64_t w, int c,
                        sl_err *err) {
    struct jpeg_decompress_struct ci;
    jerr je;
    ci.err = jpeg_std_error(&je.pub);
    je.pub.error_exit = on_error;
    je.pub.output_message = no_output;
    if (setjmp(je.jb)) {
        jpeg_destroy_decompress(&ci);
        return sl_err_set(err, SL_EIO, "decoding failed: %s", je.msg);
    }
    jpeg_create_decompress(&ci);
    jpeg_mem_src(&ci, data, (unsigned long)size);
    jpeg_read_header(&ci, TRUE);
    ci.out_color_space = c == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_start_decompress(&ci);
    if ((int64_t)ci.output_width != w || (int64_t)ci.output_height != h ||
        ci.output_components != c) {
        jpeg_destroy_decompress(&ci);
        return sl_err_set(err, SL_EIO, "the JPEG decoded to another shape");
    }
    while (ci.output_scanline < ci.output_height) {
        JSAMPROW row = out + (size_t)ci.output_scanline * (size_t)w * (size_t)c;
        jpeg_read_scanlines(&ci, &row, 1);
    }
    jpeg_finish_decompress(&ci);
    jpeg_destroy_decompress(&ci);
    return SL_OK;
}

static sl_status jd_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    jd_state *s = state;
    (void)worker;
    const sl_tlist *in = io->in[0];
    const int64_t *sh = sl_tlist_shape(in, i);
    if (sh[0] == 0 || sh[1] == 0) return SL_OK;
    uint8_t *jpg = NULL;
    size_t len = 0;
    sl_status st = sl__jpegenc_encode(in->data[i], (int)sh[1], (int)sh[0], (int)sh[2], s->q[i],
                                      &jpg, &len, err);
    if (st == SL_OK) st = decode(jpg, len, io->out[0]->data[i], sh[0], sh[1], (int)sh[2], err);
    free(jpg);
    if (st != SL_OK)
        return sl__op_fail(err, st, io, i, "jpeg_compression_distortion", "%s", err->msg);
    return SL_OK;
}

const sl__op_def sl__jpeg_compression_distortion_op = {
    .name = "jpeg_compression_distortion",
    .doc = "Gives images the artefacts of JPEG compression at a quality (encode, then decode).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = jd_args,
    .devices = SL_OPDEV_CPU,
    .flags = SL_OPF_SEQUENCE,
    .create = jd_create,
    .setup = jd_setup,
    .run_cpu = jd_run_cpu,
    .destroy = jd_destroy,
};
