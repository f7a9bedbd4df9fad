/* SPDX-License-Identifier: Apache-2.0 */
// erase's CUDA run: one thread per element, through sl__erase_elem (ops/erase.h), the rule the CPU
// run follows, so the two give the same bits.
#include "core/cuda_check.h"
#include "core/cuda_launch.h"
#include "ops/erase.h"

__global__ static void erase_kernel(const sl__erase_desc *d, int n, int t, int es) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        SL__CUDA_FOR_ELEMS(e, d[s].n) sl__erase_elem(&d[s], (sl_dtype)t, es, e);
    }
}

extern "C" sl_status sl__cuda_erase(const sl__erase_desc *d, int n, int64_t max_elems, int dtype,
                                    int esize, void *stream, sl_err *err) {
    if (n < 1 || max_elems < 1) return SL_OK;
    erase_kernel<<<sl__cuda_batch_grid(max_elems, n), SL__CUDA_THREADS, 0, (cudaStream_t)stream>>>(
        d, n, dtype, esize);
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}
