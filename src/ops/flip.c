/* SPDX-License-Identifier: Apache-2.0 */
/* flip: mirrors images horizontally, vertically and/or depthwise, as DALI's fn.flip (horizontal
 * default 1, vertical and depthwise default 0, all per sample). The input's layout says where H,
 * W and D are (HWC, CHW, DHWC, CDHW, FHWC, FCHW, FDHWC, FCDHW, ...: H and W next to each other,
 * D right before H); without one, a rank of 2, 3 or 4 is read as HW, HWC or DHWC. Any dtype; the
 * output has the input's shape and layout. depthwise flips along D (an input without one has
 * nothing to flip there, as DALI). */
#include "operator/argin.h"
#include "operator/gpu_args.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdlib.h>
#include <string.h>

#ifdef SLUICE_HAVE_CUDA
#include "ops/flip.h"
#endif

static const sl__arg_schema flip_args[] = {
    {"horizontal", SL_ARG_INT, "1", "nonzero: flip along W", SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME,
     NULL},
    {"vertical", SL_ARG_INT, "0", "nonzero: flip along H", SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME,
     NULL},
    {"depthwise", SL_ARG_INT, "0", "nonzero: flip along D (volumes)",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct flip_state {
    int h, v, d, node_h, node_v, node_d;
    uint8_t *flags; /* per sample: bit 0 horizontal, bit 1 vertical, bit 2 depthwise */
    int cap;
    sl__gpu_args gpu;
} flip_state;

static void flip_destroy(void *state) {
    flip_state *s = state;
    if (s) {
        sl__gpu_args_free(&s->gpu);
        free(s->flags);
    }
    free(s);
}

static sl_status flip_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    flip_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->h = sl__args_int(a, "horizontal") != 0;
    s->v = sl__args_int(a, "vertical") != 0;
    s->node_h = sl__args_node(a, "horizontal");
    s->node_v = sl__args_node(a, "vertical");
    s->d = sl__args_int(a, "depthwise") != 0;
    s->node_d = sl__args_node(a, "depthwise");
    *out = s;
    return SL_OK;
}

/* Where H, W (and D) sit in the input: from its layout, else from its rank (HW, HWC, DHWC). H
 * and W must be next to each other, and D, where there is one, right before H; the axes before
 * are planes, the axes after W one pixel. *hpos is -1 for an input flip cannot take. */
static void flip_axes(const sl_tlist *in, int *hpos, bool *has_d) {
    const char *l = in->layout;
    *has_d = false;
    *hpos = -1;
    if (!l[0]) {
        if (in->ndim >= 2 && in->ndim <= 4) *hpos = in->ndim == 4 ? 1 : 0;
        *has_d = in->ndim == 4;
        return;
    }
    const char *h = strchr(l, 'H');
    if (!h || h[1] != 'W' || strchr(h + 1, 'H') || strchr(h + 2, 'W')) return;
    *hpos = (int)(h - l);
    *has_d = *hpos > 0 && l[*hpos - 1] == 'D';
}

static sl_status flip_setup(void *state, sl__op_io *io, sl_err *err) {
    flip_state *s = state;
    const sl_tlist *in = io->in[0];
    int hpos;
    bool has_d;
    flip_axes(in, &hpos, &has_d);
    if (hpos < 0)
        return sl_err_set(err, SL_EINVAL,
                          "flip: the input's layout must have H and W next to each other, and D "
                          "(if any) right before H (HW, HWC, CHW, DHWC, CDHW, FHWC, FCHW, "
                          "FDHWC, ...); got \"%s\" with %d dims",
                          in->layout, in->ndim);
    if (io->batch > s->cap) {
        uint8_t *nf = realloc(s->flags, (size_t)io->batch);
        if (!nf) return sl_err_set(err, SL_ENOMEM, "flip: out of memory");
        s->flags = nf;
        s->cap = io->batch;
    }
    for (int i = 0; i < io->batch; i++) {
        double h = s->h, v = s->v, d = s->d;
        if (s->node_h >= 0) sl__argin_values(io, s->node_h, i, &h, 1);
        if (s->node_v >= 0) sl__argin_values(io, s->node_v, i, &v, 1);
        if (s->node_d >= 0) sl__argin_values(io, s->node_d, i, &d, 1);
        s->flags[i] = (uint8_t)((h != 0) | (v != 0) << 1 | (d != 0) << 2);
    }
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, in->dtype, in->ndim, io->device, err));
    SL_TRY(sl_tlist_alloc(out, in->shapes, err));
    memcpy(out->layout, in->layout, sizeof out->layout);
    return SL_OK;
}

