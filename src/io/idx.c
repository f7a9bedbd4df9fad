/* SPDX-License-Identifier: Apache-2.0 */
/* IDX files (see idx.h): loaded with gzread (gzip or plain), header checked against the size. */
#include "io/idx.h"

#include "core/alloc.h"
#include "core/size.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

struct sl__idx {
    char *path;
    uint8_t *buf;
    size_t size;
    int type, ndim;
    int64_t dims[8];
    size_t item_size;
    const uint8_t *items;
};

static int type_size(int t) {
    switch (t) {
    case SL_IDX_U8:
    case SL_IDX_I8:
        return 1;
    case SL_IDX_I16:
        return 2;
    case SL_IDX_I32:
    case SL_IDX_F32:
        return 4;
    case SL_IDX_F64:
        return 8;
    default:
        return 0;
    }
}

sl_status sl__idx_open(const char *path, sl__idx **out, sl_err *err) {
    *out = NULL;
    struct stat sb;
    if (stat(path, &sb) != 0)
        return sl_err_set(err, errno == ENOENT ? SL_ENOENT : SL_EIO, "%s: %s", path,
                          strerror(errno));
    if (!S_ISREG(sb.st_mode)) return sl_err_set(err, SL_EFORMAT, "%s: not an IDX file", path);
    gzFile g = gzopen(path, "rb");
    if (!g) return sl_err_set(err, SL_EIO, "%s: cannot open", path);
    sl__idx *x = sl__calloc(1, sizeof *x, err);
    if (!x) {
        gzclose(g);
        return SL_ENOMEM;
    }
    x->path = strdup(path);
    size_t cap = (size_t)sb.st_size + 16, n = 0;
    sl_status st = SL_OK;
    x->buf = malloc(cap);
    for (;;) {
        if (!x->buf) {
            st = sl_err_set(err, SL_ENOMEM, "%s: out of memory (%zu bytes)", path, cap);
            break;
        }
        if (n == cap) {
            cap *= 2;
            uint8_t *nb = realloc(x->buf, cap);
            if (!nb) free(x->buf);
            x->buf = nb;
            continue;
        }
        unsigned want = cap - n > (1u << 30) ? (1u << 30) : (unsigned)(cap - n);
        int got = gzread(g, x->buf + n, want);
        if (got < 0) {
            int zerr;
            st = sl_err_set(err, SL_EFORMAT, "%s: gzip error: %s", path, gzerror(g, &zerr));
            break;
        }
        if (got == 0) break;
        n += (size_t)got;
    }
    gzclose(g);
    x->size = n;
    if (!st && n < 4) st = sl_err_set(err, SL_EFORMAT, "%s: not an IDX file (too short)", path);
    if (!st) {
        const uint8_t *b = x->buf;
        x->type = b[2];
        x->ndim = b[3];
        if (b[0] || b[1] || !type_size(x->type) || x->ndim < 1 || x->ndim > 8)
            st = sl_err_set(err, SL_EFORMAT, "%s: not an IDX file (magic %02x%02x%02x%02x)", path,
                            b[0], b[1], b[2], b[3]);
    }
    if (!st && n < 4 + 4 * (size_t)x->ndim)
        st = sl_err_set(err, SL_EFORMAT, "%s: truncated IDX header", path);
    if (!st) {
        /* every extent is at most 2^32 - 1; their product (with the type's size) is checked
           before it is compared with the data, so a header that wraps cannot match a short file */
        size_t item = (size_t)type_size(x->type), need = 0;
        size_t have = n - 4 - 4 * (size_t)x->ndim;
        for (int d = 0; d < x->ndim; d++) {
            const uint8_t *p = x->buf + 4 + 4 * d;
            x->dims[d] =
                (int64_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
        }
        if (sl__size_shape(x->dims + 1, x->ndim - 1, item, &item, NULL) != SL__SIZE_OK ||
            sl__size_shape(x->dims, 1, item, &need, NULL) != SL__SIZE_OK) {
            char ext[8 * 12] = "";
            for (int d = 0, k = 0; d < x->ndim; d++)
                k += snprintf(ext + k, sizeof ext - (size_t)k, d ? "x%lld" : "%lld",
                              (long long)x->dims[d]);
            st = sl_err_set(err, SL_EFORMAT,
                            "%s: IDX header's extents %s give more than %zu bytes, "
                            "the file holds %zu bytes of data",
                            path, ext, SL__SIZE_LIMIT, have);
        } else if (have != need) {
            st = sl_err_set(err, SL_EFORMAT,
                            "%s: IDX header says %lld items of %zu bytes (%zu), "
                            "the file holds %zu bytes of data",
                            path, (long long)x->dims[0], item, need, have);
        }
        x->item_size = item;
        x->items = x->buf + 4 + 4 * x->ndim;
    }
    if (st) {
        sl__idx_close(x);
        return st;
    }
    *out = x;
    return SL_OK;
}

int64_t sl__idx_count(const sl__idx *x) {
    return x->dims[0];
}
int sl__idx_ndim(const sl__idx *x) {
    return x->ndim;
}
const int64_t *sl__idx_dims(const sl__idx *x) {
    return x->dims;
}
int sl__idx_type(const sl__idx *x) {
    return x->type;
}
const char *sl__idx_path(const sl__idx *x) {
    return x->path;
}

const uint8_t *sl__idx_item(const sl__idx *x, int64_t i, size_t *size) {
    *size = x->item_size;
    return x->items + (size_t)i * x->item_size;
}

void sl__idx_close(sl__idx *x) {
    if (!x) return;
    free(x->path);
    free(x->buf);
    free(x);
}
