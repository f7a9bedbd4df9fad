/* SPDX-License-Identifier: Apache-2.0 */
/* Data sets on disk, outside a pipeline: what a store holds (sl_dataset_inspect), writing the
 * stores the readers read (sl_dataset_writer: Caffe2 and Caffe LMDBs, TFRecord files), turning
 * IDX files and image folders into them (sl_dataset_convert), class names (labels.txt) and the
 * index files of TFRecords (sl_tfrecord_index) and WebDataset tar files (sl_wds_index). `sluice
 * inspect`, `convert`, `index` and `wds2idx` are these calls and a printout; docs/readers.md
 * describes the formats.
 *
 * Only a writer keeps its store open between calls; every error names the file (and the record key
 * or offset where one is at fault). */
#ifndef SLUICE_DATASET_H
#define SLUICE_DATASET_H

#include "sluice/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- what a store holds ---------------------------------------------------------------------- */

#define SL_DATASET_FIRST     5      /* records described one by one: the first ones */
#define SL_DATASET_FEATURES  64     /* TFRecord: features of the first Example described */
#define SL_DATASET_MAX_LABEL 100000 /* labels counted one by one: 0 .. SL_DATASET_MAX_LABEL-1 */

typedef struct sl_dataset_record {
    char key[128]; /* LMDB key, file name, sample key, record number or TFRecord offset */
    size_t bytes;  /* the image's encoded size (or the raw data's) */
    /* "jpeg", "png", ... (the image's header), "raw" (pixels), "npy", "value" (IDX labels),
     * "none" (no image in the record) or "unknown" (bytes that are no image format known) */
    const char *image;
    int height, width, channels; /* from the image's header or the raw data's shape; 0 unknown */
} sl_dataset_record;

typedef struct sl_dataset_feature {
    char name[128];
    const char *kind; /* "bytes_list", "int64_list" or "float_list" */
    long long values;
} sl_dataset_feature;

typedef struct sl_dataset_info {
    /* "caffe2", "caffe" (LMDBs; "lmdb" for one with no records), "idx", "folder", "webdataset",
     * "npy" or "tfrecord" */
    const char *format;
    long long records;
    /* label_counts[l]: the records of label l, for l < num_labels (the largest label seen + 1,
     * at most SL_DATASET_MAX_LABEL); larger or negative labels are counted in out_of_range */
    long long *label_counts;
    int num_labels;
    long long out_of_range, unlabelled;
    char **classes; /* class names by label (labels.txt beside data.mdb, or class sub-folders) */
    int num_classes;
    int num_first;
    sl_dataset_record first[SL_DATASET_FIRST];
    int num_features; /* TFRecord: the first Example's features */
    sl_dataset_feature features[SL_DATASET_FEATURES];
    /* SL_DATASET_VERIFY: the bytes of every record read, and their byte sum */
    long long bytes_read;
    uint64_t checksum;
} sl_dataset_info;

/* flags of sl_dataset_inspect */
#define SL_DATASET_VERIFY                                                                          \
    1 /* read every byte of every record (a damaged store's faults surface)                        \
       */

/* Describes the store at path -- an LMDB (a folder holding data.mdb, or a .mdb file), an IDX file
 * (plain or gzip), an image folder (a sub-folder per class), a WebDataset tar, a TFRecord file, a
 * NumPy .npy file or a folder of them: told apart by what the path holds -- into *out (free with
 * sl_dataset_info_free). Every record is walked and checked; SL_EFORMAT naming the path and what
 * was looked for when it is none of these, or naming the record at fault. */
sl_status sl_dataset_inspect(const char *path, int flags, sl_dataset_info **out, sl_err *err);
void sl_dataset_info_free(sl_dataset_info *info);

/* The class names in dir/labels.txt, one a line in label order (what sl_dataset_convert writes
 * for an image folder): *names malloc'd, each name and the array; free with
 * sl_dataset_free_classes. Returns their count; 0 (and *names NULL) without the file. */
int sl_dataset_read_classes(const char *dir, char ***names);
void sl_dataset_free_classes(char **names, int n);

/* ---- writing stores ------------------------------------------------------------------------- */

typedef enum sl_dataset_format {
    SL_DATASET_CAFFE2 = 0,  /* LMDB of Caffe2 TensorProtos: image (STRING, or BYTE with dims
                             * H,W,C when raw) and label (INT32), as readers.caffe2 reads */
    SL_DATASET_CAFFE = 1,   /* LMDB of Caffe Datum records (encoded, or raw pixels) */
    SL_DATASET_TFRECORD = 2 /* tf.train.Example records: image/encoded, image/class/label */
} sl_dataset_format;
/* Parses "caffe2", "caffe" or "tfrecord". */
sl_status sl_dataset_format_parse(const char *name, sl_dataset_format *out, sl_err *err);

typedef struct sl_dataset_writer sl_dataset_writer;

/* Starts the store at path: for an LMDB a folder (made if missing) holding no data.mdb yet;
 * for TFRecord the file (one already there is replaced when the new one is finished). The records
 * go into a temporary beside it (PATH.tmp-PID, or PATH/tmp-PID inside a folder that is there),
 * and the store appears at path only when sl_dataset_writer_close has finished it: after an
 * error, a discard or a crash there is no store at path. A write that fails for want of space
 * says "no space left on device". */
