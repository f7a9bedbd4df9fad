/* SPDX-License-Identifier: Apache-2.0 */
// The CUDA MLP's generic kernels (declared in mlp_cuda.h, launched by mlp_pass.cu and mlp.cu):
// bias + activation (float and float4), the bfloat16 conversions of BF16 mode, act' with the
// previous layer's bias gradient, log-softmax with cross-entropy and its gradient, the row losses,
// the fixed-order reductions of the loss and the last bias gradient, and the copy of a step's loss
// into the ring of posted losses. Element-wise kernels and reductions of any width; the narrow
// layer's own kernels are mlp_narrow.cu's and mlp_head.cu's.
#include "train/mlp_cuda.h"

#include <math.h>
#include <string.h>

// z (rows, o) = act(z + b): act 0 tanh, 1 relu; with zb (BF16 mode) also z's bfloat16 shadow
__global__ void bias_act_kernel(float *z, const float *b, int64_t n, int o, int act, bf16 *zb) {
    sl__pdl_wait();
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const float v = act_fwd(z[i] + b[i % o], act);
        z[i] = v;
        if (zb) zb[i] = __float2bfloat16(v);
    }
}

// Four floats as bfloat16, one 8-byte store (p 8-byte aligned).
__device__ __forceinline__ void store_bf16x4(bf16 *p, float4 v) {
    __nv_bfloat162 lo = __floats2bfloat162_rn(v.x, v.y), hi = __floats2bfloat162_rn(v.z, v.w);
    uint2 u;
    memcpy(&u.x, &lo, 4);
    memcpy(&u.y, &hi, 4);
    *(uint2 *)p = u;
}

// The same, 4 floats per thread: o % 4 == 0, z and b 16-byte aligned; n4 = n / 4, o4 = o / 4.
__global__ void bias_act4_kernel(float4 *z, const float4 *b, int64_t n4, int o4, int act,
                                 bf16 *zb) {
    sl__pdl_wait();
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4;
         i += (int64_t)gridDim.x * blockDim.x) {
        float4 v = z[i];
        const float4 bb = b[i % o4];
        v.x = act_fwd(v.x + bb.x, act);
        v.y = act_fwd(v.y + bb.y, act);
        v.z = act_fwd(v.z + bb.z, act);
        v.w = act_fwd(v.w + bb.w, act);
        z[i] = v;
        if (zb) store_bf16x4(zb + 4 * i, v);
    }
}

// BF16 mode's conversions at the start of a forward pass, in one launch: block r < rows takes
// row r of x (n floats at pitch ldx) into xb (packed); the blocks after it take p (np floats) into
// pb, grid-stride. vec: n, ldx and np are multiples of 4 and x, p 16-byte aligned (float4 loads).
__global__ void to_bf16_kernel(const float *x, int64_t ldx, int n, int64_t rows, bf16 *xb,
                               const float *p, int64_t np, bf16 *pb, int vec) {
    if (blockIdx.x < rows) {
        const float *xr = x + blockIdx.x * ldx;
        bf16 *d = xb + blockIdx.x * (int64_t)n;
        if (vec)
            for (int i = threadIdx.x; i < n / 4; i += blockDim.x)
                store_bf16x4(d + 4 * i, ((const float4 *)xr)[i]);
        else
            for (int i = threadIdx.x; i < n; i += blockDim.x) d[i] = __float2bfloat16(xr[i]);
        return;
    }
    const int64_t first = (blockIdx.x - rows) * (int64_t)blockDim.x + threadIdx.x;
    const int64_t step = (gridDim.x - rows) * (int64_t)blockDim.x;
    if (vec)
        for (int64_t i = first; i < np / 4; i += step)
            store_bf16x4(pb + 4 * i, ((const float4 *)p)[i]);
    else
        for (int64_t i = first; i < np; i += step) pb[i] = __float2bfloat16(p[i]);
}

#define AGDB_U 8 // rows a thread loads before it stores any

// da (rows, n) *= act'(a) in place, and db[j] = sum over rows of the result: block (32, 32)
// covers 32 columns, thread (x, y) sums rows y, y+32, ... of column x, then the 32 partial sums
// are added in row-group order (a fixed order: the same bits on every run). dab: da's bfloat16
// shadow (BF16 mode) or NULL. A thread loads AGDB_U rows of da and a before it stores the first
// (a store may alias a later load, so the compiler would not hoist the loads itself): one memory
// round trip instead of one a row -- the seed's batch of 200 is 7 rows a thread.
__global__ void __launch_bounds__(32 * AGDB_ROWS)
    act_grad_db_kernel(float *da, const float *a, int64_t rows, int n, int act, float *db,
                       bf16 *dab) {
    __shared__ float part[AGDB_ROWS][33];
    const int j = blockIdx.x * 32 + threadIdx.x;
    float s = 0.0f;
    sl__pdl_wait();
    const int64_t step = (int64_t)AGDB_ROWS * n; // from one of the thread's rows to the next
    if (j < n)
        for (int64_t r0 = threadIdx.y; r0 < rows; r0 += (int64_t)AGDB_ROWS * AGDB_U) {
            const int64_t left = (rows - r0 + AGDB_ROWS - 1) / AGDB_ROWS;
            const int cnt = left < AGDB_U ? (int)left : AGDB_U;
            const int64_t i0 = r0 * n + j;
            float dv[AGDB_U], av[AGDB_U];
#pragma unroll
            for (int u = 0; u < AGDB_U; u++)
                if (u < cnt) {
                    dv[u] = da[i0 + u * step];
                    av[u] = a[i0 + u * step];
                }
#pragma unroll
            for (int u = 0; u < AGDB_U; u++)
                if (u < cnt) {
                    const float d = act_bwd(dv[u], av[u], act);
                    da[i0 + u * step] = d;
                    if (dab) dab[i0 + u * step] = __float2bfloat16(d);
                    s += d;
                }
        }
    part[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && j < n) {
        float t = part[0][threadIdx.x];
        for (int k = 1; k < AGDB_ROWS; k++) t += part[k][threadIdx.x];
        db[j] = t;
    }
}

