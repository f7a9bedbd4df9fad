/* SPDX-License-Identifier: Apache-2.0 */
/* warp_affine and rotate: DALI's fn.warp_affine (a 2x3 matrix per sample, by default mapping
 * destination points to source points: inverse_map=True) and fn.rotate (an angle in degrees per
 * sample, counter-clockwise with the top-left corner at (0, 0), about the image's centre) on HWC
 * images of any channel count. The output is `size` (height, width), else for warp_affine the
 * input's size and for rotate the rotated image's bounding box rounded up to whole pixels
 * (keep_size=True keeps the input's). DHWC volumes go the same way in three dims: a 3x4 matrix, or
 * rotate's angle about `axis` (x, y, z), and a (depth, height, width) size. Outside the source
 * a sample is fill_value, or without one the nearest border pixel. The output has the input's type,
 * or `dtype` (values rounded and clamped to it, as DALI's). interp_type INTERP_LINEAR (default) or
 * INTERP_NN. Each element goes through ops/warp_affine.h, shared with the CUDA run, so the two give
 * the same bits. An angle that is a whole multiple of 90 degrees uses exact sines and cosines, so
 * such turns move pixels exactly. warp_affine's matrix may also come as a second input (one 2x3 or
 * 6-value sample per image, on the CPU), as DALI allows. Both take sequences (FHWC) frame by frame,
 * and the matrix or angle per frame (fn.per_frame, or a matrix input of layout F**, what
 * transforms.* make from per-frame arguments): an HWC image with a per-frame matrix becomes a
 * sequence, one frame per matrix (operator/sequence.h). */
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
    {"size", SL_ARG_FLOATS, "None", "output (height, width), or (depth, height, width) of a volume",  \
     SL_ARGF_PER_SAMPLE, NULL},                                                                    \
    {"fill_value", SL_ARG_FLOAT, "None",                                                           \
     "the value outside the source (default: the nearest border pixel)", 0, NULL},                 \
    {"interp_type", SL_ARG_ENUM, "types.INTERP_LINEAR", "filter", 0, "INTERP_NN|INTERP_LINEAR"},   \
    {"dtype", SL_ARG_DTYPE, "None", "output type (default: the input's)", 0, NULL}
// clang-format on

