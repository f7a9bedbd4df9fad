/* SPDX-License-Identifier: Apache-2.0 */
/* The internal side of sl_optim: what its callers (the model, the trainer) use beyond the public
 * API -- an update queued without waiting, and a CUDA optimiser's update in parts for a step graph
 * (optim.c) -- and the optimisers' CUDA side (optim.cu), driven by optim.c: the per-step scalars
 * staged for the update kernel, and the update itself. The optimiser knows nothing of the model:
 * its callers pass the buffers and the stream. */
#ifndef SLUICE_TRAIN_OPTIM_H
#define SLUICE_TRAIN_OPTIM_H

#include "sluice/status.h"
#include "sluice/train.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- optim.c: for the model and the trainer ---- */

/* One update of params from grads (contiguous float32[n] on o's device, checked as for
 * sl_optim_apply): at once on the CPU; for a CUDA optimiser queued on stream (a cudaStream_t, NULL:
 * the legacy default stream) without waiting (optim.c). */
sl_status sl__optim_apply_async(sl_optim *o, sl_tensor *params, const sl_tensor *grads,
                                void *stream, sl_err *err);

/* A CUDA optimiser's update split for a backend that captures it into its step graph (optim.c):
 * prepare counts the step and stages its scalars in pinned memory (waiting until the previous
 * update has copied the last ones to the device); cancel undoes prepare's count when the step
 * then fails; copy_args queues the copy of the staged scalars to the device, and update the update
 * of p[off, off + n) from g (and o's state) on stream, its kernel reading the scalars there -- both
 * capturable, so a replayed graph picks up each step's scalars; an update split into parts (by
 * layers) copies once, before the first part; mark records, after the queued (or replayed) work,
 * that the staged scalars are in use until it is done. */
sl_status sl__optim_cuda_prepare(sl_optim *o, sl_err *err);
void sl__optim_cuda_cancel(sl_optim *o);
sl_status sl__optim_cuda_copy_args(sl_optim *o, void *stream, sl_err *err);
sl_status sl__optim_cuda_update(sl_optim *o, float *p, const float *g, int64_t off, int64_t n,
                                void *stream, sl_err *err);
sl_status sl__optim_cuda_mark(sl_optim *o, void *stream, sl_err *err);

/* ---- optim.cu: for optim.c ---- */

/* One optimiser update over n floats, the same float32 operations in the same order as optim.c's
 * CPU loops (no fused multiply-add), so CPU and GPU results agree to the bit. kind: SL_OPTIM_*;
 * the scalars are computed once per step by the caller. m, v: state (NULL where unused). */
typedef struct sl__cuda_optim_args {
    int kind, nesterov;
    float lr, wd, mu;                              /* SGD */
    float b1, b2, one_minus_b1, one_minus_b2, eps; /* Adam */
    float step_size, bc2_sqrt, decay;              /* Adam: per-step scalars */
} sl__cuda_optim_args;
/* Per optimiser on a device: the scalars staged in pinned memory and their device copy, which the
 * kernels read (so a CUDA graph that captured an update stays valid as Adam's scalars change).
 * initial: the scalars (SGD's never change; they are copied once here). */
typedef struct sl__cuda_optim_state sl__cuda_optim_state;
sl_status sl__cuda_optim_state_create(int device, const sl__cuda_optim_args *initial,
                                      sl__cuda_optim_state **out, sl_err *err);
void sl__cuda_optim_state_free(sl__cuda_optim_state *s);
/* Stages this step's scalars (waits until the previous queued update has copied the last ones). */
sl_status sl__cuda_optim_stage(sl__cuda_optim_state *s, const sl__cuda_optim_args *a, sl_err *err);
/* Queues the update on stream (capturable): copy of the staged scalars, then the kernel. */
sl_status sl__cuda_optim_enqueue(sl__cuda_optim_state *s, float *p, const float *g, float *m,
                                 float *v, int64_t n, void *stream, sl_err *err);
/* Records, after work queued on stream (not while capturing), that the staged scalars are in use
 * until that work is done. */
sl_status sl__cuda_optim_mark(sl__cuda_optim_state *s, void *stream, sl_err *err);
/* enqueue's two parts: the copy of the staged scalars to the device (none for SGD, whose scalars
 * never change), then the update kernel over n floats (p, g, m, v at the same offset), which reads
 * them; an update split into ranges copies once, before the first range. */
sl_status sl__cuda_optim_copy_args(sl__cuda_optim_state *s, void *stream, sl_err *err);
sl_status sl__cuda_optim_update(sl__cuda_optim_state *s, float *p, const float *g, float *m,
                                float *v, int64_t n, void *stream, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