// One warp per row of z (rows, C): z += b, then z = z - logsumexp(z) in place. With labels y
// (rows, C, row pitch ldy): row_loss[r] = -sum(lp * y) and dz = (exp(lp) * sum(y) - y) * inv_b,
// with dzb (BF16 mode) also dz's bfloat16 shadow.
__global__ void logsoftmax_xent_kernel(float *z, const float *b, int64_t rows, int C,
                                       const float *y, int64_t ldy, float inv_b, float *dz,
                                       double *row_loss, bf16 *dzb) {
    const int64_t r = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x & 31;
    if (r >= rows) return; // the whole warp leaves together
    float *row = z + r * C;
    float mx = -INFINITY;
    for (int j = lane; j < C; j += 32) {
        float v = row[j] + b[j];
        row[j] = v;
        mx = fmaxf(mx, v);
    }
    mx = warp_max(mx);
    double s = 0;
    for (int j = lane; j < C; j += 32) s += exp((double)row[j] - (double)mx);
    s = warp_sum(s);
    const float lse = (float)((double)mx + log(s));
    for (int j = lane; j < C; j += 32) row[j] -= lse;
    if (!y) return;
    const float *yr = y + r * ldy;
    float ysum = 0;
    double l = 0;
    for (int j = lane; j < C; j += 32) {
        ysum += yr[j];
        l += (double)row[j] * (double)yr[j];
    }
    ysum = warp_sumf(ysum);
    l = warp_sum(l);
    for (int j = lane; j < C; j += 32) {
        const float d = (expf(row[j]) * ysum - yr[j]) * inv_b;
        dz[r * C + j] = d;
        if (dzb) dzb[r * C + j] = __float2bfloat16(d);
    }
    if (lane == 0) row_loss[r] = -l;
}

// After a forward pass: row_loss[r] = -sum(lp * y) (dz NULL), or dz = (exp(lp)*sum(y) - y)*inv_b
// (with dzb, BF16 mode, also its bfloat16 shadow).
__global__ void xent_rows_kernel(const float *lp, int64_t rows, int C, const float *y, int64_t ldy,
                                 float inv_b, float *dz, double *row_loss, bf16 *dzb) {
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < rows;
         r += (int64_t)gridDim.x * blockDim.x) {
        const float *yr = y + r * ldy;
        const float *row = lp + r * C;
        float ysum = 0;
        double l = 0;
        for (int j = 0; j < C; j++) {
            ysum += yr[j];
            l += (double)row[j] * (double)yr[j];
        }
        if (dz)
            for (int j = 0; j < C; j++) {
                const float d = (expf(row[j]) * ysum - yr[j]) * inv_b;
                dz[r * C + j] = d;
                if (dzb) dzb[r * C + j] = __float2bfloat16(d);
            }
        else
            row_loss[r] = -l;
    }
}

// One block of 256: *sum = sum(row_loss) in a fixed order; mean_out (may be NULL) = sum / rows.
__global__ void loss_reduce_kernel(const double *row_loss, int64_t rows, double *sum,
                                   float *mean_out) {
    __shared__ double part[256];
    double s = 0;
    for (int64_t r = threadIdx.x; r < rows; r += 256) s += row_loss[r];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int w = 128; w > 0; w >>= 1) {
        if ((int)threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        *sum = part[0];
        if (mean_out) *mean_out = (float)(part[0] / (double)rows);
    }
}

__global__ void loss_db_kernel(const double *row_loss, int64_t rows, int C, const float *dz,
                               double *sum, float *mean_out, float *db) {
    loss_db_block<256>(row_loss, rows, C, dz, sum, mean_out, db);
}

// Copies the loss into the ring slot of the next post (seq counts the posts), so that a graph
// replayed every step leaves each step's loss in its own slot.
__global__ void loss_out_kernel(const float *loss, loss_slot *ring, unsigned *seq) {
    const unsigned s = *seq;
    ring[s % NLOSS].loss = *loss;
    ring[s % NLOSS].seq = s;
    *seq = s + 1;
}
