/* SPDX-License-Identifier: Apache-2.0 */
// math.*'s CUDA run: one thread per output element, computed by sl__math_elem (ops/math.h), the
// rule the CPU run follows. Integer results give the CPU's bits; floating ones come from CUDA's
// double functions, rounded once (within an ulp of the CPU's after rounding).
#include "core/cuda_check.h"
#include "core/cuda_launch.h"
#include "ops/math.h"

__global__ static void math_kernel(const sl__math_desc *d, int n, sl__math_types t) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        SL__CUDA_FOR_ELEMS(e, d[s].n) sl__math_elem(&d[s], &t, e);
    }
}

extern "C" sl_status sl__cuda_math(const sl__math_desc *d, int n, int64_t max_elems,
                                   const sl__math_types *t, void *stream, sl_err *err) {
    if (n < 1 || max_elems < 1) return SL_OK;
    math_kernel<<<sl__cuda_batch_grid(max_elems, n), SL__CUDA_THREADS, 0, (cudaStream_t)stream>>>(
        d, n, *t);
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}
