/* SPDX-License-Identifier: Apache-2.0 */
/* random_bbox_crop: picks a random crop window that keeps a sample's boxes, as DALI's
 * fn.random_bbox_crop, for 2-D and 3-D boxes. Inputs: boxes (N, 2D) float in relative
 * coordinates, D = 2 or 3, their coordinates in the order bbox_layout names (a permutation of
 * "xyXY" or "xyWH", "xyzXYZ" or "xyzWHD"; without it ltrb picks start-end or start-extent) and,
 * optionally, labels (N, ...) int32. Outputs, their count following the inputs and arguments: the
 * window's anchor (D,) and shape (D,) float ([x, y, (z)], [w, h, (d)]), the kept boxes (K, 2D)
 * relative to the window in the input's layout, the kept labels (when labels are given) and, with
 * output_bbox_indices, the kept boxes' indices (K,) int32.
 *
 * Per sample (a Philox stream keyed by the op's seed and the sample's global index): one option is
 * drawn uniformly from thresholds (plus "no crop", the whole input with every box, with
 * allow_no_crop), then up to num_attempts windows are tried for it before another option is drawn.
 * A window is either of relative size (each extent uniform in scaling; where an aspect_ratio range
 * is a single value the extents are made to meet it, in a random order of the axes, keeping the
 * longest one; then every ratio, x/y or x/y, x/z, y/z, must lie in its range; with input_shape the
 * ratios are those of the absolute extents) placed uniformly, or, with crop_shape and input_shape,
 * of that absolute size at a uniform integer anchor (then anchor and shape are absolute too). A
 * window passes when the smallest (all_boxes_above_threshold) or the largest overlap of a box with
 * it -- IoU (threshold_type "iou") or the share of the box inside ("overlap") -- meets the
 * threshold, and it keeps a box: those whose centre lies in [lo, hi) or, with
 * bbox_prune_threshold, those with at least that share of their volume inside (and some). Kept
 * boxes are clipped to the window and made relative to it. A sample without boxes takes the first
 * window of a valid shape. total_num_attempts (> 0) bounds the windows tried in all, after which
 * the best window so far (the largest overlap) is taken, with a warning in the log; with -1 (DALI's
 * default, which would search for ever for an impossible threshold) 1,000,000 windows without one
 * are an error naming the sample. */
#include "operator/argin.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"
#include "core/rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NAME            "random_bbox_crop"
#define MAXD            3
#define UNBOUNDED_LIMIT 1000000

