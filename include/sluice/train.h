/* SPDX-License-Identifier: Apache-2.0 */
/* The trainer: the seed's MLP (sl_mlp), its optimisers (sl_optim) and the data-parallel step
 * (sl_trainer) that runs one replica per device and averages gradients through sl_comm.
 *
 * The model keeps all of its parameters in ONE flat float32 buffer, and all of its gradients in
 * another of the same layout, so that one all-reduce covers every gradient and one optimiser pass
 * covers every parameter. The flat layout, for layers l = 0 .. nlayers-2 in order:
 *     w_l  (sizes[l], sizes[l+1])  row-major  (x @ w_l: inputs are rows)
 *     b_l  (sizes[l+1])
 * which is also the order in which the seed draws them from numpy's RandomState(seed):
 * w = init_scale * randn(in, out), then b = init_scale * randn(out), in double, stored as float32.
 *
 * Model: hidden layers h = act(x @ w + b) (tanh by default, or relu); the last layer gives
 * log-probabilities logits - logsumexp(logits); loss = -mean_b(sum_c(logprobs * labels)) over the
 * batch, against one-hot (or any non-negative weight) labels -- exactly the seed's model.py.
 *
 * Devices: an sl_mlp lives on one device; its flat buffers and every tensor passed to it live there
 * too. The CPU backend uses OpenBLAS sgemm; other backends (CUDA) slot in behind the same calls. An
 * sl_mlp, sl_optim or sl_trainer is used by one thread at a time; distinct objects are independent.
 */
#ifndef SLUICE_TRAIN_H
#define SLUICE_TRAIN_H

#include "sluice/comm.h"
#include "sluice/status.h"
#include "sluice/tensor.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the model ------------------------------------------------------------------------------ */

typedef enum sl_activation { SL_ACT_TANH = 0, SL_ACT_RELU = 1 } sl_activation;

/* How a CUDA model multiplies matrices (the CPU always uses float32). Storage, activations,
 * gradients, the softmax/loss and the optimiser stay float32 in every mode; only the products
 * inside the matrix multiplies change:
 *   SL_MATH_FP32  plain float32 (the default): agrees with the CPU backend to ~1e-6 relative.
 *   SL_MATH_TF32  tensor cores on TF32 inputs (10-bit mantissa, float32 accumulation): products
 *                 carry ~1e-3 relative error; for the seed's MLP the per-epoch accuracy moves by
 *                 well under 0.01, and it is several times faster for large layers.
 *   SL_MATH_BF16  tensor cores on bfloat16 inputs (8-bit mantissa, float32 accumulation): each
 *                 product reads bfloat16 copies of its operands (the weights and the input
 *                 converted at the start of every forward pass, the activations and gradients
 *                 written beside their float32 values), rounded to nearest even: ~1e-2 relative
 *                 error per product; fine for training this MLP (and the fastest mode on an
 *                 H200), not for comparing against float32 results element by element. */
typedef enum sl_math { SL_MATH_FP32 = 0, SL_MATH_TF32 = 1, SL_MATH_BF16 = 2 } sl_math;
/* Parses "fp32", "tf32" or "bf16". */
sl_status sl_math_parse(const char *name, sl_math *out, sl_err *err);
const char *sl_math_name(sl_math m);

#define SL_MLP_MAX_SIZES 16 /* layer sizes, inputs and outputs included: at most 15 layers */

typedef struct sl_mlp_config {
    int nsizes;                  /* entries in sizes (>= 2); 0 means the seed's 784-1024-1024-10 */
    int sizes[SL_MLP_MAX_SIZES]; /* sizes[0] inputs, sizes[nsizes-1] classes */
    sl_activation activation;    /* of the hidden layers; SL_ACT_TANH as in the seed */
    uint32_t seed;               /* numpy RandomState seed; 0 as in the seed */
    double init_scale;           /* w, b = init_scale * randn; 0 means 0.1 as in the seed */
    sl_math math;                /* CUDA matrix multiplies: SL_MATH_FP32 (default), TF32, BF16 */
    /* CUDA: capture forward+backward as a CUDA graph per input shape and input addresses (8 are
     * cached) and replay it, instead of launching ~20 kernels each step. Inputs seen once are
     * copied into the model's buffers first; inputs on the model's device seen again are read in
     * place by a graph of their own. Results are identical either way. sl_mlp_config_default sets
     * it to 1; a zeroed config leaves it off. */
    int cuda_graph;
} sl_mlp_config;

/* Fills cfg with the seed's model: 784-1024-1024-10, tanh, seed 0, scale 0.1. */
void sl_mlp_config_default(sl_mlp_config *cfg);

