/* SPDX-License-Identifier: Apache-2.0 */
/* tensor_subscript: DALI's per-sample indexing and slicing of op outputs (`x[1:, :-1, 2]`,
 * `x[lo:, ::step, idx]`, what DataNode.__getitem__ makes). Subscript entry e is an index (the dim
 * goes away; negative from the end; outside the sample's extent an error naming the sample) or a
 * slice lo:hi:step with Python's meaning (a missing lo or hi as Python's None; a negative one
 * counts from the end; out-of-range bounds are clamped; step may be negative, not 0). Later dims
 * are kept whole. Each index, start, stop and step is a constant or an op output giving one integer
 * per sample (DALI's argument inputs at_e, lo_e, hi_e, step_e).
 *
 * Two forms, which may be mixed:
 *  - DALI's: per entry e the arguments at_e (an index) or lo_e, hi_e, step_e (a slice; none of
 *    them: the dim whole); entry e is input dim e. An index given with a bound or a step is an
 *    error, as DALI's.
 *  - `mode`, one value per entry, with the constants in `lo`, `hi`, `step`: 0 a slice lo:hi:step,
 *    +1 without lo, +2 without hi; 4 an index (`lo`); 8 the index given per sample by `index` (an
 *    older spelling of at_e); 16 a new dim of extent 1 (DALI's `dali.newaxis`, numpy's None) that
 *    takes no input dim, `names` giving each new dim's layout letter in order ('*' unnamed); 32 an
 *    ellipsis (Python's `...`): whole slices of as many dims as the other entries leave. There the
 *    named arguments of entry e replace that entry's constants (lo_e makes a "+1" slice start at
 *    lo_e), so an entry may take some parts per sample and others as constants.
 * The layout keeps the letters of the dims that stay and has the new dims' names (none, as DALI,
 * when a letter is unknown: an unnamed new dim). run_cpu copies the kept trailing dims as blocks;
 * run_gpu (tensor_subscript.cu) copies element by element by the same plan; new dims move no
 * data. */
