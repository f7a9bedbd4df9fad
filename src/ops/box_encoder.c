/* SPDX-License-Identifier: Apache-2.0 */
/* box_encoder: SSD's encoding of a sample's boxes against a fixed set of anchors, as DALI's
 * fn.box_encoder. Inputs: boxes (N, 4) float [l, t, r, b] and labels (N,) or (N, 1) int32;
 * outputs: (M, 4) float and (M,) int32, one row per anchor (M = len(anchors) / 4).
 * Matching, in single precision: each box claims the anchor it overlaps most (its IoU taken as 2;
 * on a tie the later anchor), then each anchor takes the box of highest IoU (on a tie the later
 * box) when that IoU is above criteria. A matched anchor gets its box as [cx, cy, w, h] and the
 * box's label; an unmatched one gets itself as [cx, cy, w, h] and label 0. With offset=True the
 * rows are instead SSD's regression targets: centres and extents multiplied by scale, then
 * ((c_box - c_anchor) / e_anchor - mean) / std for the centre and (log(e_box / e_anchor) - mean)
 * / std for the extent; unmatched rows are 0. */
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const sl__arg_schema box_encoder_args[] = {
    {"anchors", SL_ARG_FLOATS, NULL, "the anchors, [l, t, r, b] each, flattened", SL_ARGF_REQUIRED,
     NULL},
    {"criteria", SL_ARG_FLOAT, "0.5", "IoU above which an anchor is matched to a box (0..1)", 0,
     NULL},
    {"offset", SL_ARG_BOOL, "False", "output regression offsets instead of boxes", 0, NULL},
    {"scale", SL_ARG_FLOAT, "1.0", "factor on boxes and anchors before the offsets", 0, NULL},
    {"means", SL_ARG_FLOATS, "[0.0, 0.0, 0.0, 0.0]", "[x, y, w, h] means of the offsets", 0, NULL},
    {"stds", SL_ARG_FLOATS, "[1.0, 1.0, 1.0, 1.0]", "[x, y, w, h] standard deviations", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct box_encoder_state {
    float *anchors; /* (M, 4) ltrb */
    int64_t m;
    float criteria, scale, means[4], stds[4];
    bool offset;
} box_encoder_state;

static void box_encoder_destroy(void *state) {
    box_encoder_state *s = state;
    if (s) free(s->anchors);
    free(s);
}

static sl_status box_encoder_create(const sl__args *a, const sl__op_init *init, void **out,
                                    sl_err *err) {
    (void)init;
    const double *an, *mv, *sv;
    int na = sl__args_floats(a, "anchors", &an);
    int nm = sl__args_floats(a, "means", &mv), ns = sl__args_floats(a, "stds", &sv);
    double crit = sl__args_float(a, "criteria"), scale = sl__args_float(a, "scale");
    if (na <= 0 || na % 4)
        return sl_err_set(err, SL_EINVAL,
                          "box_encoder: anchors must hold 4 numbers per anchor (got %d)", na);
    if (!(crit >= 0 && crit <= 1))
        return sl_err_set(err, SL_EINVAL, "box_encoder: criteria must be in [0, 1] (got %g)", crit);
    if (nm != 4 || ns != 4)
        return sl_err_set(err, SL_EINVAL,
                          "box_encoder: means and stds take 4 values each (got %d and %d)", nm, ns);
    for (int i = 0; i < 4; i++)
        if (sv[i] == 0 || !isfinite(sv[i]) || !isfinite(mv[i]))
            return sl_err_set(err, SL_EINVAL,
                              "box_encoder: stds must be finite and nonzero, means finite "
                              "(stds[%d]=%g, means[%d]=%g)",
                              i, sv[i], i, mv[i]);
    if (!isfinite(scale) || scale == 0)
        return sl_err_set(err, SL_EINVAL, "box_encoder: scale must be finite and nonzero (got %g)",
                          scale);
    box_encoder_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->m = na / 4;
    s->anchors = sl__malloc((size_t)na * sizeof *s->anchors, err);
    if (!s->anchors) {
        free(s);
        return SL_ENOMEM;
    }
    for (int i = 0; i < na; i++) s->anchors[i] = (float)an[i];
    s->criteria = (float)crit;
    s->scale = (float)scale;
    for (int i = 0; i < 4; i++) {
        s->means[i] = (float)mv[i];
        s->stds[i] = (float)sv[i];
    }
    s->offset = sl__args_bool(a, "offset");
    *out = s;
    return SL_OK;
}

static int box_encoder_outputs(const sl__args *a) {
    (void)a;
    return 2;
}

static sl_status box_encoder_setup(void *state, sl__op_io *io, sl_err *err) {
    box_encoder_state *s = state;
    const sl_tlist *bx = io->in[0], *lb = io->in[1];
    if (bx->dtype != SL_DTYPE_F32 || bx->ndim != 2)
        return sl_err_set(err, SL_EINVAL,
                          "box_encoder: boxes must be float (N, 4) (got %s, %d dims)",
                          sl_dtype_name(bx->dtype), bx->ndim);
    if (lb->dtype != SL_DTYPE_I32 || lb->ndim < 1 || lb->ndim > 2)
        return sl_err_set(err, SL_EINVAL,
                          "box_encoder: labels must be int32 (N,) or (N, 1) (got %s, %d dims)",
                          sl_dtype_name(lb->dtype), lb->ndim);
    for (int i = 0; i < io->batch; i++) {
        const int64_t *bs = sl_tlist_shape(bx, i), *ls = sl_tlist_shape(lb, i);
        if (bs[1] != 4)
            return sl_err_set(err, SL_EINVAL,
                              "box_encoder: sample %d: boxes are (%lld, %lld), not (N, 4)", i,
                              (long long)bs[0], (long long)bs[1]);
        if (ls[0] != bs[0] || (lb->ndim == 2 && ls[1] != 1))
            return sl_err_set(err, SL_EINVAL,
                              "box_encoder: sample %d: %lld boxes but labels of shape (%lld%s)", i,
                              (long long)bs[0], (long long)ls[0], lb->ndim == 2 ? ", 1" : ",");
    }
    sl_tlist *ob = io->out[0], *ol = io->out[1];
    int64_t *shapes = sl__malloc((size_t)(io->batch > 0 ? io->batch : 1) * 2 * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    for (int i = 0; i < io->batch; i++) {
        shapes[2 * i] = s->m;
        shapes[2 * i + 1] = 4;
    }
    sl_status st = sl_tlist_reset(ob, io->batch, SL_DTYPE_F32, 2, io->device, err);
    if (!st) st = sl_tlist_alloc(ob, shapes, err);
    for (int i = 0; i < io->batch; i++) shapes[i] = s->m;
    if (!st) st = sl_tlist_reset(ol, io->batch, SL_DTYPE_I32, 1, io->device, err);
    if (!st) st = sl_tlist_alloc(ol, shapes, err);
    free(shapes);
    ob->layout[0] = 0;
    ol->layout[0] = 0;
    return st;
}

/* IoU of two [l, t, r, b] boxes; 0 when they do not overlap */
static float iou(const float *a, const float *b) {
    float l = a[0] > b[0] ? a[0] : b[0], t = a[1] > b[1] ? a[1] : b[1];
    float r = a[2] < b[2] ? a[2] : b[2], btm = a[3] < b[3] ? a[3] : b[3];
    if (!(r > l && btm > t)) return 0.0f;
    float inter = (r - l) * (btm - t);
    float ua = (a[2] - a[0]) * (a[3] - a[1]), ub = (b[2] - b[0]) * (b[3] - b[1]);
    float uni = ua + ub - inter;
    return uni > 0 ? inter / uni : 0.0f;
}

/* [cx, cy, w, h] of an [l, t, r, b] box */
static void centre_extent(const float *b, float *o) {
    o[0] = (b[0] + b[2]) * 0.5f;
    o[1] = (b[1] + b[3]) * 0.5f;
    o[2] = b[2] - b[0];
    o[3] = b[3] - b[1];
}

static sl_status box_encoder_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    box_encoder_state *s = state;
    (void)worker;
    const float *boxes = io->in[0]->data[i];
    const int32_t *labels = io->in[1]->data[i];
    int64_t n = sl_tlist_shape(io->in[0], i)[0], m = s->m;
    float *ob = io->out[0]->data[i];
    int32_t *ol = io->out[1]->data[i];
    for (int64_t a = 0; a < m; a++) {
        if (s->offset)
            memset(ob + 4 * a, 0, 4 * sizeof *ob);
        else
            centre_extent(s->anchors + 4 * a, ob + 4 * a);
        ol[a] = 0;
    }
    if (n == 0) return SL_OK;
    int64_t *best = sl__malloc((size_t)n * sizeof *best, err); /* each box's anchor */
    if (!best) return SL_ENOMEM;
    for (int64_t b = 0; b < n; b++) {
        float bi = iou(boxes + 4 * b, s->anchors);
        best[b] = 0;
        for (int64_t a = 1; a < m; a++) {
            float v = iou(boxes + 4 * b, s->anchors + 4 * a);
            if (v >= bi) {
                bi = v;
                best[b] = a;
            }
        }
    }
    for (int64_t a = 0; a < m; a++) {
        const float *an = s->anchors + 4 * a;
        int64_t bb = 0;
        float bv = best[0] == a ? 2.0f : iou(boxes, an);
        for (int64_t b = 1; b < n; b++) {
            float v = best[b] == a ? 2.0f : iou(boxes + 4 * b, an);
            if (v >= bv) {
                bv = v;
                bb = b;
            }
        }
        if (!(bv > s->criteria)) continue;
        float bc[4], ac[4], *o = ob + 4 * a;
        centre_extent(boxes + 4 * bb, bc);
        ol[a] = labels[bb];
        if (!s->offset) {
            memcpy(o, bc, sizeof bc);
            continue;
        }
        centre_extent(an, ac);
        for (int k = 0; k < 4; k++) {
            bc[k] *= s->scale;
            ac[k] *= s->scale;
        }
        o[0] = ((bc[0] - ac[0]) / ac[2] - s->means[0]) / s->stds[0];
        o[1] = ((bc[1] - ac[1]) / ac[3] - s->means[1]) / s->stds[1];
        o[2] = (logf(bc[2] / ac[2]) - s->means[2]) / s->stds[2];
        o[3] = (logf(bc[3] / ac[3]) - s->means[3]) / s->stds[3];
    }
    free(best);
    return SL_OK;
}

const sl__op_def sl__box_encoder_op = {
    .name = "box_encoder",
    .doc = "Encodes a sample's boxes (N, 4) [l, t, r, b] and labels against anchors, as SSD: "
           "(M, 4) float [cx, cy, w, h] (or offsets) and (M,) int32 labels, one per anchor.",
    .min_inputs = 2,
    .max_inputs = 2,
    .args = box_encoder_args,
    .devices = SL_OPDEV_CPU,
    .num_outputs = box_encoder_outputs,
    .create = box_encoder_create,
    .setup = box_encoder_setup,
    .run_cpu = box_encoder_run_cpu,
    .destroy = box_encoder_destroy,
};
