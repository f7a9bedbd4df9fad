/* SPDX-License-Identifier: Apache-2.0 */
// Block copies for cat and stack's CUDA run (cat_stack.c): each descriptor moves `rows` rows of
// row_bytes bytes from a contiguous source into rows dst_pitch bytes apart, in units of the
// widest of 16, 8, 4, 2 or 1 bytes that every address, row and pitch of the batch is a multiple of.
#include "core/cuda_check.h"
#include "ops/cat_stack.h"
#include "core/cuda_launch.h"

#include <stdint.h>

template <typename U> __global__ static void blocks_kernel(const sl__cuda_blocks_desc *d, int n) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        const sl__cuda_blocks_desc x = d[s];
        const int64_t row = x.row_bytes / (int64_t)sizeof(U),
                      pitch = x.dst_pitch / (int64_t)sizeof(U);
        const U *src = (const U *)x.src;
        U *dst = (U *)x.dst;
        SL__CUDA_FOR_ELEMS(e, x.rows * row) {
            int64_t o = e / row;
            dst[o * pitch + (e - o * row)] = src[e];
        }
    }
}

extern "C" sl_status sl__cuda_copy_blocks(const sl__cuda_blocks_desc *dev,
                                          const sl__cuda_blocks_desc *host, int n, void *stream,
                                          sl_err *err) {
    uintptr_t bits = 0; /* every address, row and pitch or-ed: its low bits give the unit */
    int64_t most = 0;
    for (int i = 0; i < n; i++) {
        const sl__cuda_blocks_desc *x = &host[i];
        bits |= (uintptr_t)x->src | (uintptr_t)x->dst | (uintptr_t)x->row_bytes |
                (uintptr_t)x->dst_pitch;
        if (x->rows * x->row_bytes > most) most = x->rows * x->row_bytes;
    }
    if (n < 1 || most < 1) return SL_OK;
    size_t unit = (bits & 15) == 0  ? 16
                  : (bits & 7) == 0 ? 8
                  : (bits & 3) == 0 ? 4
                  : (bits & 1) == 0 ? 2
                                    : 1;
    dim3 grid = sl__cuda_batch_grid(most / (int64_t)unit, n);
    cudaStream_t st = (cudaStream_t)stream;
    switch (unit) {
    case 16:
        blocks_kernel<uint4><<<grid, SL__CUDA_THREADS, 0, st>>>(dev, n);
        break;
    case 8:
        blocks_kernel<uint2><<<grid, SL__CUDA_THREADS, 0, st>>>(dev, n);
        break;
    case 4:
        blocks_kernel<uint32_t><<<grid, SL__CUDA_THREADS, 0, st>>>(dev, n);
        break;
    case 2:
        blocks_kernel<uint16_t><<<grid, SL__CUDA_THREADS, 0, st>>>(dev, n);
        break;
    default:
        blocks_kernel<uint8_t><<<grid, SL__CUDA_THREADS, 0, st>>>(dev, n);
    }
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}
