/* SPDX-License-Identifier: Apache-2.0 */
/* Caffe v1 records (docs/dali.md 4.4): a Datum with channels, height, width, data, label,
 * float_data and encoded. As in DALI, data is treated as encoded unless `encoded` is present and
 * false (a missing field means encoded); raw data is (height, width, channels) uint8. Zero-copy. */
#ifndef SLUICE_IO_CAFFE_H
#define SLUICE_IO_CAFFE_H

#include "io/protowire.h"
#include "sluice/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl__caffe_datum {
    int32_t channels, height, width, label;
    bool has_data, has_label, has_encoded, encoded;
    const uint8_t *data;
    size_t ndata;
} sl__caffe_datum;

sl_status sl__caffe_parse(const uint8_t *rec, size_t len, sl__caffe_datum *out, sl_err *err);
/* true when the data holds an encoded image (DALI's rule) */
static inline bool sl__caffe_is_encoded(const sl__caffe_datum *d) {
    return !(d->has_encoded && !d->encoded);
}
/* Encodes a Datum: encoded bytes (raw false: encoded = true) or raw HWC bytes (encoded = false). */
void sl__caffe_encode(sl__pw_buf *b, const void *image, size_t nimage, bool raw, int h, int w,
                      int c, int32_t label);

#ifdef __cplusplus
}
#endif
#endif
