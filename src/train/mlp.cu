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
//
// The files: mlp.cu (this one) the buffers, the input staging, the step's entry and the backend
// table; mlp_pass.cu the forward and backward passes; mlp_kernels.cu the generic kernels;
// mlp_narrow.cu the narrow layer's kernels; mlp_head.cu the training step's head; mlp_graph.cu the
// graph cache; mlp_cuda.h what they share.
#include "train/mlp_cuda.h"
#include "train/optim.h"

#include <stdlib.h>
#include <string.h>

#define WORKSPACE_BYTES ((size_t)32 << 20)

static sl_status err_status(sl_err *err, sl_status fallback) {
    return err && err->status != SL_OK ? err->status : fallback;
}

// ---- buffers ------------------------------------------------------------------------------------

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
    sl__mlp_graph_drop(c);
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

// ---- the backend --------------------------------------------------------------------------------

static void cu_release(sl_mlp *m) {
    cuda_impl *c = impl_of(m);
    if (c) {
        cudaSetDevice(m->dev.id);
        if (c->stream) cudaStreamSynchronize(c->stream);
        if (c->side) cudaStreamSynchronize(c->side);
        if (c->early) cudaStreamSynchronize(c->early);
        sl__mlp_graph_drop(c);
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
    SL_TRY(sl__mlp_head_init(m, err));
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

static sl_status cu_forward(sl_mlp *m, const sl_tensor *x, sl_err *err) {
    cuda_impl *c = impl_of(m);
    SL_CUDA_TRY(err, cudaSetDevice(m->dev.id));
    SL_TRY(reserve(m, c, x->shape[0], err));
    SL_TRY(sl__mlp_pass_forward(m, x, NULL, NULL, err));
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
    SL_TRY(sl__mlp_pass_backward(m, x, B, NULL, 0, err));
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

// ---- input staging ------------------------------------------------------------------------------

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
        if (in_place_ok(m, x, y) &&
            (sl__mlp_graph_find(c, x, y, o, NULL) || seen_before(c, x, y))) {
            SL_TRY(sl__mlp_graph_get(m, x, y, o, &exec, err));
        } else {
            sl_tensor xs, ys;
            SL_TRY(stage_inputs(m, c, x, y, &xs, &ys, err));
            SL_TRY(sl__mlp_graph_get(m, &xs, &ys, o, &exec, err));
        }
    }
    if (exec)
        SL_CUDA_TRY(err, cudaGraphLaunch(exec, c->stream));
    else
        SL_TRY(sl__mlp_pass_step(m, x, y, o, err));
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
