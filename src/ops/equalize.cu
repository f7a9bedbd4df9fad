/* SPDX-License-Identifier: Apache-2.0 */
// experimental.equalize's CUDA run: one block per channel plane counts its histogram in shared
// memory, one thread makes the lookup table (sl__equalize_lut, ops/equalize.h, the CPU run's
// rule), and the block maps the plane through it.
#include "core/cuda_check.h"
#include "core/cuda_launch.h"
#include "ops/equalize.h"

__global__ static void equalize_kernel(const sl__cuda_eq_plane *d, int planes) {
    __shared__ unsigned long long hist[256];
    __shared__ int64_t h64[256];
    __shared__ uint8_t lut[256];
    for (int q = blockIdx.x; q < planes; q += gridDim.x) {
        const sl__cuda_eq_plane &p = d[q];
        for (int v = threadIdx.x; v < 256; v += blockDim.x) hist[v] = 0;
        __syncthreads();
        for (int64_t k = threadIdx.x; k < p.n; k += blockDim.x)
            atomicAdd(&hist[p.in[p.start + k * p.stride]], 1ull);
        __syncthreads();
        if (threadIdx.x == 0) {
            for (int v = 0; v < 256; v++) h64[v] = (int64_t)hist[v];
            sl__equalize_lut(h64, p.n, lut);
        }
        __syncthreads();
        for (int64_t k = threadIdx.x; k < p.n; k += blockDim.x)
            p.out[p.start + k * p.stride] = lut[p.in[p.start + k * p.stride]];
        __syncthreads();
    }
}

extern "C" sl_status sl__cuda_equalize(const sl__cuda_eq_plane *d, int planes, void *stream,
                                       sl_err *err) {
    if (planes < 1) return SL_OK;
    int grid = planes < 65535 ? planes : 65535;
    equalize_kernel<<<grid, SL__CUDA_THREADS, 0, (cudaStream_t)stream>>>(d, planes);
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}
