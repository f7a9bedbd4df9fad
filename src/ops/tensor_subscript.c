/* SPDX-License-Identifier: Apache-2.0 */
/* tensor_subscript: DALI's per-sample indexing and slicing of op outputs (`x[1:, :-1, 2]`, what
 * DataNode.__getitem__ makes). Dim d < len(mode) is subscripted: an index (mode bit 4; `lo` the
 * index, negative from the end; the dim goes away) or a slice lo:hi:step with Python's meaning
 * (mode bit 1: no lo, bit 2: no hi; a negative lo or hi counts from the end, out-of-range bounds
 * are clamped, step may be negative, not 0). Later dims are kept whole. An index outside the
 * sample's extent is an error naming the record. One dim may take its index per sample (mode 8,
 * DALI's `x[idx]` with an op output as the index): sample i's index is sample i of `index`, a
 * one-element integer per sample. The layout keeps the letters of the dims that stay. run_cpu
 * copies the kept trailing dims as blocks. */
#include "operator/argin.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdlib.h>
#include <string.h>

static const sl__arg_schema ts_args[] = {
    {"mode", SL_ARG_INTS, NULL,
     "per subscripted dim: 0 a slice lo:hi:step, +1 without lo, +2 without hi, 4 an index (lo), "
     "8 the index given per sample by `index`",
     SL_ARGF_REQUIRED, NULL},
    {"lo", SL_ARG_INTS, NULL, "per subscripted dim: the slice's start, or the index",
     SL_ARGF_REQUIRED, NULL},
    {"hi", SL_ARG_INTS, NULL, "per subscripted dim: the slice's stop", SL_ARGF_REQUIRED, NULL},
    {"step", SL_ARG_INTS, NULL, "per subscripted dim: the slice's step (not 0)", SL_ARGF_REQUIRED,
     NULL},
    {"index", SL_ARG_INTS, "None",
     "the index of the mode-8 dim, one integer per sample (an op output)", SL_ARGF_PER_SAMPLE,
     NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

enum { NO_LO = 1, NO_HI = 2, INDEX = 4, INDEX_IN = 8 };

/* sample i: per input dim, where it starts, its step and its output extent (-1: removed) */
typedef struct ts_plan {
    int64_t start[SL_MAX_DIMS], step[SL_MAX_DIMS], count[SL_MAX_DIMS];
} ts_plan;

typedef struct ts_state {
    int k;    /* subscripted dims */
    int node; /* the per-sample index (mode 8), or -1 */
    int mode[SL_MAX_DIMS];
    int64_t lo[SL_MAX_DIMS], hi[SL_MAX_DIMS], step[SL_MAX_DIMS];
    ts_plan *plans;
    int cap;
} ts_state;

static const char *const NAME = "tensor_subscript";

static void ts_destroy(void *state) {
    ts_state *s = state;
    if (s) free(s->plans);
    free(s);
}

static sl_status ts_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    const int64_t *m, *lo, *hi, *st;
    int k = sl__args_ints(a, "mode", &m);
    if (k < 1 || k > SL_MAX_DIMS || sl__args_ints(a, "lo", &lo) != k ||
        sl__args_ints(a, "hi", &hi) != k || sl__args_ints(a, "step", &st) != k)
        return sl_err_set(err, SL_EINVAL,
                          "%s: mode, lo, hi and step need one value per subscripted dim (1..%d)",
                          NAME, SL_MAX_DIMS);
    ts_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->k = k;
    s->node = sl__args_node(a, "index");
    int per_sample = 0;
    for (int d = 0; d < k; d++) per_sample += m[d] == INDEX_IN;
    if (per_sample != (s->node >= 0) || per_sample > 1 ||
        (s->node < 0 && sl__args_get(a, "index")->kind != SL_VAL_NONE)) {
        free(s);
        return sl_err_set(err, SL_EINVAL,
                          "%s: `index` is an op output, given with exactly one dim of mode 8 (%d "
                          "such dims)",
                          NAME, per_sample);
    }
    for (int d = 0; d < k; d++) {
        if (m[d] == INDEX_IN) {
            s->mode[d] = INDEX_IN, s->lo[d] = s->hi[d] = 0, s->step[d] = 1;
            continue;
        }
        if (m[d] < 0 || m[d] > 4 || m[d] == 7 || (m[d] & INDEX && m[d] != INDEX) ||
            (!(m[d] & INDEX) && st[d] == 0)) {
            free(s);
            return sl_err_set(err, SL_EINVAL, "%s: dim %d: mode %lld with step %lld", NAME, d,
                              (long long)m[d], (long long)st[d]);
        }
        s->mode[d] = (int)m[d], s->lo[d] = lo[d], s->hi[d] = hi[d], s->step[d] = st[d];
    }
    *out = s;
    return SL_OK;
}

/* Python's slice.indices: start and count of lo:hi:step over n (bounds clamped). */
static void slice_of(int64_t n, int mode, int64_t lo, int64_t hi, int64_t step, int64_t *start,
                     int64_t *count) {
    int64_t a, b;
    if (step > 0) {
        a = mode & NO_LO ? 0 : lo < 0 ? (lo + n < 0 ? 0 : lo + n) : (lo > n ? n : lo);
        b = mode & NO_HI ? n : hi < 0 ? (hi + n < 0 ? 0 : hi + n) : (hi > n ? n : hi);
        *count = b > a ? (b - a + step - 1) / step : 0;
    } else {
        a = mode & NO_LO ? n - 1 : lo < 0 ? (lo + n < -1 ? -1 : lo + n) : (lo >= n ? n - 1 : lo);
        b = mode & NO_HI ? -1 : hi < 0 ? (hi + n < -1 ? -1 : hi + n) : (hi >= n ? n - 1 : hi);
        *count = a > b ? (a - b - step - 1) / -step : 0;
    }
    *start = a;
}

static sl_status ts_setup(void *state, sl__op_io *io, sl_err *err) {
    ts_state *s = state;
    const sl_tlist *in = io->in[0];
    if (s->k > in->ndim)
        return sl_err_set(err, SL_EINVAL, "%s: %d subscripts for samples of %d dims", NAME, s->k,
                          in->ndim);
    if (io->batch > s->cap) {
        ts_plan *p = realloc(s->plans, (size_t)io->batch * sizeof *p);
        if (!p) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", NAME);
        s->plans = p;
        s->cap = io->batch;
    }
    int removed = 0;
    for (int d = 0; d < s->k; d++) removed += s->mode[d] == INDEX || s->mode[d] == INDEX_IN;
    int ond = in->ndim - removed;
    int64_t *shapes = sl__malloc(
        (size_t)(io->batch ? io->batch : 1) * (size_t)(ond ? ond : 1) * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0; i < io->batch && st == SL_OK; i++) {
        const int64_t *sh = sl_tlist_shape(in, i);
        ts_plan *p = &s->plans[i];
        int o = 0;
        for (int d = 0; d < in->ndim; d++) {
            p->step[d] = 1, p->start[d] = 0, p->count[d] = sh[d];
            if (d < s->k && (s->mode[d] == INDEX || s->mode[d] == INDEX_IN)) {
                int64_t lo = s->lo[d];
                if (s->mode[d] == INDEX_IN) {
                    double v[2];
                    int n = sl__argin_values(io, s->node, i, v, 2);
                    if (n != 1 || v[0] != (double)(int64_t)v[0]) {
                        st = sl__op_fail(err, SL_EINVAL, io, i, NAME,
                                         "the index of dim %d must be one integer per sample", d);
                        break;
                    }
                    lo = (int64_t)v[0];
                }
                int64_t x = lo < 0 ? lo + sh[d] : lo;
                if (x < 0 || x >= sh[d]) {
                    st = sl__op_fail(err, SL_EINVAL, io, i, NAME,
                                     "index %lld of dim %d is out of range (extent %lld)",
                                     (long long)lo, d, (long long)sh[d]);
                    break;
                }
                p->start[d] = x, p->count[d] = -1;
                continue;
            }
            if (d < s->k) {
                slice_of(sh[d], s->mode[d], s->lo[d], s->hi[d], s->step[d], &p->start[d],
                         &p->count[d]);
                p->step[d] = s->step[d];
            }
            shapes[(size_t)i * (size_t)ond + (size_t)o++] = p->count[d];
        }
    }
    sl_tlist *out = io->out[0];
    if (st == SL_OK) st = sl_tlist_reset(out, io->batch, in->dtype, ond, io->device, err);
    if (st == SL_OK) st = sl_tlist_alloc(out, shapes, err);
    free(shapes);
    if (st != SL_OK) return st;
    memset(out->layout, 0, sizeof out->layout);
    if ((int)strlen(in->layout) == in->ndim)
        for (int d = 0, o = 0; d < in->ndim; d++)
            if (!(d < s->k && s->mode[d] >= INDEX)) out->layout[o++] = in->layout[d];
    return SL_OK;
}

/* Copies sample i: the subscripted dims element by element, the whole trailing dims as blocks. */
static sl_status ts_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)worker, (void)err;
    ts_state *s = state;
    const sl_tlist *in = io->in[0];
    const ts_plan *p = &s->plans[i];
    const int64_t *sh = sl_tlist_shape(in, i);
    size_t block = sl_dtype_size(in->dtype);
    for (int d = s->k; d < in->ndim; d++) block *= (size_t)sh[d];
    int64_t stride[SL_MAX_DIMS]; /* bytes per step of input dim d */
    int64_t acc = (int64_t)block;
    for (int d = s->k - 1; d >= 0; d--) {
        stride[d] = acc;
        acc *= sh[d];
    }
    int64_t n = 1, idx[SL_MAX_DIMS] = {0};
    for (int d = 0; d < s->k; d++) n *= p->count[d] < 0 ? 1 : p->count[d];
    if (!block || !n) return SL_OK;
    const uint8_t *src = in->data[i];
    uint8_t *dst = io->out[0]->data[i];
    for (int64_t e = 0; e < n; e++) {
        int64_t off = 0;
        for (int d = 0; d < s->k; d++) off += (p->start[d] + idx[d] * p->step[d]) * stride[d];
        memcpy(dst + (size_t)e * block, src + off, block);
        for (int d = s->k - 1; d >= 0; d--) { /* the next output index, last dim fastest */
            if (p->count[d] >= 0 && ++idx[d] < p->count[d]) break;
            idx[d] = 0;
        }
    }
    return SL_OK;
}

const sl__op_def sl__tensor_subscript_op = {
    .name = "tensor_subscript",
    .doc = "Indexes and slices each sample (DALI's tensor subscripts, x[1:, :-1, 2]; what "
           "DataNode's [] makes).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = ts_args,
    .devices = SL_OPDEV_CPU,
    .create = ts_create,
    .setup = ts_setup,
    .run_cpu = ts_run_cpu,
    .destroy = ts_destroy,
};