static const sl__arg_schema rbc_args[] = {
    {"thresholds", SL_ARG_FLOATS, "[0.0]", "minimum overlaps, one drawn per sample (0..1)", 0,
     NULL},
    {"threshold_type", SL_ARG_STR, "\"iou\"", "\"iou\" or \"overlap\" (share of the box's area)", 0,
     NULL},
    {"all_boxes_above_threshold", SL_ARG_BOOL, "True",
     "every box must meet the threshold (else one is enough)", 0, NULL},
    {"allow_no_crop", SL_ARG_BOOL, "True",
     "\"no crop\" is one of the options drawn (False by default with crop_shape)", 0, NULL},
    {"aspect_ratio", SL_ARG_FLOATS, "[1.0, 1.0]",
     "[min, max] of x/y (3-D: of x/y, x/z and y/z, or three pairs for them)", 0, NULL},
    {"scaling", SL_ARG_FLOATS, "[1.0, 1.0]", "[min, max] of each extent, relative to the input", 0,
     NULL},
    {"ltrb", SL_ARG_BOOL, "True", "boxes are start and end (else start and extent)", 0, NULL},
    {"bbox_layout", SL_ARG_STR, NULL,
     "the order of a box's coordinates: a permutation of xyXY, xyWH, xyzXYZ or xyzWHD", 0, NULL},
    {"num_attempts", SL_ARG_INT, "1", "windows tried per option drawn (>= 1)", 0, NULL},
    {"total_num_attempts", SL_ARG_INT, "-1",
     "windows tried in all before the best one is taken (-1: no bound)", 0, NULL},
    {"bbox_prune_threshold", SL_ARG_FLOAT, NULL,
     "keep boxes with at least this share inside the window (default: centre inside)", 0, NULL},
    {"output_bbox_indices", SL_ARG_BOOL, "False", "also output the kept boxes' indices", 0, NULL},
    {"crop_shape", SL_ARG_INTS, NULL, "the window's absolute extents (with input_shape)",
     SL_ARGF_PER_SAMPLE, NULL},
    {"input_shape", SL_ARG_INTS, NULL,
     "the input's extents (with crop_shape; alone, aspect ratios are absolute)", SL_ARGF_PER_SAMPLE,
     NULL},
    {"shape_layout", SL_ARG_STR, NULL,
     "the order of crop_shape and input_shape: a permutation of WH or WHD", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct rbc_state {
    const sl__args *a;
    uint64_t seed;
    float *thr;
    int nthr;
    bool overlap, all, no_crop, ltrb, indices, prune, crop_given, in_given;
    float prune_thr, sc[2], ar[3][2];
    int nar; /* aspect ratio ranges: 1 or 3 */
    const char *layout, *shape_layout;
    int attempts;
    int64_t total;
    /* per batch (setup) */
    float *box;    /* every box as lo[D], hi[D] */
    int64_t *keep; /* kept boxes' indices, per sample from keep_at[i] */
    int64_t box_cap, keep_cap;
} rbc_state;

/* One sample's inputs to the search. */
typedef struct rbc_sample {
    int d;
    int64_t n;        /* boxes */
    const float *box; /* (n, 2d): lo, hi */
    double in[MAXD], crop[MAXD];
    bool in_given, crop_given;
} rbc_sample;

/* A window: lo, hi = lo + ext relative to the input; out_lo/out_ext what the anchor and shape
 * outputs say (the same, or absolute with crop_shape). */
typedef struct rbc_win {
    float lo[MAXD], hi[MAXD], ext[MAXD], out_lo[MAXD], out_ext[MAXD];
} rbc_win;

static void rbc_destroy(void *state) {
    rbc_state *s = state;
    if (s) {
        free(s->thr);
        free(s->box);
        free(s->keep);
    }
    free(s);
}

/* anchor, shape, boxes [, labels] [, indices]: as DALI's, the labels output follows the input */
static int rbc_outputs(const sl__args *a) {
    return 3 + (a->num_inputs > 1) + sl__args_bool(a, "output_bbox_indices");
}

/* layout's dims (2 or 3) and, per position, what it holds: 0..2 a start, 3..5 an end, 6..8 an
 * extent, by axis; 0 when it is no permutation of DALI's four */
static int parse_layout(const char *l, int code[2 * MAXD]) {
    static const char *const axes[3] = {"xyz", "XYZ", "WHD"};
    int len = (int)strlen(l), d = len / 2, kind = -1, seen = 0;
    if (len != 4 && len != 6) return 0;
    for (int p = 0; p < len; p++) {
        int c = -1;
        for (int k = 0; k < 3 && c < 0; k++) {
            const char *hit = memchr(axes[k], l[p], (size_t)d);
            if (hit && l[p]) c = 3 * k + (int)(hit - axes[k]);
        }
        if (c < 0 || (seen & (1 << c))) return 0;
        if (c >= 3) {
            if (kind >= 0 && kind != c / 3) return 0; /* ends and extents mixed */
            kind = c / 3;
        }
        seen |= 1 << c;
        code[p] = c;
    }
    return d;
}

static sl_status range_pairs(const sl__args *a, const char *name, float lo_min, bool strict,
                             float (*out)[2], int max_pairs, int *pairs, sl_err *err) {
    const double *v;
    int n = sl__args_floats(a, name, &v);
    if (n != 2 && n != 2 * max_pairs)
        return sl_err_set(err, SL_EINVAL, NAME ": %s must be [min, max]%s (got %d values)", name,
                          max_pairs > 1 ? " or, for 3-D boxes, three such pairs" : "", n);
    for (int k = 0; k < n; k += 2) {
        bool lo_ok = strict ? v[k] > lo_min : v[k] >= lo_min;
        if (!lo_ok || !(v[k + 1] >= v[k]) || !isfinite(v[k + 1]))
            return sl_err_set(err, SL_EINVAL,
                              NAME ": %s must be [min, max] with %g %s min <= max "
                                   "(got [%g, %g])",
                              name, (double)lo_min, strict ? "<" : "<=", v[k], v[k + 1]);
        out[k / 2][0] = (float)v[k];
        out[k / 2][1] = (float)v[k + 1];
    }
    *pairs = n / 2;
    return SL_OK;
}

static sl_status check_layouts(rbc_state *s, sl_err *err) {
    int code[2 * MAXD];
    if (s->layout && !parse_layout(s->layout, code))
        return sl_err_set(err, SL_EINVAL,
                          NAME ": bbox_layout \"%s\" is not a permutation of \"xyXY\", \"xyWH\", "
                               "\"xyzXYZ\" or \"xyzWHD\"",
                          s->layout);
    const char *sl = s->shape_layout;
    if (sl) {
        size_t len = strlen(sl);
        bool ok = len == 2 || len == 3;
        for (size_t k = 0; ok && k < len; k++)
            ok = memchr("WHD", sl[k], len) && !memchr(sl, sl[k], k);
        if (!ok)
            return sl_err_set(
                err, SL_EINVAL,
                NAME ": shape_layout \"%s\" is not a permutation of \"WH\" or \"WHD\"", sl);
        if (!s->crop_given && !s->in_given)
            return sl_err_set(err, SL_EINVAL,
                              NAME ": shape_layout orders crop_shape and input_shape, and neither "
                                   "is given");
    }
    return SL_OK;
}

static sl_status rbc_check_crop(rbc_state *s, const sl__args *a, sl_err *err) {
    bool nc_given = sl__args_given(a, "allow_no_crop");
    s->no_crop = sl__args_bool(a, "allow_no_crop");
    if (!s->crop_given) return SL_OK;
    if (!s->in_given)
        return sl_err_set(err, SL_EINVAL,
                          NAME ": crop_shape needs input_shape (the input's "
                               "extents, to make the boxes relative to the window)");
    static const char *const excl[] = {"aspect_ratio", "scaling"};
    for (int k = 0; k < 2; k++)
        if (sl__args_given(a, excl[k]))
            return sl_err_set(err, SL_EINVAL,
                              NAME ": %s is incompatible with crop_shape (the window's extents)",
                              excl[k]);
    if (nc_given && s->no_crop)
        return sl_err_set(err, SL_EINVAL,
                          NAME ": allow_no_crop=True is incompatible with crop_shape (the window "
                               "has that shape)");
    s->no_crop = false;
    return SL_OK;
}

static sl_status rbc_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    rbc_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    sl_status st = SL_OK;
    s->a = a;
    s->seed = init->seed;
    const double *t;
    s->nthr = sl__args_floats(a, "thresholds", &t);
    const char *tt = sl__args_str(a, "threshold_type");
    s->layout = sl__args_str(a, "bbox_layout");
    s->shape_layout = sl__args_str(a, "shape_layout");
    s->ltrb = sl__args_bool(a, "ltrb");
    s->crop_given = sl__args_given(a, "crop_shape");
    s->in_given = sl__args_given(a, "input_shape");
    if (s->nthr < 1)
        st = sl_err_set(err, SL_EINVAL, NAME ": thresholds needs at least one value");
    else if (!(s->thr = sl__malloc((size_t)s->nthr * sizeof *s->thr, err)))
        st = SL_ENOMEM;
    for (int i = 0; !st && i < s->nthr; i++) {
        if (!(t[i] >= 0 && t[i] <= 1))
            st = sl_err_set(err, SL_EINVAL, NAME ": thresholds must be in [0, 1] (got %g)", t[i]);
        else
            s->thr[i] = (float)t[i];
    }
    if (!st && tt && strcmp(tt, "iou") && strcmp(tt, "overlap"))
        st = sl_err_set(err, SL_EINVAL,
                        NAME ": threshold_type must be \"iou\" or \"overlap\" (got \"%s\")", tt);
    if (!st && s->layout && sl__args_given(a, "ltrb"))
        st = sl_err_set(err, SL_EINVAL,
                        NAME ": ltrb and bbox_layout cannot both be given (bbox_layout replaces "
                             "ltrb)");
    if (!st) st = check_layouts(s, err);
    if (!st) st = range_pairs(a, "aspect_ratio", 0.0f, true, s->ar, 3, &s->nar, err);
    int one;
    if (!st) st = range_pairs(a, "scaling", 0.0f, false, &s->sc, 1, &one, err);
    if (!st && s->sc[1] > 1)
        st = sl_err_set(err, SL_EINVAL, NAME ": scaling must lie within [0, 1] (got [%g, %g])",
                        (double)s->sc[0], (double)s->sc[1]);
    s->attempts = (int)sl__args_int(a, "num_attempts");
    s->total = sl__args_int(a, "total_num_attempts");
    if (!st && s->attempts < 1)
        st = sl_err_set(err, SL_EINVAL, NAME ": num_attempts must be >= 1 (got %d)", s->attempts);
    if (!st && (s->total == 0 || s->total < -1))
        st = sl_err_set(err, SL_EINVAL, NAME ": total_num_attempts must be >= 1 or -1 (got %lld)",
                        (long long)s->total);
    s->prune = sl__args_given(a, "bbox_prune_threshold");
    if (!st && s->prune) {
        double p = sl__args_float(a, "bbox_prune_threshold");
        if (!(p >= 0 && p <= 1))
            st = sl_err_set(err, SL_EINVAL,
                            NAME ": bbox_prune_threshold must be in [0, 1] (got %g)", p);
        s->prune_thr = (float)p;
    }
    if (!st) st = rbc_check_crop(s, a, err);
    s->overlap = tt && !strcmp(tt, "overlap");
    s->all = sl__args_bool(a, "all_boxes_above_threshold");
    s->indices = sl__args_bool(a, "output_bbox_indices");
    if (st) {
        rbc_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

/* ---- geometry: boxes as lo[d], hi[d] ------------------------------------------------------- */

/* the volume of [lo, hi) (0 when an extent is not positive) */
static float volume(const float *lo, const float *hi, int d) {
    float v = 1.0f;
    for (int k = 0; k < d; k++) {
        float e = hi[k] - lo[k];
        if (!(e > 0)) return 0.0f;
        v *= e;
    }
    return v;
}

static float inter_volume(const rbc_win *w, const float *b, int d) {
    float lo[MAXD], hi[MAXD];
    for (int k = 0; k < d; k++) {
        lo[k] = fmaxf(w->lo[k], b[k]);
        hi[k] = fminf(w->hi[k], b[d + k]);
    }
    return volume(lo, hi, d);
}

/* IoU of the window and the box, or the box's share inside the window */
static float metric(const rbc_state *s, const rbc_win *w, const float *b, int d) {
    float in = inter_volume(w, b, d);
    if (in <= 0) return 0.0f;
    float denom =
        s->overlap ? volume(b, b + d, d) : volume(w->lo, w->hi, d) + volume(b, b + d, d) - in;
    return denom > 0 ? in / denom : 0.0f;
}

static bool kept(const rbc_state *s, const rbc_win *w, const float *b, int d) {
    if (s->prune) {
        float in = inter_volume(w, b, d);
        return in > 0 && in / volume(b, b + d, d) >= s->prune_thr;
    }
    for (int k = 0; k < d; k++) {
        float c = (b[k] + b[d + k]) * 0.5f;
        if (!(c >= w->lo[k] && c < w->hi[k])) return false;
    }
    return true;
}

/* the kept boxes' indices into keep; their count */
static int64_t filter(const rbc_state *s, const rbc_sample *x, const rbc_win *w, int64_t *keep) {
    int64_t c = 0;
    for (int64_t k = 0; k < x->n; k++)
        if (kept(s, w, x->box + 2 * x->d * k, x->d)) keep[c++] = k;
    return c;
}

/* the aspect ratio range of axes a < b: x/y, x/z, y/z */
static const float *ar_range(const rbc_state *s, int a, int b) {
    return s->ar[s->nar == 1 ? 0 : a + b - 1];
}

/* Where a range is a single value, makes the extents meet it, axis pairs taken in a random order
 * of the axes, then scales them so that the longest relative extent is what it was. ext: the
 * relative extents; with input_shape the ratios are of absolute extents. */
static void fix_ratios(const rbc_state *s, const rbc_sample *x, sl__rng_philox *r, float *ext) {
    int d = x->d, order[MAXD];
    bool any = false;
    for (int a = 0; a < d; a++)
        for (int b = a + 1; b < d; b++) any = any || ar_range(s, a, b)[0] == ar_range(s, a, b)[1];
    if (!any) return;
    float e[MAXD], before = 0.0f, after = 0.0f;
    for (int k = 0; k < d; k++) {
        order[k] = k;
        before = fmaxf(before, ext[k]);
        e[k] = x->in_given ? ext[k] * (float)x->in[k] : ext[k];
    }
    for (int k = d - 1; k > 0; k--) {
        int j = (int)sl__rng_philox_below(r, (uint64_t)k + 1), t = order[k];
        order[k] = order[j];
        order[j] = t;
    }
    for (int i0 = 0; i0 < d; i0++)
        for (int i1 = i0 + 1; i1 < d; i1++) {
            int d0 = order[i0], d1 = order[i1];
            const float *rg = ar_range(s, d0 < d1 ? d0 : d1, d0 < d1 ? d1 : d0);
            if (rg[0] != rg[1]) continue;
            e[d1] = d1 < d0 ? e[d0] * rg[0] : e[d0] / rg[0]; /* rg: e[lower axis] / e[higher] */
        }
    for (int k = 0; k < d; k++) {
        ext[k] = x->in_given ? e[k] / (float)x->in[k] : e[k];
        after = fmaxf(after, ext[k]);
    }
    for (int k = 0; k < d && after > 0; k++) ext[k] = ext[k] * before / after;
}

static bool ratios_ok(const rbc_state *s, const rbc_sample *x, const float *ext) {
    for (int a = 0; a < x->d; a++)
        for (int b = a + 1; b < x->d; b++) {
            const float *rg = ar_range(s, a, b);
            float ea = x->in_given ? ext[a] * (float)x->in[a] : ext[a];
            float eb = x->in_given ? ext[b] * (float)x->in[b] : ext[b];
            float q = ea / eb;
            bool ok = rg[0] == rg[1] ? fabsf(q - rg[0]) <= 1e-5f * rg[0] : q >= rg[0] && q <= rg[1];
            if (!ok) return false;
        }
    return true;
}

/* Draws one window; false when it has no valid shape. */
static bool make_window(const rbc_state *s, const rbc_sample *x, sl__rng_philox *r, rbc_win *w) {
    int d = x->d;
    if (x->crop_given) {
        for (int k = 0; k < d; k++) {
            double room = x->in[k] - x->crop[k];
            double a = room > 0 ? (double)sl__rng_philox_below(r, (uint64_t)room + 1) : 0.0;
            w->out_lo[k] = (float)a;
            w->out_ext[k] = (float)x->crop[k];
            w->lo[k] = (float)(a / x->in[k]);
            w->ext[k] = (float)(x->crop[k] / x->in[k]);
            w->hi[k] = w->lo[k] + w->ext[k];
        }
        return true;
    }
    float ext[MAXD];
    for (int k = 0; k < d; k++)
        ext[k] = s->sc[0] + (s->sc[1] - s->sc[0]) * (float)sl__rng_philox_uniform(r);
    fix_ratios(s, x, r, ext);
    for (int k = 0; k < d; k++)
        if (!(ext[k] > 0 && ext[k] <= 1)) return false;
    if (!ratios_ok(s, x, ext)) return false;
    for (int k = 0; k < d; k++) {
        float lo = (1.0f - ext[k]) * (float)sl__rng_philox_uniform(r);
        while (lo > 0 && lo + ext[k] > 1.0f) lo = nextafterf(lo, 0.0f);
        w->lo[k] = w->out_lo[k] = lo;
        w->ext[k] = w->out_ext[k] = ext[k];
        w->hi[k] = lo + ext[k];
    }
    return true;
}

/* the whole input: [0, 1) relative, [0, input_shape) absolute with crop_shape */
static void whole(const rbc_sample *x, rbc_win *w) {
    for (int k = 0; k < x->d; k++) {
        w->lo[k] = w->out_lo[k] = 0.0f;
        w->hi[k] = w->ext[k] = 1.0f;
        w->out_ext[k] = x->crop_given ? (float)x->in[k] : 1.0f;
    }
}

/* Draws sample i's window; the kept boxes' indices go to keep[0..*nk). */
static sl_status draw(const rbc_state *s, const rbc_sample *x, const sl__op_io *io, int i,
                      rbc_win *w, int64_t *keep, int64_t *nk, sl_err *err) {
    sl__rng_philox r;
    sl__rng_philox_init(&r, s->seed, (uint64_t)(io->sample_base + i));
    int64_t tried = 0, limit = s->total > 0 ? s->total : UNBOUNDED_LIMIT;
    int options = s->nthr + (s->no_crop ? 1 : 0);
    float best = -1.0f;
    rbc_win cand, best_win;
    bool have_best = false;
    while (tried < limit) {
        int opt = (int)sl__rng_philox_below(&r, (uint64_t)options);
        if (opt == s->nthr) { /* no crop */
            whole(x, w);
            for (int64_t k = 0; k < x->n; k++) keep[k] = k;
            *nk = x->n;
            return SL_OK;
        }
        for (int at = 0; at < s->attempts && tried < limit; at++, tried++) {
            if (!make_window(s, x, &r, &cand)) continue;
            if (x->n == 0) {
                *w = cand;
                *nk = 0;
                return SL_OK;
            }
            float m = s->all ? 2.0f : -1.0f;
            for (int64_t k = 0; k < x->n; k++) {
                float v = metric(s, &cand, x->box + 2 * x->d * k, x->d);
                m = s->all ? fminf(m, v) : fmaxf(m, v);
            }
            bool valid = m >= s->thr[opt];
            if (m <= best && !valid) continue;
            best = m;
            best_win = cand;
            have_best = true;
            if (valid && (*nk = filter(s, x, &cand, keep)) > 0) {
                *w = cand;
                return SL_OK;
            }
        }
    }
    if (s->total < 0)
        return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                           "no window met a threshold in %d attempts (an impossible threshold? "
                           "allow_no_crop=True or total_num_attempts bound the search)",
                           UNBOUNDED_LIMIT);
    sl__log(SL_LOG_WARN,
            NAME ": sample %d: could not find a valid cropping window to satisfy the specified "
                 "requirements (attempted %lld times); using the best cropping window so far "
                 "(best_metric=%g)",
            i, (long long)tried, (double)(have_best ? best : 0.0f));
    if (have_best)
        *w = best_win;
    else
        whole(x, w); /* no window of a valid shape at all: the whole input */
    *nk = filter(s, x, w, keep);
    return SL_OK;
}

/* ---- setup ---------------------------------------------------------------------------------- */

/* The batch's box dims and the layout's codes; checks the boxes' and labels' shapes. */
static sl_status check_inputs(const rbc_state *s, const sl__op_io *io, int *dims,
                              int code[2 * MAXD], sl_err *err) {
    const sl_tlist *bx = io->in[0], *lb = io->num_inputs > 1 ? io->in[1] : NULL;
    if (bx->dtype != SL_DTYPE_F32 || bx->ndim != 2)
        return sl_err_set(err, SL_EINVAL,
                          NAME ": boxes must be float (N, 4) or (N, 6) (got %s, %d dims)",
                          sl_dtype_name(bx->dtype), bx->ndim);
    if (lb && (lb->dtype != SL_DTYPE_I32 || lb->ndim < 1))
        return sl_err_set(err, SL_EINVAL, NAME ": labels must be int32 (N, ...) (got %s, %d dims)",
                          sl_dtype_name(lb->dtype), lb->ndim);
    int d = s->layout ? parse_layout(s->layout, code) : 0;
    for (int i = 0; i < io->batch; i++) {
        const int64_t *bs = sl_tlist_shape(bx, i);
        if (d == 0 && (bs[1] == 4 || bs[1] == 6)) d = (int)bs[1] / 2;
        if (bs[1] != 2 * d)
            return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                               "boxes are (%lld, %lld); expected (N, %d)%s", (long long)bs[0],
                               (long long)bs[1], d ? 2 * d : 4,
                               s->layout ? " for bbox_layout"
                               : d       ? " as the batch's first sample"
                                         : " or (N, 6)");
        const int64_t *ls = lb ? sl_tlist_shape(lb, i) : NULL;
        if (ls && ls[0] != bs[0])
            return sl__op_fail(err, SL_EINVAL, io, i, NAME, "%lld boxes but %lld labels",
                               (long long)bs[0], (long long)ls[0]);
    }
    if (d == 0) d = 2; /* an empty batch */
    if (!s->layout)
        parse_layout(s->ltrb ? (d == 2 ? "xyXY" : "xyzXYZ") : (d == 2 ? "xyWH" : "xyzWHD"), code);
    if (s->nar == 3 && d == 2)
        return sl_err_set(err, SL_EINVAL,
                          NAME ": aspect_ratio has three ranges (x/y, x/z, y/z) but the boxes are "
                               "2-D: give one [min, max]");
    if (s->shape_layout && (int)strlen(s->shape_layout) != d)
        return sl_err_set(err, SL_EINVAL,
                          NAME ": shape_layout \"%s\" has %d axes but the boxes "
                               "are %d-D",
                          s->shape_layout, (int)strlen(s->shape_layout), d);
    *dims = d;
    return SL_OK;
}

/* Sample i's crop_shape and input_shape, in x, y, (z) order. */
static sl_status sample_shapes(const rbc_state *s, const sl__op_io *io, int i, rbc_sample *x,
                               sl_err *err) {
    static const char *const names[2] = {"input_shape", "crop_shape"};
    x->in_given = s->in_given;
    x->crop_given = s->crop_given;
    for (int q = 0; q < 2; q++) {
        if (!(q ? s->crop_given : s->in_given)) continue;
        int64_t v[MAXD + 1];
        int n;
        SL_TRY(sl__args_sample_ints(s->a, io, NAME, names[q], i, v, MAXD + 1, &n, err));
        if (n != x->d)
            return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                               "%s has %d values but the boxes are "
                               "%d-D",
                               names[q], n, x->d);
        for (int k = 0; k < x->d; k++) {
            int at = k;
            if (s->shape_layout)
                at = (int)((const char *)strchr(s->shape_layout, "WHD"[k]) - s->shape_layout);
            if (v[at] <= 0)
                return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                                   "%s must be positive (got %lld "
                                   "at %d)",
                                   names[q], (long long)v[at], at);
            (q ? x->crop : x->in)[k] = (double)v[at];
        }
    }
    return SL_OK;
}

