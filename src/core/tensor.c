/* SPDX-License-Identifier: Apache-2.0 */
/* sl_tensor descriptors, views and copies, and sl_tlist sample lists. Device copies and fills go
 * through CUDA (src/core/cuda_copy.cu) in CUDA builds; host copies handle any byte strides. */
#include "sluice/tensor.h"

#include "core/alloc.h"
#include "core/half.h"
#include "core/log.h"
#include "core/size.h"
#ifdef SLUICE_HAVE_CUDA
#include "core/cuda.h"
#endif

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const struct {
    const char *name;
    size_t size;
} dtype_info[SL_DTYPE_COUNT] = {
#define SL__DTYPE_INFO(e, name, size) {name, size},
    SL_DTYPE_TABLE(SL__DTYPE_INFO)
#undef SL__DTYPE_INFO
};

size_t sl_dtype_size(sl_dtype t) {
    return (unsigned)t < SL_DTYPE_COUNT ? dtype_info[t].size : 0;
}
const char *sl_dtype_name(sl_dtype t) {
    return (unsigned)t < SL_DTYPE_COUNT ? dtype_info[t].name : "?";
}
bool sl_dtype_is_float(sl_dtype t) {
    return t == SL_DTYPE_F16 || t == SL_DTYPE_BF16 || t == SL_DTYPE_F32 || t == SL_DTYPE_F64;
}

sl_status sl_dtype_parse(const char *s, sl_dtype *out) {
    static const struct {
        const char *alias;
        sl_dtype t;
    } aliases[] = {
        {"FLOAT", SL_DTYPE_F32},     {"FLOAT32", SL_DTYPE_F32},   {"FLOAT16", SL_DTYPE_F16},
        {"HALF", SL_DTYPE_F16},      {"FLOAT64", SL_DTYPE_F64},   {"DOUBLE", SL_DTYPE_F64},
        {"BFLOAT16", SL_DTYPE_BF16}, {"UINT8", SL_DTYPE_U8},      {"INT8", SL_DTYPE_I8},
        {"UINT16", SL_DTYPE_U16},    {"INT16", SL_DTYPE_I16},     {"INT32", SL_DTYPE_I32},
        {"INT64", SL_DTYPE_I64},     {"BOOL", SL_DTYPE_BOOL},     {"F32", SL_DTYPE_F32},
        {"F16", SL_DTYPE_F16},       {"BF16", SL_DTYPE_BF16},     {"F64", SL_DTYPE_F64},
        {"U8", SL_DTYPE_U8},         {"I8", SL_DTYPE_I8},         {"U16", SL_DTYPE_U16},
        {"I16", SL_DTYPE_I16},       {"I32", SL_DTYPE_I32},       {"I64", SL_DTYPE_I64},
        {"UINT32", SL_DTYPE_U32},    {"UINT64", SL_DTYPE_U64},    {"U32", SL_DTYPE_U32},
        {"U64", SL_DTYPE_U64},       {"INTERP", SL_DTYPE_INTERP}, {"INTERP_TYPE", SL_DTYPE_INTERP}};
    for (int t = 0; t < SL_DTYPE_COUNT; t++) {
        if (strcmp(s, dtype_info[t].name) == 0) {
            *out = (sl_dtype)t;
            return SL_OK;
        }
    }
    for (size_t i = 0; i < SL_ARRAY_LEN(aliases); i++) {
        if (strcasecmp(s, aliases[i].alias) == 0) {
            *out = aliases[i].t;
            return SL_OK;
        }
    }
    return SL_EINVAL;
}

/* ---- tensors -------------------------------------------------------------------------------- */

void sl_tensor_set_strides_contiguous(sl_tensor *t) {
    int64_t s = (int64_t)sl_dtype_size(t->dtype);
    for (int i = t->ndim - 1; i >= 0; i--) {
        t->strides[i] = s;
        s *= t->shape[i];
    }
}

