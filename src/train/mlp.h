/* SPDX-License-Identifier: Apache-2.0 */
/* Internal side of sl_mlp: the model struct and the table of operations a device backend provides
 * (mlp_cpu.c for the CPU; a CUDA backend, mlp.cu, adds its own table and one line in
 * mlp.c's backend_for). mlp.c owns everything device-independent: config checks, numpy-identical
 * initialisation (on the host, then uploaded), argument checks, evaluation and the file format. */
#ifndef SLUICE_TRAIN_MLP_H
#define SLUICE_TRAIN_MLP_H

#include "sluice/train.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SL__MLP_MAX_LAYERS (SL_MLP_MAX_SIZES - 1)

typedef struct sl__mlp_backend {
    const char *name;
    /* Allocates m->params and m->grads (m->nparams floats each, grads zeroed) and m->impl. */
    sl_status (*init)(sl_mlp *m, sl_err *err);
    /* Frees what init made (also after a failed init). */
    void (*release)(sl_mlp *m);
    /* Copies n floats between host memory and a buffer of the model (params or grads). */
    sl_status (*upload)(sl_mlp *m, float *dst, const float *host, int64_t n, sl_err *err);
    sl_status (*download)(const sl_mlp *m, float *host, const float *src, int64_t n, sl_err *err);
    /* Forward over x (B, sizes[0]) (checked), keeping what backward needs; afterwards logprobs
     * (B, sizes[-1]) are held by the backend. */
    sl_status (*forward)(sl_mlp *m, const sl_tensor *x, sl_err *err);
    /* After forward: sum over rows of -sum_c(logprobs * y), y (B, sizes[-1]) f32. */
    sl_status (*loss_sum)(sl_mlp *m, const sl_tensor *y, double *sum, sl_err *err);
    /* After forward on x: the gradients of the batch-mean loss into m->grads. */
    sl_status (*backward)(sl_mlp *m, const sl_tensor *x, const sl_tensor *y, sl_err *err);
    /* After forward: copies logprobs into out (B, sizes[-1]) f32, host or device. */
    sl_status (*logprobs)(sl_mlp *m, sl_tensor *out, sl_err *err);
    /* Optional (NULL on the CPU). Forward + backward on the backend's queue without waiting for
     * it; the batch-mean loss is left as a float in the extra slot m->grads[m->nparams] (such a
     * backend allocates nparams + 1 gradient floats), so one all-reduce of nparams + 1 floats
     * averages gradients and losses together. */
    sl_status (*loss_grad_async)(sl_mlp *m, const sl_tensor *x, const sl_tensor *y, sl_err *err);
    /* Optional: waits until the model's queued device work is done. */
    sl_status (*sync)(const sl_mlp *m, sl_err *err);
    /* Optional: forward + backward + the update of optimiser o (a CUDA optimiser on the model's
     * device) queued without waiting, as one CUDA graph where graphs are on; the loss is left in
     * grads[nparams] and, by a graph, also copied for read_loss. */
    sl_status (*train_step_async)(sl_mlp *m, sl_optim *o, const sl_tensor *x, const sl_tensor *y,
                                  sl_err *err);
    /* Optional: waits and returns the float in grads[nparams] (through pinned memory), taking
     * every posted loss on the way. */
    sl_status (*read_loss)(sl_mlp *m, float *loss, sl_err *err);
    /* Optional, all three or none (see sl__mlp_post_loss). */
    sl_status (*post_loss)(sl_mlp *m, sl_err *err);
    sl_status (*take_loss)(sl_mlp *m, float *loss, sl_err *err);
    int (*losses_pending)(const sl_mlp *m);
    /* Optional: see sl__mlp_early_grads. */
    sl_status (*early_grads)(sl_mlp *m, int64_t *split, void **stream, sl_err *err);
} sl__mlp_backend;

extern const sl__mlp_backend sl__mlp_cpu_backend;

/* K CPU replicas each run their sgemm in their own thread: OpenBLAS's pool is shared by every
 * caller and serialises them, so each caller gets cores/K threads of it instead (mlp_cpu.c). */
