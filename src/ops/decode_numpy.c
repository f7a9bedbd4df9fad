/* SPDX-License-Identifier: Apache-2.0 */
/* decoders.numpy (DALI's fn.decoders.numpy): each sample of the input is a serialized .npy file
 * (uint8 1-D, e.g. a webdataset member or io.file.read's output); the output is its array, in C
 * order (a Fortran-order array is reordered), of its own type or, with dtype, converted to dtype
 * as cast converts (operator/dtype_conv.h). Setup parses every header (io/npy.h: format 1.0 to
 * 3.0, the types sl_dtype has) and sizes the output: the samples must share their rank, and,
 * without dtype, their type; run_cpu copies each array on the pool. A header that does not parse,
 * or bytes fewer or more than it says, is an error naming the sample. */
#include "io/npy.h"
#include "operator/dtype_conv.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME "decoders.numpy"

static const sl__arg_schema dn_args[] = {
    {"dtype", SL_ARG_DTYPE, NULL, "the output's type (default: the arrays' own, which must agree)",
     0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct dn_state {
    sl_dtype dtype; /* SL_DTYPE_COUNT when not given: the arrays' own */
    int cap;
    sl__npy_header *head;       /* batch */
    sl__worker_scratch scratch; /* a Fortran-order array reordered before it is converted */
} dn_state;

static void dn_destroy(void *state) {
    dn_state *s = state;
    if (!s) return;
    free(s->head);
    sl__worker_scratch_free(&s->scratch);
    free(s);
}

static sl_status dn_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    dn_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->dtype = sl__args_given(a, "dtype") ? sl__args_dtype(a, "dtype") : SL_DTYPE_COUNT;
    sl_status st = sl__worker_scratch_init(&s->scratch, init->threads, err);
    if (st) {
        dn_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

static sl_status dn_setup(void *state, sl__op_io *io, sl_err *err) {
    dn_state *s = state;
    const sl_tlist *in = io->in[0];
    if (in->dtype != SL_DTYPE_U8 || in->ndim != 1)
        return sl_err_set(err, SL_EINVAL,
                          "%s: the input is a serialized .npy file: uint8, 1-D (got %s, %d dims)",
                          NAME, sl_dtype_name(in->dtype), in->ndim);
    if (io->batch > s->cap) {
        sl__npy_header *h = realloc(s->head, (size_t)io->batch * sizeof *h);
        if (!h) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", NAME);
        s->head = h;
        s->cap = io->batch;
    }
    for (int i = 0; i < io->batch; i++) {
        sl__npy_header *h = &s->head[i];
        size_t len = (size_t)sl_tlist_shape(in, i)[0], need = 0;
        sl_status st = sl__npy_parse(in->data[i], len, h, &need, err);
        if (st == SL_EOF)
            return sl__op_fail(err, SL_EFORMAT, io, i, NAME,
                               "%zu bytes, fewer than the .npy header's %zu", len, need);
        if (st) {
            char msg[SL_ERRMSG_MAX];
            snprintf(msg, sizeof msg, "%s", err->msg);
            return sl__op_fail(err, st, io, i, NAME, "%s", msg);
        }
        if (len - h->data_offset != h->nbytes)
            return sl__op_fail(err, SL_EFORMAT, io, i, NAME,
                               "the header's %s array of %zu bytes, but %zu bytes follow it",
                               sl_dtype_name(h->dtype), h->nbytes, len - h->data_offset);
        if (h->ndim != s->head[0].ndim)
            return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                               "a %d-D array in a batch whose first sample's is %d-D (a batch "
                               "shares its rank)",
                               h->ndim, s->head[0].ndim);
        if (s->dtype == SL_DTYPE_COUNT && h->dtype != s->head[0].dtype)
            return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                               "%s, the batch's first sample %s: give dtype to convert them to "
                               "one type",
                               sl_dtype_name(h->dtype), sl_dtype_name(s->head[0].dtype));
    }
    int nd = io->batch > 0 ? s->head[0].ndim : 1;
    sl_dtype to = s->dtype != SL_DTYPE_COUNT ? s->dtype
                  : io->batch > 0            ? s->head[0].dtype
                                             : SL_DTYPE_U8;
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, to, nd, sl_cpu(), err));
    int64_t *shapes = sl__malloc(
        (size_t)(io->batch > 0 ? io->batch : 1) * (size_t)(nd ? nd : 1) * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    for (int i = 0; i < io->batch; i++)
        memcpy(shapes + (size_t)i * (size_t)nd, s->head[i].shape, (size_t)nd * sizeof *shapes);
    sl_status st = sl_tlist_alloc(out, shapes, err);
    free(shapes);
    if (!st) out->layout[0] = '\0';
    return st;
}

static sl_status dn_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    dn_state *s = state;
    const sl__npy_header *h = &s->head[i];
    const uint8_t *src = (const uint8_t *)io->in[0]->data[i] + h->data_offset;
    sl_tlist *out = io->out[0];
    bool reorder = h->fortran && h->ndim > 1;
    size_t item = sl_dtype_size(h->dtype);
    if (out->dtype == h->dtype) {
        if (reorder)
            sl__npy_fortran_to_c(h, src, out->data[i]);
        else if (h->nbytes)
            memcpy(out->data[i], src, h->nbytes);
        return SL_OK;
    }
    /* converted element by element: from C order, each element at an address of its size (the
     * header's length places the data; an odd one is copied first) */
    if (reorder || (uintptr_t)src % item) {
        uint8_t *c = sl__worker_scratch_get(&s->scratch, worker, h->nbytes);
        if (!c) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", NAME);
        if (reorder)
            sl__npy_fortran_to_c(h, src, c);
        else
            memcpy(c, src, h->nbytes);
        src = c;
    }
    sl__dtype_conv_n(out->data[i], out->dtype, src, h->dtype, (int64_t)(h->nbytes / item));
    return SL_OK;
}

const sl__op_def sl__decode_numpy_op = {
    .name = "decoders.numpy",
    .doc = "Each sample's serialized .npy file (uint8 1-D) decoded to its array, in C order, of "
           "its own type or converted to dtype.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = dn_args,
    .devices = SL_OPDEV_CPU,
    .flags = SL_OPF_DECODER,
    .create = dn_create,
    .setup = dn_setup,
    .run_cpu = dn_run_cpu,
    .destroy = dn_destroy,
};
