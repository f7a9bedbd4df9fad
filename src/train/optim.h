/* SPDX-License-Identifier: Apache-2.0 */
/* The optimisers' CUDA side (optim.cu), driven by optim.c: the per-step scalars staged for the
 * update kernel, and the update itself. */
#ifndef SLUICE_TRAIN_OPTIM_H
#define SLUICE_TRAIN_OPTIM_H

#include "sluice/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

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
