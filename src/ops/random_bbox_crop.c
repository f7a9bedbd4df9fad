/* SPDX-License-Identifier: Apache-2.0 */
/* random_bbox_crop: picks a random crop window in relative coordinates that keeps a sample's
 * boxes, as DALI's fn.random_bbox_crop (2-D). Inputs: boxes (N, 4) float ([l, t, r, b] with
 * ltrb=True or bbox_layout "xyXY", [x, y, w, h] with ltrb=False or "xyWH") and, optionally, labels
 * (N,) or (N, 1) int32 (required here; DALI also takes boxes alone). Outputs: the window's anchor
 * (2,) and shape (2,) float, the kept boxes (K, 4) relative to the window, in the input's format,
 * then the kept labels (K,) or (K, 1) and, with output_bbox_indices, the kept boxes' indices (K,)
 * int32. Per sample (a Philox stream keyed by the op's seed and the sample's global index): one
 * option is drawn uniformly from thresholds (plus "no crop" with allow_no_crop); "no crop" is the
 * whole image with every box. Otherwise up to num_attempts windows are tried: each side uniform in
 * scaling, the ratio w/h within aspect_ratio, the anchor uniform in [0, 1 - side]; a window passes
 * when every box (any box, with all_boxes_above_threshold=False) has IoU (threshold_type "iou") or
 * the share of its own area inside the window ("overlap") at least the threshold, and at least
 * one box is kept: those whose centre lies in the window (or, with bbox_prune_threshold, those
 * with at least that share of their area inside). Kept boxes are clipped to the window and
 * expressed relative to it. When the attempts run out another option is drawn. A sample without
 * boxes takes the first window of a valid aspect ratio. total_num_attempts (> 0) bounds the
 * windows tried, after which the sample is not cropped; with -1 (DALI's default, which would loop
 * for ever on an impossible threshold) a sample that finds no window in 1,000,000 is an error
 * naming it. */
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"
#include "core/rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define UNBOUNDED_LIMIT 1000000

