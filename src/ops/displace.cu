/* SPDX-License-Identifier: Apache-2.0 */
// water, sphere and jitter's CUDA run: one thread per output element, through sl__displace_elem
// (ops/displace.h), the rule the CPU run follows.
#include "core/cuda_check.h"
#include "core/cuda_launch.h"
#include "ops/displace.h"

__global__ static void displace_kernel(const sl__displace_desc *d, int n, sl__displace_params p,
                                       int t, int es) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        SL__CUDA_FOR_ELEMS(e, d[s].h * d[s].w * d[s].c)
        sl__displace_elem(&d[s], &p, (sl_dtype)t, es, e);
    }
}

extern "C" sl_status sl__cuda_displace(const sl__displace_desc *d, int n, int64_t max_elems,
                                       const sl__displace_params *p, int dtype, int esize,
                                       void *stream, sl_err *err) {
    if (n < 1 || max_elems < 1) return SL_OK;
    displace_kernel<<<sl__cuda_batch_grid(max_elems, n), SL__CUDA_THREADS, 0,
                      (cudaStream_t)stream>>>(d, n, *p, dtype, esize);
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}
