/* SPDX-License-Identifier: Apache-2.0 */
/* Host-made samples to a GPU output: the samples' bytes and one copy descriptor each are laid out
 * in the op's pinned params block, sent in one copy, and moved to the outputs by cast's byte-copy
 * kernel (ops/cast.cu). */
#include "ops/upload.h"

#include "core/log.h"

#include <string.h>

#ifdef SLUICE_HAVE_CUDA
#include "ops/cast.h"

sl_status sl__upload_samples(sl__gpu_args *g, const sl__op_io *io, const void *const *src,
                             const size_t *bytes, sl_err *err) {
    size_t head = sl__gpu_args_align((size_t)io->batch * sizeof(sl__cuda_cast_desc)), total = head;
    int64_t maxn = 0;
    for (int i = 0; i < io->batch; i++) {
        total += sl__gpu_args_align(bytes[i]);
        if ((int64_t)bytes[i] > maxn) maxn = (int64_t)bytes[i];
    }
    unsigned char *h = sl__gpu_args_host(g, io->device.id, total, err);
    if (!h) return err->status;
    sl__cuda_cast_desc *d = (sl__cuda_cast_desc *)h;
    size_t at = head;
    for (int i = 0; i < io->batch; i++) {
        memcpy(h + at, src[i], bytes[i]);
        d[i].in = (const unsigned char *)g->dev + at;
        d[i].out = io->out[0]->data[i];
        d[i].n = (int64_t)bytes[i];
        at += sl__gpu_args_align(bytes[i]);
    }
    void *dd;
    SL_TRY(sl__gpu_args_send(g, total, io->stream, &dd, err));
    return sl__cuda_cast(dd, io->batch, maxn, SL_DTYPE_U8, SL_DTYPE_U8, io->stream, err);
}
#else
sl_status sl__upload_samples(sl__gpu_args *g, const sl__op_io *io, const void *const *src,
                             const size_t *bytes, sl_err *err) {
    (void)g, (void)io, (void)src, (void)bytes;
    return sl_err_set(err, SL_ENOTSUP, "this build of sluice has no CUDA");
}
#endif
