/* SPDX-License-Identifier: Apache-2.0 */
/* The LMDB readers (reader.h): readers.caffe2 and readers.caffe, records of one LMDB format each.
 */
#include "ops/reader.h"

#include "core/alloc.h"
#include "core/log.h"
#include "core/size.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- readers.caffe2 -------------------------------------------------------------------------- */
/* readers.caffe2: Caffe2 TensorProtos records from LMDB (reader.h). Output 0 is the image proto:
 * encoded bytes (STRING) as zero-copy uint8 views into the LMDB map, or a raw (H, W, C) uint8 image
 * (BYTE); then, as label_type says, the label (int32/float32 (1,), dense (n,), or sparse indices
 * and weights spread over (num_labels,)), each additional input as a 1-D numeric tensor, and the
 * bounding box (4 int32). */

static const sl__arg_schema caffe2_args[] = {
    {"path", SL_ARG_STRS, NULL, "LMDB folder(s); several are read as one data set, in order",
     SL_ARGF_REQUIRED, NULL},
    {"label_type", SL_ARG_INT, "0",
     "0 SINGLE_LABEL, 1 MULTI_LABEL_SPARSE, 2 MULTI_LABEL_DENSE, 3 MULTI_LABEL_WEIGHTED_SPARSE, "
     "4 NO_LABEL",
     0, NULL},
    {"num_labels", SL_ARG_INT, "1", "number of classes (sparse label types 1 and 3 only)", 0, NULL},
    {"additional_inputs", SL_ARG_INT, "0", "extra protos per record, each an output", 0, NULL},
    {"bbox", SL_ARG_BOOL, "False", "the last proto is a bounding box (4 int32)", 0, NULL},
    {"image_available", SL_ARG_BOOL, "True", "the first proto is an image", 0, NULL},
    SL__READER_ARGS("accepted; no effect (the LMDB is mapped: records are read when touched)",
                    "accepted; no effect (the LMDB is always mapped)",
                    "accepted; no effect (outputs are views into the mapped LMDB)"),
    {NULL, 0, NULL, NULL, 0, NULL},
};

static int caffe2_outputs(const sl__args *a) {
    int lt = (int)sl__args_int(a, "label_type");
    int64_t extra = sl__args_int(a, "additional_inputs"); /* a bad count is refused at create */
    return 1 + (lt != SL_C2_NO_LABEL) +
           (extra > 0 && extra <= SL_CAFFE2_MAX_PROTOS ? (int)extra : 0) +
           (sl__args_bool(a, "bbox") ? 1 : 0);
}

static sl_status caffe2_create(const sl__args *a, const sl__op_init *init, void **state,
                               sl_err *err) {
    sl__reader *r = sl__calloc(1, sizeof *r, err);
    if (!r) return SL_ENOMEM;
    r->fmt = SL__READER_CAFFE2;
    r->opname = "readers.caffe2";
    r->label_type = (int)sl__args_int(a, "label_type");
    r->num_labels = (int)sl__args_int(a, "num_labels");
    r->additional = (int)sl__args_int(a, "additional_inputs");
    r->bbox = sl__args_bool(a, "bbox");
    r->image_available = sl__args_bool(a, "image_available");
    sl_status st = SL_OK;
    if (r->label_type < 0 || r->label_type > 4)
        st = sl_err_set(err, SL_EINVAL, "readers.caffe2: label_type %d is not 0..4", r->label_type);
    else if (r->num_labels < 1)
        st = sl_err_set(err, SL_EINVAL, "readers.caffe2: num_labels must be >= 1");
    else if (sl__args_given(a, "num_labels") && r->label_type != SL_C2_MULTI_LABEL_SPARSE &&
             r->label_type != SL_C2_MULTI_LABEL_WEIGHTED_SPARSE)
        st = sl_err_set(err, SL_EINVAL,
                        "readers.caffe2: num_labels=%d is for the sparse label types "
                        "(label_type 1 or 3); with label_type %d it would be ignored",
                        r->num_labels, r->label_type);
    else if (r->additional < 0 || r->additional > SL_CAFFE2_MAX_PROTOS - 4)
        st = sl_err_set(err, SL_EINVAL, "readers.caffe2: additional_inputs %d out of range",
                        r->additional);
    if (!st) st = sl__reader_open_lmdb(r, a, err);
    if (!st) st = sl__reader_start(r, a, init, err);
    if (!st) {
        r->c2 = sl__malloc((size_t)r->batch_size * sizeof *r->c2, err);
        r->nlab = sl__malloc((size_t)r->batch_size * sizeof *r->nlab, err);
        r->lab0 = sl__malloc((size_t)r->batch_size * sizeof *r->lab0, err);
        if (!r->c2 || !r->nlab || !r->lab0) st = SL_ENOMEM;
    }
    if (st) {
        sl__reader_free(r);
        return st;
    }
    *state = r;
    return SL_OK;
}