static sl_status set_layout(char *dst, int ndim, const char *layout, sl_err *err) {
    if (!layout) layout = "";
    size_t n = strlen(layout);
    if (n != 0 && (int)n != ndim)
        return sl_err_set(err, SL_EINVAL, "layout \"%s\" has %zu letters for a %d-dim tensor",
                          layout, n, ndim);
    memcpy(dst, layout, n + 1);
    return SL_OK;
}

sl_status sl_tensor_set_layout(sl_tensor *t, const char *layout, sl_err *err) {
    return set_layout(t->layout, t->ndim, layout, err);
}

static sl_status init_desc(sl_tensor *t, sl_dtype dtype, sl_device device, int ndim,
                           const int64_t *shape, const char *layout, sl_err *err) {
    if ((unsigned)dtype >= SL_DTYPE_COUNT) return sl_err_set(err, SL_EINVAL, "bad dtype %d", dtype);
    if (ndim < 0 || ndim > SL_MAX_DIMS)
        return sl_err_set(err, SL_EINVAL, "%d dims (at most %d)", ndim, SL_MAX_DIMS);
    memset(t, 0, sizeof *t);
    t->dtype = dtype;
    t->device = device;
    t->ndim = ndim;
    size_t bytes;
    int bad = 0;
    switch (sl__size_shape(shape, ndim, sl_dtype_size(dtype), &bytes, &bad)) {
    case SL__SIZE_NEGATIVE:
        return sl_err_set(err, SL_EINVAL, "negative extent %lld in dim %d", (long long)shape[bad],
                          bad);
    case SL__SIZE_OVERFLOW:
        return sl_err_set(err, SL_EINVAL,
                          "a %s tensor of this shape (extent %lld in dim %d) holds more than %zu "
                          "bytes",
                          sl_dtype_name(dtype), (long long)shape[bad], bad, SL__SIZE_LIMIT);
    case SL__SIZE_OK:
        break;
    }
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
    sl_tensor_set_strides_contiguous(t);
    return set_layout(t->layout, ndim, layout, err);
}

sl_status sl_tensor_wrap(sl_tensor *t, void *data, sl_dtype dtype, sl_device device, int ndim,
                         const int64_t *shape, const char *layout) {
    SL_TRY(init_desc(t, dtype, device, ndim, shape, layout, NULL));
    t->data = data;
    return SL_OK;
}

sl_status sl_tensor_alloc(sl_tensor *t, sl_dtype dtype, sl_device device, int ndim,
                          const int64_t *shape, const char *layout, sl_err *err) {
    SL_TRY(init_desc(t, dtype, device, ndim, shape, layout, err));
    size_t n = sl_tensor_nbytes(t);
    if (device.kind == SL_DEVICE_CPU) {
        t->data = sl__alloc_host(n, SL_ALIGN, err);
        if (!t->data) return SL_ENOMEM;
        t->alloc = t->data;
    } else {
        sl__devpool *pool = sl__devpool_get(device.id, err);
        if (!pool) return err ? err->status : SL_ENOTSUP;
        t->data = sl__devpool_alloc(pool, n, err);
        if (!t->data) return SL_ENOMEM;
        t->alloc = pool;
    }
    return SL_OK;
}

void sl_tensor_free(sl_tensor *t) {
    if (!t || !t->alloc) return;
    if (t->device.kind == SL_DEVICE_CPU)
        sl__alloc_host_free(t->alloc);
    else
        sl__devpool_free((sl__devpool *)t->alloc, t->data);
    t->alloc = NULL;
    t->data = NULL;
}

int64_t sl_tensor_numel(const sl_tensor *t) {
    size_t n;
    if (sl__size_shape(t->shape, t->ndim, 1, &n, NULL) != SL__SIZE_OK) return -1;
    return (int64_t)n;
}

size_t sl_tensor_nbytes(const sl_tensor *t) {
    size_t n;
    if (sl__size_shape(t->shape, t->ndim, sl_dtype_size(t->dtype), &n, NULL) != SL__SIZE_OK)
        return SIZE_MAX;
    return n;
}

