/* SPDX-License-Identifier: Apache-2.0 */
// The CUDA MLP's training-step output head: in a training step the narrow last layer's forward and
// backward are per row up to the product the step waits for next (da of the layer before it), so
// one kernel (head_kernel) does them, a block per row across the whole GPU, and a second kernel
// (head_sums_kernel), beside that product, makes the sums over rows. Here are both kernels, their
// launches (mlp_pass.cu calls them) and the check of which models they take.
#include "train/mlp_cuda.h"

#include <math.h>

#define HD_THREADS 256 // head_kernel: thread t holds columns t + HD_THREADS * i (i < 4) of a row
#define HD_KMAX    (4 * HD_THREADS)
#ifndef HD_RB
#define HD_RB 1 // rows per block and round (2: 1-2 us slower at batch 200)
#endif
#define HD_BLOCKS 264 // most blocks (more rows: more rounds)
#define HS_RG     16  // row groups of head_sums_kernel (32 columns x HS_RG threads a block)

// The training step's output head, rows of a (rows, K) holding the previous layer's product z:
//   a = act(z + b_prev), written back over z (bias_act4_kernel's arithmetic);
//   the last layer: lp = log-softmax(a @ w + b) (w (K, C)), the row's loss -sum(lp * y) into
//   row_loss, and dz = (softmax * sum(y) - y) * inv_b into dzl (rows, C) (last_fwd_kernel's
//   arithmetic);
//   the previous layer's gradient da = (dz @ w^T) * act'(a) (last_bwd_kernel's), into da and,
//   with dab (BF16 mode), its bfloat16 shadow.
// The block first copies w into shared memory (16-byte loads: w 16-byte aligned, K % 4 == 0,
// K <= HD_KMAX); thread t then holds a's columns and w's rows k = t + HD_THREADS * i, i < 4, so
// every access to a and da is coalesced. Per round a block takes HD_RB rows: each warp sums its
// threads' products per (row, class) by a fixed butterfly, warp rr adds the warps' sums in warp
// order and does row rr's log-softmax, lane j holding class j. The sums over rows are
// head_sums_kernel's. Fixed orders throughout: the same bits on every run.
template <int CM>
__global__ void __launch_bounds__(HD_THREADS)
    head_kernel(float *a, const float *b_prev, int act, const float *w, const float *b,
                int64_t rows, int K, int C, float *lp, const float *y, int64_t ldy, float inv_b,
                float *da, bf16 *dab, float *dzl, double *row_loss) {
    constexpr int W4 = (HD_KMAX * CM / 4 + HD_THREADS - 1) / HD_THREADS; // float4s of w a thread
    extern __shared__ float4 sw4[];                                      // w, K * C floats
    __shared__ float red[HD_THREADS / 32][HD_RB][CM];
    __shared__ float dzs[HD_RB][CM];
    const int t = threadIdx.x, warp = t >> 5, lane = t & 31;
    const int64_t stride = (int64_t)gridDim.x * HD_RB;
    // every load a round needs is issued before the first use of any: z (this round's rows),
    // the bias, this warp's row of y (warps < HD_RB), and, in the first round, w
    float z[HD_RB][4], bp[4], yv = 0.0f;
    const float bl = lane < C ? b[lane] : 0.0f;
    auto load_round = [&](int64_t r0) {
#pragma unroll
        for (int rr = 0; rr < HD_RB; rr++)
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int k = t + HD_THREADS * i;
                z[rr][i] = k < K && r0 + rr < rows ? a[(r0 + rr) * K + k] : 0.0f;
            }
        if (warp < HD_RB && lane < C && r0 + warp < rows) yv = y[(r0 + warp) * ldy + lane];
    };
    // the parameters are no earlier kernel's output in this step: loaded before the wait for the
    // product (programmatic launch), while it finishes
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int k = t + HD_THREADS * i;
        bp[i] = k < K ? b_prev[k] : 0.0f;
    }
    {
        const int n4 = K * C / 4;
        float4 wt[W4];
#pragma unroll
        for (int j = 0; j < W4; j++)
            if (t + HD_THREADS * j < n4) wt[j] = ((const float4 *)w)[t + HD_THREADS * j];
        sl__pdl_wait();
        load_round((int64_t)blockIdx.x * HD_RB);
#pragma unroll
        for (int j = 0; j < W4; j++)
            if (t + HD_THREADS * j < n4) sw4[t + HD_THREADS * j] = wt[j];
    }
    __syncthreads();
    const float *sw = (const float *)sw4;
    float wv[4][CM];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int k = t + HD_THREADS * i;
