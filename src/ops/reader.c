/* SPDX-License-Identifier: Apache-2.0 */
/* The reader operators' common part (reader.h): the loader over a reader's records (shards,
 * shuffling, the pipeline's global order), the batch's records and their keys, messages that name a
 * record's path and key, the reader meta and checkpoint hooks of every reader's table entry, and
 * the stores two readers open alike (the LMDB of readers.caffe2 and readers.caffe, the files of
 * readers.file and readers.numpy). */
#include "ops/reader.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MAX          512
#define INFO_MAX         4096
#define DALI_LOADER_SEED 524287 /* kDaliDataloaderSeed: the shuffle_after_epoch default seed */

const char *sl__reader_path(const sl__reader *r, int64_t rec) {
    switch (r->fmt) {
    case SL__READER_CAFFE2:
    case SL__READER_CAFFE:
        return sl__lmdb_path(r->db, rec);
    case SL__READER_MNIST:
        return sl__idx_path(r->img);
    case SL__READER_WDS:
        return sl__wds_path(r->wds, rec);
    case SL__READER_TFREC:
        return sl__tfrec_path(r->tfrec, rec);
    case SL__READER_NEMO:
        return sl__nemo_manifest(r->nemo, rec);
    case SL__READER_MXNET:
        return sl__recio_path(r->recio, rec);
    default:
        return sl__folder_root(r->folder);
    }
}

/* The folder's file of record rec: itself, or a sequence's first frame (readers.sequence). */
static int64_t folder_rec(const sl__reader *r, int64_t rec) {
    return r->folder_rec ? r->folder_rec[rec] : rec;
}

/* A name as a key: escaped as LMDB keys are (bytes outside printable ASCII, and the backslash, as
 * \xHH), so that no key holds a newline or a tab and a trace keeps one line per sample. */
static const char *escaped(const char *name, char *buf, size_t n) {
    return sl__lmdb_escape(name, strlen(name), buf, n);
}

static const char *rec_key(const sl__reader *r, int64_t rec, char *buf, size_t n) {
    switch (r->fmt) {
    case SL__READER_CAFFE2:
    case SL__READER_CAFFE:
        return sl__lmdb_key(r->db, rec, buf, n);
    case SL__READER_MNIST:
        snprintf(buf, n, "%lld", (long long)rec);
        return buf;
    case SL__READER_WDS:
        return escaped(sl__wds_key(r->wds, rec), buf, n);
    case SL__READER_TFREC: /* the record's byte offset in its file */
        snprintf(buf, n, "%llu", (unsigned long long)sl__tfrec_offset(r->tfrec, rec));
        return buf;
    case SL__READER_MXNET: /* the record's key in the index */
        snprintf(buf, n, "%lld", (long long)sl__recio_key(r->recio, rec));
        return buf;
    case SL__READER_NEMO: /* the audio file as the manifest names it */
        return escaped(sl__nemo_get(r->nemo, rec)->name, buf, n);
    default:
        return escaped(sl__folder_name(r->folder, folder_rec(r, rec)), buf, n);
    }
}

/* Record rec's source info, as DALI's readers give it: a file's path (readers.file, numpy,
 * coco), "FILE at index OFFSET" (readers.tfrecord, readers.mxnet), the audio file as the manifest
 * names it (readers.nemo), "TAR:OFFSET:NAME" of the member a webdataset sample's first output takes
 * (DALI gives each output its own member's: sluice one per sample); "" where DALI gives none (the
 * LMDB and MNIST readers). */
static void rec_info(const sl__reader *r, int64_t rec, char *buf, size_t n) {
    switch (r->fmt) {
    case SL__READER_TFREC:
        snprintf(buf, n, "%s at index %llu", sl__tfrec_path(r->tfrec, rec),
                 (unsigned long long)sl__tfrec_offset(r->tfrec, rec));
        break;
    case SL__READER_NEMO:
        snprintf(buf, n, "%s", sl__nemo_get(r->nemo, rec)->name);
        break;
    case SL__READER_MXNET:
        snprintf(buf, n, "%s at index %llu", sl__recio_path(r->recio, rec),
                 (unsigned long long)sl__recio_offset(r->recio, rec));
        break;
    case SL__READER_FILE:
    case SL__READER_NUMPY:
    case SL__READER_SEQUENCE: /* its first frame's */
        sl__folder_path(r->folder, folder_rec(r, rec), buf, n);
        break;
    case SL__READER_WDS:
        sl__wds_source_info(r->wds, rec, r->wds_exts, r->wds_case, buf, n);
        break;
    default:
        buf[0] = '\0';
    }
}