bool sl_tensor_is_contiguous(const sl_tensor *t) {
    int64_t s = (int64_t)sl_dtype_size(t->dtype);
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] != 1 && t->strides[i] != s) return false;
        s *= t->shape[i];
    }
    return true;
}

static void as_view(sl_tensor *out, const sl_tensor *t) {
    if (out != t) *out = *t;
    out->alloc = NULL;
}

sl_status sl_tensor_slice(const sl_tensor *t, int dim, int64_t start, int64_t end, sl_tensor *out,
                          sl_err *err) {
    if (dim < 0 || dim >= t->ndim)
        return sl_err_set(err, SL_EINVAL, "slice of dim %d of a %d-dim tensor", dim, t->ndim);
    if (start < 0 || end < start || end > t->shape[dim])
        return sl_err_set(err, SL_EINVAL, "slice [%lld, %lld) of dim %d with extent %lld",
                          (long long)start, (long long)end, dim, (long long)t->shape[dim]);
    sl_tensor v = *t;
    v.data = (char *)t->data + start * t->strides[dim];
    v.shape[dim] = end - start;
    as_view(out, &v);
    return SL_OK;
}

sl_status sl_tensor_index(const sl_tensor *t, int64_t i, sl_tensor *out, sl_err *err) {
    if (t->ndim < 1) return sl_err_set(err, SL_EINVAL, "indexing a 0-dim tensor");
    if (i < 0 || i >= t->shape[0])
        return sl_err_set(err, SL_EINVAL, "index %lld out of range [0, %lld)", (long long)i,
                          (long long)t->shape[0]);
    sl_tensor v = *t;
    v.data = (char *)t->data + i * t->strides[0];
    for (int d = 1; d < t->ndim; d++) {
        v.shape[d - 1] = t->shape[d];
        v.strides[d - 1] = t->strides[d];
    }
    v.ndim = t->ndim - 1;
    if (t->layout[0]) memmove(v.layout, t->layout + 1, strlen(t->layout));
    as_view(out, &v);
    return SL_OK;
}

sl_status sl_tensor_reshape(const sl_tensor *t, int ndim, const int64_t *shape, sl_tensor *out,
                            sl_err *err) {
    if (!sl_tensor_is_contiguous(t))
        return sl_err_set(err, SL_EINVAL, "reshape needs a contiguous tensor");
    if (ndim < 0 || ndim > SL_MAX_DIMS)
        return sl_err_set(err, SL_EINVAL, "reshape to %d dims (at most %d)", ndim, SL_MAX_DIMS);
    int64_t known = 1, total = sl_tensor_numel(t);
    int wild = -1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) {
            if (wild >= 0) return sl_err_set(err, SL_EINVAL, "reshape with more than one -1");
            wild = i;
        } else if (__builtin_mul_overflow(known, shape[i], &known)) {
            return sl_err_set(err, SL_EINVAL, "reshape to a shape whose size overflows");
        }
    }
    sl_tensor v = *t;
    v.ndim = ndim;
    for (int i = 0; i < ndim; i++) v.shape[i] = shape[i];
    if (wild >= 0) {
        if (known == 0 || total % known != 0)
            return sl_err_set(err, SL_EINVAL, "cannot infer -1: %lld elements over %lld",
                              (long long)total, (long long)known);
        v.shape[wild] = total / known;
        known *= v.shape[wild]; /* == total */
    }
    if (known != total)
        return sl_err_set(err, SL_EINVAL, "reshape of %lld elements to a shape of %lld",
                          (long long)total, (long long)known);
    sl_tensor_set_strides_contiguous(&v);
    v.layout[0] = '\0';
    as_view(out, &v);
    return SL_OK;
}

