/* SPDX-License-Identifier: Apache-2.0 */
// The CUDA backend of sl_mlp (the table sl__mlp_cuda_backend, chosen by mlp.c for CUDA devices).
// Parameters and gradients live in one flat device buffer each, in the CPU backend's row-major
// layout: x (B, n) @ w (n, o). cuBLAS is column-major, so every product is computed transposed:
// a row-major (B, o) matrix is a column-major (o, B) one, and z^T = w^T x^T becomes
// gemm(N, N, o, B, n, w, x). Per layer l (n inputs, o outputs):
//   forward   z = x @ w (cuBLAS), then one kernel adds the bias and applies tanh/relu; the last
//             layer's kernel adds the bias and does log-softmax (+ cross-entropy + its gradient
//             (softmax * sum(y) - y) / B, one warp per row, logsumexp and loss in double), and one
//             block reduces the batch loss in a fixed order and sums the last bias gradient
//   backward  dw = a_prev^T @ dz (gemm N,T) on a second stream, in parallel with
//             da = dz @ w^T (gemm T,N) on the model's stream, followed by one kernel that
//             multiplies by act'(a_prev) and sums the columns into the previous layer's db (a
//             fixed-order reduction, no GEMV with a ones vector)
// A narrow layer (at most SMALL_C = 16 outputs: the seed's 10-class last layer) skips cuBLAS,
// whose kernels cost more than the few MFLOP they do there: forward, one kernel computes the
// product (each warp a slice of K, w in registers, a few rows per block), the bias, the
// log-softmax, the loss terms and dz, and the loss and the bias gradient (per block in row order,
// then, in the block that finishes last, over blocks in block order); backward, one kernel
// computes dw, da, act'(a_prev) and the previous layer's db. These products are float32 in every
// math mode.
//
// In a training step (labels given) whose last layer is narrow, one kernel (head_kernel) goes
// further: it adds the previous layer's bias and activation as it reads that layer's product (no
// bias_act kernel there), and per row does the last layer's forward, loss terms and dz, and the
// previous layer's dz = (dz @ w^T) * act' -- all that the next product (cuBLAS, da of the layer
// before) waits for, a block per row (HD_RB) over the whole GPU. The sums over rows (the last dw
// and db, the previous db, the loss) are head_sums_kernel's, on the second stream, beside that
// product; it reads the activations and both dz the head wrote. A one-GPU
// step with an optimiser updates in two parts, each as soon as nothing reads its weights any more:
// the layers from 1 up on the second stream, once layer 1's da product has read w_1; the first
// layer last, on the model's stream (instead of one update after the whole pass).
//
// The batch loss is left, as the batch mean, in the extra gradient slot grads[nparams], so the
// trainer's single all-reduce averages it too. A posted step copies it (a one-thread kernel) into
// the next slot of a small ring in mapped pinned memory and records that slot's event, so the
// losses of steps queued back to back are read later, each when its own step is done. The cuBLAS
// products use float32, TF32 or bfloat16 tensor-core inputs (sl_mlp_config.math); all other
// arithmetic is float32. In BF16 mode the products read bfloat16 copies (pbf, xbf, abf, dzbf):
// the parameters and the input are converted at the start of every forward pass, the activations
// and gradients are written in both types by the kernels that make them. On compute capability
// 9.0 on, the step's own kernels that follow a kernel on the same stream are programmatic
// dependent launches (sl__launch_pdl), which hides most of the gap between the two. With cuda_graph
// set, forward + backward -- and for the trainer's one-GPU step also the optimiser update and the
// copy of the loss into the ring -- for one (batch, optimiser) key is captured once as a CUDA graph
// and replayed; a few keys are cached (LRU), growing the scratch buffers drops every graph, and a
// failed capture falls back to plain launches for good. Graphs are keyed by the inputs' addresses.
// Inputs met for the first time (among the last NSEEN) are first copied into the model's own
// buffers, outside the graph, and the graph that reads those runs; inputs on the model's device met
// again -- the slots of a pipeline's ring, a benchmark's one batch -- get a graph that reads them
// in place (captured at the second meeting, ~0.2 ms), which saves the copy: the seed's step at
// batch 200 on an H200, 3 us queued back to back, 7-10 us waited for. An address that never repeats
// costs no capture.
//
// Every entry sets the model's device first, so any thread may call.
#include "core/alloc.h"
#include "core/log.h"
#include "core/cuda_check.h"
#include "train/cublas_dl.h"
#include "core/cuda_launch.h"
#include "train/mlp.h"
#include "train/optim.h"

#include <cuda_bf16.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NGRAPHS         8 // a pipeline's ring of batch slots (5 or 6), each with its graph, + spares
#define NSEEN           8 // input addresses remembered, for graphs that read the inputs in place
#define NLOSS           4 // losses posted and not yet taken, at most
#define WORKSPACE_BYTES ((size_t)32 << 20)

typedef __nv_bfloat16 bf16;

struct graph_entry {
    cudaGraphExec_t exec;
    const void *x, *y;
    const sl_optim *o; // the step's optimiser (its update and the loss copy are in the graph)
    int64_t rows, ldx, ldy;
    uint64_t used;
};

// One posted loss: the batch-mean loss and its sequence number (the post's index), written by
// loss_out_kernel into pinned memory.
struct loss_slot {
    float loss;
    unsigned seq;
};

struct cuda_impl {
    cudaStream_t stream;
    cudaStream_t side;        // the weight gradients, in parallel with the backward chain
    const sl__cublas_api *cb; // cuBLAS, loaded at run time
    cublasHandle_t blas, blas_side;
    sl__devpool *pool;
    void *workspace, *workspace_side;
    cudaEvent_t ev_fork, ev_dw[SL__MLP_MAX_LAYERS];
    // Gradient buckets: a step without an optimiser (the trainer's all-reduced step) marks
    // ev_bucket once the gradients from w_off[1] on -- every layer above the first, and the loss
    // slot -- are complete, so that their all-reduce (ordered on `early`, which waits for it) runs
    // while the first layer's gradients are still being computed.
    cudaEvent_t ev_bucket;
    cudaStream_t early;
    int mark_bucket;                // the step being queued marks ev_bucket
    int bucket_marked;              // the step last queued did
    loss_slot *loss_ring;           // pinned and mapped: the last NLOSS losses written
    loss_slot *loss_ring_dev;       // the same memory as the device sees it
    unsigned *loss_seq;             // (1,): loss_out_kernel runs so far (the next slot)
    cudaEvent_t loss_ev[NLOSS];     // recorded after each posted loss, index posted % NLOSS
    uint64_t post_seq[NLOSS];       // the loss_out run each post waits for, index posted % NLOSS
    uint64_t launched;              // loss_out runs queued so far (the next one's seq)
    uint64_t posted, taken;         // losses posted and taken (host counts)
    int loss_queued;                // the step just queued wrote its loss already (in its graph)
    float *act[SL__MLP_MAX_LAYERS]; // act[l]: (rows, sizes[l+1]); the last holds logprobs
    float *dz[2];                   // (rows, max size) each, backward ping-pong
    double *row_loss;               // (rows,)
    float *x_in, *y_in;             // (rows, sizes[0]) / (rows, classes): the inputs, for graphs
    double *loss_sum;               // (1,)
    unsigned *done;                 // (1,): last_fwd_kernel's count of finished blocks, 0 between
    double *bpart;                  // (lf_blocks, SMALL_C + 1): last_fwd_kernel's per-block sums
    int lf_blocks;                  // last_fwd_kernel's most blocks (each loads all of w once)
    float *dzl;                     // (rows, sizes[-1]): head_kernel's dz of the last layer
    cudaEvent_t ev_join;            // the side stream's end, joined back at the end of backward
    cudaEvent_t ev_upd;             // the upper layers' update may start (their weights are read)
    // SL_MATH_BF16: the products read bfloat16 copies of their operands (all NULL in other
    // modes): the parameters and the input, converted at the start of every forward pass, and
    // shadows of act and dz that the kernels writing those fill beside the float32 values
    bf16 *pbf;                     // (nparams,)
    bf16 *xbf;                     // (rows, sizes[0]), packed
    bf16 *abf[SL__MLP_MAX_LAYERS]; // act[l]'s, hidden layers
    bf16 *dzbf[2];                 // dz[i]'s
    cudaEvent_t ev_conv;           // the weights from layer 1 up are converted (on the side stream)
    int64_t rows;                  // capacity in rows
    int graphs_off;                // a capture failed: plain launches from then on
    int pdl;                       // programmatic dependent launches (sl__pdl_ok)
    graph_entry graphs[NGRAPHS];
    const void *seen[NSEEN][2]; // the last NSEEN (x, y) staged, round robin
    int seen_next;
    uint64_t tick;
};

