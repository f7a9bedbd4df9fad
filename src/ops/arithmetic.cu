/* SPDX-License-Identifier: Apache-2.0 */
// arithmetic's CUDA run: one thread per result element, each computed by ops/arithmetic.h's rule,
// the one the CPU run uses, so that the two runs give the same bits.
#include "core/cuda_check.h"
#include "core/cuda_launch.h"
#include "ops/arithmetic.h"

__global__ static void arith_kernel(const sl__math_desc *d, int n, sl__arith a) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        const sl__math_desc *x = &d[s];
        SL__CUDA_FOR_ELEMS(e, x->n) {
            sl__arith_elem(&a, x, e);
        }
    }
}

extern "C" sl_status sl__cuda_arithmetic(const sl__math_desc *d, int n, int64_t max_elems,
                                         const sl__arith *a, void *stream, sl_err *err) {
    if (n < 1 || max_elems < 1) return SL_OK;
    arith_kernel<<<sl__cuda_batch_grid(max_elems, n), SL__CUDA_THREADS, 0, (cudaStream_t)stream>>>(
        d, n, *a);
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}