static const sl__arg_schema rbc_args[] = {
    {"thresholds", SL_ARG_FLOATS, "[0.0]", "minimum overlaps, one drawn per sample (0..1)", 0,
     NULL},
    {"threshold_type", SL_ARG_STR, "\"iou\"", "\"iou\" or \"overlap\" (share of the box's area)", 0,
     NULL},
    {"all_boxes_above_threshold", SL_ARG_BOOL, "True",
     "every box must meet the threshold (else one is enough)", 0, NULL},
    {"allow_no_crop", SL_ARG_BOOL, "True", "\"no crop\" is one of the options drawn", 0, NULL},
    {"aspect_ratio", SL_ARG_FLOATS, "[1.0, 1.0]", "[min, max] of the window's width / height", 0,
     NULL},
    {"scaling", SL_ARG_FLOATS, "[1.0, 1.0]", "[min, max] of each side, relative to the image", 0,
     NULL},
    {"ltrb", SL_ARG_BOOL, "True", "boxes are [l, t, r, b] (else [x, y, w, h])", 0, NULL},
    {"bbox_layout", SL_ARG_STR, NULL, "\"xyXY\" or \"xyWH\" (overrides ltrb)", 0, NULL},
    {"num_attempts", SL_ARG_INT, "1", "windows tried per option drawn (>= 1)", 0, NULL},
    {"total_num_attempts", SL_ARG_INT, "-1",
     "windows tried in all before the sample is left uncropped (-1: no bound)", 0, NULL},
    {"bbox_prune_threshold", SL_ARG_FLOAT, NULL,
     "keep boxes with at least this share inside the window (default: centre inside)", 0, NULL},
    {"output_bbox_indices", SL_ARG_BOOL, "False", "also output the kept boxes' indices", 0, NULL},
    {"crop_shape", SL_ARG_INTS, NULL, "not supported: refused", 0, NULL},
    {"input_shape", SL_ARG_INTS, NULL, "not supported: refused", 0, NULL},
    {"shape_layout", SL_ARG_STR, NULL, "not supported: refused", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct rbc_state {
    uint64_t seed;
    float *thr;
    int nthr;
    bool overlap, all, no_crop, ltrb, indices, prune;
    float prune_thr, ar[2], sc[2];
    int attempts;
    int64_t total;
    /* per batch (setup), for the kept boxes */
    int64_t *keep; /* indices */
    int64_t keep_cap;
} rbc_state;

static void rbc_destroy(void *state) {
    rbc_state *s = state;
    if (s) {
        free(s->thr);
        free(s->keep);
    }
    free(s);
}

/* anchor, shape, boxes, labels [, indices]: the labels input is required here (DALI's form
 * without labels, three outputs, would need the output count to follow the inputs) */
static int rbc_outputs(const sl__args *a) {
    return sl__args_bool(a, "output_bbox_indices") ? 5 : 4;
}

static sl_status range_arg(const sl__args *a, const char *name, float lo_min, float out[2],
                           sl_err *err) {
    const double *v;
    int n = sl__args_floats(a, name, &v);
    if (n != 2 || !(v[0] >= lo_min) || !(v[1] >= v[0]) || !isfinite(v[1]))
        return sl_err_set(err, SL_EINVAL,
                          "random_bbox_crop: %s must be [min, max] with %g <= min <= max", name,
                          (double)lo_min);
    out[0] = (float)v[0];
    out[1] = (float)v[1];
    return SL_OK;
}

static sl_status rbc_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    static const char *const refused[] = {"crop_shape", "input_shape", "shape_layout"};
    for (int i = 0; i < 3; i++)
        if (sl__args_given(a, refused[i]))
            return sl_err_set(err, SL_ENOTSUP,
                              "random_bbox_crop: %s is not supported (windows are drawn in "
                              "relative coordinates)",
                              refused[i]);
    rbc_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    sl_status st = SL_OK;
    s->seed = init->seed;
    const double *t;
    s->nthr = sl__args_floats(a, "thresholds", &t);
    const char *tt = sl__args_str(a, "threshold_type");
    const char *layout = sl__args_str(a, "bbox_layout");
    s->ltrb = sl__args_bool(a, "ltrb");
    if (s->nthr < 1)
        st = sl_err_set(err, SL_EINVAL, "random_bbox_crop: thresholds needs at least one value");
    else if (!(s->thr = sl__malloc((size_t)s->nthr * sizeof *s->thr, err)))
        st = SL_ENOMEM;
    for (int i = 0; !st && i < s->nthr; i++) {
        if (!(t[i] >= 0 && t[i] <= 1))
            st = sl_err_set(err, SL_EINVAL,
                            "random_bbox_crop: thresholds must be in [0, 1] (got %g)", t[i]);
        else
            s->thr[i] = (float)t[i];
    }
    if (!st && tt && strcmp(tt, "iou") && strcmp(tt, "overlap"))
        st = sl_err_set(err, SL_EINVAL,
                        "random_bbox_crop: threshold_type must be \"iou\" or \"overlap\" (got "
                        "\"%s\")",
                        tt);
    if (!st && layout) {
        if (!strcmp(layout, "xyXY"))
            s->ltrb = true;
        else if (!strcmp(layout, "xyWH"))
            s->ltrb = false;
        else
            st = sl_err_set(err, SL_ENOTSUP,
                            "random_bbox_crop: bbox_layout \"%s\" is not supported (\"xyXY\" or "
                            "\"xyWH\")",
                            layout);
    }
    if (!st) st = range_arg(a, "aspect_ratio", 0.0f, s->ar, err);
    if (!st) st = range_arg(a, "scaling", 0.0f, s->sc, err);
    if (!st && s->sc[1] > 1)
        st = sl_err_set(err, SL_EINVAL, "random_bbox_crop: scaling must lie within [0, 1]");
    s->attempts = (int)sl__args_int(a, "num_attempts");
    s->total = sl__args_int(a, "total_num_attempts");
    if (!st && s->attempts < 1)
        st = sl_err_set(err, SL_EINVAL, "random_bbox_crop: num_attempts must be >= 1 (got %d)",
                        s->attempts);
    if (!st && (s->total == 0 || s->total < -1))
        st = sl_err_set(err, SL_EINVAL,
                        "random_bbox_crop: total_num_attempts must be >= 1 or -1 (got %lld)",
                        (long long)s->total);
    s->prune = sl__args_given(a, "bbox_prune_threshold");
    if (s->prune) {
        double p = sl__args_float(a, "bbox_prune_threshold");
        if (!st && !(p >= 0 && p <= 1))
            st = sl_err_set(err, SL_EINVAL,
                            "random_bbox_crop: bbox_prune_threshold must be in [0, 1] (got %g)", p);
        s->prune_thr = (float)p;
    }
    s->overlap = tt && !strcmp(tt, "overlap");
    s->all = sl__args_bool(a, "all_boxes_above_threshold");
    s->no_crop = sl__args_bool(a, "allow_no_crop");
    s->indices = sl__args_bool(a, "output_bbox_indices");
    if (st) {
        rbc_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

/* box k of the input as [l, t, r, b] */
static void ltrb_of(const rbc_state *s, const float *in, float *b) {
    memcpy(b, in, 4 * sizeof *b);
    if (!s->ltrb) {
        b[2] += b[0];
        b[3] += b[1];
    }
}

static float area(const float *b) {
    float w = b[2] - b[0], h = b[3] - b[1];
    return w > 0 && h > 0 ? w * h : 0.0f;
}

static float inter_area(const float *a, const float *b) {
    float i[4] = {fmaxf(a[0], b[0]), fmaxf(a[1], b[1]), fminf(a[2], b[2]), fminf(a[3], b[3])};
    return area(i);
}

/* IoU of the window and the box, or the box's share inside the window */
static float metric(const rbc_state *s, const float *win, const float *b) {
    float in = inter_area(win, b);
    if (in <= 0) return 0.0f;
    float denom = s->overlap ? area(b) : area(win) + area(b) - in;
    return denom > 0 ? in / denom : 0.0f;
}

static bool kept(const rbc_state *s, const float *win, const float *b) {
    if (s->prune) {
        float a = area(b);
        return a > 0 ? inter_area(win, b) / a >= s->prune_thr : false;
    }
    float cx = (b[0] + b[2]) * 0.5f, cy = (b[1] + b[3]) * 0.5f;
    return cx >= win[0] && cx < win[2] && cy >= win[1] && cy < win[3];
}

/* Draws sample i's window; win: [l, t, r, b]; the kept boxes' indices go to keep[0..*nk). */
static sl_status draw(rbc_state *s, const float *boxes, int64_t n, int64_t base, int i, float *win,
                      int64_t *keep, int64_t *nk, sl_err *err) {
    sl__rng_philox r;
    sl__rng_philox_init(&r, s->seed, (uint64_t)(base + i));
    int64_t tried = 0, limit = s->total > 0 ? s->total : UNBOUNDED_LIMIT;
    int options = s->nthr + (s->no_crop ? 1 : 0);
    for (;;) {
        int opt = (int)sl__rng_philox_below(&r, (uint64_t)options);
        bool whole = opt == s->nthr || tried >= limit;
        if (tried >= limit && s->total < 0)
            return sl_err_set(err, SL_EINVAL,
                              "random_bbox_crop: sample %d: no window met a threshold in %d "
                              "attempts (an impossible threshold? allow_no_crop=True or "
                              "total_num_attempts bound the search)",
                              i, UNBOUNDED_LIMIT);
        if (whole) {
            win[0] = win[1] = 0.0f;
            win[2] = win[3] = 1.0f;
            for (int64_t k = 0; k < n; k++) keep[k] = k;
            *nk = n;
            return SL_OK;
        }
        float thr = s->thr[opt];
        for (int at = 0; at < s->attempts && tried < limit; at++, tried++) {
            float w = s->sc[0] + (s->sc[1] - s->sc[0]) * (float)sl__rng_philox_uniform(&r);
            float h = s->sc[0] + (s->sc[1] - s->sc[0]) * (float)sl__rng_philox_uniform(&r);
            if (s->ar[0] == s->ar[1] && w != h) { /* a fixed ratio: fix it, keep the longer side */
                float mx = fmaxf(w, h);
                w = h * s->ar[0];
                float nm = fmaxf(w, h);
                w = mx * w / nm;
                h = mx * h / nm;
            }
            if (!(h > 0) || !(w / h >= s->ar[0] && w / h <= s->ar[1])) continue;
            win[0] = (1.0f - w) * (float)sl__rng_philox_uniform(&r);
            win[1] = (1.0f - h) * (float)sl__rng_philox_uniform(&r);
            win[2] = win[0] + w;
            win[3] = win[1] + h;
            if (n == 0) {
                *nk = 0;
                return SL_OK;
            }
            bool ok = s->all;
            for (int64_t k = 0; k < n; k++) {
                float b[4];
                ltrb_of(s, boxes + 4 * k, b);
                bool m = metric(s, win, b) >= thr;
                ok = s->all ? ok && m : ok || m;
            }
            if (!ok) continue;
            int64_t c = 0;
            for (int64_t k = 0; k < n; k++) {
                float b[4];
                ltrb_of(s, boxes + 4 * k, b);
                if (kept(s, win, b)) keep[c++] = k;
            }
            if (c == 0) continue;
            *nk = c;
            return SL_OK;
        }
    }
}

static sl_status rbc_setup(void *state, sl__op_io *io, sl_err *err) {
    rbc_state *s = state;
    const sl_tlist *bx = io->in[0], *lb = io->num_inputs > 1 ? io->in[1] : NULL;
    if (bx->dtype != SL_DTYPE_F32 || bx->ndim != 2)
        return sl_err_set(err, SL_EINVAL,
                          "random_bbox_crop: boxes must be float (N, 4) (got %s, %d dims)",
                          sl_dtype_name(bx->dtype), bx->ndim);
    if (lb && (lb->dtype != SL_DTYPE_I32 || lb->ndim < 1 || lb->ndim > 2))
        return sl_err_set(err, SL_EINVAL,
                          "random_bbox_crop: labels must be int32 (N,) or (N, 1) (got %s, %d "
                          "dims)",
                          sl_dtype_name(lb->dtype), lb->ndim);
    int64_t maxn = 0;
    for (int i = 0; i < io->batch; i++) {
        const int64_t *bs = sl_tlist_shape(bx, i);
        if (bs[1] != 4)
            return sl_err_set(err, SL_EINVAL,
                              "random_bbox_crop: sample %d: boxes are (%lld, %lld); only 2-D "
                              "boxes (N, 4) are supported",
                              i, (long long)bs[0], (long long)bs[1]);
        if (lb) {
            const int64_t *ls = sl_tlist_shape(lb, i);
            if (ls[0] != bs[0] || (lb->ndim == 2 && ls[1] != 1))
                return sl_err_set(err, SL_EINVAL,
                                  "random_bbox_crop: sample %d: %lld boxes but %lld labels", i,
                                  (long long)bs[0], (long long)ls[0]);
        }
        if (bs[0] > maxn) maxn = bs[0];
    }
    int64_t need = (int64_t)io->batch * (maxn > 0 ? maxn : 1);
    if (need > s->keep_cap) {
        int64_t *k = realloc(s->keep, (size_t)need * sizeof *k);
        if (!k) return sl_err_set(err, SL_ENOMEM, "random_bbox_crop: out of memory");
        s->keep = k;
        s->keep_cap = need;
    }
    int b = io->batch > 0 ? io->batch : 1;
    float *wins = sl__malloc((size_t)b * 4 * sizeof *wins, err);
    int64_t *nk = sl__malloc((size_t)b * 2 * sizeof *nk, err), *shapes = nk ? nk + b : NULL;
    sl_status st = wins && nk ? SL_OK : SL_ENOMEM;
    uint64_t seed = io->seed ? io->seed : s->seed;
    s->seed = seed;
    for (int i = 0; !st && i < io->batch; i++)
        st = draw(s, bx->data[i], sl_tlist_shape(bx, i)[0], io->sample_base, i, wins + 4 * i,
                  s->keep + (size_t)i * (size_t)(maxn > 0 ? maxn : 1), &nk[i], err);
    /* anchor and shape (2,) */
    for (int o = 0; o < 2 && !st; o++) {
        sl_tlist *t = io->out[o];
        for (int i = 0; i < io->batch; i++) shapes[i] = 2;
        st = sl_tlist_reset(t, io->batch, SL_DTYPE_F32, 1, sl_cpu(), err);
        if (!st) st = sl_tlist_alloc(t, shapes, err);
        for (int i = 0; !st && i < io->batch; i++) {
            float *d = t->data[i], *w = wins + 4 * i;
            d[0] = o ? w[2] - w[0] : w[0];
            d[1] = o ? w[3] - w[1] : w[1];
        }
    }
    /* boxes (K, 4) relative to the window, in the input's format */
    int64_t *sh2 = NULL;
    if (!st && !(sh2 = sl__malloc((size_t)b * 2 * sizeof *sh2, err))) st = SL_ENOMEM;
    if (!st) {
        for (int i = 0; i < io->batch; i++) {
            sh2[2 * i] = nk[i];
            sh2[2 * i + 1] = 4;
        }
        st = sl_tlist_reset(io->out[2], io->batch, SL_DTYPE_F32, 2, sl_cpu(), err);
        if (!st) st = sl_tlist_alloc(io->out[2], sh2, err);
    }
    for (int i = 0; !st && i < io->batch; i++) {
        const float *w = wins + 4 * i, *in = bx->data[i];
        const int64_t *keep = s->keep + (size_t)i * (size_t)(maxn > 0 ? maxn : 1);
        float *d = io->out[2]->data[i], ew = w[2] - w[0], eh = w[3] - w[1];
        for (int64_t k = 0; k < nk[i]; k++) {
            float bb[4], *o = d + 4 * k;
            ltrb_of(s, in + 4 * keep[k], bb);
            o[0] = (fmaxf(bb[0], w[0]) - w[0]) / ew;
            o[1] = (fmaxf(bb[1], w[1]) - w[1]) / eh;
            o[2] = (fminf(bb[2], w[2]) - w[0]) / ew;
            o[3] = (fminf(bb[3], w[3]) - w[1]) / eh;
            for (int q = 0; q < 4; q++) o[q] = fminf(fmaxf(o[q], 0.0f), 1.0f);
            if (!s->ltrb) {
                o[2] -= o[0];
                o[3] -= o[1];
            }
        }
    }
    int next = 3;
    if (!st && lb) { /* labels, in the input's rank */
        sl_tlist *t = io->out[next++];
        for (int i = 0; i < io->batch; i++) {
            sh2[2 * i] = nk[i];
            sh2[2 * i + 1] = 1;
        }
        if (lb->ndim == 1)
            for (int i = 0; i < io->batch; i++) sh2[i] = nk[i];
        st = sl_tlist_reset(t, io->batch, SL_DTYPE_I32, lb->ndim, sl_cpu(), err);
        if (!st) st = sl_tlist_alloc(t, sh2, err);
        for (int i = 0; !st && i < io->batch; i++) {
            const int32_t *l = lb->data[i];
            const int64_t *keep = s->keep + (size_t)i * (size_t)(maxn > 0 ? maxn : 1);
            for (int64_t k = 0; k < nk[i]; k++) ((int32_t *)t->data[i])[k] = l[keep[k]];
        }
    }
    if (!st && s->indices) {
        sl_tlist *t = io->out[next];
        for (int i = 0; i < io->batch; i++) sh2[i] = nk[i];
        st = sl_tlist_reset(t, io->batch, SL_DTYPE_I32, 1, sl_cpu(), err);
        if (!st) st = sl_tlist_alloc(t, sh2, err);
        for (int i = 0; !st && i < io->batch; i++) {
            const int64_t *keep = s->keep + (size_t)i * (size_t)(maxn > 0 ? maxn : 1);
            for (int64_t k = 0; k < nk[i]; k++) ((int32_t *)t->data[i])[k] = (int32_t)keep[k];
        }
    }
    for (int o = 0; !st && o < io->num_outputs; o++) io->out[o]->layout[0] = 0;
    free(sh2);
    free(wins);
    free(nk);
    return st;
}

const sl__op_def sl__random_bbox_crop_op = {
    .name = "random_bbox_crop",
    .doc = "Draws a random crop window (relative coordinates) that keeps a sample's boxes: anchor "
           "(2,), shape (2,), the kept boxes (K, 4) relative to it, the kept labels when labels "
           "are given, and their indices with output_bbox_indices.",
    .min_inputs = 2,
    .max_inputs = 2,
    .args = rbc_args,
    .devices = SL_OPDEV_CPU,
    .flags = SL_OPF_RANDOM,
    .num_outputs = rbc_outputs,
    .create = rbc_create,
    .setup = rbc_setup,
    .destroy = rbc_destroy,
};
