/* SPDX-License-Identifier: Apache-2.0 */
/* Checked size arithmetic. Every size, count or offset that comes from a file (a header's
 * extents, a record's dims) or from a caller's shape goes through these before it feeds an
 * allocation or a pointer offset, so that a product that wraps is refused instead of giving a
 * small buffer that is then read or written as a large one. The limit is PTRDIFF_MAX (which is
 * INT64_MAX here): byte offsets into any accepted block, and its element count, then fit
 * ptrdiff_t, int64_t and size_t alike. */
#ifndef SLUICE_CORE_SIZE_H
#define SLUICE_CORE_SIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SL__SIZE_LIMIT ((size_t)PTRDIFF_MAX)

/* *out = a * b; true when the product exceeds SL__SIZE_LIMIT (*out is then unspecified). */
static inline bool sl__size_mul(size_t a, size_t b, size_t *out) {
    return __builtin_mul_overflow(a, b, out) || *out > SL__SIZE_LIMIT;
}

/* *out = a + b; true when the sum exceeds SL__SIZE_LIMIT. */
static inline bool sl__size_add(size_t a, size_t b, size_t *out) {
    return __builtin_add_overflow(a, b, out) || *out > SL__SIZE_LIMIT;
}

/* The extent of a file's header field as a size: false when it is negative or over the limit. */
static inline bool sl__size_from_i64(int64_t x, size_t *out) {
    if (x < 0 || (uint64_t)x > (uint64_t)SL__SIZE_LIMIT) return false;
    *out = (size_t)x;
    return true;
}

typedef enum { SL__SIZE_OK = 0, SL__SIZE_NEGATIVE, SL__SIZE_OVERFLOW } sl__size_result;

/* The bytes of a dense array: elem * shape[0] * ... * shape[ndim - 1] into *out. SL__SIZE_NEGATIVE
 * (with *bad_dim) for a negative extent; SL__SIZE_OVERFLOW when the product of elem and the
 * non-zero extents exceeds SL__SIZE_LIMIT -- also when another extent is 0, so that the strides
 * and partial products of an accepted shape never overflow, whatever order they are taken in. */
static inline sl__size_result sl__size_shape(const int64_t *shape, int ndim, size_t elem,
                                             size_t *out, int *bad_dim) {
    size_t n = elem ? elem : 1;
    bool zero = elem == 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0) {
            if (bad_dim) *bad_dim = d;
            return SL__SIZE_NEGATIVE;
        }
        if (shape[d] == 0) {
            zero = true;
            continue;
        }
        size_t x;
        if (!sl__size_from_i64(shape[d], &x) || sl__size_mul(n, x, &n)) {
            if (bad_dim) *bad_dim = d;
            return SL__SIZE_OVERFLOW;
        }
    }
    *out = zero ? 0 : n;
    return SL__SIZE_OK;
}

#ifdef __cplusplus
}
#endif
#endif
