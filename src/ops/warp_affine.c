/* SPDX-License-Identifier: Apache-2.0 */
/* warp_affine and rotate: DALI's fn.warp_affine (a 2x3 matrix per sample, by default mapping
 * destination points to source points: inverse_map=True) and fn.rotate (an angle in degrees per
 * sample, counter-clockwise with the top-left corner at (0, 0), about the image's centre) on HWC
 * images of any channel count. The output is `size` (height, width), else for warp_affine the
 * input's size and for rotate the rotated image's bounding box rounded up to whole pixels
 * (keep_size=True keeps the input's). Outside the source a sample is fill_value, or without one
 * the nearest border pixel. The output has the input's type, or `dtype` (values rounded and
 * clamped to it, as DALI's). interp_type INTERP_LINEAR (default) or INTERP_NN. Each element goes
 * through ops/warp_affine.h, shared with the CUDA run, so the two give the same bits. An angle that
 * is a whole multiple of 90 degrees uses exact sines and cosines, so such turns move pixels
 * exactly. warp_affine's matrix may also come as a second input (one 2x3 or 6-value sample per
 * image, on the CPU), as DALI allows. Both take sequences (FHWC) frame by frame, and the matrix
 * or angle per frame (fn.per_frame, or a matrix input of layout F**, what transforms.* make from
 * per-frame arguments): an HWC image with a per-frame matrix becomes a sequence, one frame per
 * matrix (operator/sequence.h). */
#include "operator/argin.h"
#include "operator/dtype_conv.h"
#include "operator/gpu_args.h"
#include "operator/op.h"
#include "ops/warp_affine.h"

#include "core/alloc.h"
#include "core/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef SLUICE_HAVE_CUDA
#include "ops/warp_affine.h"
#endif

// clang-format off
#define WARP_COMMON_ARGS                                                                           \
    {"size", SL_ARG_FLOATS, "None", "output (height, width)", SL_ARGF_PER_SAMPLE, NULL},           \
    {"fill_value", SL_ARG_FLOAT, "None",                                                           \
     "the value outside the source (default: the nearest border pixel)", 0, NULL},                 \
    {"interp_type", SL_ARG_ENUM, "types.INTERP_LINEAR", "filter", 0, "INTERP_NN|INTERP_LINEAR"},   \
    {"dtype", SL_ARG_DTYPE, "None", "output type (default: the input's)", 0, NULL}
// clang-format on

