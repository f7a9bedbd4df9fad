/* SPDX-License-Identifier: Apache-2.0 */
/* experimental.warp_perspective: DALI's fn.experimental.warp_perspective. Each image is resampled
 * through a 3x3 projective map per sample: destination point p (homogeneous) looks at source point
 * M p / (M p)[2], M mapping destination to source (inverse_map=True, the default; False gives the
 * source-to-destination map, inverted here). The matrix is the `matrix` argument (9 values,
 * row-major, or a per-sample op output) or the op's second input (one 3x3 float32 sample per
 * image), not both. pixel_origin "corner" (the default) puts (0, 0) at the top-left pixel's
 * corner, so pixel (x, y) stands at (x + 0.5, y + 0.5); "center" at its centre. Images are HWC or
 * CHW, sequences FHWC or FCHW (each frame with its sample's matrix); uint8, uint16, int16 or float;
 * the output has the input's type (integers rounded to nearest, ties to even, and saturated) and
 * layout, and is `size` (height, width; per sample allowed) or the input's size.
 * interp_type INTERP_NN, INTERP_LINEAR (default) or INTERP_CUBIC (a = -0.75, OpenCV's);
 * border_mode says what a source pixel outside the image is: "constant" (fill_value, one value or
 * one per channel; default 0), "replicate" (the nearest edge pixel), "reflect" (fedcba|abcdef),
 * "reflect_101" (fedcb|abcdef) or "wrap" (the image tiled). CPU only (a GPU pipeline refuses
 * it; a CPU pipeline runs its gpu form on the CPU, as every op). */
#include "operator/argin.h"
#include "operator/dtype_conv.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OP       "experimental.warp_perspective"
#define MAX_FILL 64

enum { B_CONSTANT, B_REPLICATE, B_REFLECT, B_REFLECT101, B_WRAP };
enum { I_NN, I_LINEAR, I_CUBIC };