static sl_status need_vals(sl__reader *r, int64_t n, sl_err *err) {
    if (n <= r->vals_cap) return SL_OK;
    double *v = realloc(r->vals, (size_t)n * sizeof *v);
    if (!v) return sl_err_set(err, SL_ENOMEM, "out of memory (%lld label values)", (long long)n);
    r->vals = v;
    r->vals_cap = n;
    return SL_OK;
}

static sl_dtype c2_dtype(int data_type) {
    switch (data_type) {
    case SL_C2_FLOAT:
        return SL_DTYPE_F32;
    case SL_C2_INT32:
        return SL_DTYPE_I32;
    case SL_C2_INT64:
        return SL_DTYPE_I64;
    default:
        return SL_DTYPE_COUNT;
    }
}

static void store_val(sl_dtype t, void *dst, int64_t k, double v) {
    if (t == SL_DTYPE_F32)
        ((float *)dst)[k] = (float)v;
    else if (t == SL_DTYPE_I32)
        ((int32_t *)dst)[k] = (int32_t)v;
    else
        ((int64_t *)dst)[k] = (int64_t)v;
}

/* output o: one numeric proto per sample (index pi in each record), 1-D; `what` for messages */
static sl_status c2_numeric(sl__reader *r, sl__op_io *io, int o, int pi, const char *what,
                            sl_err *err) {
    sl_tlist *out = io->out[o];
    sl_dtype t = SL_DTYPE_COUNT;
    int64_t *shapes = sl__malloc((size_t)(io->batch > 0 ? io->batch : 1) * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0; i < io->batch && !st; i++) {
        const sl__caffe2_record *c = &r->c2[i];
        if (pi >= c->n) {
            st = sl__reader_fail(r, i, SL_EFORMAT, err, "%s: no proto %d (the record has %d)", what,
                                 pi, c->n);
            break;
        }
        sl_dtype ti = c2_dtype(c->t[pi].data_type);
        if (ti == SL_DTYPE_COUNT) {
            st = sl__reader_fail(r, i, SL_EFORMAT, err,
                                 "%s has data type %d (FLOAT, INT32 or INT64 wanted)", what,
                                 c->t[pi].data_type);
            break;
        }
        if (i > 0 && ti != t) {
            st = sl__reader_fail(r, i, SL_EFORMAT, err,
                                 "%s is %s, earlier records of the batch have %s", what,
                                 sl_dtype_name(ti), sl_dtype_name(t));
            break;
        }
        t = ti;
        shapes[i] = sl__caffe2_values(&c->t[pi], NULL, 0);
        if (shapes[i] < 0)
            st = sl__reader_fail(r, i, SL_EFORMAT, err, "%s values are malformed", what);
    }
    if (!st)
        st = sl_tlist_reset(out, io->batch, t == SL_DTYPE_COUNT ? SL_DTYPE_F32 : t, 1, sl_cpu(),
                            err);
    if (!st) st = sl_tlist_alloc(out, shapes, err);
    for (int i = 0; i < io->batch && !st; i++) {
        st = need_vals(r, shapes[i], err);
        if (st) break;
        sl__caffe2_values(&r->c2[i].t[pi], r->vals, shapes[i]);
        for (int64_t k = 0; k < shapes[i]; k++) store_val(t, out->data[i], k, r->vals[k]);
    }
    free(shapes);
    return st;
}