sl_status sl_tensor_permute(const sl_tensor *t, const int *perm, sl_tensor *out, sl_err *err) {
    unsigned seen = 0;
    sl_tensor v = *t;
    for (int i = 0; i < t->ndim; i++) {
        int p = perm[i];
        if (p < 0 || p >= t->ndim || (seen & (1u << p)))
            return sl_err_set(err, SL_EINVAL, "bad permutation entry %d at %d", p, i);
        seen |= 1u << p;
        v.shape[i] = t->shape[p];
        v.strides[i] = t->strides[p];
        v.layout[i] = t->layout[0] ? t->layout[p] : '\0';
    }
    v.layout[t->layout[0] ? t->ndim : 0] = '\0';
    as_view(out, &v);
    return SL_OK;
}

/* Strided host copy: recursion over dims, innermost contiguous runs with memcpy. */
static void copy_strided(char *dst, const int64_t *dst_st, const char *src, const int64_t *src_st,
                         const int64_t *shape, int ndim, size_t elem) {
    if (ndim == 0) {
        memcpy(dst, src, elem);
        return;
    }
    if (ndim == 1 && dst_st[0] == (int64_t)elem && src_st[0] == (int64_t)elem) {
        memcpy(dst, src, (size_t)shape[0] * elem);
        return;
    }
    for (int64_t i = 0; i < shape[0]; i++)
        copy_strided(dst + i * dst_st[0], dst_st + 1, src + i * src_st[0], src_st + 1, shape + 1,
                     ndim - 1, elem);
}

sl_status sl_tensor_copy(sl_tensor *dst, const sl_tensor *src, void *stream, sl_err *err) {
    if (dst->dtype != src->dtype || dst->ndim != src->ndim)
        return sl_err_set(err, SL_EINVAL, "copy between %s[%d dims] and %s[%d dims]",
                          sl_dtype_name(src->dtype), src->ndim, sl_dtype_name(dst->dtype),
                          dst->ndim);
    for (int i = 0; i < src->ndim; i++)
        if (dst->shape[i] != src->shape[i])
            return sl_err_set(err, SL_EINVAL, "copy with extents %lld and %lld in dim %d",
                              (long long)src->shape[i], (long long)dst->shape[i], i);
    if (src->device.kind == SL_DEVICE_CPU && dst->device.kind == SL_DEVICE_CPU) {
        copy_strided(dst->data, dst->strides, src->data, src->strides, src->shape, src->ndim,
                     sl_dtype_size(src->dtype));
        return SL_OK;
    }
#ifdef SLUICE_HAVE_CUDA
    if (!sl_tensor_is_contiguous(dst) || !sl_tensor_is_contiguous(src))
        return sl_err_set(err, SL_ENOTSUP, "device copies need contiguous tensors");
    return sl__cuda_memcpy(dst->data, dst->device.kind == SL_DEVICE_CUDA, src->data,
                           src->device.kind == SL_DEVICE_CUDA, sl_tensor_nbytes(src), stream, err);
#else
    return sl_err_set(err, SL_ENOTSUP, "device copy: this build of sluice has no CUDA");
#endif
}

/* The bytes of value in dtype t (at most 8). */
static void encode_value(sl_dtype t, double v, unsigned char out[8]) {
    union {
        uint8_t u8;
        int8_t i8;
        uint16_t u16;
        int16_t i16;
        int32_t i32;
        int64_t i64;
        uint32_t u32;
        uint64_t u64;
        float f32;
        double f64;
        unsigned char b[8];
    } u;
    memset(&u, 0, sizeof u);
    switch (t) {
    case SL_DTYPE_U8:
        u.u8 = (uint8_t)v;
        break;
    case SL_DTYPE_I8:
        u.i8 = (int8_t)v;
        break;
    case SL_DTYPE_U16:
        u.u16 = (uint16_t)v;
        break;
    case SL_DTYPE_I16:
        u.i16 = (int16_t)v;
        break;
    case SL_DTYPE_I32:
    case SL_DTYPE_INTERP:
        u.i32 = (int32_t)v;
        break;
    case SL_DTYPE_I64:
        u.i64 = (int64_t)v;
        break;
    case SL_DTYPE_F16:
        u.u16 = sl__f32_to_f16((float)v);
        break;
    case SL_DTYPE_BF16:
        u.u16 = sl__f32_to_bf16((float)v);
        break;
    case SL_DTYPE_F32:
        u.f32 = (float)v;
        break;
    case SL_DTYPE_F64:
        u.f64 = v;
        break;
    case SL_DTYPE_BOOL:
        u.u8 = v != 0;
        break;
    case SL_DTYPE_U32:
        u.u32 = (uint32_t)v;
        break;
    case SL_DTYPE_U64:
        u.u64 = (uint64_t)v;
        break;
    case SL_DTYPE_COUNT:
        break;
    }
    memcpy(out, u.b, 8);
}

