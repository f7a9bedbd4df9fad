/* SPDX-License-Identifier: Apache-2.0 */
// gaussian_blur's CUDA run: the two passes of ops/gaussian_blur.h, one thread per element each,
// with the weights the CPU computed; the same rule as the CPU run, so the same bits.
#include "core/cuda_check.h"
#include "ops/gaussian_blur.h"
#include "core/cuda_launch.h"

#include "ops/gaussian_blur.h"

__global__ static void blur_h(const sl__cuda_blur_desc *d, const char *params, int n,
                              float *scratch, int it) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        const sl__cuda_blur_desc &x = d[s];
        const float *wx = (const float *)(params + x.wx);
        SL__CUDA_FOR_ELEMS(e, x.b.h * x.b.w * x.b.c) {
            scratch[x.tmp + e] = sl__blur_h(&x.b, wx, x.in, (sl_dtype)it, e);
        }
    }
}

__global__ static void blur_v(const sl__cuda_blur_desc *d, const char *params, int n,
                              const float *scratch, int ot) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        const sl__cuda_blur_desc &x = d[s];
        const float *wy = (const float *)(params + x.wy);
        SL__CUDA_FOR_ELEMS(e, x.b.h * x.b.w * x.b.c) {
            sl__blur_v(&x.b, wy, scratch + x.tmp, x.out, (sl_dtype)ot, e);
        }
    }
}

extern "C" sl_status sl__cuda_blur(const sl__cuda_blur_desc *d, const void *params, int n,
                                   int64_t max_elems, float *scratch, int in_dtype, int out_dtype,
                                   void *stream, sl_err *err) {
    if (n < 1 || max_elems < 1) return SL_OK;
    cudaStream_t st = (cudaStream_t)stream;
    dim3 grid = sl__cuda_batch_grid(max_elems, n);
    blur_h<<<grid, SL__CUDA_THREADS, 0, st>>>(d, (const char *)params, n, scratch, in_dtype);
    SL_CUDA_TRY(err, cudaGetLastError());
    blur_v<<<grid, SL__CUDA_THREADS, 0, st>>>(d, (const char *)params, n, scratch, out_dtype);
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}
