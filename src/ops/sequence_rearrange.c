/* SPDX-License-Identifier: Apache-2.0 */
/* sequence_rearrange (DALI's fn.sequence_rearrange): the frames of each sequence in a new order.
 * The input's outermost dim is the sequence (a layout, where there is one, starts with F);
 * `new_order` lists, per output frame, the input frame it is: one list for every sample or a
 * per-sample 1-D tensor. Frames may repeat or be left out; the output has len(new_order) frames
 * and the input's other dims, type and layout. An index outside [0, frames), an empty order and
 * an order that is not 1-D are errors naming the sample, in DALI's words. */
#include "operator/argin.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/cuda.h"
#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME      "sequence_rearrange"
#define MAX_ORDER 65536

static const sl__arg_schema sr_args[] = {
    {"new_order", SL_ARG_INTS, NULL,
     "per output frame, the input frame it is: a list, or a per-sample 1-D tensor",
     SL_ARGF_REQUIRED | SL_ARGF_PER_SAMPLE, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct sr_state {
    const sl__args *a;
    int node;     /* the per-sample new_order input, or -1 */
    int64_t *buf; /* MAX_ORDER, for setup */
} sr_state;

static void sr_destroy(void *state) {
    sr_state *s = state;
    if (s) free(s->buf);
    free(s);
}

static sl_status sr_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    sr_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->a = a;
    s->node = sl__args_node(a, "new_order");
    if (s->node < 0) {
        const int64_t *v;
        if (sl__args_ints(a, "new_order", &v) < 1) {
            free(s);
            return sl_err_set(err, SL_EINVAL, "%s: Empty result sequences are not allowed", NAME);
        }
    }
    if (!(s->buf = sl__malloc(MAX_ORDER * sizeof *s->buf, err))) {
        free(s);
        return SL_ENOMEM;
    }
    *out = s;
    return SL_OK;
}

/* sample i's order into out (MAX_ORDER), checked against its frames; *n its length */
static sl_status order_of(const sr_state *s, const sl__op_io *io, int i, int64_t frames,
                          int64_t *out, int *n, sl_err *err) {
    if (s->node >= 0) {
        const sl_tlist *t = io->arg_in[s->node];
        if (t->ndim > 1)
            return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                               "new_order: Input with dimension %d cannot be converted to "
                               "dimension 1",
                               t->ndim);
    }
    SL_TRY(sl__args_sample_ints(s->a, io, NAME, "new_order", i, out, MAX_ORDER, n, err));
    if (*n < 1)
        return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                           "Empty `new_order` for sample %d is not allowed", i);
    for (int k = 0; k < *n; k++)
        if (out[k] < 0 || out[k] >= frames)
            return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                               "new_order[%d] must be between 0 and input_sequence_length = %lld "
                               "for sample %d, but it is: %lld",
                               k, (long long)frames, i, (long long)out[k]);
    return SL_OK;
}

static size_t frame_bytes(const sl_tlist *in, int i) {
    const int64_t *sh = sl_tlist_shape(in, i);
    size_t b = sl_dtype_size(in->dtype);
    for (int d = 1; d < in->ndim; d++) b *= (size_t)sh[d];
    return b;
}

static sl_status sr_setup(void *state, sl__op_io *io, sl_err *err) {
    sr_state *s = state;
    const sl_tlist *in = io->in[0];
    if (in->ndim < 1 || (in->layout[0] && in->layout[0] != 'F'))
        return sl_err_set(err, SL_EINVAL,
                          "%s: Expected sequence as the input, where outermost dimension "
                          "represents frames dimension `F`, got data with layout = \"%s\"",
                          NAME, in->layout);
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, in->dtype, in->ndim, io->device, err));
    int64_t *shapes =
        sl__malloc((size_t)(io->batch ? io->batch : 1) * (size_t)in->ndim * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0; i < io->batch && !st; i++) {
        const int64_t *sh = sl_tlist_shape(in, i);
        int n = 0;
        st = order_of(s, io, i, sh[0], s->buf, &n, err);
        int64_t *o = shapes + (size_t)i * (size_t)in->ndim;
        o[0] = n;
        for (int d = 1; d < in->ndim; d++) o[d] = sh[d];
    }
    if (!st) st = sl_tlist_alloc(out, shapes, err);
    free(shapes);
    if (st) return st;
    memcpy(out->layout, in->layout, sizeof out->layout);
    return SL_OK;
}

static sl_status sr_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)worker;
    sr_state *s = state;
    const sl_tlist *in = io->in[0];
    int64_t order[256], *ord = order;
    int cap = 256, n = 0;
    const int64_t *sh = sl_tlist_shape(in, i);
    int64_t want = sl_tlist_shape(io->out[0], i)[0];
    if (want > cap) {
        if (!(ord = sl__malloc((size_t)want * sizeof *ord, err))) return SL_ENOMEM;
        cap = (int)want;
    }
    sl_status st = sl__args_sample_ints(s->a, io, NAME, "new_order", i, ord, cap, &n, err);
    size_t fb = frame_bytes(in, i);
    for (int k = 0; !st && k < n; k++)
        if (ord[k] >= 0 && ord[k] < sh[0] && fb)
            memcpy((char *)io->out[0]->data[i] + (size_t)k * fb,
                   (const char *)in->data[i] + (size_t)ord[k] * fb, fb);
    if (ord != order) free(ord);
    return st;
}

#ifdef SLUICE_HAVE_CUDA
static sl_status sr_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    sr_state *s = state;
    const sl_tlist *in = io->in[0];
    int64_t *ord = sl__malloc(MAX_ORDER * sizeof *ord, err);
    if (!ord) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0; i < io->batch && !st; i++) {
        int n = 0;
        st = sl__args_sample_ints(s->a, io, NAME, "new_order", i, ord, MAX_ORDER, &n, err);
        size_t fb = frame_bytes(in, i);
        for (int k = 0; !st && k < n && fb; k++)
            st = sl__cuda_memcpy((char *)io->out[0]->data[i] + (size_t)k * fb, true,
                                 (const char *)in->data[i] + (size_t)ord[k] * fb, true, fb,
                                 io->stream, err);
    }
    free(ord);
    return st;
}
#endif

const sl__op_def sl__sequence_rearrange_op = {
    .name = "sequence_rearrange",
    .doc = "The frames of each sequence (outermost dim F) in the order new_order lists.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = sr_args,
#ifdef SLUICE_HAVE_CUDA
    .devices = SL_OPDEV_CPU | SL_OPDEV_GPU,
    .run_gpu = sr_run_gpu,
#else
    .devices = SL_OPDEV_CPU,
#endif
    .create = sr_create,
    .setup = sr_setup,
    .run_cpu = sr_run_cpu,
    .destroy = sr_destroy,
};
