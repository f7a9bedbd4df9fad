/* SPDX-License-Identifier: Apache-2.0 */
/* tensor_subscript: DALI's per-sample indexing and slicing of op outputs (`x[1:, :-1, 2]`, what
 * DataNode.__getitem__ makes). Dim d < len(mode) is subscripted: an index (mode bit 4; `lo` the
 * index, negative from the end; the dim goes away) or a slice lo:hi:step with Python's meaning
 * (mode bit 1: no lo, bit 2: no hi; a negative lo or hi counts from the end, out-of-range bounds
 * are clamped, step may be negative, not 0). Later dims are kept whole. An index outside the
 * sample's extent is an error naming the record. One dim may take its index per sample (mode 8,
 * DALI's `x[idx]` with an op output as the index): sample i's index is sample i of `index`, a
 * one-element integer per sample. A new dim of extent 1 (mode 16, DALI's `dali.newaxis`; numpy's
 * None) takes no input dim; `names` gives each new dim's layout letter in order ('*' unnamed,
 * DALI's `newaxis("F")`). One entry may be an ellipsis (mode 32, Python's `...`): whole slices of
 * as many dims as the other entries leave. The layout keeps the letters of the dims that stay
 * and has the new dims' names (none, as DALI, when a letter is unknown: an unnamed new dim).
 * run_cpu copies the kept trailing dims as blocks; new dims move no data. */
#include "operator/argin.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdlib.h>
#include <string.h>

