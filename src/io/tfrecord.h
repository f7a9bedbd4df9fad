/* SPDX-License-Identifier: Apache-2.0 */
/* TFRecord files of tf.train.Example records, as DALI's readers.tfrecord reads them. A file is a
 * run of records, each framed as
 *     uint64 length (little-endian), uint32 masked CRC-32C of those 8 bytes,
 *     length bytes of data, uint32 masked CRC-32C of the data
 * (masked: ((crc >> 15) | (crc << 17)) + 0xa282ead8). An index (DALI's, from its tfrecord2idx
 * script: a line "offset length" per record, length counting the whole frame) is read from a file,
 * or built in memory by walking the file's length fields once. Files are mapped read-only; a
 * record's data is checked (both CRCs) when it is read and is a view into the map.
 *
 * An Example is Features { map<string, Feature> feature = 1 } in field 1, a Feature one of
 * bytes_list (1), float_list (2) or int64_list (3), each { repeated value = 1 } (packed or not).
 * sl__tfrec_parse looks up the wanted features in one pass, through protowire (zero copy). */
#ifndef SLUICE_IO_TFRECORD_H
#define SLUICE_IO_TFRECORD_H

#include "io/protowire.h"
#include "sluice/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CRC-32C (Castagnoli), continued from crc (0 to start), and TFRecord's mask of it */
uint32_t sl__tfrec_crc32c(uint32_t crc, const void *data, size_t len);
/* the same by tables only (what sl__tfrec_crc32c does on a CPU without SSE 4.2; for tests) */
uint32_t sl__tfrec_crc32c_portable(uint32_t crc, const void *data, size_t len);
static inline uint32_t sl__tfrec_mask(uint32_t crc) {
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

/* Checks the frame at off of a file of size bytes (the length's CRC, the data's when check_data)
 * and gives the data; *next is the offset after it. SL_EFORMAT naming path and off. */
sl_status sl__tfrec_frame(const uint8_t *file, size_t size, uint64_t off, const char *path,
                          bool check_data, const uint8_t **data, uint64_t *len, uint64_t *next,
                          sl_err *err);
/* Appends one framed record to b. */
void sl__tfrec_put(sl__pw_buf *b, const void *data, size_t len);

/* ---- files and their index ---- */
typedef struct sl__tfrec sl__tfrec;
/* Maps the files and reads their index files (index_paths: npaths of them, or NULL to scan each
 * file once). */
sl_status sl__tfrec_open(int npaths, const char *const *paths, const char *const *index_paths,
                         sl__tfrec **out, sl_err *err);
void sl__tfrec_close(sl__tfrec *t);
int64_t sl__tfrec_count(const sl__tfrec *t);
const char *sl__tfrec_path(const sl__tfrec *t, int64_t i); /* the file record i is in */
uint64_t sl__tfrec_offset(const sl__tfrec *t, int64_t i);  /* its frame's offset there */
int64_t sl__tfrec_size(const sl__tfrec *t, int64_t i);     /* its frame's length */
/* Record i's data, framing and CRCs checked (errors name the file and offset). */
sl_status sl__tfrec_read(const sl__tfrec *t, int64_t i, const uint8_t **data, uint64_t *len,
                         sl_err *err);

/* ---- tf.train.Example ---- */
enum { SL_TFREC_STRING = 0, SL_TFREC_INT64 = 1, SL_TFREC_FLOAT32 = 2 };
enum {
    SL_TFREC_NONE = 0,
    SL_TFREC_BYTES_LIST = 1,
    SL_TFREC_FLOAT_LIST = 2,
    SL_TFREC_INT64_LIST = 3
};

/* A feature of one Example: its list (kind SL_TFREC_*_LIST, or SL_TFREC_NONE when absent) as the
 * bytes of the BytesList / FloatList / Int64List message. */
typedef struct sl__tfrec_value {
    int kind;
    const uint8_t *msg;
    size_t len;
} sl__tfrec_value;

/* Finds the n features named names[k] in an Example (the last entry of a name wins, as protobuf's
 * maps); out[k].kind is SL_TFREC_NONE for those absent. SL_EFORMAT with a short reason. */
sl_status sl__tfrec_parse(const uint8_t *ex, size_t len, int n, const char *const *names,
                          sl__tfrec_value *out, sl_err *err);
/* Values in a list: count (or -1 when malformed); int64 / float values up to cap into out. */
int64_t sl__tfrec_int64s(const sl__tfrec_value *v, int64_t *out, int64_t cap);
int64_t sl__tfrec_floats(const sl__tfrec_value *v, float *out, int64_t cap);
/* Strings of a bytes list: count (or -1); the first into *data, *n (when there is one). */
int64_t sl__tfrec_bytes(const sl__tfrec_value *v, const uint8_t **data, size_t *n);
const char *sl__tfrec_kind_name(int kind); /* "bytes_list", ... */

/* Calls each(name, value) for every feature of an Example, in order (inspect). */
sl_status sl__tfrec_each(const uint8_t *ex, size_t len,
                         void (*each)(const char *name, size_t nlen, const sl__tfrec_value *v,
                                      void *user),
                         void *user, sl_err *err);

/* Encodes an Example {image/encoded: bytes, image/class/label: int64} (TensorFlow's image
 * classification layout) into b. */
void sl__tfrec_encode_image(sl__pw_buf *b, const void *image, size_t n, int64_t label);

#ifdef __cplusplus
}
#endif
#endif