/* box b (2d values in the layout's order) as lo, hi */
static void read_box(const int *code, int d, const float *b, float *out) {
    float ext[MAXD] = {0};
    bool by_ext = false;
    for (int p = 0; p < 2 * d; p++) {
        int c = code[p];
        if (c < 3)
            out[c] = b[p];
        else if (c < 6)
            out[d + c - 3] = b[p];
        else {
            ext[c - 6] = b[p];
            by_ext = true;
        }
    }
    for (int k = 0; by_ext && k < d; k++) out[d + k] = out[k] + ext[k];
}

/* box b (lo, hi) relative to the window, clipped, written in the layout's order */
static void write_box(const int *code, int d, const rbc_win *w, const float *b, float *out) {
    float lo[MAXD], hi[MAXD];
    for (int k = 0; k < d; k++) {
        lo[k] = fminf(fmaxf((fmaxf(b[k], w->lo[k]) - w->lo[k]) / w->ext[k], 0.0f), 1.0f);
        hi[k] = fminf(fmaxf((fminf(b[d + k], w->hi[k]) - w->lo[k]) / w->ext[k], 0.0f), 1.0f);
    }
    for (int p = 0; p < 2 * d; p++) {
        int c = code[p];
        out[p] = c < 3 ? lo[c] : c < 6 ? hi[c - 3] : hi[c - 6] - lo[c - 6];
    }
}

