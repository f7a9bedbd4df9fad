/* SPDX-License-Identifier: Apache-2.0 */
/* The reader operators: readers.caffe2, readers.caffe, readers.file, readers.numpy,
 * readers.webdataset and readers.mnist (an IDX reader, a sluice extension). Each is a record store
 * (LMDB, IDX file, file list, tar shards) behind the one
 * loader core (loader.h) that decides, sample by sample, which record comes next. Setup reads the
 * batch's records, sets io->keys (owned here, valid until the next setup) and fills the outputs:
 * encoded images as zero-copy uint8 views into the LMDB map, raw images as (H, W, C) uint8, labels
 * as int32/float32 (1,) or (num_labels,); readers.file's setup sizes the files and its run_cpu
 * reads each one, on the pool, straight into the batch's output; readers.numpy's setup reads the
 * .npy headers and its run_cpu the arrays the same way. Every record error is SL_EFORMAT
 * (SL_EIO for files) naming path and key. */
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"
#include "core/size.h"
#include "io/caffe.h"
#include "io/caffe2.h"
#include "io/folder.h"
#include "io/idx.h"
#include "io/lmdb.h"
#include "io/loader.h"
#include "io/npy.h"
#include "io/wds.h"
#include "io/tfrecord.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KEY_MAX          512
#define DALI_LOADER_SEED 524287 /* kDaliDataloaderSeed: the shuffle_after_epoch default seed */

/* LoaderBase arguments, shared by every reader (DALI's names and defaults). The I/O ones do
 * nothing here, for a reason that depends on how the reader gets at its store, so each reader
 * says why: RA, MM and IB are the docs of read_ahead, dont_use_mmap and tensor_init_bytes. */
#define LOADER_ARGS(RA, MM, IB)                                                                    \
    {"random_shuffle",                                                                             \
     SL_ARG_BOOL,                                                                                  \
     "False",                                                                                      \
     "pick each sample at random from a window of initial_fill upcoming records",                  \
     0,                                                                                            \
     NULL},                                                                                        \
        {"initial_fill", SL_ARG_INT, "1024", "size of the shuffle window (>= 1)", 0, NULL},        \
        {"num_shards", SL_ARG_INT, "1", "number of partitions of the data set", 0, NULL},          \
        {"shard_id", SL_ARG_INT, "0", "the partition this reader reads (first epoch)", 0, NULL},   \
        {"stick_to_shard",                                                                         \
         SL_ARG_BOOL,                                                                              \
         "False",                                                                                  \
         "read the same shard every epoch instead of moving to the next",                          \
         0,                                                                                        \
         NULL},                                                                                    \
        {"pad_last_batch",                                                                         \
         SL_ARG_BOOL,                                                                              \
         "False",                                                                                  \
         "repeat the shard's last sample so that every shard gives ceil(N/S) samples and full "    \
         "batches",                                                                                \
         0,                                                                                        \
         NULL},                                                                                    \
        {"seed", SL_ARG_INT, "-1", "random seed >= 0 (-1: derived from the pipeline's)", 0, NULL}, \
        {"shuffle_after_epoch",                                                                    \
         SL_ARG_BOOL,                                                                              \
         "False",                                                                                  \
         "read through a seeded global permutation per epoch, the same on every shard (for "       \
         "caffe2/caffe/mnist a sluice extension)",                                                 \
         0,                                                                                        \
         NULL},                                                                                    \
        {"prefetch_queue_depth",                                                                   \
         SL_ARG_INT,                                                                               \
         "1",                                                                                      \
         "accepted for DALI compatibility; the pipeline's queue does the prefetching",             \
         0,                                                                                        \
         NULL},                                                                                    \
        {"read_ahead", SL_ARG_BOOL, "False", RA, 0, NULL},                                         \
        {"dont_use_mmap", SL_ARG_BOOL, "False", MM, 0, NULL},                                      \
        {"lazy_init", SL_ARG_BOOL,                                                                 \
         "False",     "accepted; no effect (stores are opened and checked at creation)",           \
         0,           NULL},                                                                       \
        {"skip_cached_images",                                                                     \
         SL_ARG_BOOL,                                                                              \
         "False",                                                                                  \
         "accepted; no effect (every record is read; decoders.image's cache_size keeps "           \
         "decoded images instead)",                                                                \
         0,                                                                                        \
         NULL},                                                                                    \
    {                                                                                              \
        "tensor_init_bytes", SL_ARG_INT, "1048576", IB, 0, NULL                                    \
    }

enum { FMT_CAFFE2, FMT_CAFFE, FMT_MNIST, FMT_FILE, FMT_NUMPY, FMT_WDS, FMT_TFREC };

typedef struct reader {
    int fmt;
    const char *opname;
    char *path0; /* for messages about the whole store */
    sl__loader *loader;
    int64_t n;
    int batch_size;
    int64_t *recs; /* batch: record indices */
    char **keys;   /* batch: pointers into keybuf */
    char *keybuf;  /* batch * KEY_MAX */
    /* stores */
    sl__lmdb *db;
    sl__idx *img, *lab;
    sl__folder *folder;
    sl__wds *wds;
    sl__tfrec *tfrec;
    /* caffe2 / caffe options */
    int label_type, num_labels, additional;
    bool bbox, image_available, label_available;
    sl__caffe2_record *c2; /* batch */
    int64_t *nlab;         /* batch: label values per record */
    double *lab0;          /* batch: each record's first label value */
    sl__caffe_datum *cd;   /* batch */
    double *vals;          /* scratch for label values */
    int64_t vals_cap;
} reader;

static const char *rec_path(const reader *r, int64_t rec) {
    switch (r->fmt) {
    case FMT_CAFFE2:
    case FMT_CAFFE:
        return sl__lmdb_path(r->db, rec);
    case FMT_MNIST:
        return sl__idx_path(r->img);
    case FMT_WDS:
        return sl__wds_path(r->wds, rec);
    case FMT_TFREC:
        return sl__tfrec_path(r->tfrec, rec);
    default:
        return sl__folder_root(r->folder);
    }
}

static const char *rec_key(const reader *r, int64_t rec, char *buf, size_t n) {
    switch (r->fmt) {
    case FMT_CAFFE2:
    case FMT_CAFFE:
        return sl__lmdb_key(r->db, rec, buf, n);
    case FMT_MNIST:
        snprintf(buf, n, "%lld", (long long)rec);
        return buf;
    case FMT_WDS:
        snprintf(buf, n, "%s", sl__wds_key(r->wds, rec));
        return buf;
    case FMT_TFREC: /* the record's byte offset in its file */
        snprintf(buf, n, "%llu", (unsigned long long)sl__tfrec_offset(r->tfrec, rec));
        return buf;
    default:
        snprintf(buf, n, "%s", sl__folder_name(r->folder, rec));
        return buf;
    }
}

/* "readers.caffe2: /data/train at key 00000003: <what>" */
static sl_status rec_fail(const reader *r, int i, sl_status st, sl_err *err, const char *fmt, ...)
    SL_PRINTF(5, 6);
