/* SPDX-License-Identifier: Apache-2.0 */
// Device side of sl_tensor: copies between host and device, and a fill kernel for any element size.
#include "core/cuda_check.h"
#include "core/cuda.h"

#include <stdint.h>
#include <string.h>

template <typename T> __global__ void fill_kernel(T *data, size_t n, T value) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        data[i] = value;
}

template <typename T>
static sl_status launch_fill(void *data, size_t n, const unsigned char *bytes, cudaStream_t s,
                             sl_err *err) {
    T v;
    memcpy(&v, bytes, sizeof v);
    size_t blocks = (n + 255) / 256;
    if (blocks > 65535) blocks = 65535;
    if (blocks == 0) return SL_OK;
    fill_kernel<T><<<(unsigned)blocks, 256, 0, s>>>((T *)data, n, v);
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}

extern "C" sl_status sl__cuda_fill(void *data, size_t n, const unsigned char *value, size_t elem,
                                   void *stream, sl_err *err) {
    cudaStream_t s = (cudaStream_t)stream;
    sl_status st;
    switch (elem) {
    case 1:
        st = launch_fill<uint8_t>(data, n, value, s, err);
        break;
    case 2:
        st = launch_fill<uint16_t>(data, n, value, s, err);
        break;
    case 4:
        st = launch_fill<uint32_t>(data, n, value, s, err);
        break;
    case 8:
        st = launch_fill<uint64_t>(data, n, value, s, err);
        break;
    default:
        return sl_err_set(err, SL_EINVAL, "fill of %zu-byte elements", elem);
    }
    if (st != SL_OK || stream) return st;
    SL_CUDA_TRY(err, cudaStreamSynchronize(0));
    return SL_OK;
}

extern "C" sl_status sl__cuda_memcpy(void *dst, bool dst_dev, const void *src, bool src_dev,
                                     size_t n, void *stream, sl_err *err) {
    if (n == 0) return SL_OK; // (a batch of empty samples may have no buffer at either end)
    // device to device: cudaMemcpyDefault, the two may be on different GPUs (unified addressing)
    cudaMemcpyKind kind = dst_dev ? (src_dev ? cudaMemcpyDefault : cudaMemcpyHostToDevice)
                                  : (src_dev ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
    if (stream) {
        SL_CUDA_TRY(err, cudaMemcpyAsync(dst, src, n, kind, (cudaStream_t)stream));
    } else {
        SL_CUDA_TRY(err, cudaMemcpy(dst, src, n, kind));
    }
    return SL_OK;
}

extern "C" sl_status sl__cuda_memcpy2d(void *dst, bool dst_dev, size_t dpitch, const void *src,
                                       bool src_dev, size_t spitch, size_t width, size_t height,
                                       void *stream, sl_err *err) {
    if (width == 0 || height == 0) return SL_OK;
    cudaMemcpyKind kind = dst_dev ? (src_dev ? cudaMemcpyDefault : cudaMemcpyHostToDevice)
                                  : (src_dev ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
    SL_CUDA_TRY(err, cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind,
                                       (cudaStream_t)stream));
    if (!stream) SL_CUDA_TRY(err, cudaStreamSynchronize(0));
    return SL_OK;
}