static const sl__arg_schema wa_args[] = {
    {"matrix", SL_ARG_FLOATS, "None",
     "the 2x3 affine map, row-major (6 values); or give it as the op's second input",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    {"inverse_map", SL_ARG_BOOL, "True",
     "matrix maps destination points to source points (False: source to destination)", 0, NULL},
    WARP_COMMON_ARGS,
    {NULL, 0, NULL, NULL, 0, NULL},
};

static const sl__arg_schema rot_args[] = {
    {"angle", SL_ARG_FLOAT, NULL, "degrees, counter-clockwise",
     SL_ARGF_REQUIRED | SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    {"keep_size", SL_ARG_BOOL, "False", "keep the input's size instead of the bounding box", 0,
     NULL},
    WARP_COMMON_ARGS,
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct wa_state {
    const char *name;
    bool rotate, inverse, keep, has_size, has_fill, nn, has_dtype;
    sl_dtype dtype;
    double size[2], fill, matrix[6], angle;
    int node;        /* the per-sample matrix or angle, or -1 */
    int size_node;   /* the per-sample size, or -1 */
    bool has_matrix; /* warp_affine: matrix given as an argument (else the second input) */
    sl__warp *t;
    struct rot_canvas { /* rotate's per-sample canvas before its sequence's rule */
        double sn, cs;
        int64_t parity[2]; /* the height's and width's wanted parity */
    } * rc;
    int cap;
    sl__gpu_args gpu;
} wa_state;

static void wa_destroy(void *state) {
    wa_state *s = state;
    if (s) {
        sl__gpu_args_free(&s->gpu);
        free(s->t);
        free(s->rc);
    }
    free(s);
}

static sl_status create_as(const sl__args *a, bool rotate, void **out, sl_err *err) {
    wa_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->rotate = rotate;
    s->name = rotate ? "rotate" : "warp_affine";
    sl_status st = SL_OK;
    const char *key = rotate ? "angle" : "matrix";
    s->node = sl__args_node(a, key);
    if (rotate) {
        s->keep = sl__args_bool(a, "keep_size");
        if (s->node < 0) s->angle = sl__args_float(a, "angle");
    } else {
        s->inverse = sl__args_bool(a, "inverse_map");
        const double *v;
        s->has_matrix = s->node >= 0 || sl__args_get(a, "matrix")->kind != SL_VAL_NONE;
        if (s->node < 0 && s->has_matrix && sl__args_floats(a, "matrix", &v) != 6)
            st = sl_err_set(err, SL_EINVAL, "%s: matrix wants 6 values (2x3, row-major)", s->name);
        else if (s->node < 0 && s->has_matrix)
            memcpy(s->matrix, v, sizeof s->matrix);
    }
    s->size_node = sl__args_node(a, "size");
    s->has_size = s->size_node >= 0;
    if (st == SL_OK && s->size_node < 0 && sl__args_get(a, "size")->kind != SL_VAL_NONE) {
        const double *v;
        if (sl__args_floats(a, "size", &v) != 2 || !(v[0] >= 1 && v[0] <= 1e7) ||
            !(v[1] >= 1 && v[1] <= 1e7))
            st = sl_err_set(err, SL_EINVAL, "%s: size wants (height, width), each from 1 to 1e7",
                            s->name);
        else
            s->has_size = true, s->size[0] = v[0], s->size[1] = v[1];
    }
    s->has_fill = sl__args_get(a, "fill_value")->kind != SL_VAL_NONE;
    if (s->has_fill) s->fill = sl__args_float(a, "fill_value");
    s->nn = !strcmp(sl__args_str(a, "interp_type"), "INTERP_NN");
    s->has_dtype = sl__args_get(a, "dtype")->kind != SL_VAL_NONE;
    if (s->has_dtype) s->dtype = sl__args_dtype(a, "dtype");
    if (st != SL_OK) {
        wa_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

static sl_status wa_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    return create_as(a, false, out, err);
}

static sl_status rot_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    return create_as(a, true, out, err);
}

/* sine and cosine of deg degrees, exact at whole multiples of 90 */
static void sincos_deg(double deg, double *sn, double *cs) {
    double q = deg / 90;
    if (q == floor(q) && fabs(q) < 1e15) {
        int k = (int)fmod(fmod(q, 4) + 4, 4);
        static const double s4[4] = {0, 1, 0, -1}, c4[4] = {1, 0, -1, 0};
        *sn = s4[k], *cs = c4[k];
        return;
    }
    double r = deg * 3.14159265358979323846 / 180;
    *sn = sin(r), *cs = cos(r);
}

/* sample i's map and sizes */
static sl_status plan(wa_state *s, const sl__op_io *io, int i, int64_t H, int64_t W, int64_t C,
                      sl__warp *t, sl_err *err) {
    memset(t, 0, sizeof *t);
    t->h = H, t->w = W, t->c = C, t->nn = s->nn, t->fill = s->has_fill, t->fill_value = s->fill;
    double size[2] = {s->size[0], s->size[1]};
    if (s->size_node >= 0 &&
        (sl__argin_values(io, s->size_node, i, size, 2) != 2 || !(size[0] >= 1 && size[0] <= 1e7) ||
         !(size[1] >= 1 && size[1] <= 1e7)))
        return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                           "size must be (height, width) per sample, each from 1 to 1e7");
    t->oh = s->has_size ? llround(size[0]) : H;
    t->ow = s->has_size ? llround(size[1]) : W;
    if (s->rotate) {
        double deg = s->angle;
        if (s->node >= 0 && sl__argin_values(io, s->node, i, &deg, 1) != 1)
            return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                               "angle must be one value per sample");
        struct rot_canvas *rc = &s->rc[i];
        sincos_deg(deg, &rc->sn, &rc->cs);
        if (!s->has_size && !s->keep) { /* the rotated image's bounding box (DALI's rule) */
            /* DALI's angle is a float in radians; its box trims 0.01 before rounding up */
            double r = (double)((float)deg * (float)(3.14159265358979323846 / 180));
            double ac = fabs(cos(r)), as = fabs(sin(r));
            t->ow = (int64_t)ceil(ac * (double)W + as * (double)H - 1e-2);
            t->oh = (int64_t)ceil(ac * (double)H + as * (double)W - 1e-2);
            if (t->ow < 1) t->ow = 1;
            if (t->oh < 1) t->oh = 1;
            /* the parity of the side it mostly comes from (less blur near the centre) */
            rc->parity[0] = (as <= ac ? H : W) % 2;
            rc->parity[1] = (as <= ac ? W : H) % 2;
        }
        return SL_OK;
    }
    double m[6];
    memcpy(m, s->matrix, sizeof m);
    if (s->node >= 0 && sl__argin_values(io, s->node, i, m, 6) != 6)
        return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                           "matrix must be 6 values per sample (2x3, row-major)");
    if (!s->has_matrix) { /* the second input */
        const sl_tlist *l = io->in[1];
        if (sl_tlist_sample_nbytes(l, i) != 6 * sl_dtype_size(l->dtype))
            return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                               "the matrix input must be 6 values per sample (2x3, row-major)");
        for (int k = 0; k < 6; k++) m[k] = sl__dtype_conv_load(l->data[i], l->dtype, k);
    }
    if (!s->inverse) { /* invert source -> destination */
        double det = m[0] * m[4] - m[1] * m[3];
        if (!(fabs(det) > 0) || !isfinite(det))
            return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                               "matrix is not invertible (determinant %g)", det);
        double a = m[4] / det, b = -m[1] / det, c = -m[3] / det, d = m[0] / det;
        t->m[0] = a, t->m[1] = b, t->m[2] = -(a * m[2] + b * m[5]);
        t->m[3] = c, t->m[4] = d, t->m[5] = -(c * m[2] + d * m[5]);
    } else {
        memcpy(t->m, m, sizeof m);
    }
    return SL_OK;
}