#include "operator/argin.h"
#include "operator/gpu_args.h"
#include "operator/op.h"
#include "ops/tensor_subscript.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ENTRY_ARGS(e)                                                                                \
    {"at_" #e,           SL_ARG_INT, "None", "entry " #e ": the index (an int, or an op output)",    \
     SL_ARGF_PER_SAMPLE, NULL},                                                                      \
        {"lo_" #e, SL_ARG_INT, "None", "entry " #e ": the slice's start", SL_ARGF_PER_SAMPLE, NULL}, \
        {"hi_" #e, SL_ARG_INT, "None", "entry " #e ": the slice's stop", SL_ARGF_PER_SAMPLE, NULL},  \
    {                                                                                                \
        "step_" #e, SL_ARG_INT, "None", "entry " #e ": the slice's step (not 0)",                    \
            SL_ARGF_PER_SAMPLE, NULL                                                                 \
    }

static const sl__arg_schema ts_args[] = {
    {"mode", SL_ARG_INTS, "None",
     "per subscript entry: 0 a slice lo:hi:step, +1 without lo, +2 without hi, 4 an index (lo), "
     "8 the index given per sample by `index`, 16 a new dim of extent 1, 32 an ellipsis",
     0, NULL},
    {"lo", SL_ARG_INTS, "None", "with mode, per entry: the slice's start, or the index", 0, NULL},
    {"hi", SL_ARG_INTS, "None", "with mode, per entry: the slice's stop", 0, NULL},
    {"step", SL_ARG_INTS, "None", "with mode, per entry: the slice's step (not 0)", 0, NULL},
    {"names", SL_ARG_STR, "\"\"",
     "one layout letter per new dim (mode 16), in order; '*' for an unnamed one", 0, NULL},
    {"index", SL_ARG_INTS, "None",
     "the index of the mode-8 entry, one integer per sample (an op output)", SL_ARGF_PER_SAMPLE,
     NULL},
    ENTRY_ARGS(0),
    ENTRY_ARGS(1),
    ENTRY_ARGS(2),
    ENTRY_ARGS(3),
    ENTRY_ARGS(4),
    ENTRY_ARGS(5),
    ENTRY_ARGS(6),
    ENTRY_ARGS(7),
    ENTRY_ARGS(8),
    ENTRY_ARGS(9),
    ENTRY_ARGS(10),
    ENTRY_ARGS(11),
    ENTRY_ARGS(12),
    ENTRY_ARGS(13),
    ENTRY_ARGS(14),
    ENTRY_ARGS(15),
    {NULL, 0, NULL, NULL, 0, NULL},
};

enum { NO_LO = 1, NO_HI = 2, INDEX = 4, INDEX_IN = 8, NEWAXIS = 16, ELLIPSIS = 32 };
enum { K_SLICE, K_INDEX, K_NEW, K_ELLIPSIS };
enum { P_AT, P_LO, P_HI, P_STEP };
static const char *const PART[4] = {"at", "lo", "hi", "step"};

#define MAX_ENTRIES (2 * SL_MAX_DIMS)
_Static_assert(MAX_ENTRIES == 16, "ts_args has at_e, lo_e, hi_e, step_e for 16 entries");

/* one part of an entry: a constant, or sample i of arg input `node`, the argument `name` */
typedef struct ts_part {
    bool given;
    int node; /* -1: the constant v */
    int64_t v;
    char name[16];
} ts_part;

typedef struct ts_entry {
    int kind;
    ts_part p[4]; /* at, lo, hi, step */
} ts_entry;

/* sample i: per input dim, where it starts, its step and its output extent (-1: removed) */
typedef struct ts_plan {
    int64_t start[SL_MAX_DIMS], step[SL_MAX_DIMS], count[SL_MAX_DIMS];
} ts_plan;

typedef struct ts_state {
    int k; /* subscript entries */
    ts_entry ent[MAX_ENTRIES];
    char names[MAX_ENTRIES + 1]; /* per new dim, its layout letter ('*' none) */
    int consumed;                /* entries that take an input dim (all but new dims, ellipsis) */
    bool ellipsis;
    /* this batch's input dims (set by setup for the input's rank): each one's entry, -1 taken
     * whole; and the output dims, each an input dim or -1 - (new dim's index in names) */
    int entry_of[SL_MAX_DIMS];
    int out_of[SL_MAX_DIMS];
    int kk; /* leading input dims that the runs walk element by element */
    ts_plan *plans;
    int cap;
    sl__gpu_args gpu;
} ts_state;

static const char *const NAME = "tensor_subscript";

static void ts_destroy(void *state) {
    ts_state *s = state;
    if (s) {
        free(s->plans);
        sl__gpu_args_free(&s->gpu);
    }
    free(s);
}

static void set_part(ts_part *q, int node, int64_t v, const char *name) {
    q->given = true, q->node = node, q->v = v;
    snprintf(q->name, sizeof q->name, "%s", name);
}

/* The entries of the `mode` form: kinds and constants (lists absent: lo 0, hi 0, step 1). */
static sl_status mode_entries(const sl__args *a, ts_state *s, int *per_sample, sl_err *err) {
    const int64_t *m, *v[3] = {NULL, NULL, NULL};
    int k = sl__args_ints(a, "mode", &m);
    const char *lists[3] = {"lo", "hi", "step"};
    for (int l = 0; l < 3; l++)
        if (sl__args_given(a, lists[l]) && sl__args_ints(a, lists[l], &v[l]) != k)
            return sl_err_set(err, SL_EINVAL,
                              "%s: mode, lo, hi and step need one value per subscript (mode has "
                              "%d, %s %d)",
                              NAME, k, lists[l], sl__args_ints(a, lists[l], &v[l]));
    if (k > MAX_ENTRIES)
        return sl_err_set(err, SL_EINVAL, "%s: %d subscripts (at most %d)", NAME, k, MAX_ENTRIES);
    s->k = k;
    for (int e = 0; e < k; e++) {
        ts_entry *t = &s->ent[e];
        int64_t lo = v[0] ? v[0][e] : 0, hi = v[1] ? v[1][e] : 0, st = v[2] ? v[2][e] : 1;
        if (m[e] == NEWAXIS) {
            t->kind = K_NEW;
        } else if (m[e] == ELLIPSIS) {
            t->kind = K_ELLIPSIS;
        } else if (m[e] == INDEX) {
            t->kind = K_INDEX;
            set_part(&t->p[P_AT], -1, lo, "lo");
        } else if (m[e] == INDEX_IN) {
            t->kind = K_INDEX;
            set_part(&t->p[P_AT], sl__args_node(a, "index"), 0, "index");
            ++*per_sample;
        } else if (m[e] >= 0 && m[e] <= 3) {
            t->kind = K_SLICE;
            if (!(m[e] & NO_LO)) set_part(&t->p[P_LO], -1, lo, "lo");
            if (!(m[e] & NO_HI)) set_part(&t->p[P_HI], -1, hi, "hi");
            t->p[P_STEP].v = st;
        } else {
            return sl_err_set(err, SL_EINVAL, "%s: subscript %d: mode %lld (0..4, 8, 16 or 32)",
                              NAME, e, (long long)m[e]);
        }
    }
    return SL_OK;
}

/* Entry e's named arguments (at_e, lo_e, hi_e, step_e) over what `mode` made of it, checked as
 * DALI checks them. */
static sl_status named_parts(const sl__args *a, ts_state *s, int e, bool has_mode, sl_err *err) {
    ts_entry *t = &s->ent[e];
    bool named[4] = {false, false, false, false};
    for (int p = 0; p < 4; p++) {
        char nm[16];
        snprintf(nm, sizeof nm, "%s_%d", PART[p], e);
        if (!sl__args_given(a, nm)) continue;
        int node = sl__args_node(a, nm);
        set_part(&t->p[p], node, node >= 0 ? 0 : sl__args_int(a, nm), nm);
        named[p] = true;
    }
    bool any = named[0] || named[1] || named[2] || named[3];
    if (any && (t->kind == K_NEW || t->kind == K_ELLIPSIS))
        return sl_err_set(err, SL_EINVAL,
                          "%s: subscript %d is a new dim or an ellipsis (mode %d): it takes no "
                          "at_%d, lo_%d, hi_%d or step_%d",
                          NAME, e, t->kind == K_NEW ? NEWAXIS : ELLIPSIS, e, e, e, e);
    bool index = named[P_AT] || t->kind == K_INDEX;
    if (index && (named[P_LO] || named[P_HI] || (named[P_AT] && has_mode && t->kind == K_SLICE)))
        return sl_err_set(err, SL_EINVAL,
                          "%s: the subscript for dimension %d is specified both as an index and "
                          "as a range",
                          NAME, e);
    if (index && named[P_STEP])
        return sl_err_set(err, SL_EINVAL,
                          "%s: the subscript for dimension %d is specified as an index - it "
                          "cannot have a step",
                          NAME, e);
    if (index) t->kind = K_INDEX;
    return SL_OK;
}

static sl_status ts_entries(const sl__args *a, const sl__op_init *init, ts_state *s, sl_err *err) {
    bool has_mode = sl__args_given(a, "mode");
    int per_sample = 0, last = -1;
    for (int e = 0; e < MAX_ENTRIES; e++)
        for (int p = 0; p < 4; p++) {
            char nm[16];
            snprintf(nm, sizeof nm, "%s_%d", PART[p], e);
            if (sl__args_given(a, nm)) last = e;
        }
    for (int e = 0; e < MAX_ENTRIES; e++)
        for (int p = 0; p < 4; p++) s->ent[e].p[p].node = -1, s->ent[e].p[p].v = p == P_STEP;
    if (has_mode) {
        SL_TRY(mode_entries(a, s, &per_sample, err));
        if (last >= s->k)
            return sl_err_set(err, SL_EINVAL,
                              "%s: an argument of subscript %d (at_%d, lo_%d, hi_%d, step_%d), "
                              "but mode has %d subscripts",
                              NAME, last, last, last, last, last, s->k);
    } else {
        const char *lists[4] = {"lo", "hi", "step", "names"}, *names = sl__args_str(a, "names");
        for (int l = 0; l < 4; l++)
            if (sl__args_given(a, lists[l]) && (l < 3 || (names && names[0])))
                return sl_err_set(err, SL_EINVAL, "%s: `%s` goes with `mode`", NAME, lists[l]);
        s->k = last + 1;
    }
    int node = sl__args_node(a, "index");
    if (per_sample != (node >= 0) || per_sample > 1 ||
        (node < 0 && sl__args_get(a, "index")->kind != SL_VAL_NONE))
        return sl_err_set(err, SL_EINVAL,
                          "%s: `index` is an op output, given with exactly one subscript of mode "
                          "8 (%d such subscripts)",
                          NAME, per_sample);
    for (int e = 0; e < s->k; e++) SL_TRY(named_parts(a, s, e, has_mode, err));
    for (int e = 0; e < s->k; e++) {
        const ts_part *q = &s->ent[e].p[P_STEP];
        if (s->ent[e].kind == K_SLICE && q->node < 0 && q->v == 0) /* DALI: when it runs */
            return sl__op_at_run(init, sl_err_set(err, SL_EINVAL,
                                                  "%s: subscript %d: Step cannot be zero (a "
                                                  "slice's step)",
                                                  NAME, e));
    }
    return SL_OK;
}

static sl_status ts_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    ts_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    sl_status bad = ts_entries(a, init, s, err);
    const char *names = sl__args_str(a, "names");
    int news = 0, ells = 0;
    for (int e = 0; e < s->k && bad == SL_OK; e++) {
        if (s->ent[e].kind == K_NEW) {
            s->names[news] = names && names[0] && news < (int)strlen(names) ? names[news] : '*';
            news++;
        }
        ells += s->ent[e].kind == K_ELLIPSIS;
        s->consumed += s->ent[e].kind == K_SLICE || s->ent[e].kind == K_INDEX;
    }
    s->ellipsis = ells > 0;
    if (bad != SL_OK)
        ;
    else if (ells > 1)
        bad = sl_err_set(err, SL_EINVAL, "%s: an index can only have a single ellipsis ('...')",
                         NAME);
    else if (names && names[0] && (int)strlen(names) != news)
        bad = sl_err_set(err, SL_EINVAL, "%s: names has %d letters for %d new dims", NAME,
                         (int)strlen(names), news);
    else if (s->consumed > SL_MAX_DIMS)
        bad = sl_err_set(err, SL_EINVAL, "%s: %d subscripts (at most %d dims)", NAME, s->consumed,
                         SL_MAX_DIMS);
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
                          "%s: %d subscripts for samples of %d dims: Too many indices (the input "
                          "has not enough dimensions)",
                          NAME, s->consumed, ndim);
    int rank = ndim;
    for (int e = 0; e < s->k; e++) rank += (s->ent[e].kind == K_NEW) - (s->ent[e].kind == K_INDEX);
    if (rank > SL_MAX_DIMS)
        return sl_err_set(err, SL_EINVAL, "%s: the result would have %d dims (at most %d)", NAME,
                          rank, SL_MAX_DIMS);
    int d = 0, o = 0, n = 0;
    s->kk = 0;
    for (int e = 0; e < s->k; e++) {
        if (s->ent[e].kind == K_ELLIPSIS) {
            for (int w = ndim - s->consumed; w > 0; w--, d++)
                s->entry_of[d] = -1, s->out_of[o++] = d;
        } else if (s->ent[e].kind == K_NEW) {
            s->out_of[o++] = -1 - n++;
        } else {
            s->entry_of[d] = e;
            if (s->ent[e].kind != K_INDEX) s->out_of[o++] = d;
            s->kk = ++d;
        }
    }
    for (; d < ndim; d++) s->entry_of[d] = -1, s->out_of[o++] = d;
    *ond = o;
    return SL_OK;
}

