/* SPDX-License-Identifier: Apache-2.0 */
// experimental.filter's CUDA run: one thread per output element, through sl__filt_elem
// (ops/filter.h), the rule the CPU run follows, so the two give the same bits.
#include "core/cuda_check.h"
#include "core/cuda_launch.h"
#include "ops/filter.h"

__global__ static void filter_kernel(const sl__cuda_filt_desc *d, int n, int it, int ot) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        const sl__cuda_filt_desc &x = d[s];
        float fill = x.fill ? (float)sl__dtype_conv_load(x.fill, (sl_dtype)it, 0) : 0.0f;
        SL__CUDA_FOR_ELEMS(e, x.n) {
            sl__filt_elem(&x.f, x.in, (sl_dtype)it, x.k, fill, x.out, (sl_dtype)ot, e);
        }
    }
}

extern "C" sl_status sl__cuda_filter(const sl__cuda_filt_desc *d, int n, int64_t max_elems,
                                     int in_dtype, int out_dtype, void *stream, sl_err *err) {
    if (n < 1 || max_elems < 1) return SL_OK;
    filter_kernel<<<sl__cuda_batch_grid(max_elems, n), SL__CUDA_THREADS, 0, (cudaStream_t)stream>>>(
        d, n, in_dtype, out_dtype);
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}
