/* SPDX-License-Identifier: Apache-2.0 */
// The CUDA MLP's narrow layer: for a layer of at most SMALL_C outputs (the seed's 10 classes) a
// GEMM is mostly launch and tile overhead (two cuBLAS kernels for 4 MFLOP forward, one per product
// backward), so its products are done here, in float32 in every math mode, fused with what follows
// them: last_fwd_kernel (the product, bias, log-softmax, loss terms, dz, and the loss and bias
// gradient sums) and last_bwd_kernel (dw, da, act'(a_prev) and the previous layer's db), with
// their launches (mlp_pass.cu calls them).
#include "train/mlp_cuda.h"

#include <math.h>

#define LF_WARPS 8 // last_fwd_kernel: warps per block, each a slice of K
#define LF_KI    4 // k per lane: K <= LF_KMAX
#define LF_KMAX  (LF_WARPS * 32 * LF_KI)
#define LF_RB    2  // rows per block and round
#define LBWD_RG  16 // row groups of last_bwd_kernel (blockDim 32 x LBWD_RG)

// The last layer forward, for latency (a few rows per block, every load in flight at once, no
// shared-memory copy of w): z (rows, C) = a (rows, K; row pitch lda) @ w (K, C), K <= LF_KMAX.
// Warp v of the block holds, in registers, w's rows k = v*32*LF_KI + lane + 32 i (i < LF_KI);
// per round the block takes LF_RB rows, each warp sums its k-slice (a fixed butterfly per class)
// into shared memory, and warp rr then adds the LF_WARPS slices of row rr in warp order and
// does the arithmetic of logsoftmax_xent_kernel (z + b, log-softmax in place, with y dz), lane j
// holding class j. With y, each block adds its rows' dz (db) and losses in row order into
// bpart[block] (SMALL_C + 1 doubles: db in float arithmetic, the loss in double), and the block
// that finishes last (a counter, reset by that block) adds the blocks' sums in block order: db,
// *loss_sum and *loss_mean. Fixed orders throughout: the same bits on every run.
template <int CM>
__global__ void __launch_bounds__(LF_WARPS * 32)
    last_fwd_kernel(const float *a, int64_t lda, const float *w, const float *b, int64_t rows,
                    int K, int C, float *z, const float *y, int64_t ldy, float inv_b, float *dz,
                    double *bpart, double *loss_sum, float *loss_mean, float *db, unsigned *done) {
    __shared__ float part[LF_RB][LF_WARPS][CM];
    __shared__ double fin[LF_RB][SMALL_C + 1];
    __shared__ unsigned last;
    const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
    const int k0 = warp * 32 * LF_KI + lane;
    float wr[LF_KI][CM];
#pragma unroll
    for (int i = 0; i < LF_KI; i++)
#pragma unroll
        for (int c = 0; c < CM; c++) {
            const int k = k0 + 32 * i;
            wr[i][c] = k < K && c < C ? w[(int64_t)k * C + c] : 0.0f;
        }
    float dbp = 0.0f; // warp rr: its rows' dz[:, lane], in row order
    double lsp = 0.0; // and their losses (lane 0)
    for (int64_t r0 = (int64_t)blockIdx.x * LF_RB; r0 < rows; r0 += (int64_t)gridDim.x * LF_RB) {
        float av[LF_RB][LF_KI];
#pragma unroll
        for (int rr = 0; rr < LF_RB; rr++)
#pragma unroll
            for (int i = 0; i < LF_KI; i++) {
                const int k = k0 + 32 * i;
                av[rr][i] = r0 + rr < rows && k < K ? a[(r0 + rr) * lda + k] : 0.0f;
            }
#pragma unroll
        for (int rr = 0; rr < LF_RB; rr++) {
            float acc[CM];
#pragma unroll
            for (int c = 0; c < CM; c++) {
                acc[c] = 0.0f;
#pragma unroll
                for (int i = 0; i < LF_KI; i++) acc[c] = fmaf(av[rr][i], wr[i][c], acc[c]);
            }
#pragma unroll
            for (int c = 0; c < CM; c++)
                if (c < C) {
                    const float s = warp_sumf(acc[c]);
                    if (lane == 0) part[rr][warp][c] = s;
                }
        }
        __syncthreads();
        const int64_t r = r0 + warp;
        if (warp < LF_RB && r < rows) {
            const bool on = lane < C;
            float v = -INFINITY; // lane j: z[r, j] + b[j]
            if (on) {
                float s = part[warp][0][lane];
                for (int u = 1; u < LF_WARPS; u++) s += part[warp][u][lane];
                v = s + b[lane];
            }
            const float mx = warp_max(v);
            const double e = warp_sum(on ? exp((double)v - (double)mx) : 0.0);
            const float lse = (float)((double)mx + log(e));
            const float lp = v - lse;
            if (on) z[r * C + lane] = lp;
            if (y) {
                const float yv = on ? y[r * ldy + lane] : 0.0f;
                const float ysum = warp_sumf(yv);
                const double l = warp_sum(on ? (double)lp * (double)yv : 0.0);
                const float d = (expf(lp) * ysum - yv) * inv_b;
                if (on) {
                    dz[r * C + lane] = d;
                    dbp += d;
                }
                lsp -= l;
            }
        }
        __syncthreads(); // part is refilled next round
    }
    if (!y) return; // the same for the whole grid
    if (warp < LF_RB) {
        if (lane < C) fin[warp][lane] = dbp;
        if (lane == 0) fin[warp][SMALL_C] = lsp;
    }
    __syncthreads();
    const int t = threadIdx.x;
    const bool mine = t < C || t == SMALL_C;
    if (mine) {
        if (t == SMALL_C) {
            double s = fin[0][t];
            for (int rr = 1; rr < LF_RB; rr++) s += fin[rr][t];
            bpart[blockIdx.x * (SMALL_C + 1) + t] = s;
        } else {
            float s = (float)fin[0][t];
            for (int rr = 1; rr < LF_RB; rr++) s += (float)fin[rr][t];
            bpart[blockIdx.x * (SMALL_C + 1) + t] = s;
        }
    }
    __threadfence(); // this block's sums are visible to every block before the count
    __syncthreads();
    if (t == 0) last = atomicAdd(done, 1u) == gridDim.x - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    // one warp per sum: lane j adds blocks j, j+32, ... (8 loads in flight), then a fixed butterfly
    for (int c = warp; c <= SMALL_C; c += LF_WARPS) {
        if (c >= C && c != SMALL_C) continue; // the same for the whole warp
        double s = 0.0;
        float f = 0.0f;
        for (unsigned k0 = lane; k0 < gridDim.x; k0 += 32 * 8) {
            double v[8];
#pragma unroll
            for (int u = 0; u < 8; u++) {
                const unsigned k = k0 + 32 * u;
                v[u] = k < gridDim.x ? __ldcg(bpart + k * (SMALL_C + 1) + c) : 0.0;
            }
#pragma unroll
            for (int u = 0; u < 8; u++) {
                s += v[u];
                f += (float)v[u];
            }
        }
        if (c == SMALL_C) {
            s = warp_sum(s);
            if (lane == 0) {
                *loss_sum = s;
                *loss_mean = (float)(s / (double)rows);
            }
        } else {
            f = warp_sumf(f);
            if (lane == 0) db[c] = f;
        }
    }
    if (t == 0) *done = 0; // for the next launch
}

