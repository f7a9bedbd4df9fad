/* SPDX-License-Identifier: Apache-2.0 */
/* Ops whose outputs are views of their input's samples (no bytes move; the pipeline never writes
 * a sample once it is made, so a view serves where DALI copies):
 * - copy: the input as it is (DALI's fn.copy): same shapes, dtype and layout.
 * - element_extract: elements of sequences (DALI's fn.element_extract): the input's outermost
 *   dim is the sequence (layout starting with F where there is one) and each index of
 *   `element_map` makes one output, sample i being element element_map[k] of input sample i,
 *   with the input's remaining dims and layout.
 * - permute_batch: samples of the batch in another order (DALI's fn.permute_batch): output sample
 *   i is input sample indices[i], `indices` a list of one index per sample or a per-sample
 *   value (batch_permutation's output); the samples' source info goes with them.
 * - per_frame: the input marked as sequences (DALI's fn.per_frame): its layout starts with F
 *   (no layout: F padded with '*'; one not starting with F: refused, or its first letter
 *   replaced with `replace`), so that an op taking sequences frame by frame reads it as one value
 *   per frame (operator/sequence.c). */
#include "operator/argin.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- copy ---------------------------------------------------------------------------------- */

static const sl__arg_schema copy_args[] = {
    {NULL, 0, NULL, NULL, 0, NULL},
};

static sl_status copy_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)a, (void)init, (void)err;
    *out = NULL;
    return SL_OK;
}

static sl_status copy_setup(void *state, sl__op_io *io, sl_err *err) {
    (void)state;
    const sl_tlist *in = io->in[0];
    SL_TRY(sl_tlist_reset(io->out[0], io->batch, in->dtype, in->ndim, in->device, err));
    for (int i = 0; i < io->batch; i++)
        sl_tlist_set_external(io->out[0], i, in->data[i], sl_tlist_shape(in, i));
    memcpy(io->out[0]->layout, in->layout, sizeof io->out[0]->layout);
    return SL_OK;
}

static void views_free(void *state) {
    free(state);
}

/* ---- per_frame ------------------------------------------------------------------------------ */

