/* SPDX-License-Identifier: Apache-2.0 */
/* readers.file: files (encoded images) with labels from class sub-folders, a file list or explicit
 * files (reader.h). Setup sizes the batch's files and run_cpu reads each one, on the pool, straight
 * into the batch's uint8 output; labels are int32 (1,). */
#include "ops/reader.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdlib.h>

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
    .name = "readers.file",
    .doc = "Reads files (encoded images) with labels from class sub-folders, a file list, or "
           "explicit files: uint8 1-D bytes and int32 labels (1,); the key is the relative path.",
    .args = file_args,
    .devices = SL_OPDEV_CPU,
    .flags = SL_OPF_READER | SL_OPF_RANDOM,
    .num_outputs = file_outputs,
    .create = file_create,
    .setup = file_setup,
    .run_cpu = file_run_cpu,
    .destroy = file_free,
    .reader_meta = sl__reader_meta,
    .save = sl__reader_save,
    .restore = sl__reader_restore,
};
