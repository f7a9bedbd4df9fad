/* SPDX-License-Identifier: Apache-2.0 */
/* The outputs of an iterator's batches: one device's shard (a tensor or its sample list), the
 * global batch as one tensor (the shards stacked or concatenated in device order, copied into a
 * buffer the batch slot keeps), and a shard as a DLPack tensor for frameworks. */
#include "sluice/iterator.h"

#include "core/alloc.h"
#include "core/log.h"
#include "iter/iter_int.h"

#include <stdlib.h>
#include <string.h>

#ifdef SLUICE_HAVE_DLPACK
#include <dlpack/dlpack.h>
#endif

sl_status sl_iter_shard(const sl_iter_batch *b, int output, int dev, sl_tensor *out, sl_err *err) {
    if (dev < 0 || dev >= b->it->n)
        return sl_err_set(err, SL_EINVAL, "device %d of %d", dev, b->it->n);
    if (output < 0 || output >= b->it->nout)
        return sl_err_set(err, SL_EINVAL, "output %d of %d", output, b->it->nout);
    return sl_batch_tensor(b->b[dev], output, out, err);
}

const sl_tlist *sl_iter_shard_list(const sl_iter_batch *b, int output, int dev) {
    if (dev < 0 || dev >= b->it->n || output < 0 || output >= b->it->nout) return NULL;
    return sl_batch_output(b->b[dev], output);
}

sl_status sl_iter_global_shape(const sl_iter_batch *b, int output, int *ndim, int64_t *shape,
                               sl_err *err) {
    sl_tensor s;
    SL_TRY(sl_iter_shard(b, output, 0, &s, err));
    const sl_iter *it = b->it;
    if (it->layout == SL_LAYOUT_STACKED) {
        if (s.ndim + 1 > SL_MAX_DIMS) return sl_err_set(err, SL_EINVAL, "too many dims");
        shape[0] = it->n;
        memcpy(shape + 1, s.shape, (size_t)s.ndim * sizeof *shape);
        *ndim = s.ndim + 1;
    } else {
        memcpy(shape, s.shape, (size_t)s.ndim * sizeof *shape);
        shape[0] *= it->n;
        *ndim = s.ndim;
    }
    return SL_OK;
}

sl_status sl_iter_global(const sl_iter_batch *cb, int output, sl_tensor *out, sl_err *err) {
    sl_iter_batch *b = (sl_iter_batch *)cb;
    const sl_iter *it = b->it;
    if (output < 0 || output >= it->nout)
        return sl_err_set(err, SL_EINVAL, "output %d of %d", output, it->nout);
    if (b->global_ok[output]) {
        *out = b->global[output];
        out->alloc = NULL;
        return SL_OK;
    }
    int ndim;
    int64_t shape[SL_MAX_DIMS];
    SL_TRY(sl_iter_global_shape(b, output, &ndim, shape, err));
    sl_tensor s0;
    SL_TRY(sl_iter_shard(b, output, 0, &s0, err));
    sl_tensor *g = &b->global[output];
    bool fits = g->alloc && g->dtype == s0.dtype && g->ndim == ndim &&
                !memcmp(g->shape, shape, (size_t)ndim * sizeof *shape);
    if (!fits) {
        sl_tensor_free(g);
        SL_TRY(sl_tensor_alloc(g, s0.dtype, sl_cpu(), ndim, shape, NULL, err));
    }
    size_t off = 0;
    for (int d = 0; d < it->n; d++) {
        sl_tensor s;
        SL_TRY(sl_iter_shard(b, output, d, &s, err));
        if (s.dtype != s0.dtype || s.ndim != s0.ndim ||
            memcmp(s.shape, s0.shape, (size_t)s.ndim * 8))
            return sl_err_set(err, SL_EINVAL, "output %s: device %d's shard differs in shape",
                              it->names[output], d);
        sl_tensor dst;
        sl_tensor_wrap(&dst, (char *)g->data + off, s.dtype, sl_cpu(), s.ndim, s.shape, NULL);
        SL_TRY(sl_tensor_copy(&dst, &s, NULL, err));
        off += sl_tensor_nbytes(&s);
    }
    b->global_ok[output] = true;
    *out = *g;
    out->alloc = NULL;
    return SL_OK;
}

#ifdef SLUICE_HAVE_DLPACK
/* One export: the DLPack struct, its shape and strides, and the slot it keeps out of the pool. */
typedef struct {
    DLManagedTensor m;
    int64_t dims[2 * (SL_MAX_DIMS + 1)];
    sl__iter_exports *counts; /* shared with the iterator, which may be gone */
    int slot;
} dl_export;

