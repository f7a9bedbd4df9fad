/* SPDX-License-Identifier: Apache-2.0 */
/* IDX files (the MNIST / Fashion-MNIST format: magic 0x0000, item type, rank, big-endian dims,
 * then the items), plain or gzip-compressed (read through zlib, which passes plain files through).
 * The whole file is loaded into memory once; item i is a view into it. */
#ifndef SLUICE_IO_IDX_H
#define SLUICE_IO_IDX_H

#include "sluice/status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    SL_IDX_U8 = 0x08,
    SL_IDX_I8 = 0x09,
    SL_IDX_I16 = 0x0B,
    SL_IDX_I32 = 0x0C,
    SL_IDX_F32 = 0x0D,
    SL_IDX_F64 = 0x0E
};

typedef struct sl__idx sl__idx;

sl_status sl__idx_open(const char *path, sl__idx **out, sl_err *err);
int64_t sl__idx_count(const sl__idx *x); /* dims[0] */
int sl__idx_ndim(const sl__idx *x);
const int64_t *sl__idx_dims(const sl__idx *x);
int sl__idx_type(const sl__idx *x); /* SL_IDX_* */
/* item i (big-endian values for multi-byte types) */
const uint8_t *sl__idx_item(const sl__idx *x, int64_t i, size_t *size);
const char *sl__idx_path(const sl__idx *x);
void sl__idx_close(sl__idx *x);

#ifdef __cplusplus
}
#endif
#endif
