/* SPDX-License-Identifier: Apache-2.0 */
/* What the files of the CUDA backend of sl_mlp share (C++: for .cu files only): the model's device
 * state (cuda_impl) and its limits, the device helpers that kernels of more than one file use, the
 * generic kernels (mlp_kernels.cu), and the host side of the narrow layer (mlp_narrow.cu), of the
 * training step's head (mlp_head.cu), of the forward and backward passes (mlp_pass.cu) and of the
 * graph cache (mlp_graph.cu). mlp.cu, which holds the buffers, the input staging and the backend
 * table, says how they work together. */
#ifndef SLUICE_TRAIN_MLP_CUDA_H
#define SLUICE_TRAIN_MLP_CUDA_H

#include "core/alloc.h"
#include "core/log.h"
#include "core/cuda_check.h"
#include "train/cublas_dl.h"
#include "core/cuda_launch.h"
#include "train/mlp.h"

#include <cuda_bf16.h>
#include <stdint.h>

#define NGRAPHS   8 // a pipeline's ring of batch slots (5 or 6), each with its graph, + spares
#define NSEEN     8 // input addresses remembered, for graphs that read the inputs in place
#define NLOSS     4 // losses posted and not yet taken, at most
// the widest layer the narrow kernels take (mlp_narrow.cu, mlp_head.cu; CM: 8, 10 or 16)
#define SMALL_C   16
#define AGDB_ROWS 32 // row groups per block of act_grad_db_kernel (blockDim 32 x AGDB_ROWS)

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

static inline cuda_impl *impl_of(const sl_mlp *m) {
    return (cuda_impl *)m->impl;
}

static inline unsigned blocks_for(int64_t n, int threads) {
    int64_t b = (n + threads - 1) / threads;
    if (b > 65535 * 16) b = 65535 * 16;
    return (unsigned)(b < 1 ? 1 : b);
}

static inline int ld_of(const sl_tensor *t) {
    return (int)(t->strides[0] / (int64_t)sizeof(float));
}

// ---- device helpers -----------------------------------------------------------------------------

static __device__ __forceinline__ float act_fwd(float v, int act) {
    return act == SL_ACT_TANH ? tanhf(v) : (v > 0.0f ? v : 0.0f);
}

// da (n,) *= act'(a): tanh 1 - a^2, relu a > 0
static __device__ __forceinline__ float act_bwd(float da, float a, int act) {
    return act == SL_ACT_TANH ? da * (1.0f - a * a) : (a > 0.0f ? da : 0.0f);
}

static __device__ inline float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
static __device__ inline double warp_sum(double v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
static __device__ inline float warp_sumf(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
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

// ---- the generic kernels (mlp_kernels.cu) -------------------------------------------------------

__global__ void bias_act_kernel(float *z, const float *b, int64_t n, int o, int act, bf16 *zb);
__global__ void bias_act4_kernel(float4 *z, const float4 *b, int64_t n4, int o4, int act, bf16 *zb);
__global__ void to_bf16_kernel(const float *x, int64_t ldx, int n, int64_t rows, bf16 *xb,
                               const float *p, int64_t np, bf16 *pb, int vec);
__global__ void __launch_bounds__(32 * AGDB_ROWS)
    act_grad_db_kernel(float *da, const float *a, int64_t rows, int n, int act, float *db,
                       bf16 *dab);
__global__ void logsoftmax_xent_kernel(float *z, const float *b, int64_t rows, int C,
                                       const float *y, int64_t ldy, float inv_b, float *dz,
                                       double *row_loss, bf16 *dzb);
__global__ void xent_rows_kernel(const float *lp, int64_t rows, int C, const float *y, int64_t ldy,
                                 float inv_b, float *dz, double *row_loss, bf16 *dzb);
__global__ void loss_reduce_kernel(const double *row_loss, int64_t rows, double *sum,
                                   float *mean_out);
__global__ void loss_db_kernel(const double *row_loss, int64_t rows, int C, const float *dz,
                               double *sum, float *mean_out, float *db);
__global__ void loss_out_kernel(const float *loss, loss_slot *ring, unsigned *seq);

// ---- the narrow layer (mlp_narrow.cu) -----------------------------------------------------------

// Whether the last layer (n inputs, o outputs) forward goes through last_fwd_kernel.
int sl__mlp_narrow_fits(int n, int o);
// Its forward (last_fwd_kernel) and backward (last_bwd_kernel) on the model's stream.
void sl__mlp_narrow_fwd(cuda_impl *c, const float *a, int64_t lda, const float *w, const float *b,
                        int64_t B, int K, int C, float *z, const float *y, int64_t ldy,
                        float *loss_mean, float *db);
void sl__mlp_narrow_bwd(cuda_impl *c, const float *dz, const float *a, int64_t lda, const float *w,
                        int64_t B, int n, int C, int act, float *gw, float *da, float *db,
                        bf16 *dab);

// ---- the training step's head (mlp_head.cu) -----------------------------------------------------

// Whether the training step's last layer goes through head_kernel.
int sl__mlp_head_fits(const sl_mlp *m);
// At the model's creation: head_kernel's shared memory, where the model's head fits.
sl_status sl__mlp_head_init(const sl_mlp *m, sl_err *err);
// head_kernel on the model's stream, then head_sums_kernel on s.
void sl__mlp_head_run(const sl_mlp *m, cuda_impl *c, int64_t B, const float *y, int64_t ldy);
void sl__mlp_head_sums(const sl_mlp *m, cuda_impl *c, int64_t B, cudaStream_t s, loss_slot *ring);

// ---- the passes (mlp_pass.cu) -------------------------------------------------------------------

// Queued on the model's stream: the forward pass (with y the loss and the head), the backward pass
// (with opt the update), and a step: both, and with o the update and the loss copy.
sl_status sl__mlp_pass_forward(sl_mlp *m, const sl_tensor *x, const sl_tensor *y, int *headed,
                               sl_err *err);
sl_status sl__mlp_pass_backward(sl_mlp *m, const sl_tensor *x, int64_t B, sl_optim *opt, int headed,
                                sl_err *err);
sl_status sl__mlp_pass_step(sl_mlp *m, const sl_tensor *x, const sl_tensor *y, sl_optim *o,
                            sl_err *err);

// ---- the graph cache (mlp_graph.cu) -------------------------------------------------------------

// Destroys every cached graph.
void sl__mlp_graph_drop(cuda_impl *c);
// The cached graph for (x, y, B, pitches, o), or NULL, and the entry a new one would replace.
graph_entry *sl__mlp_graph_find(cuda_impl *c, const sl_tensor *x, const sl_tensor *y,
                                const sl_optim *o, graph_entry **victim);
// The graph for (x, y, B, pitches, o), captured on first use; NULL when capturing is not possible.
sl_status sl__mlp_graph_get(sl_mlp *m, const sl_tensor *x, const sl_tensor *y, sl_optim *o,
                            cudaGraphExec_t *out, sl_err *err);

#endif
