/* SPDX-License-Identifier: Apache-2.0 */
/* python_function, torch_python_function and dl_tensor_python_function (DALI's fn.*): a function
 * of the caller's (in Python, any callable) run on the op's inputs, its results the op's outputs.
 * The function is registered with sl_pipeline_add_function and named by `function`. Each batch,
 * setup hands it every sample's inputs (host views) at once and takes back every sample's outputs
 * (host memory the function keeps until its next call), sizes the outputs from them, and the pool
 * copies them in, sample by sample. How the function runs over the samples (one call per batch, or
 * per sample and in parallel) is the caller's: sluice's Python package calls a per-sample function
 * from a thread pool, so functions that release the GIL run side by side. The three names differ
 * only in what the Python function is given (numpy arrays, torch tensors, DLPack capsules).
 * On the GPU (device="gpu") the inputs are device views: setup first waits for the op's stream, so
 * the inputs are complete when the function sees them, and the function returns device memory
 * (of the op's GPU; host memory is taken too) whose work is complete when it returns; run_gpu
 * copies it into the outputs on the op's stream. */
#include "operator/op.h"

#include "core/alloc.h"
#include "core/cuda.h"
#include "core/log.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const sl__arg_schema pf_args[] = {
    {"function", SL_ARG_STR, NULL, "the registered function's name (Python: the callable)",
     SL_ARGF_REQUIRED, NULL},
    {"num_outputs", SL_ARG_INT, "1", "outputs the function returns", 0, NULL},
    {"batch_processing", SL_ARG_BOOL, "False",
     "the function takes the whole batch (lists), not one sample", 0, NULL},
    {"output_layouts", SL_ARG_STRS, "None", "layout of each output (one for all, or one each)", 0,
     NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct pf_state {
    const char *opname;
    sl_function fn;
    int nout;
    int nlayouts;
    char (*layouts)[SL_LAYOUT_MAX + 1]; /* nlayouts */
    sl_tensor *ins, *outs;
    size_t ins_cap, outs_cap;
} pf_state;

static void pf_destroy(void *state) {
    pf_state *s = state;
    if (!s) return;
    free(s->ins);
    free(s->outs);
    free(s->layouts);
    free(s);
}

static int pf_num_outputs(const sl__args *a) {
    int64_t n = sl__args_int(a, "num_outputs");
    return n < 0 || n > INT_MAX ? -1 : (int)n;
}

static sl_status pf_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    pf_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->opname = a->op->name;
    sl_status st = SL_OK;
    const char *name = sl__args_str(a, "function");
    if (!init->find_source)
        st = sl_err_set(err, SL_EINVAL, "%s: this pipeline has no registered functions", s->opname);
    sl_source src;
    if (st == SL_OK) st = init->find_source(init->source_ctx, name, &src, err);
    if (st == SL_OK && (src.shape || !src.user)) /* functions: entries without shape */
        st = sl_err_set(err, SL_EINVAL, "%s: '%s' is a source, not a function", s->opname, name);
    if (st == SL_OK) s->fn = *(const sl_function *)src.user;
    s->nout = pf_num_outputs(a);
    if (st == SL_OK && s->nout < 0)
        st = sl_err_set(err, SL_EINVAL, "%s: num_outputs %lld (at least 0)", s->opname,
                        (long long)sl__args_int(a, "num_outputs"));
    if (st == SL_OK && sl__args_get(a, "output_layouts")->kind != SL_VAL_NONE) {
        const char *const *l;
        s->nlayouts = sl__args_strs(a, "output_layouts", &l);
        if (s->nlayouts != 1 && s->nlayouts != s->nout)
            st = sl_err_set(err, SL_EINVAL,
                            "%s: the length of output_layouts (%d) is greater than the number of "
                            "outputs (%d), or neither 1 nor that",
                            s->opname, s->nlayouts, s->nout);
        else if (!(s->layouts = sl__calloc((size_t)s->nlayouts, sizeof *s->layouts, err)))
            st = SL_ENOMEM;
        for (int k = 0; st == SL_OK && k < s->nlayouts; k++) {
            if (strlen(l[k]) > SL_LAYOUT_MAX)
                st = sl_err_set(err, SL_EINVAL, "%s: layout \"%s\" is too long", s->opname, l[k]);
            else
                snprintf(s->layouts[k], sizeof s->layouts[k], "%s", l[k]);
        }
    }
    (void)sl__args_bool(a, "batch_processing"); /* the caller's to honour (Python's wrapper) */
    if (st != SL_OK) {
        pf_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

static sl_status grow(sl_tensor **p, size_t *cap, size_t n, sl_err *err) {
    if (n <= *cap) return SL_OK;
    sl_tensor *q = realloc(*p, n * sizeof *q);
    if (!q) return sl_err_set(err, SL_ENOMEM, "python_function: out of memory");
    *p = q, *cap = n;
    return SL_OK;
}

static sl_status pf_setup(void *state, sl__op_io *io, sl_err *err) {
    pf_state *s = state;
    int nin = io->num_inputs, B = io->batch;
    SL_TRY(grow(&s->ins, &s->ins_cap, (size_t)B * (size_t)(nin ? nin : 1), err));
    SL_TRY(grow(&s->outs, &s->outs_cap, (size_t)B * (size_t)(s->nout ? s->nout : 1), err));
    bool gpu = io->device.kind == SL_DEVICE_CUDA;
    for (int k = 0; k < nin; k++) {
        if (io->in[k]->device.kind != io->device.kind)
            return sl_err_set(err, SL_EINVAL, "%s: input %d is on the %s, the op on the %s",
                              s->opname, k, gpu ? "CPU" : "GPU", gpu ? "GPU" : "CPU");
        for (int i = 0; i < B; i++) sl_tlist_sample(io->in[k], i, &s->ins[i * nin + k]);
    }
#ifdef SLUICE_HAVE_CUDA
    if (gpu && nin) SL_TRY(sl__cuda_stream_sync(io->stream, err)); /* the inputs, complete */
#endif
    memset(s->outs, 0, (size_t)B * (size_t)s->nout * sizeof *s->outs);
    sl_function_io f;
    memset(&f, 0, sizeof f);
    f.iteration = io->iteration;
    f.batch = B;
    f.num_inputs = nin;
    f.num_outputs = s->nout;
    f.inputs = s->ins;
    f.outputs = s->outs;
    sl_status st = s->fn.call(s->fn.user, &f, err);
    if (st != SL_OK) {
        char msg[SL_ERRMSG_MAX];
        snprintf(msg, sizeof msg, "%s", err->msg);
        return sl_err_set(err, st, "%s: batch %lld: %s", s->opname, (long long)io->iteration, msg);
    }
    for (int k = 0; k < s->nout; k++) {
        const sl_tensor *t0 = &s->outs[k];
        int64_t *shapes = sl__malloc(
            (size_t)(B ? B : 1) * (size_t)(t0->ndim > 0 ? t0->ndim : 1) * sizeof *shapes, err);
        if (!shapes) return SL_ENOMEM;
        for (int i = 0; i < B && st == SL_OK; i++) {
            const sl_tensor *t = &s->outs[i * s->nout + k];
            if (t->dtype != t0->dtype || t->ndim != t0->ndim ||
                (unsigned)t->dtype >= SL_DTYPE_COUNT || t->ndim < 0 || t->ndim > SL_MAX_DIMS)
                st = sl__op_fail(err, SL_EINVAL, io, i, s->opname,
                                 "output %d is %s with %d dims, sample 0's %s with %d: the samples "
                                 "of an output share type and rank",
                                 k, sl_dtype_name(t->dtype), t->ndim, sl_dtype_name(t0->dtype),
                                 t0->ndim);
            else
                memcpy(shapes + (size_t)i * (size_t)t0->ndim, t->shape,
                       (size_t)t0->ndim * sizeof *shapes);
        }
        for (int i = 0; i < B && st == SL_OK; i++) {
            const sl_device d = s->outs[i * s->nout + k].device;
            if ((d.kind != SL_DEVICE_CPU && d.kind != SL_DEVICE_CUDA) ||
                (d.kind == SL_DEVICE_CUDA && (!gpu || d.id != io->device.id)))
                st = sl__op_fail(err, SL_EINVAL, io, i, s->opname,
                                 "output %d is in the memory of %s, the op runs on %s", k,
                                 d.kind == SL_DEVICE_CUDA ? "a GPU" : "another device",
                                 gpu ? "another GPU" : "the CPU");
        }
        if (st == SL_OK) st = sl_tlist_reset(io->out[k], B, t0->dtype, t0->ndim, io->device, err);
        if (st == SL_OK) st = sl_tlist_alloc(io->out[k], shapes, err);
        free(shapes);
        if (st != SL_OK) return st;
        const char *lay = s->nlayouts ? s->layouts[s->nlayouts == 1 ? 0 : k] : "";
        if (*lay && (int)strlen(lay) != t0->ndim)
            return sl_err_set(err, SL_EINVAL, "%s: output_layouts \"%s\" for a %d-d output %d",
                              s->opname, lay, t0->ndim, k);
        snprintf(io->out[k]->layout, sizeof io->out[k]->layout, "%s", lay);
        for (int i = 0; i < B; i++)
            if (sl_tlist_sample_nbytes(io->out[k], i) && !s->outs[i * s->nout + k].data)
                return sl__op_fail(err, SL_EINVAL, io, i, s->opname, "output %d has no data", k);
    }
    return SL_OK;
}

static sl_status pf_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    pf_state *s = state;
    (void)worker, (void)err;
    for (int k = 0; k < s->nout; k++) {
        size_t n = sl_tlist_sample_nbytes(io->out[k], i);
        if (n) memcpy(io->out[k]->data[i], s->outs[i * s->nout + k].data, n);
    }
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
/* the function's results into the outputs, on the op's stream (the results stay alive until the
 * function's next call, in the next batch's setup, after this stream has been waited for) */
static sl_status pf_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    pf_state *s = state;
    for (int k = 0; k < s->nout; k++)
        for (int i = 0; i < io->batch; i++) {
            const sl_tensor *t = &s->outs[i * s->nout + k];
            size_t n = sl_tlist_sample_nbytes(io->out[k], i);
            if (n)
                SL_TRY(sl__cuda_memcpy(io->out[k]->data[i], true, t->data,
                                       t->device.kind == SL_DEVICE_CUDA, n, io->stream, err));
        }
    return SL_OK;
}
#define PF_DEVICES .devices = SL_OPDEV_CPU | SL_OPDEV_GPU, .run_gpu = pf_run_gpu,
#else
#define PF_DEVICES .devices = SL_OPDEV_CPU,
#endif

#define PF_OP(var, nm, doc_)                                                                       \
    const sl__op_def var = {                                                                       \
        .name = nm,                                                                                \
        .doc = doc_,                                                                               \
        .min_inputs = 0,                                                                           \
        .max_inputs = INT_MAX,                                                                     \
        .args = pf_args,                                                                           \
        PF_DEVICES.num_outputs = pf_num_outputs,                                                   \
        .create = pf_create,                                                                       \
        .setup = pf_setup,                                                                         \
        .run_cpu = pf_run_cpu,                                                                     \
        .destroy = pf_destroy,                                                                     \
    }

PF_OP(sl__python_function_op, "python_function",
      "Runs a Python function on the inputs (numpy arrays); its results are the outputs.");
PF_OP(sl__torch_python_function_op, "torch_python_function",
      "Runs a Python function on the inputs as torch tensors; its results are the outputs.");
PF_OP(sl__dl_tensor_python_function_op, "dl_tensor_python_function",
      "Runs a Python function on the inputs as DLPack capsules; its results are the outputs.");