static void fill_strided(char *p, const int64_t *st, const int64_t *shape, int ndim,
                         const unsigned char *val, size_t elem) {
    if (ndim == 0) {
        memcpy(p, val, elem);
        return;
    }
    for (int64_t i = 0; i < shape[0]; i++)
        fill_strided(p + i * st[0], st + 1, shape + 1, ndim - 1, val, elem);
}

sl_status sl_tensor_fill(sl_tensor *t, double value, void *stream, sl_err *err) {
    unsigned char val[8];
    encode_value(t->dtype, value, val);
    size_t elem = sl_dtype_size(t->dtype);
    if (t->device.kind == SL_DEVICE_CPU) {
        fill_strided(t->data, t->strides, t->shape, t->ndim, val, elem);
        return SL_OK;
    }
#ifdef SLUICE_HAVE_CUDA
    if (!sl_tensor_is_contiguous(t))
        return sl_err_set(err, SL_ENOTSUP, "device fill needs a contiguous tensor");
    return sl__cuda_fill(t->data, (size_t)sl_tensor_numel(t), val, elem, stream, err);
#else
    return sl_err_set(err, SL_ENOTSUP, "device fill: this build of sluice has no CUDA");
#endif
}

const char *sl_tensor_describe(const sl_tensor *t, char *buf, size_t size) {
    int n = snprintf(buf, size, "%s[", sl_dtype_name(t->dtype));
    for (int i = 0; i < t->ndim && n > 0 && (size_t)n < size; i++)
        n += snprintf(buf + n, size - (size_t)n, i ? ",%lld" : "%lld", (long long)t->shape[i]);
    if (n > 0 && (size_t)n < size) {
        if (t->device.kind == SL_DEVICE_CPU)
            snprintf(buf + n, size - (size_t)n, "]@cpu%s%s", t->layout[0] ? " " : "", t->layout);
        else
            snprintf(buf + n, size - (size_t)n, "]@cuda:%d%s%s", t->device.id,
                     t->layout[0] ? " " : "", t->layout);
    }
    return buf;
}

/* ---- sample lists --------------------------------------------------------------------------- */

sl_status sl_tlist_reset(sl_tlist *l, int count, sl_dtype dtype, int ndim, sl_device device,
                         sl_err *err) {
    if (ndim < 0 || ndim > SL_MAX_DIMS)
        return sl_err_set(err, SL_EINVAL, "%d dims (at most %d)", ndim, SL_MAX_DIMS);
    if (l->buf && !sl_device_eq(l->device, device)) {
        bool pinned = l->pinned;
        sl_mem_budget *budget = l->budget;
        sl_tlist_free(l);
        l->pinned = pinned;
        l->budget = budget;
    }
    if (count > l->capacity) {
        int cap = count > l->capacity ? count : l->capacity;
        int nd = SL_MAX_DIMS; /* room for any rank, so a reset never reallocates for rank */
        int64_t *shapes = sl__calloc((size_t)cap * (size_t)nd, sizeof *shapes, err);
        void **data = sl__calloc((size_t)cap, sizeof *data, err);
        if (!shapes || !data) {
            free(shapes);
            free(data);
            return SL_ENOMEM;
        }
        free(l->shapes);
        free(l->data);
        l->shapes = shapes;
        l->data = data;
        l->capacity = cap;
    }
    l->count = count;
    l->dtype = dtype;
    l->ndim = ndim;
    l->device = device;
    l->layout[0] = '\0';
    l->buf_used = 0;
    if (l->data && l->capacity) /* a list never given samples has no array (memset(NULL) is UB) */
        memset(l->data, 0, (size_t)l->capacity * sizeof *l->data);
    return SL_OK;
}

