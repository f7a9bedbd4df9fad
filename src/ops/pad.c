/* SPDX-License-Identifier: Apache-2.0 */
/* pad: DALI's fn.pad. Pads samples at the end of the chosen axes (`axes`, or `axis_names` from the
 * layout; default every axis) with `fill_value` (0): to the batch's largest extent in each, or,
 * where `shape` gives a positive extent, to at least that extent (a larger sample keeps its own,
 * as DALI's shape is a minimum); `align` then rounds each up to a multiple (one value for every
 * axis, or one per axis). Any type and rank; the fill value is stored in the input's type with
 * DALI's ConvertSat rules. Each element is copied as bytes or filled (ops/pad.h, shared with the
 * CUDA run). Pad to the batch's largest extent is what turns images of mixed sizes into a dense
 * batch for the iterator. axes (negative ones count from the end), shape, align and fill_value may
 * be per sample (DALI's tensor arguments), read per sample in setup through operator/argin.h. */
#include "operator/argin.h"
#include "operator/dtype_conv.h"
#include "operator/gpu_args.h"
#include "operator/op.h"
#include "ops/pad.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SLUICE_HAVE_CUDA
#include "ops/pad.h"
#endif

static const sl__arg_schema pad_args[] = {
    {"axes", SL_ARG_INTS, "[]", "the padded axes (default: all); exclusive with axis_names",
     SL_ARGF_PER_SAMPLE, NULL},
    {"axis_names", SL_ARG_STR, "\"\"", "the padded axes by layout letter (\"HW\")", 0, NULL},
    {"shape", SL_ARG_INTS, "[]",
     "per padded axis, the least extent (-1: the batch's largest; larger samples keep theirs)",
     SL_ARGF_PER_SAMPLE, NULL},
    {"align", SL_ARG_INTS, "[]", "round the padded extents up to a multiple: one or per axis",
     SL_ARGF_PER_SAMPLE, NULL},
    {"fill_value", SL_ARG_FLOAT, "0.0", "the value of the added elements", SL_ARGF_PER_SAMPLE,
     NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

static const char *const NAME = "pad";

typedef struct pad_state {
    const sl__args *a; /* axes, shape and align may be per sample: read in setup */
    int naxes;
    int axes[SL_MAX_DIMS];
    char axis_names[SL_MAX_DIMS + 1];
    int nshape, nalign; /* the literals' counts (0 where per sample) */
    double fill;
    sl__pad *p; /* per sample (setup) */
    int cap;
    sl__gpu_args gpu;
} pad_state;

static void pad_destroy(void *state) {
    pad_state *s = state;
    if (s) {
        sl__gpu_args_free(&s->gpu);
        free(s->p);
    }
    free(s);
}

/* value v of argument what is out of its range: an error about sample i (io NULL: the literal) */
static sl_status bad_value(const sl__op_io *io, int i, const char *what, int64_t v,
                           const char *range, sl_err *err) {
    if (!io) return sl_err_set(err, SL_EINVAL, "%s: %s %lld (%s)", NAME, what, (long long)v, range);
    return sl__op_fail(err, SL_EINVAL, io, i, NAME, "%s %lld (%s)", what, (long long)v, range);
}

/* Checks one sample's axes, shape and align, as sl__args_sample_ints reads them (io NULL: the
 * literals, at create). */
static sl_status check_values(const sl__op_io *io, int i, const int64_t *axes, int naxes,
                              const int64_t *shape, int nshape, const int64_t *align, int nalign,
                              sl_err *err) {
    char dims[32];
    snprintf(dims, sizeof dims, "-%d to %d", SL_MAX_DIMS, SL_MAX_DIMS - 1);
    for (int k = 0; k < naxes && !io; k++) /* (a sample's: against its rank, sample_plan) */
        if (axes[k] < -SL_MAX_DIMS || axes[k] >= SL_MAX_DIMS)
            return bad_value(io, i, "axis", axes[k], dims, err);
    for (int k = 0; k < nshape; k++)
        if (shape[k] == 0 || shape[k] < -1 || shape[k] > ((int64_t)1 << 40))
            return bad_value(io, i, "shape value", shape[k], "1 to 2^40, or -1", err);
    for (int k = 0; k < nalign; k++)
        if (align[k] < 1) /* DALI's sentence */
            return bad_value(io, i, "align", align[k],
                             "Values of `align` argument must be positive.", err);
        else if (align[k] > ((int64_t)1 << 40))
            return bad_value(io, i, "align", align[k], "1 to 2^40", err);
    return SL_OK;
}

static sl_status pad_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    pad_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->a = a;
    sl_status st = SL_OK;
    const int64_t *ax = NULL, *sh = NULL, *al = NULL;
    bool node_axes = sl__args_node(a, "axes") >= 0;
    s->naxes = node_axes ? 0 : sl__args_ints(a, "axes", &ax);
    s->nshape = sl__args_node(a, "shape") >= 0 ? 0 : sl__args_ints(a, "shape", &sh);
    s->nalign = sl__args_node(a, "align") >= 0 ? 0 : sl__args_ints(a, "align", &al);
    if (s->naxes > SL_MAX_DIMS || s->nshape > SL_MAX_DIMS || s->nalign > SL_MAX_DIMS)
        st = sl_err_set(err, SL_EINVAL, "%s: axes, shape and align have at most %d values", NAME,
                        SL_MAX_DIMS);
    if (st == SL_OK) /* DALI reads them per sample: a bad one is an error when the op runs */
        st = sl__op_at_run(init,
                           check_values(NULL, -1, ax, s->naxes, sh, s->nshape, al, s->nalign, err));
    const char *names = sl__args_str(a, "axis_names");
    if (st == SL_OK && names && names[0]) {
        if (s->naxes || node_axes)
            st = sl_err_set(err, SL_EINVAL, "%s: give axes or axis_names, not both", NAME);
        else if (strlen(names) > SL_MAX_DIMS)
            st = sl_err_set(err, SL_EINVAL, "%s: axis_names \"%s\" is too long", NAME, names);
        else
            snprintf(s->axis_names, sizeof s->axis_names, "%s", names);
    }
    if (sl__args_node(a, "fill_value") < 0) s->fill = sl__args_float(a, "fill_value");
    if (st != SL_OK) {
        pad_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

/* Sample i's padded axes (ax, *na), least extents and alignments (literal or per sample). */
static sl_status sample_plan(const pad_state *s, const sl__op_io *io, int i, int *ax, int *na,
                             int64_t *shape, int *nshape, int64_t *align, int *nalign,
                             sl_err *err) {
    const sl_tlist *in = io->in[0];
    int nd = in->ndim, naxes;
    int64_t axes[SL_MAX_DIMS];
    SL_TRY(sl__args_sample_ints(s->a, io, NAME, "axes", i, axes, SL_MAX_DIMS, &naxes, err));
    SL_TRY(sl__args_sample_ints(s->a, io, NAME, "shape", i, shape, SL_MAX_DIMS, nshape, err));
    SL_TRY(sl__args_sample_ints(s->a, io, NAME, "align", i, align, SL_MAX_DIMS, nalign, err));
    SL_TRY(check_values(io, i, axes, naxes, shape, *nshape, align, *nalign, err));
    *na = 0;
    if (s->axis_names[0]) {
        for (const char *c = s->axis_names; *c; c++) {
            const char *at = strchr(in->layout, *c);
            if (!at)
                return sl_err_set(err, SL_EINVAL, "%s: axis '%c' is not in the layout \"%s\"", NAME,
                                  *c, in->layout);
            ax[(*na)++] = (int)(at - in->layout);
        }
    } else if (naxes) {
        for (int k = 0; k < naxes; k++) {
            if (axes[k] < -nd || axes[k] >= nd) /* negative: from the end, as DALI */
                return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                                   "axes: Axis %lld out of range. Expected range is [%d, %d] "
                                   "for a %dD input",
                                   (long long)axes[k], -nd, nd - 1, nd);
            ax[(*na)++] = (int)(axes[k] < 0 ? axes[k] + nd : axes[k]);
        }
    } else {
        for (int d = 0; d < nd; d++) ax[(*na)++] = d;
    }
    if (*nshape && *nshape != *na)
        return sl__op_fail(err, SL_EINVAL, io, i, NAME, "shape has %d values for %d padded axes",
                           *nshape, *na);
    if (*nalign > 1 && *nalign != *na)
        return sl__op_fail(err, SL_EINVAL, io, i, NAME, "align has %d values for %d padded axes",
                           *nalign, *na);
    return SL_OK;
}

static sl_status pad_setup(void *state, sl__op_io *io, sl_err *err) {
    pad_state *s = state;
    const sl_tlist *in = io->in[0];
    int nd = in->ndim;
    size_t es = sl_dtype_size(in->dtype);
    if (es != 1 && es != 2 && es != 4 && es != 8)
        return sl_err_set(err, SL_EINVAL, "%s: %zu-byte elements", NAME, es);
    if (io->batch > s->cap) {
        sl__pad *p = realloc(s->p, (size_t)io->batch * sizeof *p);
        if (!p) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", NAME);
        s->p = p;
        s->cap = io->batch;
    }
    int64_t most[SL_MAX_DIMS] = {0};
    for (int i = 0; i < io->batch; i++)
        for (int d = 0; d < nd; d++)
            if (sl_tlist_shape(in, i)[d] > most[d]) most[d] = sl_tlist_shape(in, i)[d];
    int64_t *shapes = sl__malloc(
        (size_t)(io->batch ? io->batch : 1) * (size_t)(nd ? nd : 1) * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    for (int i = 0; i < io->batch; i++) {
        sl__pad *p = &s->p[i];
        const int64_t *sh = sl_tlist_shape(in, i);
        int ax[SL_MAX_DIMS], na, nshape, nalign;
        int64_t want_shape[SL_MAX_DIMS], align[SL_MAX_DIMS];
        sl_status st = sample_plan(s, io, i, ax, &na, want_shape, &nshape, align, &nalign, err);
        if (st != SL_OK) {
            free(shapes);
            return st;
        }
        p->nd = nd, p->es = (int)es;
        double fill = s->fill;
        int nfill = 1;
        if (st == SL_OK && sl__args_node(s->a, "fill_value") >= 0)
            st = sl__args_sample_floats(s->a, io, NAME, "fill_value", i, &fill, 1, &nfill, err);
        if (st == SL_OK && nfill != 1)
            st = sl__op_fail(err, SL_EINVAL, io, i, NAME, "fill_value has %d values (one)", nfill);
        if (st != SL_OK) {
            free(shapes);
            return st;
        }
        union { /* stored aligned, then copied: p->fill is bytes at any offset */
            unsigned char b[8];
            int64_t i;
            double d;
        } f;
        memset(&f, 0, sizeof f);
        sl__dtype_conv_store(f.b, in->dtype, 0, fill);
        memcpy(p->fill, f.b, sizeof p->fill);
        for (int d = 0; d < nd; d++) p->in[d] = p->out[d] = sh[d];
        for (int k = 0; k < na; k++) {
            int d = ax[k];
            int64_t want = nshape && want_shape[k] > 0 ? want_shape[k] : most[d];
            int64_t e = sh[d] > want ? sh[d] : want;
            int64_t al = nalign ? align[nalign > 1 ? k : 0] : 1;
            p->out[d] = (e + al - 1) / al * al;
        }
        memcpy(shapes + (size_t)i * (size_t)nd, p->out, (size_t)nd * sizeof *shapes);
    }
    sl_tlist *out = io->out[0];
    sl_status st = sl_tlist_reset(out, io->batch, in->dtype, nd, io->device, err);
    if (st == SL_OK) st = sl_tlist_alloc(out, shapes, err);
    if (st == SL_OK) memcpy(out->layout, in->layout, sizeof out->layout);
    free(shapes);
    return st;
}

static int64_t volume(const sl__pad *p) {
    int64_t n = 1;
    for (int d = 0; d < p->nd; d++) n *= p->out[d];
    return n;
}

static sl_status pad_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)worker, (void)err;
    pad_state *s = state;
    const sl__pad *p = &s->p[i];
    int64_t n = volume(p);
    for (int64_t e = 0; e < n; e++) sl__pad_elem(p, io->in[0]->data[i], io->out[0]->data[i], e);
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
static sl_status pad_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    pad_state *s = state;
    sl__cuda_pad_desc *d =
        sl__gpu_args_host(&s->gpu, io->device.id, (size_t)io->batch * sizeof *d, err);
    if (!d) return err->status;
    int64_t most = 0;
    for (int i = 0; i < io->batch; i++) {
        d[i].in = io->in[0]->data[i];
        d[i].out = io->out[0]->data[i];
        d[i].p = s->p[i];
        d[i].n = volume(&s->p[i]);
        if (d[i].n > most) most = d[i].n;
    }
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, (size_t)io->batch * sizeof *d, io->stream, &dd, err));
    return sl__cuda_pad(dd, io->batch, most, io->stream, err);
}
#define PAD_DEVICES .devices = SL_OPDEV_CPU | SL_OPDEV_GPU, .run_gpu = pad_run_gpu,
#else
#define PAD_DEVICES .devices = SL_OPDEV_CPU,
#endif

const sl__op_def sl__pad_op = {
    .name = "pad",
    .doc = "Pads samples at the end of the chosen axes to the batch's largest extent or a "
           "minimum shape, aligned (DALI's fn.pad).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = pad_args,
    PAD_DEVICES.create = pad_create,
    .setup = pad_setup,
    .run_cpu = pad_run_cpu,
    .destroy = pad_destroy,
};
