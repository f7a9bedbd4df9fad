/* SPDX-License-Identifier: Apache-2.0 */
/* cat and stack: DALI's fn.cat (join the inputs along an existing axis) and fn.stack (along a new
 * one). Any number of inputs of one data type and rank; for cat the samples' extents must agree
 * except along `axis`, for stack they must agree everywhere. `axis_name` picks the axis by layout
 * letter (cat) or names the new one (stack: inserted into the inputs' layout). Each output sample
 * is a run of block copies: for every index of the axes before `axis`, each input's block in turn.
 * On a GPU each (sample, input) pair is one descriptor of a single copy launch (ops/cat_stack.cu):
 * its block's rows, strided into the output sample. */
#include "operator/gpu_args.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SLUICE_HAVE_CUDA
#include "ops/cat_stack.h"
#endif

static const sl__arg_schema cs_args[] = {
    {"axis", SL_ARG_INT, "0", "the axis (negative: from the end)", 0, NULL},
    {"axis_name", SL_ARG_STR, "None",
     "cat: the axis by layout letter; stack: the new axis's letter in the output layout", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct cs_state {
    bool stack;
    const char *name;
    int axis;
    char axis_name; /* 0 when not given */
    int a;          /* the batch's axis, resolved against the rank (setup) */
    int64_t *shapes;
    int cap;
    /* setup's per sample: the outer extent (the axes before the joined one), and each input's
     * block (its bytes per outer index) at blocks[i * inputs + j] */
    int64_t *outer;
    size_t *blocks;
    size_t blocks_cap;
    sl__gpu_args gpu; /* the CUDA run's descriptors */
} cs_state;

static void cs_destroy(void *state) {
    cs_state *s = state;
    if (s) {
        free(s->shapes);
        free(s->outer);
        free(s->blocks);
        sl__gpu_args_free(&s->gpu);
    }
    free(s);
}

static sl_status cs_create_as(const sl__args *a, bool stack, void **out, sl_err *err) {
    cs_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->stack = stack;
    s->name = stack ? "stack" : "cat";
    s->axis = (int)sl__args_int(a, "axis");
    const char *an = sl__args_str(a, "axis_name");
    if (an && strlen(an) != 1) {
        sl_err_set(err, SL_EINVAL, "%s: axis_name \"%s\" must be one letter", s->name, an);
        cs_destroy(s);
        return SL_EINVAL;
    }
    if (an) s->axis_name = an[0];
    *out = s;
    return SL_OK;
}

static sl_status cat_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    return cs_create_as(a, false, out, err);
}
static sl_status stack_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    return cs_create_as(a, true, out, err);
}

/* Sample i's outer extent (the axes before the joined one) and each input's block: its bytes per
 * outer index. */
static int64_t blocks_of(const cs_state *s, const sl__op_io *io, int i, size_t *block) {
    size_t es = sl_dtype_size(io->in[0]->dtype);
    const int64_t *sh0 = sl_tlist_shape(io->in[0], i);
    int64_t outer = 1;
    for (int d = 0; d < s->a; d++) outer *= sh0[d];
    for (int j = 0; j < io->num_inputs; j++) {
        const int64_t *sh = sl_tlist_shape(io->in[j], i);
        int64_t v = 1;
        for (int d = s->a; d < io->in[j]->ndim; d++) v *= sh[d];
        block[j] = (size_t)v * es;
    }
    return outer;
}

