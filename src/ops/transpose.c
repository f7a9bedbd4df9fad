/* SPDX-License-Identifier: Apache-2.0 */
/* transpose: DALI's fn.transpose. Output dimension d is input dimension perm[d] (default: the
 * dimensions reversed); the layout is permuted with them (transpose_layout, default True) unless
 * output_layout names one. Any dtype and rank; each sample keeps its own extents. Setup checks perm
 * against the input's rank; run_cpu and the CUDA run copy element by element through the permuted
 * strides (a sample whose permutation moves no extent above 1 is one memcpy). */
#include "operator/gpu_args.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SLUICE_HAVE_CUDA
#include "ops/transpose.h"
#endif

static const sl__arg_schema tr_args[] = {
    {"perm", SL_ARG_INTS, "None",
     "output dimension d is input dimension perm[d] (default: the dimensions reversed)", 0, NULL},
    {"transpose_layout", SL_ARG_BOOL, "True", "permute the layout's letters with the dimensions", 0,
     NULL},
    {"output_layout", SL_ARG_STR, "None", "the output's layout (instead of the permuted one)", 0,
     NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct tr_state {
    int nperm; /* -1: not given (the dimensions reversed); 0: a scalar's empty perm */
    int perm[SL_MAX_DIMS];
    bool transpose_layout;
    char out_layout[SL_LAYOUT_MAX + 1];
    bool has_out_layout;
    int p[SL_MAX_DIMS]; /* the batch's permutation (setup) */
    sl__gpu_args gpu;
} tr_state;

static void tr_destroy(void *state) {
    tr_state *s = state;
    if (s) sl__gpu_args_free(&s->gpu);
    free(s);
}

static sl_status tr_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    tr_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    sl_status st = SL_OK;
    s->nperm = -1;
    if (sl__args_get(a, "perm")->kind != SL_VAL_NONE) {
        const int64_t *p;
        int n = sl__args_ints(a, "perm", &p);
        bool seen[SL_MAX_DIMS] = {false};
        if (n < 0 || n > SL_MAX_DIMS) /* [] is a scalar's */
            st = sl_err_set(err, SL_EINVAL, "transpose: perm has %d entries (0..%d)", n,
                            SL_MAX_DIMS);
        for (int d = 0; d < n && st == SL_OK; d++) {
            if (p[d] < 0 || p[d] >= n || seen[p[d]])
                st = sl_err_set(err, SL_EINVAL,
                                "transpose: perm must hold each of 0..%d once (entry %d is %lld)",
                                n - 1, d, (long long)p[d]);
            else
                seen[p[d]] = true, s->perm[d] = (int)p[d];
        }
        s->nperm = n;
    }
    s->transpose_layout = sl__args_bool(a, "transpose_layout");
    const char *ol = sl__args_str(a, "output_layout");
    if (st == SL_OK && ol) {
        if (strlen(ol) > SL_LAYOUT_MAX)
            st = sl_err_set(err, SL_EINVAL, "transpose: output_layout \"%s\" is too long", ol);
        snprintf(s->out_layout, sizeof s->out_layout, "%s", ol);
        s->has_out_layout = true;
    }
    if (st != SL_OK) {
        tr_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

static sl_status tr_setup(void *state, sl__op_io *io, sl_err *err) {
    tr_state *s = state;
    const sl_tlist *in = io->in[0];
    int nd = in->ndim;
    if (s->nperm >= 0 && s->nperm != nd)
        return sl_err_set(err, SL_EINVAL, "transpose: perm has %d entries, the input %d dimensions",
                          s->nperm, nd);
    for (int d = 0; d < nd; d++) s->p[d] = s->nperm >= 0 ? s->perm[d] : nd - 1 - d;
    if (s->has_out_layout && s->out_layout[0] && (int)strlen(s->out_layout) != nd)
        return sl_err_set(err, SL_EINVAL, "transpose: output_layout \"%s\" for %d dimensions",
                          s->out_layout, nd);
    int64_t *shapes = sl__malloc((size_t)io->batch * (size_t)(nd ? nd : 1) * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    for (int i = 0; i < io->batch; i++) {
        const int64_t *sh = sl_tlist_shape(in, i);
        for (int d = 0; d < nd; d++) shapes[(size_t)i * (size_t)nd + (size_t)d] = sh[s->p[d]];
    }
    sl_tlist *out = io->out[0];
    sl_status st = sl_tlist_reset(out, io->batch, in->dtype, nd, io->device, err);
    if (st == SL_OK) st = sl_tlist_alloc(out, shapes, err);
    free(shapes);
    if (st != SL_OK) return st;
    memset(out->layout, 0, sizeof out->layout);
    if (s->has_out_layout)
        memcpy(out->layout, s->out_layout, sizeof out->layout);
    else if (s->transpose_layout && (int)strlen(in->layout) == nd)
        for (int d = 0; d < nd; d++) out->layout[d] = in->layout[s->p[d]];
    else
        memcpy(out->layout, in->layout, sizeof out->layout);
    return SL_OK;
}

/* Sample i's output extents and, per output dimension, the input stride (in elements) it walks. */
static void geometry(const tr_state *s, const sl_tlist *in, int i, int64_t *oshape,
                     int64_t *stride) {
    const int64_t *sh = sl_tlist_shape(in, i);
    int nd = in->ndim;
    int64_t istride[SL_MAX_DIMS], k = 1;
    for (int d = nd - 1; d >= 0; d--) istride[d] = k, k *= sh[d];
    for (int d = 0; d < nd; d++) oshape[d] = sh[s->p[d]], stride[d] = istride[s->p[d]];
}

/* whether the permutation keeps the order of the dimensions longer than 1 (then a plain copy) */
static bool is_copy(const tr_state *s, const sl_tlist *in, int i) {
    const int64_t *sh = sl_tlist_shape(in, i);
    int last = -1;
    for (int d = 0; d < in->ndim; d++) {
        if (sh[s->p[d]] <= 1) continue;
        if (s->p[d] < last) return false;
        last = s->p[d];
    }
    return true;
}

static sl_status tr_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)worker, (void)err;
    tr_state *s = state;
    const sl_tlist *in = io->in[0];
    size_t es = sl_dtype_size(in->dtype), n = sl_tlist_sample_nbytes(in, i) / es;
    const uint8_t *src = in->data[i];
    uint8_t *dst = io->out[0]->data[i];
    if (is_copy(s, in, i)) {
        if (n) memcpy(dst, src, n * es); /* (an empty sample may have no address) */
        return SL_OK;
    }
    int nd = in->ndim;
    int64_t oshape[SL_MAX_DIMS], stride[SL_MAX_DIMS], idx[SL_MAX_DIMS] = {0}, off = 0;
    geometry(s, in, i, oshape, stride);
    for (size_t k = 0; k < n; k++) { /* the output in order, the input through its strides */
        memcpy(dst + k * es, src + (size_t)off * es, es);
        for (int d = nd - 1; d >= 0; d--) {
            if (++idx[d] < oshape[d]) {
                off += stride[d];
                break;
            }
            off -= stride[d] * (oshape[d] - 1);
            idx[d] = 0;
        }
    }
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
static sl_status tr_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    tr_state *s = state;
    const sl_tlist *in = io->in[0];
    sl__cuda_transpose_desc *d =
        sl__gpu_args_host(&s->gpu, io->device.id, (size_t)io->batch * sizeof *d, err);
    if (!d) return err->status;
    int64_t maxn = 0;
    size_t es = sl_dtype_size(in->dtype);
    for (int i = 0; i < io->batch; i++) {
        memset(&d[i], 0, sizeof d[i]);
        d[i].in = in->data[i];
        d[i].out = io->out[0]->data[i];
        d[i].n = (int64_t)(sl_tlist_sample_nbytes(in, i) / es);
        d[i].ndim = is_copy(s, in, i) ? 0 : in->ndim; /* 0: a plain copy */
        geometry(s, in, i, d[i].shape, d[i].stride);
        if (d[i].n > maxn) maxn = d[i].n;
    }
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, (size_t)io->batch * sizeof *d, io->stream, &dd, err));
    return sl__cuda_transpose(dd, io->batch, maxn, (int)es, io->stream, err);
}
#endif

const sl__op_def sl__transpose_op = {
    .name = "transpose",
    .doc = "Permutes dimensions (perm; default: reversed), and the layout with them.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = tr_args,
#ifdef SLUICE_HAVE_CUDA
    .devices = SL_OPDEV_CPU | SL_OPDEV_GPU,
    .run_gpu = tr_run_gpu,
#else
    .devices = SL_OPDEV_CPU,
#endif
    .create = tr_create,
    .setup = tr_setup,
    .run_cpu = tr_run_cpu,
    .destroy = tr_destroy,
};