sl_status sl_dataset_writer_create(const char *path, sl_dataset_format format,
                                   sl_dataset_writer **out, sl_err *err);
/* Adds a record under key (the LMDB's key, at most 511 bytes, each greater in byte order than the
 * one before: LMDBs are written by appending; TFRecords keep no key): data is an
 * encoded image of size bytes, or with raw (LMDBs only) height x width x channels uint8 pixels,
 * HWC. height, width, channels describe an encoded image too (Caffe's Datum stores them; 0 when
 * unknown). */
sl_status sl_dataset_writer_add(sl_dataset_writer *w, const char *key, const void *data,
                                size_t size, bool raw, int height, int width, int channels,
                                int32_t label, sl_err *err);
/* Class names, one a line in label order, to be written with the store: PATH/labels.txt beside
 * an LMDB's data.mdb, PATH.labels.txt beside a TFRecord file (what sl_dataset_read_classes
 * reads). SL_EINVAL for a name with a line break. */
sl_status sl_dataset_writer_set_classes(sl_dataset_writer *w, const char *const *names, int n,
                                        sl_err *err);
/* Finishes the store -- commits the LMDB or closes the file, writes the class names, syncs them
 * to the disk and renames them to path -- and frees w; on an error nothing is left at path. err
 * may be NULL. NULL does nothing. */
sl_status sl_dataset_writer_close(sl_dataset_writer *w, sl_err *err);
/* Drops what w has written (after an error: path is left as it was) and frees w. NULL does
 * nothing. */
void sl_dataset_writer_discard(sl_dataset_writer *w);

/* ---- converting IDX files and image folders ------------------------------------------------- */

typedef enum sl_dataset_source {
    SL_DATASET_FROM_IDX = 0,   /* MNIST-style IDX images (uint8, N x H x W [x C]) and labels */
    SL_DATASET_FROM_FOLDER = 1 /* class sub-folders of image files, stored as they are */
} sl_dataset_source;

typedef struct sl_dataset_convert_options {
    sl_dataset_source from;
    const char *images, *labels; /* IDX files (plain or gzip) */
    const char *folder;          /* the image folder */
    sl_dataset_format to;
    const char *out; /* the LMDB folder or the TFRecord file */
    /* IDX images are JPEG-encoded at quality (1..100; 0 means 95), grayscale for one channel, or
     * stored as pixels with raw (LMDBs only) */
    int quality;
    bool raw;
    /* called every 1024 records and at the end, when not NULL */
    void (*progress)(long long done, long long total, void *user);
    void *user;
} sl_dataset_convert_options;

typedef struct sl_dataset_convert_result {
    long long records;
    int classes;            /* class names written (image folders) */
    char labels_path[4200]; /* where they went: OUT/labels.txt, or OUT.labels.txt for TFRecord */
} sl_dataset_convert_result;

/* Writes the store o->out from an IDX pair or an image folder. IDX records are keyed by their
 * input order, zero-padded (at least 8 digits); folder records by their path relative to the
 * folder ("class/file.jpg") and written in key order, each with its label, and the class names
 * go, one a line in label order, to the labels file (result->labels_path); a folder's file whose
 * header is no JPEG or PNG the decoders read is refused (SL_EFORMAT, naming it). The store appears
 * only when whole (see sl_dataset_writer_create). result may be NULL. */
sl_status sl_dataset_convert(const sl_dataset_convert_options *o, sl_dataset_convert_result *result,
                             sl_err *err);

/* ---- TFRecord index files ------------------------------------------------------------------- */

typedef struct sl_tfrecord_entry {
    uint64_t offset; /* of the record's frame in the file */
    int64_t size;    /* the whole frame: length, its CRC, the data and its CRC */
} sl_tfrecord_entry;

/* The index of the TFRecord file at path (DALI's tfrecord2idx: a line "offset size" per entry is
 * the index_path file readers.tfrecord takes), every record's framing and CRCs checked on the
 * way: *entries malloc'd (free()), *count of them; SL_EFORMAT naming the offset of the first bad
 * record. */
sl_status sl_tfrecord_index(const char *path, sl_tfrecord_entry **entries, int64_t *count,
                            sl_err *err);

/* ---- WebDataset index files ------------------------------------------------------------------ */

/* The index of the WebDataset tar file at path, as text in DALI's wds2idx format (version 1.2):
 * a line "v1.2 COUNT", then one line per sample (consecutive members of one key, as
 * readers.webdataset groups them), "ext offset size name" per member, separated by blanks, offset
 * being that of the member's data in the file -- the index_paths file readers.webdataset takes.
 * *text malloc'd (free()), *len bytes without its NUL, *samples lines after the first. A malformed
 * tar is an SL_EFORMAT naming the offset; a member name with a blank (which the format cannot
 * hold) an SL_EINVAL naming it. */
sl_status sl_wds_index(const char *path, char **text, size_t *len, int64_t *samples, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