static sl_status c2_labels(sl__reader *r, sl__op_io *io, int o, int li, sl_err *err) {
    sl_tlist *out = io->out[o];
    sl_dtype t = SL_DTYPE_COUNT;
    int lt = r->label_type;
    int64_t *shapes = sl__malloc((size_t)(io->batch > 0 ? io->batch : 1) * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0; i < io->batch && !st; i++) {
        const sl__caffe2_record *c = &r->c2[i];
        if (li >= c->n) {
            st = sl__reader_fail(r, i, SL_EFORMAT, err, "no label proto (the record has %d protos)",
                                 c->n);
            break;
        }
        int dt = c->t[li].data_type;
        sl_dtype ti = dt == SL_C2_FLOAT   ? SL_DTYPE_F32
                      : dt == SL_C2_INT32 ? SL_DTYPE_I32
                                          : SL_DTYPE_COUNT;
        if (ti == SL_DTYPE_COUNT) {
            st = sl__reader_fail(r, i, SL_EFORMAT, err,
                                 "unsupported label data type %d (INT32 or FLOAT wanted)", dt);
            break;
        }
        if (lt == SL_C2_MULTI_LABEL_WEIGHTED_SPARSE) ti = SL_DTYPE_F32;
        if (i > 0 && ti != t) {
            st = sl__reader_fail(r, i, SL_EFORMAT, err,
                                 "label is %s, earlier records of the batch have %s",
                                 sl_dtype_name(ti), sl_dtype_name(t));
            break;
        }
        t = ti;
        /* one pass over the label proto: its value count, and its first value (all of a
         * SINGLE_LABEL record's) */
        int64_t n = r->nlab[i] = sl__caffe2_values(&c->t[li], &r->lab0[i], 1);
        if (n < 0) {
            st = sl__reader_fail(r, i, SL_EFORMAT, err, "label values are malformed");
            break;
        }
        if (lt == SL_C2_SINGLE_LABEL && n != 1) {
            st = sl__reader_fail(r, i, SL_EFORMAT, err,
                                 "label has %lld values, SINGLE_LABEL wants 1", (long long)n);
            break;
        }
        if (lt == SL_C2_MULTI_LABEL_WEIGHTED_SPARSE) {
            if (li + 1 >= c->n) {
                st = sl__reader_fail(r, i, SL_EFORMAT, err, "no weights proto after the label");
                break;
            }
            int64_t nw = sl__caffe2_values(&c->t[li + 1], NULL, 0);
            if (c->t[li + 1].data_type != SL_C2_FLOAT || nw != n) {
                st = sl__reader_fail(
                    r, i, SL_EFORMAT, err,
                    "weights proto must be FLOAT with one weight per label index (%lld "
                    "indices, %lld weights)",
                    (long long)n, (long long)nw);
                break;
            }
        }
        shapes[i] = lt == SL_C2_MULTI_LABEL_SPARSE || lt == SL_C2_MULTI_LABEL_WEIGHTED_SPARSE
                        ? r->num_labels
                        : n;
    }
    if (!st)
        st = sl_tlist_reset(out, io->batch, t == SL_DTYPE_COUNT ? SL_DTYPE_I32 : t, 1, sl_cpu(),
                            err);
    if (!st) st = sl_tlist_alloc(out, shapes, err);
    for (int i = 0; i < io->batch && !st; i++) {
        const sl__caffe2_record *c = &r->c2[i];
        int64_t n = r->nlab[i];
        if (lt == SL_C2_SINGLE_LABEL) {
            store_val(t, out->data[i], 0, r->lab0[i]);
            continue;
        }
        st = need_vals(r, 2 * n + 1, err);
        if (st) break;
        sl__caffe2_values(&c->t[li], r->vals, n);
        if (lt == SL_C2_SINGLE_LABEL || lt == SL_C2_MULTI_LABEL_DENSE) {
            for (int64_t k = 0; k < n; k++) store_val(t, out->data[i], k, r->vals[k]);
            continue;
        }
        memset(out->data[i], 0, (size_t)r->num_labels * sl_dtype_size(t));
        if (lt == SL_C2_MULTI_LABEL_WEIGHTED_SPARSE)
            sl__caffe2_values(&c->t[li + 1], r->vals + n, n);
        for (int64_t k = 0; k < n && !st; k++) {
            double idx = r->vals[k];
            if (!(idx >= 0 && idx < r->num_labels) || idx != (double)(int64_t)idx) {
                st = sl__reader_fail(r, i, SL_EFORMAT, err,
                                     "label index %g is outside [0, num_labels=%d)", idx,
                                     r->num_labels);
                break;
            }
            store_val(t, out->data[i], (int64_t)idx,
                      lt == SL_C2_MULTI_LABEL_WEIGHTED_SPARSE ? r->vals[n + k] : 1.0);
        }
    }
    free(shapes);
    return st;
}

