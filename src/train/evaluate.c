/* SPDX-License-Identifier: Apache-2.0 */
/* sluice/evaluate.h: class ids made one-hot for the trainer, replica by replica, in a ring of
 * buffers on each replica's device; and a model's accuracy over a validation iterator's epoch,
 * each sample scored once. */
#include "sluice/evaluate.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdlib.h>
#include <string.h>

struct sl_onehot {
    int64_t classes;
    int next;
    sl_tensor host[SL_MAX_DEVICES], dev[SL_MAX_DEVICES][SL_ONEHOT_RING];
    int32_t *ids; /* (B,) the ids as int32 on the host */
    int64_t nids;
};

sl_status sl_onehot_create(int64_t classes, sl_onehot **out, sl_err *err) {
    if (classes < 1 || classes > INT32_MAX)
        return sl_err_set(err, SL_EINVAL, "one-hot: %lld classes (1..%d)", (long long)classes,
                          INT32_MAX);
    sl_onehot *oh = sl__calloc(1, sizeof *oh, err);
    if (!oh) return SL_ENOMEM;
    oh->classes = classes;
    *out = oh;
    return SL_OK;
}

void sl_onehot_free(sl_onehot *oh) {
    if (!oh) return;
    for (int k = 0; k < SL_MAX_DEVICES; k++) {
        sl_tensor_free(&oh->host[k]);
        for (int r = 0; r < SL_ONEHOT_RING; r++) sl_tensor_free(&oh->dev[k][r]);
    }
    free(oh->ids);
    free(oh);
}

int64_t sl_onehot_classes(const sl_onehot *oh) {
    return oh->classes;
}

void sl_onehot_next(sl_onehot *oh) {
    oh->next = (oh->next + 1) % SL_ONEHOT_RING;
}

/* An integer id of any dtype at p, or -1 where it is no int32 class id. */
static int32_t id_at(const unsigned char *p, sl_dtype dtype) {
    int64_t v;
    switch (dtype) {
    case SL_DTYPE_U8:
        v = *p;
        break;
    case SL_DTYPE_I8:
        v = *(const int8_t *)p;
        break;
    case SL_DTYPE_U16:
        v = *(const uint16_t *)p;
        break;
    case SL_DTYPE_I16:
        v = *(const int16_t *)p;
        break;
    case SL_DTYPE_I64:
        v = *(const int64_t *)p;
        break;
    case SL_DTYPE_U32:
        v = *(const uint32_t *)p;
        break;
    case SL_DTYPE_U64:
        v = *(const uint64_t *)p > INT64_MAX ? -1 : (int64_t) * (const uint64_t *)p;
        break;
    default:
        v = -1;
        break;
    }
    return v < 0 || v > INT32_MAX ? -1 : (int32_t)v;
}

/* The ids (rows of them, any integer dtype, any device) as int32 into oh->ids. */
static sl_status host_ids(sl_onehot *oh, const sl_tensor *y, int64_t rows, sl_err *err) {
    if (oh->nids < rows) {
        int32_t *ids = realloc(oh->ids, (size_t)rows * sizeof *ids);
        if (!ids) return sl_err_set(err, SL_ENOMEM, "out of memory");
        oh->ids = ids;
        oh->nids = rows;
    }
    sl_tensor ids, ids_host;
    const int64_t ishape[1] = {rows};
    SL_TRY(sl_tensor_reshape(y, 1, ishape, &ids, err));
    SL_TRY(sl_tensor_wrap(&ids_host, oh->ids, SL_DTYPE_I32, sl_cpu(), 1, ishape, NULL));
    if (ids.dtype == SL_DTYPE_I32) return sl_tensor_copy(&ids_host, &ids, NULL, err);
    /* another integer type: through the host, value by value */
    sl_tensor tmp;
    SL_TRY(sl_tensor_alloc(&tmp, ids.dtype, sl_cpu(), 1, ishape, NULL, err));
    sl_status st = sl_tensor_copy(&tmp, &ids, NULL, err);
    for (int64_t i = 0; i < rows && !st; i++)
        oh->ids[i] =
            id_at((const unsigned char *)tmp.data + i * sl_dtype_size(ids.dtype), ids.dtype);
    sl_tensor_free(&tmp);
    return st;
}

