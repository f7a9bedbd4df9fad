/* SPDX-License-Identifier: Apache-2.0 */
/* MXNet RecordIO files, as DALI's readers.mxnet reads them: a run of records, each
 *     uint32 magic 0xced7230a, uint32 lrecord (bits 29..31 a continuation flag, 0 for a whole
 *     record; bits 0..28 the length), length bytes of payload, zero padding to 4 bytes,
 * and an index (im2rec's .idx: a line "key<TAB>offset" per record) giving where records start.
 * Several files are one stream, in the order given: the index's offsets count from the start of
 * the first. Files are mapped read-only; a payload is a view into the map. An image record's
 * payload is the header {uint32 flag, float label, uint64 id, uint64 id2}, then flag float labels
 * (when flag > 0, in place of the header's), then the encoded image. */
#ifndef SLUICE_IO_RECORDIO_H
#define SLUICE_IO_RECORDIO_H

#include "sluice/status.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl__recio sl__recio;

/* Maps the files and reads the index (records ordered by offset). SL_EFORMAT naming the file and
 * line of a bad index entry; SL_ENOENT / SL_EIO naming a missing or unreadable file. */
sl_status sl__recio_open(int npaths, const char *const *paths, const char *index_path,
                         sl__recio **out, sl_err *err);
void sl__recio_close(sl__recio *r);
int64_t sl__recio_count(const sl__recio *r);
const char *sl__recio_path(const sl__recio *r, int64_t i); /* the file record i is in */
uint64_t sl__recio_offset(const sl__recio *r, int64_t i);  /* its offset there */
int64_t sl__recio_key(const sl__recio *r, int64_t i);      /* its key in the index */
/* Record i's payload, framing checked (a record split in parts is refused): errors name the file
 * and the offset. */
sl_status sl__recio_read(const sl__recio *r, int64_t i, const uint8_t **data, uint64_t *len,
                         sl_err *err);
/* An image record's labels and image: *nlabels labels (up to cap copied to labels), the image a
 * view into payload. -1 when the payload is shorter than its header says. */
int sl__recio_image(const uint8_t *payload, uint64_t len, float *labels, int cap, int *nlabels,
                    const uint8_t **image, uint64_t *image_len);

#ifdef __cplusplus
}
#endif
#endif