#pragma unroll
        for (int c = 0; c < CM; c++) wv[i][c] = k < K && c < C ? sw[k * C + c] : 0.0f;
    }
    for (int64_t r0 = (int64_t)blockIdx.x * HD_RB; r0 < rows; r0 += stride) {
        float h[HD_RB][4];
#pragma unroll
        for (int rr = 0; rr < HD_RB; rr++)
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int k = t + HD_THREADS * i;
                const bool on = k < K && r0 + rr < rows;
                h[rr][i] = on ? act_fwd(z[rr][i] + bp[i], act) : 0.0f;
                if (on) a[(r0 + rr) * K + k] = h[rr][i];
            }
        const float yr = yv;
        if (r0 + stride < rows) load_round(r0 + stride); // the next round's, in flight meanwhile
#pragma unroll
        for (int rr = 0; rr < HD_RB; rr++)
#pragma unroll
            for (int c = 0; c < CM; c++) {
                float acc = 0.0f;
#pragma unroll
                for (int i = 0; i < 4; i++) acc = fmaf(h[rr][i], wv[i][c], acc);
                if (c < C) {
                    const float s = warp_sumf(acc);
                    if (lane == 0) red[warp][rr][c] = s;
                }
            }
        __syncthreads();
        if (warp < HD_RB) {
            const int64_t r = r0 + warp;
            const bool on = lane < C;
            float d = 0.0f;
            if (r < rows) {          // the same for the whole warp
                float v = -INFINITY; // lane j: z[r, j] + b[j]
                if (on) {
                    float s = red[0][warp][lane];
                    for (int u = 1; u < HD_THREADS / 32; u++) s += red[u][warp][lane];
                    v = s + bl;
                }
                const float mx = warp_max(v);
                const double e = warp_sum(on ? exp((double)v - (double)mx) : 0.0);
                const float lse = (float)((double)mx + log(e));
                const float lpv = v - lse;
                const float ysum = warp_sumf(yr);
                const double l = warp_sum(on ? (double)lpv * (double)yr : 0.0);
                if (on) {
                    d = (expf(lpv) * ysum - yr) * inv_b;
                    lp[r * C + lane] = lpv;
                    dzl[r * C + lane] = d;
                }
                if (lane == 0) row_loss[r] = -l;
            }
            if (lane < CM) dzs[warp][lane] = d; // 0 past the last row and class
        }
        __syncthreads();
#pragma unroll
        for (int rr = 0; rr < HD_RB; rr++) {
            const int64_t r = r0 + rr;
            float dz[CM];
#pragma unroll
            for (int c = 0; c < CM; c++) dz[c] = dzs[rr][c];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int k = t + HD_THREADS * i;
                float s = 0.0f;
#pragma unroll
                for (int c = 0; c < CM; c++)
                    if (c < C) s = fmaf(dz[c], wv[i][c], s);
                const float o = act_bwd(s, h[rr][i], act);
                if (k < K && r < rows) {
                    da[r * K + k] = o;
                    if (dab) dab[r * K + k] = __float2bfloat16(o);
                }
            }
        }
        __syncthreads(); // red and dzs are refilled next round
    }
}

// The sums over rows after head_kernel: gw (K, C) = a^T @ dzl and db_prev (K) = da's column sums
// -- block j < ceil(K / 32) takes 32 columns, thread (x, y) rows y, y + HS_RG, ... of column
// 32 j + x, the row groups' partial sums then added in group order -- and, in the last block, db
// (C) = dzl's column sums and the loss (loss_db_block): *loss_sum, *loss_mean = sum / rows and,
// with ring, the copy into the ring's next slot (loss_out_kernel's work). Blocks of 32 * HS_RG.
template <int CM>
__global__ void __launch_bounds__(32 * HS_RG)
    head_sums_kernel(const float *a, const float *dzl, const float *da, const double *row_loss,
                     int64_t rows, int K, int C, float *gw, float *db_prev, float *db,
                     double *loss_sum, float *loss_mean, loss_slot *ring, unsigned *seq) {
    if (blockIdx.x == gridDim.x - 1) {
        loss_db_block<32 * HS_RG>(row_loss, rows, C, dzl, loss_sum, loss_mean, db);
        if (threadIdx.x == 0 && ring) { // *loss_mean is this thread's own write
            const unsigned s = *seq;
            ring[s % NLOSS].loss = *loss_mean;
            ring[s % NLOSS].seq = s;
            *seq = s + 1;
        }
        return;
    }
    __shared__ float part[HS_RG][CM + 1][33]; // [.][CM][.]: db_prev
    const int x = threadIdx.x & 31, ty = threadIdx.x >> 5;
    const int k = blockIdx.x * 32 + x;
    float g[CM], sdb = 0.0f;
#pragma unroll
    for (int c = 0; c < CM; c++) g[c] = 0.0f;
    if (k < K)
        for (int64_t r = ty; r < rows; r += HS_RG) {
            const float av = a[r * K + k];
            sdb += da[r * K + k];
            const float *dr = dzl + r * C;
#pragma unroll
            for (int c = 0; c < CM; c++)
                if (c < C) g[c] = fmaf(av, dr[c], g[c]);
        }
#pragma unroll
    for (int c = 0; c < CM; c++) part[ty][c][x] = g[c];
    part[ty][CM][x] = sdb;
    __syncthreads();
    if (k < K) add_groups<CM, HS_RG>(part, x, ty, C, true, k, gw, db_prev);
}

