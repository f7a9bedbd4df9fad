/* SPDX-License-Identifier: Apache-2.0 */
/* readers.numpy: NumPy .npy files from a folder tree, a file list or explicit files (reader.h).
 * Setup reads the .npy headers (one data type and dimension count a batch) and sizes the output;
 * run_cpu reads each array, on the pool, straight into the batch's output, in C order. */
#include "ops/reader.h"

#include "core/alloc.h"
#include "core/log.h"
#include "io/npy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct numpy_reader {
    sl__reader r;        /* first: the common part */
    int want;            /* the dtype every file must hold, or -1 */
    sl__npy_header *hdr; /* batch */
    int64_t *shapes;     /* batch x SL_MAX_DIMS */
} numpy_reader;

static const sl__arg_schema numpy_args[] = {
    {"file_root", SL_ARG_STR, NULL,
     "folder read with file_filter (its files and its sub-folders'), or the base of file_list / "
     "files",
     0, NULL},
    {"file_filter", SL_ARG_STR, "\"*.npy\"",
     "glob the file names under file_root must match (not with file_list or files)", 0, NULL},
    {"file_list", SL_ARG_STR, NULL, "text file of paths, one per line", 0, NULL},
    {"files", SL_ARG_STRS, NULL, "file paths (relative to file_root when given)", 0, NULL},
    {"dtype", SL_ARG_DTYPE, "None", "data type every file must hold (checked)", 0, NULL},
    {"cache_header_information", SL_ARG_BOOL, "False",
     "accepted; no effect (each header is read with its sample)", 0, NULL},
    {"use_o_direct", SL_ARG_BOOL, "False", "accepted; no effect", 0, NULL},
    SL__READER_ARGS(
        "accepted; no effect (a batch's files are read, in parallel, as it is prepared)",
        "accepted; no effect (arrays are read into the outputs, never mapped)",
        "accepted; no effect (outputs are sized per batch from the .npy headers)"),
    {NULL, 0, NULL, NULL, 0, NULL},
};

static void numpy_free(void *state) {
    numpy_reader *f = state;
    if (!f) return;
    free(f->hdr);
    free(f->shapes);
    sl__reader_free(&f->r);
}

static sl_status numpy_create(const sl__args *a, const sl__op_init *init, void **state,
                              sl_err *err) {
    numpy_reader *f = sl__calloc(1, sizeof *f, err);
    if (!f) return SL_ENOMEM;
    sl__reader *r = &f->r;
    r->fmt = SL__READER_NUMPY;
    r->opname = "readers.numpy";
    f->want = sl__args_given(a, "dtype") ? (int)sl__args_dtype(a, "dtype") : -1;
    sl_status st = sl__reader_folder_start(r, a, init, err);
    if (!st) {
        f->hdr = sl__calloc((size_t)r->batch_size, sizeof *f->hdr, err);
        f->shapes = sl__calloc((size_t)r->batch_size * SL_MAX_DIMS, sizeof *f->shapes, err);
        if (!f->hdr || !f->shapes) st = SL_ENOMEM;
    }
    if (st) {
        numpy_free(f);
        return st;
    }
    *state = f;
    return SL_OK;
}

/* file i's header into f->hdr[i] (its errors name the file) */
static sl_status numpy_header(numpy_reader *f, int i, sl_err *err) {
    sl__reader *r = &f->r;
    char p[8192];
    sl__folder_path(r->folder, r->recs[i], p, sizeof p);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return sl__reader_fail(r, i, SL_EIO, err, "%s: %s", p, strerror(errno));
    struct stat sb;
    sl_status st = fstat(fd, &sb) == 0 ? SL_OK : sl_err_set(err, SL_EIO, "%s", strerror(errno));
    if (st == SL_OK && !S_ISREG(sb.st_mode)) st = sl_err_set(err, SL_EIO, "not a regular file");
    if (st == SL_OK) st = sl__npy_read_header(fd, (size_t)sb.st_size, &f->hdr[i], err);
    close(fd);
    if (st != SL_OK) {
        char msg[SL_ERRMSG_MAX];
        snprintf(msg, sizeof msg, "%s", err->msg);
        return sl__reader_fail(r, i, st, err, "%s", msg);
    }
    return SL_OK;
}

