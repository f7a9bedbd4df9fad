/* SPDX-License-Identifier: Apache-2.0 */
/* Region and mask helpers of DALI's segmentation pipelines, CPU only, as DALI has them:
 * roi_random_crop draws a fixed-size crop window's start, int64 (D,), placed so that it holds as
 * much of a region of interest as it can (inside the ROI when the ROI is larger, around it when
 * smaller, within the input's shape when one is known); segmentation.random_mask_pixel draws a
 * pixel's coordinates, int64 (D,), uniformly among a mask's foreground (value == value, or >
 * threshold) or, with foreground=0 or none found, among all pixels; segmentation.select_masks
 * keeps the polygons (P, 3) [mask id, first vertex, end vertex] of the mask ids asked for, in
 * their order, with their vertices, optionally renumbering the masks 0..K-1. Random draws come from
 * Philox keyed by the op's seed and the sample's global index (docs/design.md), not DALI's
 * mt19937, so the values differ from DALI's while following its distributions. */
#include "operator/argin.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"
#include "core/rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* an int-vector argument that may be per sample: the literal's values or the input's */
typedef struct vec_arg {
    bool has;
    int node, n;
    double v[SL_MAX_DIMS];
} vec_arg;

static sl_status va_init(vec_arg *p, const sl__args *a, const char *op, const char *name,
                         sl_err *err) {
    memset(p, 0, sizeof *p);
    p->node = sl__args_node(a, name);
    p->has = p->node >= 0 || sl__args_get(a, name)->kind != SL_VAL_NONE;
    if (!p->has || p->node >= 0) return SL_OK;
    const int64_t *v;
    p->n = sl__args_ints(a, name, &v);
    if (p->n < 1 || p->n > SL_MAX_DIMS)
        return sl_err_set(err, SL_EINVAL, "%s: %s must have 1..%d values (got %d)", op, name,
                          SL_MAX_DIMS, p->n);
    for (int k = 0; k < p->n; k++) p->v[k] = (double)v[k];
    return SL_OK;
}

/* sample i's values into out (SL_MAX_DIMS); their count, or -1 when there are too many */
static int va_get(const vec_arg *p, const sl__op_io *io, int i, int64_t *out) {
    double v[SL_MAX_DIMS];
    int n = p->n;
    if (p->node >= 0) {
        n = sl__argin_values(io, p->node, i, v, SL_MAX_DIMS);
        if (n < 0 || n > SL_MAX_DIMS) return -1;
    } else {
        memcpy(v, p->v, sizeof v);
    }
    for (int k = 0; k < n; k++) {
        if (!(fabs(v[k]) < 9.2e18) || v[k] != floor(v[k])) return -1;
        out[k] = (int64_t)v[k];
    }
    return n;
}