/* "readers.caffe2: /data/train at key 00000003: <what>" */
sl_status sl__reader_fail(const sl__reader *r, int i, sl_status st, sl_err *err, const char *fmt,
                          ...) {
    char what[SL_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return sl_err_set(err, st, "%s: %s at %s %s: %s", r->opname, sl__reader_path(r, r->recs[i]),
                      r->fmt == SL__READER_TFREC ? "offset" : "key", r->keys[i], what);
}

void sl__reader_free(void *state) {
    sl__reader *r = state;
    if (!r) return;
    sl__loader_free(r->loader);
    sl__lmdb_close(r->db);
    sl__idx_close(r->img);
    sl__idx_close(r->lab);
    sl__folder_close(r->folder);
    sl__wds_close(r->wds);
    sl__tfrec_close(r->tfrec);
    sl__nemo_close(r->nemo);
    sl__recio_close(r->recio);
    free(r->path0);
    free(r->recs);
    free(r->keys);
    free(r->keybuf);
    free(r->info);
    free(r->infobuf);
    free(r->c2);
    free(r->nlab);
    free(r->lab0);
    free(r->cd);
    free(r->vals);
    free(r);
}

/* opens the loader over r->n records and the batch arrays */
sl_status sl__reader_start(sl__reader *r, const sl__args *a, const sl__op_init *init, sl_err *err) {
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
    if (c.shuffle_after_epoch && (r->fmt == SL__READER_FILE || r->fmt == SL__READER_NUMPY))
        c.stick_to_shard = true; /* as DALI */
    sl_status st = sl__loader_create(&c, &r->loader, err);
    if (st) return sl_err_prefix(err, "%s: %s: ", r->opname, r->path0);
    int b = init->batch_size > 0 ? init->batch_size : 1;
    r->batch_size = b;
    r->recs = sl__calloc((size_t)b, sizeof *r->recs, err);
    r->keys = sl__calloc((size_t)b, sizeof *r->keys, err);
    r->keybuf = sl__calloc((size_t)b, KEY_MAX, err);
    r->info = sl__calloc((size_t)b, sizeof *r->info, err);
    r->infobuf = sl__calloc((size_t)b, INFO_MAX, err);
    if (!r->recs || !r->keys || !r->keybuf || !r->info || !r->infobuf) return SL_ENOMEM;
    for (int i = 0; i < b; i++) r->keys[i] = r->keybuf + (size_t)i * KEY_MAX;
    for (int i = 0; i < b; i++) r->info[i] = r->infobuf + (size_t)i * INFO_MAX;
    return SL_OK;
}

/* picks the batch's records and their keys */
sl_status sl__reader_next(sl__reader *r, sl__op_io *io, sl_err *err) {
    if (io->batch > r->batch_size || io->batch < 0)
        return sl_err_set(err, SL_EINVAL, "%s: batch of %d samples, created for at most %d",
                          r->opname, io->batch, r->batch_size);
    for (int i = 0; i < io->batch; i++) r->recs[i] = sl__loader_next(r->loader, i == 0, NULL);
    if (r->db) { /* the batch's records lie all over the map: fetch them before reading any */
        sl__lmdb_prefetch(r->db, r->recs, io->batch, 0);
        sl__lmdb_prefetch(r->db, r->recs, io->batch, 1);
    }
    for (int i = 0; i < io->batch; i++) rec_key(r, r->recs[i], r->keys[i], KEY_MAX);
    for (int i = 0; i < io->batch; i++) rec_info(r, r->recs[i], r->info[i], INFO_MAX);
    io->keys = (const char *const *)r->keys;
    io->source_info = (const char *const *)r->info;
    return SL_OK;
}

sl_status sl__reader_meta(void *state, sl_reader_meta *meta) {
    sl__loader_meta(((sl__reader *)state)->loader, meta);
    return SL_OK;
}

sl_status sl__reader_save(void *state, void **bytes, size_t *size, sl_err *err) {
    return sl__loader_save(((sl__reader *)state)->loader, bytes, size, err);
}

sl_status sl__reader_restore(void *state, const void *bytes, size_t size, sl_err *err) {
    sl__reader *r = state;
    sl_status st = sl__loader_restore(r->loader, bytes, size, err);
    return st ? sl_err_prefix(err, "%s: %s: ", r->opname, r->path0) : SL_OK;
}

sl_status sl__reader_open_lmdb(sl__reader *r, const sl__args *a, sl_err *err) {
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

/* readers.file's and readers.numpy's common start: the files from file_root / file_list / files
 * (with labels for readers.file, with file_filter for readers.numpy), shuffled once when
 * random_shuffle is set (as DALI's file loaders), then the loader over them. */
sl_status sl__reader_folder_start(sl__reader *r, const sl__args *a, const sl__op_init *init,
                                  sl_err *err) {
    const char *root = sl__args_str(a, "file_root"), *list = sl__args_str(a, "file_list");
    const char *const *files;
    int nf = sl__args_strs(a, "files", &files);
    if (list && nf > 0)
        return sl_err_set(err, SL_EINVAL, "%s: give file_list or files, not both", r->opname);
    if (!root && !list && nf == 0)
        return sl_err_set(err, SL_EINVAL, "%s: give file_root, file_list or files", r->opname);
    /* arguments that the source given does not read would be ignored */
    if (r->fmt == SL__READER_FILE && sl__args_given(a, "labels") && nf == 0)
        return sl_err_set(err, SL_EINVAL, "%s: labels go with files=[...]; %s", r->opname,
                          list ? "file_list's lines carry their own labels"
                               : "file_root's class sub-folders give the labels");
    if (r->fmt == SL__READER_NUMPY && sl__args_given(a, "file_filter") && (list || nf > 0))
        return sl_err_set(err, SL_EINVAL,
                          "%s: file_filter picks files under file_root; with %s it would be "
                          "ignored",
                          r->opname, list ? "file_list" : "files");
    r->path0 = strdup(list ? list : root ? root : files[0]);
    if (!r->path0) return sl_err_set(err, SL_ENOMEM, "out of memory");
    sl_status st;
    if (r->fmt == SL__READER_NUMPY) {
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
    return sl__reader_start(r, a, init, err);
}

/* out becomes batch int32 (1,) labels, packed in its own buffer. */
sl_status sl__reader_label_list(sl_tlist *out, int batch, sl_err *err) {
    SL_TRY(sl_tlist_reset(out, batch, SL_DTYPE_I32, 1, sl_cpu(), err));
    int64_t *shapes = sl__malloc((size_t)(batch > 0 ? batch : 1) * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    for (int i = 0; i < batch; i++) shapes[i] = 1;
    sl_status st = sl_tlist_alloc(out, shapes, err);
    free(shapes);
    return st;
}