static size_t round_up(size_t n, size_t a) {
    return (n + a - 1) / a * a; /* n <= SL__SIZE_LIMIT: no wrap */
}

/* Samples of one shape are packed back to back (the batch is then a dense tensor); samples of
 * different shapes each start on a 64-byte boundary. */
sl_status sl_tlist_alloc(sl_tlist *l, const int64_t *shapes, sl_err *err) {
    size_t elem = sl_dtype_size(l->dtype), total = 0;
    bool uniform = true;
    for (int i = 0; i < l->count; i++) {
        const int64_t *s = shapes + (size_t)i * (size_t)l->ndim;
        size_t n = 0;
        int bad = 0;
        sl__size_result r = sl__size_shape(s, l->ndim, elem, &n, &bad);
        if (r == SL__SIZE_NEGATIVE)
            return sl_err_set(err, SL_EINVAL, "sample %d: negative extent %lld in dim %d", i,
                              (long long)s[bad], bad);
        if (r == SL__SIZE_OVERFLOW || sl__size_add(total, round_up(n, SL_ALIGN), &total))
            return sl_err_set(err, SL_EINVAL,
                              "sample %d: a %s sample list of this shape (extent %lld in dim "
                              "%d) holds more than %zu bytes",
                              i, sl_dtype_name(l->dtype), (long long)s[bad], bad, SL__SIZE_LIMIT);
        for (int d = 0; d < l->ndim; d++)
            if (s[d] != shapes[d]) uniform = false;
    }
    if (l->budget && l->device.kind == SL_DEVICE_CPU) {
        sl_mem_budget *b = l->budget;
        if (b->used > b->limit || total > b->limit - b->used)
            return sl_err_set(err, SL_ENOMEM,
                              "%d samples of %s need %zu bytes, and the batch already holds %zu: "
                              "past the limit of %zu bytes per batch (max_batch_bytes, "
                              "SLUICE_MAX_BATCH_BYTES)",
                              l->count, sl_dtype_name(l->dtype), total, b->used, b->limit);
        b->used += total;
    }
    /* a host list always has a buffer, if only of SL_ALIGN bytes: samples of no bytes then
     * still have an address, so that ops need not treat them apart (NULL + 0 and memcpy from
     * NULL are undefined, even for no bytes) */
    bool host = l->device.kind == SL_DEVICE_CPU;
    if (total > l->buf_size || (host && !l->buf)) {
        size_t want = total + total / 4; /* total <= SL__SIZE_LIMIT: no wrap */
        if (want < SL_ALIGN && host) want = SL_ALIGN;
        void *nb;
        if (l->device.kind == SL_DEVICE_CPU && l->pinned) {
            nb = sl__alloc_pinned(want, err);
            if (!nb) return err ? err->status : SL_ENOMEM;
            sl__alloc_pinned_free(l->buf);
        } else if (l->device.kind == SL_DEVICE_CPU) {
            nb = sl__alloc_host(want, SL_ALIGN, err);
            if (!nb) return SL_ENOMEM;
            sl__alloc_host_free(l->buf);
        } else {
            sl__devpool *pool = sl__devpool_get(l->device.id, err);
            if (!pool) return err ? err->status : SL_ENOTSUP;
            nb = sl__devpool_alloc(pool, want, err);
            if (!nb) return SL_ENOMEM;
            if (l->buf) sl__devpool_free(pool, l->buf);
        }
        l->buf = nb;
        l->buf_size = want;
    }
    size_t off = 0;
    for (int i = 0; i < l->count; i++) {
        size_t n = elem; /* checked above */
        for (int d = 0; d < l->ndim; d++) {
            l->shapes[i * l->ndim + d] = shapes[i * l->ndim + d];
            n *= (size_t)shapes[i * l->ndim + d];
        }
        /* samples of no bytes, in a list never given any: no buffer (NULL + 0 is undefined) */
        l->data[i] = l->buf ? (char *)l->buf + off : NULL;
        off += uniform ? n : round_up(n, SL_ALIGN);
    }
    l->buf_used = off;
    return SL_OK;
}

