/* SPDX-License-Identifier: Apache-2.0 */
/* bbox_paste and coord_flip: two box/point transforms of DALI's, per sample, in single precision.
 * bbox_paste moves relative boxes (N, 4) (or (4N,)) to where they lie once the image is pasted on
 * a canvas ratio times larger (fn.paste) at (paste_x, paste_y): corners become x / ratio + ofs,
 * with ofs = paste * (ratio - 1) / ratio lowered, as DALI does, until a box spanning [0, 1] stays
 * inside; sizes ([x, y, w, h]) become w / ratio. coord_flip mirrors points (N, D), D = 1..3,
 * about a centre per axis: x -> 2 * center - x on the axes flipped. */
#include "operator/argin.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* one float per sample of arg name: the scalar, or the per-sample input's value */
typedef struct per_sample {
    double v;
    int node;
} per_sample;

static void ps_init(per_sample *p, const sl__args *a, const char *name) {
    p->v = sl__args_float(a, name);
    p->node = sl__args_node(a, name);
}

static double ps_get(const per_sample *p, const sl__op_io *io, int i) {
    double v = p->v;
    if (p->node >= 0) sl__argin_values(io, p->node, i, &v, 1);
    return v;
}

/* out[0]: float, the input's shapes and layout; the input must be float */
static sl_status same_shape_float(const char *op, sl__op_io *io, sl_err *err) {
    const sl_tlist *in = io->in[0];
    if (in->dtype != SL_DTYPE_F32)
        return sl_err_set(err, SL_EINVAL, "%s: input must be float (got %s)", op,
                          sl_dtype_name(in->dtype));
    SL_TRY(sl_tlist_reset(io->out[0], io->batch, SL_DTYPE_F32, in->ndim, io->device, err));
    SL_TRY(sl_tlist_alloc(io->out[0], in->shapes, err));
    memcpy(io->out[0]->layout, in->layout, sizeof io->out[0]->layout);
    return SL_OK;
}

/* ---- bbox_paste ------------------------------------------------------------------------------ */

