/* SPDX-License-Identifier: Apache-2.0 */
/* segmentation.random_object_bbox (CPU), as DALI's: the bounding box of an object picked at random
 * from a labelled mask (integers or bool, 1..6 dimensions). With probability foreground_prob a
 * class is drawn (uniformly among the labels present other than background, or by class_weights
 * over classes), its pixels are split into connected blobs (neighbours along an axis, DALI's
 * connectivity), the blobs smaller than threshold on some axis are dropped, and one of the rest
 * (of the k_largest by volume, when given) is drawn; a class without a blob left is set aside and
 * another drawn. With ignore_class the blobs of every class are drawn from together. Otherwise, or
 * when nothing is left, the box is the whole input and the class the background. Outputs int32: the
 * box as anchor and shape (format "anchor_shape"), start and end ("start_end") or both in one
 * ("box"), and with output_class the class label, a scalar. Draws come from a Philox stream per
 * sample (docs/design.md), so they differ from DALI's but not with the thread count. The blobs are
 * found again for every sample: cache_objects is accepted and changes nothing but time. */
#include "operator/argin.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"
#include "core/rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define OP   "segmentation.random_object_bbox"
#define MAXD 6

static const sl__arg_schema rob_args[] = {
    {"format", SL_ARG_STR, "\"anchor_shape\"", "\"anchor_shape\", \"start_end\" or \"box\"", 0,
     NULL},
    {"output_class", SL_ARG_BOOL, "False", "also output the picked class (background if none)", 0,
     NULL},
    {"ignore_class", SL_ARG_BOOL, "False",
     "draw among the blobs of every class alike (not with classes, class_weights, output_class)", 0,
     NULL},
    {"foreground_prob", SL_ARG_FLOAT, "1.0", "probability of picking an object's box",
     SL_ARGF_PER_SAMPLE, NULL},
    {"classes", SL_ARG_INTS, "None", "the labels that are foreground (default: all but background)",
     SL_ARGF_PER_SAMPLE, NULL},
    {"background", SL_ARG_INT, "0", "the background label (default 0, or one not in classes)",
     SL_ARGF_PER_SAMPLE, NULL},
    {"class_weights", SL_ARG_FLOATS, "None",
     "relative probabilities of the classes (default classes: 1, 2, ...)", SL_ARGF_PER_SAMPLE,
     NULL},
    {"k_largest", SL_ARG_INT, "None", "draw only among the k largest blobs by volume", 0, NULL},
    {"threshold", SL_ARG_INTS, "None", "per axis, the least extent of a blob drawn",
     SL_ARGF_PER_SAMPLE, NULL},
    {"cache_objects", SL_ARG_BOOL, "False", "accepted; no effect (the blobs are found every time)",
     0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

enum { F_ANCHOR_SHAPE, F_START_END, F_BOX };

typedef struct rob_state {
    uint64_t seed;
    int format;
    bool out_class, ignore;
    int64_t k_largest; /* 0: all */
    double fg_prob;
    int node_fg, node_classes, node_bg, node_weights, node_thr;
    bool has_classes, has_weights, has_thr, bg_given;
    int64_t bg;
    const int64_t *classes;
    int nclasses;
    const double *weights;
    int nweights;
    const int64_t *thr;
    int nthr;
} rob_state;

static int rob_outputs(const sl__args *a) {
    const char *f = sl__args_str(a, "format");
    return (f && !strcmp(f, "box") ? 1 : 2) + sl__args_bool(a, "output_class");
}

static sl_status rob_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    rob_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->seed = init->seed;
    const char *f = sl__args_str(a, "format");
    sl_status st = SL_OK;
    if (f && !strcmp(f, "anchor_shape"))
        s->format = F_ANCHOR_SHAPE;
    else if (f && !strcmp(f, "start_end"))
        s->format = F_START_END;
    else if (f && !strcmp(f, "box"))
        s->format = F_BOX;
    else
        st = sl_err_set(err, SL_EINVAL,
                        OP ": format must be \"anchor_shape\", \"start_end\" or \"box\" (got %s)",
                        f ? f : "None");
    s->out_class = sl__args_bool(a, "output_class");
    s->ignore = sl__args_bool(a, "ignore_class");
    s->fg_prob = sl__args_float(a, "foreground_prob");
    s->node_fg = sl__args_node(a, "foreground_prob");
    s->node_classes = sl__args_node(a, "classes");
    s->node_bg = sl__args_node(a, "background");
    s->node_weights = sl__args_node(a, "class_weights");
    s->node_thr = sl__args_node(a, "threshold");
    s->has_classes = s->node_classes >= 0 || sl__args_get(a, "classes")->kind != SL_VAL_NONE;
    s->has_weights = s->node_weights >= 0 || sl__args_get(a, "class_weights")->kind != SL_VAL_NONE;
    s->has_thr = s->node_thr >= 0 || sl__args_get(a, "threshold")->kind != SL_VAL_NONE;
    s->bg_given = sl__args_given(a, "background");
    s->bg = sl__args_int(a, "background");
    if (s->has_classes && s->node_classes < 0)
        s->nclasses = sl__args_ints(a, "classes", &s->classes);
    if (s->has_weights && s->node_weights < 0)
        s->nweights = sl__args_floats(a, "class_weights", &s->weights);
    if (s->has_thr && s->node_thr < 0) s->nthr = sl__args_ints(a, "threshold", &s->thr);
    if (sl__args_get(a, "k_largest")->kind != SL_VAL_NONE) {
        s->k_largest = sl__args_int(a, "k_largest");
        if (!st && s->k_largest < 1)
            st = sl_err_set(err, SL_EINVAL, OP ": ``k_largest`` must be at least 1; got %lld",
                            (long long)s->k_largest);
    }
    if (!st && s->ignore && (s->has_classes || s->has_weights || s->out_class))
        st = sl_err_set(err, SL_EINVAL,
                        OP ": Class-related arguments (classes, class_weights, output_class) "
                           "cannot be used when ``ignore_class`` is True");
    if (st) {
        free(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

static bool mask_type(sl_dtype t) {
    return t == SL_DTYPE_BOOL || t == SL_DTYPE_U8 || t == SL_DTYPE_I8 || t == SL_DTYPE_U16 ||
           t == SL_DTYPE_I16 || t == SL_DTYPE_U32 || t == SL_DTYPE_I32;
}

static sl_status rob_setup(void *state, sl__op_io *io, sl_err *err) {
    rob_state *s = state;
    const sl_tlist *in = io->in[0];
    if (!mask_type(in->dtype))
        return sl_err_set(err, SL_EINVAL,
                          OP ": a mask of %s is not supported (bool or integers "
                             "up to 32 bits)",
                          sl_dtype_name(in->dtype));
    if (in->ndim < 1 || in->ndim > MAXD)
        return sl_err_set(err, SL_EINVAL, OP ": the mask has %d dimensions, 1..6 are supported",
                          in->ndim);
    int n = s->format == F_BOX ? 2 * in->ndim : in->ndim, nbox = s->format == F_BOX ? 1 : 2;
    int64_t *sh = sl__malloc((size_t)(io->batch > 0 ? io->batch : 1) * sizeof *sh, err);
    if (!sh) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0; i < io->batch; i++) sh[i] = n;
    for (int k = 0; !st && k < nbox; k++) {
        st = sl_tlist_reset(io->out[k], io->batch, SL_DTYPE_I32, 1, sl_cpu(), err);
        if (!st) st = sl_tlist_alloc(io->out[k], sh, err);
    }
    if (!st && s->out_class) {
        st = sl_tlist_reset(io->out[nbox], io->batch, SL_DTYPE_I32, 0, sl_cpu(), err);
        if (!st) st = sl_tlist_alloc(io->out[nbox], sh, err);
    }
    free(sh);
    return st;
}

/* element k of mask sample p as int64 */
static int64_t at(const void *p, sl_dtype t, int64_t k) {
    switch (t) {
    case SL_DTYPE_BOOL:
    case SL_DTYPE_U8:
        return ((const uint8_t *)p)[k];
    case SL_DTYPE_I8:
        return ((const int8_t *)p)[k];
    case SL_DTYPE_U16:
        return ((const uint16_t *)p)[k];
    case SL_DTYPE_I16:
        return ((const int16_t *)p)[k];
    case SL_DTYPE_U32:
        return ((const uint32_t *)p)[k];
    default:
        return ((const int32_t *)p)[k];
    }
}

typedef struct box {
    int64_t lo[MAXD], hi[MAXD], vol, idx;
} box;

/* one sample's mask and scratch */
typedef struct sample {
    const void *p;
    sl_dtype t;
    int nd;
    int64_t shape[MAXD], stride[MAXD], total;
    int64_t *parent, *id; /* total each */
    box *boxes;
    int64_t nbox, cap;
} sample;

static int64_t root(int64_t *p, int64_t x) {
    while (p[x] != x) {
        p[x] = p[p[x]];
        x = p[x];
    }
    return x;
}

/* the blobs of the pixels of class cls (any: of every class but bg, a blob one class), their boxes
 * in the order of their first pixel */
static sl_status find_blobs(sample *m, bool any, int64_t cls, int64_t bg, sl_err *err) {
    int64_t *p = m->parent;
    m->nbox = 0;
    for (int64_t k = 0; k < m->total; k++) {
        int64_t v = at(m->p, m->t, k);
        if (any ? v == bg : v != cls) {
            p[k] = -1;
            continue;
        }
        p[k] = k;
        for (int d = 0; d < m->nd; d++) {
            if ((k / m->stride[d]) % m->shape[d] == 0) continue;
            int64_t nb = k - m->stride[d];
            if (p[nb] < 0 || (any && at(m->p, m->t, nb) != v)) continue;
            int64_t a = root(p, k), b = root(p, nb);
            if (a != b) p[a > b ? a : b] = a < b ? a : b; /* the root is the first pixel */
        }
    }
    for (int64_t k = 0; k < m->total; k++) {
        if (p[k] < 0) continue;
        int64_t r = root(p, k), b;
        if (r == k) {
            if (m->nbox == m->cap) {
                int64_t c = m->cap ? 2 * m->cap : 64;
                box *q = realloc(m->boxes, (size_t)c * sizeof *q);
                if (!q) return sl_err_set(err, SL_ENOMEM, OP ": out of memory");
                m->boxes = q;
                m->cap = c;
            }
            b = m->id[k] = m->nbox++;
            for (int d = 0; d < m->nd; d++) m->boxes[b].lo[d] = INT64_MAX, m->boxes[b].hi[d] = 0;
            m->boxes[b].idx = b;
        } else {
            b = m->id[k] = m->id[r];
        }
        box *q = &m->boxes[b];
        for (int d = 0; d < m->nd; d++) {
            int64_t c = (k / m->stride[d]) % m->shape[d];
            if (c < q->lo[d]) q->lo[d] = c;
            if (c + 1 > q->hi[d]) q->hi[d] = c + 1;
        }
    }
    return SL_OK;
}

static int cmp_vol(const void *a, const void *b) {
    const box *x = a, *y = b;
    if (x->vol != y->vol) return x->vol > y->vol ? -1 : 1; /* larger first */
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* a box drawn among the blobs that meet the threshold (of the k largest): its index, or -1 */
static int64_t pick_box(const rob_state *s, sample *m, const int64_t *thr, sl__rng_philox *r) {
    int64_t n = 0;
    for (int64_t b = 0; b < m->nbox; b++) {
        box q = m->boxes[b];
        bool ok = true;
        q.vol = 1;
        for (int d = 0; d < m->nd; d++) {
            if (thr && q.hi[d] - q.lo[d] < thr[d]) ok = false;
            q.vol *= q.hi[d] - q.lo[d];
        }
        if (ok) m->boxes[n++] = q; /* stable, as DALI's remove_if */
    }
    if (n == 0) return -1;
    if (s->k_largest > 0 && s->k_largest < n) {
        for (int64_t b = 0; b < n; b++) m->boxes[b].idx = b;
        qsort(m->boxes, (size_t)n, sizeof *m->boxes, cmp_vol);
        n = s->k_largest;
    }
    return (int64_t)sl__rng_philox_below(r, (uint64_t)n);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* sample i's list argument (literal or per sample) into out (malloc'd): its count, or -1 */
static int64_t list_of(const sl__op_io *io, int node, int i, const int64_t *ilit,
                       const double *flit, int nlit, double **out) {
    int64_t n = node >= 0 ? sl__argin_values(io, node, i, NULL, 0) : nlit;
    if (n < 0) return -1;
    *out = malloc((size_t)(n > 0 ? n : 1) * sizeof **out);
    if (!*out) return -1;
    if (node >= 0)
        sl__argin_values(io, node, i, *out, (int)n);
    else
        for (int64_t k = 0; k < n; k++) (*out)[k] = ilit ? (double)ilit[k] : flit[k];
    return n;
}

/* a per-sample value that is a whole number an int64_t holds */
static bool whole(double x) {
    return x == floor(x) && fabs(x) < 0x1p62;
}

/* the classes and weights of sample i (DALI's rules for background, classes, weights), the labels
 * of the mask other than background given weight only when present; *bg set */
static sl_status class_table(const rob_state *s, const sl__op_io *io, int i, const sample *m,
                             int64_t **cls, double **w, int64_t *n, int64_t *bg, sl_err *err) {
    double v = (double)s->bg, *c = NULL, *wt = NULL;
    if (s->node_bg >= 0) sl__argin_values(io, s->node_bg, i, &v, 1);
    if (!whole(v)) /* (a per-sample value: casting NaN or 1e300 is undefined) */
        return sl__op_fail(err, SL_EINVAL, io, i, OP, "background %g is not a label", v);
    *bg = (int64_t)v;
    int64_t nc = 0, nw = 0;
    sl_status st = SL_OK;
    if (s->has_classes &&
        (nc = list_of(io, s->node_classes, i, s->classes, NULL, s->nclasses, &c)) < 0)
        st = sl_err_set(err, SL_ENOMEM, OP ": out of memory");
    for (int64_t k = 0; !st && k < nc; k++)
        if (!whole(c[k]))
            st = sl__op_fail(err, SL_EINVAL, io, i, OP, "classes[%lld] is %g, not a label",
                             (long long)k, c[k]);
    if (!st && s->has_weights &&
        (nw = list_of(io, s->node_weights, i, NULL, s->weights, s->nweights, &wt)) < 0)
        st = sl_err_set(err, SL_ENOMEM, OP ": out of memory");
    if (!st && s->has_classes && s->has_weights && nc != nw)
        st = sl__op_fail(err, SL_EINVAL, io, i, OP,
                         "If both ``classes`` and ``class_weights`` are provided, their shapes "
                         "must match. Got:\n  classes.shape = {%lld}\n  weights.shape = {%lld}",
                         (long long)nc, (long long)nw);
    for (int64_t k = 0; !st && k < nw; k++)
        if (!(wt[k] >= 0) || !isfinite(wt[k]))
            st = sl__op_fail(err, SL_EINVAL, io, i, OP, "class_weights[%lld] is %g, not >= 0",
                             (long long)k, wt[k]);
    /* the labels present, sorted, without background */
    int64_t *present = NULL, np = 0;
    if (!st && !(present = malloc((size_t)(m->total > 0 ? m->total : 1) * sizeof *present)))
        st = sl_err_set(err, SL_ENOMEM, OP ": out of memory");
    for (int64_t k = 0; !st && k < m->total; k++) present[np++] = at(m->p, m->t, k);
    if (!st) {
        qsort(present, (size_t)np, sizeof *present, cmp_i64);
        int64_t u = 0;
        for (int64_t k = 0; k < np; k++)
            if (present[k] != *bg && (u == 0 || present[k] != present[u - 1]))
                present[u++] = present[k];
        np = u;
    }
    if (!st && s->has_classes) {
        int64_t lo = 0;
        bool clash = false;
        for (int64_t k = 0; k < nc; k++) {
            if (k == 0 || (int64_t)c[k] < lo) lo = (int64_t)c[k];
            if ((int64_t)c[k] == *bg) clash = true;
        }
        if (clash && (s->bg_given || s->node_bg >= 0))
            st = sl__op_fail(err, SL_EINVAL, io, i, OP,
                             "Class label %lld coincides with background label", (long long)*bg);
        else if (clash) { /* as DALI: another background, below the classes: the least class
                             minus 1, in int32 (wrapping), then down past every class it meets */
            int32_t b = (int32_t)(uint32_t)((uint32_t)(int32_t)lo - 1u);
            for (bool hit = true; hit;) {
                hit = false;
                for (int64_t k = 0; k < nc && !hit; k++) hit = (int64_t)c[k] == (int64_t)b;
                if (hit) b = (int32_t)(uint32_t)((uint32_t)b - 1u);
            }
            *bg = b;
        }
    }
    int64_t count = s->has_classes ? nc : s->has_weights ? nw : np;
    if (!st && (!(*cls = malloc((size_t)(count > 0 ? count : 1) * sizeof **cls)) ||
                !(*w = malloc((size_t)(count > 0 ? count : 1) * sizeof **w))))
        st = sl_err_set(err, SL_ENOMEM, OP ": out of memory");
    for (int64_t k = 0, next = 0; !st && k < count; k++) {
        if (s->has_classes) {
            (*cls)[k] = (int64_t)c[k];
        } else if (s->has_weights) { /* 0, 1, 2, ... skipping the background */
            if (next == *bg) next++;
            (*cls)[k] = next++;
        } else {
            (*cls)[k] = present[k];
        }
        (*w)[k] = s->has_weights ? wt[k] : 1.0;
        if (!bsearch(&(*cls)[k], present, (size_t)np, sizeof *present, cmp_i64)) (*w)[k] = 0;
    }
    *n = count;
    free(c);
    free(wt);
    free(present);
    return st;
}

/* writes the box [lo, hi) (n axes) of sample i in the op's format */
static void store(const rob_state *s, sl__op_io *io, int i, int nd, const int64_t *lo,
                  const int64_t *hi) {
    int32_t *a = io->out[0]->data[i], *b = s->format == F_BOX ? a + nd : io->out[1]->data[i];
    for (int d = 0; d < nd; d++) {
        a[d] = (int32_t)lo[d];
        b[d] = (int32_t)(s->format == F_ANCHOR_SHAPE ? hi[d] - lo[d] : hi[d]);
    }
}

static sl_status rob_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    rob_state *s = state;
    (void)worker;
    const sl_tlist *in = io->in[0];
    sample m;
    memset(&m, 0, sizeof m);
    m.p = in->data[i];
    m.t = in->dtype;
    m.nd = in->ndim;
    m.total = 1;
    for (int d = m.nd - 1; d >= 0; d--) {
        m.shape[d] = in->shapes[(size_t)i * m.nd + d];
        m.stride[d] = m.total;
        m.total *= m.shape[d];
    }
    int64_t zero[MAXD] = {0}, *cls = NULL, ncls = 0, bg = s->bg, label;
    double *w = NULL, fg = s->fg_prob, thr_d[MAXD];
    int64_t thr[MAXD];
    bool has_thr = s->has_thr;
    sl__rng_philox r;
    sl__rng_philox_init(&r, s->seed, (uint64_t)(io->sample_base + i));
    if (s->node_fg >= 0) sl__argin_values(io, s->node_fg, i, &fg, 1);
    if (has_thr) {
        int n = s->node_thr >= 0 ? sl__argin_values(io, s->node_thr, i, thr_d, MAXD) : s->nthr;
        /* one value stands for every axis (DALI's rule) */
        if (n != m.nd && n != 1)
            return sl__op_fail(err, SL_EINVAL, io, i, OP,
                               "Argument \"threshold\" expected shape %d but got %d values, which "
                               "can't be interpreted as the expected shape.",
                               m.nd, n);
        for (int d = 0; d < m.nd; d++) {
            int at = n == 1 ? 0 : d;
            if (s->node_thr >= 0 && !whole(thr_d[at]))
                return sl__op_fail(err, SL_EINVAL, io, i, OP,
                                   "threshold[%d] is %g, not a whole number", at, thr_d[at]);
            thr[d] = s->node_thr >= 0 ? (int64_t)thr_d[at] : s->thr[at];
        }
    }
    bool picked = false;
    sl_status st = SL_OK;
    if (s->node_bg >= 0) {
        double v;
        if (sl__argin_values(io, s->node_bg, i, &v, 1) == 1) {
            if (!whole(v)) /* (casting inf or NaN is undefined) */
                return sl__op_fail(err, SL_EINVAL, io, i, OP, "background %g is not a label", v);
            bg = (int64_t)v;
        }
    }
    label = bg;
    if (sl__rng_philox_uniform(&r) < fg && m.total > 0) {
        if (!(m.parent = malloc((size_t)m.total * sizeof *m.parent)) ||
            !(m.id = malloc((size_t)m.total * sizeof *m.id)))
            st = sl_err_set(err, SL_ENOMEM, OP ": out of memory");
        if (!st && s->ignore) {
            st = find_blobs(&m, true, 0, bg, err);
            int64_t b = st ? -1 : pick_box(s, &m, has_thr ? thr : NULL, &r);
            if (b >= 0) store(s, io, i, m.nd, m.boxes[b].lo, m.boxes[b].hi), picked = true;
        } else if (!st) {
            st = class_table(s, io, i, &m, &cls, &w, &ncls, &bg, err);
            label = bg;
            while (!st && !picked) {
                double total = 0;
                for (int64_t k = 0; k < ncls; k++) total += w[k];
                if (!(total > 0)) break;
                double x = sl__rng_philox_uniform(&r) * total, acc = 0;
                int64_t k = 0;
                for (; k < ncls; k++) {
                    acc += w[k];
                    if (w[k] > 0 && x < acc) break;
                }
                if (k == ncls) /* rounding at the top: the last class that has weight */
                    for (k = ncls - 1; w[k] <= 0; k--) {
                    }
                st = find_blobs(&m, false, cls[k], bg, err);
                int64_t b = st ? -1 : pick_box(s, &m, has_thr ? thr : NULL, &r);
                if (b >= 0) {
                    store(s, io, i, m.nd, m.boxes[b].lo, m.boxes[b].hi);
                    picked = true;
                    label = cls[k];
                } else {
                    w[k] = 0; /* no blob fits: set the class aside */
                }
            }
        }
    } else if (!s->ignore && s->out_class) { /* the background by DALI's rules */
        st = class_table(s, io, i, &m, &cls, &w, &ncls, &bg, err);
        label = bg;
    }
    if (!st && !picked) store(s, io, i, m.nd, zero, m.shape);
    if (!st && s->out_class)
        *(int32_t *)io->out[s->format == F_BOX ? 1 : 2]->data[i] = (int32_t)label;
    free(m.parent);
    free(m.id);
    free(m.boxes);
    free(cls);
    free(w);
    return st;
}

const sl__op_def sl__random_object_bbox_op = {
    .name = "segmentation.random_object_bbox",
    .doc = "The box (int32) of an object drawn from a labelled mask: a class drawn (classes, "
           "class_weights), one of its connected blobs (threshold, k_largest); the whole input "
           "with probability 1 - foreground_prob or when there is none. Outputs by format: "
           "anchor and shape, start and end, or one box; with output_class the class.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = rob_args,
    .devices = SL_OPDEV_CPU,
    .flags = SL_OPF_RANDOM,
    .num_outputs = rob_outputs,
    .create = rob_create,
    .setup = rob_setup,
    .run_cpu = rob_run_cpu,
    .destroy = free,
};