void sl_tlist_set_external(sl_tlist *l, int i, void *data, const int64_t *shape) {
    SL_ASSERT(i >= 0 && i < l->count);
    l->data[i] = data;
    memcpy(l->shapes + (size_t)i * (size_t)l->ndim, shape, (size_t)l->ndim * sizeof *shape);
}

const int64_t *sl_tlist_shape(const sl_tlist *l, int i) {
    return l->shapes + (size_t)i * (size_t)l->ndim;
}

size_t sl_tlist_sample_nbytes(const sl_tlist *l, int i) {
    size_t n;
    if (sl__size_shape(l->shapes + (size_t)i * (size_t)l->ndim, l->ndim, sl_dtype_size(l->dtype),
                       &n, NULL) != SL__SIZE_OK)
        return SIZE_MAX;
    return n;
}

void sl_tlist_sample(const sl_tlist *l, int i, sl_tensor *out) {
    SL_ASSERT(i >= 0 && i < l->count);
    sl_tensor_wrap(out, l->data[i], l->dtype, l->device, l->ndim, sl_tlist_shape(l, i), NULL);
    if ((int)strlen(l->layout) == l->ndim) memcpy(out->layout, l->layout, sizeof out->layout);
}

bool sl_tlist_uniform(const sl_tlist *l) {
    for (int i = 1; i < l->count; i++)
        if (memcmp(sl_tlist_shape(l, i), sl_tlist_shape(l, 0), (size_t)l->ndim * sizeof(int64_t)))
            return false;
    return true;
}

sl_status sl_tlist_as_tensor(const sl_tlist *l, sl_tensor *out, sl_err *err) {
    if (l->count == 0) return sl_err_set(err, SL_EINVAL, "empty sample list");
    if (!sl_tlist_uniform(l)) return sl_err_set(err, SL_EINVAL, "samples differ in shape");
    if (l->ndim + 1 > SL_MAX_DIMS) return sl_err_set(err, SL_EINVAL, "too many dims");
    size_t n = sl_tlist_sample_nbytes(l, 0);
    for (int i = 1; i < l->count; i++)
        if ((char *)l->data[i] != (char *)l->data[0] + (size_t)i * n)
            return sl_err_set(err, SL_EINVAL, "samples are not back to back in memory");
    int64_t shape[SL_MAX_DIMS];
    shape[0] = l->count;
    memcpy(shape + 1, sl_tlist_shape(l, 0), (size_t)l->ndim * sizeof *shape);
    sl_tensor_wrap(out, l->data[0], l->dtype, l->device, l->ndim + 1, shape, NULL);
    if ((int)strlen(l->layout) == l->ndim && l->ndim > 0) {
        out->layout[0] = 'N';
        memcpy(out->layout + 1, l->layout, (size_t)l->ndim + 1);
    }
    return SL_OK;
}

void sl_tlist_free(sl_tlist *l) {
    if (!l) return;
    if (l->buf) {
        if (l->device.kind == SL_DEVICE_CPU && l->pinned) {
            sl__alloc_pinned_free(l->buf);
        } else if (l->device.kind == SL_DEVICE_CPU) {
            sl__alloc_host_free(l->buf);
        } else {
            sl__devpool *pool = sl__devpool_get(l->device.id, NULL);
            if (pool) sl__devpool_free(pool, l->buf);
        }
    }
    free(l->shapes);
    free(l->data);
    memset(l, 0, sizeof *l);
}