// The backward of a layer of C <= SMALL_C outputs and n inputs: gw (n, C) = a^T @ dz, a (rows, n;
// row pitch lda), dz (rows, C); with da: da (rows, n) = (dz @ w^T) * act'(a) and db (n,) its
// column sums -- act_grad_db_kernel's result, without the (k = C) GEMM before it. Block (32,
// LBWD_RG) covers 32 columns; thread (x, y) takes rows y, y+LBWD_RG, ... of column x (the dz row
// is one broadcast load per warp), then the partial sums of gw and db are added in row-group
// order (a fixed order: the same bits on every run). dab: da's bfloat16 shadow (BF16 mode) or NULL.
template <int CM>
__global__ void __launch_bounds__(32 * LBWD_RG)
    last_bwd_kernel(const float *dz, const float *a, int64_t lda, const float *w, int64_t rows,
                    int n, int C, int act, float *gw, float *da, float *db, bf16 *dab) {
    __shared__ float part[LBWD_RG][CM + 1][33]; // [.][CM][.]: db
    const int x = threadIdx.x, ty = threadIdx.y;
    const int j = blockIdx.x * 32 + x;
    float wj[CM], g[CM], sdb = 0.0f;
#pragma unroll
    for (int c = 0; c < CM; c++) {
        g[c] = 0.0f;
        wj[c] = j < n && c < C ? w[(int64_t)j * C + c] : 0.0f;
    }
    if (j < n)
        for (int64_t r = ty; r < rows; r += LBWD_RG) {
            const float av = a[r * lda + j];
            const float *dr = dz + r * C;
            float s = 0.0f;
#pragma unroll
            for (int c = 0; c < CM; c++)
                if (c < C) {
                    const float d = dr[c];
                    g[c] = fmaf(av, d, g[c]);
                    s = fmaf(d, wj[c], s);
                }
            if (da) {
                const float v = act_bwd(s, av, act);
                da[r * n + j] = v;
                if (dab) dab[r * n + j] = __float2bfloat16(v);
                sdb += v;
            }
        }
#pragma unroll
    for (int c = 0; c < CM; c++)
        if (c < C) part[ty][c][x] = g[c];
    part[ty][CM][x] = sdb;
    __syncthreads();
    if (j < n) add_groups<CM, LBWD_RG>(part, x, ty, C, da != NULL, j, gw, db);
}

