/* SPDX-License-Identifier: Apache-2.0 */
// color_space_conversion's CUDA run: one thread per pixel, through sl__cs_pixel
// (ops/color_space.h), the rule the CPU run follows, so the two give the same bits.
#include "core/cuda_check.h"
#include "core/cuda_launch.h"
#include "ops/color_space.h"

__global__ static void cs_kernel(const sl__cs_desc *d, int n, int t, int from, int to,
                                 float scale) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        SL__CUDA_FOR_ELEMS(p, d[s].pixels) sl__cs_pixel(&d[s], (sl_dtype)t, from, to, scale, p);
    }
}

extern "C" sl_status sl__cuda_color_space(const sl__cs_desc *d, int n, int64_t max_pixels,
                                          int dtype, int from, int to, float scale, void *stream,
                                          sl_err *err) {
    if (n < 1 || max_pixels < 1) return SL_OK;
    cs_kernel<<<sl__cuda_batch_grid(max_pixels, n), SL__CUDA_THREADS, 0, (cudaStream_t)stream>>>(
        d, n, dtype, from, to, scale);
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}