typedef struct sl_mlp sl_mlp;

/* Creates the model on dev with the seed's initial weights. dev: sl_cpu(), or sl_cuda(i) in CUDA
 * builds (SL_ENOTSUP otherwise). cfg NULL means the default config. Every call on a CUDA model is
 * complete when it returns (the model runs on its own stream and waits for it). */
sl_status sl_mlp_create(const sl_mlp_config *cfg, sl_device dev, sl_mlp **out, sl_err *err);
/* Starts loading what a GPU model needs (cuBLAS: ~0.1 s and ~200 MB of initialisers) on a thread
 * of its own and returns, so that the load overlaps the caller's start-up; the first GPU model
 * waits for it. Does nothing in a build without CUDA. */
void sl_train_preload(void);
/* Waits for that load, or loads now: SL_ECUDA naming the library when it cannot be loaded (SL_OK
 * in a build without CUDA). A process that preloaded calls it before it exits, so that it never
 * ends while the library's initialisers still run on the loading thread. */
sl_status sl_train_preload_wait(sl_err *err);
void sl_mlp_free(sl_mlp *m);

/* The config the model was made with (nsizes and init_scale filled in). */
const sl_mlp_config *sl_mlp_config_of(const sl_mlp *m);
sl_device sl_mlp_device(const sl_mlp *m);
/* Number of parameters (1,863,690 for the seed's model) = length of the flat buffers. */
int64_t sl_mlp_num_params(const sl_mlp *m);
/* Where w_l (which 0) or b_l (which 1) lies in the flat buffers: offset and element count. */
sl_status sl_mlp_param_range(const sl_mlp *m, int layer, int which, int64_t *offset, int64_t *count,
                             sl_err *err);

/* Views (no copies) of the flat buffers on the model's device: (P,) f32. The grads buffer holds
 * what the last sl_mlp_loss_grad computed (zeros before). Writing through the views is allowed
 * (a comm backend all-reduces grads in place; an optimiser updates params in place). */
void sl_mlp_params(sl_mlp *m, sl_tensor *out);
void sl_mlp_grads(sl_mlp *m, sl_tensor *out);
/* Copies between the flat buffers and host memory (n must equal sl_mlp_num_params). */
sl_status sl_mlp_get_params(const sl_mlp *m, float *host, int64_t n, sl_err *err);
sl_status sl_mlp_set_params(sl_mlp *m, const float *host, int64_t n, sl_err *err);
sl_status sl_mlp_get_grads(const sl_mlp *m, float *host, int64_t n, sl_err *err);
sl_status sl_mlp_set_grads(sl_mlp *m, const float *host, int64_t n, sl_err *err);
/* Copies the parameters of src into dst (same sizes; any devices). */
sl_status sl_mlp_copy_params(sl_mlp *dst, const sl_mlp *src, sl_err *err);

/* Forward and backward on one batch, gradients of the batch-mean loss into the grads buffer
 * (overwritten, not accumulated).
 * images: (B, sizes[0]) f32, rows may be strided (inner dim contiguous)
 * labels: (B, sizes[-1]) f32 one-hot
 * loss:   out, may be NULL */
sl_status sl_mlp_loss_grad(sl_mlp *m, const sl_tensor *images, const sl_tensor *labels, float *loss,
                           sl_err *err);
/* Forward only: the batch-mean loss. */
sl_status sl_mlp_loss(sl_mlp *m, const sl_tensor *images, const sl_tensor *labels, float *loss,
                      sl_err *err);
/* Forward only. logprobs: (B, sizes[-1]) f32, caller-allocated (any device the model can write). */
sl_status sl_mlp_predict(sl_mlp *m, const sl_tensor *images, sl_tensor *logprobs, sl_err *err);
/* Forward only: how many rows have argmax(logprobs) == label (first maximum wins, as numpy).
 * labels: integer class ids (B,) or (B, 1) of any integer dtype, or one-hot (B, sizes[-1]) f32
 * whose argmax is the class; on the host or (contiguous) on the model's device. loss_sum (may be
 * NULL): sum over rows of -sum(logprobs * onehot). */
sl_status sl_mlp_evaluate(sl_mlp *m, const sl_tensor *images, const sl_tensor *labels,
                          int64_t *correct, double *loss_sum, sl_err *err);

