/* SPDX-License-Identifier: Apache-2.0 */
// bb_flip's CUDA run: one thread per box of every sample, mirrored by the rule the CPU run uses
// (bb_flip.h).
#include "core/cuda_check.h"
#include "ops/bb_flip.h"
#include "core/cuda_launch.h"

__global__ static void bb_flip_kernel(const sl__cuda_bb_flip_desc *d, int n) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        int fh = d[s].flags & 1, fv = (d[s].flags >> 1) & 1;
        SL__CUDA_FOR_ELEMS(k, d[s].n) {
            float b[4];
            for (int j = 0; j < 4; j++) b[j] = d[s].in[4 * k + j];
            if (fh) sl__bb_flip_axis(&b[0], &b[2], d[s].ltrb);
            if (fv) sl__bb_flip_axis(&b[1], &b[3], d[s].ltrb);
            for (int j = 0; j < 4; j++) d[s].out[4 * k + j] = b[j];
        }
    }
}

extern "C" sl_status sl__cuda_bb_flip(const sl__cuda_bb_flip_desc *d, int n, int64_t max_boxes,
                                      void *stream, sl_err *err) {
    if (n < 1 || max_boxes < 1) return SL_OK;
    bb_flip_kernel<<<sl__cuda_batch_grid(max_boxes, n), SL__CUDA_THREADS, 0,
                     (cudaStream_t)stream>>>(d, n);
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}