/* Python's slice.indices: start and count of lo:hi:step over n (bounds clamped; a missing bound
 * is Python's None). */
static void slice_of(int64_t n, bool has_lo, int64_t lo, bool has_hi, int64_t hi, int64_t step,
                     int64_t *start, int64_t *count) {
    int64_t a, b;
    if (step > 0) {
        a = !has_lo ? 0 : lo < 0 ? (lo + n < 0 ? 0 : lo + n) : (lo > n ? n : lo);
        b = !has_hi ? n : hi < 0 ? (hi + n < 0 ? 0 : hi + n) : (hi > n ? n : hi);
        *count = b > a ? (b - a - 1) / step + 1 : 0;
    } else {
        a = !has_lo ? n - 1 : lo < 0 ? (lo + n < -1 ? -1 : lo + n) : (lo >= n ? n - 1 : lo);
        b = !has_hi ? -1 : hi < 0 ? (hi + n < -1 ? -1 : hi + n) : (hi >= n ? n - 1 : hi);
        *count = a > b ? (a - b - 1) / -step + 1 : 0;
    }
    *start = a;
}

/* Sample i's value of part q of the subscript of dim d: the constant, or the sample's one
 * integer of its op output (any integer type, as DALI's argument inputs). */
static sl_status part_value(const sl__op_io *io, int i, int d, const ts_part *q, int64_t *v,
                            sl_err *err) {
    if (q->node < 0) return (*v = q->v), SL_OK;
    const sl_tlist *l = q->node < io->num_arg_inputs ? io->arg_in[q->node] : NULL;
    if (!l || l->device.kind != SL_DEVICE_CPU || i >= l->count)
        return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                           "dim %d: %s must be an op output on the CPU, one value per sample", d,
                           q->name);
    size_t size = sl_dtype_size(l->dtype), bytes = sl_tlist_sample_nbytes(l, i);
    const void *p = l->data[i];
    switch (l->dtype) {
    case SL_DTYPE_U8:
        *v = *(const uint8_t *)p;
        break;
    case SL_DTYPE_I8:
        *v = *(const int8_t *)p;
        break;
    case SL_DTYPE_U16:
        *v = *(const uint16_t *)p;
        break;
    case SL_DTYPE_I16:
        *v = *(const int16_t *)p;
        break;
    case SL_DTYPE_U32:
        *v = *(const uint32_t *)p;
        break;
    case SL_DTYPE_I32:
        *v = *(const int32_t *)p;
        break;
    case SL_DTYPE_I64:
        *v = *(const int64_t *)p;
        break;
    case SL_DTYPE_U64: {
        uint64_t u = *(const uint64_t *)p; /* saturated, as DALI converts it */
        *v = u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
        break;
    }
    default:
        return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                           "dim %d: %s is %s: an array index must be of an integer type", d,
                           q->name, sl_dtype_name(l->dtype));
    }
    if (bytes != size)
        return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                           "dim %d: %s must be one integer per sample (this sample has %lld)", d,
                           q->name, (long long)(bytes / size));
    return SL_OK;
}