/* May run in any thread (a framework's), at any time, even after sl_iter_free: it only counts
 * the slot's exports down and frees the wrapper; the iterator returns the slot at its next call. */
static void dl_deleter(DLManagedTensor *m) {
    dl_export *x = m->manager_ctx;
    atomic_fetch_sub_explicit(&x->counts->count[x->slot], 1, memory_order_release);
    sl__iter_exports_drop(x->counts);
    free(x);
}
#endif

sl_status sl_iter_dlpack(const sl_iter_batch *b, int output, int dev, int flags, void **managed,
                         sl_err *err) {
    *managed = NULL;
#ifdef SLUICE_HAVE_DLPACK
    if (flags & ~SL_DLPACK_STACKED)
        return sl_err_set(err, SL_EINVAL, "sl_iter_dlpack: flags 0x%x (0 or SL_DLPACK_STACKED)",
                          (unsigned)flags);
    sl_tensor s;
    SL_TRY(sl_iter_shard(b, output, dev, &s, err));
    dl_export *x = sl__calloc(1, sizeof *x, err);
    if (!x) return SL_ENOMEM;
    DLManagedTensor *m = &x->m;
    int lead = (flags & SL_DLPACK_STACKED) ? 1 : 0; /* (1, B, ...): a slice of (devices, B, ...) */
    m->dl_tensor.shape = x->dims;
    m->dl_tensor.strides = x->dims + SL_MAX_DIMS + 1;
    m->dl_tensor.data = s.data;
    m->dl_tensor.ndim = s.ndim + lead;
    size_t esz = sl_dtype_size(s.dtype);
    if (lead) {
        m->dl_tensor.shape[0] = 1;
        m->dl_tensor.strides[0] = s.ndim ? s.shape[0] * (s.strides[0] / (int64_t)esz) : 1;
    }
    for (int i = 0; i < s.ndim; i++) {
        m->dl_tensor.shape[lead + i] = s.shape[i];
        m->dl_tensor.strides[lead + i] = s.strides[i] / (int64_t)esz; /* in elements */
    }
    m->dl_tensor.device.device_type = s.device.kind == SL_DEVICE_CUDA ? kDLCUDA : kDLCPU;
    m->dl_tensor.device.device_id = s.device.id;
    DLDataType t = {kDLUInt, 8, 1};
    switch (s.dtype) {
    case SL_DTYPE_U8:
        t = (DLDataType){kDLUInt, 8, 1};
        break;
    case SL_DTYPE_I8:
        t = (DLDataType){kDLInt, 8, 1};
        break;
    case SL_DTYPE_U16:
        t = (DLDataType){kDLUInt, 16, 1};
        break;
    case SL_DTYPE_I16:
        t = (DLDataType){kDLInt, 16, 1};
        break;
    case SL_DTYPE_I32:
    case SL_DTYPE_INTERP: /* DALI's code of an interpolation type */
        t = (DLDataType){kDLInt, 32, 1};
        break;
    case SL_DTYPE_I64:
        t = (DLDataType){kDLInt, 64, 1};
        break;
    case SL_DTYPE_F16:
        t = (DLDataType){kDLFloat, 16, 1};
        break;
    case SL_DTYPE_BF16:
        t = (DLDataType){kDLBfloat, 16, 1};
        break;
    case SL_DTYPE_F32:
        t = (DLDataType){kDLFloat, 32, 1};
        break;
    case SL_DTYPE_F64:
        t = (DLDataType){kDLFloat, 64, 1};
        break;
    case SL_DTYPE_BOOL:
        t = (DLDataType){kDLUInt, 8, 1};
        break; /* DLPack < 0.8 has no bool */
    case SL_DTYPE_U32:
        t = (DLDataType){kDLUInt, 32, 1};
        break;
    case SL_DTYPE_U64:
        t = (DLDataType){kDLUInt, 64, 1};
        break;
    case SL_DTYPE_COUNT:
        break;
    }
    m->dl_tensor.dtype = t;
    m->manager_ctx = x;
    m->deleter = dl_deleter;
    /* the slot's memory stays out of the pool until the deleter runs */
    x->counts = b->it->exports;
    x->slot = b->index;
    atomic_fetch_add_explicit(&x->counts->refs, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&x->counts->count[x->slot], 1, memory_order_relaxed);
    *managed = m;
    return SL_OK;
#else
    (void)b, (void)output, (void)dev, (void)flags;
    return sl_err_set(err, SL_ENOTSUP, "this build of sluice has no DLPack (dlpack/dlpack.h)");
#endif
}
