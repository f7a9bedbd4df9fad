/* SPDX-License-Identifier: Apache-2.0 */
// noise.*'s CUDA run: one thread per element, drawing from the element's own Philox blocks with
// the rule of ops/noise.h that the CPU run uses: the same draws, so the same noise (floating
// results within an ulp where CUDA's log, cos and lgamma part from the C library's).
#include "core/cuda_check.h"
#include "core/cuda_launch.h"
#include "ops/noise.h"

__global__ static void noise_kernel(const sl__noise_desc *d, int n, int kind, int t,
                                    uint64_t seed) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        SL__CUDA_FOR_ELEMS(e, d[s].n) sl__noise_elem(&d[s], kind, (sl_dtype)t, seed, e);
    }
}

extern "C" sl_status sl__cuda_noise(const sl__noise_desc *d, int n, int64_t max_elems, int kind,
                                    int dtype, uint64_t seed, void *stream, sl_err *err) {
    if (n < 1 || max_elems < 1) return SL_OK;
    noise_kernel<<<sl__cuda_batch_grid(max_elems, n), SL__CUDA_THREADS, 0, (cudaStream_t)stream>>>(
        d, n, kind, dtype, seed);
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}