/* Sample i as planes of (H, W) pixels of px bytes, in groups of *depth planes that a depthwise
 * flip reverses (1 where the input has no D). */
static void flip_geometry(const sl_tlist *in, int i, int64_t *planes, int64_t *depth, int64_t *H,
                          int64_t *W, size_t *px) {
    const int64_t *sh = sl_tlist_shape(in, i);
    int hpos;
    bool has_d;
    flip_axes(in, &hpos, &has_d);
    *planes = 1, *depth = has_d ? sh[hpos - 1] : 1;
    for (int d = 0; d < hpos; d++) *planes *= sh[d];
    *H = sh[hpos], *W = sh[hpos + 1];
    *px = sl_dtype_size(in->dtype);
    for (int d = hpos + 2; d < in->ndim; d++) *px *= (size_t)sh[d];
}

static sl_status flip_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    flip_state *s = state;
    const sl_tlist *in = io->in[0];
    int64_t planes, depth, H, W;
    size_t px;
    flip_geometry(in, i, &planes, &depth, &H, &W, &px);
    const uint8_t *src = in->data[i];
    uint8_t *dst = io->out[0]->data[i];
    int fh = s->flags[i] & 1, fv = (s->flags[i] >> 1) & 1, fd = (s->flags[i] >> 2) & 1;
    size_t row = px * (size_t)W;
    if (row == 0) return SL_OK; /* no bytes (and maybe no memory: NULL + 0 is undefined) */
    for (int64_t p = 0; p < planes; p++)
        for (int64_t y = 0; y < H; y++) {
            int64_t sp = fd ? p / depth * depth + (depth - 1 - p % depth) : p;
            const uint8_t *r = src + ((size_t)(sp * H + (fv ? H - 1 - y : y))) * row;
            uint8_t *o = dst + (size_t)(p * H + y) * row;
            if (!fh) {
                memcpy(o, r, row);
                continue;
            }
            for (int64_t x = 0; x < W; x++)
                memcpy(o + (size_t)x * px, r + (size_t)(W - 1 - x) * px, px);
        }
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
static sl_status flip_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    flip_state *s = state;
    sl__cuda_flip_desc *d =
        sl__gpu_args_host(&s->gpu, io->device.id, (size_t)io->batch * sizeof *d, err);
    if (!d) return err->status;
    int64_t maxpix = 0;
    for (int i = 0; i < io->batch; i++) {
        size_t px;
        flip_geometry(io->in[0], i, &d[i].planes, &d[i].depth, &d[i].h, &d[i].w, &px);
        d[i].px = (int64_t)px;
        d[i].flags = s->flags[i];
        d[i].in = io->in[0]->data[i];
        d[i].out = io->out[0]->data[i];
        int64_t n = d[i].planes * d[i].h * d[i].w;
        if (n > maxpix) maxpix = n;
    }
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, (size_t)io->batch * sizeof *d, io->stream, &dd, err));
    return sl__cuda_flip(dd, io->batch, maxpix, io->stream, err);
}
#endif

const sl__op_def sl__flip_op = {
    .name = "flip",
    .doc = "Flips images horizontally and/or vertically (per sample).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = flip_args,
    .flags = SL_OPF_SEQUENCE,
#ifdef SLUICE_HAVE_CUDA
    .devices = SL_OPDEV_CPU | SL_OPDEV_GPU,
    .run_gpu = flip_run_gpu,
#else
    .devices = SL_OPDEV_CPU,
#endif
    .create = flip_create,
    .setup = flip_setup,
    .run_cpu = flip_run_cpu,
    .destroy = flip_destroy,
};
