/* SPDX-License-Identifier: Apache-2.0 */
// cast's CUDA run: one thread per element, converted as operator/dtype_conv.h does on the CPU (load
// as double, round to nearest even and saturate); equal dtypes are copied byte for byte.
#include "core/cuda_check.h"
#include "ops/cast.h"
#include "core/cuda_launch.h"

#include "operator/dtype_conv.h"

__global__ static void cast_kernel(const sl__cuda_cast_desc *d, int n, int it, int ot) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        SL__CUDA_FOR_ELEMS(e, d[s].n) {
            sl__dtype_conv_store(d[s].out, (sl_dtype)ot, e,
                                 sl__dtype_conv_load(d[s].in, (sl_dtype)it, e));
        }
    }
}

__global__ static void copy_kernel(const sl__cuda_cast_desc *d, int n, int64_t elem) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        const unsigned char *src = (const unsigned char *)d[s].in;
        unsigned char *dst = (unsigned char *)d[s].out;
        SL__CUDA_FOR_ELEMS(e, d[s].n * elem) dst[e] = src[e];
    }
}

extern "C" sl_status sl__cuda_cast(const sl__cuda_cast_desc *d, int n, int64_t max_elems,
                                   int in_dtype, int out_dtype, void *stream, sl_err *err) {
    if (n < 1 || max_elems < 1) return SL_OK;
    cudaStream_t st = (cudaStream_t)stream;
    if (in_dtype == out_dtype) {
        int64_t elem = (int64_t)sl_dtype_size((sl_dtype)in_dtype);
        copy_kernel<<<sl__cuda_batch_grid(max_elems * elem, n), SL__CUDA_THREADS, 0, st>>>(d, n,
                                                                                           elem);
    } else {
        cast_kernel<<<sl__cuda_batch_grid(max_elems, n), SL__CUDA_THREADS, 0, st>>>(d, n, in_dtype,
                                                                                    out_dtype);
    }
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}
