/* SPDX-License-Identifier: Apache-2.0 */
/* What the reader operators share (readers.caffe2, readers.caffe, readers.mnist, readers.file,
 * readers.numpy, readers.webdataset, readers.tfrecord, readers.mxnet, readers.nemo_asr: each in its
 * own reader_<name>.c, listed in ops_list.c). Each is a record store (LMDB, IDX file, file list,
 * tar shards, TFRecord files, RecordIO files, NeMo manifests) behind the one loader core
 * (io/loader.h) that decides, sample by sample, which record comes next. A reader's setup picks the
 * batch's records with sl__reader_next, which sets io->keys (owned here, valid until the next
 * setup), then fills the outputs. Every record error is SL_EFORMAT (SL_EIO for files) naming path
 * and key (sl__reader_fail). Here: the common state, the LoaderBase arguments every reader takes,
 * and the functions of reader.c. */
#ifndef SLUICE_OPS_READER_H
#define SLUICE_OPS_READER_H

#include "operator/op.h"

#include "io/caffe.h"
#include "io/caffe2.h"
#include "io/folder.h"
#include "io/idx.h"
#include "io/lmdb.h"
#include "io/loader.h"
#include "io/nemo.h"
#include "io/recordio.h"
#include "io/tfrecord.h"
#include "io/wds.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* LoaderBase arguments, shared by every reader (DALI's names and defaults). The I/O ones do
 * nothing here, for a reason that depends on how the reader gets at its store, so each reader
 * says why: RA, MM and IB are the docs of read_ahead, dont_use_mmap and tensor_init_bytes. */
#define SL__READER_ARGS(RA, MM, IB)                                                                \
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

/* The store behind a reader (sl__reader.fmt): what its records' paths and keys are. */
enum {
    SL__READER_CAFFE2,
    SL__READER_CAFFE,
    SL__READER_MNIST,
    SL__READER_FILE,
    SL__READER_NUMPY,
    SL__READER_WDS,
    SL__READER_TFREC,
    SL__READER_NEMO,
    SL__READER_MXNET,
    SL__READER_SEQUENCE
};

/* Every reader's state; readers with more embed it as their first member. */
typedef struct sl__reader {
    int fmt;
    const char *opname;
    char *path0; /* for messages about the whole store */
    sl__loader *loader;
    int64_t n;
    int batch_size;
    int64_t *recs; /* batch: record indices */
    char **keys;   /* batch: pointers into keybuf */
    char *keybuf;  /* batch * KEY_MAX (reader.c) */
    char **info;   /* batch: each record's source info (DALI's source_info), into infobuf */
    char *infobuf; /* batch * INFO_MAX (reader.c) */
    /* stores */
    sl__lmdb *db;
    sl__idx *img, *lab;
    sl__folder *folder;
    const int64_t
        *folder_rec; /* readers.sequence: a record's first file in folder (else the same) */
    sl__wds *wds;
    const char *wds_exts; /* the first output's extensions: its member gives the source info */
    bool wds_case;
    sl__tfrec *tfrec;
    sl__nemo *nemo;
    sl__recio *recio;
    /* caffe2 / caffe options */
    int label_type, num_labels, additional;
    bool bbox, image_available, label_available;
    sl__caffe2_record *c2; /* batch */
    int64_t *nlab;         /* batch: label values per record */
    double *lab0;          /* batch: each record's first label value */
    sl__caffe_datum *cd;   /* batch */
    double *vals;          /* scratch for label values */
    int64_t vals_cap;
} sl__reader;

/* The file (or store) that holds record rec. */
const char *sl__reader_path(const sl__reader *r, int64_t rec);
/* "readers.caffe2: /data/train at key 00000003: <what>" about sample i of the batch */
sl_status sl__reader_fail(const sl__reader *r, int i, sl_status st, sl_err *err, const char *fmt,
                          ...) SL_PRINTF(5, 6);

/* Closes every store and frees r (NULL does nothing): the destroy of readers without more state. */
void sl__reader_free(void *state);
/* Opens the loader over r->n records and the batch arrays. */
sl_status sl__reader_start(sl__reader *r, const sl__args *a, const sl__op_init *init, sl_err *err);
/* Picks the batch's records and their keys (io->keys). */
sl_status sl__reader_next(sl__reader *r, sl__op_io *io, sl_err *err);

/* The table entry's reader_meta, save and restore: the loader's. */
sl_status sl__reader_meta(void *state, sl_reader_meta *meta);
sl_status sl__reader_save(void *state, void **bytes, size_t *size, sl_err *err);
sl_status sl__reader_restore(void *state, const void *bytes, size_t size, sl_err *err);

/* readers.caffe2's and readers.caffe's store: the LMDB(s) of the path argument (r->db, r->n). */
sl_status sl__reader_open_lmdb(sl__reader *r, const sl__args *a, sl_err *err);
/* readers.file's and readers.numpy's start: their files, then sl__reader_start. */
sl_status sl__reader_folder_start(sl__reader *r, const sl__args *a, const sl__op_init *init,
                                  sl_err *err);
/* out becomes batch int32 (1,) labels, packed in its own buffer. */
sl_status sl__reader_label_list(sl_tlist *out, int batch, sl_err *err);

/* What every reader's table entry shares: CPU only, a reader drawing random numbers (its
 * shuffles), and the loader's meta, checkpoint and restore hooks (reader.c). */
#define SL__READER_OP_COMMON                                                                       \
    .devices = SL_OPDEV_CPU, .flags = SL_OPF_READER | SL_OPF_RANDOM,                               \
    .reader_meta = sl__reader_meta, .save = sl__reader_save, .restore = sl__reader_restore

#ifdef __cplusplus
}
#endif
#endif
