/* SPDX-License-Identifier: Apache-2.0 */
/* _conditional.split, _conditional.merge and _conditional.not_: the ops behind DALI's
 * conditionals (`if` on per-sample predicates in a pipeline defined with
 * enable_conditionals=True; the builder adds them, docs/design.md "Conditionals").
 *
 * split takes a batch and a per-sample `predicate` (bool, one element per sample) and gives two
 * smaller batches: the samples whose predicate is true, in order, and those whose predicate is
 * false. merge takes the two parts and the same predicate and gives the batch back in sample
 * order. Both are views (no copy: each output sample points at its input sample), so they run
 * anywhere, CPU or GPU data alike; the executor gives the ops inside a branch the branch's batch.
 * not_ is `not` on a bool predicate, as DALI's conditional mode computes it. */
#include "operator/dtype_conv.h"
#include "operator/op.h"

#include "core/log.h"

#include <stdio.h>
#include <string.h>

static const sl__arg_schema cond_args[] = {
    {"predicate", SL_ARG_BOOL, NULL,
     "per sample: which branch the sample takes (bool, one element)",
     SL_ARGF_REQUIRED | SL_ARGF_PER_SAMPLE, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};
static const sl__arg_schema no_args[] = {
    {NULL, 0, NULL, NULL, 0, NULL},
};

/* sample i's predicate into *out, or an error naming the sample */
static sl_status predicate(const sl__op_io *io, const char *op, int i, bool *out, sl_err *err) {
    const sl_tlist *p = io->arg_in[0];
    const int64_t *sh = sl_tlist_shape(p, i);
    int64_t n = 1;
    for (int d = 0; d < p->ndim; d++) n *= sh[d];
    if (p->dtype != SL_DTYPE_BOOL || n != 1)
        return sl__op_fail(err, SL_EINVAL, io, i, op,
                           "an `if` condition must be a bool scalar per sample (got %s with %lld "
                           "elements: compare it, e.g. `x > 0`, or cast it to bool)",
                           sl_dtype_name(p->dtype), (long long)n);
    *out = *(const uint8_t *)p->data[i] != 0;
    return SL_OK;
}

static sl_status cond_create(const sl__args *a, const sl__op_init *init, void **state,
                             sl_err *err) {
    (void)init;
    *state = NULL;
    if (sl__args_node(a, "predicate") < 0)
        return sl_err_set(err, SL_EINVAL,
                          "%s: argument 'predicate' must be an op output (one "
                          "bool per sample)",
                          a->op->name);
    return SL_OK;
}

static int split_outputs(const sl__args *a) {
    (void)a;
    return 2;
}

/* out[0]: the samples whose predicate is true; out[1]: the others (views of the input's) */
static sl_status split_setup(void *state, sl__op_io *io, sl_err *err) {
    (void)state;
    const sl_tlist *in = io->in[0];
    if (io->arg_in[0]->count != io->batch || in->count != io->batch)
        return sl_err_set(err, SL_EINVAL,
                          "_conditional.split: the input has %d samples and the "
                          "predicate %d",
                          in->count, io->arg_in[0]->count);
    int n[2] = {0, 0};
    for (int i = 0; i < io->batch; i++) {
        bool t;
        SL_TRY(predicate(io, "_conditional.split", i, &t, err));
        n[t ? 0 : 1]++;
    }
    for (int k = 0; k < 2; k++) {
        SL_TRY(sl_tlist_reset(io->out[k], n[k], in->dtype, in->ndim, in->device, err));
        memcpy(io->out[k]->layout, in->layout, sizeof in->layout);
        n[k] = 0;
    }
    for (int i = 0; i < io->batch; i++) {
        int k = *(const uint8_t *)io->arg_in[0]->data[i] ? 0 : 1;
        sl_tlist_set_external(io->out[k], n[k]++, in->data[i], sl_tlist_shape(in, i));
    }
    return SL_OK;
}

/* the batch in sample order: sample i from in[0] (true) or in[1] (false), the next unused */
static sl_status merge_setup(void *state, sl__op_io *io, sl_err *err) {
    (void)state;
    const sl_tlist *t = io->in[0], *f = io->in[1];
    int want[2] = {0, 0};
    for (int i = 0; i < io->batch; i++) {
        bool b;
        SL_TRY(predicate(io, "_conditional.merge", i, &b, err));
        want[b ? 0 : 1]++;
    }
    if (t->count != want[0] || f->count != want[1])
        return sl_err_set(err, SL_EINVAL,
                          "_conditional.merge: the branches have %d and %d "
                          "samples, the predicate asks for %d and %d",
                          t->count, f->count, want[0], want[1]);
    /* both branches ran (an empty one on no samples), so both have a type: they must agree */
    const sl_tlist *like = t;
    if ((t->dtype != f->dtype || t->ndim != f->ndim || strcmp(t->layout, f->layout) != 0))
        return sl_err_set(err, SL_EINVAL,
                          "_conditional.merge: the branches give different data: %s with %d "
                          "dimensions%s%s%s in the `if` branch, %s with %d%s%s%s in the `else` "
                          "branch (a variable assigned in both must have one type and rank)",
                          sl_dtype_name(t->dtype), t->ndim, t->layout[0] ? " (layout " : "",
                          t->layout, t->layout[0] ? ")" : "", sl_dtype_name(f->dtype), f->ndim,
                          f->layout[0] ? " (layout " : "", f->layout, f->layout[0] ? ")" : "");
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, like->dtype, like->ndim, like->device, err));
    memcpy(out->layout, like->layout, sizeof like->layout);
    int k[2] = {0, 0};
    for (int i = 0; i < io->batch; i++) {
        int side = *(const uint8_t *)io->arg_in[0]->data[i] ? 0 : 1;
        const sl_tlist *src = side ? f : t;
        int j = k[side]++;
        sl_tlist_set_external(out, i, src->data[j], sl_tlist_shape(src, j));
    }
    return SL_OK;
}