// The last layer (n inputs, o outputs) forward goes through last_fwd_kernel: o narrow, and w
// fits the registers of one block.
int sl__mlp_narrow_fits(int n, int o) {
    return o <= SMALL_C && n <= LF_KMAX;
}

template <int CM>
static void launch_last_fwd(cuda_impl *c, const float *a, int64_t lda, const float *w,
                            const float *b, int64_t B, int K, int C, float *z, const float *y,
                            int64_t ldy, float *loss_mean, float *db) {
    const int64_t want = (B + LF_RB - 1) / LF_RB;
    const unsigned blocks = (unsigned)(want < c->lf_blocks ? want : c->lf_blocks);
    last_fwd_kernel<CM><<<blocks, LF_WARPS * 32, 0, c->stream>>>(
        a, lda, w, b, B, K, C, z, y, ldy, 1.0f / (float)B, c->dz[0], c->bpart, c->loss_sum,
        loss_mean, db, c->done);
}

// z (B, C) = log-softmax(a @ w + b); with y also dz[0], the row losses, the loss (sum and
// *loss_mean) and db (C,). C <= SMALL_C.
void sl__mlp_narrow_fwd(cuda_impl *c, const float *a, int64_t lda, const float *w, const float *b,
                        int64_t B, int K, int C, float *z, const float *y, int64_t ldy,
                        float *loss_mean, float *db) {
    if (C <= 8)
        launch_last_fwd<8>(c, a, lda, w, b, B, K, C, z, y, ldy, loss_mean, db);
    else if (C <= 10)
        launch_last_fwd<10>(c, a, lda, w, b, B, K, C, z, y, ldy, loss_mean, db);
    else
        launch_last_fwd<SMALL_C>(c, a, lda, w, b, B, K, C, z, y, ldy, loss_mean, db);
}

// gw (n, C) = a^T @ dz; with da, da = (dz @ w^T) * act'(a) and db its column sums. C <= SMALL_C.
void sl__mlp_narrow_bwd(cuda_impl *c, const float *dz, const float *a, int64_t lda, const float *w,
                        int64_t B, int n, int C, int act, float *gw, float *da, float *db,
                        bf16 *dab) {
    const dim3 threads(32, LBWD_RG);
    const unsigned blocks = (unsigned)((n + 31) / 32);
    if (C <= 8)
        last_bwd_kernel<8>
            <<<blocks, threads, 0, c->stream>>>(dz, a, lda, w, B, n, C, act, gw, da, db, dab);
    else if (C <= 10)
        last_bwd_kernel<10>
            <<<blocks, threads, 0, c->stream>>>(dz, a, lda, w, B, n, C, act, gw, da, db, dab);
    else
        last_bwd_kernel<SMALL_C>
            <<<blocks, threads, 0, c->stream>>>(dz, a, lda, w, B, n, C, act, gw, da, db, dab);
}
