/* SPDX-License-Identifier: Apache-2.0 */
/* box_encoder: SSD's encoding of a sample's boxes against a fixed set of anchors, as DALI's
 * fn.box_encoder. Inputs: boxes (N, 4) float [l, t, r, b] and labels (N,) or (N, 1) int32;
 * outputs: (M, 4) float and (M,) int32, one row per anchor (M = len(anchors) / 4).
 * Matching, in single precision: each box claims the anchor it overlaps most (its IoU taken as 2;
 * on a tie the later anchor), then each anchor takes the box of highest IoU (on a tie the later
 * box) when that IoU is above criteria. A matched anchor gets its box as [cx, cy, w, h] and the
 * box's label; an unmatched one gets itself as [cx, cy, w, h] and label 0. With offset=True the
 * rows are instead SSD's regression targets: centres and extents multiplied by scale, then
 * ((c_box - c_anchor) / e_anchor - mean) / std for the centre and (log(e_box / e_anchor) - mean)
 * / std for the extent; unmatched rows are 0. The rule is box_encoder.h's, which the CUDA run
 * (box_encoder.cu) shares. */
#include "operator/gpu_args.h"
#include "operator/op.h"

#include "ops/box_encoder.h"

#include "core/alloc.h"
#include "core/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const sl__arg_schema box_encoder_args[] = {
    {"anchors", SL_ARG_FLOATS, NULL, "the anchors, [l, t, r, b] each, flattened", SL_ARGF_REQUIRED,
     NULL},
    {"criteria", SL_ARG_FLOAT, "0.5", "IoU above which an anchor is matched to a box (0..1)", 0,
     NULL},
    {"offset", SL_ARG_BOOL, "False", "output regression offsets instead of boxes", 0, NULL},
    {"scale", SL_ARG_FLOAT, "1.0", "factor on boxes and anchors before the offsets", 0, NULL},
    {"means", SL_ARG_FLOATS, "[0.0, 0.0, 0.0, 0.0]", "[x, y, w, h] means of the offsets", 0, NULL},
    {"stds", SL_ARG_FLOATS, "[1.0, 1.0, 1.0, 1.0]", "[x, y, w, h] standard deviations", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct box_encoder_state {
    float *anchors; /* (M, 4) ltrb */
    int64_t m;
    sl__box_params p;
    sl__gpu_args gpu;     /* the CUDA run's descriptors and anchors */
    sl__gpu_scratch best; /* the CUDA run's best anchor per box */
} box_encoder_state;

static void box_encoder_destroy(void *state) {
    box_encoder_state *s = state;
    if (s) {
        free(s->anchors);
        sl__gpu_args_free(&s->gpu);
        sl__gpu_scratch_free(&s->best);
    }
    free(s);
}

static sl_status box_encoder_create(const sl__args *a, const sl__op_init *init, void **out,
                                    sl_err *err) {
    (void)init;
    const double *an, *mv, *sv;
    int na = sl__args_floats(a, "anchors", &an);
    int nm = sl__args_floats(a, "means", &mv), ns = sl__args_floats(a, "stds", &sv);
    double crit = sl__args_float(a, "criteria"), scale = sl__args_float(a, "scale");
    if (na <= 0 || na % 4)
        return sl_err_set(err, SL_EINVAL,
                          "box_encoder: anchors must hold 4 numbers per anchor (got %d)", na);
    if (!(crit >= 0 && crit <= 1))
        return sl_err_set(err, SL_EINVAL, "box_encoder: criteria must be in [0, 1] (got %g)", crit);
    if (nm != 4 || ns != 4)
        return sl_err_set(err, SL_EINVAL,
                          "box_encoder: means and stds take 4 values each (got %d and %d)", nm, ns);
    for (int i = 0; i < 4; i++)
        if (sv[i] == 0 || !isfinite(sv[i]) || !isfinite(mv[i]))
            return sl_err_set(err, SL_EINVAL,
                              "box_encoder: stds must be finite and nonzero, means finite "
                              "(stds[%d]=%g, means[%d]=%g)",
                              i, sv[i], i, mv[i]);
    if (!isfinite(scale) || scale == 0)
        return sl_err_set(err, SL_EINVAL, "box_encoder: scale must be finite and nonzero (got %g)",
                          scale);
    box_encoder_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->m = na / 4;
    s->anchors = sl__malloc((size_t)na * sizeof *s->anchors, err);
    if (!s->anchors) {
        free(s);
        return SL_ENOMEM;
    }
    for (int i = 0; i < na; i++) s->anchors[i] = (float)an[i];
    s->p.criteria = (float)crit;
    s->p.scale = (float)scale;
    for (int i = 0; i < 4; i++) {
        s->p.means[i] = (float)mv[i];
        s->p.stds[i] = (float)sv[i];
    }
    s->p.offset = sl__args_bool(a, "offset");
    *out = s;
    return SL_OK;
}

static int box_encoder_outputs(const sl__args *a) {
    (void)a;
    return 2;
}

static sl_status box_encoder_setup(void *state, sl__op_io *io, sl_err *err) {
    box_encoder_state *s = state;
    const sl_tlist *bx = io->in[0], *lb = io->in[1];
    if (bx->dtype != SL_DTYPE_F32 || bx->ndim != 2)
        return sl_err_set(err, SL_EINVAL,
                          "box_encoder: boxes must be float (N, 4) (got %s, %d dims)",
                          sl_dtype_name(bx->dtype), bx->ndim);
    if (lb->dtype != SL_DTYPE_I32 || lb->ndim < 1 || lb->ndim > 2)
        return sl_err_set(err, SL_EINVAL,
                          "box_encoder: labels must be int32 (N,) or (N, 1) (got %s, %d dims)",
                          sl_dtype_name(lb->dtype), lb->ndim);
    for (int i = 0; i < io->batch; i++) {
        const int64_t *bs = sl_tlist_shape(bx, i), *ls = sl_tlist_shape(lb, i);
        if (bs[1] != 4)
            return sl_err_set(err, SL_EINVAL,
                              "box_encoder: sample %d: boxes are (%lld, %lld), not (N, 4)", i,
                              (long long)bs[0], (long long)bs[1]);
        if (ls[0] != bs[0] || (lb->ndim == 2 && ls[1] != 1))
            return sl_err_set(err, SL_EINVAL,
                              "box_encoder: sample %d: %lld boxes but labels of shape (%lld%s)", i,
                              (long long)bs[0], (long long)ls[0], lb->ndim == 2 ? ", 1" : ",");
    }
    sl_tlist *ob = io->out[0], *ol = io->out[1];
    int64_t *shapes = sl__malloc((size_t)(io->batch > 0 ? io->batch : 1) * 2 * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    for (int i = 0; i < io->batch; i++) {
        shapes[2 * i] = s->m;
        shapes[2 * i + 1] = 4;
    }
    sl_status st = sl_tlist_reset(ob, io->batch, SL_DTYPE_F32, 2, io->device, err);
    if (!st) st = sl_tlist_alloc(ob, shapes, err);
    for (int i = 0; i < io->batch; i++) shapes[i] = s->m;
    if (!st) st = sl_tlist_reset(ol, io->batch, SL_DTYPE_I32, 1, io->device, err);
    if (!st) st = sl_tlist_alloc(ol, shapes, err);
    free(shapes);
    ob->layout[0] = 0;
    ol->layout[0] = 0;
    return st;
}

static sl_status box_encoder_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    box_encoder_state *s = state;
    (void)worker;
    const float *boxes = io->in[0]->data[i];
    const int32_t *labels = io->in[1]->data[i];
    int64_t n = sl_tlist_shape(io->in[0], i)[0], m = s->m;
    float *ob = io->out[0]->data[i];
    int32_t *ol = io->out[1]->data[i];
    int64_t *best = NULL; /* each box's anchor */
    if (n > 0 && !(best = sl__malloc((size_t)n * sizeof *best, err))) return SL_ENOMEM;
    for (int64_t b = 0; b < n; b++) {
        float bi = sl__box_iou(boxes + 4 * b, s->anchors);
        best[b] = 0;
        for (int64_t a = 1; a < m; a++) {
            float v = sl__box_iou(boxes + 4 * b, s->anchors + 4 * a);
            if (v >= bi) {
                bi = v;
                best[b] = a;
            }
        }
    }
    for (int64_t a = 0; a < m; a++) {
        const float *an = s->anchors + 4 * a;
        int64_t bb = 0;
        float bv = 0.0f;
        for (int64_t b = 0; b < n; b++) {
            float v = best[b] == a ? 2.0f : sl__box_iou(boxes + 4 * b, an);
            if (b == 0 || v >= bv) {
                bv = v;
                bb = b;
            }
        }
        bool hit = n > 0 && bv > s->p.criteria;
        sl__box_row(&s->p, an, hit ? boxes + 4 * bb : NULL, ob + 4 * a);
        ol[a] = hit ? labels[bb] : 0;
    }
    free(best);
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
/* the descriptors, then the anchors, in one block sent to the device */
static sl_status box_encoder_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    box_encoder_state *s = state;
    size_t dbytes = sl__gpu_args_align((size_t)io->batch * sizeof(sl__cuda_box_desc));
    size_t abytes = (size_t)s->m * 4 * sizeof(float);
    char *host = sl__gpu_args_host(&s->gpu, io->device.id, dbytes + abytes, err);
    if (!host) return err->status;
    sl__cuda_box_desc *d = (sl__cuda_box_desc *)(void *)host;
    int64_t total = 0, most = 0;
    for (int i = 0; i < io->batch; i++) {
        d[i].boxes = io->in[0]->data[i];
        d[i].labels = io->in[1]->data[i];
        d[i].out_boxes = io->out[0]->data[i];
        d[i].out_labels = io->out[1]->data[i];
        d[i].n = sl_tlist_shape(io->in[0], i)[0];
        d[i].first = total;
        total += d[i].n;
        if (d[i].n > most) most = d[i].n;
    }
    memcpy(host + dbytes, s->anchors, abytes);
    int64_t *best = sl__gpu_scratch_get(
        &s->best, io->device.id, (size_t)(total > 0 ? total : 1) * sizeof *best, io->stream, err);
    if (!best) return err->status;
    void *dev;
    SL_TRY(sl__gpu_args_send(&s->gpu, dbytes + abytes, io->stream, &dev, err));
    return sl__cuda_box_encoder(dev, io->batch, most, (const float *)((char *)dev + dbytes), s->m,
                                &s->p, best, io->stream, err);
}
#endif

const sl__op_def sl__box_encoder_op = {
    .name = "box_encoder",
    .doc = "Encodes a sample's boxes (N, 4) [l, t, r, b] and labels against anchors, as SSD: "
           "(M, 4) float [cx, cy, w, h] (or offsets) and (M,) int32 labels, one per anchor.",
    .min_inputs = 2,
    .max_inputs = 2,
    .args = box_encoder_args,
#ifdef SLUICE_HAVE_CUDA
    .devices = SL_OPDEV_CPU | SL_OPDEV_GPU,
    .run_gpu = box_encoder_run_gpu,
#else
    .devices = SL_OPDEV_CPU,
#endif
    .num_outputs = box_encoder_outputs,
    .create = box_encoder_create,
    .setup = box_encoder_setup,
    .run_cpu = box_encoder_run_cpu,
    .destroy = box_encoder_destroy,
};