/* Sample i's start, step and count of input dim d of extent n, subscripted by entry t. */
static sl_status plan_dim(const sl__op_io *io, int i, int d, const ts_entry *t, int64_t n,
                          ts_plan *p, sl_err *err) {
    if (t->kind == K_INDEX) {
        int64_t at;
        SL_TRY(part_value(io, i, d, &t->p[P_AT], &at, err));
        int64_t x = at < 0 ? at + n : at;
        if (x < 0 || x >= n)
            return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                               "index %lld of dim %d is out of range (extent %lld)", (long long)at,
                               d, (long long)n);
        p->start[d] = x, p->count[d] = -1;
        return SL_OK;
    }
    int64_t lo = 0, hi = 0, step = 1;
    if (t->p[P_LO].given) SL_TRY(part_value(io, i, d, &t->p[P_LO], &lo, err));
    if (t->p[P_HI].given) SL_TRY(part_value(io, i, d, &t->p[P_HI], &hi, err));
    SL_TRY(part_value(io, i, d, &t->p[P_STEP], &step, err));
    if (step == 0)
        return sl__op_fail(err, SL_EINVAL, io, i, NAME, "dim %d: Step cannot be zero (%s is 0)", d,
                           t->p[P_STEP].name);
    if (step == INT64_MIN) step = -INT64_MAX; /* (the same single element, and no overflow) */
    slice_of(n, t->p[P_LO].given, lo, t->p[P_HI].given, hi, step, &p->start[d], &p->count[d]);
    p->step[d] = step;
    return SL_OK;
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
            p->step[d] = 1, p->start[d] = 0, p->count[d] = sh[d];
            if (s->entry_of[d] >= 0)
                st = plan_dim(io, i, d, &s->ent[s->entry_of[d]], sh[d], p, err);
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

