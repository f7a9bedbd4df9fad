/* SPDX-License-Identifier: Apache-2.0 */
// The CUDA MLP's forward and backward passes, queued on the model's stream (and its side stream):
// the cuBLAS products in the model's math mode and what each reads, BF16 mode's conversions of the
// operands, the launches of the generic kernels, the narrow layer and the head between them, the
// mark of the early gradient bucket, and a one-GPU step's optimiser update split in two parts
// (through train/optim.h). Both plain launches and a graph capture (mlp_graph.cu) queue them.
#include "train/mlp_cuda.h"
#include "train/optim.h"

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

// Enqueues the forward pass over x (B rows). With y, also the loss (sum into c->loss_sum, batch
// mean into grads[nparams]) and the last layer's bias gradient, and either (sl__mlp_head_fits)
// head_kernel
// -- the last layer's backward up to the previous layer's dz, whose sums sl__mlp_pass_backward adds
// -- or the last layer's gradient dz into dz[0]; *headed (may be NULL) says which.
sl_status sl__mlp_pass_forward(sl_mlp *m, const sl_tensor *x, const sl_tensor *y, int *headed,
                               sl_err *err) {
    cuda_impl *c = impl_of(m);
    const int64_t B = x->shape[0];
    const float *a = (const float *)x->data;
    int lda = ld_of(x);
    const int use_head = y && sl__mlp_head_fits(m);
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
            sl__mlp_head_run(m, c, B, (const float *)y->data, ld_of(y));
            SL_CUDA_TRY(err, cudaGetLastError());
            break;
        }
        if (l + 1 == m->nlayers &&
            sl__mlp_narrow_fits(n, o)) { // the product and all that follows it
            sl__mlp_narrow_fwd(c, a, lda, w, b, B, n, o, z, y ? (const float *)y->data : NULL,
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
sl_status sl__mlp_pass_backward(sl_mlp *m, const sl_tensor *x, int64_t B, sl_optim *opt, int headed,
                                sl_err *err) {
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
        sl__mlp_head_sums(m, c, B, s, opt ? c->loss_ring_dev : NULL);
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
            sl__mlp_narrow_bwd(c, dz, a_prev, lda, w, B, n, o, m->cfg.activation, gw, da,
                               da ? m->grads + m->b_off[l - 1] : NULL,
                               da ? c->dzbf[1 - cur] : NULL);
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

// Forward + backward; with o (a CUDA optimiser of the model), then o's update and the copy of the
// loss into the next slot of the pinned ring.
sl_status sl__mlp_pass_step(sl_mlp *m, const sl_tensor *x, const sl_tensor *y, sl_optim *o,
                            sl_err *err) {
    cuda_impl *c = impl_of(m);
    int headed = 0;
    SL_TRY(sl__mlp_pass_forward(m, x, y, &headed, err));
    SL_TRY(sl__mlp_pass_backward(m, x, x->shape[0], o, headed, err));
    if (!o) return SL_OK;
    if (!headed) // head_sums_kernel copied it
        loss_out_kernel<<<1, 1, 0, c->stream>>>(m->grads + m->nparams, c->loss_ring_dev,
                                                c->loss_seq);
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}