static sl_status grow(void **buf, int64_t *cap, int64_t need, size_t elem, sl_err *err) {
    if (need <= *cap) return SL_OK;
    void *p = realloc(*buf, (size_t)need * elem);
    if (!p) return sl_err_set(err, SL_ENOMEM, NAME ": out of memory (%lld items)", (long long)need);
    *buf = p;
    *cap = need;
    return SL_OK;
}

/* An output of n samples: (shape0[i], inner...) of dtype, with inner rank-1 dims. */
static sl_status alloc_out(sl_tlist *t, int n, sl_dtype dt, int ndim, const int64_t *first,
                           const int64_t *inner, int64_t *shapes, sl_err *err) {
    for (int i = 0; i < n; i++) {
        shapes[(size_t)i * (size_t)ndim] = first[i];
        for (int k = 1; k < ndim; k++) shapes[(size_t)i * (size_t)ndim + (size_t)k] = inner[k - 1];
    }
    SL_TRY(sl_tlist_reset(t, n, dt, ndim, sl_cpu(), err));
    return sl_tlist_alloc(t, shapes, err);
}

/* anchor, shape, boxes [, labels] [, indices] from the windows and the kept boxes */
static sl_status write_outputs(const rbc_state *s, sl__op_io *io, int d, const int *code,
                               const rbc_win *wins, const int64_t *nk, const int64_t *off,
                               int64_t *shapes, sl_err *err) {
    const sl_tlist *lb = io->num_inputs > 1 ? io->in[1] : NULL;
    int n = io->batch;
    int64_t *dims = shapes + (size_t)n * SL_MAX_DIMS, inner[1] = {2 * d};
    for (int i = 0; i < n; i++) dims[i] = d;
    for (int o = 0; o < 2; o++) {
        SL_TRY(alloc_out(io->out[o], n, SL_DTYPE_F32, 1, dims, NULL, shapes, err));
        for (int i = 0; i < n; i++)
            memcpy(io->out[o]->data[i], o ? wins[i].out_ext : wins[i].out_lo, (size_t)d * 4);
    }
    SL_TRY(alloc_out(io->out[2], n, SL_DTYPE_F32, 2, nk, inner, shapes, err));
    for (int i = 0; i < n; i++)
        for (int64_t k = 0; k < nk[i]; k++)
            write_box(code, d, &wins[i], s->box + 2 * d * s->keep[off[i] + k],
                      (float *)io->out[2]->data[i] + 2 * d * k);
    int next = 3;
    if (lb) { /* the labels' shapes, their first extent the kept boxes' */
        sl_tlist *t = io->out[next++];
        for (int i = 0; i < n; i++) {
            memcpy(shapes + (size_t)i * (size_t)lb->ndim, sl_tlist_shape(lb, i),
                   (size_t)lb->ndim * sizeof *shapes);
            shapes[(size_t)i * (size_t)lb->ndim] = nk[i];
        }
        SL_TRY(sl_tlist_reset(t, n, SL_DTYPE_I32, lb->ndim, sl_cpu(), err));
        SL_TRY(sl_tlist_alloc(t, shapes, err));
        for (int i = 0; i < n; i++) {
            const int64_t *ls = sl_tlist_shape(lb, i);
            int64_t stride = 1;
            for (int k = 1; k < lb->ndim; k++) stride *= ls[k];
            for (int64_t k = 0; k < nk[i]; k++)
                memcpy((int32_t *)t->data[i] + stride * k,
                       (const int32_t *)lb->data[i] + stride * (s->keep[off[i] + k] - off[i]),
                       (size_t)stride * sizeof(int32_t));
        }
    }
    if (s->indices) {
        sl_tlist *t = io->out[next];
        SL_TRY(alloc_out(t, n, SL_DTYPE_I32, 1, nk, NULL, shapes, err));
        for (int i = 0; i < n; i++)
            for (int64_t k = 0; k < nk[i]; k++)
                ((int32_t *)t->data[i])[k] = (int32_t)(s->keep[off[i] + k] - off[i]);
    }
    for (int o = 0; o < io->num_outputs; o++) io->out[o]->layout[0] = 0;
    return SL_OK;
}

