/* SPDX-License-Identifier: Apache-2.0 */
// warp_affine and rotate's CUDA run: one thread per destination element, through
// ops/warp_affine.h's rule, the one the CPU run uses, so that both give the same bits.
#include "core/cuda_check.h"
#include "ops/warp_affine.h"
#include "core/cuda_launch.h"

#include "ops/warp_affine.h"

__global__ static void warp_kernel(const sl__cuda_warp_desc *d, int n, int it, int ot) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        const sl__cuda_warp_desc &x = d[s];
        SL__CUDA_FOR_ELEMS(e, x.t.od * x.t.oh * x.t.ow * x.t.c) { /* (od is 1 in 2D) */
            sl__warp_elem(&x.t, x.in, (sl_dtype)it, x.out, (sl_dtype)ot, e);
        }
    }
}

extern "C" sl_status sl__cuda_warp(const sl__cuda_warp_desc *d, int n, int64_t max_elems,
                                   int in_dtype, int out_dtype, void *stream, sl_err *err) {
    if (n < 1 || max_elems < 1) return SL_OK;
    warp_kernel<<<sl__cuda_batch_grid(max_elems, n), SL__CUDA_THREADS, 0, (cudaStream_t)stream>>>(
        d, n, in_dtype, out_dtype);
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}
