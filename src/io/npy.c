/* SPDX-License-Identifier: Apache-2.0 */
/* NumPy .npy headers (npy.h). The format: the magic "\x93NUMPY", a major and minor version byte,
 * the header's length (2 bytes little-endian in version 1, 4 bytes in versions 2 and 3), then the
 * header: a Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded
 * with spaces to a multiple of 64 bytes and ended by a newline; the array's bytes follow. */
#include "io/npy.h"

#include "core/alloc.h"
#include "core/log.h"
#include "core/size.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NPY_HEADER_MAX (1u << 20) /* a longer header is refused (NumPy's own limit is 10,000) */

/* The value after key's colon in the dict text [p, end), or NULL when the key is absent. */
static const char *find_key(const char *p, const char *end, const char *key) {
    size_t k = strlen(key);
    for (; p + k + 2 <= end; p++) {
        if ((*p != '\'' && *p != '"') || p[k + 1] != *p || memcmp(p + 1, key, k) != 0) continue;
        const char *q = p + k + 2;
        while (q < end && isspace((unsigned char)*q)) q++;
        if (q >= end || *q != ':') continue;
        for (q++; q < end && isspace((unsigned char)*q); q++) {
        }
        return q < end ? q : NULL;
    }
    return NULL;
}

static sl_status parse_descr(const char *v, const char *end, sl__npy_header *h, sl_err *err) {
    if (*v == '[') return sl_err_set(err, SL_ENOTSUP, "structured data types are not supported");
    if (*v != '\'' && *v != '"')
        return sl_err_set(err, SL_EFORMAT, "header: descr is not a string");
    const char *s = v + 1, *close = memchr(s, *v, (size_t)(end - s));
    if (!close || close - s > 15) return sl_err_set(err, SL_EFORMAT, "header: bad descr");
    char d[16];
    memcpy(d, s, (size_t)(close - s));
    d[close - s] = '\0';
    const char *t = d;
    char order = '=';
    if (*t == '<' || *t == '>' || *t == '|' || *t == '=') order = *t++;
    static const struct {
        const char *code;
        sl_dtype dtype;
    } map[] = {{"b1", SL_DTYPE_BOOL}, {"u1", SL_DTYPE_U8},  {"i1", SL_DTYPE_I8},
               {"u2", SL_DTYPE_U16},  {"i2", SL_DTYPE_I16}, {"i4", SL_DTYPE_I32},
               {"i8", SL_DTYPE_I64},  {"f2", SL_DTYPE_F16}, {"f4", SL_DTYPE_F32},
               {"f8", SL_DTYPE_F64},  {"u4", SL_DTYPE_U32}, {"u8", SL_DTYPE_U64}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        if (strcmp(t, map[i].code) != 0) continue;
        if (order == '>' && sl_dtype_size(map[i].dtype) > 1)
            return sl_err_set(err, SL_ENOTSUP,
                              "data type '%s' is big-endian (save it little-endian: "
                              "a.astype(a.dtype.newbyteorder('<')))",
                              d);
        h->dtype = map[i].dtype;
        return SL_OK;
    }
    return sl_err_set(err, SL_ENOTSUP,
                      "data type '%s' is not one sluice has (bool, uint8, int8, uint16, int16, "
                      "int32, int64, float16, float32, float64)",
                      d);
}

static sl_status parse_shape(const char *v, const char *end, sl__npy_header *h, sl_err *err) {
    if (*v != '(') return sl_err_set(err, SL_EFORMAT, "header: shape is not a tuple");
    const char *p = v + 1;
    h->ndim = 0;
    for (;;) {
        while (p < end && isspace((unsigned char)*p)) p++;
        if (p < end && *p == ')') return SL_OK;
        if (p >= end || !isdigit((unsigned char)*p))
            return sl_err_set(err, SL_EFORMAT, "header: bad shape");
        if (h->ndim == SL_MAX_DIMS)
            return sl_err_set(err, SL_ENOTSUP, "more than %d dimensions", SL_MAX_DIMS);
        int64_t x = 0; /* read within [p, end): the header is not NUL-terminated */
        for (; p < end && isdigit((unsigned char)*p); p++)
            if (__builtin_mul_overflow(x, 10, &x) || __builtin_add_overflow(x, *p - '0', &x))
                return sl_err_set(err, SL_EFORMAT, "header: an extent overflows");
        h->shape[h->ndim++] = x;
        if (p < end && *p == 'L') p++; /* written by Python 2 */
        while (p < end && isspace((unsigned char)*p)) p++;
        if (p < end && *p == ',')
            p++;
        else if (p >= end || *p != ')')
            return sl_err_set(err, SL_EFORMAT, "header: bad shape");
    }
}

