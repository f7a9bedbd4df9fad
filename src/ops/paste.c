/* SPDX-License-Identifier: Apache-2.0 */
/* paste (DALI's fn.paste): each HWC image placed on a larger canvas filled with fill_value (one
 * value per channel, n_channels of them, or one value for every channel, as DALI). The canvas is
 * `ratio` times the image (>= 1), at least min_canvas_size on each side, its extents truncated to
 * whole pixels; the image's top-left corner goes to (paste_y, paste_x) times the room left,
 * truncated. ratio, paste_x, paste_y and min_canvas_size may be per sample. Every dtype; CPU and
 * CUDA share ops/paste.h's rule. */
#include "ops/paste.h"
#include "operator/argin.h"
#include "operator/gpu_args.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const sl__arg_schema paste_args[] = {
    {"ratio", SL_ARG_FLOAT, NULL, "canvas size over image size (>= 1)",
     SL_ARGF_REQUIRED | SL_ARGF_PER_SAMPLE, NULL},
    {"paste_x", SL_ARG_FLOAT, "0.5", "horizontal place of the image, 0 (left) to 1 (right)",
     SL_ARGF_PER_SAMPLE, NULL},
    {"paste_y", SL_ARG_FLOAT, "0.5", "vertical place of the image, 0 (top) to 1 (bottom)",
     SL_ARGF_PER_SAMPLE, NULL},
    {"min_canvas_size", SL_ARG_FLOAT, "0.0", "smallest canvas side", SL_ARGF_PER_SAMPLE, NULL},
    {"fill_value", SL_ARG_FLOATS, NULL,
     "the canvas colour: one value per channel, or one for them all", SL_ARGF_REQUIRED, NULL},
    {"n_channels", SL_ARG_INT, "3", "channels of the images", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

static const char *const pn[4] = {"ratio", "paste_x", "paste_y", "min_canvas_size"};

typedef struct paste_state {
    double p[4];
    int node[4];
    int nch;
    double fill[SL__PASTE_MAX_C];
    sl__paste_desc *desc;
    int cap;
    sl__gpu_args gpu;
} paste_state;

static void paste_destroy(void *state) {
    paste_state *s = state;
    if (!s) return;
    free(s->desc);
    sl__gpu_args_free(&s->gpu);
    free(s);
}

static sl_status paste_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    int64_t nch = sl__args_int(a, "n_channels");
    const double *f;
    int nf = sl__args_floats(a, "fill_value", &f);
    if (nch < 1 || nch > SL__PASTE_MAX_C)
        return sl_err_set(err, SL_EINVAL, "paste: n_channels %lld (1 to %d)", (long long)nch,
                          SL__PASTE_MAX_C);
    if (nf != nch && nf != 1)
        return sl_err_set(err, SL_EINVAL, "paste: fill_value has %d values for n_channels %lld", nf,
                          (long long)nch);
    paste_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->nch = (int)nch;
    for (int c = 0; c < s->nch; c++) s->fill[c] = f[nf == 1 ? 0 : c]; /* one: every channel */
    for (int k = 0; k < 4; k++) {
        s->node[k] = sl__args_node(a, pn[k]);
        if (s->node[k] < 0) s->p[k] = sl__args_float(a, pn[k]);
    }
    *out = s;
    return SL_OK;
}

