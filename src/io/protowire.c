/* SPDX-License-Identifier: Apache-2.0 */
/* Protobuf wire-format reading and writing (see protowire.h). Every read checks the remaining
 * length first; a varint longer than 10 bytes, a length past the end, wire types 3/4 (groups), 6
 * and 7, and field number 0 are malformed. */
#include "io/protowire.h"

#include <stdlib.h>
#include <string.h>

static int get_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out) {
    const uint8_t *p = *pp;
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (p >= end) return -1;
        uint8_t c = *p++;
        if (shift == 63 && c > 1) return -1; /* overflows 64 bits */
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *pp = p;
            *out = v;
            return 0;
        }
    }
    return -1;
}

static uint64_t load_le(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

int sl__protowire_next(sl__pw *r, sl__pw_field *f) {
    if (r->p >= r->end) return 0;
    const uint8_t *p = r->p;
    uint64_t tag;
    if (get_varint(&p, r->end, &tag) < 0) return -1;
    if (tag >> 3 == 0 || tag >> 3 > 0x1fffffff) return -1;
    f->num = (uint32_t)(tag >> 3);
    f->wt = (int)(tag & 7);
    f->data = NULL;
    f->len = 0;
    f->u = 0;
    switch (f->wt) {
    case SL_PW_VARINT:
        if (get_varint(&p, r->end, &f->u) < 0) return -1;
        break;
    case SL_PW_FIXED64:
        if (r->end - p < 8) return -1;
        f->u = load_le(p, 8);
        p += 8;
        break;
    case SL_PW_FIXED32:
        if (r->end - p < 4) return -1;
        f->u = load_le(p, 4);
        p += 4;
        break;
    case SL_PW_LEN: {
        uint64_t n;
        if (get_varint(&p, r->end, &n) < 0) return -1;
        if (n > (uint64_t)(r->end - p)) return -1;
        f->data = p;
        f->len = (size_t)n;
        p += n;
        break;
    }
    default:
        return -1;
    }
    r->p = p;
    return 1;
}

bool sl__protowire_valid(const void *msg, size_t len) {
    sl__pw r;
    sl__pw_field f;
    int rc;
    sl__protowire_init(&r, msg, len);
    while ((rc = sl__protowire_next(&r, &f)) == 1) {
    }
    return rc == 0;
}

int64_t sl__protowire_repeated(const void *msg, size_t len, uint32_t num, int kind, uint64_t *out,
                               int64_t cap) {
    sl__pw r;
    sl__pw_field f;
    int rc;
    int64_t n = 0;
    sl__protowire_init(&r, msg, len);
    while ((rc = sl__protowire_next(&r, &f)) == 1) {
        if (f.num != num) continue;
        if (f.wt == kind) {
            if (out && n < cap) out[n] = f.u;
            n++;
        } else if (f.wt == SL_PW_LEN) { /* packed */
            const uint8_t *p = f.data, *end = f.data + f.len;
            while (p < end) {
                uint64_t v;
                if (kind == SL_PW_VARINT) {
                    if (get_varint(&p, end, &v) < 0) return -1;
                } else {
                    int w = kind == SL_PW_FIXED32 ? 4 : 8;
                    if (end - p < w) return -1;
                    v = load_le(p, w);
                    p += w;
                }
                if (out && n < cap) out[n] = v;
                n++;
            }
        } else {
            return -1;
        }
    }
    return rc == 0 ? n : -1;
}

static void reserve(sl__pw_buf *b, size_t more) {
    if (b->oom || b->len + more <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more) cap *= 2;
    uint8_t *d = realloc(b->data, cap);
    if (!d) {
        b->oom = true;
        return;
    }
    b->data = d;
    b->cap = cap;
}

void sl__protowire_put_raw(sl__pw_buf *b, const void *data, size_t len) {
    reserve(b, len);
    if (b->oom) return;
    if (len) memcpy(b->data + b->len, data, len);
    b->len += len;
}

void sl__protowire_put_raw_varint(sl__pw_buf *b, uint64_t v) {
    uint8_t tmp[10];
    int n = 0;
    do {
        tmp[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    sl__protowire_put_raw(b, tmp, (size_t)n);
}

void sl__protowire_put_varint(sl__pw_buf *b, uint32_t num, uint64_t v) {
    sl__protowire_put_raw_varint(b, (uint64_t)num << 3 | SL_PW_VARINT);
    sl__protowire_put_raw_varint(b, v);
}

void sl__protowire_put_fixed32(sl__pw_buf *b, uint32_t num, uint32_t v) {
    uint8_t t[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    sl__protowire_put_raw_varint(b, (uint64_t)num << 3 | SL_PW_FIXED32);
    sl__protowire_put_raw(b, t, 4);
}

void sl__protowire_put_bytes(sl__pw_buf *b, uint32_t num, const void *data, size_t len) {
    sl__protowire_put_raw_varint(b, (uint64_t)num << 3 | SL_PW_LEN);
    sl__protowire_put_raw_varint(b, len);
    sl__protowire_put_raw(b, data, len);
}

void sl__protowire_buf_free(sl__pw_buf *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}