static sl_status caffe2_image(sl__reader *r, sl__op_io *io, sl_err *err) {
    sl_tlist *out = io->out[0];
    if (!r->image_available) {
        int64_t zero = 0;
        SL_TRY(sl_tlist_reset(out, io->batch, SL_DTYPE_U8, 1, sl_cpu(), err));
        for (int i = 0; i < io->batch; i++) sl_tlist_set_external(out, i, NULL, &zero);
        return SL_OK;
    }
    int kind = -1;
    for (int i = 0; i < io->batch; i++) {
        const sl__caffe2_record *c = &r->c2[i];
        if (c->n < 1) return sl__reader_fail(r, i, SL_EFORMAT, err, "record holds no protos");
        int dt = c->t[0].data_type;
        if (dt != SL_C2_STRING && dt != SL_C2_BYTE)
            return sl__reader_fail(r, i, SL_EFORMAT, err,
                                   "image proto has data type %d (STRING or BYTE wanted)", dt);
        if (kind >= 0 && dt != kind)
            return sl__reader_fail(
                r, i, SL_EFORMAT, err, "image is %s, earlier records of the batch are %s",
                dt == SL_C2_STRING ? "STRING" : "BYTE", kind == SL_C2_STRING ? "STRING" : "BYTE");
        kind = dt;
    }
    SL_TRY(sl_tlist_reset(out, io->batch, SL_DTYPE_U8, kind == SL_C2_BYTE ? 3 : 1, sl_cpu(), err));
    if (kind == SL_C2_BYTE)
        snprintf(out->layout, sizeof out->layout, "HWC");
    else
        out->layout[0] = 0;
    for (int i = 0; i < io->batch; i++) {
        const sl__caffe2_tensor *t = &r->c2[i].t[0];
        if (kind == SL_C2_STRING) {
            if (!t->str0)
                return sl__reader_fail(r, i, SL_EFORMAT, err, "image proto has no string_data");
            int64_t len = (int64_t)t->nstr0;
            sl_tlist_set_external(out, i, (void *)t->str0, &len);
        } else {
            int64_t d[3] = {0, 0, 1};
            int nd = sl__caffe2_dims(t, d, 3);
            if (nd != 2 && nd != 3)
                return sl__reader_fail(r, i, SL_EFORMAT, err,
                                       "BYTE image has %d dims (2 or 3 wanted)", nd);
            if (nd == 2) d[2] = 1;
            /* dims are varints up to 2^64 - 1: their product is checked, so that dims that wrap
               cannot match a short (or empty) byte_data */
            size_t need = 0;
            if (sl__size_shape(d, 3, 1, &need, NULL) != SL__SIZE_OK)
                return sl__reader_fail(r, i, SL_EFORMAT, err,
                                       "BYTE image of %lldx%lldx%lld has a negative extent or more "
                                       "than %zu bytes, byte_data has %zu",
                                       (long long)d[0], (long long)d[1], (long long)d[2],
                                       SL__SIZE_LIMIT, t->nbytes);
            if (!t->bytes || need != t->nbytes)
                return sl__reader_fail(
                    r, i, SL_EFORMAT, err,
                    "BYTE image of %lldx%lldx%lld needs %zu bytes, byte_data has %zu",
                    (long long)d[0], (long long)d[1], (long long)d[2], need, t->nbytes);
            sl_tlist_set_external(out, i, (void *)t->bytes, d);
        }
    }
    return SL_OK;
}

