/* SPDX-License-Identifier: Apache-2.0 */
/* NumPy .npy files (format versions 1.0, 2.0 and 3.0): the header's data type, shape and order,
 * and where the data starts. Little-endian (or one-byte) types that sl_dtype has; C or Fortran
 * order (readers.numpy turns Fortran order into C order). */
#ifndef SLUICE_IO_NPY_H
#define SLUICE_IO_NPY_H

#include "sluice/status.h"
#include "sluice/tensor.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl__npy_header {
    sl_dtype dtype;
    int ndim;
    int64_t shape[SL_MAX_DIMS];
    bool fortran;       /* fortran_order: True */
    size_t data_offset; /* where the array's bytes start */
    size_t nbytes;      /* the array's bytes: elements x item size */
} sl__npy_header;

/* Parses the header in buf's first len bytes. SL_EOF with *need set when len is too short to hold
 * it (need: the bytes it takes); SL_EFORMAT / SL_ENOTSUP saying what is wrong otherwise. */
sl_status sl__npy_parse(const uint8_t *buf, size_t len, sl__npy_header *h, size_t *need,
                        sl_err *err);

/* Reads and parses the header of the open file fd of file_size bytes, and checks that the file
 * holds exactly the array's bytes after it. Errors say what is wrong (the caller names the file).
 */
sl_status sl__npy_read_header(int fd, size_t file_size, sl__npy_header *h, sl_err *err);

/* Fortran order -> C order: src holds h's array with the first index fastest; dst gets it with the
 * last index fastest (both h->nbytes). */
void sl__npy_fortran_to_c(const sl__npy_header *h, const uint8_t *src, uint8_t *dst);

#ifdef __cplusplus
}
#endif
#endif
