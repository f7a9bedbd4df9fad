/* SPDX-License-Identifier: Apache-2.0 */
// gaussian_blur's CUDA run: the passes of ops/gaussian_blur.h, innermost axis first, one thread
// per element each, with the weights the CPU computed; the same rule as the CPU run, so the same
// bits. Pass p of a sample with k axes blurs axis k - 1 - p, from the input (p = 0) or scratch
// buffer (p - 1) % 2, into the output (p = k - 1) or scratch buffer p % 2.
#include "core/cuda_check.h"
#include "core/cuda_launch.h"

#include "ops/gaussian_blur.h"

__global__ static void blur_pass(const sl__cuda_blur_desc *d, const char *params, int n,
                                 float *scratch, int p, int it, int ot) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        const sl__cuda_blur_desc &x = d[s];
        int k = x.b.naxes;
        if (p >= k) continue;
        int a = k - 1 - p;
        const float *w = (const float *)(params + x.w[a]);
        const void *src = p == 0 ? x.in : (const void *)(scratch + x.tmp[(p - 1) % 2]);
        sl_dtype st = p == 0 ? (sl_dtype)it : SL_DTYPE_F32;
        SL__CUDA_FOR_ELEMS(e, x.b.n) {
            float v = sl__blur_pass(&x.b, a, w, src, st, e);
            if (p == k - 1)
                sl__dtype_conv_store(x.out, (sl_dtype)ot, e, v);
            else
                scratch[x.tmp[p % 2] + e] = v;
        }
    }
}

extern "C" sl_status sl__cuda_blur(const sl__cuda_blur_desc *d, const void *params, int n,
                                   int passes, int64_t max_elems, float *scratch, int in_dtype,
                                   int out_dtype, void *stream, sl_err *err) {
    if (n < 1 || max_elems < 1) return SL_OK;
    cudaStream_t st = (cudaStream_t)stream;
    dim3 grid = sl__cuda_batch_grid(max_elems, n);
    for (int p = 0; p < passes; p++) {
        blur_pass<<<grid, SL__CUDA_THREADS, 0, st>>>(d, (const char *)params, n, scratch, p,
                                                     in_dtype, out_dtype);
        SL_CUDA_TRY(err, cudaGetLastError());
    }
    return SL_OK;
}