void sl__mlp_cpu_share_threads(int replicas);
#ifdef SLUICE_HAVE_CUDA
extern const sl__mlp_backend sl__mlp_cuda_backend; /* mlp.cu */
#endif

/* Forward + backward without waiting (backends with loss_grad_async; otherwise the same as
 * sl_mlp_loss_grad without a loss). Arguments are checked as for sl_mlp_loss_grad. */
sl_status sl__mlp_loss_grad_async(sl_mlp *m, const sl_tensor *images, const sl_tensor *labels,
                                  sl_err *err);

struct sl_mlp {
    sl_mlp_config cfg;
    sl_device dev;
    int nlayers; /* cfg.nsizes - 1 */
    int64_t nparams;
    int64_t w_off[SL__MLP_MAX_LAYERS]; /* offsets into the flat buffers */
    int64_t b_off[SL__MLP_MAX_LAYERS];
    float *params, *grads; /* (nparams,) each, on dev */
    int64_t batch;         /* rows of the last forward */
    const sl__mlp_backend *be;
    void *impl;
    float *host_lp; /* evaluate's host copy of logprobs */
    int64_t host_lp_rows;
    void *stream; /* the backend's CUDA stream (cudaStream_t); NULL on the CPU */
};

/* One optimiser update of m's params from its grads, on the model's stream without waiting
 * (sl_optim_step waits): o's sl__optim_apply_async (optim.h) on the model's buffers. */
sl_status sl__mlp_optim_step_async(sl_mlp *m, sl_optim *o, sl_err *err);

/* One training step without waiting: forward + backward + o's update of m (backends with
 * train_step_async: one CUDA graph; otherwise loss_grad_async then sl__mlp_optim_step_async). The
 * batch-mean loss is then read by sl__mlp_read_loss (which waits). Arguments are checked as for
 * sl_mlp_loss_grad; o must be m's optimiser (same device, nparams). */
sl_status sl__mlp_train_step_async(sl_mlp *m, sl_optim *o, const sl_tensor *images,
                                   const sl_tensor *labels, sl_err *err);
/* Waits for the model's queued work and returns the batch-mean loss left by the last
 * loss_grad_async / train step (averaged when an all-reduce ran over the extra slot). */
sl_status sl__mlp_read_loss(sl_mlp *m, float *loss, sl_err *err);

/* Steps queued back to back, each loss read when its own step is done (backends with post_loss):
 * after queuing a step (sl__mlp_train_step_async, or loss_grad_async + all-reduce + update),
 * post_loss queues the copy of its loss (grads[nparams]) into the next of a few pinned slots;
 * take_loss waits for the oldest posted step only and returns its loss; at most 4 are pending
 * (SL_ESTATE beyond), and a posted loss must be taken before 4 more steps are queued (SL_ESTATE).
 */
sl_status sl__mlp_post_loss(sl_mlp *m, sl_err *err);
sl_status sl__mlp_take_loss(sl_mlp *m, float *loss, sl_err *err);
int sl__mlp_losses_pending(const sl_mlp *m);
/* Right after sl__mlp_loss_grad_async: a stream of the model (a cudaStream_t) on which the
 * gradients from *split on -- every layer but the first, and the loss slot -- are ready while the
 * first layer's are still being computed, so that their all-reduce can start early; the rest are
 * ready on the model's stream. *stream NULL (and *split 0): no such split (a one-layer model, a
 * backend without it). */
sl_status sl__mlp_early_grads(sl_mlp *m, int64_t *split, void **stream, sl_err *err);
/* The model's CUDA stream (a cudaStream_t), NULL on the CPU. */
static inline void *sl__mlp_stream(const sl_mlp *m) {
    return m->stream;
}

/* cuBLAS for the GPU model (cublas_dl.cu) */
/* Starts loading cuBLAS (cublas_dl.h) on a thread of its own and returns; the GPU model's first
 * use waits for it. For a process about to train on GPUs, at its start. */
void sl__cuda_blas_preload(void);
/* Loads cuBLAS now, or waits for the load under way: SL_ECUDA naming the library when it cannot be
 * loaded. Needs no GPU. */
sl_status sl__cuda_blas_load(sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
