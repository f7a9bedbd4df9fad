/* SPDX-License-Identifier: Apache-2.0 */
// crop_mirror_normalize's CUDA run: one thread per output pixel of every sample of the batch, the
// same float operations as crop_mirror_normalize.c's run_cpu ((in - mean) * inv_std, conversions
// rounding to nearest and saturating), so CPU and GPU outputs are equal element by element.
#include "core/cuda_check.h"
#include "ops/crop_mirror_normalize.h"
#include "core/cuda_launch.h"

#include "core/half.h"
#include "sluice/tensor.h"

#include <stdint.h>

namespace {

template <typename T> __device__ inline float load(const T *p, int64_t k) {
    return (float)p[k];
}
template <> __device__ inline float load<uint16_t>(const uint16_t *p, int64_t k) {
    return sl__f16_to_f32(p[k]);
}

template <typename T> __device__ inline void store(T *p, int64_t k, float v);
template <> __device__ inline void store<float>(float *p, int64_t k, float v) {
    p[k] = v;
}
template <> __device__ inline void store<uint16_t>(uint16_t *p, int64_t k, float v) {
    p[k] = sl__f32_to_f16(v);
}
template <> __device__ inline void store<uint8_t>(uint8_t *p, int64_t k, float v) {
    p[k] = v != v ? 0 : v <= 0 ? 0 : v >= 255 ? 255 : (uint8_t)__float2int_rn(v);
}
template <> __device__ inline void store<int8_t>(int8_t *p, int64_t k, float v) {
    p[k] = v != v ? 0 : v <= -128 ? -128 : v >= 127 ? 127 : (int8_t)__float2int_rn(v);
}

// out: (out_f, out_d, out_h, out_w, out_c) per sample, laid out as its output strides say
template <typename I, typename O> __global__ void cmn_kernel(const sl__cuda_cmn_desc *d, int n) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        const sl__cmn_sample &p = d[s].p;
        const I *src = (const I *)d[s].in;
        O *dst = (O *)d[s].out;
        int64_t D = p.out_d, H = p.out_h, W = p.out_w, C = p.out_c, IC = p.in_c;
        SL__CUDA_FOR_ELEMS(e, p.out_f * D * H * W) {
            int64_t x = e % W, r = e / W;
            int64_t y = r % H;
            r /= H;
            int64_t z = r % D, f = r / D;
            int64_t sz = p.anchor_z + z;
            int64_t sy = p.anchor_y + (p.mirror_y ? H - 1 - y : y);
            int64_t sx = p.anchor_x + (p.mirror_x ? W - 1 - x : x);
            bool in_b = sz >= 0 && sz < p.in_d && sy >= 0 && sy < p.in_h && sx >= 0 && sx < p.in_w;
            int64_t at = f * p.is_f + sz * p.is_d + sy * p.is_h + sx * p.is_w;
            int64_t o = f * p.os_f + z * p.os_d + y * p.os_h + x * p.os_w;
            for (int64_t c = 0; c < C; c++) {
                float v = in_b && c < IC ? (load(src, at + c * p.is_c) - p.mean[c]) * p.inv_std[c]
                                         : p.fill[c];
                store(dst, o + c * p.os_c, v);
            }
        }
    }
}

template <typename I>
sl_status launch_out(const sl__cuda_cmn_desc *d, int n, dim3 grid, int out_dtype, cudaStream_t st,
                     sl_err *err) {
    switch (out_dtype) {
    case SL_DTYPE_F32:
        cmn_kernel<I, float><<<grid, SL__CUDA_THREADS, 0, st>>>(d, n);
        break;
    case SL_DTYPE_F16:
        cmn_kernel<I, uint16_t><<<grid, SL__CUDA_THREADS, 0, st>>>(d, n);
        break;
    case SL_DTYPE_U8:
        cmn_kernel<I, uint8_t><<<grid, SL__CUDA_THREADS, 0, st>>>(d, n);
        break;
    case SL_DTYPE_I8:
        cmn_kernel<I, int8_t><<<grid, SL__CUDA_THREADS, 0, st>>>(d, n);
        break;
    default:
        return sl_err_set(err, SL_EINVAL, "crop_mirror_normalize: output dtype %d", out_dtype);
    }
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}

} // namespace

extern "C" sl_status sl__cuda_cmn(const sl__cuda_cmn_desc *d, int n, int64_t max_pixels,
                                  int in_dtype, int out_dtype, void *stream, sl_err *err) {
    if (n < 1 || max_pixels < 1) return SL_OK;
    dim3 grid = sl__cuda_batch_grid(max_pixels, n);
    cudaStream_t st = (cudaStream_t)stream;
    switch (in_dtype) {
    case SL_DTYPE_U8:
        return launch_out<uint8_t>(d, n, grid, out_dtype, st, err);
    case SL_DTYPE_I8:
        return launch_out<int8_t>(d, n, grid, out_dtype, st, err);
    case SL_DTYPE_F16:
        return launch_out<uint16_t>(d, n, grid, out_dtype, st, err);
    case SL_DTYPE_F32:
        return launch_out<float>(d, n, grid, out_dtype, st, err);
    default:
        return sl_err_set(err, SL_EINVAL, "crop_mirror_normalize: input dtype %d", in_dtype);
    }
}
