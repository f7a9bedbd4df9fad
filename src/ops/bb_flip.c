/* SPDX-License-Identifier: Apache-2.0 */
/* bb_flip: mirrors bounding boxes in relative coordinates (the image is [0, 1] x [0, 1]), as
 * DALI's fn.bb_flip: horizontal (default 1) and vertical (default 0), both per sample; ltrb says
 * whether a box is [l, t, r, b] or [x, y, w, h]. Input: float boxes (N, 4), or (4N,); the output
 * has its shape. As DALI, a box is taken to its corners, the corners are mirrored (x -> 1 - x) and
 * swapped, and the box is written back in its format, all in single precision, so [x, y, w, h]
 * gives x' = 1 - (x + w) and w' = (1 - x) - x'. The CUDA run (bb_flip.cu) applies the same rule
 * (bb_flip.h) to every box of the batch at once. */
#include "operator/argin.h"
#include "operator/gpu_args.h"
#include "operator/op.h"

#include "ops/bb_flip.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdlib.h>
#include <string.h>

static const sl__arg_schema bb_flip_args[] = {
    {"ltrb", SL_ARG_BOOL, "False", "boxes are [l, t, r, b] (else [x, y, w, h])", 0, NULL},
    {"horizontal", SL_ARG_INT, "1", "nonzero: mirror along x", SL_ARGF_PER_SAMPLE, NULL},
    {"vertical", SL_ARG_INT, "0", "nonzero: mirror along y", SL_ARGF_PER_SAMPLE, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct bb_flip_state {
    bool ltrb;
    int h, v, node_h, node_v;
    uint8_t *flags; /* per sample: bit 0 horizontal, bit 1 vertical */
    int cap;
    sl__gpu_args gpu; /* the CUDA run's descriptors */
} bb_flip_state;

static void bb_flip_destroy(void *state) {
    bb_flip_state *s = state;
    if (s) {
        free(s->flags);
        sl__gpu_args_free(&s->gpu);
    }
    free(s);
}

static sl_status bb_flip_create(const sl__args *a, const sl__op_init *init, void **out,
                                sl_err *err) {
    (void)init;
    bb_flip_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->ltrb = sl__args_bool(a, "ltrb");
    s->h = sl__args_int(a, "horizontal") != 0;
    s->v = sl__args_int(a, "vertical") != 0;
    s->node_h = sl__args_node(a, "horizontal");
    s->node_v = sl__args_node(a, "vertical");
    *out = s;
    return SL_OK;
}

static sl_status bb_flip_setup(void *state, sl__op_io *io, sl_err *err) {
    bb_flip_state *s = state;
    const sl_tlist *in = io->in[0];
    if (in->dtype != SL_DTYPE_F32)
        return sl_err_set(err, SL_EINVAL, "bb_flip: boxes must be float (got %s)",
                          sl_dtype_name(in->dtype));
    if (in->ndim != 1 && in->ndim != 2)
        return sl_err_set(err, SL_EINVAL, "bb_flip: boxes must be (N, 4) or (4N,) (got %d dims)",
                          in->ndim);
    for (int i = 0; i < io->batch; i++) {
        const int64_t *sh = sl_tlist_shape(in, i);
        if ((in->ndim == 2 && sh[1] != 4) || (in->ndim == 1 && sh[0] % 4 != 0))
            return sl_err_set(
                err, SL_EINVAL,
                "bb_flip: sample %d: boxes must be (N, 4) or (4N,) (got (%lld%s%lld))", i,
                (long long)sh[0], in->ndim == 2 ? ", " : "",
                in->ndim == 2 ? (long long)sh[1] : 0LL);
    }
    if (io->batch > s->cap) {
        uint8_t *nf = realloc(s->flags, (size_t)io->batch);
        if (!nf) return sl_err_set(err, SL_ENOMEM, "bb_flip: out of memory");
        s->flags = nf;
        s->cap = io->batch;
    }
    for (int i = 0; i < io->batch; i++) {
        double h = s->h, v = s->v;
        if (s->node_h >= 0) sl__argin_values(io, s->node_h, i, &h, 1);
        if (s->node_v >= 0) sl__argin_values(io, s->node_v, i, &v, 1);
        s->flags[i] = (uint8_t)((h != 0) | (v != 0) << 1);
    }
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, SL_DTYPE_F32, in->ndim, io->device, err));
    SL_TRY(sl_tlist_alloc(out, in->shapes, err));
    memcpy(out->layout, in->layout, sizeof out->layout);
    return SL_OK;
}

static sl_status bb_flip_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    bb_flip_state *s = state;
    (void)worker;
    (void)err;
    const sl_tlist *in = io->in[0];
    size_t nb = sl_tlist_sample_nbytes(in, i);
    float *dst = io->out[0]->data[i];
    if (nb) memcpy(dst, in->data[i], nb);
    int64_t n = (int64_t)(nb / (4 * sizeof(float)));
    int fh = s->flags[i] & 1, fv = s->flags[i] >> 1;
    for (int64_t k = 0; k < n; k++) {
        float *b = dst + 4 * k;
        if (fh) sl__bb_flip_axis(&b[0], &b[2], s->ltrb);
        if (fv) sl__bb_flip_axis(&b[1], &b[3], s->ltrb);
    }
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
static sl_status bb_flip_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    bb_flip_state *s = state;
    sl__cuda_bb_flip_desc *d =
        sl__gpu_args_host(&s->gpu, io->device.id, (size_t)io->batch * sizeof *d, err);
    if (!d) return err->status;
    int64_t most = 0;
    for (int i = 0; i < io->batch; i++) {
        d[i].in = io->in[0]->data[i];
        d[i].out = io->out[0]->data[i];
        d[i].n = (int64_t)(sl_tlist_sample_nbytes(io->in[0], i) / (4 * sizeof(float)));
        d[i].flags = s->flags[i];
        d[i].ltrb = s->ltrb;
        if (d[i].n > most) most = d[i].n;
    }
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, (size_t)io->batch * sizeof *d, io->stream, &dd, err));
    return sl__cuda_bb_flip(dd, io->batch, most, io->stream, err);
}
#endif

const sl__op_def sl__bb_flip_op = {
    .name = "bb_flip",
    .doc = "Mirrors bounding boxes in relative coordinates horizontally and/or vertically (per "
           "sample): float (N, 4), [x, y, w, h] or, with ltrb, [l, t, r, b].",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = bb_flip_args,
#ifdef SLUICE_HAVE_CUDA
    .devices = SL_OPDEV_CPU | SL_OPDEV_GPU,
    .run_gpu = bb_flip_run_gpu,
#else
    .devices = SL_OPDEV_CPU,
#endif
    .create = bb_flip_create,
    .setup = bb_flip_setup,
    .run_cpu = bb_flip_run_cpu,
    .destroy = bb_flip_destroy,
};