/* rotate's map once the canvas is known: source = R(-angle) (destination - its centre) + the
 * source's centre; y points down */
static void rotate_map(sl__warp *t, const struct rot_canvas *rc) {
    double ox = (double)t->ow / 2, oy = (double)t->oh / 2, sn = rc->sn, cs = rc->cs;
    t->m[0] = cs, t->m[1] = -sn, t->m[2] = (double)t->w / 2 - cs * ox + sn * oy;
    t->m[3] = sn, t->m[4] = cs, t->m[5] = (double)t->h / 2 - sn * ox - cs * oy;
}

/* DALI's canvas for rotated samples [first, first + n) that make one sequence (or one image):
 * each side the largest of theirs, then made even or odd as most of them want */
static void rotate_canvas(wa_state *s, int first, int64_t n) {
    if (n <= 0) return;
    int64_t side[2] = {0, 0}, odd[2] = {0, 0};
    for (int64_t f = first; f < first + n; f++) {
        int64_t v[2] = {s->t[f].oh, s->t[f].ow};
        for (int d = 0; d < 2; d++) {
            if (v[d] > side[d]) side[d] = v[d];
            odd[d] += s->rc[f].parity[d];
        }
    }
    for (int d = 0; d < 2; d++) side[d] += (side[d] % 2) ^ (2 * odd[d] > n);
    for (int64_t f = first; f < first + n; f++) s->t[f].oh = side[0], s->t[f].ow = side[1];
}

