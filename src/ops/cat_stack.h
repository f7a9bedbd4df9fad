/* SPDX-License-Identifier: Apache-2.0 */
/* cat and stack (cat_stack.c): the CUDA block copy's descriptor and launcher (cat_stack.cu). */
#ifndef SLUICE_OPS_CAT_STACK_H
#define SLUICE_OPS_CAT_STACK_H

#include "sluice/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* cat and stack: rows rows of row_bytes bytes from a contiguous src to dst, rows dst_pitch bytes
 * apart (cat_stack.c). dev: the n descriptors on the device; host: the same on the host (the copy
 * unit, the widest that every address, row and pitch allows, is chosen from them). */
typedef struct sl__cuda_blocks_desc {
    const void *src;
    void *dst;
    int64_t rows, row_bytes, dst_pitch;
} sl__cuda_blocks_desc;
sl_status sl__cuda_copy_blocks(const sl__cuda_blocks_desc *dev, const sl__cuda_blocks_desc *host,
                               int n, void *stream, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
