/* SPDX-License-Identifier: Apache-2.0 */
/* readers.mxnet (DALI's fn.readers.mxnet, ops.MXNetReader): MXNet RecordIO files of image records
 * (io/recordio.h), in the index's order by offset. Two outputs: the encoded image, a uint8 1-D
 * view into the mapped file, and the labels, float32 (1,) (the header's label) or (flag,) (the
 * record's label list); the key is the record's key in the index. */
#include "ops/reader.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LABELS 4096

typedef struct mx_reader {
    sl__reader r; /* first: the common part */
    const uint8_t **img;
    uint64_t *img_len;
    int64_t *shapes; /* batch: each label list's length */
    float *labels;   /* batch * MAX_LABELS */
} mx_reader;

static const sl__arg_schema mx_args[] = {
    {"path", SL_ARG_STRS, NULL, "the RecordIO (.rec) files, one stream in this order",
     SL_ARGF_REQUIRED, NULL},
    {"index_path", SL_ARG_STRS, NULL,
     "one index (.idx) file, \"key offset\" per record (im2rec's or DALI's rec2idx's)",
     SL_ARGF_REQUIRED, NULL},
    SL__READER_ARGS("accepted; no effect (the record files are mapped: records are read when "
                    "touched)",
                    "accepted; no effect (the record files are always mapped)",
                    "accepted; no effect (images are views into the mapped files)"),
    {NULL, 0, NULL, NULL, 0, NULL},
};

static int mx_outputs(const sl__args *a) {
    (void)a;
    return 2;
}

static void mx_free(void *state) {
    mx_reader *m = state;
    if (!m) return;
    free(m->img);
    free(m->img_len);
    free(m->shapes);
    free(m->labels);
    sl__reader_free(&m->r);
}

static sl_status mx_create(const sl__args *a, const sl__op_init *init, void **state, sl_err *err) {
    mx_reader *m = sl__calloc(1, sizeof *m, err);
    if (!m) return SL_ENOMEM;
    sl__reader *r = &m->r;
    r->fmt = SL__READER_MXNET;
    r->opname = "readers.mxnet";
    const char *const *paths, *const *idx;
    int np = sl__args_strs(a, "path", &paths);
    int ni = sl__args_strs(a, "index_path", &idx);
    sl_status st = SL_OK;
    if (np < 1) st = sl_err_set(err, SL_EINVAL, "readers.mxnet: path names no file");
    if (!st && ni != 1)
        st = sl_err_set(err, SL_EINVAL,
                        "readers.mxnet: index_path is a list of one index file (got %d)", ni);
    if (!st) {
        r->path0 = strdup(paths[0]);
        st = sl__recio_open(np, paths, idx[0], &r->recio, err);
        if (st) st = sl_err_prefix(err, "readers.mxnet: ");
    }
    if (!st) {
        r->n = sl__recio_count(r->recio);
        st = sl__reader_start(r, a, init, err);
    }
    if (!st) {
        size_t b = (size_t)r->batch_size;
        m->img = sl__calloc(b, sizeof *m->img, err);
        m->img_len = sl__calloc(b, sizeof *m->img_len, err);
        m->shapes = sl__calloc(b, sizeof *m->shapes, err);
        m->labels = sl__calloc(b * MAX_LABELS, sizeof *m->labels, err);
        if (!m->img || !m->img_len || !m->shapes || !m->labels) st = SL_ENOMEM;
    }
    if (st) {
        mx_free(m);
        return st;
    }
    *state = m;
    return SL_OK;
}

static sl_status mx_setup(void *state, sl__op_io *io, sl_err *err) {
    mx_reader *m = state;
    sl__reader *r = &m->r;
    SL_TRY(sl__reader_next(r, io, err));
    for (int i = 0; i < io->batch; i++) {
        const uint8_t *data;
        uint64_t len;
        if (sl__recio_read(r->recio, r->recs[i], &data, &len, err)) {
            char msg[SL_ERRMSG_MAX];
            snprintf(msg, sizeof msg, "%s", err->msg);
            return sl__reader_fail(r, i, err->status, err, "%s", msg);
        }
        int n = 0;
        if (sl__recio_image(data, len, m->labels + (size_t)i * MAX_LABELS, MAX_LABELS, &n,
                            &m->img[i], &m->img_len[i]))
            return sl__reader_fail(r, i, SL_EFORMAT, err,
                                   "the record (%llu bytes) is shorter than its image header",
                                   (unsigned long long)len);
        if (n > MAX_LABELS)
            return sl__reader_fail(r, i, SL_EFORMAT, err, "%d labels (at most %d)", n, MAX_LABELS);
        m->shapes[i] = n;
    }
    sl_tlist *img = io->out[0], *lab = io->out[1];
    SL_TRY(sl_tlist_reset(img, io->batch, SL_DTYPE_U8, 1, sl_cpu(), err));
    img->layout[0] = 0;
    for (int i = 0; i < io->batch; i++) {
        static const uint8_t none[1];
        int64_t shape = (int64_t)m->img_len[i];
        sl_tlist_set_external(img, i, (void *)(shape ? m->img[i] : none), &shape);
    }
    SL_TRY(sl_tlist_reset(lab, io->batch, SL_DTYPE_F32, 1, sl_cpu(), err));
    lab->layout[0] = 0;
    SL_TRY(sl_tlist_alloc(lab, m->shapes, err));
    for (int i = 0; i < io->batch; i++)
        memcpy(lab->data[i], m->labels + (size_t)i * MAX_LABELS,
               (size_t)m->shapes[i] * sizeof(float));
    return SL_OK;
}

const sl__op_def sl__reader_mxnet_op = {
    SL__READER_OP_COMMON,
    .name = "readers.mxnet",
    .aliases = "mxnet_reader",
    .doc = "Reads MXNet RecordIO files of image records through their index: the encoded image "
           "(uint8 1-D view into the mapped file) and its labels (float32, (1,) or one per label "
           "of the record); the key is the record's key in the index.",
    .args = mx_args,
    .num_outputs = mx_outputs,
    .create = mx_create,
    .setup = mx_setup,
    .destroy = mx_free,
};