static const sl__arg_schema pf_args[] = {
    {"replace", SL_ARG_BOOL, "False",
     "an input whose layout does not start with F gets F as its first letter (else it is refused)",
     0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

static sl_status pf_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    bool *replace = sl__calloc(1, sizeof *replace, err);
    if (!replace) return SL_ENOMEM;
    *replace = sl__args_bool(a, "replace");
    *out = replace;
    return SL_OK;
}

static sl_status pf_setup(void *state, sl__op_io *io, sl_err *err) {
    const sl_tlist *in = io->in[0];
    if (in->ndim < 1)
        return sl_err_set(err, SL_EINVAL,
                          "per_frame: the input's samples are scalars; a sequence has its frames "
                          "as the outermost dim (give each sample a leading dim, x[newaxis]): "
                          "Cannot mark zero-dimensional input as a sequence");
    char layout[SL_LAYOUT_MAX + 1];
    memset(layout, 0, sizeof layout);
    if (!in->layout[0]) {
        for (int d = 0; d < in->ndim && d < SL_LAYOUT_MAX; d++) layout[d] = d ? '*' : 'F';
    } else if (in->layout[0] != 'F' && !*(const bool *)state) {
        return sl_err_set(err, SL_EINVAL,
                          "per_frame: the input's layout \"%s\" does not start with F (frames); "
                          "replace=True makes its first letter F: Per-frame argument input must "
                          "be a sequence. The input layout should start with 'F'",
                          in->layout);
    } else {
        memcpy(layout, in->layout, sizeof layout);
        layout[0] = 'F';
    }
    SL_TRY(sl_tlist_reset(io->out[0], io->batch, in->dtype, in->ndim, in->device, err));
    for (int i = 0; i < io->batch; i++)
        sl_tlist_set_external(io->out[0], i, in->data[i], sl_tlist_shape(in, i));
    memcpy(io->out[0]->layout, layout, sizeof layout);
    return SL_OK;
}

const sl__op_def sl__per_frame_op = {
    .name = "per_frame",
    .doc = "Marks the input as sequences, the outermost dim as frames (layout F...; a view: no "
           "bytes move): an argument given so has one value per frame.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = pf_args,
    .devices = SL_OPDEV_CPU | SL_OPDEV_GPU,
    .flags = SL_OPF_NOCOPY,
    .create = pf_create,
    .setup = pf_setup,
    .destroy = views_free,
};

const sl__op_def sl__copy_op = {
    .name = "copy",
    .doc = "The input as it is (a view: no bytes move).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = copy_args,
    .devices = SL_OPDEV_CPU | SL_OPDEV_GPU,
    .flags = SL_OPF_NOCOPY,
    .create = copy_create,
    .setup = copy_setup,
    .destroy = views_free,
};

/* ---- element_extract ----------------------------------------------------------------------- */

static const sl__arg_schema ee_args[] = {
    {"element_map", SL_ARG_INTS, NULL, "indices of the elements to extract, one output each",
     SL_ARGF_REQUIRED, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct ee_state {
    int n;
    int64_t *map; /* n */
} ee_state;

static int ee_outputs(const sl__args *a) {
    const int64_t *m;
    int n = sl__args_ints(a, "element_map", &m);
    return n >= 1 ? n : -1;
}

static void ee_free(void *state) {
    ee_state *s = state;
    if (s) free(s->map);
    free(s);
}

static sl_status ee_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    const int64_t *m;
    int n = sl__args_ints(a, "element_map", &m);
    if (n < 1)
        return sl_err_set(err, SL_EINVAL,
                          "element_extract: element_map has no indices (one per output)");
    for (int k = 0; k < n; k++)
        if (m[k] < 0)
            return sl_err_set(err, SL_EINVAL,
                              "element_extract: negative indices in element_map are not allowed, "
                              "found %lld",
                              (long long)m[k]);
    ee_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->n = n;
    if (!(s->map = sl__malloc((size_t)n * sizeof *m, err))) {
        free(s);
        return SL_ENOMEM;
    }
    memcpy(s->map, m, (size_t)n * sizeof *m);
    *out = s;
    return SL_OK;
}

/* out[k]: per sample, element map[k] of the input's sequence: its dims after the first */
static sl_status ee_setup(void *state, sl__op_io *io, sl_err *err) {
    ee_state *s = state;
    const sl_tlist *in = io->in[0];
    if (in->ndim < 2)
        return sl_err_set(err, SL_EINVAL,
                          "element_extract: the input must have at least two dims, the outermost "
                          "the sequence (got %d)",
                          in->ndim);
    if (in->layout[0] && in->layout[0] != 'F')
        return sl_err_set(err, SL_EINVAL,
                          "element_extract: the input's layout must describe a sequence, starting "
                          "with F (got \"%s\")",
                          in->layout);
    size_t esz = sl_dtype_size(in->dtype);
    for (int k = 0; k < s->n; k++) {
        sl_tlist *out = io->out[k];
        SL_TRY(sl_tlist_reset(out, io->batch, in->dtype, in->ndim - 1, in->device, err));
        for (int i = 0; i < io->batch; i++) {
            const int64_t *sh = sl_tlist_shape(in, i);
            if (s->map[k] >= sh[0])
                return sl__op_fail(err, SL_EINVAL, io, i, "element_extract",
                                   "index %lld of element_map is out of bounds for a sequence of "
                                   "%lld elements",
                                   (long long)s->map[k], (long long)sh[0]);
            size_t elem = esz;
            for (int d = 1; d < in->ndim; d++) elem *= (size_t)sh[d];
            sl_tlist_set_external(out, i, (char *)in->data[i] + (size_t)s->map[k] * elem, sh + 1);
        }
        memset(out->layout, 0, sizeof out->layout);
        if (in->layout[0]) snprintf(out->layout, sizeof out->layout, "%s", in->layout + 1);
    }
    return SL_OK;
}

const sl__op_def sl__element_extract_op = {
    .name = "element_extract",
    .doc = "Elements of sequences (outermost dim F), one output per index of element_map.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = ee_args,
    .devices = SL_OPDEV_CPU | SL_OPDEV_GPU,
    .flags = SL_OPF_NOCOPY,
    .num_outputs = ee_outputs,
    .create = ee_create,
    .setup = ee_setup,
    .destroy = ee_free,
};

/* ---- permute_batch ------------------------------------------------------------------------- */

static const sl__arg_schema pb_args[] = {
    {"indices", SL_ARG_INTS, NULL,
     "per output sample, the input sample it is: a list of one index per sample, or per sample",
     SL_ARGF_REQUIRED | SL_ARGF_PER_SAMPLE, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct pb_state {
    int node;
    int n;
    int64_t *idx;
    const char **info; /* the outputs' source info: the picked samples' (SL_OPF_INFO) */
    int info_n;
} pb_state;

static void pb_destroy(void *state) {
    pb_state *s = state;
    if (s) free(s->idx), free(s->info);
    free(s);
}

static sl_status pb_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    pb_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->node = sl__args_node(a, "indices");
    if (s->node < 0) {
        const int64_t *v;
        s->n = sl__args_ints(a, "indices", &v);
        s->idx = sl__malloc((size_t)(s->n ? s->n : 1) * sizeof *v, err);
        if (!s->idx) {
            pb_destroy(s);
            return SL_ENOMEM;
        }
        memcpy(s->idx, v, (size_t)s->n * sizeof *v);
    }
    *out = s;
    return SL_OK;
}

static sl_status pb_setup(void *state, sl__op_io *io, sl_err *err) {
    pb_state *s = state;
    const sl_tlist *in = io->in[0];
    if (s->node < 0 && s->n != io->batch)
        return sl_err_set(err, SL_EINVAL,
                          "permute_batch: indices has %d values for a batch of %d samples", s->n,
                          io->batch);
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, in->dtype, in->ndim, in->device, err));
    for (int i = 0; i < io->batch; i++) {
        double v = (double)(s->node < 0 ? s->idx[i] : -1);
        if (s->node >= 0 && sl__argin_values(io, s->node, i, &v, 1) != 1)
            return sl__op_fail(err, SL_EINVAL, io, i, "permute_batch",
                               "indices: one value per sample");
        if (!(v >= 0 && v < io->batch && v == (double)(int64_t)v))
            return sl__op_fail(err, SL_EINVAL, io, i, "permute_batch",
                               "Sample index out of range. %g is not a valid index for an input "
                               "batch of %d tensors.",
                               v, io->batch);
        int j = (int)v;
        sl_tlist_set_external(out, i, in->data[j], sl_tlist_shape(in, j));
        if (io->in_info && io->in_info[0]) {
            if (io->batch > s->info_n) {
                const char **n = realloc(s->info, (size_t)io->batch * sizeof *n);
                if (!n) return sl_err_set(err, SL_ENOMEM, "permute_batch: out of memory");
                s->info = n, s->info_n = io->batch;
            }
            s->info[i] = io->in_info[0][j];
        }
    }
    memcpy(out->layout, in->layout, sizeof out->layout);
    /* the samples' source info goes with them, as DALI's */
    io->source_info = io->in_info && io->in_info[0] ? s->info : NULL;
    return SL_OK;
}

const sl__op_def sl__permute_batch_op = {
    .name = "permute_batch",
    .doc = "The batch's samples in another order (output sample i is input sample indices[i]).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = pb_args,
    .devices = SL_OPDEV_CPU | SL_OPDEV_GPU,
    .flags = SL_OPF_NOCOPY | SL_OPF_INFO,
    .create = pb_create,
    .setup = pb_setup,
    .destroy = pb_destroy,
};