static cuda_impl *impl_of(const sl_mlp *m) {
    return (cuda_impl *)m->impl;
}

static sl_status err_status(sl_err *err, sl_status fallback) {
    return err && err->status != SL_OK ? err->status : fallback;
}

// ---- kernels ------------------------------------------------------------------------------------

static unsigned blocks_for(int64_t n, int threads) {
    int64_t b = (n + threads - 1) / threads;
    if (b > 65535 * 16) b = 65535 * 16;
    return (unsigned)(b < 1 ? 1 : b);
}

__device__ __forceinline__ float act_fwd(float v, int act) {
    return act == SL_ACT_TANH ? tanhf(v) : (v > 0.0f ? v : 0.0f);
}

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

// da (n,) *= act'(a): tanh 1 - a^2, relu a > 0
__device__ __forceinline__ float act_bwd(float da, float a, int act) {
    return act == SL_ACT_TANH ? da * (1.0f - a * a) : (a > 0.0f ? da : 0.0f);
}

#define AGDB_ROWS 32 // row groups per block of act_grad_db_kernel (blockDim 32 x AGDB_ROWS)
#define AGDB_U    8  // rows a thread loads before it stores any

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

__device__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ double warp_sum(double v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ float warp_sumf(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
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

// One block of NT after the last layer: with row_loss, *sum = sum(row_loss) in a fixed order and
// mean_out = sum / rows (as loss_reduce_kernel); db[j] = sum over rows of dz (rows, C)[:, j], one
// warp per column (lanes over rows, then a fixed butterfly).
template <int NT>
__device__ void loss_db_block(const double *row_loss, int64_t rows, int C, const float *dz,
                              double *sum, float *mean_out, float *db) {
    __shared__ double part[NT];
    if (row_loss) {
        double s = 0;
        for (int64_t r = threadIdx.x; r < rows; r += NT) s += row_loss[r];
        part[threadIdx.x] = s;
        __syncthreads();
        for (int w = NT / 2; w > 0; w >>= 1) {
            if ((int)threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            *sum = part[0];
            if (mean_out) *mean_out = (float)(part[0] / (double)rows);
        }
    }
    const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
    for (int j = warp; j < C; j += NT / 32) {
        float s = 0.0f;
        for (int64_t r = lane; r < rows; r += 32) s += dz[r * C + j];
        s = warp_sumf(s);
        if (lane == 0) db[j] = s;
    }
}

__global__ void loss_db_kernel(const double *row_loss, int64_t rows, int C, const float *dz,
                               double *sum, float *mean_out, float *db) {
    loss_db_block<256>(row_loss, rows, C, dz, sum, mean_out, db);
}

// ---- the narrow last layer ----------------------------------------------------------------------
// For a layer of at most SMALL_C outputs (the seed's 10 classes) a GEMM is mostly launch and tile
// overhead (two cuBLAS kernels for 4 MFLOP forward, one per product backward), so its products
// are done here, in float32 in every math mode, fused with what follows them.

#define SMALL_C  16 // widest layer the kernels below take (CM: 8, 10 or 16)
#define LF_WARPS 8  // last_fwd_kernel: warps per block, each a slice of K
#define LF_KI    4  // k per lane: K <= LF_KMAX
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

// The end of last_bwd_kernel and head_sums_kernel: thread (x, ty) of a block over 32 columns adds
// the RG row groups' partial sums part[.][c][x] of column j in group order -- gw's C classes and,
// with want_db, db (slot CM) -- and writes gw (n, C) and db[j].
template <int CM, int RG>
__device__ void add_groups(const float (*part)[CM + 1][33], int x, int ty, int C, bool want_db,
                           int64_t j, float *gw, float *db) {
    for (int c = ty; c <= CM; c += RG) {
        if (c < C || (c == CM && want_db)) {
            float t = part[0][c][x];
            for (int k = 1; k < RG; k++) t += part[k][c][x];
            if (c == CM)
                db[j] = t;
            else
                gw[j * C + c] = t;
        }
    }
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

// ---- the training step's output head ------------------------------------------------------------
// In a training step the narrow last layer's forward and backward are per row up to the product
// the step waits for next (da of the layer before it), so one kernel does them, a block per row
// across the whole GPU, and a second kernel, beside that product, makes the sums over rows.

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

// ---- buffers ------------------------------------------------------------------------------------

static void drop_graphs(cuda_impl *c) {
    for (int i = 0; i < NGRAPHS; i++) {
        if (c->graphs[i].exec) cudaGraphExecDestroy(c->graphs[i].exec);
        memset(&c->graphs[i], 0, sizeof c->graphs[i]);
    }
}

static void free_scratch(cuda_impl *c) {
    for (int l = 0; l < SL__MLP_MAX_LAYERS; l++) {
        sl__devpool_free(c->pool, c->act[l]);
        c->act[l] = NULL;
    }
    for (int l = 0; l < SL__MLP_MAX_LAYERS; l++) {
        sl__devpool_free(c->pool, c->abf[l]);
        c->abf[l] = NULL;
    }
    for (int i = 0; i < 2; i++) {
        sl__devpool_free(c->pool, c->dz[i]);
        sl__devpool_free(c->pool, c->dzbf[i]);
        c->dz[i] = NULL;
        c->dzbf[i] = NULL;
    }
    sl__devpool_free(c->pool, c->xbf);
    c->xbf = NULL;
    sl__devpool_free(c->pool, c->row_loss);
    sl__devpool_free(c->pool, c->dzl);
    c->row_loss = NULL;
    c->dzl = NULL;
    sl__devpool_free(c->pool, c->x_in);
    sl__devpool_free(c->pool, c->y_in);
    c->x_in = c->y_in = NULL;
    c->rows = 0;
}

static sl_status reserve(sl_mlp *m, cuda_impl *c, int64_t rows, sl_err *err) {
    if (rows <= c->rows) return SL_OK;
    // buffers in flight are freed to a pool other streams draw from: finish first (the side
    // stream's work is always joined back into the model's stream)
    SL_CUDA_TRY(err, cudaStreamSynchronize(c->stream));
    drop_graphs(c);
    free_scratch(c);
    int maxn = 0;
    for (int l = 0; l <= m->nlayers; l++) maxn = SL_MAX(maxn, m->cfg.sizes[l]);
    sl_status st = SL_OK;
    for (int l = 0; l < m->nlayers && st == SL_OK; l++) {
        c->act[l] = (float *)sl__devpool_alloc(
            c->pool, (size_t)rows * (size_t)m->cfg.sizes[l + 1] * sizeof(float), err);
        if (!c->act[l]) st = err_status(err, SL_ENOMEM);
    }
    for (int i = 0; i < 2 && st == SL_OK; i++) {
        c->dz[i] =
            (float *)sl__devpool_alloc(c->pool, (size_t)rows * (size_t)maxn * sizeof(float), err);
        if (!c->dz[i]) st = err_status(err, SL_ENOMEM);
    }
    if (st == SL_OK) {
        c->row_loss = (double *)sl__devpool_alloc(c->pool, (size_t)rows * sizeof(double), err);
        c->dzl = (float *)sl__devpool_alloc(
            c->pool, (size_t)rows * (size_t)m->cfg.sizes[m->nlayers] * sizeof(float), err);
        if (!c->row_loss || !c->dzl) st = err_status(err, SL_ENOMEM);
    }
    if (st == SL_OK && m->cfg.math == SL_MATH_BF16) { // the bfloat16 copies of the operands
        const size_t r = (size_t)rows;
        c->xbf =
            (bf16 *)sl__devpool_alloc(c->pool, r * (size_t)m->cfg.sizes[0] * sizeof(bf16), err);
        if (!c->xbf) st = err_status(err, SL_ENOMEM);
        for (int l = 0; l + 1 < m->nlayers && st == SL_OK; l++) {
            c->abf[l] = (bf16 *)sl__devpool_alloc(
                c->pool, r * (size_t)m->cfg.sizes[l + 1] * sizeof(bf16), err);
            if (!c->abf[l]) st = err_status(err, SL_ENOMEM);
        }
        for (int i = 0; i < 2 && st == SL_OK; i++) {
            c->dzbf[i] = (bf16 *)sl__devpool_alloc(c->pool, r * (size_t)maxn * sizeof(bf16), err);
            if (!c->dzbf[i]) st = err_status(err, SL_ENOMEM);
        }
    }
    if (st == SL_OK) {
        const size_t n = (size_t)m->cfg.sizes[0], C = (size_t)m->cfg.sizes[m->nlayers];
        c->x_in = (float *)sl__devpool_alloc(c->pool, (size_t)rows * n * sizeof(float), err);
        c->y_in = c->x_in
                      ? (float *)sl__devpool_alloc(c->pool, (size_t)rows * C * sizeof(float), err)
                      : NULL;
        if (!c->x_in || !c->y_in) st = err_status(err, SL_ENOMEM);
    }
    if (st != SL_OK) {
        free_scratch(c);
        sl_err_prefix(err, "MLP device scratch for %lld rows: ", (long long)rows);
        return st;
    }
    c->rows = rows;
    return SL_OK;
}

// Copies the loss into the ring slot of the next post (seq counts the posts), so that a graph
// replayed every step leaves each step's loss in its own slot.
__global__ void loss_out_kernel(const float *loss, loss_slot *ring, unsigned *seq) {
    const unsigned s = *seq;
    ring[s % NLOSS].loss = *loss;
    ring[s % NLOSS].seq = s;
    *seq = s + 1;
}

// ---- the backend --------------------------------------------------------------------------------

// The training step's last layer goes through head_kernel: two layers or more, the last narrow,
// the one before it at most HD_KMAX wide in fours, and the last weights 16-byte aligned (copied
// into shared memory in float4s).
static int head_fits(const sl_mlp *m) {
    const int L = m->nlayers - 1;
    if (L < 1) return 0;
    const int K = m->cfg.sizes[L], C = m->cfg.sizes[L + 1];
    return C <= SMALL_C && K % 4 == 0 && K <= HD_KMAX && m->w_off[L] % 4 == 0;
}

static void cu_release(sl_mlp *m) {
    cuda_impl *c = impl_of(m);
    if (c) {
        cudaSetDevice(m->dev.id);
        if (c->stream) cudaStreamSynchronize(c->stream);
        if (c->side) cudaStreamSynchronize(c->side);
        if (c->early) cudaStreamSynchronize(c->early);
        drop_graphs(c);
        if (c->pool) free_scratch(c);
        if (c->blas) c->cb->destroy(c->blas);
        if (c->blas_side) c->cb->destroy(c->blas_side);
        if (c->ev_fork) cudaEventDestroy(c->ev_fork);
        if (c->ev_bucket) cudaEventDestroy(c->ev_bucket);
        if (c->ev_join) cudaEventDestroy(c->ev_join);
        if (c->ev_upd) cudaEventDestroy(c->ev_upd);
        if (c->ev_conv) cudaEventDestroy(c->ev_conv);
        for (int l = 0; l < SL__MLP_MAX_LAYERS; l++)
            if (c->ev_dw[l]) cudaEventDestroy(c->ev_dw[l]);
        if (c->side) cudaStreamDestroy(c->side);
        if (c->early) cudaStreamDestroy(c->early);
        if (c->stream) cudaStreamDestroy(c->stream);
        for (int i = 0; i < NLOSS; i++)
            if (c->loss_ev[i]) cudaEventDestroy(c->loss_ev[i]);
        if (c->loss_ring) cudaFreeHost(c->loss_ring);
        if (c->pool) {
            sl__devpool_free(c->pool, c->workspace);
            sl__devpool_free(c->pool, c->workspace_side);
            sl__devpool_free(c->pool, c->loss_sum);
            sl__devpool_free(c->pool, c->done);
            sl__devpool_free(c->pool, c->loss_seq);
            sl__devpool_free(c->pool, c->bpart);
            sl__devpool_free(c->pool, c->pbf);
            sl__devpool_free(c->pool, m->params);
            sl__devpool_free(c->pool, m->grads);
        }
        (void)cudaGetLastError();
        free(c);
    }
    m->impl = NULL;
    m->params = m->grads = NULL;
    m->stream = NULL;
}

static sl_status cu_init(sl_mlp *m, sl_err *err) {
    cuda_impl *c = (cuda_impl *)sl__calloc(1, sizeof(cuda_impl), err);
    if (!c) return SL_ENOMEM;
    m->impl = c;
    SL_CUDA_TRY(err, cudaSetDevice(m->dev.id));
    c->pool = sl__devpool_get(m->dev.id, err);
    if (!c->pool) return err_status(err, SL_ECUDA);
    SL_CUDA_TRY(err, cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    m->stream = c->stream;
    SL_CUDA_TRY(err, cudaStreamCreateWithFlags(&c->side, cudaStreamNonBlocking));
    SL_CUDA_TRY(err, cudaEventCreateWithFlags(&c->ev_fork, cudaEventDisableTiming));
    SL_CUDA_TRY(err, cudaEventCreateWithFlags(&c->ev_bucket, cudaEventDisableTiming));
    SL_CUDA_TRY(err, cudaEventCreateWithFlags(&c->ev_join, cudaEventDisableTiming));
    SL_CUDA_TRY(err, cudaEventCreateWithFlags(&c->ev_upd, cudaEventDisableTiming));
    SL_CUDA_TRY(err, cudaEventCreateWithFlags(&c->ev_conv, cudaEventDisableTiming));
    SL_CUDA_TRY(err, cudaStreamCreateWithFlags(&c->early, cudaStreamNonBlocking));
    for (int l = 0; l < m->nlayers; l++)
        SL_CUDA_TRY(err, cudaEventCreateWithFlags(&c->ev_dw[l], cudaEventDisableTiming));
    const cublasMath_t math =
        m->cfg.math == SL_MATH_TF32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH;
    const sl__cublas_api *cb = c->cb = sl__cublas(err);
    if (!cb) return SL_ECUDA;
    SL_CUBLAS_TRY(err, cb, cb->create(&c->blas));
    SL_CUBLAS_TRY(err, cb, cb->set_stream(c->blas, c->stream));
    SL_CUBLAS_TRY(err, cb, cb->set_math_mode(c->blas, math));
    SL_CUBLAS_TRY(err, cb, cb->create(&c->blas_side));
    SL_CUBLAS_TRY(err, cb, cb->set_stream(c->blas_side, c->side));
    SL_CUBLAS_TRY(err, cb, cb->set_math_mode(c->blas_side, math));
    // workspaces of our own: cuBLAS allocates nothing while a graph is being captured
    c->workspace = sl__devpool_alloc(c->pool, WORKSPACE_BYTES, err);
    c->workspace_side = sl__devpool_alloc(c->pool, WORKSPACE_BYTES, err);
    c->loss_sum = (double *)sl__devpool_alloc(c->pool, sizeof(double), err);
    c->done = (unsigned *)sl__devpool_alloc(c->pool, sizeof(unsigned), err);
    const size_t bytes = (size_t)m->nparams * sizeof(float);
    m->params = (float *)sl__devpool_alloc(c->pool, bytes, err);
    m->grads = (float *)sl__devpool_alloc(c->pool, bytes + sizeof(float), err); // + the loss
    if (!c->workspace || !c->workspace_side || !c->loss_sum || !c->done || !m->params || !m->grads)
        return err_status(err, SL_ENOMEM);
    if (m->cfg.math == SL_MATH_BF16) {
        c->pbf = (bf16 *)sl__devpool_alloc(c->pool, (size_t)m->nparams * sizeof(bf16), err);
        if (!c->pbf) return err_status(err, SL_ENOMEM);
    }
    c->loss_seq = (unsigned *)sl__devpool_alloc(c->pool, sizeof(unsigned), err);
    if (!c->loss_seq) return err_status(err, SL_ENOMEM);
    SL_CUDA_TRY(err, cudaHostAlloc((void **)&c->loss_ring, NLOSS * sizeof(loss_slot),
                                   cudaHostAllocMapped | cudaHostAllocPortable));
    SL_CUDA_TRY(err, cudaHostGetDevicePointer((void **)&c->loss_ring_dev, c->loss_ring, 0));
    for (int i = 0; i < NLOSS; i++)
        SL_CUDA_TRY(err, cudaEventCreateWithFlags(&c->loss_ev[i], cudaEventDisableTiming));
    SL_CUBLAS_TRY(err, cb, cb->set_workspace(c->blas, c->workspace, WORKSPACE_BYTES));
    SL_CUBLAS_TRY(err, cb, cb->set_workspace(c->blas_side, c->workspace_side, WORKSPACE_BYTES));
    SL_CUDA_TRY(err, cudaMemsetAsync(m->grads, 0, bytes + sizeof(float), c->stream));
    SL_CUDA_TRY(err, cudaMemsetAsync(c->done, 0, sizeof(unsigned), c->stream));
    SL_CUDA_TRY(err, cudaMemsetAsync(c->loss_seq, 0, sizeof(unsigned), c->stream));
    int nsm = 0;
    SL_CUDA_TRY(err, cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, m->dev.id));
    c->lf_blocks = 2 * (nsm > 0 ? nsm : 1);
    c->pdl = sl__pdl_ok(act_grad_db_kernel); // the model's kernels share one build
    c->bpart = (double *)sl__devpool_alloc(
        c->pool, (size_t)c->lf_blocks * (SMALL_C + 1) * sizeof(double), err);
    if (!c->bpart) return err_status(err, SL_ENOMEM);
    if (head_fits(m)) {
        const int L = m->nlayers - 1, K = m->cfg.sizes[L], C = m->cfg.sizes[L + 1];
        const int smem = K * C * (int)sizeof(float); // up to 64 KB: past the default 48
        if (C <= 8)
            SL_CUDA_TRY(err,
                        cudaFuncSetAttribute(head_kernel<8>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        else if (C <= 10)
            SL_CUDA_TRY(err,
                        cudaFuncSetAttribute(head_kernel<10>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        else
            SL_CUDA_TRY(err,
                        cudaFuncSetAttribute(head_kernel<SMALL_C>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    }
    SL_CUDA_TRY(err, cudaStreamSynchronize(c->stream));
    return SL_OK;
}

static sl_status cu_upload(sl_mlp *m, float *dst, const float *host, int64_t n, sl_err *err) {
    cuda_impl *c = impl_of(m);
    SL_CUDA_TRY(err, cudaSetDevice(m->dev.id));
    if (n)
        SL_CUDA_TRY(err, cudaMemcpyAsync(dst, host, (size_t)n * sizeof(float),
                                         cudaMemcpyHostToDevice, c->stream));
    SL_CUDA_TRY(err, cudaStreamSynchronize(c->stream));
    return SL_OK;
}

static sl_status cu_download(const sl_mlp *m, float *host, const float *src, int64_t n,
                             sl_err *err) {
    cuda_impl *c = impl_of(m);
    SL_CUDA_TRY(err, cudaSetDevice(m->dev.id));
    if (n)
        SL_CUDA_TRY(err, cudaMemcpyAsync(host, src, (size_t)n * sizeof(float),
                                         cudaMemcpyDeviceToHost, c->stream));
    SL_CUDA_TRY(err, cudaStreamSynchronize(c->stream));
    return SL_OK;
}

static sl_status cu_sync(const sl_mlp *m, sl_err *err) {
    SL_CUDA_TRY(err, cudaSetDevice(m->dev.id));
    SL_CUDA_TRY(err, cudaStreamSynchronize(impl_of(m)->stream));
    return SL_OK;
}

// C (col-major mm x nn, ldc, float32) = op(A) op(B), in the model's math mode: A and B are
// float32 (FP32, TF32), or bfloat16 (BF16: the copies op_w, op_in and op_dz give), the sums
// float32.
static sl_status gemm(const sl_mlp *m, cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                      int mm, int nn, int kk, const void *A, int lda, const void *B, int ldb,
                      float *C, int ldc, sl_err *err) {
    const float alpha = 1.0f, beta = 0.0f;
    const cublasComputeType_t ct =
        m->cfg.math == SL_MATH_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    const cudaDataType in = m->cfg.math == SL_MATH_BF16 ? CUDA_R_16BF : CUDA_R_32F;
    const sl__cublas_api *cb = impl_of(m)->cb;
    SL_CUBLAS_TRY(err, cb,
                  cb->gemm_ex(h, ta, tb, mm, nn, kk, &alpha, A, in, lda, B, in, ldb, &beta, C,
                              CUDA_R_32F, ldc, ct, CUBLAS_GEMM_DEFAULT));
    return SL_OK;
}

static int ld_of(const sl_tensor *t) {
    return (int)(t->strides[0] / (int64_t)sizeof(float));
}

// What a product reads, in the model's math mode (float32, or the bfloat16 copies): layer l's
// weights; layer l's input (x for l = 0: its copy is packed, *ld gets the pitch in elements);
// dz[i].
static const void *op_w(const sl_mlp *m, int l) {
    const cuda_impl *c = impl_of(m);
    return c->pbf ? (const void *)(c->pbf + m->w_off[l]) : (const void *)(m->params + m->w_off[l]);
}
static const void *op_in(const sl_mlp *m, const sl_tensor *x, int l, int *ld) {
    const cuda_impl *c = impl_of(m);
    *ld = l == 0 && !c->pbf ? ld_of(x) : m->cfg.sizes[l];
    if (l == 0) return c->pbf ? (const void *)c->xbf : x->data;
    return c->pbf ? (const void *)c->abf[l - 1] : (const void *)c->act[l - 1];
}
static const void *op_dz(const cuda_impl *c, int i) {
    return c->pbf ? (const void *)c->dzbf[i] : (const void *)c->dz[i];
}

// to_bf16_kernel's blocks for np parameters: one float4 a thread, at most 4 blocks an SM's worth
static unsigned pblocks(int64_t np) {
    const int64_t b = (np / 4 + 255) / 256;
    return (unsigned)(b < 1 ? 1 : b > 132 * 8 ? 132 * 8 : b);
}

// BF16 mode, the start of a forward pass over x (B rows): x and the parameters into their
// bfloat16 copies (the parameters may have changed since the last pass: an optimiser, a
// set_params, an all-reduce write them in place). The input and the first layer's weights go
// first, on the model's stream; in a capture the other layers' weights are converted on the side
// stream meanwhile, and ev_conv marks them done (the product of layer 1 waits for it).
static sl_status convert_operands(sl_mlp *m, const sl_tensor *x, int fork, sl_err *err) {
    cuda_impl *c = impl_of(m);
    const int64_t B = x->shape[0], n = m->cfg.sizes[0], ldx = ld_of(x);
    const int64_t split = fork ? m->w_off[1] : m->nparams;
    const int vec = n % 4 == 0 && ldx % 4 == 0 && split % 4 == 0 &&
                    ((uintptr_t)x->data & 15) == 0 && ((uintptr_t)m->params & 15) == 0;
    to_bf16_kernel<<<(unsigned)B + pblocks(split), 256, 0, c->stream>>>(
        (const float *)x->data, ldx, (int)n, B, c->xbf, m->params, split, c->pbf, vec);
    SL_CUDA_TRY(err, cudaGetLastError());
    if (split == m->nparams) return SL_OK;
    SL_CUDA_TRY(err, cudaEventRecord(c->ev_fork, c->stream));
    SL_CUDA_TRY(err, cudaStreamWaitEvent(c->side, c->ev_fork, 0));
    const int64_t rest = m->nparams - split;
    const int vec1 = split % 4 == 0 && rest % 4 == 0 && ((uintptr_t)m->params & 15) == 0;
    to_bf16_kernel<<<pblocks(rest), 256, 0, c->side>>>(NULL, 0, 0, 0, NULL, m->params + split, rest,
                                                       c->pbf + split, vec1);
    SL_CUDA_TRY(err, cudaGetLastError());
    SL_CUDA_TRY(err, cudaEventRecord(c->ev_conv, c->side));
    return SL_OK;
}

// The last layer (n inputs, o outputs) forward goes through last_fwd_kernel: o narrow, and w
// fits the registers of one block.
static int fused_fwd(int n, int o) {
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
static void last_fwd(cuda_impl *c, const float *a, int64_t lda, const float *w, const float *b,
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
static void last_bwd(cuda_impl *c, const float *dz, const float *a, int64_t lda, const float *w,
                     int64_t B, int n, int C, int act, float *gw, float *da, float *db, bf16 *dab) {
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

// The head of a training step (head_fits): act[L-1] holds the previous layer's product; leaves
// the log-probabilities in act[L], the previous layer's dz in dz[1], the last layer's in dzl and
// the row losses in row_loss.
static void head(const sl_mlp *m, cuda_impl *c, int64_t B, const float *y, int64_t ldy) {
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

// After head(), on s: the last layer's gw and db, the previous layer's db, the loss (sum, and the
// batch mean in grads[nparams]) and, with ring, the loss's copy into the ring.
static void head_sums(const sl_mlp *m, cuda_impl *c, int64_t B, cudaStream_t s, loss_slot *ring) {
    const int C = m->cfg.sizes[m->nlayers];
    if (C <= 8)
        launch_head_sums<8>(m, c, B, s, ring);
    else if (C <= 10)
        launch_head_sums<10>(m, c, B, s, ring);
    else
        launch_head_sums<SMALL_C>(m, c, B, s, ring);
}

// Enqueues the forward pass over x (B rows). With y, also the loss (sum into c->loss_sum, batch
// mean into grads[nparams]) and the last layer's bias gradient, and either (head_fits) head_kernel
// -- the last layer's backward up to the previous layer's dz, whose sums enqueue_backward adds --
// or the last layer's gradient dz into dz[0]; *headed (may be NULL) says which.
static sl_status enqueue_forward(sl_mlp *m, const sl_tensor *x, const sl_tensor *y, int *headed,
                                 sl_err *err) {
    cuda_impl *c = impl_of(m);
    const int64_t B = x->shape[0];
    const float *a = (const float *)x->data;
    int lda = ld_of(x);
    const int use_head = y && head_fits(m);
    if (headed) *headed = use_head;
    int conv_side = 0; // BF16: the side stream converts the upper weights (not yet joined)
    if (c->pbf) {
        cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
        SL_CUDA_TRY(err, cudaStreamIsCapturing(c->stream, &cs));
        conv_side = cs == cudaStreamCaptureStatusActive && m->nlayers > 1;
        SL_TRY(convert_operands(m, x, conv_side, err));
    }
    for (int l = 0; l < m->nlayers; l++) {
        const int n = m->cfg.sizes[l], o = m->cfg.sizes[l + 1];
        const float *w = m->params + m->w_off[l], *b = m->params + m->b_off[l];
        float *z = c->act[l];
        if (use_head && l + 1 == m->nlayers) {
            head(m, c, B, (const float *)y->data, ld_of(y));
            SL_CUDA_TRY(err, cudaGetLastError());
            break;
        }
        if (l + 1 == m->nlayers && fused_fwd(n, o)) { // the product and all that follows it
            last_fwd(c, a, lda, w, b, B, n, o, z, y ? (const float *)y->data : NULL,
                     y ? ld_of(y) : 0, m->grads + m->nparams, m->grads + m->b_off[l]);
            SL_CUDA_TRY(err, cudaGetLastError());
            break;
        }
        // z^T (o, B) = w^T (o, n) @ a^T (n, B)
        if (l > 0 && conv_side) { // layer l's weights converted on the side
            SL_CUDA_TRY(err, cudaStreamWaitEvent(c->stream, c->ev_conv, 0));
            conv_side = 0;
        }
        int ld_in = 0;
        const void *in = op_in(m, x, l, &ld_in);
        SL_TRY(gemm(m, c->blas, CUBLAS_OP_N, CUBLAS_OP_N, o, (int)B, n, op_w(m, l), o, in, ld_in, z,
                    o, err));
        if (use_head && l + 2 == m->nlayers) {
            // head_kernel adds the bias and applies the activation as it reads z
        } else if (l + 1 < m->nlayers) {
            if (o % 4 == 0 && (((uintptr_t)z | (uintptr_t)b) & 15) == 0)
                sl__launch_pdl(c->pdl, bias_act4_kernel, dim3(blocks_for(B * o / 4, 256)),
                               dim3(256), 0, c->stream, (float4 *)z, (const float4 *)b, B * o / 4,
                               o / 4, m->cfg.activation, c->abf[l]);
            else
                sl__launch_pdl(c->pdl, bias_act_kernel, dim3(blocks_for(B * o, 256)), dim3(256), 0,
                               c->stream, z, b, B * o, o, m->cfg.activation, c->abf[l]);
        } else {
            const unsigned blocks = (unsigned)((B * 32 + 255) / 256);
            logsoftmax_xent_kernel<<<blocks, 256, 0, c->stream>>>(
                z, b, B, o, y ? (const float *)y->data : NULL, y ? ld_of(y) : 0, 1.0f / (float)B,
                c->dz[0], c->row_loss, c->dzbf[0]);
            if (y) // the loss, and the last layer's bias gradient
                loss_db_kernel<<<1, 256, 0, c->stream>>>(c->row_loss, B, o, c->dz[0], c->loss_sum,
                                                         m->grads + m->nparams,
                                                         m->grads + m->b_off[l]);
        }
        SL_CUDA_TRY(err, cudaGetLastError());
        a = z;
        lda = o;
    }
    if (conv_side) SL_CUDA_TRY(err, cudaStreamWaitEvent(c->stream, c->ev_conv, 0)); // joined back
    return SL_OK;
}

// Enqueues the backward pass from dz[0] (B, C) into m->grads (the last layer's bias gradient is
// already there). A layer of at most SMALL_C outputs (the last layer) is one last_bwd_kernel on the
// model's stream: its weight gradient, da, act'(a_prev) and the previous layer's db together. For
// a wider layer l, in a graph capture, the weight gradient runs on the side stream, forked after
// dz_l is ready, while the model's stream goes on with da = dz_l @ w_l^T and the fused
// act'/bias-gradient kernel: the graph gets two branches. dz ping-pongs between two buffers, so
// before da overwrites the buffer that layer l+1's weight gradient reads, the model's stream waits
// for that product if it ran on the side; at the end it waits for the side stream's last product
// (joining the branch back). Plain launches are bound by the host's launch rate, so they stay on
// the model's stream (the same products, the same bits).
// Records ev_bucket after the work queued on s (as an event node, inside a capture).
static sl_status mark_bucket(cuda_impl *c, cudaStream_t s, int capturing, sl_err *err) {
    if (capturing)
        SL_CUDA_TRY(err, cudaEventRecordWithFlags(c->ev_bucket, s, cudaEventRecordExternal));
    else
        SL_CUDA_TRY(err, cudaEventRecord(c->ev_bucket, s));
    return SL_OK;
}

// With o (the one-GPU step), o's update split in two, each part once nothing reads its weights: the
// layers from 1 up (their gradients all queued, and layer 1's da product read w_1) on the side
// stream beside the rest of the backward pass, then layer 0 at the end. The scalars are copied
// before the first part.
static sl_status update_upper(sl_mlp *m, sl_optim *o, int fork, int *side_used, sl_err *err) {
    cuda_impl *c = impl_of(m);
    SL_TRY(sl__optim_cuda_copy_args(o, c->stream, err));
    cudaStream_t s = c->stream;
    if (fork) {
        SL_CUDA_TRY(err, cudaEventRecord(c->ev_upd, c->stream));
        SL_CUDA_TRY(err, cudaStreamWaitEvent(c->side, c->ev_upd, 0));
        s = c->side;
        *side_used = 1;
    }
    return sl__optim_cuda_update(o, m->params, m->grads, m->w_off[1], m->nparams - m->w_off[1], s,
                                 err);
}

// headed: the forward pass ran head_kernel (its sums are added here, and with opt the loss is
// copied into the ring by the same kernel).
static sl_status enqueue_backward(sl_mlp *m, const sl_tensor *x, int64_t B, sl_optim *opt,
                                  int headed, sl_err *err) {
    cuda_impl *c = impl_of(m);
    int cur = 0;
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    SL_CUDA_TRY(err, cudaStreamIsCapturing(c->stream, &cs));
    const int fork = cs == cudaStreamCaptureStatusActive;
    cudaEvent_t side_last = NULL; // the side stream's last product, not yet waited for
    int top = m->nlayers - 1;     // the layer to start from
    int side_used = 0;            // work was queued on the side stream (to be joined back)
    if (headed) {                 // the head's sums over rows, beside the next product
        const int L = top;
        cudaStream_t s = c->stream;
        if (fork) {
            SL_CUDA_TRY(err, cudaEventRecord(c->ev_fork, c->stream));
            SL_CUDA_TRY(err, cudaStreamWaitEvent(c->side, c->ev_fork, 0));
            s = c->side;
            side_used = 1;
        }
        head_sums(m, c, B, s, opt ? c->loss_ring_dev : NULL);
        SL_CUDA_TRY(err, cudaGetLastError());
        if (L == 1 && c->mark_bucket) SL_TRY(mark_bucket(c, s, fork, err));
        if (L == 1 && opt) SL_TRY(update_upper(m, opt, fork, &side_used, err));
        top = L - 1;
        cur = 1;
    }
    for (int l = top; l >= 0; l--) {
        const int n = m->cfg.sizes[l], o = m->cfg.sizes[l + 1];
        const float *a_prev = l == 0 ? (const float *)x->data : c->act[l - 1];
        const int lda = l == 0 ? ld_of(x) : n;
        float *gw = m->grads + m->w_off[l];
        const float *w = m->params + m->w_off[l];
        const float *dz = c->dz[cur];
        float *da = l == 0 ? NULL : c->dz[1 - cur];
        if (o <= SMALL_C) {
            if (da && side_last) { // layer l+1's weight gradient on the side reads the da buffer
                SL_CUDA_TRY(err, cudaStreamWaitEvent(c->stream, side_last, 0));
                side_last = NULL;
            }
            last_bwd(c, dz, a_prev, lda, w, B, n, o, m->cfg.activation, gw, da,
                     da ? m->grads + m->b_off[l - 1] : NULL, da ? c->dzbf[1 - cur] : NULL);
            SL_CUDA_TRY(err, cudaGetLastError());
            if (l == 1 && c->mark_bucket) SL_TRY(mark_bucket(c, c->stream, fork, err));
            if (l == 1 && opt) SL_TRY(update_upper(m, opt, fork, &side_used, err));
            if (l == 0) break;
            cur = 1 - cur;
            continue;
        }
        // dw (n, o) row-major = (o, n) col-major = dz^T (o, B) @ a_prev (B, n), on the side --
        // but for the first layer of a step with its update, which ends the step on the main
        // stream anyway (the side stream has the upper layers' update)
        const int on_side = fork && !(opt && l == 0);
        if (on_side) {
            SL_CUDA_TRY(err, cudaEventRecord(c->ev_fork, c->stream));
            SL_CUDA_TRY(err, cudaStreamWaitEvent(c->side, c->ev_fork, 0));
            side_used = 1;
        }
        int ld_in = 0;
        const void *in = op_in(m, x, l, &ld_in);
        SL_TRY(gemm(m, on_side ? c->blas_side : c->blas, CUBLAS_OP_N, CUBLAS_OP_T, o, n, (int)B,
                    op_dz(c, cur), o, in, ld_in, gw, o, err));
        if (on_side) SL_CUDA_TRY(err, cudaEventRecord(c->ev_dw[l], c->side));
        if (l == 1 && c->mark_bucket) SL_TRY(mark_bucket(c, fork ? c->side : c->stream, fork, err));
        if (l == 0) {
            side_last = on_side ? c->ev_dw[l] : NULL;
            break;
        }
        // da^T (n, B) = w (n, o) @ dz^T (o, B), then times act'(a_prev), and db of layer l-1
        if (side_last) SL_CUDA_TRY(err, cudaStreamWaitEvent(c->stream, side_last, 0));
        side_last = fork ? c->ev_dw[l] : NULL;
        SL_TRY(gemm(m, c->blas, CUBLAS_OP_T, CUBLAS_OP_N, n, (int)B, o, op_w(m, l), o,
                    op_dz(c, cur), o, da, n, err));
        if (l == 1 && opt) SL_TRY(update_upper(m, opt, fork, &side_used, err));
        dim3 threads(32, AGDB_ROWS);
        sl__launch_pdl(c->pdl, act_grad_db_kernel, dim3((unsigned)((n + 31) / 32)), threads, 0,
                       c->stream, da, a_prev, B, n, m->cfg.activation, m->grads + m->b_off[l - 1],
                       c->dzbf[1 - cur]);
        SL_CUDA_TRY(err, cudaGetLastError());
        cur = 1 - cur;
    }
    if (opt && m->nlayers == 1) SL_TRY(sl__optim_cuda_copy_args(opt, c->stream, err));
    if (opt) // the first layer's part (or the whole update of a one-layer model)
        SL_TRY(sl__optim_cuda_update(opt, m->params, m->grads, 0,
                                     m->nlayers == 1 ? m->nparams : m->w_off[1], c->stream, err));
    if (side_used) { // join the side stream back: its last product and all before it
        SL_CUDA_TRY(err, cudaEventRecord(c->ev_join, c->side));
        SL_CUDA_TRY(err, cudaStreamWaitEvent(c->stream, c->ev_join, 0));
    }
    return SL_OK;
}

static sl_status cu_forward(sl_mlp *m, const sl_tensor *x, sl_err *err) {
    cuda_impl *c = impl_of(m);
    SL_CUDA_TRY(err, cudaSetDevice(m->dev.id));
    SL_TRY(reserve(m, c, x->shape[0], err));
    SL_TRY(enqueue_forward(m, x, NULL, NULL, err));
    m->batch = x->shape[0];
    return SL_OK;
}

static sl_status cu_loss_sum(sl_mlp *m, const sl_tensor *y, double *sum, sl_err *err) {
    cuda_impl *c = impl_of(m);
    const int64_t B = m->batch;
    SL_CUDA_TRY(err, cudaSetDevice(m->dev.id));
    xent_rows_kernel<<<blocks_for(B, 128), 128, 0, c->stream>>>(
        c->act[m->nlayers - 1], B, m->cfg.sizes[m->nlayers], (const float *)y->data, ld_of(y), 0.0f,
        NULL, c->row_loss, NULL);
    loss_reduce_kernel<<<1, 256, 0, c->stream>>>(c->row_loss, B, c->loss_sum, NULL);
    SL_CUDA_TRY(err, cudaGetLastError());
    SL_CUDA_TRY(
        err, cudaMemcpyAsync(sum, c->loss_sum, sizeof(double), cudaMemcpyDeviceToHost, c->stream));
    SL_CUDA_TRY(err, cudaStreamSynchronize(c->stream));
    return SL_OK;
}

static sl_status cu_backward(sl_mlp *m, const sl_tensor *x, const sl_tensor *y, sl_err *err) {
    cuda_impl *c = impl_of(m);
    const int64_t B = m->batch;
    SL_CUDA_TRY(err, cudaSetDevice(m->dev.id));
    xent_rows_kernel<<<blocks_for(B, 128), 128, 0, c->stream>>>(
        c->act[m->nlayers - 1], B, m->cfg.sizes[m->nlayers], (const float *)y->data, ld_of(y),
        1.0f / (float)B, c->dz[0], NULL, c->dzbf[0]);
    const int L = m->nlayers - 1;
    loss_db_kernel<<<1, 256, 0, c->stream>>>(NULL, B, m->cfg.sizes[m->nlayers], c->dz[0], NULL,
                                             NULL, m->grads + m->b_off[L]);
    SL_CUDA_TRY(err, cudaGetLastError());
    SL_TRY(enqueue_backward(m, x, B, NULL, 0, err));
    SL_CUDA_TRY(err, cudaStreamSynchronize(c->stream));
    return SL_OK;
}

static sl_status cu_logprobs(sl_mlp *m, sl_tensor *out, sl_err *err) {
    cuda_impl *c = impl_of(m);
    SL_CUDA_TRY(err, cudaSetDevice(m->dev.id));
    SL_CUDA_TRY(err, cudaStreamSynchronize(c->stream));
    sl_tensor src;
    int64_t shape[2] = {m->batch, m->cfg.sizes[m->nlayers]};
    SL_TRY(sl_tensor_wrap(&src, c->act[m->nlayers - 1], SL_DTYPE_F32, m->dev, 2, shape, NULL));
    return sl_tensor_copy(out, &src, NULL, err);
}

// Forward + backward; with o (a CUDA optimiser of the model), then o's update and the copy of the
// loss into the next slot of the pinned ring.
static sl_status enqueue_step(sl_mlp *m, const sl_tensor *x, const sl_tensor *y, sl_optim *o,
                              sl_err *err) {
    cuda_impl *c = impl_of(m);
    int headed = 0;
    SL_TRY(enqueue_forward(m, x, y, &headed, err));
    SL_TRY(enqueue_backward(m, x, x->shape[0], o, headed, err));
    if (!o) return SL_OK;
    if (!headed) // head_sums_kernel copied it
        loss_out_kernel<<<1, 1, 0, c->stream>>>(m->grads + m->nparams, c->loss_ring_dev,
                                                c->loss_seq);
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}

// The cached graph for (x, y, B, pitches, o), or NULL; *victim (may be NULL) gets the entry a new
// graph would replace (a free one, else the least recently used).
static graph_entry *find_graph(cuda_impl *c, const sl_tensor *x, const sl_tensor *y,
                               const sl_optim *o, graph_entry **victim) {
    const int64_t B = x->shape[0], ldx = x->strides[0], ldy = y->strides[0];
    graph_entry *v = &c->graphs[0];
    for (int i = 0; i < NGRAPHS; i++) {
        graph_entry *g = &c->graphs[i];
        if (g->exec && g->x == x->data && g->y == y->data && g->o == o && g->rows == B &&
            g->ldx == ldx && g->ldy == ldy)
            return g;
        if (!g->exec || (v->exec && g->used < v->used)) v = g;
    }
    if (victim) *victim = v;
    return NULL;
}

// The graph for (x, y, B, pitches, o), captured on first use; NULL when capturing is not possible.
static sl_status graph_for(sl_mlp *m, const sl_tensor *x, const sl_tensor *y, sl_optim *o,
                           cudaGraphExec_t *out, sl_err *err) {
    cuda_impl *c = impl_of(m);
    const int64_t B = x->shape[0], ldx = x->strides[0], ldy = y->strides[0];
    *out = NULL;
    graph_entry *victim = NULL, *hit = find_graph(c, x, y, o, &victim);
    if (hit) {
        hit->used = ++c->tick;
        *out = hit->exec;
        return SL_OK;
    }
    cudaGraph_t graph = NULL;
    SL_CUDA_TRY(err, cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal));
    sl_err cap_err;
    memset(&cap_err, 0, sizeof cap_err);
    sl_status st = enqueue_step(m, x, y, o, &cap_err);
    cudaError_t e = cudaStreamEndCapture(c->stream, &graph);
    cudaGraphExec_t exec = NULL;
    if (st == SL_OK && e == cudaSuccess && graph) e = cudaGraphInstantiate(&exec, graph, 0);
    if (graph) cudaGraphDestroy(graph);
    if (st != SL_OK || e != cudaSuccess || !exec) {
        // not capturable here (or a launch error that plain launches will report): stop trying
        (void)cudaGetLastError();
        if (exec) cudaGraphExecDestroy(exec);
        c->graphs_off = 1;
        return SL_OK;
    }
    if (victim->exec) cudaGraphExecDestroy(victim->exec);
    victim->exec = exec;
    victim->x = x->data;
    victim->y = y->data;
    victim->o = o;
    victim->rows = B;
    victim->ldx = ldx;
    victim->ldy = ldy;
    victim->used = ++c->tick;
    *out = exec;
    return SL_OK;
}

// stage_inputs' copy when both inputs are on the model's device: block r copies row r of x (n
// floats at pitch ldx; in float4s with vec) and of y (C at pitch ldy) into the packed xo and yo --
// one kernel instead of two cudaMemcpy2DAsync (the seed's step at batch 200 on an H200: 2 us less
// queued back to back, 3 us waited for).
__global__ void stage_kernel(const float *x, int64_t ldx, int n, const float *y, int64_t ldy, int C,
                             float *xo, float *yo, int64_t B, int vec) {
    for (int64_t r = blockIdx.x; r < B; r += gridDim.x) {
        const float *xr = x + r * ldx;
        float *xd = xo + r * n;
        if (vec)
            for (int i = threadIdx.x; i < n / 4; i += blockDim.x)
                ((float4 *)xd)[i] = ((const float4 *)xr)[i];
        else
            for (int i = threadIdx.x; i < n; i += blockDim.x) xd[i] = xr[i];
        for (int i = threadIdx.x; i < C; i += blockDim.x) yo[r * C + i] = y[r * ldy + i];
    }
}

// x and y can be read where they are by a graph of their own: both on the model's device, in rows
// of whole floats.
static int in_place_ok(const sl_mlp *m, const sl_tensor *x, const sl_tensor *y) {
    return sl_device_eq(x->device, m->dev) && sl_device_eq(y->device, m->dev) &&
           x->strides[0] % (int64_t)sizeof(float) == 0 &&
           y->strides[0] % (int64_t)sizeof(float) == 0;
}

// Whether (x, y) came before among the last NSEEN staged inputs; remembers them if not.
static int seen_before(cuda_impl *c, const sl_tensor *x, const sl_tensor *y) {
    for (int i = 0; i < NSEEN; i++)
        if (c->seen[i][0] == x->data && c->seen[i][1] == y->data) return 1;
    c->seen[c->seen_next][0] = x->data;
    c->seen[c->seen_next][1] = y->data;
    c->seen_next = (c->seen_next + 1) % NSEEN;
    return 0;
}

// Copies x and y (rows of floats at their pitches, on this device or the host) into x_in / y_in,
// packed, on the model's stream; xs and ys describe the copies.
static sl_status stage_inputs(const sl_mlp *m, cuda_impl *c, const sl_tensor *x, const sl_tensor *y,
                              sl_tensor *xs, sl_tensor *ys, sl_err *err) {
    const int64_t B = x->shape[0], n = m->cfg.sizes[0], C = m->cfg.sizes[m->nlayers];
    const size_t xw = (size_t)n * sizeof(float), yw = (size_t)C * sizeof(float);
    if (in_place_ok(m, x, y)) {
        const int64_t ldx = x->strides[0] / (int64_t)sizeof(float);
        const int vec =
            n % 4 == 0 && ldx % 4 == 0 && (((uintptr_t)x->data | (uintptr_t)c->x_in) & 15) == 0;
        const unsigned blocks = (unsigned)(B < 1 ? 1 : B < 65535 ? B : 65535);
        stage_kernel<<<blocks, 256, 0, c->stream>>>(
            (const float *)x->data, ldx, (int)n, (const float *)y->data,
            y->strides[0] / (int64_t)sizeof(float), (int)C, c->x_in, c->y_in, B, vec);
        SL_CUDA_TRY(err, cudaGetLastError());
    } else {
        SL_CUDA_TRY(err, cudaMemcpy2DAsync(c->x_in, xw, x->data, (size_t)x->strides[0], xw,
                                           (size_t)B, cudaMemcpyDefault, c->stream));
        SL_CUDA_TRY(err, cudaMemcpy2DAsync(c->y_in, yw, y->data, (size_t)y->strides[0], yw,
                                           (size_t)B, cudaMemcpyDefault, c->stream));
    }
    const int64_t xshape[2] = {B, n}, yshape[2] = {B, C};
    SL_TRY(sl_tensor_wrap(xs, c->x_in, SL_DTYPE_F32, m->dev, 2, xshape, NULL));
    return sl_tensor_wrap(ys, c->y_in, SL_DTYPE_F32, m->dev, 2, yshape, NULL);
}

// Forward + backward (+ o's update and the loss copy, with o) from the graph or plain launches.
static sl_status run_step(sl_mlp *m, const sl_tensor *x, const sl_tensor *y, sl_optim *o,
                          sl_err *err) {
    cuda_impl *c = impl_of(m);
    SL_CUDA_TRY(err, cudaSetDevice(m->dev.id));
    SL_TRY(reserve(m, c, x->shape[0], err));
    m->batch = x->shape[0];
    c->loss_queued = 0;
    c->mark_bucket = o == NULL && m->nlayers >= 2;
    c->bucket_marked = 0;
    cudaGraphExec_t exec = NULL;
    if (m->cfg.cuda_graph && !c->graphs_off) {
        // inputs met before (a pipeline's ring of slots) get a graph that reads them in place;
        // others are staged into x_in / y_in, for the graph that reads those
        if (in_place_ok(m, x, y) && (find_graph(c, x, y, o, NULL) || seen_before(c, x, y))) {
            SL_TRY(graph_for(m, x, y, o, &exec, err));
        } else {
            sl_tensor xs, ys;
            SL_TRY(stage_inputs(m, c, x, y, &xs, &ys, err));
            SL_TRY(graph_for(m, &xs, &ys, o, &exec, err));
        }
    }
    if (exec)
        SL_CUDA_TRY(err, cudaGraphLaunch(exec, c->stream));
    else
        SL_TRY(enqueue_step(m, x, y, o, err));
    c->loss_queued = o != NULL;
    c->launched += o != NULL;
    c->bucket_marked = c->mark_bucket;
    c->mark_bucket = 0;
    return SL_OK;
}

static sl_status cu_loss_grad_async(sl_mlp *m, const sl_tensor *x, const sl_tensor *y,
                                    sl_err *err) {
    return run_step(m, x, y, NULL, err);
}

static sl_status cu_train_step_async(sl_mlp *m, sl_optim *o, const sl_tensor *x, const sl_tensor *y,
                                     sl_err *err) {
    SL_TRY(sl__optim_cuda_prepare(o, err));
    sl_status st = run_step(m, x, y, o, err);
    if (st == SL_OK) st = sl__optim_cuda_mark(o, impl_of(m)->stream, err);
    if (st != SL_OK) sl__optim_cuda_cancel(o);
    return st;
}

// Posts the loss of the step just queued: its copy into the ring (unless the step's graph did it)
// and an event after it. Steps queued without a post (bench_train_gpu's back-to-back steps) still
// write the ring; a posted loss stays readable while fewer than NLOSS steps follow it untaken.
static sl_status cu_post_loss(sl_mlp *m, sl_err *err) {
    cuda_impl *c = impl_of(m);
    if (c->posted - c->taken >= NLOSS)
        return sl_err_set(err, SL_ESTATE, "model: %d step losses posted and not taken", NLOSS);
    SL_CUDA_TRY(err, cudaSetDevice(m->dev.id));
    if (!c->loss_queued) {
        loss_out_kernel<<<1, 1, 0, c->stream>>>(m->grads + m->nparams, c->loss_ring_dev,
                                                c->loss_seq);
        SL_CUDA_TRY(err, cudaGetLastError());
        c->launched++;
    }
    c->loss_queued = 0;
    SL_CUDA_TRY(err, cudaEventRecord(c->loss_ev[c->posted % NLOSS], c->stream));
    c->post_seq[c->posted % NLOSS] = c->launched - 1;
    c->posted++;
    return SL_OK;
}

// Waits for the oldest posted loss (not for anything queued after it) and returns it.
static sl_status cu_take_loss(sl_mlp *m, float *loss, sl_err *err) {
    cuda_impl *c = impl_of(m);
    if (c->taken == c->posted) return sl_err_set(err, SL_ESTATE, "model: no step loss posted");
    SL_CUDA_TRY(err, cudaSetDevice(m->dev.id));
    SL_CUDA_TRY(err, cudaEventSynchronize(c->loss_ev[c->taken % NLOSS]));
    const uint64_t seq = c->post_seq[c->taken % NLOSS];
    const volatile loss_slot *s = &c->loss_ring[seq % NLOSS];
    if (s->seq != (unsigned)seq) // NLOSS or more steps were queued after it before this take
        return sl_err_set(err, SL_ESTATE, "model: step loss %llu found loss %u in its slot",
                          (unsigned long long)seq, s->seq);
    *loss = s->loss;
    c->taken++;
    return SL_OK;
}

// After a step without an optimiser: `early` waits for the mark, and gradients from w_off[1] on
// are ready for work queued there.
static sl_status cu_early_grads(sl_mlp *m, int64_t *split, void **stream, sl_err *err) {
    cuda_impl *c = impl_of(m);
    *stream = NULL;
    *split = 0;
    if (!c->bucket_marked) return SL_OK;
    c->bucket_marked = 0;
    SL_CUDA_TRY(err, cudaSetDevice(m->dev.id));
    SL_CUDA_TRY(err, cudaStreamWaitEvent(c->early, c->ev_bucket, 0));
    *split = m->w_off[1];
    *stream = c->early;
    return SL_OK;
}

static int cu_losses_pending(const sl_mlp *m) {
    const cuda_impl *c = impl_of(m);
    return (int)(c->posted - c->taken);
}

// Posts the last step's loss and waits for it (and every loss posted before it).
static sl_status cu_read_loss(sl_mlp *m, float *loss, sl_err *err) {
    SL_TRY(cu_post_loss(m, err));
    while (cu_losses_pending(m) > 0) SL_TRY(cu_take_loss(m, loss, err));
    return SL_OK;
}

extern "C" const sl__mlp_backend sl__mlp_cuda_backend = {"cuda",        cu_init,
                                                         cu_release,    cu_upload,
                                                         cu_download,   cu_forward,
                                                         cu_loss_sum,   cu_backward,
                                                         cu_logprobs,   cu_loss_grad_async,
                                                         cu_sync,       cu_train_step_async,
                                                         cu_read_loss,  cu_post_loss,
                                                         cu_take_loss,  cu_losses_pending,
                                                         cu_early_grads};