/* Reads every file's header (the batch's shapes: one data type and dimension count for all of
 * them, as a batch holds) and sizes the output; run_cpu reads the arrays into place. */
static sl_status numpy_setup(void *state, sl__op_io *io, sl_err *err) {
    numpy_reader *f = state;
    sl__reader *r = &f->r;
    SL_TRY(sl__reader_next(r, io, err));
    for (int i = 0; i < io->batch; i++) {
        SL_TRY(numpy_header(f, i, err));
        const sl__npy_header *h = &f->hdr[i], *h0 = &f->hdr[0];
        if (f->want >= 0 && (int)h->dtype != f->want)
            return sl__reader_fail(r, i, SL_EINVAL, err, "holds %s, but dtype=%s",
                                   sl_dtype_name(h->dtype), sl_dtype_name((sl_dtype)f->want));
        if (i > 0 && (h->dtype != h0->dtype || h->ndim != h0->ndim))
            return sl__reader_fail(
                r, i, SL_EINVAL, err,
                "holds %s with %d dimensions, but the batch's first file (%s) holds "
                "%s with %d: a batch has one data type and dimension count",
                sl_dtype_name(h->dtype), h->ndim, r->keys[0], sl_dtype_name(h0->dtype), h0->ndim);
        memcpy(f->shapes + (size_t)i * (size_t)h0->ndim, h->shape,
               (size_t)h->ndim * sizeof *f->shapes);
    }
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, f->hdr[0].dtype, f->hdr[0].ndim, sl_cpu(), err));
    out->layout[0] = 0;
    return sl_tlist_alloc(out, f->shapes, err);
}

/* file i's array into out[0] sample i (C order) */
static sl_status numpy_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    numpy_reader *f = state;
    sl__reader *r = &f->r;
    (void)worker;
    const sl__npy_header *h = &f->hdr[i];
    uint8_t *dst = io->out[0]->data[i], *buf = dst;
    if (h->fortran && h->ndim > 1) {
        buf = sl__malloc(h->nbytes ? h->nbytes : 1, err);
        if (!buf) return SL_ENOMEM;
    }
    char p[8192];
    sl__folder_path(r->folder, r->recs[i], p, sizeof p);
    sl_status st = SL_OK;
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) st = sl__reader_fail(r, i, SL_EIO, err, "%s: %s", p, strerror(errno));
    for (size_t n = 0; st == SL_OK && n < h->nbytes;) {
        ssize_t got = pread(fd, buf + n, h->nbytes - n, (off_t)(h->data_offset + n));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0)
            st = sl__reader_fail(r, i, SL_EIO, err, "%s: %s", p,
                                 got < 0 ? strerror(errno) : "the file shrank while being read");
        else
            n += (size_t)got;
    }
    if (fd >= 0) close(fd);
    if (st == SL_OK && buf != dst) sl__npy_fortran_to_c(h, buf, dst);
    if (buf != dst) free(buf);
    return st;
}

const sl__op_def sl__reader_numpy_op = {
    .name = "readers.numpy",
    .doc =
        "Reads NumPy .npy files (format 1.0-3.0, little-endian, C or Fortran order) from a folder "
        "tree, a file list or explicit files: one array per file, in C order; the key is the "
        "relative path.",
    .args = numpy_args,
    .devices = SL_OPDEV_CPU,
    .flags = SL_OPF_READER | SL_OPF_RANDOM,
    .create = numpy_create,
    .setup = numpy_setup,
    .run_cpu = numpy_run_cpu,
    .destroy = numpy_free,
    .reader_meta = sl__reader_meta,
    .save = sl__reader_save,
    .restore = sl__reader_restore,
};
