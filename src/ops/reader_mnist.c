/* SPDX-License-Identifier: Apache-2.0 */
/* readers.mnist (a sluice extension): IDX files, MNIST / Fashion-MNIST, plain or gzip (reader.h):
 * raw (H, W, C) uint8 images as views into the loaded file and int32 labels (1,); the key of a
 * record is its index. */
#include "ops/reader.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdio.h>
#include <string.h>

static const sl__arg_schema mnist_args[] = {
    {"path", SL_ARG_STR, NULL, "IDX images file (plain or .gz), e.g. train-images-idx3-ubyte.gz",
     SL_ARGF_REQUIRED, NULL},
    {"labels", SL_ARG_STR, NULL, "IDX labels file; without it only images are output", 0, NULL},
    SL__READER_ARGS("accepted; no effect (the IDX files are read whole into memory at creation)",
                    "accepted; no effect (the IDX files are read into memory, never mapped)",
                    "accepted; no effect (images are views into the loaded file)"),
    {NULL, 0, NULL, NULL, 0, NULL},
};

static int mnist_outputs(const sl__args *a) {
    return sl__args_str(a, "labels") ? 2 : 1;
}

static sl_status mnist_create(const sl__args *a, const sl__op_init *init, void **state,
                              sl_err *err) {
    sl__reader *r = sl__calloc(1, sizeof *r, err);
    if (!r) return SL_ENOMEM;
    r->fmt = SL__READER_MNIST;
    r->opname = "readers.mnist";
    const char *path = sl__args_str(a, "path"), *labels = sl__args_str(a, "labels");
    r->path0 = strdup(path ? path : "");
    sl_status st = sl__idx_open(r->path0, &r->img, err);
    if (!st && sl__idx_type(r->img) != SL_IDX_U8)
        st = sl_err_set(err, SL_ENOTSUP, "%s: IDX item type 0x%02x (only uint8 images)", r->path0,
                        sl__idx_type(r->img));
    if (!st && sl__idx_ndim(r->img) != 3 && sl__idx_ndim(r->img) != 4)
        st = sl_err_set(err, SL_EFORMAT, "%s: IDX images need 3 or 4 dims (N, H, W[, C]), not %d",
                        r->path0, sl__idx_ndim(r->img));
    if (!st && labels) {
        st = sl__idx_open(labels, &r->lab, err);
        if (!st && (sl__idx_type(r->lab) != SL_IDX_U8 || sl__idx_ndim(r->lab) != 1))
            st = sl_err_set(err, SL_EFORMAT, "%s: IDX labels must be uint8 with 1 dim", labels);
        if (!st && sl__idx_count(r->lab) != sl__idx_count(r->img))
            st = sl_err_set(err, SL_EFORMAT, "%s: %lld labels for %lld images in %s", labels,
                            (long long)sl__idx_count(r->lab), (long long)sl__idx_count(r->img),
                            r->path0);
    }
    if (st) st = sl_err_prefix(err, "readers.mnist: ");
    if (!st) {
        r->n = sl__idx_count(r->img);
        st = sl__reader_start(r, a, init, err);
    }
    if (st) {
        sl__reader_free(r);
        return st;
    }
    *state = r;
    return SL_OK;
}

static sl_status mnist_setup(void *state, sl__op_io *io, sl_err *err) {
    sl__reader *r = state;
    SL_TRY(sl__reader_next(r, io, err));
    const int64_t *d = sl__idx_dims(r->img);
    int64_t shape[3] = {d[1], d[2], sl__idx_ndim(r->img) == 4 ? d[3] : 1};
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, SL_DTYPE_U8, 3, sl_cpu(), err));
    snprintf(out->layout, sizeof out->layout, "HWC");
    for (int i = 0; i < io->batch; i++) {
        size_t n;
        const uint8_t *p = sl__idx_item(r->img, r->recs[i], &n);
        sl_tlist_set_external(out, i, (void *)p, shape);
    }
    if (r->lab) {
        out = io->out[1];
        SL_TRY(sl__reader_label_list(out, io->batch, err));
        for (int i = 0; i < io->batch; i++) {
            size_t n;
            *(int32_t *)out->data[i] = *sl__idx_item(r->lab, r->recs[i], &n);
        }
    }
    return SL_OK;
}

const sl__op_def sl__reader_mnist_op = {
    .name = "readers.mnist",
    .doc = "sluice extension: reads IDX files (MNIST / Fashion-MNIST, plain or gzip): raw images "
           "(H, W, 1) uint8 and int32 labels (1,); the key of a record is its index.",
    .args = mnist_args,
    .devices = SL_OPDEV_CPU,
    .flags = SL_OPF_READER | SL_OPF_RANDOM,
    .num_outputs = mnist_outputs,
    .create = mnist_create,
    .setup = mnist_setup,
    .destroy = sl__reader_free,
    .reader_meta = sl__reader_meta,
    .save = sl__reader_save,
    .restore = sl__reader_restore,
};
