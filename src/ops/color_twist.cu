/* SPDX-License-Identifier: Apache-2.0 */
// color_twist and hsv's CUDA run: one thread per pixel, through ops/color_twist.h's rule, the one
// the CPU run uses, so that both give the same bits.
#include "core/cuda_check.h"
#include "ops/color_twist.h"
#include "core/cuda_launch.h"

#include "ops/color_twist.h"

__global__ static void twist_kernel(const sl__cuda_twist_desc *d, int n, int it, int ot) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        const sl__cuda_twist_desc &x = d[s];
        SL__CUDA_FOR_ELEMS(p, x.pixels) {
            sl__twist_pixel(&x.t, x.in, (sl_dtype)it, x.out, (sl_dtype)ot, p);
        }
    }
}

extern "C" sl_status sl__cuda_color_twist(const sl__cuda_twist_desc *d, int n, int64_t max_pixels,
                                          int in_dtype, int out_dtype, void *stream, sl_err *err) {
    if (n < 1 || max_pixels < 1) return SL_OK;
    twist_kernel<<<sl__cuda_batch_grid(max_pixels, n), SL__CUDA_THREADS, 0, (cudaStream_t)stream>>>(
        d, n, in_dtype, out_dtype);
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}