static sl_status rbc_setup(void *state, sl__op_io *io, sl_err *err) {
    rbc_state *s = state;
    int d = 2, code[2 * MAXD] = {0};
    SL_TRY(check_inputs(s, io, &d, code, err));
    const sl_tlist *bx = io->in[0];
    int b = io->batch > 0 ? io->batch : 1;
    int64_t total = 0;
    for (int i = 0; i < io->batch; i++) total += sl_tlist_shape(bx, i)[0];
    int64_t need = total > 0 ? total : 1;
    SL_TRY(grow((void **)&s->box, &s->box_cap, need * 2 * d, sizeof *s->box, err));
    SL_TRY(grow((void **)&s->keep, &s->keep_cap, need, sizeof *s->keep, err));
    rbc_win *wins = sl__malloc((size_t)b * sizeof *wins, err);
    int64_t *nk = sl__malloc((size_t)b * (2 + 2 * SL_MAX_DIMS) * sizeof *nk, err);
    sl_status st = wins && nk ? SL_OK : SL_ENOMEM;
    int64_t *off = nk ? nk + b : NULL, *shapes = nk ? nk + 2 * b : NULL;
    s->seed = io->seed ? io->seed : s->seed;
    int64_t at = 0;
    for (int i = 0; !st && i < io->batch; i++) {
        rbc_sample x = {.d = d, .n = sl_tlist_shape(bx, i)[0], .box = s->box + 2 * d * at};
        off[i] = at;
        for (int64_t k = 0; k < x.n; k++)
            read_box(code, d, (const float *)bx->data[i] + 2 * d * k, s->box + 2 * d * (at + k));
        st = sample_shapes(s, io, i, &x, err);
        if (!st) st = draw(s, &x, io, i, &wins[i], s->keep + at, &nk[i], err);
        for (int64_t k = 0; !st && k < nk[i]; k++) s->keep[at + k] += at; /* batch-wide */
        at += x.n;
    }
    if (!st) st = write_outputs(s, io, d, code, wins, nk, off, shapes, err);
    free(wins);
    free(nk);
    return st;
}

const sl__op_def sl__random_bbox_crop_op = {
    .name = "random_bbox_crop",
    .doc = "Draws a random crop window that keeps a sample's 2-D or 3-D boxes: anchor (D,), shape "
           "(D,), the kept boxes (K, 2D) relative to it, the kept labels when labels are given, "
           "and their indices with output_bbox_indices.",
    .min_inputs = 1,
    .max_inputs = 2,
    .args = rbc_args,
    .devices = SL_OPDEV_CPU,
    .flags = SL_OPF_RANDOM,
    .num_outputs = rbc_outputs,
    .create = rbc_create,
    .setup = rbc_setup,
    .destroy = rbc_destroy,
};