static sl_status rec_fail(const reader *r, int i, sl_status st, sl_err *err, const char *fmt, ...) {
    char what[SL_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return sl_err_set(err, st, "%s: %s at %s %s: %s", r->opname, rec_path(r, r->recs[i]),
                      r->fmt == FMT_TFREC ? "offset" : "key", r->keys[i], what);
}

static void reader_free(void *state) {
    reader *r = state;
    if (!r) return;
    sl__loader_free(r->loader);
    sl__lmdb_close(r->db);
    sl__idx_close(r->img);
    sl__idx_close(r->lab);
    sl__folder_close(r->folder);
    sl__wds_close(r->wds);
    sl__tfrec_close(r->tfrec);
    free(r->path0);
    free(r->recs);
    free(r->keys);
    free(r->keybuf);
    free(r->c2);
    free(r->nlab);
    free(r->lab0);
    free(r->cd);
    free(r->vals);
    free(r);
}

/* opens the loader over r->n records and the batch arrays */
static sl_status reader_start(reader *r, const sl__args *a, const sl__op_init *init, sl_err *err) {
    sl__loader_cfg c;
    memset(&c, 0, sizeof c);
    c.n = r->n;
    c.num_shards = (int)sl__args_int(a, "num_shards");
    c.shard_id = (int)sl__args_int(a, "shard_id");
    c.random_shuffle = sl__args_bool(a, "random_shuffle");
    c.initial_fill = (int)sl__args_int(a, "initial_fill");
    c.stick_to_shard = sl__args_bool(a, "stick_to_shard");
    c.pad_last_batch = sl__args_bool(a, "pad_last_batch");
    c.shuffle_after_epoch = sl__args_bool(a, "shuffle_after_epoch");
    int64_t seed = sl__args_int(a, "seed");
    /* values that would be ignored (unshuffled) or taken for another (-1) are refused */
    if (c.initial_fill < 1)
        return sl_err_set(err, SL_EINVAL, "%s: initial_fill must be >= 1 (got %d)", r->opname,
                          c.initial_fill);
    if (seed < -1)
        return sl_err_set(err, SL_EINVAL,
                          "%s: seed must be >= 0, or -1 for the pipeline's (got %lld)", r->opname,
                          (long long)seed);
    c.seed = init->seed;
    c.perm_seed = seed >= 0 ? (uint64_t)seed : DALI_LOADER_SEED;
    if (init->global_shards > 0) { /* the pipeline's global order: its shards, its batch */
        if ((sl__args_given(a, "num_shards") && c.num_shards != init->global_shards) ||
            (sl__args_given(a, "shard_id") && c.shard_id != init->global_shard))
            return sl_err_set(err, SL_EINVAL,
                              "%s: num_shards=%d, shard_id=%d, but the pipeline is shard %d of %d "
                              "in global order",
                              r->opname, c.num_shards, c.shard_id, init->global_shard,
                              init->global_shards);
        if (sl__args_given(a, "initial_fill"))
            return sl_err_set(err, SL_EINVAL,
                              "%s: initial_fill has no meaning in global order (each epoch is one "
                              "order of every record, without a window)",
                              r->opname);
        c.num_shards = init->global_shards;
        c.shard_id = init->global_shard;
        c.global_order = true;
        c.batch = init->batch_size > 0 ? init->batch_size : 1;
        c.global_drop = init->global_drop;
    }
    if (c.shuffle_after_epoch && (r->fmt == FMT_FILE || r->fmt == FMT_NUMPY))
        c.stick_to_shard = true; /* as DALI */
    sl_status st = sl__loader_create(&c, &r->loader, err);
    if (st) return sl_err_prefix(err, "%s: %s: ", r->opname, r->path0);
    int b = init->batch_size > 0 ? init->batch_size : 1;
    r->batch_size = b;
    r->recs = sl__calloc((size_t)b, sizeof *r->recs, err);
    r->keys = sl__calloc((size_t)b, sizeof *r->keys, err);
    r->keybuf = sl__calloc((size_t)b, KEY_MAX, err);
    if (!r->recs || !r->keys || !r->keybuf) return SL_ENOMEM;
    for (int i = 0; i < b; i++) r->keys[i] = r->keybuf + (size_t)i * KEY_MAX;
    return SL_OK;
}

/* picks the batch's records and their keys */
static sl_status reader_next(reader *r, sl__op_io *io, sl_err *err) {
    if (io->batch > r->batch_size || io->batch < 0)
        return sl_err_set(err, SL_EINVAL, "%s: batch of %d samples, created for at most %d",
                          r->opname, io->batch, r->batch_size);
    for (int i = 0; i < io->batch; i++) r->recs[i] = sl__loader_next(r->loader, i == 0, NULL);
    if (r->db) { /* the batch's records lie all over the map: fetch them before reading any */
        sl__lmdb_prefetch(r->db, r->recs, io->batch, 0);
        sl__lmdb_prefetch(r->db, r->recs, io->batch, 1);
    }
    for (int i = 0; i < io->batch; i++) rec_key(r, r->recs[i], r->keys[i], KEY_MAX);
    io->keys = (const char *const *)r->keys;
    return SL_OK;
}

static sl_status reader_meta(void *state, sl_reader_meta *meta) {
    sl__loader_meta(((reader *)state)->loader, meta);
    return SL_OK;
}

static sl_status reader_save(void *state, void **bytes, size_t *size, sl_err *err) {
    return sl__loader_save(((reader *)state)->loader, bytes, size, err);
}

static sl_status reader_restore(void *state, const void *bytes, size_t size, sl_err *err) {
    reader *r = state;
    sl_status st = sl__loader_restore(r->loader, bytes, size, err);
    return st ? sl_err_prefix(err, "%s: %s: ", r->opname, r->path0) : SL_OK;
}

static sl_status need_vals(reader *r, int64_t n, sl_err *err) {
    if (n <= r->vals_cap) return SL_OK;
    double *v = realloc(r->vals, (size_t)n * sizeof *v);
    if (!v) return sl_err_set(err, SL_ENOMEM, "out of memory (%lld label values)", (long long)n);
    r->vals = v;
    r->vals_cap = n;
    return SL_OK;
}

static sl_status open_lmdb(reader *r, const sl__args *a, sl_err *err) {
    const char *const *paths;
    int np = sl__args_strs(a, "path", &paths);
    if (np < 1) return sl_err_set(err, SL_EINVAL, "%s: path is required", r->opname);
    r->path0 = strdup(paths[0]);
    sl_status st = sl__lmdb_open(np, paths, &r->db, err);
    if (st) return sl_err_prefix(err, "%s: ", r->opname);
    r->n = sl__lmdb_count(r->db);
    if (r->n == 0)
        return sl_err_set(err, SL_EINVAL, "%s: %s: the LMDB holds no records", r->opname, r->path0);
    return SL_OK;
}

/* ---- readers.caffe2 ---------------------------------------------------------------------------
 */

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
    LOADER_ARGS("accepted; no effect (the LMDB is mapped: records are read when touched)",
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
    reader *r = sl__calloc(1, sizeof *r, err);
    if (!r) return SL_ENOMEM;
    r->fmt = FMT_CAFFE2;
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
    if (!st) st = open_lmdb(r, a, err);
    if (!st) st = reader_start(r, a, init, err);
    if (!st) {
        r->c2 = sl__malloc((size_t)r->batch_size * sizeof *r->c2, err);
        r->nlab = sl__malloc((size_t)r->batch_size * sizeof *r->nlab, err);
        r->lab0 = sl__malloc((size_t)r->batch_size * sizeof *r->lab0, err);
        if (!r->c2 || !r->nlab || !r->lab0) st = SL_ENOMEM;
    }
    if (st) {
        reader_free(r);
        return st;
    }
    *state = r;
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
static sl_status c2_numeric(reader *r, sl__op_io *io, int o, int pi, const char *what,
                            sl_err *err) {
    sl_tlist *out = io->out[o];
    sl_dtype t = SL_DTYPE_COUNT;
    int64_t *shapes = sl__malloc((size_t)(io->batch > 0 ? io->batch : 1) * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0; i < io->batch && !st; i++) {
        const sl__caffe2_record *c = &r->c2[i];
        if (pi >= c->n) {
            st = rec_fail(r, i, SL_EFORMAT, err, "%s: no proto %d (the record has %d)", what, pi,
                          c->n);
            break;
        }
        sl_dtype ti = c2_dtype(c->t[pi].data_type);
        if (ti == SL_DTYPE_COUNT) {
            st = rec_fail(r, i, SL_EFORMAT, err,
                          "%s has data type %d (FLOAT, INT32 or INT64 wanted)", what,
                          c->t[pi].data_type);
            break;
        }
        if (i > 0 && ti != t) {
            st = rec_fail(r, i, SL_EFORMAT, err, "%s is %s, earlier records of the batch have %s",
                          what, sl_dtype_name(ti), sl_dtype_name(t));
            break;
        }
        t = ti;
        shapes[i] = sl__caffe2_values(&c->t[pi], NULL, 0);
        if (shapes[i] < 0) st = rec_fail(r, i, SL_EFORMAT, err, "%s values are malformed", what);
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

static sl_status c2_labels(reader *r, sl__op_io *io, int o, int li, sl_err *err) {
    sl_tlist *out = io->out[o];
    sl_dtype t = SL_DTYPE_COUNT;
    int lt = r->label_type;
    int64_t *shapes = sl__malloc((size_t)(io->batch > 0 ? io->batch : 1) * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0; i < io->batch && !st; i++) {
        const sl__caffe2_record *c = &r->c2[i];
        if (li >= c->n) {
            st = rec_fail(r, i, SL_EFORMAT, err, "no label proto (the record has %d protos)", c->n);
            break;
        }
        int dt = c->t[li].data_type;
        sl_dtype ti = dt == SL_C2_FLOAT   ? SL_DTYPE_F32
                      : dt == SL_C2_INT32 ? SL_DTYPE_I32
                                          : SL_DTYPE_COUNT;
        if (ti == SL_DTYPE_COUNT) {
            st = rec_fail(r, i, SL_EFORMAT, err,
                          "unsupported label data type %d (INT32 or FLOAT wanted)", dt);
            break;
        }
        if (lt == SL_C2_MULTI_LABEL_WEIGHTED_SPARSE) ti = SL_DTYPE_F32;
        if (i > 0 && ti != t) {
            st =
                rec_fail(r, i, SL_EFORMAT, err, "label is %s, earlier records of the batch have %s",
                         sl_dtype_name(ti), sl_dtype_name(t));
            break;
        }
        t = ti;
        /* one pass over the label proto: its value count, and its first value (all of a
         * SINGLE_LABEL record's) */
        int64_t n = r->nlab[i] = sl__caffe2_values(&c->t[li], &r->lab0[i], 1);
        if (n < 0) {
            st = rec_fail(r, i, SL_EFORMAT, err, "label values are malformed");
            break;
        }
        if (lt == SL_C2_SINGLE_LABEL && n != 1) {
            st = rec_fail(r, i, SL_EFORMAT, err, "label has %lld values, SINGLE_LABEL wants 1",
                          (long long)n);
            break;
        }
        if (lt == SL_C2_MULTI_LABEL_WEIGHTED_SPARSE) {
            if (li + 1 >= c->n) {
                st = rec_fail(r, i, SL_EFORMAT, err, "no weights proto after the label");
                break;
            }
            int64_t nw = sl__caffe2_values(&c->t[li + 1], NULL, 0);
            if (c->t[li + 1].data_type != SL_C2_FLOAT || nw != n) {
                st = rec_fail(r, i, SL_EFORMAT, err,
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
                st = rec_fail(r, i, SL_EFORMAT, err, "label index %g is outside [0, num_labels=%d)",
                              idx, r->num_labels);
                break;
            }
            store_val(t, out->data[i], (int64_t)idx,
                      lt == SL_C2_MULTI_LABEL_WEIGHTED_SPARSE ? r->vals[n + k] : 1.0);
        }
    }
    free(shapes);
    return st;
}

static sl_status caffe2_image(reader *r, sl__op_io *io, sl_err *err) {
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
        if (c->n < 1) return rec_fail(r, i, SL_EFORMAT, err, "record holds no protos");
        int dt = c->t[0].data_type;
        if (dt != SL_C2_STRING && dt != SL_C2_BYTE)
            return rec_fail(r, i, SL_EFORMAT, err,
                            "image proto has data type %d (STRING or BYTE wanted)", dt);
        if (kind >= 0 && dt != kind)
            return rec_fail(
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
            if (!t->str0) return rec_fail(r, i, SL_EFORMAT, err, "image proto has no string_data");
            int64_t len = (int64_t)t->nstr0;
            sl_tlist_set_external(out, i, (void *)t->str0, &len);
        } else {
            int64_t d[3] = {0, 0, 1};
            int nd = sl__caffe2_dims(t, d, 3);
            if (nd != 2 && nd != 3)
                return rec_fail(r, i, SL_EFORMAT, err, "BYTE image has %d dims (2 or 3 wanted)",
                                nd);
            if (nd == 2) d[2] = 1;
            /* dims are varints up to 2^64 - 1: their product is checked, so that dims that wrap
               cannot match a short (or empty) byte_data */
            size_t need = 0;
            if (sl__size_shape(d, 3, 1, &need, NULL) != SL__SIZE_OK)
                return rec_fail(r, i, SL_EFORMAT, err,
                                "BYTE image of %lldx%lldx%lld has a negative extent or more "
                                "than %zu bytes, byte_data has %zu",
                                (long long)d[0], (long long)d[1], (long long)d[2], SL__SIZE_LIMIT,
                                t->nbytes);
            if (!t->bytes || need != t->nbytes)
                return rec_fail(r, i, SL_EFORMAT, err,
                                "BYTE image of %lldx%lldx%lld needs %zu bytes, byte_data has %zu",
                                (long long)d[0], (long long)d[1], (long long)d[2], need, t->nbytes);
            sl_tlist_set_external(out, i, (void *)t->bytes, d);
        }
    }
    return SL_OK;
}

static sl_status caffe2_setup(void *state, sl__op_io *io, sl_err *err) {
    reader *r = state;
    SL_TRY(reader_next(r, io, err));
    for (int i = 0; i < io->batch; i++) {
        const uint8_t *v;
        size_t n;
        sl__lmdb_value(r->db, r->recs[i], &v, &n);
        sl_status st = sl__caffe2_parse(v, n, &r->c2[i], err);
        if (st)
            return sl_err_prefix(err, "%s: %s at key %s: ", r->opname, rec_path(r, r->recs[i]),
                                 r->keys[i]);
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
                st = rec_fail(r, i, SL_EFORMAT, err, "bbox proto must be INT32 with 4 values");
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

/* out becomes batch int32 (1,) labels, packed in its own buffer. */
static sl_status label_list(sl_tlist *out, int batch, sl_err *err) {
    SL_TRY(sl_tlist_reset(out, batch, SL_DTYPE_I32, 1, sl_cpu(), err));
    int64_t *shapes = sl__malloc((size_t)(batch > 0 ? batch : 1) * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    for (int i = 0; i < batch; i++) shapes[i] = 1;
    sl_status st = sl_tlist_alloc(out, shapes, err);
    free(shapes);
    return st;
}

static const sl__op_def caffe2_op = {
    .name = "readers.caffe2",
    .doc = "Reads Caffe2 TensorProtos records from LMDB: encoded image bytes (uint8 1-D, views "
           "into the map) or raw images (H, W, C), labels, additional inputs, bounding boxes.",
    .args = caffe2_args,
    .devices = SL_OPDEV_CPU,
    .flags = SL_OPF_READER | SL_OPF_RANDOM,
    .num_outputs = caffe2_outputs,
    .create = caffe2_create,
    .setup = caffe2_setup,
    .destroy = reader_free,
    .reader_meta = reader_meta,
    .save = reader_save,
    .restore = reader_restore,
};

/* ---- readers.caffe ----------------------------------------------------------------------------
 */

static const sl__arg_schema caffe_args[] = {
    {"path", SL_ARG_STRS, NULL, "LMDB folder(s); several are read as one data set, in order",
     SL_ARGF_REQUIRED, NULL},
    {"image_available", SL_ARG_BOOL, "True", "records hold an image (output 0)", 0, NULL},
    {"label_available", SL_ARG_BOOL, "True", "records hold a label", 0, NULL},
    LOADER_ARGS("accepted; no effect (the LMDB is mapped: records are read when touched)",
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
    reader *r = sl__calloc(1, sizeof *r, err);
    if (!r) return SL_ENOMEM;
    r->fmt = FMT_CAFFE;
    r->opname = "readers.caffe";
    r->image_available = sl__args_bool(a, "image_available");
    r->label_available = sl__args_bool(a, "label_available");
    sl_status st = SL_OK;
    if (!r->image_available && !r->label_available)
        st = sl_err_set(err, SL_EINVAL,
                        "readers.caffe: image_available and label_available are "
                        "both False: nothing to output");
    if (!st) st = open_lmdb(r, a, err);
    if (!st) st = reader_start(r, a, init, err);
    if (!st) {
        r->cd = sl__malloc((size_t)r->batch_size * sizeof *r->cd, err);
        if (!r->cd) st = SL_ENOMEM;
    }
    if (st) {
        reader_free(r);
        return st;
    }
    *state = r;
    return SL_OK;
}

static sl_status caffe_setup(void *state, sl__op_io *io, sl_err *err) {
    reader *r = state;
    SL_TRY(reader_next(r, io, err));
    int enc = -1;
    for (int i = 0; i < io->batch; i++) {
        const uint8_t *v;
        size_t n;
        sl__lmdb_value(r->db, r->recs[i], &v, &n);
        sl__caffe_datum *d = &r->cd[i];
        if (sl__caffe_parse(v, n, d, err))
            return sl_err_prefix(err, "%s: %s at key %s: ", r->opname, rec_path(r, r->recs[i]),
                                 r->keys[i]);
        if (r->image_available) {
            if (!d->has_data) return rec_fail(r, i, SL_EFORMAT, err, "Datum has no data");
            int e = sl__caffe_is_encoded(d);
            if (enc >= 0 && e != enc)
                return rec_fail(r, i, SL_EFORMAT, err,
                                "image is %s, earlier records of the batch are %s",
                                e ? "encoded" : "raw", enc ? "encoded" : "raw");
            enc = e;
            if (!e) { /* the product is checked: extents that wrap cannot match short data */
                int64_t s[3] = {d->height, d->width, d->channels};
                size_t need = 0;
                sl__size_result sr = sl__size_shape(s, 3, 1, &need, NULL);
                if (sr != SL__SIZE_OK || need != d->ndata)
                    return rec_fail(r, i, SL_EFORMAT, err,
                                    "raw image of %dx%dx%d does not match its %zu data bytes%s",
                                    d->height, d->width, d->channels, d->ndata,
                                    sr == SL__SIZE_NEGATIVE   ? " (a negative extent)"
                                    : sr == SL__SIZE_OVERFLOW ? " (its size overflows)"
                                                              : "");
            }
        }
        if (r->label_available && !d->has_label)
            return rec_fail(r, i, SL_EFORMAT, err, "Datum has no label");
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
        SL_TRY(label_list(out, io->batch, err));
        for (int i = 0; i < io->batch; i++) *(int32_t *)out->data[i] = r->cd[i].label;
    }
    return SL_OK;
}

static const sl__op_def caffe_op = {
    .name = "readers.caffe",
    .doc = "Reads Caffe Datum records from LMDB: encoded image bytes (uint8 1-D, views into the "
           "map) or raw images (H, W, C), and int32 labels (1,).",
    .args = caffe_args,
    .devices = SL_OPDEV_CPU,
    .flags = SL_OPF_READER | SL_OPF_RANDOM,
    .num_outputs = caffe_outputs,
    .create = caffe_create,
    .setup = caffe_setup,
    .destroy = reader_free,
    .reader_meta = reader_meta,
    .save = reader_save,
    .restore = reader_restore,
};

/* ---- readers.mnist (IDX; a sluice extension) --------------------------------------------------
 */

static const sl__arg_schema mnist_args[] = {
    {"path", SL_ARG_STR, NULL, "IDX images file (plain or .gz), e.g. train-images-idx3-ubyte.gz",
     SL_ARGF_REQUIRED, NULL},
    {"labels", SL_ARG_STR, NULL, "IDX labels file; without it only images are output", 0, NULL},
    LOADER_ARGS("accepted; no effect (the IDX files are read whole into memory at creation)",
                "accepted; no effect (the IDX files are read into memory, never mapped)",
                "accepted; no effect (images are views into the loaded file)"),
    {NULL, 0, NULL, NULL, 0, NULL},
};

static int mnist_outputs(const sl__args *a) {
    return sl__args_str(a, "labels") ? 2 : 1;
}

static sl_status mnist_create(const sl__args *a, const sl__op_init *init, void **state,
                              sl_err *err) {
    reader *r = sl__calloc(1, sizeof *r, err);
    if (!r) return SL_ENOMEM;
    r->fmt = FMT_MNIST;
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
        st = reader_start(r, a, init, err);
    }
    if (st) {
        reader_free(r);
        return st;
    }
    *state = r;
    return SL_OK;
}

static sl_status mnist_setup(void *state, sl__op_io *io, sl_err *err) {
    reader *r = state;
    SL_TRY(reader_next(r, io, err));
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
        SL_TRY(label_list(out, io->batch, err));
        for (int i = 0; i < io->batch; i++) {
            size_t n;
            *(int32_t *)out->data[i] = *sl__idx_item(r->lab, r->recs[i], &n);
        }
    }
    return SL_OK;
}

static const sl__op_def mnist_op = {
    .name = "readers.mnist",
    .doc = "sluice extension: reads IDX files (MNIST / Fashion-MNIST, plain or gzip): raw images "
           "(H, W, 1) uint8 and int32 labels (1,); the key of a record is its index.",
    .args = mnist_args,
    .devices = SL_OPDEV_CPU,
    .flags = SL_OPF_READER | SL_OPF_RANDOM,
    .num_outputs = mnist_outputs,
    .create = mnist_create,
    .setup = mnist_setup,
    .destroy = reader_free,
    .reader_meta = reader_meta,
    .save = reader_save,
    .restore = reader_restore,
};

/* ---- readers.file -----------------------------------------------------------------------------
 */

/* readers.file's and readers.numpy's common start: the files from file_root / file_list / files
 * (with labels for readers.file, with file_filter for readers.numpy), shuffled once when
 * random_shuffle is set (as DALI's file loaders), then the loader over them. */
static sl_status folder_start(reader *r, const sl__args *a, const sl__op_init *init, sl_err *err) {
    const char *root = sl__args_str(a, "file_root"), *list = sl__args_str(a, "file_list");
    const char *const *files;
    int nf = sl__args_strs(a, "files", &files);
    if (list && nf > 0)
        return sl_err_set(err, SL_EINVAL, "%s: give file_list or files, not both", r->opname);
    if (!root && !list && nf == 0)
        return sl_err_set(err, SL_EINVAL, "%s: give file_root, file_list or files", r->opname);
    /* arguments that the source given does not read would be ignored */
    if (r->fmt == FMT_FILE && sl__args_given(a, "labels") && nf == 0)
        return sl_err_set(err, SL_EINVAL, "%s: labels go with files=[...]; %s", r->opname,
                          list ? "file_list's lines carry their own labels"
                               : "file_root's class sub-folders give the labels");
    if (r->fmt == FMT_NUMPY && sl__args_given(a, "file_filter") && (list || nf > 0))
        return sl_err_set(err, SL_EINVAL,
                          "%s: file_filter picks files under file_root; with %s it would be "
                          "ignored",
                          r->opname, list ? "file_list" : "files");
    r->path0 = strdup(list ? list : root ? root : files[0]);
    if (!r->path0) return sl_err_set(err, SL_ENOMEM, "out of memory");
    sl_status st;
    if (r->fmt == FMT_NUMPY) {
        st = sl__folder_open_files(root, list, nf, files, sl__args_str(a, "file_filter"),
                                   &r->folder, err);
    } else {
        const int64_t *labels;
        int nl = sl__args_ints(a, "labels", &labels);
        st = sl__folder_open(root, list, nf, files, nl, labels, &r->folder, err);
    }
    if (st) return sl_err_prefix(err, "%s: ", r->opname);
    if (sl__args_bool(a, "random_shuffle")) sl__folder_shuffle(r->folder, DALI_LOADER_SEED);
    r->n = sl__folder_count(r->folder);
    return reader_start(r, a, init, err);
}

typedef struct file_reader {
    reader r;       /* first: the common part */
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
    LOADER_ARGS("accepted; no effect (a batch's files are read, in parallel, as it is prepared)",
                "accepted; no effect (files are read into the outputs, never mapped)",
                "accepted; no effect (outputs are sized per batch from the files' sizes)"),
    {NULL, 0, NULL, NULL, 0, NULL},
};

static void file_free(void *state) {
    file_reader *f = state;
    if (!f) return;
    free(f->sizes);
    reader_free(&f->r);
}

static int file_outputs(const sl__args *a) {
    (void)a;
    return 2;
}

static sl_status file_create(const sl__args *a, const sl__op_init *init, void **state,
                             sl_err *err) {
    file_reader *f = sl__calloc(1, sizeof *f, err);
    if (!f) return SL_ENOMEM;
    reader *r = &f->r;
    r->fmt = FMT_FILE;
    r->opname = "readers.file";
    sl_status st = folder_start(r, a, init, err);
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
    reader *r = &f->r;
    SL_TRY(reader_next(r, io, err));
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
    SL_TRY(label_list(lab, io->batch, err));
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

static const sl__op_def file_op = {
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
    .reader_meta = reader_meta,
    .save = reader_save,
    .restore = reader_restore,
};

/* ---- readers.numpy ----------------------------------------------------------------------------
 */

typedef struct numpy_reader {
    reader r;            /* first: the common part */
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
    LOADER_ARGS("accepted; no effect (a batch's files are read, in parallel, as it is prepared)",
                "accepted; no effect (arrays are read into the outputs, never mapped)",
                "accepted; no effect (outputs are sized per batch from the .npy headers)"),
    {NULL, 0, NULL, NULL, 0, NULL},
};

static void numpy_free(void *state) {
    numpy_reader *f = state;
    if (!f) return;
    free(f->hdr);
    free(f->shapes);
    reader_free(&f->r);
}

static sl_status numpy_create(const sl__args *a, const sl__op_init *init, void **state,
                              sl_err *err) {
    numpy_reader *f = sl__calloc(1, sizeof *f, err);
    if (!f) return SL_ENOMEM;
    reader *r = &f->r;
    r->fmt = FMT_NUMPY;
    r->opname = "readers.numpy";
    f->want = sl__args_given(a, "dtype") ? (int)sl__args_dtype(a, "dtype") : -1;
    sl_status st = folder_start(r, a, init, err);
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
    reader *r = &f->r;
    char p[8192];
    sl__folder_path(r->folder, r->recs[i], p, sizeof p);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return rec_fail(r, i, SL_EIO, err, "%s: %s", p, strerror(errno));
    struct stat sb;
    sl_status st = fstat(fd, &sb) == 0 ? SL_OK : sl_err_set(err, SL_EIO, "%s", strerror(errno));
    if (st == SL_OK && !S_ISREG(sb.st_mode)) st = sl_err_set(err, SL_EIO, "not a regular file");
    if (st == SL_OK) st = sl__npy_read_header(fd, (size_t)sb.st_size, &f->hdr[i], err);
    close(fd);
    if (st != SL_OK) {
        char msg[SL_ERRMSG_MAX];
        snprintf(msg, sizeof msg, "%s", err->msg);
        return rec_fail(r, i, st, err, "%s", msg);
    }
    return SL_OK;
}

/* Reads every file's header (the batch's shapes: one data type and dimension count for all of
 * them, as a batch holds) and sizes the output; run_cpu reads the arrays into place. */
static sl_status numpy_setup(void *state, sl__op_io *io, sl_err *err) {
    numpy_reader *f = state;
    reader *r = &f->r;
    SL_TRY(reader_next(r, io, err));
    for (int i = 0; i < io->batch; i++) {
        SL_TRY(numpy_header(f, i, err));
        const sl__npy_header *h = &f->hdr[i], *h0 = &f->hdr[0];
        if (f->want >= 0 && (int)h->dtype != f->want)
            return rec_fail(r, i, SL_EINVAL, err, "holds %s, but dtype=%s", sl_dtype_name(h->dtype),
                            sl_dtype_name((sl_dtype)f->want));
        if (i > 0 && (h->dtype != h0->dtype || h->ndim != h0->ndim))
            return rec_fail(r, i, SL_EINVAL, err,
                            "holds %s with %d dimensions, but the batch's first file (%s) holds "
                            "%s with %d: a batch has one data type and dimension count",
                            sl_dtype_name(h->dtype), h->ndim, r->keys[0], sl_dtype_name(h0->dtype),
                            h0->ndim);
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
    reader *r = &f->r;
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
    if (fd < 0) st = rec_fail(r, i, SL_EIO, err, "%s: %s", p, strerror(errno));
    for (size_t n = 0; st == SL_OK && n < h->nbytes;) {
        ssize_t got = pread(fd, buf + n, h->nbytes - n, (off_t)(h->data_offset + n));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0)
            st = rec_fail(r, i, SL_EIO, err, "%s: %s", p,
                          got < 0 ? strerror(errno) : "the file shrank while being read");
        else
            n += (size_t)got;
    }
    if (fd >= 0) close(fd);
    if (st == SL_OK && buf != dst) sl__npy_fortran_to_c(h, buf, dst);
    if (buf != dst) free(buf);
    return st;
}

static const sl__op_def numpy_op = {
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
    .reader_meta = reader_meta,
    .save = reader_save,
    .restore = reader_restore,
};

/* ---- readers.webdataset -----------------------------------------------------------------------
 */

typedef struct wds_reader {
    reader r; /* first: the common part */
    int nout;
    char **ext; /* per output: extensions separated by ';' */
    bool case_sensitive;
} wds_reader;

static const sl__arg_schema wds_args[] = {
    {"paths", SL_ARG_STRS, NULL, "the tar files (WebDataset shards)", SL_ARGF_REQUIRED, NULL},
    {"ext", SL_ARG_STRS, NULL,
     "per output, the member extension it takes (\"jpg\"; several as \"jpg;png\": the first found)",
     SL_ARGF_REQUIRED, NULL},
    {"missing_component_behavior", SL_ARG_STR, "\"\"",
     "a sample without an output's extension: \"empty\" (the default: a 0-byte output), \"skip\" "
     "(drop the sample), \"error\"",
     0, NULL},
    {"case_sensitive_extensions", SL_ARG_BOOL, "True", "match extensions with their case", 0, NULL},
    {"index_paths", SL_ARG_STRS, "[]", "accepted; no effect (the tar files are indexed at open)", 0,
     NULL},
    LOADER_ARGS("accepted; no effect (the tar files are mapped: members are read when touched)",
                "accepted; no effect (the tar files are always mapped)",
                "accepted; no effect (outputs are views into the mapped tar files)"),
    {NULL, 0, NULL, NULL, 0, NULL},
};

static int wds_outputs(const sl__args *a) {
    const char *const *e;
    return sl__args_strs(a, "ext", &e);
}

static void wds_free(void *state) {
    wds_reader *f = state;
    if (!f) return;
    for (int o = 0; f->ext && o < f->nout; o++) free(f->ext[o]);
    free(f->ext);
    reader_free(&f->r);
}

/* whether sample i has a member for every output */
static bool wds_complete(const sl__wds *w, int64_t i, void *user) {
    const wds_reader *f = user;
    const uint8_t *d;
    size_t n;
    for (int o = 0; o < f->nout; o++)
        if (!sl__wds_find(w, i, f->ext[o], f->case_sensitive, &d, &n)) return false;
    return true;
}

static sl_status wds_create(const sl__args *a, const sl__op_init *init, void **state, sl_err *err) {
    wds_reader *f = sl__calloc(1, sizeof *f, err);
    if (!f) return SL_ENOMEM;
    reader *r = &f->r;
    r->fmt = FMT_WDS;
    r->opname = "readers.webdataset";
    const char *const *paths, *const *ext;
    int np = sl__args_strs(a, "paths", &paths);
    f->nout = sl__args_strs(a, "ext", &ext);
    f->case_sensitive = sl__args_bool(a, "case_sensitive_extensions");
    const char *miss = sl__args_str(a, "missing_component_behavior");
    sl_status st = SL_OK;
    if (!miss || !*miss) miss = "empty";
    if (strcmp(miss, "empty") && strcmp(miss, "skip") && strcmp(miss, "error"))
        st = sl_err_set(err, SL_EINVAL,
                        "readers.webdataset: missing_component_behavior \"%s\" (empty, skip or "
                        "error)",
                        miss);
    if (!st && (np < 1 || f->nout < 1))
        st = sl_err_set(err, SL_EINVAL, "readers.webdataset: give paths and ext");
    if (!st) {
        f->ext = sl__calloc((size_t)f->nout, sizeof *f->ext, err);
        if (!f->ext) st = SL_ENOMEM;
        for (int o = 0; o < f->nout && !st; o++)
            if (!ext[o][0] || !(f->ext[o] = strdup(ext[o])))
                st = sl_err_set(err, SL_EINVAL, "readers.webdataset: ext %d is empty", o);
    }
    if (!st) {
        r->path0 = strdup(paths[0]);
        st = sl__wds_open(np, paths, &r->wds, err);
        if (st) st = sl_err_prefix(err, "readers.webdataset: ");
    }
    if (!st && !strcmp(miss, "skip")) {
        sl__wds_filter(r->wds, wds_complete, f);
        if (sl__wds_count(r->wds) == 0)
            st = sl_err_set(err, SL_EINVAL,
                            "readers.webdataset: %s: no sample has every output's extension "
                            "(missing_component_behavior=\"skip\")",
                            r->path0);
    }
    for (int64_t i = 0; !st && !strcmp(miss, "error") && i < sl__wds_count(r->wds); i++)
        if (!wds_complete(r->wds, i, f)) {
            const uint8_t *d;
            size_t n;
            int o = 0;
            while (sl__wds_find(r->wds, i, f->ext[o], f->case_sensitive, &d, &n)) o++;
            st = sl_err_set(err, SL_EFORMAT,
                            "readers.webdataset: %s at key %s: no member with extension %s "
                            "(missing_component_behavior=\"error\")",
                            sl__wds_path(r->wds, i), sl__wds_key(r->wds, i), f->ext[o]);
        }
    if (!st) {
        r->n = sl__wds_count(r->wds);
        st = reader_start(r, a, init, err);
    }
    if (st) {
        wds_free(f);
        return st;
    }
    *state = f;
    return SL_OK;
}

/* Each output sample is a view of its member's bytes in the mapped tar (0 bytes when missing). */
static sl_status wds_setup(void *state, sl__op_io *io, sl_err *err) {
    wds_reader *f = state;
    reader *r = &f->r;
    SL_TRY(reader_next(r, io, err));
    for (int o = 0; o < f->nout; o++) {
        sl_tlist *out = io->out[o];
        SL_TRY(sl_tlist_reset(out, io->batch, SL_DTYPE_U8, 1, sl_cpu(), err));
        out->layout[0] = 0;
        for (int i = 0; i < io->batch; i++) {
            static const uint8_t none[1]; /* a missing member: 0 bytes, at a valid address */
            const uint8_t *d = none;
            size_t n = 0;
            if (!sl__wds_find(r->wds, r->recs[i], f->ext[o], f->case_sensitive, &d, &n)) d = none;
            int64_t len = (int64_t)n;
            sl_tlist_set_external(out, i, (void *)d, &len);
        }
    }
    return SL_OK;
}

static const sl__op_def wds_op = {
    .name = "readers.webdataset",
    .doc = "Reads WebDataset tar shards: per output, the bytes of each sample's member with the "
           "output's extension (uint8 1-D views into the mapped tar); the key is the sample's.",
    .args = wds_args,
    .devices = SL_OPDEV_CPU,
    .flags = SL_OPF_READER | SL_OPF_RANDOM,
    .num_outputs = wds_outputs,
    .create = wds_create,
    .setup = wds_setup,
    .destroy = wds_free,
    .reader_meta = reader_meta,
    .save = reader_save,
    .restore = reader_restore,
};

/* ---- readers.tfrecord -------------------------------------------------------------------------
 */

/* One entry of `features`: [name, [kind, shape, dtype, default]] as the pipeline text's
 * tfrec.FixedLenFeature(shape, dtype, default) / tfrec.VarLenFeature([partial_shape,] dtype,
 * default) make it. */
typedef struct tf_feature {
    const char *name; /* = owned */
    char *owned;
    bool var;   /* VarLenFeature */
    int type;   /* SL_TFREC_STRING / INT64 / FLOAT32 */
    int nshape; /* FixedLen: the shape; VarLen: the partial shape (the dims after the first) */
    int64_t shape[SL_MAX_DIMS - 1];
    int64_t volume; /* of shape (FixedLen), of the partial shape (VarLen) */
    int64_t def_i;
    double def_f;
} tf_feature;

typedef struct tfrec_reader {
    reader r; /* first: the common part */
    int nf;
    tf_feature *f;
    const char **names;    /* per feature */
    sl__tfrec_value *vals; /* batch x nf */
    int64_t *shapes;       /* batch x SL_MAX_DIMS */
} tfrec_reader;

static const sl__arg_schema tfrec_args[] = {
    {"path", SL_ARG_STRS, NULL, "the TFRecord file(s), read as one data set in order",
     SL_ARGF_REQUIRED, NULL},
    {"index_path", SL_ARG_STRS, "[]",
     "DALI's index files, one per path (lines \"offset length\", as tfrecord2idx or `sluice "
     "index` write them); without them each file is scanned once at creation",
     0, NULL},
    {"features", SL_ARG_FEATURES, NULL,
     "dict of feature name -> tfrec.FixedLenFeature(shape, dtype, default) or "
     "tfrec.VarLenFeature([partial_shape,] dtype, default); one output per feature, in order",
     SL_ARGF_REQUIRED, NULL},
    {"use_o_direct", SL_ARG_BOOL, "False", "accepted; no effect (the files are mapped)", 0, NULL},
    LOADER_ARGS("accepted; no effect (the files are mapped: records are read when touched)",
                "accepted; no effect (the files are always mapped)",
                "accepted; no effect (bytes features are views into the mapped files, numbers "
                "are sized per batch)"),
    {NULL, 0, NULL, NULL, 0, NULL},
};

static int tfrec_outputs(const sl__args *a) {
    const sl__val *v = sl__args_get(a, "features");
    /* at least one, so that create runs and says what is wrong with an empty dict */
    return v && v->kind == SL_VAL_LIST && v->n > 1 ? v->n : 1;
}

static void tfrec_free(void *state) {
    tfrec_reader *t = state;
    if (!t) return;
    for (int k = 0; t->f && k < t->nf; k++) free(t->f[k].owned);
    free(t->f);
    free(t->names);
    free(t->vals);
    free(t->shapes);
    reader_free(&t->r);
}

static bool val_is(const sl__val *v, sl__val_kind k, const char *s) {
    return v->kind == k && (!s || (v->s && !strcmp(v->s, s)));
}

/* the dtype enum tfrec.string / int64 / float32 */
static int tf_type(const sl__val *v) {
    static const char *const names[] = {"string", "int64", "float32"};
    if (v->kind != SL_VAL_ENUM && v->kind != SL_VAL_STR) return -1;
    for (int k = 0; k < 3; k++)
        if (!strcmp(v->s, names[k])) return k;
    return -1;
}

/* features[k] into f (messages name the feature) */
static sl_status tf_feature_read(const sl__val *pair, tf_feature *f, sl_err *err) {
    static const char *const tnames[] = {"tfrec.string", "tfrec.int64", "tfrec.float32"};
    const char *name =
        pair->kind == SL_VAL_LIST && pair->n == 2 && pair->items[0].kind == SL_VAL_STR
            ? pair->items[0].s
            : NULL;
    if (!name || pair->items[1].kind != SL_VAL_LIST || pair->items[1].n < 1)
        return sl_err_set(err, SL_EINVAL,
                          "readers.tfrecord: features is a dict of name -> "
                          "tfrec.FixedLenFeature(...) or tfrec.VarLenFeature(...)");
    if (!(f->owned = strdup(name))) return sl_err_set(err, SL_ENOMEM, "out of memory");
    f->name = f->owned;
    const sl__val *spec = &pair->items[1], *kind = &spec->items[0];
    const sl__val *args = spec->items + 1;
    int na = spec->n - 1;
    f->var = val_is(kind, SL_VAL_ENUM, "VarLenFeature");
    if (!f->var && !val_is(kind, SL_VAL_ENUM, "FixedLenFeature"))
        return sl_err_set(err, SL_EINVAL,
                          "readers.tfrecord: feature '%s': not a tfrec.FixedLenFeature or "
                          "tfrec.VarLenFeature",
                          name);
    const sl__val *shape = NULL;
    if (!f->var && na == 3)
        shape = &args[0];
    else if (f->var && (na == 2 || na == 3))
        shape = na == 3 ? &args[0] : NULL;
    else
        return sl_err_set(
            err, SL_EINVAL, "readers.tfrecord: feature '%s': %s takes %s (got %d arguments)", name,
            f->var ? "tfrec.VarLenFeature" : "tfrec.FixedLenFeature",
            f->var ? "([partial_shape,] dtype, default_value)" : "(shape, dtype, default_value)",
            na);
    const sl__val *dt = &args[na - 2], *def = &args[na - 1];
    f->type = tf_type(dt);
    if (f->type < 0)
        return sl_err_set(err, SL_EINVAL,
                          "readers.tfrecord: feature '%s': dtype must be tfrec.string, tfrec.int64 "
                          "or tfrec.float32",
                          name);
    f->volume = 1;
    if (shape && shape->kind == SL_VAL_INT) { /* a scalar is a shape of one dimension */
        f->nshape = 1;
        f->shape[0] = shape->i;
    } else if (shape) {
        if (shape->kind != SL_VAL_LIST || shape->n > SL_MAX_DIMS - 1)
            return sl_err_set(err, SL_EINVAL,
                              "readers.tfrecord: feature '%s': the shape is a list of at most %d "
                              "sizes",
                              name, SL_MAX_DIMS - 1);
        f->nshape = shape->n;
        for (int d = 0; d < shape->n; d++) {
            if (shape->items[d].kind != SL_VAL_INT)
                return sl_err_set(err, SL_EINVAL,
                                  "readers.tfrecord: feature '%s': shape sizes are integers", name);
            f->shape[d] = shape->items[d].i;
        }
    }
    for (int d = 0; d < f->nshape; d++) {
        if (f->shape[d] < 1 || f->shape[d] > ((int64_t)1 << 40) / f->volume)
            return sl_err_set(err, SL_EINVAL,
                              "readers.tfrecord: feature '%s': shape size %lld out of range", name,
                              (long long)f->shape[d]);
        f->volume *= f->shape[d];
    }
    if (f->type == SL_TFREC_STRING && (f->var || f->volume > 1))
        return sl_err_set(err, SL_EINVAL,
                          "readers.tfrecord: feature '%s': tensors of strings are not supported "
                          "(as DALI): a tfrec.string feature is tfrec.FixedLenFeature([], "
                          "tfrec.string, \"\"), one byte string per record",
                          name);
    bool def_ok = f->type == SL_TFREC_STRING ? def->kind == SL_VAL_STR
                  : f->type == SL_TFREC_INT64
                      ? def->kind == SL_VAL_INT
                      : def->kind == SL_VAL_INT || def->kind == SL_VAL_FLOAT;
    if (!def_ok)
        return sl_err_set(err, SL_EINVAL,
                          "readers.tfrecord: feature '%s': default_value must be a %s for %s", name,
                          f->type == SL_TFREC_STRING ? "string" : "number", tnames[f->type]);
    f->def_i = def->i;
    f->def_f = def->kind == SL_VAL_FLOAT ? def->f : (double)def->i;
    return SL_OK;
}

static sl_status tfrec_create(const sl__args *a, const sl__op_init *init, void **state,
                              sl_err *err) {
    tfrec_reader *t = sl__calloc(1, sizeof *t, err);
    if (!t) return SL_ENOMEM;
    reader *r = &t->r;
    r->fmt = FMT_TFREC;
    r->opname = "readers.tfrecord";
    const char *const *paths, *const *idx;
    int np = sl__args_strs(a, "path", &paths);
    int ni = sl__args_strs(a, "index_path", &idx);
    const sl__val *fv = sl__args_get(a, "features");
    sl_status st = SL_OK;
    if (np < 1) st = sl_err_set(err, SL_EINVAL, "readers.tfrecord: path is required");
    if (!st && ni > 0 && ni != np)
        st = sl_err_set(err, SL_EINVAL,
                        "readers.tfrecord: %d index_path files for %d path files (one each)", ni,
                        np);
    if (!st && (!fv || fv->kind != SL_VAL_LIST || fv->n < 1))
        st = sl_err_set(err, SL_EINVAL, "readers.tfrecord: features names no feature");
    if (!st) {
        t->nf = fv->n;
        t->f = sl__calloc((size_t)t->nf, sizeof *t->f, err);
        t->names = sl__calloc((size_t)t->nf, sizeof *t->names, err);
        if (!t->f || !t->names) st = SL_ENOMEM;
    }
    for (int k = 0; k < t->nf && !st; k++) {
        st = tf_feature_read(&fv->items[k], &t->f[k], err);
        if (!st) t->names[k] = t->f[k].name;
        for (int j = 0; j < k && !st; j++)
            if (!strcmp(t->names[j], t->names[k]))
                st = sl_err_set(err, SL_EINVAL, "readers.tfrecord: feature '%s' given twice",
                                t->names[k]);
    }
    if (!st) {
        r->path0 = strdup(paths[0]);
        st = sl__tfrec_open(np, paths, ni ? idx : NULL, &r->tfrec, err);
        if (st) st = sl_err_prefix(err, "readers.tfrecord: ");
    }
    if (!st) {
        r->n = sl__tfrec_count(r->tfrec);
        st = reader_start(r, a, init, err);
    }
    if (!st) {
        t->vals = sl__calloc((size_t)r->batch_size * (size_t)t->nf, sizeof *t->vals, err);
        t->shapes = sl__calloc((size_t)r->batch_size * SL_MAX_DIMS, sizeof *t->shapes, err);
        if (!t->vals || !t->shapes) st = SL_ENOMEM;
    }
    if (st) {
        tfrec_free(t);
        return st;
    }
    *state = t;
    return SL_OK;
}

/* The shape of feature k of sample i (count: its number of values, -1 when absent) */
static sl_status tfrec_shape(tfrec_reader *t, int i, int k, int64_t count, int64_t *shape,
                             sl_err *err) {
    const tf_feature *f = &t->f[k];
    if (!f->var) { /* (shape), () as (1,); absent: (0, shape[1:]) as DALI's empty output */
        shape[0] = f->nshape ? f->shape[0] : 1;
        for (int d = 1; d < f->nshape; d++) shape[d] = f->shape[d];
        if (count < 0) shape[0] = 0;
        if (count > f->volume)
            return rec_fail(&t->r, i, SL_EFORMAT, err,
                            "feature '%s' has %lld values, more than its shape holds (%lld)",
                            f->name, (long long)count, (long long)f->volume);
        return SL_OK;
    }
    if (count < 0) count = 0;
    if (count % f->volume)
        return rec_fail(&t->r, i, SL_EFORMAT, err,
                        "feature '%s' has %lld values, not a multiple of its partial shape's %lld",
                        f->name, (long long)count, (long long)f->volume);
    shape[0] = count / f->volume;
    for (int d = 0; d < f->nshape; d++) shape[d + 1] = f->shape[d];
    return SL_OK;
}

static const int tf_list_kind[] = {SL_TFREC_BYTES_LIST, SL_TFREC_INT64_LIST, SL_TFREC_FLOAT_LIST};

/* Reads and checks the batch's records, finds their features (one pass over each Example), then
 * fills each output: bytes as views into the mapped file, numbers copied (with the default value
 * after the last one a fixed-length feature's record gives). */
static sl_status tfrec_setup(void *state, sl__op_io *io, sl_err *err) {
    tfrec_reader *t = state;
    reader *r = &t->r;
    SL_TRY(reader_next(r, io, err));
    for (int i = 0; i < io->batch; i++) {
        const uint8_t *data;
        uint64_t len;
        if (sl__tfrec_read(r->tfrec, r->recs[i], &data, &len, err))
            return sl_err_prefix(err, "readers.tfrecord: ");
        sl__tfrec_value *v = t->vals + (size_t)i * (size_t)t->nf;
        if (sl__tfrec_parse(data, (size_t)len, t->nf, t->names, v, err)) {
            char msg[SL_ERRMSG_MAX];
            snprintf(msg, sizeof msg, "%s", err->msg);
            return rec_fail(r, i, SL_EFORMAT, err, "%s (not a tf.train.Example)", msg);
        }
        for (int k = 0; k < t->nf; k++)
            if (v[k].kind != SL_TFREC_NONE && v[k].kind != tf_list_kind[t->f[k].type])
                return rec_fail(r, i, SL_EFORMAT, err,
                                "feature '%s' is a %s, but features asks for tfrec.%s",
                                t->f[k].name, sl__tfrec_kind_name(v[k].kind),
                                t->f[k].type == SL_TFREC_STRING  ? "string"
                                : t->f[k].type == SL_TFREC_INT64 ? "int64"
                                                                 : "float32");
    }
    for (int k = 0; k < t->nf; k++) {
        const tf_feature *f = &t->f[k];
        sl_tlist *out = io->out[k];
        if (f->type == SL_TFREC_STRING) {
            SL_TRY(sl_tlist_reset(out, io->batch, SL_DTYPE_U8, 1, sl_cpu(), err));
            out->layout[0] = 0;
            for (int i = 0; i < io->batch; i++) {
                static const uint8_t none[1];
                const sl__tfrec_value *v = &t->vals[(size_t)i * (size_t)t->nf + (size_t)k];
                const uint8_t *d = none;
                size_t n = 0;
                if (v->kind != SL_TFREC_NONE && sl__tfrec_bytes(v, &d, &n) < 0)
                    return rec_fail(r, i, SL_EFORMAT, err, "feature '%s': malformed bytes_list",
                                    f->name);
                if (!d) d = none;
                int64_t shape = (int64_t)n;
                sl_tlist_set_external(out, i, (void *)d, &shape);
            }
            continue;
        }
        int ndim = f->var ? 1 + f->nshape : (f->nshape ? f->nshape : 1);
        for (int i = 0; i < io->batch; i++) {
            const sl__tfrec_value *v = &t->vals[(size_t)i * (size_t)t->nf + (size_t)k];
            int64_t count = -1;
            if (v->kind != SL_TFREC_NONE) {
                count = f->type == SL_TFREC_INT64 ? sl__tfrec_int64s(v, NULL, 0)
                                                  : sl__tfrec_floats(v, NULL, 0);
                if (count < 0)
                    return rec_fail(r, i, SL_EFORMAT, err, "feature '%s': malformed %s", f->name,
                                    sl__tfrec_kind_name(v->kind));
            }
            SL_TRY(tfrec_shape(t, i, k, count, t->shapes + (size_t)i * (size_t)ndim, err));
        }
        SL_TRY(sl_tlist_reset(out, io->batch,
                              f->type == SL_TFREC_INT64 ? SL_DTYPE_I64 : SL_DTYPE_F32, ndim,
                              sl_cpu(), err));
        out->layout[0] = 0;
        SL_TRY(sl_tlist_alloc(out, t->shapes, err));
        for (int i = 0; i < io->batch; i++) {
            const sl__tfrec_value *v = &t->vals[(size_t)i * (size_t)t->nf + (size_t)k];
            int64_t n =
                (int64_t)(sl_tlist_sample_nbytes(out, i) / (f->type == SL_TFREC_INT64 ? 8 : 4));
            int64_t got = 0;
            if (v->kind != SL_TFREC_NONE)
                got = f->type == SL_TFREC_INT64 ? sl__tfrec_int64s(v, out->data[i], n)
                                                : sl__tfrec_floats(v, out->data[i], n);
            for (int64_t e = got; e < n; e++) { /* a short fixed-length feature */
                if (f->type == SL_TFREC_INT64)
                    ((int64_t *)out->data[i])[e] = f->def_i;
                else
                    ((float *)out->data[i])[e] = (float)f->def_f;
            }
        }
    }
    return SL_OK;
}

static const sl__op_def tfrec_op = {
    .name = "readers.tfrecord",
    .doc = "Reads TFRecord files of tf.train.Example records (framing and CRC-32Cs checked): one "
           "output per feature, in the order of features -- tfrec.string as uint8 1-D views into "
           "the mapped file, tfrec.int64 as int64, tfrec.float32 as float32; the key is the "
           "record's byte offset.",
    .args = tfrec_args,
    .devices = SL_OPDEV_CPU,
    .flags = SL_OPF_READER | SL_OPF_RANDOM,
    .num_outputs = tfrec_outputs,
    .create = tfrec_create,
    .setup = tfrec_setup,
    .destroy = tfrec_free,
    .reader_meta = reader_meta,
    .save = reader_save,
    .restore = reader_restore,
};

const sl__op_def *const sl__reader_ops[] = {&caffe_op, &caffe2_op, &file_op,  &mnist_op,
                                            &numpy_op, &wds_op,    &tfrec_op, NULL};
