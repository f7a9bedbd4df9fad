/* SPDX-License-Identifier: Apache-2.0 */
/* C entry points of the CUDA runtime code (cuda_runtime.cu, cuda_copy.cu): copies and fills
 * between host and device memory, device selection, streams. Declared for C and CUDA files alike;
 * defined only in CUDA builds, and pulls in no CUDA header itself. */
#ifndef SLUICE_CORE_CUDA_H
#define SLUICE_CORE_CUDA_H

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

/* Copies height rows of width bytes between pitched blocks (host or device, any direction). */
sl_status sl__cuda_memcpy2d(void *dst, bool dst_dev, size_t dpitch, const void *src, bool src_dev,
                            size_t spitch, size_t width, size_t height, void *stream, sl_err *err);

/* Streams for pipeline stages: created on `device`, with the calling thread's device set too. */
sl_status sl__cuda_set_device(int device, sl_err *err);
/* Creates the CUDA contexts of n GPUs at once, a thread each (each takes a fraction of a second;
 * made one after the other by the first calls on each device, they add up at start-up). */
sl_status sl__cuda_init_devices(const int *ids, int n, sl_err *err);
/* A non-blocking stream on device at CUDA priority `priority` (lower is more urgent); a priority
 * outside the device's range is an SL_EINVAL naming the range. */
sl_status sl__cuda_stream_create(int device, int priority, void **stream, sl_err *err);
sl_status sl__cuda_stream_sync(void *stream, sl_err *err);
void sl__cuda_stream_destroy(void *stream);

#ifdef __cplusplus
}
#endif
#endif