/* not_: logical not, in bool, of data of any numeric type (any shape): true where the value is
 * zero, as Python's `not` on a number (DALI's `not` takes any type that converts to bool) */
static sl_status not_setup(void *state, sl__op_io *io, sl_err *err) {
    (void)state;
    const sl_tlist *in = io->in[0];
    SL_TRY(sl_tlist_reset(io->out[0], io->batch, SL_DTYPE_BOOL, in->ndim, io->device, err));
    SL_TRY(sl_tlist_alloc(io->out[0], in->shapes, err));
    memcpy(io->out[0]->layout, in->layout, sizeof in->layout);
    return SL_OK;
}

static sl_status not_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)state, (void)worker, (void)err;
    const sl_tlist *in = io->in[0];
    const void *x = in->data[i];
    uint8_t *y = io->out[0]->data[i];
    int64_t n = (int64_t)(sl_tlist_sample_nbytes(in, i) / sl_dtype_size(in->dtype));
    if (in->dtype == SL_DTYPE_BOOL || in->dtype == SL_DTYPE_U8) {
        for (int64_t k = 0; k < n; k++) y[k] = !((const uint8_t *)x)[k];
        return SL_OK;
    }
    for (int64_t k = 0; k < n; k++) y[k] = sl__dtype_conv_load(x, in->dtype, k) == 0.0;
    return SL_OK;
}

const sl__op_def sl__cond_split_op = {
    .name = "_conditional.split",
    .doc = "The samples of a batch split by a per-sample bool predicate: those where it is true, "
           "then those where it is false (views; the ops of conditionals).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = cond_args,
    .devices = SL_OPDEV_CPU | SL_OPDEV_GPU,
    .flags = SL_OPF_NOCOPY | SL_OPF_SPLIT,
    .num_outputs = split_outputs,
    .create = cond_create,
    .setup = split_setup,
};

const sl__op_def sl__cond_merge_op = {
    .name = "_conditional.merge",
    .doc = "The two parts _conditional.split made, back in sample order by the same predicate "
           "(views; the ops of conditionals).",
    .min_inputs = 2,
    .max_inputs = 2,
    .args = cond_args,
    .devices = SL_OPDEV_CPU | SL_OPDEV_GPU,
    .flags = SL_OPF_NOCOPY | SL_OPF_MERGE,
    .create = cond_create,
    .setup = merge_setup,
};

const sl__op_def sl__cond_not_op = {
    .name = "_conditional.not_",
    .doc = "Logical not of data of any numeric type, in bool (true where the value is 0): `not` "
           "on a DataNode in a pipeline with conditionals.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = no_args,
    .devices = SL_OPDEV_CPU,
    .setup = not_setup,
    .run_cpu = not_run_cpu,
};