/* Saving and loading parameters: a small binary file (version 1; written by sl_mlp_serialize):
 *   0  8 bytes  magic "SLMLP\r\n\x1a"
 *   8  u32      version (1)
 *  12  u32      activation (0 tanh, 1 relu)
 *  16  u32      nsizes, then nsizes x u32 layer sizes
 *   .  u64      P, number of parameters (must match the sizes)
 *   .  P x f32  the flat parameters, IEEE little-endian
 *   .  u32      CRC-32 (zlib's) of every byte before it
 * all integers little-endian. Loading checks every field and the checksum: a truncated or altered
 * file is SL_EFORMAT or SL_ECHECKSUM with the reason, never a half-loaded model.
 * sl_mlp_serialize: buf NULL or too small gives the size needed in *size (and SL_OK with buf NULL,
 * SL_EINVAL when too small); otherwise writes *size bytes. */
sl_status sl_mlp_serialize(const sl_mlp *m, void *buf, size_t cap, size_t *size, sl_err *err);
/* Reads a serialized model into m (its sizes and activation must match). */
sl_status sl_mlp_deserialize(sl_mlp *m, const void *buf, size_t size, sl_err *err);
/* Reads only the config (sizes, activation) of a serialized model. */
sl_status sl_mlp_peek_config(const void *buf, size_t size, sl_mlp_config *cfg, sl_err *err);
/* Writes atomically: a temporary beside path (path.tmp), synced to the disk, renamed over path,
 * and the folder synced (the rename lasts). On failure path is as it was and the message names
 * the file and the cause; a path that is no regular file (a FIFO, a device) is refused. */
sl_status sl_mlp_save(const sl_mlp *m, const char *path, sl_err *err);
/* Loads into an existing model of the same sizes. */
sl_status sl_mlp_load_into(sl_mlp *m, const char *path, sl_err *err);
/* Creates a model on dev from a saved file. */
sl_status sl_mlp_load(const char *path, sl_device dev, sl_mlp **out, sl_err *err);

/* The CPU backend's BLAS: OpenBLAS's kernel family (core, e.g. "SkylakeX", "Prescott"), and, when
 * OpenBLAS fell back to generic kernels on a CPU that has AVX2/AVX-512, the OPENBLAS_CORETYPE value
 * that would run several times faster (else NULL). OpenBLAS reads that variable when it loads, so a
 * program must set it before it starts (a tool may re-exec itself); the first CPU model created
 * also logs a warning. */
void sl_mlp_blas_info(const char **core, const char **suggested_coretype);
/* OpenBLAS's thread count and the work buffer each of its threads maps when it loads (and each
 * thread calling it, at its first call). OpenBLAS retries a mapping that fails for ever, so a
 * program under an address-space limit (ulimit -v) sets OPENBLAS_NUM_THREADS before it starts so
 * that threads x buffer fits (the sluice tool re-execs itself); the CPU backend checks that a
 * caller's buffer can be mapped before the call that would map it, else fails with SL_ENOMEM. */
void sl_mlp_blas_threads(int *threads, size_t *buffer_bytes);

/* ---- optimisers ----------------------------------------------------------------------------- */

typedef enum sl_optim_kind {
    SL_OPTIM_SGD = 0,  /* p -= lr * (g + wd * p); momentum > 0: PyTorch's SGD with momentum */
    SL_OPTIM_ADAM = 1, /* PyTorch torch.optim.Adam (L2 weight decay added to the gradient) */
    SL_OPTIM_ADAMW = 2 /* PyTorch torch.optim.AdamW (decoupled weight decay) */
} sl_optim_kind;

typedef struct sl_optim_config {
    sl_optim_kind kind;
    float lr;           /* 0.001 as in the seed */
    float weight_decay; /* 0 */
    float momentum;     /* SGD only: 0 is plain SGD (the seed's) */
    int nesterov;       /* SGD with momentum only */
    float beta1, beta2; /* Adam: 0.9, 0.999 */
    float eps;          /* Adam: 1e-8 */
} sl_optim_config;

/* The seed's optimiser: plain SGD, lr 0.001 (Adam defaults filled in for a later switch). */
void sl_optim_config_default(sl_optim_config *cfg);
/* Parses "sgd", "momentum" (SGD, momentum 0.9), "adam", "adamw" into cfg->kind (and momentum). */
sl_status sl_optim_parse_kind(const char *name, sl_optim_config *cfg, sl_err *err);

typedef struct sl_optim sl_optim;

/* An optimiser for n parameters on dev; its state (momentum, Adam moments) starts at zero. */
sl_status sl_optim_create(const sl_optim_config *cfg, int64_t n, sl_device dev, sl_optim **out,
                          sl_err *err);
