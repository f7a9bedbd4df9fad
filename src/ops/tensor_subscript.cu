// SPDX-License-Identifier: Apache-2.0
// tensor_subscript's CUDA run: one thread per output element, reading the input element the
// sample's descriptor (ops/tensor_subscript.h) names; elements move as whole words of their size.
#include "core/cuda_check.h"
#include "core/cuda_launch.h"
#include "ops/tensor_subscript.h"

template <typename T> __global__ static void subscript_kernel(const sl__subscript_desc *d, int n) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        const sl__subscript_desc *q = &d[s];
        const T *in = (const T *)q->in;
        T *out = (T *)q->out;
        SL__CUDA_FOR_ELEMS(e, q->n) {
            int64_t rest = e / q->inner, off = e % q->inner;
            for (int k = q->k - 1; k >= 0; k--) {
                int64_t idx = rest % q->count[k];
                rest /= q->count[k];
                off += (q->start[k] + idx * q->step[k]) * q->stride[k];
            }
            out[e] = in[off];
        }
    }
}

extern "C" sl_status sl__cuda_subscript(const sl__subscript_desc *d, int n, int64_t max_elems,
                                        int esize, void *stream, sl_err *err) {
    if (n < 1 || max_elems < 1) return SL_OK;
    cudaStream_t st = (cudaStream_t)stream;
    dim3 grid = sl__cuda_batch_grid(max_elems, n);
    switch (esize) {
    case 1:
        subscript_kernel<unsigned char><<<grid, SL__CUDA_THREADS, 0, st>>>(d, n);
        break;
    case 2:
        subscript_kernel<unsigned short><<<grid, SL__CUDA_THREADS, 0, st>>>(d, n);
        break;
    case 4:
        subscript_kernel<unsigned int><<<grid, SL__CUDA_THREADS, 0, st>>>(d, n);
        break;
    case 8:
        subscript_kernel<unsigned long long><<<grid, SL__CUDA_THREADS, 0, st>>>(d, n);
        break;
    default:
        return sl_err_set(err, SL_ENOTSUP, "tensor_subscript: elements of %d bytes on the GPU",
                          esize);
    }
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}