static const sl__arg_schema paste_args[] = {
    {"ratio", SL_ARG_FLOAT, NULL, "canvas size over image size (>= 1)",
     SL_ARGF_REQUIRED | SL_ARGF_PER_SAMPLE, NULL},
    {"ltrb", SL_ARG_BOOL, "False", "boxes are [l, t, r, b] (else [x, y, w, h])", 0, NULL},
    {"paste_x", SL_ARG_FLOAT, "0.5", "where the image goes: 0 left .. 1 right", SL_ARGF_PER_SAMPLE,
     NULL},
    {"paste_y", SL_ARG_FLOAT, "0.5", "where the image goes: 0 top .. 1 bottom", SL_ARGF_PER_SAMPLE,
     NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct paste_state {
    per_sample ratio, px, py;
    bool ltrb;
    float *p; /* per sample: scale, ofsx, ofsy */
    int cap;
} paste_state;

static void paste_destroy(void *state) {
    paste_state *s = state;
    if (s) free(s->p);
    free(s);
}

static sl_status paste_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    paste_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    ps_init(&s->ratio, a, "ratio");
    ps_init(&s->px, a, "paste_x");
    ps_init(&s->py, a, "paste_y");
    s->ltrb = sl__args_bool(a, "ltrb");
    *out = s;
    return SL_OK;
}

/* the offset for a paste position, lowered until scale + ofs <= 1 (DALI's nextafter walk) */
static float paste_offset(float pos, float ratio, float scale) {
    float ofs = pos * ((ratio - 1) / ratio);
    if (scale + ofs > 1) {
        ofs = 1 - scale;
        while (scale + ofs > 1) ofs = nextafterf(ofs, -1.0f);
    }
    return ofs;
}

static sl_status paste_setup(void *state, sl__op_io *io, sl_err *err) {
    paste_state *s = state;
    const sl_tlist *in = io->in[0];
    for (int i = 0; i < io->batch; i++)
        if (sl_tlist_sample_nbytes(in, i) % (4 * sizeof(float)) != 0)
            return sl_err_set(err, SL_EINVAL,
                              "bbox_paste: sample %d: the boxes' size is not a multiple of 4", i);
    if (io->batch > s->cap) {
        float *p = realloc(s->p, (size_t)io->batch * 3 * sizeof *p);
        if (!p) return sl_err_set(err, SL_ENOMEM, "bbox_paste: out of memory");
        s->p = p;
        s->cap = io->batch;
    }
    for (int i = 0; i < io->batch; i++) {
        float ratio = (float)ps_get(&s->ratio, io, i);
        float px = (float)ps_get(&s->px, io, i), py = (float)ps_get(&s->py, io, i);
        if (!(ratio >= 1) || !isfinite(ratio))
            return sl_err_set(err, SL_EINVAL, "bbox_paste: sample %d: ratio must be >= 1 (got %g)",
                              i, (double)ratio);
        if (!isfinite(px) || !isfinite(py))
            return sl_err_set(err, SL_EINVAL,
                              "bbox_paste: sample %d: paste_x, paste_y must be "
                              "finite",
                              i);
        float scale = 1 / ratio;
        s->p[3 * i] = scale;
        s->p[3 * i + 1] = paste_offset(px, ratio, scale);
        s->p[3 * i + 2] = paste_offset(py, ratio, scale);
    }
    return same_shape_float("bbox_paste", io, err);
}

static sl_status paste_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    paste_state *s = state;
    (void)worker;
    (void)err;
    const float *in = io->in[0]->data[i];
    float *o = io->out[0]->data[i];
    int64_t n = (int64_t)(sl_tlist_sample_nbytes(io->in[0], i) / sizeof(float));
    float scale = s->p[3 * i], ox = s->p[3 * i + 1], oy = s->p[3 * i + 2];
    for (int64_t j = 0; j + 4 <= n; j += 4) {
        o[j] = in[j] * scale + ox;
        o[j + 1] = in[j + 1] * scale + oy;
        o[j + 2] = s->ltrb ? in[j + 2] * scale + ox : in[j + 2] * scale;
        o[j + 3] = s->ltrb ? in[j + 3] * scale + oy : in[j + 3] * scale;
    }
    return SL_OK;
}

const sl__op_def sl__bbox_paste_op = {
    .name = "bbox_paste",
    .doc = "Moves relative boxes to where they lie after the image is pasted on a canvas ratio "
           "times larger at (paste_x, paste_y) (per sample).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = paste_args,
    .devices = SL_OPDEV_CPU,
    .create = paste_create,
    .setup = paste_setup,
    .run_cpu = paste_run_cpu,
    .destroy = paste_destroy,
};

/* ---- coord_flip ------------------------------------------------------------------------------ */

