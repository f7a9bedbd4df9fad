/* SPDX-License-Identifier: Apache-2.0 */
// resize's CUDA run: resize.c's two separable passes with the taps it computed on the host (sent in
// the params block), one thread per element of each pass. Products and sums are rounded one at a
// time (__fmul_rn, __fadd_rn: no fused multiply-add) in tap order, as the CPU loops do, so the two
// runs agree except where a rounding to the output type lands on a tie.
#include "core/cuda_check.h"
#include "ops/resize.h"
#include "core/cuda_launch.h"

#include "operator/dtype_conv.h"

__device__ static inline int64_t clampi(int64_t v, int64_t n) {
    return v < 0 ? 0 : v >= n ? n - 1 : v;
}

// tmp (h, ow, c) floats
__global__ static void resize_h(const sl__cuda_resize_desc *d, const char *params, int n,
                                float *scratch, int it) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        const sl__cuda_resize_desc &r = d[s];
        const int64_t *fx = (const int64_t *)(params + r.fx);
        const float *wx = (const float *)(params + r.wx);
        float *tmp = scratch + r.tmp;
        int64_t C = r.c, OW = r.ow, W = r.w;
        SL__CUDA_FOR_ELEMS(e, r.rows * OW * C) {
            int64_t c = e % C, x = (e / C) % OW, y = r.y0 + e / (C * OW);
            float acc = 0;
            for (int k = 0; k < r.tx; k++)
                acc = __fadd_rn(
                    acc, __fmul_rn(wx[x * r.tx + k], (float)sl__dtype_conv_load(
                                                         r.in, (sl_dtype)it,
                                                         (y * W + clampi(fx[x] + k, W)) * C + c)));
            tmp[(y * OW + x) * C + c] = acc;
        }
    }
}

// out (oh, ow, c)
__global__ static void resize_v(const sl__cuda_resize_desc *d, const char *params, int n,
                                const float *scratch, int ot) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        const sl__cuda_resize_desc &r = d[s];
        const int64_t *fy = (const int64_t *)(params + r.fy);
        const float *wy = (const float *)(params + r.wy);
        const float *tmp = scratch + r.tmp;
        int64_t C = r.c, OW = r.ow, H = r.h;
        SL__CUDA_FOR_ELEMS(e, r.oh * OW * C) {
            int64_t c = e % C, x = (e / C) % OW, y = e / (C * OW);
            float acc = 0;
            for (int k = 0; k < r.ty; k++)
                acc = __fadd_rn(
                    acc, __fmul_rn(wy[y * r.ty + k], tmp[(clampi(fy[y] + k, H) * OW + x) * C + c]));
            sl__dtype_conv_store(r.out, (sl_dtype)ot, e, acc);
        }
    }
}

extern "C" sl_status sl__cuda_resize(const sl__cuda_resize_desc *d, const void *params, int n,
                                     int64_t max_tmp, int64_t max_out, float *scratch, int in_dtype,
                                     int out_dtype, void *stream, sl_err *err) {
    if (n < 1) return SL_OK;
    cudaStream_t st = (cudaStream_t)stream;
    resize_h<<<sl__cuda_batch_grid(max_tmp, n), SL__CUDA_THREADS, 0, st>>>(d, (const char *)params,
                                                                           n, scratch, in_dtype);
    SL_CUDA_TRY(err, cudaGetLastError());
    resize_v<<<sl__cuda_batch_grid(max_out, n), SL__CUDA_THREADS, 0, st>>>(d, (const char *)params,
                                                                           n, scratch, out_dtype);
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}

extern "C" sl_status sl__cuda_resize_pass(const sl__cuda_resize_desc *d, const void *params, int n,
                                          int64_t max_elems, float *scratch, int dtype,
                                          bool vertical, void *stream, sl_err *err) {
    if (n < 1 || max_elems < 1) return SL_OK;
    cudaStream_t st = (cudaStream_t)stream;
    if (vertical)
        resize_v<<<sl__cuda_batch_grid(max_elems, n), SL__CUDA_THREADS, 0, st>>>(
            d, (const char *)params, n, scratch, dtype);
    else
        resize_h<<<sl__cuda_batch_grid(max_elems, n), SL__CUDA_THREADS, 0, st>>>(
            d, (const char *)params, n, scratch, dtype);
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}