static sl_status wa_setup(void *state, sl__op_io *io, sl_err *err) {
    wa_state *s = state;
    const sl_tlist *in = io->in[0];
    if (in->ndim != 3 || (in->layout[0] && strcmp(in->layout, "HWC")))
        return sl_err_set(err, SL_EINVAL, "%s: input must be HWC", s->name);
    if (!s->rotate && s->has_matrix == (io->num_inputs == 2))
        return sl_err_set(err, SL_EINVAL, "%s: give the matrix %s", s->name,
                          s->has_matrix ? "as an argument or as the second input, not both"
                                        : "(the matrix argument, or a second input)");
    if (!s->has_matrix && !s->rotate && io->in[1]->device.kind != SL_DEVICE_CPU)
        return sl_err_set(err, SL_EINVAL, "%s: the matrix input must be on the CPU", s->name);
    if (io->batch > s->cap) {
        sl__warp *t = realloc(s->t, (size_t)io->batch * sizeof *t);
        if (t) s->t = t;
        struct rot_canvas *rc = t ? realloc(s->rc, (size_t)io->batch * sizeof *rc) : NULL;
        if (!rc) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", s->name);
        s->rc = rc;
        s->cap = io->batch;
    }
    int64_t *shapes = sl__malloc((size_t)io->batch * 3 * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    for (int i = 0; i < io->batch; i++) {
        const int64_t *sh = sl_tlist_shape(in, i);
        sl_status st = sh[0] < 1 || sh[1] < 1
                           ? sl__op_fail(err, SL_EINVAL, io, i, s->name, "empty image")
                           : plan(s, io, i, sh[0], sh[1], sh[2], &s->t[i], err);
        if (st != SL_OK) {
            free(shapes);
            return st;
        }
    }
    if (s->rotate) {
        if (!s->has_size && !s->keep) {
            if (io->seq_frames) /* the frames of a sequence share one canvas */
                for (int k = 0, f = 0; k < io->num_sequences; f += (int)io->seq_frames[k++])
                    rotate_canvas(s, f, io->seq_frames[k]);
            else
                for (int i = 0; i < io->batch; i++) rotate_canvas(s, i, 1);
        }
        for (int i = 0; i < io->batch; i++) rotate_map(&s->t[i], &s->rc[i]);
    }
    for (int i = 0; i < io->batch; i++) {
        const int64_t *sh = sl_tlist_shape(in, i);
        shapes[3 * i] = s->t[i].oh, shapes[3 * i + 1] = s->t[i].ow, shapes[3 * i + 2] = sh[2];
    }
    sl_tlist *out = io->out[0];
    sl_status st =
        sl_tlist_reset(out, io->batch, s->has_dtype ? s->dtype : in->dtype, 3, io->device, err);
    if (st == SL_OK) st = sl_tlist_alloc(out, shapes, err);
    if (st == SL_OK) memcpy(out->layout, in->layout, sizeof out->layout);
    free(shapes);
    return st;
}

static sl_status wa_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)worker, (void)err;
    wa_state *s = state;
    const sl__warp *t = &s->t[i];
    const sl_tlist *in = io->in[0];
    int64_t n = t->oh * t->ow * t->c;
    for (int64_t e = 0; e < n; e++)
        sl__warp_elem(t, in->data[i], in->dtype, io->out[0]->data[i], io->out[0]->dtype, e);
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
static sl_status wa_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    wa_state *s = state;
    const sl_tlist *in = io->in[0];
    sl__cuda_warp_desc *d =
        sl__gpu_args_host(&s->gpu, io->device.id, (size_t)io->batch * sizeof *d, err);
    if (!d) return err->status;
    int64_t most = 0;
    for (int i = 0; i < io->batch; i++) {
        d[i].in = in->data[i];
        d[i].out = io->out[0]->data[i];
        d[i].t = s->t[i];
        int64_t n = s->t[i].oh * s->t[i].ow * s->t[i].c;
        if (n > most) most = n;
    }
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, (size_t)io->batch * sizeof *d, io->stream, &dd, err));
    return sl__cuda_warp(dd, io->batch, most, in->dtype, io->out[0]->dtype, io->stream, err);
}
#define WA_DEVICES .devices = SL_OPDEV_CPU | SL_OPDEV_GPU, .run_gpu = wa_run_gpu,
#else
#define WA_DEVICES .devices = SL_OPDEV_CPU,
#endif

const sl__op_def sl__warp_affine_op = {
    .name = "warp_affine",
    .doc = "Resamples HWC images through a 2x3 affine map per sample (DALI's fn.warp_affine); the "
           "map is the matrix argument or the op's second input.",
    .min_inputs = 1,
    .max_inputs = 2,
    .args = wa_args,
    .flags = SL_OPF_SEQUENCE,
    WA_DEVICES.create = wa_create,
    .setup = wa_setup,
    .run_cpu = wa_run_cpu,
    .destroy = wa_destroy,
};

const sl__op_def sl__rotate_op = {
    .name = "rotate",
    .doc = "Rotates HWC images by an angle per sample about their centre (DALI's fn.rotate).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = rot_args,
    .flags = SL_OPF_SEQUENCE,
    WA_DEVICES.create = rot_create,
    .setup = wa_setup,
    .run_cpu = wa_run_cpu,
    .destroy = wa_destroy,
};