static const sl__arg_schema cflip_args[] = {
    {"layout", SL_ARG_STR, "\"\"",
     "the axes' order: \"x\", \"xy\", \"yx\", \"xyz\", ... (default "
     "by D: x, xy, xyz)",
     0, NULL},
    {"flip_x", SL_ARG_INT, "1", "nonzero: mirror along x", SL_ARGF_PER_SAMPLE, NULL},
    {"flip_y", SL_ARG_INT, "0", "nonzero: mirror along y", SL_ARGF_PER_SAMPLE, NULL},
    {"flip_z", SL_ARG_INT, "0", "nonzero: mirror along z", SL_ARGF_PER_SAMPLE, NULL},
    {"center_x", SL_ARG_FLOAT, "0.5", "mirror centre along x", SL_ARGF_PER_SAMPLE, NULL},
    {"center_y", SL_ARG_FLOAT, "0.5", "mirror centre along y", SL_ARGF_PER_SAMPLE, NULL},
    {"center_z", SL_ARG_FLOAT, "0.5", "mirror centre along z", SL_ARGF_PER_SAMPLE, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct cflip_state {
    char layout[4];
    per_sample flip[3], center[3];
    float *m; /* per sample, per column: 2 * centre, or NAN where not flipped */
    int cap;
} cflip_state;

static void cflip_destroy(void *state) {
    cflip_state *s = state;
    if (s) free(s->m);
    free(s);
}

static sl_status cflip_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    const char *layout = sl__args_str(a, "layout");
    size_t n = layout ? strlen(layout) : 0;
    bool ok = n <= 3;
    for (size_t i = 0; ok && i < n; i++)
        ok = (layout[i] == 'x' || layout[i] == 'y' || layout[i] == 'z') &&
             !memchr(layout, layout[i], i);
    if (!ok)
        return sl_err_set(err, SL_EINVAL,
                          "coord_flip: layout \"%s\" is not a set of the axes x, y, z", layout);
    cflip_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    if (n) memcpy(s->layout, layout, n);
    static const char *const fl[3] = {"flip_x", "flip_y", "flip_z"};
    static const char *const ce[3] = {"center_x", "center_y", "center_z"};
    for (int d = 0; d < 3; d++) {
        s->flip[d].v = (double)sl__args_int(a, fl[d]);
        s->flip[d].node = sl__args_node(a, fl[d]);
        ps_init(&s->center[d], a, ce[d]);
    }
    *out = s;
    return SL_OK;
}

static sl_status cflip_setup(void *state, sl__op_io *io, sl_err *err) {
    cflip_state *s = state;
    const sl_tlist *in = io->in[0];
    if (in->ndim != 2)
        return sl_err_set(err, SL_EINVAL, "coord_flip: input must be (N, D) points (got %d dims)",
                          in->ndim);
    int64_t D = io->batch ? sl_tlist_shape(in, 0)[1] : 1;
    for (int i = 0; i < io->batch; i++)
        if (sl_tlist_shape(in, i)[1] != D || D < 1 || D > 3)
            return sl_err_set(err, SL_EINVAL,
                              "coord_flip: sample %d: points of %lld coordinates (1 to 3, the "
                              "same in a batch)",
                              i, (long long)sl_tlist_shape(in, i)[1]);
    if (s->layout[0] && (int64_t)strlen(s->layout) != D)
        return sl_err_set(err, SL_EINVAL,
                          "coord_flip: layout \"%s\" for points of %lld coordinates", s->layout,
                          (long long)D);
    if (io->batch > s->cap) {
        float *m = realloc(s->m, (size_t)io->batch * 3 * sizeof *m);
        if (!m) return sl_err_set(err, SL_ENOMEM, "coord_flip: out of memory");
        s->m = m;
        s->cap = io->batch;
    }
    for (int i = 0; i < io->batch; i++)
        for (int64_t c = 0; c < D; c++) {
            char ax = s->layout[0] ? s->layout[c] : "xyz"[c];
            int d = ax - 'x';
            bool f = ps_get(&s->flip[d], io, i) != 0;
            s->m[3 * i + c] = f ? 2.0f * (float)ps_get(&s->center[d], io, i) : NAN;
        }
    return same_shape_float("coord_flip", io, err);
}

static sl_status cflip_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    cflip_state *s = state;
    (void)worker;
    (void)err;
    const float *in = io->in[0]->data[i];
    float *o = io->out[0]->data[i];
    const int64_t *sh = sl_tlist_shape(io->in[0], i);
    for (int64_t k = 0; k < sh[0]; k++)
        for (int64_t c = 0; c < sh[1]; c++) {
            float m = s->m[3 * i + c], v = in[k * sh[1] + c];
            o[k * sh[1] + c] = isnan(m) ? v : m - v;
        }
    return SL_OK;
}

const sl__op_def sl__coord_flip_op = {
    .name = "coord_flip",
    .doc = "Mirrors points (N, D), D = 1..3, about a centre on the axes flipped (per sample).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = cflip_args,
    .devices = SL_OPDEV_CPU,
    .create = cflip_create,
    .setup = cflip_setup,
    .run_cpu = cflip_run_cpu,
    .destroy = cflip_destroy,
};
