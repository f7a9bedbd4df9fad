/* SPDX-License-Identifier: Apache-2.0 */
// reductions.*'s CUDA run: one block per output element (grid.x) and sample (grid.y); its threads
// accumulate strided parts of the reduced elements and merge them in shared memory, with the
// per-element rule of ops/reduce.h that the CPU run uses (integer sums and min/max give the same
// bits; double sums differ from the CPU's only by the order of their additions).
#include "core/cuda_check.h"
#include "core/cuda_launch.h"
#include "ops/reduce.h"

__global__ static void reduce_kernel(const sl__reduce_desc *d, int n, int op, int it, int ot,
                                     int ddof) {
    __shared__ sl__reduce_acc part[SL__CUDA_THREADS];
    for (int s = (int)blockIdx.y; s < n; s += (int)gridDim.y) {
        const sl__reduce_desc *q = &d[s];
        for (int64_t o = blockIdx.x; o < q->nout; o += gridDim.x) {
            int64_t base = sl__reduce_base(q, o);
            double m = 0;
            if (q->mean) m = ((const float *)q->mean)[o];
            sl__reduce_acc a;
            sl__reduce_acc_init(&a);
            for (int64_t r = threadIdx.x; r < q->count; r += blockDim.x)
                sl__reduce_add(&a, op, q->in, (sl_dtype)it, base + sl__reduce_at(q, r), m);
            part[threadIdx.x] = a;
            __syncthreads();
            for (int w = blockDim.x / 2; w > 0; w /= 2) {
                if ((int)threadIdx.x < w)
                    sl__reduce_merge(&part[threadIdx.x], &part[threadIdx.x + w], op, q->in,
                                     (sl_dtype)it);
                __syncthreads();
            }
            if (threadIdx.x == 0)
                sl__reduce_store(q, op, (sl_dtype)it, (sl_dtype)ot, ddof, o, &part[0]);
            __syncthreads();
        }
    }
}

extern "C" sl_status sl__cuda_reduce(const sl__reduce_desc *d, int n, int64_t max_out, int op,
                                     int in_dtype, int out_dtype, int ddof, void *stream,
                                     sl_err *err) {
    if (n < 1 || max_out < 1) return SL_OK;
    dim3 grid((unsigned)(max_out < 65535 ? max_out : 65535), (unsigned)(n < 65535 ? n : 65535));
    reduce_kernel<<<grid, SL__CUDA_THREADS, 0, (cudaStream_t)stream>>>(d, n, op, in_dtype,
                                                                       out_dtype, ddof);
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}
