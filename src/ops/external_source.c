/* SPDX-License-Identifier: Apache-2.0 */
/* external_source: samples made by the caller's code, through a source registered with
 * sl_pipeline_add_source (include/sluice/pipeline.h). DALI's fn.external_source with a per-sample
 * source: setup asks the source for every sample's dtype and shape (the stage's thread, in order),
 * sizes the outputs, and run_cpu has the source write each sample straight into its place (the
 * pool's workers). What the source says is checked before anything is written: a dtype or ndim
 * that changes within an output, or differs from the op's `dtype` / `ndim`, is an error naming
 * the sample and batch, as is any error the source returns (its message kept). A source with a
 * `count` says how many samples each batch has (DALI's variable batch size): the executor asks
 * (src_count) before the batch's first op runs, and every op then works on that many. A source
 * with a `view` (DALI's no_copy) may give its own memory instead: an output whose every sample it
 * gives is those views, not filled, and the source hears (release) when the batch no longer reads
 * them: when the batch's slot is set up for a later batch (the consumer released it) or freed.
 * With `copy_views` the workers copy from those views instead (DALI's copy unless no_copy, made
 * without calling the source for each sample), and release comes once the batch's last sample is
 * written. A source with a `layout` gives each batch's layout (DALI's feed_input(..., layout=)):
 * checked as DALI does against the op's `layout` argument, else against the previous batch's
 * (fed_layout). */
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const sl__arg_schema src_args[] = {
    {"source", SL_ARG_STR, NULL, "name of a source registered with sl_pipeline_add_source",
     SL_ARGF_REQUIRED, NULL},
    {"num_outputs", SL_ARG_INT, "None",
     "outputs; the source is asked for each (sl_source_info.output); default 1", 0, NULL},
    {"dtype", SL_ARG_DTYPE, "None", "data type every sample must have (checked)", 0, NULL},
    {"ndim", SL_ARG_INT, "None", "dimensions every sample must have (checked)", 0, NULL},
    {"layout", SL_ARG_STRS, "None", "layout of the outputs (\"HWC\"...): one for all, or one each",
     0, NULL},
    {"batch", SL_ARG_BOOL, "True",
     "accepted for DALI's sake: sluice asks the source per sample either way", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct src_state {
    const char *name; /* the instance's */
    char source[64];
    sl_source src;
    int nout;
    int dtype, ndim;                   /* what every sample must have; -1: anything */
    char (*layout)[SL_LAYOUT_MAX + 1]; /* per output */
    /* per output, without a `layout` argument: the layout the source gave for an earlier batch
     * (fed_set: it gave one), which later batches must keep, as in DALI */
    char (*fed_layout)[SL_LAYOUT_MAX + 1];
    bool *fed_set;
    int batch_size;
    int64_t *shapes; /* setup's scratch: batch x SL_MAX_DIMS */
    bool *viewed;    /* per output: this batch's is the source's views (not filled) */
    /* copy_views: per output, batch pointers the workers copy sample i from (NULL: fill it),
     * set by setup for the run that follows it */
    const void **from;
} src_state;

/* A batch slot's memory of the source's views (io->batch_state): released when the slot is set up
 * again or freed, or with copy_views by the worker that writes the batch's last sample. */
typedef struct src_batch {
    sl_source src;
    int64_t iteration;
    bool held;
    atomic_int pending; /* copy_views: samples still to write (copy or fill) in this run */
} src_batch;

static void src_batch_free(void *batch_state) {
    src_batch *sb = batch_state;
    if (sb && sb->held) sb->src.release(sb->src.user, sb->iteration);
    free(sb);
}

static int src_num_outputs(const sl__args *a) {
    int64_t n = sl__args_given(a, "num_outputs") ? sl__args_int(a, "num_outputs") : 1;
    return n < 1 || n > INT_MAX ? -1 : (int)n;
}

static void src_destroy(void *state) {
    src_state *s = state;
    if (s) free(s->shapes);
    if (s) free(s->layout), free(s->fed_layout), free(s->fed_set);
    if (s) free(s->viewed), free(s->from);
    free(s);
}

static sl_status src_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    src_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->name = init->name;
    s->batch_size = init->batch_size;
    s->nout = src_num_outputs(a);
    s->dtype = sl__args_given(a, "dtype") ? (int)sl__args_dtype(a, "dtype") : -1;
    s->ndim = sl__args_given(a, "ndim") ? (int)sl__args_int(a, "ndim") : -1;
    const char *name = sl__args_str(a, "source");
    sl_status st = SL_OK;
    if (s->nout < 1)
        st = sl_err_set(err, SL_EINVAL, "%s: num_outputs %lld (at least 1)", s->name,
                        (long long)sl__args_int(a, "num_outputs"));
    else if (!(s->layout = sl__calloc((size_t)s->nout, sizeof *s->layout, err)) ||
             !(s->viewed = sl__calloc((size_t)s->nout, sizeof *s->viewed, err)) ||
             !(s->fed_layout = sl__calloc((size_t)s->nout, sizeof *s->fed_layout, err)) ||
             !(s->fed_set = sl__calloc((size_t)s->nout, sizeof *s->fed_set, err)))
        st = SL_ENOMEM;
    else if (s->ndim < -1 || s->ndim > SL_MAX_DIMS)
        st = sl_err_set(err, SL_EINVAL, "%s: ndim %d (0..%d)", s->name, s->ndim, SL_MAX_DIMS);
    else if (!name || !name[0] || strlen(name) >= sizeof s->source)
        st = sl_err_set(err, SL_EINVAL, "%s: source must name a registered source", s->name);
    else if (!init->find_source)
        st = sl_err_set(err, SL_ENOENT, "%s: no sources here (sl_pipeline_add_source)", s->name);
    if (st == SL_OK) {
        snprintf(s->source, sizeof s->source, "%s", name);
        st = init->find_source(init->source_ctx, name, &s->src, err);
        if (st != SL_OK) sl_err_prefix(err, "%s: ", s->name);
        if (st == SL_OK && (!s->src.shape || !s->src.fill))
            st = sl_err_set(err, SL_EINVAL,
                            "%s: '%s' is a function (python_function's), not a source", s->name,
                            name);
    }
    if (st == SL_OK && sl__args_given(a, "layout")) {
        const char *const *l;
        int n = sl__args_strs(a, "layout", &l);
        if (n != 1 && n != s->nout)
            st = sl_err_set(err, SL_EINVAL, "%s: %d layouts for %d outputs (give one, or one each)",
                            s->name, n, s->nout);
        for (int o = 0; o < s->nout && st == SL_OK; o++) {
            const char *x = l[n == 1 ? 0 : o];
            if (strlen(x) > SL_LAYOUT_MAX)
                st = sl_err_set(err, SL_EINVAL, "%s: layout \"%s\" is too long", s->name, x);
            else
                snprintf(s->layout[o], sizeof s->layout[o], "%s", x);
        }
    }
    if (st == SL_OK) {
        s->shapes = sl__malloc((size_t)init->batch_size * SL_MAX_DIMS * sizeof *s->shapes, err);
        if (!s->shapes) st = SL_ENOMEM;
    }
    if (st == SL_OK && s->src.copy_views && s->src.view && s->src.release) {
        s->from = sl__calloc((size_t)s->nout * (size_t)init->batch_size, sizeof *s->from, err);
        if (!s->from) st = SL_ENOMEM;
    }
    if (st != SL_OK) {
        src_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

static sl_source_info info_of(const src_state *s, const sl__op_io *io, int i, int o) {
    sl_source_info f;
    f.iteration = io->sample_base / s->batch_size;
    f.idx_in_batch = i;
    f.sample = io->sample_base + i;
    f.output = o;
    return f;
}

/* An error of the source's (or about what it said) for sample i's output o. */
static sl_status src_fail(const src_state *s, const sl__op_io *io, int i, int o, sl_status st,
                          const char *what, sl_err *err) {
    char msg[SL_ERRMSG_MAX];
    snprintf(msg, sizeof msg, "%s", what && what[0] ? what : sl_status_str(st));
    char out[24] = "";
    if (s->nout > 1) snprintf(out, sizeof out, " output %d", o);
    return sl_err_set(err, st, "%s: source '%s': batch %lld sample %d%s: %s", s->name, s->source,
                      (long long)(io->sample_base / s->batch_size), i, out, msg);
}

/* Output o's layout for this batch (nd: its samples' dimensions) into lay: the source's, checked
 * as DALI checks a fed batch's ("" takes the op's `layout` argument; without one, once a layout
 * was given every later batch must give it again), else the op's `layout` argument. */
static sl_status batch_layout(src_state *s, const sl__op_io *io, int o, int nd, char *lay,
                              sl_err *err) {
    memcpy(lay, s->layout[o], SL_LAYOUT_MAX + 1);
    if (!s->src.layout || io->batch == 0) return SL_OK;
    char got[SL_LAYOUT_MAX + 2];
    memset(got, 0, sizeof got);
    sl_err e;
    e.status = SL_OK;
    e.msg[0] = '\0';
    sl_status st = s->src.layout(s->src.user, io->sample_base / s->batch_size, o, got, &e);
    if (st != SL_OK) return src_fail(s, io, 0, o, st, e.msg, err);
    char bad[200] = "";
    if (got[SL_LAYOUT_MAX])
        snprintf(bad, sizeof bad, "layout gave more than %d letters", SL_LAYOUT_MAX);
    else if (s->layout[o][0] && got[0] && strcmp(got, s->layout[o]))
        snprintf(bad, sizeof bad, "expected data with layout: \"%s\" and got: \"%s\"", s->layout[o],
                 got);
    else if (!s->layout[o][0] && s->fed_set[o] && strcmp(got, s->fed_layout[o]))
        snprintf(bad, sizeof bad,
                 "the layout of the data fed changed from the previous batch's \"%s\" to \"%s\"",
                 s->fed_layout[o], got);
    else if (got[0] && (int)strlen(got) != nd)
        snprintf(bad, sizeof bad, "%d dimensions, but the fed layout \"%s\"", nd, got);
    if (bad[0]) {
        char out[24] = "";
        if (s->nout > 1) snprintf(out, sizeof out, " output %d", o);
        return sl_err_set(err, SL_EINVAL, "%s: source '%s': batch %lld%s: %s", s->name, s->source,
                          (long long)(io->sample_base / s->batch_size), out, bad);
    }
    if (!s->layout[o][0] && got[0]) {
        memcpy(s->fed_layout[o], got, SL_LAYOUT_MAX + 1);
        s->fed_set[o] = true;
    }
    if (got[0]) memcpy(lay, got, SL_LAYOUT_MAX + 1);
    return SL_OK;
}

/* Output o as the source's views of its samples (sizes set by sl_tlist_reset's caller), if the
 * source gives one for every sample; *all false (nothing changed) when it does not. With
 * copy_views, the views are kept in s->from for the workers to copy from instead (*all false). */
static sl_status try_views(src_state *s, sl__op_io *io, int o, int nd, bool *all, sl_err *err) {
    *all = false;
    const void **ptr = sl__malloc((size_t)(io->batch ? io->batch : 1) * sizeof *ptr, err);
    if (!ptr) return SL_ENOMEM;
    bool every = true;
    for (int i = 0; i < io->batch && every; i++) {
        sl_source_info f = info_of(s, io, i, o);
        sl_err e;
        e.status = SL_OK;
        e.msg[0] = '\0';
        ptr[i] = NULL;
        sl_status st = s->src.view(s->src.user, &f, &ptr[i], &e);
        if (st != SL_OK) {
            free(ptr);
            return src_fail(s, io, i, o, st, e.msg, err);
        }
        every = ptr[i] != NULL;
        if (s->from) {
            s->from[(size_t)o * (size_t)s->batch_size + (size_t)i] = ptr[i];
            every = true; /* ask for every sample's */
        }
    }
    if (every && !s->from) {
        for (int i = 0; i < io->batch; i++)
            sl_tlist_set_external(io->out[o], i, (void *)ptr[i], s->shapes + (size_t)i * nd);
        *all = true;
    }
    free(ptr);
    return SL_OK;
}

static sl_status src_setup(void *state, sl__op_io *io, sl_err *err) {
    src_state *s = state;
    src_batch *sb = NULL;
    if (s->src.view && s->src.release) { /* the slot's last batch is done with: say so */
        sb = *io->batch_state;
        if (!sb) {
            sb = sl__calloc(1, sizeof *sb, err);
            if (!sb) return SL_ENOMEM;
            sb->src = s->src;
            *io->batch_state = sb;
        }
        if (sb->held) sb->src.release(sb->src.user, sb->iteration);
        sb->iteration = io->sample_base / s->batch_size;
        sb->held = true;
        atomic_store(&sb->pending, 0);
    }
    for (int o = 0; o < s->nout; o++) {
        /* an empty batch (a source's count of 0) has the op's dtype and ndim where given */
        sl_dtype dt0 = s->dtype >= 0 ? (sl_dtype)s->dtype : SL_DTYPE_U8;
        int nd0 = s->ndim >= 0 ? s->ndim : (int)strlen(s->layout[o]);
        for (int i = 0; i < io->batch; i++) {
            sl_source_info f = info_of(s, io, i, o);
            sl_dtype dt = (sl_dtype)-1;
            int nd = -1;
            int64_t *sh = s->shapes + (size_t)i * SL_MAX_DIMS;
            memset(sh, 0, SL_MAX_DIMS * sizeof *sh);
            sl_err e;
            e.status = SL_OK;
            e.msg[0] = '\0';
            sl_status st = s->src.shape(s->src.user, &f, &dt, &nd, sh, &e);
            if (st != SL_OK) return src_fail(s, io, i, o, st, e.msg, err);
            char bad[160] = "";
            if (sl_dtype_size(dt) == 0)
                snprintf(bad, sizeof bad, "shape gave data type %d, not one of sl_dtype's",
                         (int)dt);
            else if (nd < 0 || nd > SL_MAX_DIMS)
                snprintf(bad, sizeof bad, "shape gave ndim %d (0..%d)", nd, SL_MAX_DIMS);
            else if (s->dtype >= 0 && (int)dt != s->dtype)
                snprintf(bad, sizeof bad, "data type %s, but dtype=%s", sl_dtype_name(dt),
                         sl_dtype_name((sl_dtype)s->dtype));
            else if (s->ndim >= 0 && nd != s->ndim)
                snprintf(bad, sizeof bad, "%d dimensions, but ndim=%d", nd, s->ndim);
            else if (i > 0 && (dt != dt0 || nd != nd0))
                snprintf(bad, sizeof bad, "%s with %d dimensions, but sample 0 is %s with %d",
                         sl_dtype_name(dt), nd, sl_dtype_name(dt0), nd0);
            else if (s->layout[o][0] && (int)strlen(s->layout[o]) != nd)
                snprintf(bad, sizeof bad, "%d dimensions, but layout \"%s\"", nd, s->layout[o]);
            for (int d = 0; d < nd && !bad[0] && nd <= SL_MAX_DIMS; d++)
                if (sh[d] < 0)
                    snprintf(bad, sizeof bad, "extent %lld in dimension %d", (long long)sh[d], d);
            if (bad[0]) return src_fail(s, io, i, o, SL_EINVAL, bad, err);
            if (i == 0) dt0 = dt, nd0 = nd;
        }
        /* shapes rows are SL_MAX_DIMS apart; the list wants them packed */
        for (int i = 1; i < io->batch && nd0 < SL_MAX_DIMS; i++)
            memmove(s->shapes + (size_t)i * (size_t)nd0, s->shapes + (size_t)i * SL_MAX_DIMS,
                    (size_t)nd0 * sizeof *s->shapes);
        sl_tlist *out = io->out[o];
        SL_TRY(sl_tlist_reset(out, io->batch, dt0, nd0, sl_cpu(), err));
        s->viewed[o] = false;
        if (sb) SL_TRY(try_views(s, io, o, nd0, &s->viewed[o], err));
        if (!s->viewed[o]) SL_TRY(sl_tlist_alloc(out, s->shapes, err));
        SL_TRY(batch_layout(s, io, o, nd0, out->layout, err));
    }
    if (s->from) { /* every sample of every output is copied or filled by run */
        atomic_store(&sb->pending, io->batch * s->nout);
        if (io->batch == 0) {
            sb->src.release(sb->src.user, sb->iteration);
            sb->held = false;
        }
    }
    return SL_OK;
}

/* How many samples batch `iteration` has: the source's count, else a full batch. */
static sl_status src_count(void *state, int64_t iteration, int max, int *n, sl_err *err) {
    src_state *s = state;
    *n = max;
    if (!s->src.count) return SL_OK;
    sl_err e;
    e.status = SL_OK;
    e.msg[0] = '\0';
    int got = -1;
    sl_status st = s->src.count(s->src.user, iteration, max, &got, &e);
    if (st != SL_OK)
        return sl_err_set(err, st, "%s: source '%s': batch %lld: %s", s->name, s->source,
                          (long long)iteration, e.msg[0] ? e.msg : sl_status_str(st));
    if (got < 0 || got > max)
        return sl_err_set(err, SL_EINVAL,
                          "%s: source '%s': batch %lld has %d samples, but the batch size is at "
                          "most %d (the pipeline's batch_size)",
                          s->name, s->source, (long long)iteration, got, max);
    *n = got;
    return SL_OK;
}

static sl_status src_run(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)worker;
    src_state *s = state;
    for (int o = 0; o < s->nout; o++) {
        if (s->viewed[o]) continue;
        const void *from = s->from ? s->from[(size_t)o * (size_t)s->batch_size + (size_t)i] : NULL;
        size_t n = sl_tlist_sample_nbytes(io->out[o], i);
        if (from) {
            if (n) memcpy(io->out[o]->data[i], from, n);
        } else {
            sl_source_info f = info_of(s, io, i, o);
            sl_err e;
            e.status = SL_OK;
            e.msg[0] = '\0';
            sl_status st = s->src.fill(s->src.user, &f, io->out[o]->data[i], n, &e);
            if (st != SL_OK) return src_fail(s, io, i, o, st, e.msg, err);
        }
        src_batch *sb = s->from ? *io->batch_state : NULL;
        if (sb && atomic_fetch_sub(&sb->pending, 1) == 1) { /* the batch's last sample */
            sb->src.release(sb->src.user, sb->iteration);
            sb->held = false;
        }
    }
    return SL_OK;
}

const sl__op_def sl__external_source_op = {
    .name = "external_source",
    .doc = "Samples made by the caller's code: a source registered with sl_pipeline_add_source "
           "is asked for each sample's dtype and shape, then writes it into the batch.",
    .min_inputs = 0,
    .max_inputs = 0,
    .args = src_args,
    .devices = SL_OPDEV_CPU,
    .num_outputs = src_num_outputs,
    .create = src_create,
    .setup = src_setup,
    .run_cpu = src_run,
    .count = src_count,
    .destroy = src_destroy,
    .free_batch_state = src_batch_free,
};
