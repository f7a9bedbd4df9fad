/* SPDX-License-Identifier: Apache-2.0 */
// flip's CUDA run: one thread per output pixel of every sample, copying the pixel's bytes from the
// mirrored position (flip.c's run_cpu, element for element).
#include "core/cuda_check.h"
#include "ops/flip.h"
#include "core/cuda_launch.h"

__global__ static void flip_kernel(const sl__cuda_flip_desc *d, int n) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        const unsigned char *src = (const unsigned char *)d[s].in;
        unsigned char *dst = (unsigned char *)d[s].out;
        int64_t H = d[s].h, W = d[s].w, px = d[s].px;
        int fh = d[s].flags & 1, fv = (d[s].flags >> 1) & 1, fd = (d[s].flags >> 2) & 1;
        int64_t D = d[s].depth;
        SL__CUDA_FOR_ELEMS(e, d[s].planes * H * W) {
            int64_t x = e % W, y = (e / W) % H, p = e / (W * H);
            int64_t sy = fv ? H - 1 - y : y, sx = fh ? W - 1 - x : x;
            int64_t sp = fd ? p / D * D + (D - 1 - p % D) : p;
            const unsigned char *from = src + ((sp * H + sy) * W + sx) * px;
            unsigned char *to = dst + e * px;
            for (int64_t b = 0; b < px; b++) to[b] = from[b];
        }
    }
}

extern "C" sl_status sl__cuda_flip(const sl__cuda_flip_desc *d, int n, int64_t max_pixels,
                                   void *stream, sl_err *err) {
    if (n < 1 || max_pixels < 1) return SL_OK;
    flip_kernel<<<sl__cuda_batch_grid(max_pixels, n), SL__CUDA_THREADS, 0, (cudaStream_t)stream>>>(
        d, n);
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}