static sl_status cs_setup(void *state, sl__op_io *io, sl_err *err) {
    cs_state *s = state;
    const sl_tlist *in0 = io->in[0];
    int nd = in0->ndim, ond = s->stack ? nd + 1 : nd;
    for (int j = 1; j < io->num_inputs; j++)
        if (io->in[j]->dtype != in0->dtype || io->in[j]->ndim != nd)
            return sl_err_set(err, SL_EINVAL,
                              "%s: input %d is %s with %d dimensions, input 0 %s with %d", s->name,
                              j, sl_dtype_name(io->in[j]->dtype), io->in[j]->ndim,
                              sl_dtype_name(in0->dtype), nd);
    int a = s->axis;
    if (!s->stack && s->axis_name) {
        const char *at = strchr(in0->layout, s->axis_name);
        if (!at)
            return sl_err_set(err, SL_EINVAL, "%s: axis '%c' is not in the layout \"%s\"", s->name,
                              s->axis_name, in0->layout);
        a = (int)(at - in0->layout);
    }
    if (a < 0) a += ond;
    if (a < 0 || a >= ond || (!s->stack && nd == 0))
        return sl_err_set(err, SL_EINVAL, "%s: axis %d for %d-dimensional %s", s->name, s->axis,
                          ond, s->stack ? "outputs" : "inputs");
    if (ond > SL_MAX_DIMS)
        return sl_err_set(err, SL_EINVAL, "stack: %d dimensions (at most %d)", ond, SL_MAX_DIMS);
    s->a = a;
    if (io->batch > s->cap) {
        int64_t *n = realloc(s->shapes, (size_t)io->batch * SL_MAX_DIMS * sizeof *n);
        if (!n) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", s->name);
        s->shapes = n;
        n = realloc(s->outer, (size_t)io->batch * sizeof *n);
        if (!n) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", s->name);
        s->outer = n;
        s->cap = io->batch;
    }
    size_t nb = (size_t)io->batch * (size_t)io->num_inputs;
    if (nb > s->blocks_cap) {
        size_t *n = realloc(s->blocks, nb * sizeof *n);
        if (!n) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", s->name);
        s->blocks = n;
        s->blocks_cap = nb;
    }
    for (int i = 0; i < io->batch; i++) {
        const int64_t *sh0 = sl_tlist_shape(in0, i);
        int64_t *o = s->shapes + (size_t)i * (size_t)ond;
        for (int j = 1; j < io->num_inputs; j++) {
            const int64_t *sh = sl_tlist_shape(io->in[j], i);
            for (int d = 0; d < nd; d++)
                if (sh[d] != sh0[d] && (s->stack || d != a))
                    return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                                       "input %d's extent %lld in dimension %d differs from input "
                                       "0's %lld",
                                       j, (long long)sh[d], d, (long long)sh0[d]);
        }
        if (s->stack) {
            for (int d = 0, k = 0; d < ond; d++) o[d] = d == a ? io->num_inputs : sh0[k++];
        } else {
            memcpy(o, sh0, (size_t)nd * sizeof *o);
            for (int j = 1; j < io->num_inputs; j++) o[a] += sl_tlist_shape(io->in[j], i)[a];
        }
    }
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, in0->dtype, ond, io->device, err));
    SL_TRY(sl_tlist_alloc(out, s->shapes, err));
    memset(out->layout, 0, sizeof out->layout);
    size_t ll = strlen(in0->layout);
    if (!s->stack)
        memcpy(out->layout, in0->layout, sizeof out->layout);
    else if (s->axis_name && (int)ll == nd && ond <= SL_LAYOUT_MAX) /* insert the new letter */
        for (int d = 0, k = 0; d < ond; d++)
            out->layout[d] = d == a ? s->axis_name : in0->layout[k++];
    for (int i = 0; i < io->batch; i++)
        s->outer[i] = blocks_of(s, io, i, s->blocks + (size_t)i * (size_t)io->num_inputs);
    return SL_OK;
}

static sl_status cs_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)worker, (void)err;
    cs_state *s = state;
    int n = io->num_inputs;
    const size_t *block = s->blocks + (size_t)i * (size_t)n;
    int64_t outer = s->outer[i];
    uint8_t *dst = io->out[0]->data[i];
    if (!dst) return SL_OK; /* a sample of no bytes (no memory: NULL + 0 is undefined) */
    for (int64_t o = 0; o < outer; o++)
        for (int j = 0; j < n; j++) {
            if (block[j]) /* (an empty block may have no address) */
                memcpy(dst, (const uint8_t *)io->in[j]->data[i] + (size_t)o * block[j], block[j]);
            dst += block[j];
        }
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
static sl_status cs_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    cs_state *s = state;
    int n = io->num_inputs, m = io->batch * n;
    sl__cuda_blocks_desc *d = sl__gpu_args_host(&s->gpu, io->device.id, (size_t)m * sizeof *d, err);
    if (!d) return err->status;
    for (int i = 0; i < io->batch; i++) {
        const size_t *block = s->blocks + (size_t)i * (size_t)n;
        size_t row = 0;
        int64_t outer = s->outer[i];
        for (int j = 0; j < n; j++) row += block[j];
        uint8_t *dst = io->out[0]->data[i];
        for (int j = 0; j < n; j++) {
            sl__cuda_blocks_desc *x = &d[i * n + j];
            x->src = io->in[j]->data[i];
            x->dst = dst;
            x->rows = block[j] ? outer : 0; /* (an empty block may have no address) */
            x->row_bytes = (int64_t)block[j];
            x->dst_pitch = (int64_t)row;
            if (block[j]) dst += block[j];
        }
    }
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, (size_t)m * sizeof *d, io->stream, &dd, err));
    return sl__cuda_copy_blocks(dd, d, m, io->stream, err);
}
#define CS_GPU .devices = SL_OPDEV_CPU | SL_OPDEV_GPU, .run_gpu = cs_run_gpu,
#else
#define CS_GPU .devices = SL_OPDEV_CPU,
#endif

const sl__op_def sl__cat_op = {
    .name = "cat",
    .doc = "Joins the inputs along an existing axis (DALI's fn.cat).",
    .min_inputs = 1,
    .max_inputs = INT_MAX,
    .args = cs_args,
    CS_GPU.create = cat_create,
    .setup = cs_setup,
    .run_cpu = cs_run_cpu,
    .destroy = cs_destroy,
};

const sl__op_def sl__stack_op = {
    .name = "stack",
    .doc = "Stacks the inputs along a new axis (DALI's fn.stack).",
    .min_inputs = 1,
    .max_inputs = INT_MAX,
    .args = cs_args,
    CS_GPU.create = stack_create,
    .setup = cs_setup,
    .run_cpu = cs_run_cpu,
    .destroy = cs_destroy,
};