static const sl__arg_schema wa_args[] = {
    {"matrix", SL_ARG_FLOATS, "None",
     "the 2x3 affine map, row-major (6 values; 3x4, 12 values, for volumes); or give it as the "
     "op's second input",
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
    {"axis", SL_ARG_FLOATS, "None", "volumes: the rotation's axis (x, y, z)",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    WARP_COMMON_ARGS,
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct wa_state {
    const char *name;
    bool rotate, inverse, keep, has_size, has_fill, nn, has_dtype;
    sl_dtype dtype;
    double size[3], fill, matrix[12], angle, axis[3];
    int nsize, nmatrix, naxis; /* values given (size: 2 or 3; matrix: 6 or 12; axis: 3) */
    int node;                  /* the per-sample matrix or angle, or -1 */
    int axis_node;             /* rotate's per-sample axis, or -1 */
    int size_node;             /* the per-sample size, or -1 */
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
    s->axis_node = -1;
    if (rotate) {
        s->keep = sl__args_bool(a, "keep_size");
        if (s->node < 0) s->angle = sl__args_float(a, "angle");
        s->axis_node = sl__args_node(a, "axis");
        if (s->axis_node < 0 && sl__args_get(a, "axis")->kind != SL_VAL_NONE) {
            const double *v;
            s->naxis = sl__args_floats(a, "axis", &v);
            if (s->naxis != 3)
                st = sl_err_set(err, SL_EINVAL, "%s: axis wants 3 values (x, y, z)", s->name);
            else
                memcpy(s->axis, v, sizeof s->axis);
        }
    } else {
        s->inverse = sl__args_bool(a, "inverse_map");
        const double *v;
        s->has_matrix = s->node >= 0 || sl__args_get(a, "matrix")->kind != SL_VAL_NONE;
        if (s->node < 0 && s->has_matrix) {
            s->nmatrix = sl__args_floats(a, "matrix", &v);
            if (s->nmatrix != 6 && s->nmatrix != 12)
                st = sl_err_set(err, SL_EINVAL,
                                "%s: matrix wants 6 values (2x3, row-major), or 12 (3x4) for "
                                "volumes",
                                s->name);
            else
                memcpy(s->matrix, v, (size_t)s->nmatrix * sizeof *v);
        }
    }
    s->size_node = sl__args_node(a, "size");
    s->has_size = s->size_node >= 0;
    if (st == SL_OK && s->size_node < 0 && sl__args_get(a, "size")->kind != SL_VAL_NONE) {
        const double *v;
        int n = sl__args_floats(a, "size", &v);
        bool ok = n == 2 || n == 3;
        for (int k = 0; k < n && ok; k++) ok = v[k] >= 1 && v[k] <= 1e7;
        if (!ok)
            st = sl_err_set(err, SL_EINVAL,
                            "%s: size wants (height, width), or (depth, height, width) for "
                            "volumes, each from 1 to 1e7",
                            s->name);
        else
            s->has_size = true, s->nsize = n, memcpy(s->size, v, (size_t)n * sizeof *v);
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
    t->dims = 2, t->d = t->od = 1;
    t->h = H, t->w = W, t->c = C, t->nn = s->nn, t->fill = s->has_fill, t->fill_value = s->fill;
    if ((s->has_size && s->size_node < 0 && s->nsize != 2) || (s->nmatrix && s->nmatrix != 6) ||
        s->naxis || s->axis_node >= 0)
        return sl_err_set(err, SL_EINVAL,
                          "%s: an HWC image takes size (height, width) and a 2x3 matrix (axis, "
                          "3 sizes and 3x4 matrices are for DHWC volumes)",
                          s->name);
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
        if (!isfinite((float)deg)) /* (DALI's is a float: 1e300 is inf there, NaN its box) */
            return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                               "angle %g is not a finite float (degrees)", deg);
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

/* DALI's rotation (source to destination) about axis (x, y, z, normalised here) by deg degrees:
 * r row-major 3x3 */
static void rotation3(const double *axis, double deg, double *r) {
    double n = sqrt(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2]);
    double u = axis[0] / n, v = axis[1] / n, w = axis[2] / n, sn, cs;
    sincos_deg(deg, &sn, &cs);
    double k = 1 - cs;
    double m[9] = {
        u * u + (v * v + w * w) * cs, u * v * k - w * sn,           u * w * k + v * sn,
        u * v * k + w * sn,           v * v + (u * u + w * w) * cs, v * w * k - u * sn,
        u * w * k - v * sn,           v * w * k + u * sn,           w * w + (u * u + v * v) * cs};
    memcpy(r, m, sizeof m);
}

/* inverts the 3x4 affine map m (source to destination) in place; false if it cannot be */
static bool invert3(double *m) {
    double a = m[0], b = m[1], c = m[2], d = m[4], e = m[5], f = m[6], g = m[8], h = m[9],
           k = m[10];
    double det = a * (e * k - f * h) - b * (d * k - f * g) + c * (d * h - e * g);
    if (!(fabs(det) > 0) || !isfinite(det)) return false;
    double r[9] = {(e * k - f * h) / det, (c * h - b * k) / det, (b * f - c * e) / det,
                   (f * g - d * k) / det, (a * k - c * g) / det, (c * d - a * f) / det,
                   (d * h - e * g) / det, (b * g - a * h) / det, (a * e - b * d) / det};
    double tr[3] = {m[3], m[7], m[11]};
    for (int row = 0; row < 3; row++) {
        m[4 * row + 3] = 0;
        for (int j = 0; j < 3; j++) {
            m[4 * row + j] = r[3 * row + j];
            m[4 * row + 3] -= r[3 * row + j] * tr[j];
        }
    }
    return true;
}

/* sample i's map and sizes for a volume (D, H, W, C) */
static sl_status plan3(wa_state *s, const sl__op_io *io, int i, const int64_t *sh, sl__warp *t,
                       sl_err *err) {
    memset(t, 0, sizeof *t);
    t->dims = 3, t->d = sh[0], t->h = sh[1], t->w = sh[2], t->c = sh[3];
    t->nn = s->nn, t->fill = s->has_fill, t->fill_value = s->fill;
    double size[3];
    memcpy(size, s->size, sizeof size);
    int ns = s->nsize;
    if (s->size_node >= 0) ns = sl__argin_values(io, s->size_node, i, size, 3);
    bool ok = !s->has_size || ns == 3;
    for (int k = 0; k < 3 && s->has_size && ok; k++) ok = size[k] >= 1 && size[k] <= 1e7;
    if (!ok)
        return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                           "size must be (depth, height, width) for a volume, each from 1 to 1e7");
    t->od = s->has_size ? llround(size[0]) : t->d;
    t->oh = s->has_size ? llround(size[1]) : t->h;
    t->ow = s->has_size ? llround(size[2]) : t->w;
    double in[3] = {(double)t->w, (double)t->h, (double)t->d};
    if (s->rotate) {
        double deg = s->angle, axis[3];
        memcpy(axis, s->axis, sizeof axis);
        if (s->node >= 0 && sl__argin_values(io, s->node, i, &deg, 1) != 1)
            return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                               "angle must be one value per sample");
        if ((s->axis_node >= 0 && sl__argin_values(io, s->axis_node, i, axis, 3) != 3) ||
            (s->axis_node < 0 && s->naxis != 3))
            return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                               "a volume's rotation needs axis, 3 values (x, y, z)");
        if (!(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2] > 0))
            return sl__op_fail(err, SL_EINVAL, io, i, s->name, "axis (0, 0, 0) has no direction");
        double r[9];
        rotation3(axis, deg, r);
        if (!s->has_size && !s->keep) { /* the rotated volume's box, parity as its main source */
            int64_t o[3];
            for (int k = 0; k < 3; k++) {
                double ext = 0, most = -1;
                int dom = 0;
                for (int j = 0; j < 3; j++) {
                    ext += fabs(r[3 * k + j]) * in[j];
                    if (fabs(r[3 * k + j]) > most) most = fabs(r[3 * k + j]), dom = j;
                }
                o[k] = (int64_t)ceil(ext - 1e-2);
                if (o[k] < 1) o[k] = 1;
                o[k] += (o[k] % 2) ^ ((int64_t)in[dom] % 2);
            }
            t->ow = o[0], t->oh = o[1], t->od = o[2];
        }
        /* source = R^T (destination - its centre) + the source's centre (x, y, z) */
        double out[3] = {(double)t->ow, (double)t->oh, (double)t->od};
        for (int k = 0; k < 3; k++) {
            t->m[4 * k + 3] = in[k] / 2;
            for (int j = 0; j < 3; j++) {
                t->m[4 * k + j] = r[3 * j + k];
                t->m[4 * k + 3] -= r[3 * j + k] * out[j] / 2;
            }
        }
        return SL_OK;
    }
    double *m = t->m;
    if (s->node < 0 && s->has_matrix && s->nmatrix != 12)
        return sl_err_set(err, SL_EINVAL, "%s: a volume takes a 3x4 matrix (12 values)", s->name);
    memcpy(m, s->matrix, 12 * sizeof *m);
    if (s->node >= 0 && sl__argin_values(io, s->node, i, m, 12) != 12)
        return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                           "matrix must be 12 values per sample (3x4, row-major) for a volume");
    if (!s->has_matrix) { /* the second input */
        const sl_tlist *l = io->in[1];
        if (sl_tlist_sample_nbytes(l, i) != 12 * sl_dtype_size(l->dtype))
            return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                               "the matrix input must be 12 values per sample (3x4) for a volume");
        for (int k = 0; k < 12; k++) m[k] = sl__dtype_conv_load(l->data[i], l->dtype, k);
    }
    if (!s->inverse && !invert3(m))
        return sl__op_fail(err, SL_EINVAL, io, i, s->name, "matrix is not invertible");
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
    bool vol = in->ndim == 4;
    if ((in->ndim != 3 && !vol) || (in->layout[0] && strcmp(in->layout, vol ? "DHWC" : "HWC")))
        return sl_err_set(err, SL_EINVAL,
                          "%s: input must be HWC, or a DHWC volume (\"%s\", %d dims)", s->name,
                          in->layout, in->ndim);
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
    int nd = in->ndim;
    int64_t *shapes = sl__malloc((size_t)io->batch * (size_t)nd * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    for (int i = 0; i < io->batch; i++) {
        const int64_t *sh = sl_tlist_shape(in, i);
        sl_status st = sh[0] < 1 || sh[1] < 1 || (vol && sh[2] < 1)
                           ? sl__op_fail(err, SL_EINVAL, io, i, s->name, "empty image")
                       : vol ? plan3(s, io, i, sh, &s->t[i], err)
                             : plan(s, io, i, sh[0], sh[1], sh[2], &s->t[i], err);
        if (st != SL_OK) {
            free(shapes);
            return st;
        }
    }
    if (s->rotate && !vol) {
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
        int64_t *o = shapes + (size_t)i * (size_t)nd;
        if (vol) *o++ = s->t[i].od;
        o[0] = s->t[i].oh, o[1] = s->t[i].ow, o[2] = sh[nd - 1];
    }
    sl_tlist *out = io->out[0];
    sl_status st =
        sl_tlist_reset(out, io->batch, s->has_dtype ? s->dtype : in->dtype, nd, io->device, err);
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
    const void *src = in->data[i];
    void *dst = io->out[0]->data[i];
    sl_dtype it = in->dtype, ot = io->out[0]->dtype;
    if (t->dims == 3) {
        int64_t n = t->od * t->oh * t->ow * t->c;
        for (int64_t e = 0; e < n; e++) sl__warp_elem(t, src, it, dst, ot, e);
        return SL_OK;
    }
    /* 2D: the destination's pixels walked in order, no division per element, and the
       common type pairs with the types constant (the same rule as sl__warp_elem's) */
#define WALK(IT, OT)                                                                               \
    for (int64_t y = 0, e = 0; y < t->oh; y++)                                                     \
        for (int64_t x = 0; x < t->ow; x++, e += t->c)                                             \
            sl__warp_px2_at(t, src, IT, dst, OT, e, x, y, 0, t->c);
    if (it == SL_DTYPE_U8 && ot == SL_DTYPE_U8) {
        WALK(SL_DTYPE_U8, SL_DTYPE_U8)
    } else if (it == SL_DTYPE_F32 && ot == SL_DTYPE_F32) {
        WALK(SL_DTYPE_F32, SL_DTYPE_F32)
    } else {
        WALK(it, ot)
    }
#undef WALK
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
        int64_t n = s->t[i].od * s->t[i].oh * s->t[i].ow * s->t[i].c;
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
