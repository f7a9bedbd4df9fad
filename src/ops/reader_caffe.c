/* SPDX-License-Identifier: Apache-2.0 */
/* readers.caffe: Caffe Datum records from LMDB (reader.h): encoded image bytes as zero-copy
 * uint8 views into the LMDB map, or raw (H, W, C) uint8 images, and int32 labels (1,). */
#include "ops/reader.h"

#include "core/alloc.h"
#include "core/log.h"
#include "core/size.h"

#include <stdio.h>

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
    .name = "readers.caffe",
    .doc = "Reads Caffe Datum records from LMDB: encoded image bytes (uint8 1-D, views into the "
           "map) or raw images (H, W, C), and int32 labels (1,).",
    .args = caffe_args,
    .devices = SL_OPDEV_CPU,
    .flags = SL_OPF_READER | SL_OPF_RANDOM,
    .num_outputs = caffe_outputs,
    .create = caffe_create,
    .setup = caffe_setup,
    .destroy = sl__reader_free,
    .reader_meta = sl__reader_meta,
    .save = sl__reader_save,
    .restore = sl__reader_restore,
};
