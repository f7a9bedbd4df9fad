/* SPDX-License-Identifier: Apache-2.0 */
// transpose's CUDA run: one thread per output element, whose input offset comes from its index
// split over the output extents, times the permuted input strides (transpose.c's run_cpu walks the
// same strides in order).
#include "core/cuda_check.h"
#include "ops/transpose.h"
#include "core/cuda_launch.h"

template <typename T>
__global__ static void transpose_kernel(const sl__cuda_transpose_desc *d, int n) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        const T *src = (const T *)d[s].in;
        T *dst = (T *)d[s].out;
        int nd = d[s].ndim;
        SL__CUDA_FOR_ELEMS(e, d[s].n) {
            int64_t off = e, rem = e;
            if (nd) {
                off = 0;
                for (int k = nd - 1; k >= 0; k--) {
                    int64_t x = d[s].shape[k];
                    off += rem % x * d[s].stride[k];
                    rem /= x;
                }
            }
            dst[e] = src[off];
        }
    }
}

extern "C" sl_status sl__cuda_transpose(const sl__cuda_transpose_desc *d, int n, int64_t max_elems,
                                        int elem_size, void *stream, sl_err *err) {
    if (n < 1 || max_elems < 1) return SL_OK;
    dim3 grid = sl__cuda_batch_grid(max_elems, n);
    cudaStream_t st = (cudaStream_t)stream;
    switch (elem_size) {
    case 1:
        transpose_kernel<unsigned char><<<grid, SL__CUDA_THREADS, 0, st>>>(d, n);
        break;
    case 2:
        transpose_kernel<unsigned short><<<grid, SL__CUDA_THREADS, 0, st>>>(d, n);
        break;
    case 4:
        transpose_kernel<unsigned int><<<grid, SL__CUDA_THREADS, 0, st>>>(d, n);
        break;
    case 8:
        transpose_kernel<unsigned long long><<<grid, SL__CUDA_THREADS, 0, st>>>(d, n);
        break;
    default:
        return sl_err_set(err, SL_ENOTSUP, "transpose: %d-byte elements", elem_size);
    }
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}
