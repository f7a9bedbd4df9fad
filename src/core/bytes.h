/* SPDX-License-Identifier: Apache-2.0 */
/* Little-endian integer encoding, a growing buffer to write a format into, and a CRC-32 over any
 * length, for the file formats (model, optimiser state, checkpoints). */
#ifndef SLUICE_CORE_BYTES_H
#define SLUICE_CORE_BYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static inline void sl__put_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static inline void sl__put_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static inline uint32_t sl__get_u32(const unsigned char *p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}
static inline uint64_t sl__get_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Bytes appended one field after another: an append that runs out of memory sets oom and the
 * later ones do nothing, so a writer checks once at the end (and frees buf either way on error). */
typedef struct {
    unsigned char *buf;
    size_t len, cap;
    bool oom;
} sl__wbuf;

static inline void sl__wbuf_put(sl__wbuf *w, const void *data, size_t n) {
    if (w->oom || n == 0) return;
    if (w->len + n > w->cap) {
        size_t nc = w->cap ? w->cap * 2 : 256;
        while (nc < w->len + n) nc *= 2;
        unsigned char *nb = realloc(w->buf, nc);
        if (!nb) {
            w->oom = true;
            return;
        }
        w->buf = nb;
        w->cap = nc;
    }
    memcpy(w->buf + w->len, data, n);
    w->len += n;
}
static inline void sl__wbuf_put32(sl__wbuf *w, uint32_t v) {
    unsigned char b[4];
    sl__put_u32(b, v);
    sl__wbuf_put(w, b, sizeof b);
}
static inline void sl__wbuf_put64(sl__wbuf *w, uint64_t v) {
    unsigned char b[8];
    sl__put_u64(b, v);
    sl__wbuf_put(w, b, sizeof b);
}

/* zlib's CRC-32 over any length (crc32 itself takes 32-bit lengths). */
static inline uint32_t sl__crc32(const unsigned char *p, size_t n) {
    uLong crc = crc32(0L, Z_NULL, 0);
    while (n > 0) {
        uInt chunk = n > (1u << 30) ? (1u << 30) : (uInt)n;
        crc = crc32(crc, p, chunk);
        p += chunk;
        n -= chunk;
    }
    return (uint32_t)crc;
}

#endif