/* out[0]: batch int64 vectors of n values */
static sl_status int64_vectors(sl__op_io *io, int n, sl_err *err) {
    int64_t *shapes = sl__malloc((size_t)(io->batch > 0 ? io->batch : 1) * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    for (int i = 0; i < io->batch; i++) shapes[i] = n;
    sl_status st = sl_tlist_reset(io->out[0], io->batch, SL_DTYPE_I64, 1, sl_cpu(), err);
    if (!st) st = sl_tlist_alloc(io->out[0], shapes, err);
    free(shapes);
    return st;
}

/* ---- roi_random_crop ------------------------------------------------------------------------ */

static const sl__arg_schema rrc_args[] = {
    {"crop_shape", SL_ARG_INTS, NULL, "the crop window's shape",
     SL_ARGF_REQUIRED | SL_ARGF_PER_SAMPLE, NULL},
    {"roi_start", SL_ARG_INTS, NULL, "the region of interest's start",
     SL_ARGF_REQUIRED | SL_ARGF_PER_SAMPLE, NULL},
    {"roi_end", SL_ARG_INTS, "None", "the region's end (exclusive with roi_shape)",
     SL_ARGF_PER_SAMPLE, NULL},
    {"roi_shape", SL_ARG_INTS, "None", "the region's shape (exclusive with roi_end)",
     SL_ARGF_PER_SAMPLE, NULL},
    {"in_shape", SL_ARG_INTS, "None",
     "the shape of the data to crop, bounding the window (or give the data as the input)",
     SL_ARGF_PER_SAMPLE, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct rrc_state {
    uint64_t seed;
    vec_arg crop, start, end, shape, in;
} rrc_state;

static sl_status rrc_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    rrc_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->seed = init->seed;
    sl_status st = va_init(&s->crop, a, "roi_random_crop", "crop_shape", err);
    if (!st) st = va_init(&s->start, a, "roi_random_crop", "roi_start", err);
    if (!st) st = va_init(&s->end, a, "roi_random_crop", "roi_end", err);
    if (!st) st = va_init(&s->shape, a, "roi_random_crop", "roi_shape", err);
    if (!st) st = va_init(&s->in, a, "roi_random_crop", "in_shape", err);
    if (!st && s->end.has == s->shape.has)
        st = sl_err_set(
            err, SL_EINVAL, "roi_random_crop: give either roi_end or roi_shape, not %s%s",
            s->end.has ? "both" : "neither",
            s->end.has ? ": Either ROI end or ROI shape should be defined, but not both" : "");
    if (st) {
        free(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

/* a uniform integer in [lo, hi] */
static int64_t uniform_int(sl__rng_philox *r, int64_t lo, int64_t hi) {
    return lo + (int64_t)sl__rng_philox_below(r, (uint64_t)(hi - lo) + 1);
}

static sl_status rrc_setup(void *state, sl__op_io *io, sl_err *err) {
    rrc_state *s = state;
    if (io->num_inputs == 1 && s->in.has)
        return sl_err_set(err, SL_EINVAL,
                          "roi_random_crop: in_shape and an input exclude each other: "
                          "``in_shape`` argument is incompatible with providing an input.");
    int nd = -1;
    for (int i = 0; i < io->batch; i++) {
        int64_t crop[SL_MAX_DIMS], start[SL_MAX_DIMS], x[SL_MAX_DIMS], in[SL_MAX_DIMS];
        int n = va_get(&s->crop, io, i, crop);
        if (n < 1)
            return sl__op_fail(err, SL_EINVAL, io, i, "roi_random_crop",
                               "crop_shape must be 1..%d integers", SL_MAX_DIMS);
        if (nd >= 0 && n != nd)
            return sl__op_fail(err, SL_EINVAL, io, i, "roi_random_crop",
                               "crop_shape has %d values, sample 0's %d", n, nd);
        nd = n;
        if (i == 0) SL_TRY(int64_vectors(io, nd, err));
        const char *xname = s->end.has ? "roi_end" : "roi_shape";
        if (va_get(&s->start, io, i, start) != nd ||
            va_get(s->end.has ? &s->end : &s->shape, io, i, x) != nd)
            return sl__op_fail(err, SL_EINVAL, io, i, "roi_random_crop",
                               "roi_start and %s must have crop_shape's %d integers", xname, nd);
        bool bounded = s->in.has || io->num_inputs == 1;
        if (s->in.has && va_get(&s->in, io, i, in) != nd)
            return sl__op_fail(err, SL_EINVAL, io, i, "roi_random_crop",
                               "in_shape must have crop_shape's %d integers", nd);
        if (io->num_inputs == 1) {
            const sl_tlist *t = io->in[0];
            if (t->ndim != nd)
                return sl__op_fail(err, SL_EINVAL, io, i, "roi_random_crop",
                                   "the input has %d dimensions, crop_shape %d", t->ndim, nd);
            memcpy(in, t->shapes + (size_t)i * t->ndim, (size_t)nd * sizeof *in);
        }
        sl__rng_philox r;
        sl__rng_philox_init(&r, s->seed, (uint64_t)(io->sample_base + i));
        int64_t *o = io->out[0]->data[i];
        for (int d = 0; d < nd; d++) {
            int64_t ext = s->end.has ? x[d] - start[d] : x[d];
            /* (each error ends in DALI's own sentence, which DALI's tests match) */
            if (bounded && in[d] < 0)
                return sl__op_fail(err, SL_EINVAL, io, i, "roi_random_crop",
                                   "axis %d: the input's extent is %lld: Input shape can't be "
                                   "negative.",
                                   d, (long long)in[d]);
            if (crop[d] < 0 || ext < 0 || llabs(start[d]) > ((int64_t)1 << 53) ||
                crop[d] > ((int64_t)1 << 53) || ext > ((int64_t)1 << 53))
                return sl__op_fail(err, SL_EINVAL, io, i, "roi_random_crop",
                                   "axis %d: crop %lld, ROI start %lld extent %lld (need "
                                   "non-negative sizes within 2^53)%s",
                                   d, (long long)crop[d], (long long)start[d], (long long)ext,
                                   crop[d] < 0 ? ": Crop shape can't be negative" : "");
            if (bounded && (start[d] < 0 || start[d] + ext > in[d]))
                return sl__op_fail(err, SL_EINVAL, io, i, "roi_random_crop",
                                   "axis %d: the ROI [%lld, %lld) is out of the input's bounds "
                                   "(%lld): ROI can't be out of bounds.",
                                   d, (long long)start[d], (long long)(start[d] + ext),
                                   (long long)in[d]);
            if (bounded && crop[d] > in[d])
                return sl__op_fail(err, SL_EINVAL, io, i, "roi_random_crop",
                                   "axis %d: the crop (%lld) is larger than the input (%lld): "
                                   "Cropping shape can't be bigger than the input shape.",
                                   d, (long long)crop[d], (long long)in[d]);
            if (ext == crop[d]) {
                o[d] = start[d];
            } else if (ext > crop[d]) { /* inside the ROI */
                int64_t hi = start[d] + ext - crop[d];
                if (bounded && in[d] - crop[d] < hi) hi = in[d] - crop[d];
                o[d] = uniform_int(&r, start[d], hi);
            } else { /* around the ROI */
                int64_t lo = start[d] + ext - crop[d];
                if (bounded && lo < 0) lo = 0;
                o[d] = uniform_int(&r, lo, start[d]);
            }
        }
    }
    if (io->batch == 0) SL_TRY(int64_vectors(io, 1, err));
    return SL_OK;
}

const sl__op_def sl__roi_random_crop_op = {
    .name = "roi_random_crop",
    .doc = "Draws the start (int64 (D,)) of a crop window of crop_shape that holds as much of the "
           "region of interest (roi_start with roi_end or roi_shape) as it can, within in_shape "
           "or the input's shape when given (per sample).",
    .min_inputs = 0,
    .max_inputs = 1,
    .args = rrc_args,
    .devices = SL_OPDEV_CPU,
    .flags = SL_OPF_RANDOM,
    .create = rrc_create,
    .setup = rrc_setup,
    .destroy = free,
};

/* ---- segmentation.random_mask_pixel --------------------------------------------------------- */

static const sl__arg_schema rmp_args[] = {
    {"value", SL_ARG_INT, "None",
     "foreground is the pixels equal to this (exclusive with threshold)", SL_ARGF_PER_SAMPLE, NULL},
    {"threshold", SL_ARG_FLOAT, "0.0", "foreground is the pixels above this", SL_ARGF_PER_SAMPLE,
     NULL},
    {"foreground", SL_ARG_INT, "0",
     "not 0: draw among the foreground pixels (all pixels when there are none); 0: among all",
     SL_ARGF_PER_SAMPLE, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct rmp_state {
    uint64_t seed;
    bool has_value;
    double value, threshold, fg;
    int node_value, node_threshold, node_fg;
} rmp_state;

static sl_status rmp_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    rmp_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->seed = init->seed;
    s->node_value = sl__args_node(a, "value");
    s->node_threshold = sl__args_node(a, "threshold");
    s->node_fg = sl__args_node(a, "foreground");
    s->has_value = s->node_value >= 0 || sl__args_get(a, "value")->kind != SL_VAL_NONE;
    if (s->has_value && s->node_value < 0) s->value = (double)sl__args_int(a, "value");
    s->threshold = sl__args_float(a, "threshold");
    s->fg = (double)sl__args_int(a, "foreground");
    if (s->has_value && sl__args_given(a, "threshold")) {
        free(s);
        return sl_err_set(err, SL_EINVAL,
                          "segmentation.random_mask_pixel: value and threshold exclude each other");
    }
    *out = s;
    return SL_OK;
}

static sl_status rmp_setup(void *state, sl__op_io *io, sl_err *err) {
    (void)state;
    const sl_tlist *in = io->in[0];
    switch (in->dtype) {
    case SL_DTYPE_U8:
    case SL_DTYPE_I8:
    case SL_DTYPE_U16:
    case SL_DTYPE_I16:
    case SL_DTYPE_U32:
    case SL_DTYPE_I32:
    case SL_DTYPE_U64:
    case SL_DTYPE_I64:
    case SL_DTYPE_F32:
    case SL_DTYPE_BOOL:
        break;
    default:
        return sl_err_set(err, SL_EINVAL,
                          "segmentation.random_mask_pixel: a mask of %s is not "
                          "supported (integers, float or bool)",
                          sl_dtype_name(in->dtype));
    }
    if (in->ndim < 1)
        return sl_err_set(err, SL_EINVAL,
                          "segmentation.random_mask_pixel: the mask must have dimensions");
    return int64_vectors(io, in->ndim, err);
}

/* element k of the mask as a double (integers beyond 2^53 round, as DALI's float compare) */
static double mask_at(const sl_tlist *t, int i, int64_t k) {
    const void *p = t->data[i];
    switch (t->dtype) {
    case SL_DTYPE_U8:
    case SL_DTYPE_BOOL:
        return ((const uint8_t *)p)[k];
    case SL_DTYPE_I8:
        return ((const int8_t *)p)[k];
    case SL_DTYPE_U16:
        return ((const uint16_t *)p)[k];
    case SL_DTYPE_I16:
        return ((const int16_t *)p)[k];
    case SL_DTYPE_U32:
        return ((const uint32_t *)p)[k];
    case SL_DTYPE_I32:
        return ((const int32_t *)p)[k];
    case SL_DTYPE_U64:
        return (double)((const uint64_t *)p)[k];
    case SL_DTYPE_I64:
        return (double)((const int64_t *)p)[k];
    default:
        return ((const float *)p)[k];
    }
}

static double rmp_arg(double v, int node, const sl__op_io *io, int i) {
    if (node >= 0) sl__argin_values(io, node, i, &v, 1);
    return v;
}

static sl_status rmp_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    rmp_state *s = state;
    (void)worker;
    (void)err;
    const sl_tlist *in = io->in[0];
    int nd = in->ndim;
    const int64_t *sh = in->shapes + (size_t)i * nd;
    int64_t total = 1;
    for (int d = 0; d < nd; d++) total *= sh[d];
    int64_t *o = io->out[0]->data[i];
    sl__rng_philox r;
    sl__rng_philox_init(&r, s->seed, (uint64_t)(io->sample_base + i));
    double fg = rmp_arg(s->fg, s->node_fg, io, i);
    if (total > 0 && fg != 0) {
        double value = rmp_arg(s->value, s->node_value, io, i);
        double thr = rmp_arg(s->threshold, s->node_threshold, io, i);
        float fthr = (float)thr;
        /* as DALI: a value the mask's type cannot hold matches nothing */
        bool match_none = false;
        if (s->has_value) {
            double lo = 0, hi = 0;
            switch (in->dtype) {
            case SL_DTYPE_U8:
            case SL_DTYPE_BOOL:
                lo = 0, hi = 255;
                break;
            case SL_DTYPE_I8:
                lo = -128, hi = 127;
                break;
            case SL_DTYPE_U16:
                lo = 0, hi = 65535;
                break;
            case SL_DTYPE_I16:
                lo = -32768, hi = 32767;
                break;
            case SL_DTYPE_U32:
            case SL_DTYPE_U64:
                lo = 0, hi = 1e30;
                break;
            default:
                lo = -1e30, hi = 1e30;
                break;
            }
            match_none = value < lo || value > hi;
        }
        int64_t count = 0;
        for (int64_t k = 0; !match_none && k < total; k++) {
            double x = mask_at(in, i, k);
            count += s->has_value ? x == value : (double)(float)x > (double)fthr;
        }
        if (count > 0) {
            int64_t pick = (int64_t)sl__rng_philox_below(&r, (uint64_t)count), k = 0;
            for (;; k++) {
                double x = mask_at(in, i, k);
                if ((s->has_value ? x == value : (double)(float)x > (double)fthr) && pick-- == 0)
                    break;
            }
            for (int d = nd - 1; d >= 0; d--) {
                o[d] = k % sh[d];
                k /= sh[d];
            }
            return SL_OK;
        }
    }
    for (int d = 0; d < nd; d++)
        o[d] = sh[d] > 0 ? (int64_t)sl__rng_philox_below(&r, (uint64_t)sh[d]) : 0;
    return SL_OK;
}

const sl__op_def sl__random_mask_pixel_op = {
    .name = "segmentation.random_mask_pixel",
    .doc = "Draws a pixel's coordinates, int64 (D,), uniformly among the mask's foreground "
           "(equal to value, or above threshold) with foreground != 0, else (or when there is "
           "none) among all its pixels (per sample).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = rmp_args,
    .devices = SL_OPDEV_CPU,
    .flags = SL_OPF_RANDOM,
    .create = rmp_create,
    .setup = rmp_setup,
    .run_cpu = rmp_run_cpu,
    .destroy = free,
};

/* ---- segmentation.select_masks -------------------------------------------------------------- */

static const sl__arg_schema sm_args[] = {
    {"reindex_masks", SL_ARG_BOOL, "False",
     "number the kept masks 0..K-1 in the order of mask_ids (else keep their ids)", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct sm_state {
    bool reindex;
    int64_t *shapes; /* batch x 2 */
    int cap;
} sm_state;

static void sm_destroy(void *state) {
    sm_state *s = state;
    if (s) free(s->shapes);
    free(s);
}

static sl_status sm_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    sm_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->reindex = sl__args_bool(a, "reindex_masks");
    *out = s;
    return SL_OK;
}

#define SM "segmentation.select_masks"

static int sm_outputs(const sl__args *a) {
    (void)a;
    return 2; /* polygons, vertices */
}

/* sample i: checks its ids and polygons; the kept polygons and vertices counted */
static sl_status sm_count(const sl__op_io *io, int i, int64_t *np, int64_t *nv, sl_err *err) {
    const sl_tlist *ids = io->in[0], *pol = io->in[1], *ver = io->in[2];
    int64_t k = ids->shapes[i], p = pol->shapes[2 * i], nvert = ver->shapes[2 * i];
    const int32_t *id = ids->data[i], *q = pol->data[i];
    *np = *nv = 0;
    for (int64_t a = 0; a < k; a++) {
        for (int64_t b = 0; b < a; b++)
            if (id[a] == id[b])
                return sl__op_fail(err, SL_EINVAL, io, i, SM, "mask id %d is asked for twice",
                                   id[a]);
        bool found = false;
        for (int64_t j = 0; j < p; j++) {
            if (q[3 * j] != id[a]) continue;
            if (q[3 * j + 1] < 0 || q[3 * j + 2] < q[3 * j + 1] || q[3 * j + 2] > nvert)
                return sl__op_fail(err, SL_EINVAL, io, i, SM,
                                   "polygon %lld of mask %d has vertices [%d, %d), outside the "
                                   "%lld there are: Vertex index range for mask id %d is out of "
                                   "bounds. Expected to be within the range of available "
                                   "vertices [0, %lld).",
                                   (long long)j, id[a], q[3 * j + 1], q[3 * j + 2],
                                   (long long)nvert, id[a], (long long)nvert);
            found = true;
            ++*np;
            *nv += q[3 * j + 2] - q[3 * j + 1];
        }
        if (!found)
            return sl__op_fail(err, SL_EINVAL, io, i, SM,
                               "mask id %d is not in the polygons: Selected mask_id %d is not "
                               "present in the input.",
                               id[a], id[a]);
    }
    return SL_OK;
}

static sl_status sm_setup(void *state, sl__op_io *io, sl_err *err) {
    sm_state *s = state;
    const sl_tlist *ids = io->in[0], *pol = io->in[1], *ver = io->in[2];
    if (ids->dtype != SL_DTYPE_I32 || ids->ndim != 1)
        return sl_err_set(err, SL_EINVAL, SM ": mask_ids must be 1-D int32 (got %d-D %s)",
                          ids->ndim, sl_dtype_name(ids->dtype));
    if (pol->dtype != SL_DTYPE_I32 || pol->ndim != 2)
        return sl_err_set(err, SL_EINVAL, SM ": polygons must be 2-D int32 (got %d-D %s)",
                          pol->ndim, sl_dtype_name(pol->dtype));
    if (ver->ndim != 2)
        return sl_err_set(err, SL_EINVAL, SM ": vertices must be 2-D (got %d-D)", ver->ndim);
    if (io->batch > s->cap) {
        int64_t *p = realloc(s->shapes, (size_t)io->batch * 4 * sizeof *p);
        if (!p) return sl_err_set(err, SL_ENOMEM, SM ": out of memory");
        s->shapes = p;
        s->cap = io->batch;
    }
    int64_t *ps = s->shapes, *vs = s->shapes + 2 * io->batch;
    for (int i = 0; i < io->batch; i++) {
        if (pol->shapes[2 * i + 1] != 3)
            return sl__op_fail(err, SL_EINVAL, io, i, SM,
                               "polygons must have 3 columns (mask id, first and end vertex), "
                               "not %lld: ``polygons`` is expected to contain 2D tensors with 3 "
                               "columns: ``mask_id, start_idx, end_idx``. Got %lld columns.",
                               (long long)pol->shapes[2 * i + 1],
                               (long long)pol->shapes[2 * i + 1]);
        SL_TRY(sm_count(io, i, &ps[2 * i], &vs[2 * i], err));
        ps[2 * i + 1] = 3;
        vs[2 * i + 1] = ver->shapes[2 * i + 1];
    }
    SL_TRY(sl_tlist_reset(io->out[0], io->batch, SL_DTYPE_I32, 2, sl_cpu(), err));
    SL_TRY(sl_tlist_alloc(io->out[0], ps, err));
    SL_TRY(sl_tlist_reset(io->out[1], io->batch, ver->dtype, 2, sl_cpu(), err));
    SL_TRY(sl_tlist_alloc(io->out[1], vs, err));
    memcpy(io->out[0]->layout, pol->layout, sizeof io->out[0]->layout);
    memcpy(io->out[1]->layout, ver->layout, sizeof io->out[1]->layout);
    return SL_OK;
}

static sl_status sm_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    sm_state *s = state;
    (void)worker;
    (void)err;
    const sl_tlist *ids = io->in[0], *pol = io->in[1], *ver = io->in[2];
    const int32_t *id = ids->data[i], *q = pol->data[i];
    int32_t *op = io->out[0]->data[i];
    char *ov = io->out[1]->data[i];
    size_t vbytes = (size_t)ver->shapes[2 * i + 1] * sl_dtype_size(ver->dtype);
    int64_t at = 0;
    for (int64_t a = 0; a < ids->shapes[i]; a++)
        for (int64_t j = 0; j < pol->shapes[2 * i]; j++) {
            if (q[3 * j] != id[a]) continue;
            int64_t n = q[3 * j + 2] - q[3 * j + 1];
            *op++ = s->reindex ? (int32_t)a : id[a];
            *op++ = (int32_t)at;
            *op++ = (int32_t)(at + n);
            memcpy(ov + at * vbytes, (const char *)ver->data[i] + q[3 * j + 1] * vbytes,
                   (size_t)n * vbytes);
            at += n;
        }
    return SL_OK;
}

const sl__op_def sl__select_masks_op = {
    .name = "segmentation.select_masks",
    .doc = "Keeps the polygons (P, 3) int32 [mask id, first vertex, end vertex] of the masks "
           "listed in mask_ids (1-D int32), mask by mask in that order, with their vertices (V, "
           "D); reindex_masks numbers the masks 0..K-1. Inputs: mask_ids, polygons, vertices.",
    .min_inputs = 3,
    .max_inputs = 3,
    .args = sm_args,
    .devices = SL_OPDEV_CPU,
    .num_outputs = sm_outputs,
    .create = sm_create,
    .setup = sm_setup,
    .run_cpu = sm_run_cpu,
    .destroy = sm_destroy,
};