sl_status sl__npy_parse(const uint8_t *buf, size_t len, sl__npy_header *h, size_t *need,
                        sl_err *err) {
    memset(h, 0, sizeof *h);
    *need = 12;
    if (memcmp(buf, "\x93NUMPY", len < 6 ? len : 6) != 0)
        return sl_err_set(err, SL_EFORMAT, "not a .npy file (no \\x93NUMPY magic)");
    if (len < 10) return SL_EOF;
    int major = buf[6];
    if (major < 1 || major > 3)
        return sl_err_set(err, SL_ENOTSUP, ".npy format version %d.%d (1.0-3.0 supported)", major,
                          buf[7]);
    size_t start = major == 1 ? 10 : 12;
    if (len < start) return SL_EOF;
    size_t hlen = major == 1 ? (size_t)buf[8] | (size_t)buf[9] << 8
                             : (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 |
                                   (size_t)buf[11] << 24;
    if (hlen > NPY_HEADER_MAX)
        return sl_err_set(err, SL_ENOTSUP, "a header of %zu bytes (at most %u)", hlen,
                          NPY_HEADER_MAX);
    *need = start + hlen;
    if (len < *need) return SL_EOF;
    const char *p = (const char *)buf + start, *end = p + hlen;
    const char *descr = find_key(p, end, "descr"), *order = find_key(p, end, "fortran_order"),
               *shape = find_key(p, end, "shape");
    if (!descr || !order || !shape)
        return sl_err_set(err, SL_EFORMAT, "header lacks '%s'",
                          !descr   ? "descr"
                          : !order ? "fortran_order"
                                   : "shape");
    SL_TRY(parse_descr(descr, end, h, err));
    if (end - order >= 4 && !memcmp(order, "True", 4))
        h->fortran = true;
    else if (!(end - order >= 5 && !memcmp(order, "False", 5)))
        return sl_err_set(err, SL_EFORMAT, "header: fortran_order is neither True nor False");
    SL_TRY(parse_shape(shape, end, h, err));
    size_t n;
    if (sl__size_shape(h->shape, h->ndim, sl_dtype_size(h->dtype), &n, NULL) != SL__SIZE_OK)
        return sl_err_set(err, SL_EFORMAT,
                          "header: the shape's size overflows (more than %zu bytes)",
                          SL__SIZE_LIMIT);
    h->nbytes = n;
    h->data_offset = *need;
    return SL_OK;
}

sl_status sl__npy_read_header(int fd, size_t file_size, sl__npy_header *h, sl_err *err) {
    uint8_t head[128];
    size_t len = file_size < sizeof head ? file_size : sizeof head, need = 0;
    ssize_t got = pread(fd, head, len, 0);
    if (got < 0) return sl_err_set(err, SL_EIO, "read error: %s", strerror(errno));
    sl_status st = sl__npy_parse(head, (size_t)got, h, &need, err);
    if (st == SL_EOF && need > file_size)
        return sl_err_set(err, SL_EFORMAT, "truncated: %zu bytes, the header alone needs %zu",
                          file_size, need);
    if (st == SL_EOF) { /* a long header */
        uint8_t *big = sl__malloc(need, err);
        if (!big) return SL_ENOMEM;
        got = pread(fd, big, need, 0);
        if (got < 0)
            st = sl_err_set(err, SL_EIO, "read error: %s", strerror(errno));
        else
            st = sl__npy_parse(big, (size_t)got, h, &need, err);
        if (st == SL_EOF) st = sl_err_set(err, SL_EIO, "short read of the header");
        free(big);
    }
    if (st != SL_OK) return st;
    if (file_size - h->data_offset != h->nbytes)
        return sl_err_set(err, SL_EFORMAT,
                          "the header describes %zu bytes of data, the file holds %zu after it",
                          h->nbytes, file_size - h->data_offset);
    return SL_OK;
}

void sl__npy_fortran_to_c(const sl__npy_header *h, const uint8_t *src, uint8_t *dst) {
    size_t e = sl_dtype_size(h->dtype), count = h->nbytes / (e ? e : 1);
    int n = h->ndim;
    if (count == 0) return;
    size_t fstride[SL_MAX_DIMS];
    int64_t idx[SL_MAX_DIMS] = {0};
    for (int d = 0; d < n; d++) fstride[d] = d ? fstride[d - 1] * (size_t)h->shape[d - 1] : e;
    size_t off = 0; /* src offset of the element at idx (C order: the last index fastest) */
    for (size_t k = 0; k < count; k++) {
        memcpy(dst + k * e, src + off, e);
        for (int d = n - 1; d >= 0; d--) {
            if (++idx[d] < h->shape[d]) {
                off += fstride[d];
                break;
            }
            off -= fstride[d] * (size_t)(h->shape[d] - 1);
            idx[d] = 0;
        }
    }
}