// The training step's last layer goes through head_kernel: two layers or more, the last narrow,
// the one before it at most HD_KMAX wide in fours, and the last weights 16-byte aligned (copied
// into shared memory in float4s).
int sl__mlp_head_fits(const sl_mlp *m) {
    const int L = m->nlayers - 1;
    if (L < 1) return 0;
    const int K = m->cfg.sizes[L], C = m->cfg.sizes[L + 1];
    return C <= SMALL_C && K % 4 == 0 && K <= HD_KMAX && m->w_off[L] % 4 == 0;
}

sl_status sl__mlp_head_init(const sl_mlp *m, sl_err *err) {
    if (!sl__mlp_head_fits(m)) return SL_OK;
    const int L = m->nlayers - 1, K = m->cfg.sizes[L], C = m->cfg.sizes[L + 1];
    const int smem = K * C * (int)sizeof(float); // up to 64 KB: past the default 48
    if (C <= 8)
        SL_CUDA_TRY(err, cudaFuncSetAttribute(head_kernel<8>,
                                              cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    else if (C <= 10)
        SL_CUDA_TRY(err, cudaFuncSetAttribute(head_kernel<10>,
                                              cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    else
        SL_CUDA_TRY(err, cudaFuncSetAttribute(head_kernel<SMALL_C>,
                                              cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    return SL_OK;
}

template <int CM>
static void launch_head(const sl_mlp *m, cuda_impl *c, int64_t B, const float *y, int64_t ldy,
                        unsigned blocks) {
    const int L = m->nlayers - 1, K = m->cfg.sizes[L], C = m->cfg.sizes[L + 1];
    sl__launch_pdl(c->pdl, head_kernel<CM>, dim3(blocks), dim3(HD_THREADS),
                   (size_t)K * C * sizeof(float), c->stream, c->act[L - 1],
                   m->params + m->b_off[L - 1], m->cfg.activation, m->params + m->w_off[L],
                   m->params + m->b_off[L], B, K, C, c->act[L], y, ldy, 1.0f / (float)B, c->dz[1],
                   c->dzbf[1], c->dzl, c->row_loss);
}

static unsigned head_blocks(int64_t B) {
    const int64_t want = (B + HD_RB - 1) / HD_RB;
    return (unsigned)(want < HD_BLOCKS ? want : HD_BLOCKS);
}

// The head of a training step (sl__mlp_head_fits): act[L-1] holds the previous layer's product;
// leaves the log-probabilities in act[L], the previous layer's dz in dz[1], the last layer's in dzl
// and the row losses in row_loss.
void sl__mlp_head_run(const sl_mlp *m, cuda_impl *c, int64_t B, const float *y, int64_t ldy) {
    const int C = m->cfg.sizes[m->nlayers];
    const unsigned blocks = head_blocks(B);
    if (C <= 8)
        launch_head<8>(m, c, B, y, ldy, blocks);
    else if (C <= 10)
        launch_head<10>(m, c, B, y, ldy, blocks);
    else
        launch_head<SMALL_C>(m, c, B, y, ldy, blocks);
}

template <int CM>
static void launch_head_sums(const sl_mlp *m, cuda_impl *c, int64_t B, cudaStream_t s,
                             loss_slot *ring) {
    const int L = m->nlayers - 1, K = m->cfg.sizes[L], C = m->cfg.sizes[L + 1];
    head_sums_kernel<CM><<<(unsigned)((K + 31) / 32 + 1), 32 * HS_RG, 0, s>>>(
        c->act[L - 1], c->dzl, c->dz[1], c->row_loss, B, K, C, m->grads + m->w_off[L],
        m->grads + m->b_off[L - 1], m->grads + m->b_off[L], c->loss_sum, m->grads + m->nparams,
        ring, c->loss_seq);
}

// After sl__mlp_head_run(), on s: the last layer's gw and db, the previous layer's db, the loss
// (sum, and the batch mean in grads[nparams]) and, with ring, the loss's copy into the ring.
void sl__mlp_head_sums(const sl_mlp *m, cuda_impl *c, int64_t B, cudaStream_t s, loss_slot *ring) {
    const int C = m->cfg.sizes[m->nlayers];
    if (C <= 8)
        launch_head_sums<8>(m, c, B, s, ring);
    else if (C <= 10)
        launch_head_sums<10>(m, c, B, s, ring);
    else
        launch_head_sums<SMALL_C>(m, c, B, s, ring);
}