static sl_status caffe2_setup(void *state, sl__op_io *io, sl_err *err) {
    sl__reader *r = state;
    SL_TRY(sl__reader_next(r, io, err));
    for (int i = 0; i < io->batch; i++) {
        const uint8_t *v;
        size_t n;
        sl__lmdb_value(r->db, r->recs[i], &v, &n);
        sl_status st = sl__caffe2_parse(v, n, &r->c2[i], err);
        if (st)
            return sl_err_prefix(err, "%s: %s at key %s: ", r->opname,
                                 sl__reader_path(r, r->recs[i]), r->keys[i]);
    }
    SL_TRY(caffe2_image(r, io, err));
    int o = 1, pi = r->image_available ? 1 : 0;
    if (r->label_type != SL_C2_NO_LABEL) {
        SL_TRY(c2_labels(r, io, o++, pi, err));
        pi += r->label_type == SL_C2_MULTI_LABEL_WEIGHTED_SPARSE ? 2 : 1;
    }

    for (int k = 0; k < r->additional; k++) {
        char what[48];
        snprintf(what, sizeof what, "additional input %d", k);
        SL_TRY(c2_numeric(r, io, o++, pi++, what, err));
    }
    if (r->bbox) {
        sl_tlist *out = io->out[o];
        int64_t *shapes = sl__malloc((size_t)(io->batch > 0 ? io->batch : 1) * sizeof *shapes, err);
        if (!shapes) return SL_ENOMEM;
        sl_status st = SL_OK;
        for (int i = 0; i < io->batch && !st; i++) {
            const sl__caffe2_record *c = &r->c2[i];
            shapes[i] = 0;
            if (c->n != pi + 1) continue; /* no box in this record */
            if (c->t[pi].data_type != SL_C2_INT32 || sl__caffe2_values(&c->t[pi], NULL, 0) != 4)
                st = sl__reader_fail(r, i, SL_EFORMAT, err,
                                     "bbox proto must be INT32 with 4 values");
            shapes[i] = 4;
        }
        if (!st) st = sl_tlist_reset(out, io->batch, SL_DTYPE_I32, 1, sl_cpu(), err);
        if (!st) st = sl_tlist_alloc(out, shapes, err);
        for (int i = 0; i < io->batch && !st; i++) {
            double b[4];
            if (!shapes[i]) continue;
            sl__caffe2_values(&r->c2[i].t[pi], b, 4);
            for (int k = 0; k < 4; k++) ((int32_t *)out->data[i])[k] = (int32_t)b[k];
        }
        free(shapes);
        if (st) return st;
    }
    return SL_OK;
}

const sl__op_def sl__reader_caffe2_op = {
    SL__READER_OP_COMMON,
    .name = "readers.caffe2",
    .aliases = "caffe2_reader",
    .doc = "Reads Caffe2 TensorProtos records from LMDB: encoded image bytes (uint8 1-D, views "
           "into the map) or raw images (H, W, C), labels, additional inputs, bounding boxes.",
    .args = caffe2_args,
    .num_outputs = caffe2_outputs,
    .create = caffe2_create,
    .setup = caffe2_setup,
    .destroy = sl__reader_free,
};

/* ---- readers.caffe --------------------------------------------------------------------------- */
/* readers.caffe: Caffe Datum records from LMDB (reader.h): encoded image bytes as zero-copy
 * uint8 views into the LMDB map, or raw (H, W, C) uint8 images, and int32 labels (1,). */

static const sl__arg_schema caffe_args[] = {
    {"path", SL_ARG_STRS, NULL, "LMDB folder(s); several are read as one data set, in order",
     SL_ARGF_REQUIRED, NULL},
    {"image_available", SL_ARG_BOOL, "True", "records hold an image (output 0)", 0, NULL},
    {"label_available", SL_ARG_BOOL, "True", "records hold a label", 0, NULL},
    SL__READER_ARGS("accepted; no effect (the LMDB is mapped: records are read when touched)",
                    "accepted; no effect (the LMDB is always mapped)",
                    "accepted; no effect (outputs are views into the mapped LMDB)"),
    {NULL, 0, NULL, NULL, 0, NULL},
};

static int caffe_outputs(const sl__args *a) {
    return (sl__args_bool(a, "image_available") ? 1 : 0) +
           (sl__args_bool(a, "label_available") ? 1 : 0);
}

