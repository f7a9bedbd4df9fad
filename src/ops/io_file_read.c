/* SPDX-License-Identifier: Apache-2.0 */
/* io.file.read (DALI's fn.io.file.read): each sample of the input is a file name as a 1-D array
 * of bytes (int8 or uint8, e.g. np.frombuffer(path.encode(), np.int8); a trailing NUL ends it);
 * the output is the file's contents, uint8 1-D. The files are sized in setup (a missing file, or
 * one that is not a regular file, is an error naming it and the sample) and read on the pool. */
#include "operator/op.h"

#include "core/alloc.h"
#include "core/file.h"
#include "core/log.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NAME "io.file.read"

static const sl__arg_schema fr_args[] = {
    {"dont_use_mmap", SL_ARG_BOOL, "False", "accepted; no effect (files are read, not mapped)", 0,
     NULL},
    {"use_o_direct", SL_ARG_BOOL, "False", "accepted; no effect (files are read through the cache)",
     0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct fr_state {
    int cap;
    char (*names)[PATH_MAX]; /* batch: each sample's file name */
} fr_state;

static void fr_destroy(void *state) {
    fr_state *s = state;
    if (s) free(s->names);
    free(s);
}

static sl_status fr_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)a, (void)init;
    fr_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    *out = s;
    return SL_OK;
}

static sl_status fr_setup(void *state, sl__op_io *io, sl_err *err) {
    fr_state *s = state;
    const sl_tlist *in = io->in[0];
    if (in->dtype != SL_DTYPE_I8 && in->dtype != SL_DTYPE_U8)
        return sl_err_set(err, SL_EINVAL, "%s: the file names are int8 or uint8 arrays (got %s)",
                          NAME, sl_dtype_name(in->dtype));
    if (in->ndim != 1)
        return sl_err_set(err, SL_EINVAL, "%s: a file name is a 1-D array of bytes (got %d dims)",
                          NAME, in->ndim);
    if (io->batch > s->cap) {
        void *n = realloc(s->names, (size_t)io->batch * sizeof *s->names);
        if (!n) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", NAME);
        s->names = n;
        s->cap = io->batch;
    }
    int64_t *sizes = sl__malloc((size_t)(io->batch ? io->batch : 1) * sizeof *sizes, err);
    if (!sizes) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0; i < io->batch && !st; i++) {
        int64_t n = sl_tlist_shape(in, i)[0];
        const char *p = in->data[i];
        size_t len = n > 0 ? strnlen(p, (size_t)n) : 0;
        if (len == 0 || len >= PATH_MAX) {
            st = sl__op_fail(err, SL_EINVAL, io, i, NAME, "the file name has %zu bytes (1 to %d)",
                             len, PATH_MAX - 1);
            break;
        }
        memcpy(s->names[i], p, len);
        s->names[i][len] = '\0';
        int fd;
        uint64_t size;
        st = sl__file_open_regular(s->names[i], NAME, &fd, &size, err);
        if (!st) close(fd);
        if (!st && size > (uint64_t)INT64_MAX) st = sl_err_set(err, SL_EIO, "%s: too large", NAME);
        if (st) {
            char msg[SL_ERRMSG_MAX];
            snprintf(msg, sizeof msg, "%s", err->msg);
            st = sl__op_fail(err, st, io, i, NAME, "%s", msg);
        }
        sizes[i] = (int64_t)size;
    }
    sl_tlist *out = io->out[0];
    if (!st) st = sl_tlist_reset(out, io->batch, SL_DTYPE_U8, 1, sl_cpu(), err);
    if (!st) st = sl_tlist_alloc(out, sizes, err);
    free(sizes);
    if (!st) out->layout[0] = '\0';
    return st;
}

static sl_status fr_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)worker;
    fr_state *s = state;
    int64_t n = sl_tlist_shape(io->out[0], i)[0];
    int fd;
    uint64_t size;
    SL_TRY(sl__file_open_regular(s->names[i], NAME, &fd, &size, err));
    sl_status st =
        size != (uint64_t)n
            ? sl_err_set(err, SL_EIO, "%s %s: the file changed size while read", NAME, s->names[i])
            : sl__file_pread_full(fd, io->out[0]->data[i], (size_t)n, 0, NAME, s->names[i], err);
    close(fd);
    return st;
}

const sl__op_def sl__io_file_read_op = {
    .name = "io.file.read",
    .doc = "Each sample's file (its name a 1-D int8/uint8 array) read whole: uint8 1-D.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = fr_args,
    .devices = SL_OPDEV_CPU,
    .create = fr_create,
    .setup = fr_setup,
    .run_cpu = fr_run_cpu,
    .destroy = fr_destroy,
};
