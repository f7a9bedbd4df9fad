/* SPDX-License-Identifier: Apache-2.0 */
// normalize's CUDA run (normalize.c). Statistics: one block of threads per statistic (a position
// in the kept axes) and sample, or per statistic across the batch; each thread sums a fixed stride
// of the reduced elements in double and the block adds the partial sums in a fixed tree, so runs
// repeat to the bit (the CPU adds in element order instead: results agree to double rounding). Then
// one thread per element: (x - mean) * inv + shift, stored with operator/dtype_conv.h's rules.
#include "core/cuda_check.h"
#include "ops/normalize.h"
#include "core/cuda_launch.h"

#include "operator/dtype_conv.h"

// offset of index r in the dims (ext, stride) listed, the last fastest
__device__ static int64_t offset_of(int64_t r, int nd, const int64_t *ext, const int64_t *stride) {
    int64_t off = 0;
    for (int d = nd - 1; d >= 0; d--) {
        int64_t e = ext[d], q = r / e;
        off += (r - q * e) * stride[d];
        r = q;
    }
    return off;
}

// the block's sum of f(element) over the reduced elements of statistic p in samples [s0, s1)
template <typename F>
__device__ static double block_sum(const sl__cuda_norm_desc *d, int s0, int s1, int64_t p, F f) {
    __shared__ double part[SL__CUDA_THREADS];
    double acc = 0;
    for (int s = s0; s < s1; s++) {
        const sl__cuda_norm_desc &x = d[s];
        int64_t base = offset_of(p, x.nk, x.kext, x.kstride);
        for (int64_t r = threadIdx.x; r < x.nr; r += blockDim.x)
            acc += f(sl__dtype_conv_load(x.in, (sl_dtype)x.in_dtype,
                                         base + offset_of(r, x.nrd, x.rext, x.rstride)));
    }
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k /= 2) {
        if ((int)threadIdx.x < k) part[threadIdx.x] += part[threadIdx.x + k];
        __syncthreads();
    }
    double sum = part[0];
    __syncthreads();
    return sum;
}

// statistics p of sample group [s0, s1) (one sample, or the batch): mean and scale / stddev
__device__ static void stats_of(const sl__cuda_norm_desc *d, int s0, int s1, int64_t p,
                                const sl__cuda_norm_args a, double *mean, double *inv) {
    int64_t n = 0;
    for (int s = s0; s < s1; s++) n += d[s].nr;
    double m = d[s0].mean_given;
    if (!a.has_mean) m = n ? block_sum(d, s0, s1, p, [](double v) { return v; }) / (double)n : 0;
    double iv = d[s0].inv_given;
    if (!a.has_std) {
        double sq = block_sum(d, s0, s1, p, [m](double v) { return (v - m) * (v - m); });
        if (n <= a.ddof && a.eps == 0) {
            iv = 0;
        } else {
            double var = (n > a.ddof ? sq / (double)(n - a.ddof) : 0) + a.eps;
            iv = var > 0 ? a.scale / sqrt(var) : 0;
        }
    }
    if (threadIdx.x == 0) mean[p] = m, inv[p] = iv;
}

__global__ static void stats_kernel(const sl__cuda_norm_desc *d, int n, sl__cuda_norm_args a) {
    if (a.batch) { // one group: every sample
        for (int64_t p = blockIdx.x; p < d[0].np; p += gridDim.x)
            if (blockIdx.y == 0) stats_of(d, 0, n, p, a, d[0].mean, d[0].inv);
        return;
    }
    SL__CUDA_FOR_SAMPLES(s, n) {
        for (int64_t p = blockIdx.x; p < d[s].np; p += gridDim.x)
            stats_of(d, s, s + 1, p, a, d[s].mean, d[s].inv);
    }
}

__global__ static void apply_kernel(const sl__cuda_norm_desc *d, int n, double shift) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        const sl__cuda_norm_desc &x = d[s];
        SL__CUDA_FOR_ELEMS(e, x.n) {
            int64_t p = offset_of(e, x.nd, x.ext, x.pstride); // the element's statistic
            double v = sl__dtype_conv_load(x.in, (sl_dtype)x.in_dtype, e);
            sl__dtype_conv_store(x.out, (sl_dtype)x.out_dtype, e,
                                 (v - x.mean[p]) * x.inv[p] + shift);
        }
    }
}

extern "C" sl_status sl__cuda_normalize(const sl__cuda_norm_desc *d, int n, int64_t max_np,
                                        int64_t max_elems, const sl__cuda_norm_args *a,
                                        void *stream, sl_err *err) {
    if (n < 1) return SL_OK;
    cudaStream_t st = (cudaStream_t)stream;
    if (max_np > 0) {
        int64_t bx = max_np < 4096 ? max_np : 4096;
        dim3 grid((unsigned)bx, a->batch ? 1u : (unsigned)(n < 65535 ? n : 65535), 1);
        stats_kernel<<<grid, SL__CUDA_THREADS, 0, st>>>(d, n, *a);
        SL_CUDA_TRY(err, cudaGetLastError());
    }
    if (max_elems > 0) {
        apply_kernel<<<sl__cuda_batch_grid(max_elems, n), SL__CUDA_THREADS, 0, st>>>(d, n,
                                                                                     a->shift);
        SL_CUDA_TRY(err, cudaGetLastError());
    }
    return SL_OK;
}
