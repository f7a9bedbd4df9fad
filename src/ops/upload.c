/* SPDX-License-Identifier: Apache-2.0 */
/* Host-made samples to a GPU output: the samples' bytes and one copy descriptor each are laid out
 * in the op's pinned params block, sent in one copy, and moved to the outputs by cast's byte-copy
 * kernel (ops/cast.cu). */
#include "ops/upload.h"

#include "core/log.h"

#include <string.h>

#ifdef SLUICE_HAVE_CUDA
#include "ops/cast.h"

sl_status sl__upload_samples(sl__gpu_args *g, const sl__op_io *io, sl__upload_src sample,
                             const void *ctx, sl_err *err) {
    const sl_tlist *out = io->out[0];
    size_t head = sl__gpu_args_align((size_t)io->batch * sizeof(sl__cuda_cast_desc)), total = head;
    int64_t maxn = 0;
    for (int i = 0; i < io->batch; i++) {
        size_t n = sl_tlist_sample_nbytes(out, i);
        total += sl__gpu_args_align(n);
        if ((int64_t)n > maxn) maxn = (int64_t)n;
    }
    unsigned char *h = sl__gpu_args_host(g, io->device.id, total, err);
    if (!h) return err->status;
    sl__cuda_cast_desc *d = (sl__cuda_cast_desc *)h;
    size_t at = head;
    for (int i = 0; i < io->batch; i++) {
        size_t n = sl_tlist_sample_nbytes(out, i);
        if (n) memcpy(h + at, sample(ctx, io, i), n);
        d[i].in = (const unsigned char *)g->dev + at;
        d[i].out = out->data[i];
        d[i].n = (int64_t)n;
        at += sl__gpu_args_align(n);
    }
    void *dd;
    SL_TRY(sl__gpu_args_send(g, total, io->stream, &dd, err));
    return sl__cuda_cast(dd, io->batch, maxn, SL_DTYPE_U8, SL_DTYPE_U8, io->stream, err);
}
#else
sl_status sl__upload_samples(sl__gpu_args *g, const sl__op_io *io, sl__upload_src sample,
                             const void *ctx, sl_err *err) {
    (void)g, (void)io, (void)sample, (void)ctx;
    return sl_err_set(err, SL_ENOTSUP, "this build of sluice has no CUDA");
}
#endif
