/* C entry points of the CUDA code in src/cuda/ (compiled by nvcc as C++, called from C). Only CUDA
 * builds include this header; it pulls in no CUDA header itself, so C files stay CUDA-free. */
#ifndef SLUICE_CUDA_KERNELS_H
#define SLUICE_CUDA_KERNELS_H

#include "sluice/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* memcpy between host and device memory in any direction; stream NULL = synchronous. */
sl_status sl__cuda_memcpy(void *dst, bool dst_dev, const void *src, bool src_dev, size_t n,
                          void *stream, sl_err *err);
/* Sets n elements of elem bytes (1, 2, 4 or 8) to the bytes in value. */
sl_status sl__cuda_fill(void *data, size_t n, const unsigned char *value, size_t elem, void *stream,
                        sl_err *err);

/* Streams for pipeline stages: created on `device`, with the calling thread's device set too. */
sl_status sl__cuda_set_device(int device, sl_err *err);
sl_status sl__cuda_stream_create(int device, void **stream, sl_err *err);
sl_status sl__cuda_stream_sync(void *stream, sl_err *err);
void sl__cuda_stream_destroy(void *stream);

/* One optimiser update over n floats, the same float32 operations in the same order as optim.c's
 * CPU loops (no fused multiply-add), so CPU and GPU results agree to the bit. kind: SL_OPTIM_*;
 * the scalars are computed once per step by the caller. m, v: state (NULL where unused). */
typedef struct sl__cuda_optim_args {
    int kind, nesterov;
    float lr, wd, mu;                              /* SGD */
    float b1, b2, one_minus_b1, one_minus_b2, eps; /* Adam */
    float step_size, bc2_sqrt, decay;              /* Adam: per-step scalars */
} sl__cuda_optim_args;
sl_status sl__cuda_optim_update(const sl__cuda_optim_args *a, float *p, const float *g, float *m,
                                float *v, int64_t n, void *stream, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
