/* SPDX-License-Identifier: Apache-2.0 */
/* grid_mask (DALI's fn.grid_mask, the GridMask augmentation): zeroes an HWC image's pixels under a
 * grid of black squares. In tile units, pixel (x, y) of the image (x the column) sits at
 *     u = (x cos(angle) - y sin(angle) - shift_x) / tile,  v = (x sin(angle) + y cos(angle) -
 *     shift_y) / tile
 * and is kept where frac(u) >= ratio or frac(v) >= ratio (the squares are ratio of a tile wide),
 * zeroed elsewhere; computed in float as DALI's kernel. tile, ratio, angle (radians), shift_x and
 * shift_y are constants or per-sample values. The output has the input's type, shape and layout.
 * CPU; a CUDA pipeline runs it on the CPU. */
#include "operator/argin.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME "grid_mask"

static const sl__arg_schema gm_args[] = {
    {"tile", SL_ARG_INT, "100", "a tile's length: a black square's width plus the gap (>= 1)",
     SL_ARGF_PER_SAMPLE, NULL},
    {"ratio", SL_ARG_FLOAT, "0.5", "a black square's width over the tile's", SL_ARGF_PER_SAMPLE,
     NULL},
    {"angle", SL_ARG_FLOAT, "0.0", "the grid's rotation, in radians", SL_ARGF_PER_SAMPLE, NULL},
    {"shift_x", SL_ARG_FLOAT, "0.0", "x of the grid's translation, after the rotation",
     SL_ARGF_PER_SAMPLE, NULL},
    {"shift_y", SL_ARG_FLOAT, "0.0", "y of the grid's translation, after the rotation",
     SL_ARGF_PER_SAMPLE, NULL},
    {"seed", SL_ARG_INT, "-1", "accepted; no effect (nothing is drawn)", 0, NULL},
    {"preserve", SL_ARG_BOOL, "False", "accepted (the op is never pruned here)", 0, NULL},
    {"bytes_per_sample_hint", SL_ARG_INTS, "[0]", "accepted, unused", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

static const char *const gm_names[5] = {"tile", "ratio", "angle", "shift_x", "shift_y"};

typedef struct gm_state {
    double val[5]; /* the constants */
    int node[5];   /* their per-sample inputs, or -1 */
    int cap;
    float (*p)[5]; /* batch: each sample's values */
} gm_state;

static void gm_destroy(void *state) {
    gm_state *s = state;
    if (s) free(s->p);
    free(s);
}

static sl_status gm_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    gm_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->val[0] = (double)sl__args_int(a, "tile");
    for (int k = 1; k < 5; k++) s->val[k] = sl__args_float(a, gm_names[k]);
    for (int k = 0; k < 5; k++) s->node[k] = sl__args_node(a, gm_names[k]);
    if (s->node[0] < 0 && s->val[0] < 1) {
        double tile = s->val[0];
        free(s);
        return sl_err_set(err, SL_EINVAL, "%s: tile %g (at least 1)", NAME, tile);
    }
    *out = s;
    return SL_OK;
}

static sl_status gm_setup(void *state, sl__op_io *io, sl_err *err) {
    gm_state *s = state;
    const sl_tlist *in = io->in[0];
    if (in->ndim != 3 || (in->layout[0] && strcmp(in->layout, "HWC")))
        return sl_err_set(err, SL_EINVAL,
                          "%s: the input must be HWC images (got %d dims, layout "
                          "\"%s\")",
                          NAME, in->ndim, in->layout);
    if (io->batch > s->cap) {
        void *n = realloc(s->p, (size_t)io->batch * sizeof *s->p);
        if (!n) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", NAME);
        s->p = n;
        s->cap = io->batch;
    }
    for (int i = 0; i < io->batch; i++)
        for (int k = 0; k < 5; k++) {
            double v = s->val[k];
            if (s->node[k] >= 0 && sl__argin_values(io, s->node[k], i, &v, 1) != 1)
                return sl__op_fail(err, SL_EINVAL, io, i, NAME, "%s must be one value per sample",
                                   gm_names[k]);
            if (k == 0 && !(v >= 1))
                return sl__op_fail(err, SL_EINVAL, io, i, NAME, "tile %g (at least 1)", v);
            s->p[i][k] = k == 0 ? (float)(int64_t)v : (float)v;
        }
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, in->dtype, 3, io->device, err));
    int64_t *shapes = sl__malloc((size_t)(io->batch ? io->batch : 1) * 3 * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    for (int i = 0; i < io->batch; i++) memcpy(shapes + 3 * i, sl_tlist_shape(in, i), 24);
    sl_status st = sl_tlist_alloc(out, shapes, err);
    free(shapes);
    if (!st) memcpy(out->layout, in->layout, sizeof out->layout);
    return st;
}

static sl_status gm_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)worker, (void)err;
    const gm_state *s = state;
    const sl_tlist *in = io->in[0];
    const int64_t *sh = sl_tlist_shape(in, i);
    const float *p = s->p[i];
    float tile = p[0], ratio = p[1];
    float ca = cosf(p[2]) / tile, sa = sinf(p[2]) / tile, sx = p[3] / tile, sy = p[4] / tile;
    size_t px = (size_t)sh[2] * sl_dtype_size(in->dtype);
    const char *src = in->data[i];
    char *dst = io->out[0]->data[i];
    for (int64_t y = 0; y < sh[0]; y++) {
        float uy = -sx - (float)y * sa, vy = -sy + (float)y * ca;
        for (int64_t x = 0; x < sh[1]; x++) {
            float u = uy + (float)x * ca, v = vy + (float)x * sa;
            bool keep = u - floorf(u) >= ratio || v - floorf(v) >= ratio;
            size_t at = ((size_t)y * (size_t)sh[1] + (size_t)x) * px;
            if (keep)
                memcpy(dst + at, src + at, px);
            else
                memset(dst + at, 0, px);
        }
    }
    return SL_OK;
}

const sl__op_def sl__grid_mask_op = {
    .name = "grid_mask",
    .doc = "GridMask: zeroes an HWC image under a (rotated, shifted) grid of black squares.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = gm_args,
    .devices = SL_OPDEV_CPU,
    .create = gm_create,
    .setup = gm_setup,
    .run_cpu = gm_run_cpu,
    .destroy = gm_destroy,
};