static sl_status paste_setup(void *state, sl__op_io *io, sl_err *err) {
    paste_state *s = state;
    const sl_tlist *in = io->in[0];
    if (in->ndim != 3)
        return sl_err_set(err, SL_EINVAL,
                          "paste: the input is %d-d, not HWC images: The number of dimensions %d "
                          "does not match any of the allowed layouts",
                          in->ndim, in->ndim);
    if (io->batch > s->cap) {
        sl__paste_desc *d = realloc(s->desc, (size_t)io->batch * sizeof *d);
        if (!d) return sl_err_set(err, SL_ENOMEM, "paste: out of memory");
        s->desc = d, s->cap = io->batch;
    }
    int64_t *shapes = sl__malloc((size_t)(io->batch ? io->batch : 1) * 3 * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0; i < io->batch && st == SL_OK; i++) {
        const int64_t *sh = sl_tlist_shape(in, i);
        double v[4];
        for (int k = 0; k < 4; k++) {
            v[k] = s->p[k];
            if (s->node[k] >= 0 && sl__argin_values(io, s->node[k], i, &v[k], 1) != 1)
                st = sl__op_fail(err, SL_EINVAL, io, i, "paste", "%s must be one value per sample",
                                 pn[k]);
        }
        if (st != SL_OK) break;
        if (sh[2] != s->nch) {
            st = sl__op_fail(err, SL_EINVAL, io, i, "paste", "%lld channels; n_channels is %d",
                             (long long)sh[2], s->nch);
            break;
        }
        /* DALI's sentences after each, which its users' tests match */
        if (!(v[0] >= 1))
            st = sl__op_fail(err, SL_EINVAL, io, i, "paste",
                             "ratio %g: ratio of less than 1 is not supported", v[0]);
        else if (v[0] > 1e6)
            st = sl__op_fail(err, SL_EINVAL, io, i, "paste", "ratio %g: at most 1e6", v[0]);
        for (int k = 1; k < 3 && st == SL_OK; k++)
            if (!(v[k] >= 0 && v[k] <= 1))
                st = sl__op_fail(err, SL_EINVAL, io, i, "paste",
                                 "%s %g: %s must be in range [0, 1]", pn[k], v[k], pn[k]);
        if (st == SL_OK && !(v[3] >= 0))
            st = sl__op_fail(err, SL_EINVAL, io, i, "paste",
                             "min_canvas_size %g: min_canvas_size_ of less than 0 is not supported",
                             v[3]);
        else if (st == SL_OK && v[3] > 1e9)
            st = sl__op_fail(err, SL_EINVAL, io, i, "paste", "min_canvas_size %g: at most 1e9",
                             v[3]);
        if (st != SL_OK) break;
        sl__paste_desc *d = &s->desc[i];
        memset(d, 0, sizeof *d);
        d->h = sh[0], d->w = sh[1], d->c = sh[2];
        double oh = floor((double)sh[0] * v[0]), ow = floor((double)sh[1] * v[0]);
        if (oh < v[3]) oh = floor(v[3]);
        if (ow < v[3]) ow = floor(v[3]);
        d->oh = (int64_t)oh, d->ow = (int64_t)ow;
        d->y0 = (int64_t)(v[2] * (double)(d->oh - d->h));
        d->x0 = (int64_t)(v[1] * (double)(d->ow - d->w));
        memcpy(d->fill, s->fill, sizeof d->fill);
        shapes[3 * i] = d->oh, shapes[3 * i + 1] = d->ow, shapes[3 * i + 2] = d->c;
    }
    sl_tlist *out = io->out[0];
    if (st == SL_OK) st = sl_tlist_reset(out, io->batch, in->dtype, 3, io->device, err);
    if (st == SL_OK) st = sl_tlist_alloc(out, shapes, err);
    free(shapes);
    if (st != SL_OK) return st;
    memcpy(out->layout, in->layout, sizeof out->layout);
    for (int i = 0; i < io->batch; i++) s->desc[i].in = in->data[i], s->desc[i].out = out->data[i];
    return SL_OK;
}

static sl_status paste_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    paste_state *s = state;
    (void)worker, (void)err;
    const sl__paste_desc *d = &s->desc[i];
    sl_dtype t = io->in[0]->dtype;
    int es = (int)sl_dtype_size(t);
    int64_t n = d->oh * d->ow * d->c;
    for (int64_t e = 0; e < n; e++) sl__paste_elem(d, t, es, e);
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
static sl_status paste_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    paste_state *s = state;
    size_t bytes = (size_t)io->batch * sizeof *s->desc;
    sl__paste_desc *d = sl__gpu_args_host(&s->gpu, io->device.id, bytes, err);
    if (!d) return err->status;
    int64_t maxn = 0;
    for (int i = 0; i < io->batch; i++) {
        d[i] = s->desc[i];
        if (d[i].oh * d[i].ow * d[i].c > maxn) maxn = d[i].oh * d[i].ow * d[i].c;
    }
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, bytes, io->stream, &dd, err));
    sl_dtype t = io->in[0]->dtype;
    return sl__cuda_paste(dd, io->batch, maxn, t, (int)sl_dtype_size(t), io->stream, err);
}
#endif

const sl__op_def sl__paste_op = {
    .name = "paste",
    .doc = "Places each image on a larger canvas of fill_value (ratio times its size).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = paste_args,
#ifdef SLUICE_HAVE_CUDA
    .devices = SL_OPDEV_CPU | SL_OPDEV_GPU,
    .run_gpu = paste_run_gpu,
#else
    .devices = SL_OPDEV_CPU,
#endif
    .create = paste_create,
    .setup = paste_setup,
    .run_cpu = paste_run_cpu,
    .destroy = paste_destroy,
};