sl_status sl_onehot_make(sl_onehot *oh, const sl_iter_batch *b, int k, const sl_tensor *y,
                         sl_device dev, sl_tensor *out, sl_err *err) {
    if (k < 0 || k >= SL_MAX_DEVICES)
        return sl_err_set(err, SL_EINVAL, "one-hot: replica %d (0..%d)", k, SL_MAX_DEVICES - 1);
    if (y->ndim < 1 || sl_dtype_is_float(y->dtype) || y->dtype == SL_DTYPE_BOOL)
        return sl_err_set(err, SL_EINVAL, "one-hot: labels are class ids of an integer type");
    int64_t rows = y->shape[0], C = oh->classes;
    const int64_t shape[2] = {rows, C};
    sl_tensor *h = &oh->host[k], *d = &oh->dev[k][oh->next];
    if (!h->data || h->shape[0] != rows) {
        sl_tensor_free(h);
        SL_TRY(sl_tensor_alloc(h, SL_DTYPE_F32, sl_cpu(), 2, shape, NULL, err));
    }
    SL_TRY(host_ids(oh, y, rows, err));
    float *f = h->data;
    memset(f, 0, (size_t)(rows * C) * sizeof *f);
    for (int64_t i = 0; i < rows; i++) {
        int32_t c = oh->ids[i];
        if (c >= 0 && c < C) {
            f[i * C + c] = 1.0f;
        } else if (b) {
            return sl_err_set(err, SL_EINVAL,
                              "record %s: label %d is not a class id in 0..%lld (num_classes=%lld)",
                              sl_iter_key(b, k, (int)i), (int)c, (long long)C - 1, (long long)C);
        } else {
            return sl_err_set(err, SL_EINVAL,
                              "row %lld: label %d is not a class id in 0..%lld (num_classes=%lld)",
                              (long long)i, (int)c, (long long)C - 1, (long long)C);
        }
    }
    if (!d->data || d->shape[0] != rows || d->device.kind != dev.kind || d->device.id != dev.id) {
        sl_tensor_free(d);
        SL_TRY(sl_tensor_alloc(d, SL_DTYPE_F32, dev, 2, shape, NULL, err));
    }
    SL_TRY(sl_tensor_copy(d, h, NULL, err));
    *out = *d;
    return SL_OK;
}

sl_status sl_evaluate_flat(const sl_tensor *x, int64_t inputs, sl_tensor *out, sl_err *err) {
    if (x->ndim == 2) {
        *out = *x;
        return SL_OK;
    }
    const int64_t shape[2] = {x->ndim > 0 ? x->shape[0] : 0, inputs};
    return sl_tensor_reshape(x, 2, shape, out, err);
}

sl_status sl_evaluate_accuracy(sl_mlp *m, sl_iter *val, const sl_iter_batch **first, int64_t inputs,
                               double *accuracy, sl_err *err) {
    int64_t correct = 0, scored = 0;
    const sl_iter_batch *b;
    sl_status st;
    while ((st = first && *first ? (b = *first, *first = NULL, SL_OK) : sl_iter_next(val, &b)) ==
           SL_OK) {
        sl_tensor x, xf, y;
        int64_t c = 0;
        SL_TRY(sl_iter_shard(b, 0, 0, &x, err));
        SL_TRY(sl_evaluate_flat(&x, inputs, &xf, err));
        SL_TRY(sl_iter_shard(b, 1, 0, &y, err));
        int64_t rows = xf.shape[0], valid = sl_iter_batch_valid(b, 0);
        if (valid > rows) valid = rows;
        if (valid < rows) {
            SL_TRY(sl_tensor_slice(&xf, 0, 0, valid, &xf, err));
            SL_TRY(sl_tensor_slice(&y, 0, 0, valid, &y, err));
        }
        if (valid > 0) SL_TRY(sl_mlp_evaluate(m, &xf, &y, &c, NULL, err));
        correct += c;
        scored += valid;
    }
    if (st != SL_EOF) return sl_err_set(err, st, "%s", sl_iter_errmsg(val));
    *accuracy = scored ? (double)correct / (double)scored : 0;
    sl_iter_reset(val);
    return SL_OK;
}