static const sl__arg_schema wp_args[] = {
    {"matrix", SL_ARG_FLOATS, "None",
     "the 3x3 projective map, row-major (9 values; per sample allowed); or give it as the op's "
     "second input",
     SL_ARGF_PER_SAMPLE, NULL},
    {"size", SL_ARG_FLOATS, "None", "output (height, width) (default: the input's)",
     SL_ARGF_PER_SAMPLE, NULL},
    {"inverse_map", SL_ARG_BOOL, "True",
     "matrix maps destination points to source points (False: source to destination)", 0, NULL},
    {"border_mode", SL_ARG_STR, "\"constant\"",
     "outside the source: constant, replicate, reflect, reflect_101 or wrap", 0, NULL},
    {"fill_value", SL_ARG_FLOATS, "None",
     "border_mode constant: the value outside the source, one or one per channel (default 0)", 0,
     NULL},
    {"interp_type", SL_ARG_ENUM, "types.INTERP_LINEAR", "filter", 0,
     "INTERP_NN|INTERP_LINEAR|INTERP_CUBIC"},
    {"pixel_origin", SL_ARG_STR, "\"corner\"",
     "where (0, 0) is: the top-left pixel's corner, or its center", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct wp_plan {
    double m[9]; /* destination (x, y, 1) -> source, in pixel-centre coordinates */
    int64_t oh, ow;
} wp_plan;

typedef struct wp_state {
    const sl__args *a; /* matrix and size may be per sample: read in setup */
    bool has_matrix, inverse, center;
    int border, interp, nfill;
    double fill[MAX_FILL];
    wp_plan *plan;
    int cap;
} wp_state;

static void wp_destroy(void *state) {
    wp_state *s = state;
    if (s) free(s->plan);
    free(s);
}

static sl_status wp_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    wp_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    sl_status st = SL_OK;
    s->a = a;
    s->has_matrix =
        sl__args_node(a, "matrix") >= 0 || sl__args_get(a, "matrix")->kind != SL_VAL_NONE;
    if (s->has_matrix && sl__args_node(a, "matrix") < 0) {
        const double *v;
        if (sl__args_floats(a, "matrix", &v) != 9)
            st = sl_err_set(err, SL_EINVAL,
                            OP ": matrix wants 9 values (a 3x3 matrix, row-major), got %d",
                            sl__args_floats(a, "matrix", &v));
    }
    s->inverse = sl__args_bool(a, "inverse_map");
    const char *b = sl__args_str(a, "border_mode");
    static const char *const borders[] = {"constant", "replicate", "reflect", "reflect_101",
                                          "wrap"};
    s->border = -1;
    for (int k = 0; k < 5; k++)
        if (b && !strcmp(b, borders[k])) s->border = k;
    if (st == SL_OK && s->border < 0)
        st = sl_err_set(err, SL_EINVAL,
                        OP ": Unknown border mode: %s (constant, replicate, reflect, reflect_101 "
                           "or wrap)",
                        b ? b : "None");
    const char *it = sl__args_str(a, "interp_type");
    s->interp = !strcmp(it, "INTERP_NN") ? I_NN : !strcmp(it, "INTERP_CUBIC") ? I_CUBIC : I_LINEAR;
    const char *po = sl__args_str(a, "pixel_origin");
    s->center = po && !strcmp(po, "center");
    if (st == SL_OK && !(po && (s->center || !strcmp(po, "corner"))))
        st =
            sl_err_set(err, SL_EINVAL, OP ": pixel_origin %s (corner or center)", po ? po : "None");
    if (sl__args_get(a, "fill_value")->kind != SL_VAL_NONE) {
        const double *v;
        int n = sl__args_floats(a, "fill_value", &v);
        if (st == SL_OK && (n < 1 || n > MAX_FILL))
            st = sl_err_set(err, SL_EINVAL, OP ": fill_value wants 1 to %d values, got %d",
                            MAX_FILL, n);
        else if (st == SL_OK)
            s->nfill = n, memcpy(s->fill, v, (size_t)n * sizeof *v);
    }
    if (st != SL_OK) {
        wp_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

/* the layout's frame, channel, height and width dims (frame -1 where none) */
static bool wp_dims(const sl_tlist *in, int *f, int *c, int *h, int *w) {
    const char *l = in->layout;
    if (!l[0] && in->ndim == 3) l = "HWC";
    static const char *const ok[] = {"HWC", "CHW", "FHWC", "FCHW"};
    for (int k = 0; k < 4; k++)
        if (!strcmp(l, ok[k]) && (int)strlen(l) == in->ndim) {
            *f = strchr(l, 'F') ? 0 : -1;
            *c = (int)(strchr(l, 'C') - l), *h = (int)(strchr(l, 'H') - l);
            *w = (int)(strchr(l, 'W') - l);
            return true;
        }
    return false;
}

static bool invert3(const double *m, double *r) {
    double det = m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) +
                 m[2] * (m[3] * m[7] - m[4] * m[6]);
    if (!(fabs(det) > 0) || !isfinite(det)) return false;
    r[0] = (m[4] * m[8] - m[5] * m[7]) / det, r[1] = (m[2] * m[7] - m[1] * m[8]) / det;
    r[2] = (m[1] * m[5] - m[2] * m[4]) / det, r[3] = (m[5] * m[6] - m[3] * m[8]) / det;
    r[4] = (m[0] * m[8] - m[2] * m[6]) / det, r[5] = (m[2] * m[3] - m[0] * m[5]) / det;
    r[6] = (m[3] * m[7] - m[4] * m[6]) / det, r[7] = (m[1] * m[6] - m[0] * m[7]) / det;
    r[8] = (m[0] * m[4] - m[1] * m[3]) / det;
    return true;
}

static sl_status wp_plan_sample(wp_state *s, const sl__op_io *io, int i, int64_t H, int64_t W,
                                wp_plan *p, sl_err *err) {
    double m[9], size[2];
    int n = 0;
    if (s->has_matrix) {
        SL_TRY(sl__args_sample_floats(s->a, io, OP, "matrix", i, m, 9, &n, err));
        if (n != 9)
            return sl__op_fail(err, SL_EINVAL, io, i, OP,
                               "matrix must be 9 values (3x3, row-major), got %d", n);
    } else {
        const sl_tlist *l = io->in[1];
        const int64_t *sh = sl_tlist_shape(l, i);
        if (l->ndim != 2 || sh[0] != 3 || sh[1] != 3) {
            char shape[96] = "{";
            for (int k = 0; k < l->ndim && k < 8; k++)
                snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%lld",
                         k ? ", " : "", (long long)sh[k]);
            strcat(shape, "}");
            return sl__op_fail(err, SL_EINVAL, io, i, OP,
                               "Expected a uniform list of 3x3 matrices. Instead got data with "
                               "shape: %s",
                               shape);
        }
        for (int k = 0; k < 9; k++) m[k] = ((const float *)l->data[i])[k];
    }
    p->oh = H, p->ow = W;
    SL_TRY(sl__args_sample_floats(s->a, io, OP, "size", i, size, 2, &n, err));
    if (n != 0 && !(n == 2 && size[0] >= 0 && size[1] >= 0 && size[0] <= 1e7 && size[1] <= 1e7))
        return sl__op_fail(err, SL_EINVAL, io, i, OP,
                           "size must be (height, width), each from 0 to 1e7");
    if (n == 2 && size[0] > 0 && size[1] > 0) p->oh = llround(size[0]), p->ow = llround(size[1]);
    if (!s->inverse) {
        double r[9];
        if (!invert3(m, r))
            return sl__op_fail(err, SL_EINVAL, io, i, OP,
                               "matrix is not invertible (inverse_map=False maps source to "
                               "destination)");
        memcpy(m, r, sizeof r);
    }
    for (int k = 0; k < 9; k++)
        if (!isfinite(m[k]))
            return sl__op_fail(err, SL_EINVAL, io, i, OP, "matrix has a value that is not finite");
    /* in pixel-centre coordinates on both sides: corner origin shifts by 0.5 in and out */
    if (s->center) {
        memcpy(p->m, m, sizeof m);
    } else {
        /* src_c = S^-1 M S dst_c, S = translate(+0.5), S^-1 = translate(-0.5) */
        double t[9];
        for (int r = 0; r < 3; r++) {
            t[r * 3 + 0] = m[r * 3 + 0], t[r * 3 + 1] = m[r * 3 + 1];
            t[r * 3 + 2] = 0.5 * m[r * 3 + 0] + 0.5 * m[r * 3 + 1] + m[r * 3 + 2];
        }
        for (int c = 0; c < 3; c++) {
            p->m[c] = t[c] - 0.5 * t[6 + c];
            p->m[3 + c] = t[3 + c] - 0.5 * t[6 + c];
            p->m[6 + c] = t[6 + c];
        }
    }
    return SL_OK;
}

static sl_status wp_setup(void *state, sl__op_io *io, sl_err *err) {
    wp_state *s = state;
    const sl_tlist *in = io->in[0];
    int f, c, h, w;
    if (!wp_dims(in, &f, &c, &h, &w))
        return sl_err_set(err, SL_EINVAL,
                          OP ": the input must be HWC, CHW, FHWC or FCHW (got \"%s\", %d dims)",
                          in->layout, in->ndim);
    if (in->dtype != SL_DTYPE_U8 && in->dtype != SL_DTYPE_U16 && in->dtype != SL_DTYPE_I16 &&
        in->dtype != SL_DTYPE_F32)
        return sl_err_set(err, SL_EINVAL, OP ": input type %s (uint8, uint16, int16 or float)",
                          sl_dtype_name(in->dtype));
    if (s->has_matrix && io->num_inputs == 2)
        return sl_err_set(err, SL_EINVAL,
                          OP ": Matrix input and `matrix` argument should not be provided at the "
                             "same time");
    if (!s->has_matrix && io->num_inputs < 2)
        return sl_err_set(err, SL_EINVAL,
                          OP ": give the matrix (the matrix argument, or a second input)");
    if (!s->has_matrix && io->in[1]->dtype != SL_DTYPE_F32)
        return sl_err_set(err, SL_EINVAL,
                          OP ": Transformation matrix can be provided only as float32 values. Got "
                             "%s.",
                          sl_dtype_name(io->in[1]->dtype));
    if (io->batch > s->cap) {
        wp_plan *p = realloc(s->plan, (size_t)io->batch * sizeof *p);
        if (!p) return sl_err_set(err, SL_ENOMEM, OP ": out of memory");
        s->plan = p, s->cap = io->batch;
    }
    int nd = in->ndim;
    int64_t *shapes =
        sl__malloc((size_t)(io->batch > 0 ? io->batch : 1) * (size_t)nd * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0; i < io->batch && st == SL_OK; i++) {
        const int64_t *sh = sl_tlist_shape(in, i);
        if (s->nfill > 1 && s->border == B_CONSTANT && s->nfill != sh[c]) {
            st = sl__op_fail(err, SL_EINVAL, io, i, OP,
                             "fill_value has %d values for %lld channels (one, or one per "
                             "channel)",
                             s->nfill, (long long)sh[c]);
            break;
        }
        st = wp_plan_sample(s, io, i, sh[h], sh[w], &s->plan[i], err);
        int64_t *o = shapes + (size_t)i * (size_t)nd;
        memcpy(o, sh, (size_t)nd * sizeof *o);
        if (st == SL_OK) o[h] = s->plan[i].oh, o[w] = s->plan[i].ow;
    }
    if (st == SL_OK) st = sl_tlist_reset(io->out[0], io->batch, in->dtype, nd, io->device, err);
    if (st == SL_OK) st = sl_tlist_alloc(io->out[0], shapes, err);
    if (st == SL_OK) memcpy(io->out[0]->layout, in->layout, sizeof in->layout);
    free(shapes);
    return st;
}

/* index p of an extent n after the border rule; -1 for constant outside */
static inline int64_t wp_border(int64_t p, int64_t n, int mode) {
    if (p >= 0 && p < n) return p;
    switch (mode) {
    case B_REPLICATE:
        return p < 0 ? 0 : n - 1;
    case B_REFLECT: {
        int64_t period = 2 * n, q = p % period;
        if (q < 0) q += period;
        return q >= n ? period - 1 - q : q;
    }
    case B_REFLECT101: {
        if (n == 1) return 0;
        int64_t period = 2 * n - 2, q = p % period;
        if (q < 0) q += period;
        return q >= n ? period - q : q;
    }
    case B_WRAP: {
        int64_t q = p % n;
        return q < 0 ? q + n : q;
    }
    default:
        return -1;
    }
}

/* OpenCV's cubic weights (a = -0.75) for fraction t of the 4 taps at -1, 0, 1, 2 */
static inline void wp_cubic(double t, double *wt) {
    const double A = -0.75;
    double x = t + 1;
    wt[0] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
    wt[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
    x = 1 - t;
    wt[2] = ((A + 2) * x - (A + 3)) * x * x + 1;
    wt[3] = 1 - wt[0] - wt[1] - wt[2];
}

typedef struct wp_img {
    const void *src;
    sl_dtype t;
    int64_t h, w, sy, sx; /* strides of a row and a column, in elements */
} wp_img;

static inline double wp_px(const wp_state *s, const wp_img *im, int64_t y, int64_t x, int64_t ch,
                           int64_t cstride) {
    int64_t yy = wp_border(y, im->h, s->border), xx = wp_border(x, im->w, s->border);
    if (yy < 0 || xx < 0) return s->nfill ? s->fill[s->nfill > 1 ? ch : 0] : 0.0;
    return sl__dtype_conv_load(im->src, im->t, yy * im->sy + xx * im->sx + ch * cstride);
}

static sl_status wp_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)worker, (void)err;
    const wp_state *s = state;
    const wp_plan *p = &s->plan[i];
    const sl_tlist *in = io->in[0];
    sl_tlist *out = io->out[0];
    int f, c, h, w;
    wp_dims(in, &f, &c, &h, &w);
    const int64_t *sh = sl_tlist_shape(in, i);
    int64_t F = f >= 0 ? sh[f] : 1, C = sh[c], H = sh[h], W = sh[w];
    int64_t oh = p->oh, ow = p->ow;
    bool cl = c == in->ndim - 1; /* channels last */
    int64_t es = (int64_t)sl_dtype_size(in->dtype);
    for (int64_t fr = 0; fr < F; fr++) {
        wp_img im = {(const char *)in->data[i] + fr * H * W * C * es,
                     in->dtype,
                     H,
                     W,
                     cl ? W * C : W,
                     cl ? C : 1};
        int64_t cstride = cl ? 1 : H * W, ocs = cl ? 1 : oh * ow;
        void *dst = (char *)out->data[i] + fr * oh * ow * C * es;
        for (int64_t y = 0; y < oh; y++)
            for (int64_t x = 0; x < ow; x++) {
                double X = p->m[0] * (double)x + p->m[1] * (double)y + p->m[2];
                double Y = p->m[3] * (double)x + p->m[4] * (double)y + p->m[5];
                double Z = p->m[6] * (double)x + p->m[7] * (double)y + p->m[8];
                double sx = X / Z, sy = Y / Z;
                if (!(sx > -1e9 && sx < 1e9)) sx = -1e9;
                if (!(sy > -1e9 && sy < 1e9)) sy = -1e9;
                int64_t o = cl ? (y * ow + x) * C : y * ow + x;
                if (s->interp == I_NN) {
                    int64_t ix = (int64_t)floor(sx + 0.5), iy = (int64_t)floor(sy + 0.5);
                    for (int64_t ch = 0; ch < C; ch++)
                        sl__dtype_conv_store(dst, out->dtype, o + ch * ocs,
                                             wp_px(s, &im, iy, ix, ch, cstride));
                    continue;
                }
                double x0 = floor(sx), y0 = floor(sy), ax = sx - x0, ay = sy - y0;
                int64_t ix = (int64_t)x0, iy = (int64_t)y0;
                for (int64_t ch = 0; ch < C; ch++) {
                    double v;
                    if (s->interp == I_LINEAR) {
                        double a = wp_px(s, &im, iy, ix, ch, cstride);
                        double b = wp_px(s, &im, iy, ix + 1, ch, cstride);
                        double cc = wp_px(s, &im, iy + 1, ix, ch, cstride);
                        double d = wp_px(s, &im, iy + 1, ix + 1, ch, cstride);
                        double top = a + ax * (b - a), bottom = cc + ax * (d - cc);
                        v = top + ay * (bottom - top);
                    } else {
                        double wx[4], wy[4];
                        wp_cubic(ax, wx), wp_cubic(ay, wy);
                        v = 0;
                        for (int r = 0; r < 4; r++) {
                            double row = 0;
                            for (int k = 0; k < 4; k++)
                                row += wx[k] * wp_px(s, &im, iy - 1 + r, ix - 1 + k, ch, cstride);
                            v += wy[r] * row;
                        }
                    }
                    sl__dtype_conv_store(dst, out->dtype, o + ch * ocs, v);
                }
            }
    }
    return SL_OK;
}

const sl__op_def sl__warp_perspective_op = {
    .name = "experimental.warp_perspective",
    .doc = "Resamples HWC, CHW, FHWC or FCHW images through a 3x3 projective map per sample "
           "(DALI's fn.experimental.warp_perspective), with border modes constant, replicate, "
           "reflect, reflect_101 and wrap; the map is the matrix argument or the second input.",
    .min_inputs = 1,
    .max_inputs = 2,
    .args = wp_args,
    .devices = SL_OPDEV_CPU,
    .create = wp_create,
    .setup = wp_setup,
    .run_cpu = wp_run_cpu,
    .destroy = wp_destroy,
};