static sl_status caffe_create(const sl__args *a, const sl__op_init *init, void **state,
                              sl_err *err) {
    sl__reader *r = sl__calloc(1, sizeof *r, err);
    if (!r) return SL_ENOMEM;
    r->fmt = SL__READER_CAFFE;
    r->opname = "readers.caffe";
    r->image_available = sl__args_bool(a, "image_available");
    r->label_available = sl__args_bool(a, "label_available");
    sl_status st = SL_OK;
    if (!r->image_available && !r->label_available)
        st = sl_err_set(err, SL_EINVAL,
                        "readers.caffe: image_available and label_available are "
                        "both False: nothing to output");
    if (!st) st = sl__reader_open_lmdb(r, a, err);
    if (!st) st = sl__reader_start(r, a, init, err);
    if (!st) {
        r->cd = sl__malloc((size_t)r->batch_size * sizeof *r->cd, err);
        if (!r->cd) st = SL_ENOMEM;
    }
    if (st) {
        sl__reader_free(r);
        return st;
    }
    *state = r;
    return SL_OK;
}

static sl_status caffe_setup(void *state, sl__op_io *io, sl_err *err) {
    sl__reader *r = state;
    SL_TRY(sl__reader_next(r, io, err));
    int enc = -1;
    for (int i = 0; i < io->batch; i++) {
        const uint8_t *v;
        size_t n;
        sl__lmdb_value(r->db, r->recs[i], &v, &n);
        sl__caffe_datum *d = &r->cd[i];
        if (sl__caffe_parse(v, n, d, err))
            return sl_err_prefix(err, "%s: %s at key %s: ", r->opname,
                                 sl__reader_path(r, r->recs[i]), r->keys[i]);
        if (r->image_available) {
            if (!d->has_data) return sl__reader_fail(r, i, SL_EFORMAT, err, "Datum has no data");
            int e = sl__caffe_is_encoded(d);
            if (enc >= 0 && e != enc)
                return sl__reader_fail(r, i, SL_EFORMAT, err,
                                       "image is %s, earlier records of the batch are %s",
                                       e ? "encoded" : "raw", enc ? "encoded" : "raw");
            enc = e;
            if (!e) { /* the product is checked: extents that wrap cannot match short data */
                int64_t s[3] = {d->height, d->width, d->channels};
                size_t need = 0;
                sl__size_result sr = sl__size_shape(s, 3, 1, &need, NULL);
                if (sr != SL__SIZE_OK || need != d->ndata)
                    return sl__reader_fail(
                        r, i, SL_EFORMAT, err,
                        "raw image of %dx%dx%d does not match its %zu data bytes%s", d->height,
                        d->width, d->channels, d->ndata,
                        sr == SL__SIZE_NEGATIVE   ? " (a negative extent)"
                        : sr == SL__SIZE_OVERFLOW ? " (its size overflows)"
                                                  : "");
            }
        }
        if (r->label_available && !d->has_label)
            return sl__reader_fail(r, i, SL_EFORMAT, err, "Datum has no label");
    }
    int o = 0;
    if (r->image_available) {
        sl_tlist *out = io->out[o++];
        SL_TRY(sl_tlist_reset(out, io->batch, SL_DTYPE_U8, enc == 0 ? 3 : 1, sl_cpu(), err));
        snprintf(out->layout, sizeof out->layout, "%s", enc == 0 ? "HWC" : "");
        for (int i = 0; i < io->batch; i++) {
            const sl__caffe_datum *d = &r->cd[i];
            int64_t s[3] = {(int64_t)d->ndata, 0, 0};
            if (enc == 0) s[0] = d->height, s[1] = d->width, s[2] = d->channels;
            sl_tlist_set_external(out, i, (void *)d->data, s);
        }
    }
    if (r->label_available) {
        sl_tlist *out = io->out[o];
        SL_TRY(sl__reader_label_list(out, io->batch, err));
        for (int i = 0; i < io->batch; i++) *(int32_t *)out->data[i] = r->cd[i].label;
    }
    return SL_OK;
}

const sl__op_def sl__reader_caffe_op = {
    SL__READER_OP_COMMON,
    .name = "readers.caffe",
    .aliases = "caffe_reader",
    .doc = "Reads Caffe Datum records from LMDB: encoded image bytes (uint8 1-D, views into the "
           "map) or raw images (H, W, C), and int32 labels (1,).",
    .args = caffe_args,
    .num_outputs = caffe_outputs,
    .create = caffe_create,
    .setup = caffe_setup,
    .destroy = sl__reader_free,
};
