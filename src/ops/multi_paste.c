/* SPDX-License-Identifier: Apache-2.0 */
/* multi_paste (CPU), as DALI's: each output sample is a canvas of output_size (H, W) and the
 * input's channels, zero-filled, onto which regions of HWC images are pasted in order, a later
 * paste covering an earlier one. With in_ids, one input: sample i gets the samples in_ids[i] of
 * the batch; without, several inputs: sample i gets sample i of each input, in the inputs' order.
 * Each paste k takes the region at in_anchors[k] (default 0, 0) of shapes[k] (default: the rest of
 * the image from the anchor) to out_anchors[k] (default 0, 0); every region must lie inside its
 * image and the canvas. Each of the three may be given relative instead (*_rel, fractions in
 * [0, 1]): of the pasted image's size for in_anchors_rel (rounded down) and shapes_rel (rounded
 * up, so that an anchor and a shape of 0.5 fit), of the canvas for out_anchors_rel (down). Values
 * are converted to dtype (default: the input's) as DALI's ConvertSat does (round half to even,
 * saturate). The per-paste arguments are per-sample inputs, (K, 2) or flattened. */
#include "operator/argin.h"
#include "operator/dtype_conv.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MP "multi_paste"

static const sl__arg_schema mp_args[] = {
    {"in_ids", SL_ARG_INTS, "None", "per output sample, the batch's samples to paste (one input)",
     SL_ARGF_PER_SAMPLE, NULL},
    {"in_anchors", SL_ARG_INTS, "None", "per paste, the region's (y, x) in its image (default 0)",
     SL_ARGF_PER_SAMPLE, NULL},
    {"shapes", SL_ARG_INTS, "None",
     "per paste, the region's (h, w) (default: the image from the anchor on)", SL_ARGF_PER_SAMPLE,
     NULL},
    {"out_anchors", SL_ARG_INTS, "None", "per paste, where it goes on the canvas (default 0)",
     SL_ARGF_PER_SAMPLE, NULL},
    {"output_size", SL_ARG_INTS, "None",
     "the canvas (h, w) (default: the pasted images' shared size)", SL_ARGF_PER_SAMPLE, NULL},
    {"dtype", SL_ARG_DTYPE, "None",
     "output type: UINT8, INT16, INT32 or FLOAT (default: the "
     "input's)",
     0, NULL},
    {"in_anchors_rel", SL_ARG_FLOATS, "None",
     "per paste, the region's (y, x) as fractions of its image's size (rounded down)",
     SL_ARGF_PER_SAMPLE, NULL},
    {"shapes_rel", SL_ARG_FLOATS, "None",
     "per paste, the region's (h, w) as fractions of its image's size (rounded up)",
     SL_ARGF_PER_SAMPLE, NULL},
    {"out_anchors_rel", SL_ARG_FLOATS, "None",
     "per paste, where it goes as fractions of the canvas's size (rounded down)",
     SL_ARGF_PER_SAMPLE, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

/* a list argument: the literal's values (ints, or floats for a *_rel one), or a per-sample input */
typedef struct list_arg {
    bool has;
    int node, n;
    const int64_t *v;
    const double *f; /* a *_rel argument's literal */
} list_arg;

typedef struct paste {
    int src; /* input sample (in_ids) or input index (several inputs) */
    int64_t in[2], shape[2], out[2];
} paste;

typedef struct mp_state {
    list_arg ids, in_anc, shapes, out_anc, size;
    list_arg rel[3]; /* in_anchors_rel, shapes_rel, out_anchors_rel */
    int dtype;       /* -1: the input's */
    double *tmp;
    int64_t tmp_cap;
    paste *p;
    int64_t p_cap;
    int64_t *first, *oshape;
    int cap;
    char *info_text; /* the outputs' source info: the pasted samples', ';'-joined */
    size_t info_cap;
    const char **info;
    int info_n;
} mp_state;

static void mp_destroy(void *state) {
    mp_state *s = state;
    if (s) {
        free(s->tmp);
        free(s->p);
        free(s->first);
        free(s->oshape);
        free(s->info_text);
        free(s->info);
    }
    free(s);
}

static void la_init(list_arg *l, const sl__args *a, const char *name) {
    l->node = sl__args_node(a, name);
    l->has = l->node >= 0 || sl__args_get(a, name)->kind != SL_VAL_NONE;
    l->n = l->has && l->node < 0 ? sl__args_ints(a, name, &l->v) : 0;
}

static void la_init_rel(list_arg *l, const sl__args *a, const char *name) {
    l->node = sl__args_node(a, name);
    l->has = l->node >= 0 || sl__args_get(a, name)->kind != SL_VAL_NONE;
    l->n = l->has && l->node < 0 ? sl__args_floats(a, name, &l->f) : 0;
}

static const char *const REL[3] = {"in_anchors_rel", "shapes_rel", "out_anchors_rel"};

static sl_status mp_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    static const char *const abs_name[3] = {"in_anchors", "shapes", "out_anchors"};
    for (int k = 0; k < 3; k++)
        if (sl__args_given(a, abs_name[k]) && sl__args_given(a, REL[k]))
            return sl_err_set(err, SL_EINVAL, MP ": give %s or %s, not both", abs_name[k], REL[k]);
    mp_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    la_init(&s->ids, a, "in_ids");
    la_init(&s->in_anc, a, "in_anchors");
    la_init(&s->shapes, a, "shapes");
    la_init(&s->out_anc, a, "out_anchors");
    la_init(&s->size, a, "output_size");
    for (int k = 0; k < 3; k++) la_init_rel(&s->rel[k], a, REL[k]);
    s->dtype = sl__args_given(a, "dtype") ? (int)sl__args_dtype(a, "dtype") : -1;
    if (s->dtype >= 0 && s->dtype != SL_DTYPE_U8 && s->dtype != SL_DTYPE_I16 &&
        s->dtype != SL_DTYPE_I32 && s->dtype != SL_DTYPE_F32) {
        sl_dtype bad = (sl_dtype)s->dtype;
        mp_destroy(s);
        return sl_err_set(err, SL_EINVAL,
                          MP ": dtype %s is not supported (UINT8, INT16, INT32, "
                             "FLOAT)",
                          sl_dtype_name(bad));
    }
    *out = s;
    return SL_OK;
}

/* sample i's values of l as integers into s->tmp (grown); their count, -1 for a non-integer */
static int64_t la_get(mp_state *s, const list_arg *l, const sl__op_io *io, int i, int64_t **out,
                      sl_err *err) {
    int64_t n = l->n;
    if (l->node >= 0) n = sl__argin_values(io, l->node, i, NULL, 0);
    if (n < 0) return -1;
    if (n == 0) { /* none (s->tmp may be NULL yet: NULL + 0 is undefined) */
        *out = NULL;
        return 0;
    }
    if (n > s->tmp_cap) {
        double *t = realloc(s->tmp, (size_t)n * sizeof(double) * 2);
        if (!t) {
            sl_err_set(err, SL_ENOMEM, MP ": out of memory");
            return -2;
        }
        s->tmp = t;
        s->tmp_cap = n;
    }
    int64_t *v = (int64_t *)(void *)(s->tmp + s->tmp_cap); /* the second half */
    if (l->node >= 0) {
        sl__argin_values(io, l->node, i, s->tmp, (int)n);
        for (int64_t k = 0; k < n; k++) {
            if (!(fabs(s->tmp[k]) < 9e15) || s->tmp[k] != floor(s->tmp[k])) return -1;
            v[k] = (int64_t)s->tmp[k];
        }
    } else {
        memcpy(v, l->v, (size_t)n * sizeof *v);
    }
    *out = v;
    return n;
}

/* sample i's values of a *_rel argument l into s->tmp (grown); their count, -2 out of memory */
static int64_t la_get_rel(mp_state *s, const list_arg *l, const sl__op_io *io, int i,
                          const double **out, sl_err *err) {
    if (l->node < 0) {
        *out = l->f;
        return l->n;
    }
    int64_t n = sl__argin_values(io, l->node, i, NULL, 0);
    if (n < 0) return -1;
    if (n > s->tmp_cap) {
        double *t = realloc(s->tmp, (size_t)n * sizeof(double) * 2);
        if (!t) {
            sl_err_set(err, SL_ENOMEM, MP ": out of memory");
            return -2;
        }
        s->tmp = t;
        s->tmp_cap = n;
    }
    sl__argin_values(io, l->node, i, s->tmp, (int)n);
    *out = s->tmp;
    return n;
}

/* the HWC image a paste reads: sample src of input 0 (in_ids) or sample i of input src */
static const sl_tlist *source(const mp_state *s, const sl__op_io *io, const paste *p, int i,
                              int *sample) {
    *sample = s->ids.has ? p->src : i;
    return io->in[s->ids.has ? 0 : p->src];
}

/* the k-th pair of an optional per-paste list (or its default) into dst */
static sl_status pairs(mp_state *s, const list_arg *l, const char *name, sl__op_io *io, int i,
                       int64_t n, paste *p, size_t off, sl_err *err) {
    if (!l->has) return SL_OK;
    int64_t *v;
    int64_t got = la_get(s, l, io, i, &v, err);
    if (got == -2) return SL_ENOMEM;
    if (got != 2 * n)
        return sl__op_fail(err, SL_EINVAL, io, i, MP,
                           "%s must give 2 integers (y, x) for each of the %lld pastes", name,
                           (long long)n);
    for (int64_t k = 0; k < n; k++) memcpy((char *)&p[k] + off, v + 2 * k, 2 * sizeof *v);
    return SL_OK;
}

/* The k-th pair of a *_rel argument, as fractions in [0, 1] of base(k) (the pasted image's size,
 * or the canvas's when base is NULL), rounded up (up) or down, into dst at off. */
static sl_status rel_pairs(mp_state *s, int which, sl__op_io *io, int i, int64_t n, paste *p,
                           size_t off, const int64_t *canvas, bool up, sl_err *err) {
    const list_arg *l = &s->rel[which];
    if (!l->has) return SL_OK;
    const double *f;
    int64_t got = la_get_rel(s, l, io, i, &f, err);
    if (got == -2) return SL_ENOMEM;
    if (got != 2 * n)
        return sl__op_fail(err, SL_EINVAL, io, i, MP,
                           "%s must give 2 numbers (y, x) for each of the %lld pastes", REL[which],
                           (long long)n);
    for (int64_t k = 0; k < n; k++) {
        int j;
        const sl_tlist *t = source(s, io, &p[k], i, &j);
        const int64_t *base = canvas ? canvas : t->shapes + 3 * j;
        int64_t *dst = (int64_t *)(void *)((char *)&p[k] + off);
        for (int d = 0; d < 2; d++) {
            double v = f[2 * k + d];
            if (!(v >= 0.0 && v <= 1.0))
                return sl__op_fail(err, SL_EINVAL, io, i, MP,
                                   "%s[%lld] = %g: a fraction in [0, 1] (paste %lld)", REL[which],
                                   (long long)(2 * k + d), v, (long long)k);
            /* in float, as DALI scales */
            float x = (float)base[d] * (float)v;
            dst[d] = (int64_t)(up ? ceilf(x) : floorf(x));
        }
    }
    return SL_OK;
}

static sl_status plan_sample(mp_state *s, sl__op_io *io, int i, int64_t at, sl_err *err) {
    int64_t n = io->num_inputs, *v;
    if (s->ids.has) {
        n = la_get(s, &s->ids, io, i, &v, err);
        if (n == -2) return SL_ENOMEM;
        if (n < 0) return sl__op_fail(err, SL_EINVAL, io, i, MP, "in_ids must be integers");
    }
    if (at + n > s->p_cap || !s->p) { /* (at least one slot: s->p + at on NULL is undefined) */
        int64_t c = (at + n) * 2 + 1;
        paste *p = realloc(s->p, (size_t)c * sizeof *p);
        if (!p) return sl_err_set(err, SL_ENOMEM, MP ": out of memory");
        s->p = p;
        s->p_cap = c;
    }
    paste *p = s->p + at;
    memset(p, 0, (size_t)n * sizeof *p);
    for (int64_t k = 0; k < n; k++) {
        if (s->ids.has && (v[k] < 0 || v[k] >= io->batch))
            return sl__op_fail(err, SL_EINVAL, io, i, MP,
                               "The `in_idx` must be in range [0, %d). Got in_idx: %lld. Input "
                               "batch size is: %d.",
                               io->batch, (long long)v[k], io->batch);
        p[k].src = s->ids.has ? (int)v[k] : (int)k;
    }
    SL_TRY(pairs(s, &s->in_anc, "in_anchors", io, i, n, p, offsetof(paste, in), err));
    SL_TRY(rel_pairs(s, 0, io, i, n, p, offsetof(paste, in), NULL, false, err));
    for (int64_t k = 0; k < n; k++) {
        int j;
        const sl_tlist *t = source(s, io, &p[k], i, &j);
        p[k].shape[0] = t->shapes[3 * j] - p[k].in[0];
        p[k].shape[1] = t->shapes[3 * j + 1] - p[k].in[1];
    }
    SL_TRY(pairs(s, &s->shapes, "shapes", io, i, n, p, offsetof(paste, shape), err));
    SL_TRY(rel_pairs(s, 1, io, i, n, p, offsetof(paste, shape), NULL, true, err));
    /* the canvas */
    int64_t *o = s->oshape + 3 * i;
    const sl_tlist *own = io->in[0];
    o[2] = own->shapes[3 * i + 2];
    if (s->size.has) {
        if (la_get(s, &s->size, io, i, &v, err) != 2 || v[0] < 0 || v[1] < 0)
            return sl__op_fail(err, SL_EINVAL, io, i, MP,
                               "output_size must be 2 non-negative integers (h, w)");
        o[0] = v[0];
        o[1] = v[1];
    } else { /* DALI's rule: every input sample has one size, the canvas's */
        o[0] = own->shapes[0], o[1] = own->shapes[1];
        for (int x = 0; x < io->num_inputs; x++)
            for (int j = 0; j < io->batch; j++)
                if (io->in[x]->shapes[3 * j] != o[0] || io->in[x]->shapes[3 * j + 1] != o[1])
                    return sl__op_fail(err, SL_EINVAL, io, i, MP,
                                       "If the `output_size` is not specified, all the input "
                                       "samples must have the same shape.");
    }
    SL_TRY(pairs(s, &s->out_anc, "out_anchors", io, i, n, p, offsetof(paste, out), err));
    SL_TRY(rel_pairs(s, 2, io, i, n, p, offsetof(paste, out), o, false, err));
    for (int64_t k = 0; k < n; k++) {
        int j;
        const sl_tlist *t = source(s, io, &p[k], i, &j);
        const int64_t *sh = t->shapes + 3 * j;
        if (sh[2] != o[2])
            return sl__op_fail(err, SL_EINVAL, io, i, MP,
                               "All regions pasted into given output sample must have the same "
                               "number of channels: paste %lld has %lld, the canvas %lld",
                               (long long)k, (long long)sh[2], (long long)o[2]);
        for (int d = 0; d < 2; d++)
            if (p[k].in[d] < 0 || p[k].out[d] < 0 || p[k].shape[d] < 0 ||
                p[k].shape[d] > sh[d] - p[k].in[d] || p[k].shape[d] > o[d] - p[k].out[d])
                return sl__op_fail(err, SL_EINVAL, io, i, MP,
                                   "paste %lld: the region %lld+%lld (axis %d) lies outside its "
                                   "image (%lld) or the canvas (%lld at %lld)",
                                   (long long)k, (long long)p[k].in[d], (long long)p[k].shape[d], d,
                                   (long long)sh[d], (long long)o[d], (long long)p[k].out[d]);
    }
    s->first[i + 1] = at + n;
    return SL_OK;
}

/* The outputs' source info, as DALI's: each output sample's the ';'-joined source info of the
 * samples pasted into it, in paste order (io->in_info, which the executor gives SL_OPF_INFO ops;
 * an input without source info counts as ""). */
static sl_status join_info(mp_state *s, sl__op_io *io, sl_err *err) {
    if (!io->in_info) return SL_OK;
    size_t need = 1;
    for (int pass = 0; pass < 2; pass++) {
        size_t at = 0;
        for (int i = 0; i < io->batch; i++) {
            if (pass) s->info[i] = s->info_text + at;
            for (int64_t k = s->first[i]; k < s->first[i + 1]; k++) {
                int j;
                const paste *q = &s->p[k];
                const sl_tlist *t = source(s, io, q, i, &j);
                (void)t;
                int x = s->ids.has ? 0 : q->src; /* the input it comes from */
                const char *const *ii = x < 16 ? io->in_info[x] : NULL;
                const char *str = ii && ii[j] ? ii[j] : "";
                size_t len = strlen(str) + (k > s->first[i]);
                if (pass) {
                    if (k > s->first[i]) s->info_text[at] = ';';
                    memcpy(s->info_text + at + (k > s->first[i]), str, strlen(str));
                }
                at += len;
            }
            if (pass) s->info_text[at] = '\0';
            at++;
        }
        need = at;
        if (!pass) {
            if (need > s->info_cap) {
                char *nt = realloc(s->info_text, need);
                if (!nt) return sl_err_set(err, SL_ENOMEM, MP ": out of memory");
                s->info_text = nt, s->info_cap = need;
            }
            if (io->batch > s->info_n) {
                const char **ni = realloc(s->info, (size_t)io->batch * sizeof *ni);
                if (!ni) return sl_err_set(err, SL_ENOMEM, MP ": out of memory");
                s->info = ni, s->info_n = io->batch;
            }
        }
    }
    io->source_info = s->info;
    return SL_OK;
}

static sl_status mp_setup(void *state, sl__op_io *io, sl_err *err) {
    mp_state *s = state;
    if (s->ids.has && io->num_inputs != 1)
        return sl_err_set(err, SL_EINVAL, MP ": with in_ids there is one input (got %d)",
                          io->num_inputs);
    const sl_tlist *in0 = io->in[0];
    for (int k = 0; k < io->num_inputs; k++) {
        const sl_tlist *t = io->in[k];
        if (t->ndim != 3 || t->dtype != in0->dtype ||
            (t->dtype != SL_DTYPE_U8 && t->dtype != SL_DTYPE_I16 && t->dtype != SL_DTYPE_I32 &&
             t->dtype != SL_DTYPE_F32))
            return sl_err_set(err, SL_EINVAL,
                              MP ": input %d is %d-D %s; HWC images of one type (UINT8, INT16, "
                                 "INT32, FLOAT) are needed",
                              k, t->ndim, sl_dtype_name(t->dtype));
    }
    if (io->batch + 1 > s->cap) {
        int64_t *f = realloc(s->first, (size_t)(io->batch + 1) * sizeof *f);
        if (f) s->first = f;
        int64_t *o = realloc(s->oshape, (size_t)(io->batch + 1) * 3 * sizeof *o);
        if (o) s->oshape = o;
        if (!f || !o) return sl_err_set(err, SL_ENOMEM, MP ": out of memory");
        s->cap = io->batch + 1;
    }
    s->first[0] = 0;
    for (int i = 0; i < io->batch; i++) SL_TRY(plan_sample(s, io, i, s->first[i], err));
    sl_dtype dt = s->dtype >= 0 ? (sl_dtype)s->dtype : in0->dtype;
    SL_TRY(sl_tlist_reset(io->out[0], io->batch, dt, 3, sl_cpu(), err));
    SL_TRY(sl_tlist_alloc(io->out[0], s->oshape, err));
    strcpy(io->out[0]->layout, "HWC");
    return join_info(s, io, err);
}

static sl_status mp_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    mp_state *s = state;
    (void)worker;
    (void)err;
    sl_tlist *out = io->out[0];
    const int64_t *o = out->shapes + 3 * i;
    size_t osz = sl_dtype_size(out->dtype);
    size_t nb = sl_tlist_sample_nbytes(out, i);
    if (nb == 0) return SL_OK; /* an empty canvas (maybe no memory: memset(NULL) is undefined) */
    memset(out->data[i], 0, nb);
    for (int64_t k = s->first[i]; k < s->first[i + 1]; k++) {
        const paste *p = &s->p[k];
        int j;
        const sl_tlist *t = source(s, io, p, i, &j);
        const int64_t *sh = t->shapes + 3 * j;
        int64_t c = sh[2], row = p->shape[1] * c;
        size_t isz = sl_dtype_size(t->dtype);
        for (int64_t y = 0; y < p->shape[0]; y++) {
            const char *src =
                (const char *)t->data[j] + (size_t)(((p->in[0] + y) * sh[1] + p->in[1]) * c) * isz;
            char *dst =
                (char *)out->data[i] + (size_t)(((p->out[0] + y) * o[1] + p->out[1]) * c) * osz;
            if (t->dtype == out->dtype) {
                memcpy(dst, src, (size_t)row * isz);
                continue;
            }
            for (int64_t e = 0; e < row; e++)
                sl__dtype_conv_store(dst, out->dtype, e, sl__dtype_conv_load(src, t->dtype, e));
        }
    }
    return SL_OK;
}

const sl__op_def sl__multi_paste_op = {
    .name = "multi_paste",
    .doc = "Pastes regions of HWC images onto zero canvases of output_size, in order: with "
           "in_ids the listed samples of the one input, else sample i of each input; regions "
           "from in_anchors and shapes, placed at out_anchors (per-paste (y, x) pairs, per "
           "sample); dtype converts as DALI's ConvertSat.",
    .min_inputs = 1,
    .max_inputs = INT_MAX,
    .flags = SL_OPF_INFO,
    .args = mp_args,
    .devices = SL_OPDEV_CPU,
    .create = mp_create,
    .setup = mp_setup,
    .run_cpu = mp_run_cpu,
    .destroy = mp_destroy,
};
