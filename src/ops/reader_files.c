/* SPDX-License-Identifier: Apache-2.0 */
/* The readers of plain files (reader.h): readers.file (encoded images) and readers.mnist (IDX
 * files); readers.numpy is in reader_numpy.c. */
#include "ops/reader.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- readers.file ---------------------------------------------------------------------------- */
/* readers.file: files (encoded images) with labels from class sub-folders, a file list or explicit
 * files (reader.h). Setup sizes the batch's files and run_cpu reads each one, on the pool, straight
 * into the batch's uint8 output; labels are int32 (1,). */

typedef struct file_reader {
    sl__reader r;   /* first: the common part */
    int64_t *sizes; /* batch: file sizes, the byte output's shapes */
} file_reader;

static const sl__arg_schema file_args[] = {
    {"file_root", SL_ARG_STR, NULL,
     "root folder: one sub-folder per class (sorted names, label = index), or the base of "
     "file_list / files",
     0, NULL},
    {"file_list", SL_ARG_STR, NULL, "text file of \"relative/path label\" lines", 0, NULL},
    {"files", SL_ARG_STRS, NULL, "file paths (relative to file_root when given)", 0, NULL},
    {"labels", SL_ARG_INTS, NULL, "labels of files=[...] (default: their index)", 0, NULL},
    SL__READER_ARGS(
        "accepted; no effect (a batch's files are read, in parallel, as it is prepared)",
        "accepted; no effect (files are read into the outputs, never mapped)",
        "accepted; no effect (outputs are sized per batch from the files' sizes)"),
    {NULL, 0, NULL, NULL, 0, NULL},
};

static void file_free(void *state) {
    file_reader *f = state;
    if (!f) return;
    free(f->sizes);
    sl__reader_free(&f->r);
}

static int file_outputs(const sl__args *a) {
    (void)a;
    return 2;
}

static sl_status file_create(const sl__args *a, const sl__op_init *init, void **state,
                             sl_err *err) {
    file_reader *f = sl__calloc(1, sizeof *f, err);
    if (!f) return SL_ENOMEM;
    sl__reader *r = &f->r;
    r->fmt = SL__READER_FILE;
    r->opname = "readers.file";
    sl_status st = sl__reader_folder_start(r, a, init, err);
    if (!st) {
        f->sizes = sl__calloc((size_t)r->batch_size, sizeof *f->sizes, err);
        if (!f->sizes) st = SL_ENOMEM;
    }
    if (st) {
        file_free(f);
        return st;
    }
    *state = f;
    return SL_OK;
}

/* Sizes each file (stat) and allocates the batch's byte output; run_cpu then reads every file
 * straight into its place there, on the pool. The bytes live in the batch's own buffer, never in
 * op state: a GPU stage may still be decoding this batch while the next one is read. */
static sl_status file_setup(void *state, sl__op_io *io, sl_err *err) {
    file_reader *f = state;
    sl__reader *r = &f->r;
    SL_TRY(sl__reader_next(r, io, err));
    sl_tlist *out = io->out[0], *lab = io->out[1];
    SL_TRY(sl_tlist_reset(out, io->batch, SL_DTYPE_U8, 1, sl_cpu(), err));
    out->layout[0] = 0;
    for (int i = 0; i < io->batch; i++) {
        size_t n;
        if (sl__folder_size(r->folder, r->recs[i], &n, err) != SL_OK)
            return sl_err_prefix(err, "readers.file: key %s: ", r->keys[i]);
        f->sizes[i] = (int64_t)n;
    }
    SL_TRY(sl_tlist_alloc(out, f->sizes, err));
    SL_TRY(sl__reader_label_list(lab, io->batch, err));
    for (int i = 0; i < io->batch; i++)
        *(int32_t *)lab->data[i] = sl__folder_label(r->folder, r->recs[i]);
    return SL_OK;
}

/* file i of the batch into out[0] sample i, as sized by setup */
static sl_status file_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    file_reader *f = state;
    (void)worker;
    const sl_tlist *out = io->out[0];
    if (sl__folder_read_into(f->r.folder, f->r.recs[i], out->data[i],
                             sl_tlist_sample_nbytes(out, i), err) != SL_OK)
        return sl_err_prefix(err, "readers.file: key %s: ", f->r.keys[i]); /* this reader's */
    return SL_OK;
}

const sl__op_def sl__reader_file_op = {
    SL__READER_OP_COMMON,
    .name = "readers.file",
    .aliases = "file_reader",
    .doc = "Reads files (encoded images) with labels from class sub-folders, a file list, or "
           "explicit files: uint8 1-D bytes and int32 labels (1,); the key is the relative path.",
    .args = file_args,
    .num_outputs = file_outputs,
    .create = file_create,
    .setup = file_setup,
    .run_cpu = file_run_cpu,
    .destroy = file_free,
};

/* ---- readers.mnist --------------------------------------------------------------------------- */
/* readers.mnist (a sluice extension): IDX files, MNIST / Fashion-MNIST, plain or gzip (reader.h):
 * raw (H, W, C) uint8 images as views into the loaded file and int32 labels (1,); the key of a
 * record is its index. */

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
    SL__READER_OP_COMMON,
    .name = "readers.mnist",
    .doc = "sluice extension: reads IDX files (MNIST / Fashion-MNIST, plain or gzip): raw images "
           "(H, W, 1) uint8 and int32 labels (1,); the key of a record is its index.",
    .args = mnist_args,
    .num_outputs = mnist_outputs,
    .create = mnist_create,
    .setup = mnist_setup,
    .destroy = sl__reader_free,
};
