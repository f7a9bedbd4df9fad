/* SPDX-License-Identifier: Apache-2.0 */
// paste's CUDA run: one thread per canvas element, through sl__paste_elem (ops/paste.h), the rule
// the CPU run follows.
#include "core/cuda_check.h"
#include "core/cuda_launch.h"
#include "ops/paste.h"

__global__ static void paste_kernel(const sl__paste_desc *d, int n, int t, int es) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        SL__CUDA_FOR_ELEMS(e, d[s].oh * d[s].ow * d[s].c) sl__paste_elem(&d[s], (sl_dtype)t, es, e);
    }
}

extern "C" sl_status sl__cuda_paste(const sl__paste_desc *d, int n, int64_t max_elems, int dtype,
                                    int esize, void *stream, sl_err *err) {
    if (n < 1 || max_elems < 1) return SL_OK;
    paste_kernel<<<sl__cuda_batch_grid(max_elems, n), SL__CUDA_THREADS, 0, (cudaStream_t)stream>>>(
        d, n, dtype, esize);
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}