#ifdef SLUICE_HAVE_CUDA
/* The same plans, one descriptor per sample for the CUDA run (tensor_subscript.cu). */
static sl_status ts_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    ts_state *s = state;
    const sl_tlist *in = io->in[0];
    size_t bytes = (size_t)io->batch * sizeof(sl__subscript_desc);
    sl__subscript_desc *d = sl__gpu_args_host(&s->gpu, io->device.id, bytes ? bytes : 1, err);
    if (!d) return err->status;
    int64_t maxn = 0;
    for (int i = 0; i < io->batch; i++) {
        const ts_plan *p = &s->plans[i];
        const int64_t *sh = sl_tlist_shape(in, i);
        sl__subscript_desc *q = &d[i];
        memset(q, 0, sizeof *q);
        q->in = in->data[i];
        q->out = io->out[0]->data[i];
        q->k = s->kk;
        q->inner = 1;
        for (int k = s->kk; k < in->ndim; k++) q->inner *= sh[k];
        int64_t acc = q->inner;
        q->n = q->inner;
        for (int k = s->kk - 1; k >= 0; k--) {
            q->stride[k] = acc;
            acc *= sh[k];
            q->count[k] = p->count[k] < 0 ? 1 : p->count[k];
            q->start[k] = p->start[k];
            q->step[k] = p->count[k] < 0 ? 0 : p->step[k];
            q->n *= q->count[k];
        }
        if (q->n > maxn) maxn = q->n;
    }
    if (!maxn) return SL_OK;
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, bytes, io->stream, &dd, err));
    return sl__cuda_subscript(dd, io->batch, maxn, (int)sl_dtype_size(in->dtype), io->stream, err);
}
#endif

const sl__op_def sl__tensor_subscript_op = {
    .name = "tensor_subscript",
    .doc = "Indexes and slices each sample (DALI's tensor subscripts, x[1:, :-1, 2], x[lo:, "
           "::step]; what DataNode's [] makes); any index, start, stop or step may be an op "
           "output, one integer per sample.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = ts_args,
#ifdef SLUICE_HAVE_CUDA
    .devices = SL_OPDEV_CPU | SL_OPDEV_GPU,
    .run_gpu = ts_run_gpu,
#else
    .devices = SL_OPDEV_CPU,
#endif
    .create = ts_create,
    .setup = ts_setup,
    .run_cpu = ts_run_cpu,
    .destroy = ts_destroy,
};