static const sl__arg_schema ts_args[] = {
    {"mode", SL_ARG_INTS, NULL,
     "per subscripted dim: 0 a slice lo:hi:step, +1 without lo, +2 without hi, 4 an index (lo), "
     "8 the index given per sample by `index`, 16 a new dim of extent 1, 32 an ellipsis",
     SL_ARGF_REQUIRED, NULL},
    {"lo", SL_ARG_INTS, NULL, "per subscripted dim: the slice's start, or the index",
     SL_ARGF_REQUIRED, NULL},
    {"hi", SL_ARG_INTS, NULL, "per subscripted dim: the slice's stop", SL_ARGF_REQUIRED, NULL},
    {"step", SL_ARG_INTS, NULL, "per subscripted dim: the slice's step (not 0)", SL_ARGF_REQUIRED,
     NULL},
    {"names", SL_ARG_STR, "\"\"",
     "one layout letter per new dim (mode 16), in order; '*' for an unnamed one", 0, NULL},
    {"index", SL_ARG_INTS, "None",
     "the index of the mode-8 dim, one integer per sample (an op output)", SL_ARGF_PER_SAMPLE,
     NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

enum { NO_LO = 1, NO_HI = 2, INDEX = 4, INDEX_IN = 8, NEWAXIS = 16, ELLIPSIS = 32 };

/* sample i: per input dim, where it starts, its step and its output extent (-1: removed) */
typedef struct ts_plan {
    int64_t start[SL_MAX_DIMS], step[SL_MAX_DIMS], count[SL_MAX_DIMS];
} ts_plan;

#define MAX_ENTRIES (2 * SL_MAX_DIMS)

typedef struct ts_state {
    int k;    /* subscript entries */
    int node; /* the per-sample index (mode 8), or -1 */
    int mode[MAX_ENTRIES];
    int64_t lo[MAX_ENTRIES], hi[MAX_ENTRIES], step[MAX_ENTRIES];
    char names[MAX_ENTRIES + 1]; /* per new dim, its layout letter ('*' none) */
    int consumed;                /* entries that take an input dim (all but new dims, ellipsis) */
    bool ellipsis;
    /* this batch's input dims (set by setup for the input's rank): each one's entry, -1 taken
     * whole; and the output dims, each an input dim or -1 - (new dim's index in names) */
    int entry_of[SL_MAX_DIMS];
    int out_of[SL_MAX_DIMS];
    int kk; /* leading input dims that run_cpu copies element by element */
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
    if (k < 1 || k > MAX_ENTRIES || sl__args_ints(a, "lo", &lo) != k ||
        sl__args_ints(a, "hi", &hi) != k || sl__args_ints(a, "step", &st) != k)
        return sl_err_set(err, SL_EINVAL,
                          "%s: mode, lo, hi and step need one value per subscript (1..%d)", NAME,
                          MAX_ENTRIES);
    ts_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->k = k;
    s->node = sl__args_node(a, "index");
    int per_sample = 0, news = 0, ells = 0;
    for (int d = 0; d < k; d++) {
        per_sample += m[d] == INDEX_IN;
        news += m[d] == NEWAXIS;
        ells += m[d] == ELLIPSIS;
    }
    const char *names = sl__args_str(a, "names");
    sl_status bad = SL_OK;
    if (per_sample != (s->node >= 0) || per_sample > 1 ||
        (s->node < 0 && sl__args_get(a, "index")->kind != SL_VAL_NONE))
        bad = sl_err_set(err, SL_EINVAL,
                         "%s: `index` is an op output, given with exactly one dim of mode 8 (%d "
                         "such dims)",
                         NAME, per_sample);
    else if (ells > 1)
        bad = sl_err_set(err, SL_EINVAL, "%s: an index can only have a single ellipsis ('...')",
                         NAME);
    else if (names && names[0] && (int)strlen(names) != news)
        bad = sl_err_set(err, SL_EINVAL, "%s: names has %d letters for %d new dims", NAME,
                         (int)strlen(names), news);
    else if (k - news - ells > SL_MAX_DIMS)
        bad = sl_err_set(err, SL_EINVAL, "%s: %d subscripts (at most %d dims)", NAME,
                         k - news - ells, SL_MAX_DIMS);
    for (int d = 0, n = 0; d < k && bad == SL_OK; d++) {
        s->mode[d] = (int)m[d], s->lo[d] = lo[d], s->hi[d] = hi[d], s->step[d] = st[d];
        if (m[d] == INDEX_IN) {
            s->lo[d] = s->hi[d] = 0, s->step[d] = 1;
        } else if (m[d] == NEWAXIS) {
            s->names[n] = names && names[0] ? names[n] : '*';
            n++;
        } else if (m[d] == ELLIPSIS) {
            s->ellipsis = true;
        } else if (m[d] < 0 || m[d] > 4 || m[d] == 7 || (m[d] & INDEX && m[d] != INDEX) ||
                   (!(m[d] & INDEX) && st[d] == 0)) {
            bad = sl_err_set(err, SL_EINVAL, "%s: subscript %d: mode %lld with step %lld", NAME, d,
                             (long long)m[d], (long long)st[d]);
        }
        if (m[d] != NEWAXIS && m[d] != ELLIPSIS) s->consumed++;
    }
    if (bad != SL_OK) {
        free(s);
        return bad;
    }
    *out = s;
    return SL_OK;
}

/* Maps the entries onto an input of ndim dims: s->entry_of, s->out_of, s->kk; the output's rank
 * in *ond. */
static sl_status ts_map(ts_state *s, int ndim, int *ond, sl_err *err) {
    if (s->consumed > ndim)
        return sl_err_set(err, SL_EINVAL,
                          "%s: %d subscripts for samples of %d dims: Too many "
                          "indices",
                          NAME, s->consumed, ndim);
    int rank = ndim;
    for (int e = 0; e < s->k; e++)
        rank += (s->mode[e] == NEWAXIS) - (s->mode[e] == INDEX || s->mode[e] == INDEX_IN);
    if (rank > SL_MAX_DIMS)
        return sl_err_set(err, SL_EINVAL, "%s: the result would have %d dims (at most %d)", NAME,
                          rank, SL_MAX_DIMS);
    int d = 0, o = 0, n = 0;
    s->kk = 0;
    for (int e = 0; e < s->k; e++) {
        if (s->mode[e] == ELLIPSIS) {
            for (int w = ndim - s->consumed; w > 0; w--, d++)
                s->entry_of[d] = -1, s->out_of[o++] = d;
        } else if (s->mode[e] == NEWAXIS) {
            s->out_of[o++] = -1 - n++;
        } else {
            s->entry_of[d] = e;
            if (!(s->mode[e] & (INDEX | INDEX_IN))) s->out_of[o++] = d;
            s->kk = ++d;
        }
    }
    for (; d < ndim; d++) s->entry_of[d] = -1, s->out_of[o++] = d;
    *ond = o;
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
    int ond = 0;
    SL_TRY(ts_map(s, in->ndim, &ond, err));
    if (io->batch > s->cap) {
        ts_plan *p = realloc(s->plans, (size_t)io->batch * sizeof *p);
        if (!p) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", NAME);
        s->plans = p;
        s->cap = io->batch;
    }
    int64_t *shapes = sl__malloc(
        (size_t)(io->batch ? io->batch : 1) * (size_t)(ond ? ond : 1) * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0; i < io->batch && st == SL_OK; i++) {
        const int64_t *sh = sl_tlist_shape(in, i);
        ts_plan *p = &s->plans[i];
        for (int d = 0; d < in->ndim && st == SL_OK; d++) {
            int e = s->entry_of[d];
            p->step[d] = 1, p->start[d] = 0, p->count[d] = sh[d];
            if (e >= 0 && (s->mode[e] == INDEX || s->mode[e] == INDEX_IN)) {
                int64_t lo = s->lo[e];
                if (s->mode[e] == INDEX_IN) {
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
                if (x < 0 || x >= sh[d])
                    st = sl__op_fail(err, SL_EINVAL, io, i, NAME,
                                     "index %lld of dim %d is out of range (extent %lld)",
                                     (long long)lo, d, (long long)sh[d]);
                p->start[d] = x, p->count[d] = -1;
            } else if (e >= 0) {
                slice_of(sh[d], s->mode[e], s->lo[e], s->hi[e], s->step[e], &p->start[d],
                         &p->count[d]);
                p->step[d] = s->step[e];
            }
        }
        for (int o = 0; o < ond; o++)
            shapes[(size_t)i * (size_t)ond + (size_t)o] =
                s->out_of[o] < 0 ? 1 : p->count[s->out_of[o]];
    }
    sl_tlist *out = io->out[0];
    if (st == SL_OK) st = sl_tlist_reset(out, io->batch, in->dtype, ond, io->device, err);
    if (st == SL_OK) st = sl_tlist_alloc(out, shapes, err);
    free(shapes);
    if (st != SL_OK) return st;
    /* the kept dims' letters and the new dims' names; as DALI, none unless every letter is known
     * (an unnamed new dim, or a kept dim of an input without a layout, leaves it empty) */
    memset(out->layout, 0, sizeof out->layout);
    bool has = (int)strlen(in->layout) == in->ndim, known = true;
    for (int o = 0; o < ond; o++)
        known = known && (s->out_of[o] < 0 ? s->names[-1 - s->out_of[o]] != '*' : has);
    for (int o = 0; o < ond && known; o++)
        out->layout[o] = s->out_of[o] < 0 ? s->names[-1 - s->out_of[o]] : in->layout[s->out_of[o]];
    return SL_OK;
}

/* Copies sample i: the subscripted dims element by element, the whole trailing dims as blocks. */
static sl_status ts_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)worker, (void)err;
    ts_state *s = state;
    const sl_tlist *in = io->in[0];
    const ts_plan *p = &s->plans[i];
    const int64_t *sh = sl_tlist_shape(in, i);
    int k = s->kk;
    size_t block = sl_dtype_size(in->dtype);
    for (int d = k; d < in->ndim; d++) block *= (size_t)sh[d];
    int64_t stride[SL_MAX_DIMS]; /* bytes per step of input dim d */
    int64_t acc = (int64_t)block;
    for (int d = k - 1; d >= 0; d--) {
        stride[d] = acc;
        acc *= sh[d];
    }
    int64_t n = 1, idx[SL_MAX_DIMS] = {0};
    for (int d = 0; d < k; d++) n *= p->count[d] < 0 ? 1 : p->count[d];
    if (!block || !n) return SL_OK;
    const uint8_t *src = in->data[i];
    uint8_t *dst = io->out[0]->data[i];
    for (int64_t e = 0; e < n; e++) {
        int64_t off = 0;
        for (int d = 0; d < k; d++) off += (p->start[d] + idx[d] * p->step[d]) * stride[d];
        memcpy(dst + (size_t)e * block, src + off, block);
        for (int d = k - 1; d >= 0; d--) { /* the next output index, last dim fastest */
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
