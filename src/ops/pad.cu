/* SPDX-License-Identifier: Apache-2.0 */
// pad's CUDA run: one thread per output element, through ops/pad.h's rule, the CPU run's.
#include "core/cuda_check.h"
#include "ops/pad.h"
#include "core/cuda_launch.h"

#include "ops/pad.h"

__global__ static void pad_kernel(const sl__cuda_pad_desc *d, int n) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        const sl__cuda_pad_desc &x = d[s];
        SL__CUDA_FOR_ELEMS(e, x.n) {
            sl__pad_elem(&x.p, x.in, x.out, e);
        }
    }
}

extern "C" sl_status sl__cuda_pad(const sl__cuda_pad_desc *d, int n, int64_t max_elems,
                                  void *stream, sl_err *err) {
    if (n < 1 || max_elems < 1) return SL_OK;
    pad_kernel<<<sl__cuda_batch_grid(max_elems, n), SL__CUDA_THREADS, 0, (cudaStream_t)stream>>>(d,
                                                                                                 n);
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}