void sl_optim_free(sl_optim *o);
/* One update of params (P,) f32 from grads (P,) f32, in place; both on the optimiser's device. */
sl_status sl_optim_apply(sl_optim *o, sl_tensor *params, const sl_tensor *grads, sl_err *err);
/* One update of the model's params from its grads buffer. */
sl_status sl_optim_step(sl_optim *o, sl_mlp *m, sl_err *err);
/* Updates done so far (Adam's t). */
int64_t sl_optim_steps(const sl_optim *o);
const sl_optim_config *sl_optim_config_of(const sl_optim *o);
/* Optimiser state for checkpoints: the step count and the state vectors (0, 1 or 2 x n floats).
 * Same framing as the model file (magic "SLOPT\r\n\x1a", version, kind, n, steps, state, CRC-32).
 */
sl_status sl_optim_serialize(const sl_optim *o, void *buf, size_t cap, size_t *size, sl_err *err);
sl_status sl_optim_deserialize(sl_optim *o, const void *buf, size_t size, sl_err *err);

/* ---- the data-parallel step ----------------------------------------------------------------- */

#define SL_TRAINER_MAX_REPLICAS 64

typedef struct sl_trainer_config {
    sl_mlp_config model;
    sl_optim_config optim;
    int replicas;                               /* K >= 1 replicas in this process */
    sl_device devices[SL_TRAINER_MAX_REPLICAS]; /* replica k's device; sl_cpu() for cpu:K */
    /* Optional: K communicators, one per replica, made by the caller (MPI across processes, NCCL);
     * NULL: the trainer makes a local in-memory group of K. The trainer does not free them. */
    sl_comm *const *comms;
} sl_trainer_config;

/* The seed: one CPU replica, the default model and SGD lr 0.001. */
void sl_trainer_config_default(sl_trainer_config *cfg);

typedef struct sl_trainer sl_trainer;

/* Creates K replicas with identical initial weights, K optimisers and one worker thread per
 * replica. */
sl_status sl_trainer_create(const sl_trainer_config *cfg, sl_trainer **out, sl_err *err);
void sl_trainer_free(sl_trainer *t);
int sl_trainer_replicas(const sl_trainer *t);
/* Replica k's model and optimiser (for evaluation, saving, loading; all replicas hold the same
 * parameters after every step). Not to be used while a step runs. */
sl_mlp *sl_trainer_model(sl_trainer *t, int k);
sl_optim *sl_trainer_optim(sl_trainer *t, int k);
/* Copies replica 0's parameters (and optimiser state) to every other replica, e.g. after loading
 * a checkpoint into replica 0. */
sl_status sl_trainer_sync(sl_trainer *t, sl_err *err);

/* One data-parallel step: replica k runs forward/backward on its shard, the K flat gradients are
 * averaged (the seed's pmean), and every replica applies the same optimiser update.
 * images[k]: (B_k, sizes[0]) f32 on replica k's device;  labels[k]: (B_k, sizes[-1]) f32 one-hot.
 * The loss of each replica is the mean over its own shard (as in the seed), so with equal shards a
 * step equals one step on the whole batch; with unequal shards, small shards weigh more.
 * loss (may be NULL): the mean of the replicas' losses (over all ranks of the comm).
 * On an error in any replica, every replica stops, no update is applied anywhere (when the error
 * comes before the all-reduce) and the error of the lowest failing replica is returned. */
sl_status sl_trainer_step(sl_trainer *t, const sl_tensor *images, const sl_tensor *labels,
                          float *loss, sl_err *err);
/* Pipelined steps, for a loop that fetches the next batch while the GPUs compute (what
 * `sluice train` does): sl_trainer_step_async checks and queues one step like sl_trainer_step and
 * returns as soon as the step queued before it is done -- not this one -- with that step's loss in
 * *prev_loss (may be NULL; NAN when no step was in flight). sl_trainer_wait waits for the step in
 * flight and gives its loss (NAN when none). The step's images and labels must stay valid and
 * unchanged until the next sl_trainer_step_async, sl_trainer_step or sl_trainer_wait returns: an
 * sl_iter batch does, with prefetch_cpu >= 2. The results are the same bits as sl_trainer_step's.
 * An error of the step in flight is returned by the call that waits for it, and breaks the
 * trainer as in sl_trainer_step. On CPU replicas the step runs within the call; its loss is still
 * handed out one call later. Read the models (evaluate, save) after sl_trainer_wait. */
sl_status sl_trainer_step_async(sl_trainer *t, const sl_tensor *images, const sl_tensor *labels,
                                float *prev_loss, sl_err *err);
sl_status sl_trainer_wait(sl_trainer *t, float *loss, sl_err *err);
/* The same with one global batch split into K equal row ranges (B must be divisible by K).
 * images: (B, sizes[0]) f32, labels: (B, sizes[-1]) f32, on the CPU or (one device) shared. */
sl_status sl_trainer_step_global(sl_trainer *t, const sl_tensor *images, const sl_tensor *labels,
                                 float *loss, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
