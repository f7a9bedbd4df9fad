/* SPDX-License-Identifier: Apache-2.0 */
/* Host-made samples to a GPU output (upload.c): ops whose values are decided on the CPU (shapes,
 * constant) send them to their device output in one transfer and one copy kernel. */
#ifndef SLUICE_OPS_UPLOAD_H
#define SLUICE_OPS_UPLOAD_H

#include "operator/gpu_args.h"
#include "operator/op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The host bytes sample(ctx, io, i) points at into io->out[0]->data[i] (device memory, allocated:
 * as many bytes as that sample holds), for every sample of the batch; asynchronous on io->stream
 * (the params block stays valid until the GPU stage's next batch). */
typedef const void *(*sl__upload_src)(const void *ctx, const sl__op_io *io, int i);
sl_status sl__upload_samples(sl__gpu_args *g, const sl__op_io *io, sl__upload_src sample,
                             const void *ctx, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
