/* SPDX-License-Identifier: Apache-2.0 */
/* Little-endian integer encoding and a CRC-32 over any length, for the file formats (model,
 * optimiser state, checkpoints). */
#ifndef SLUICE_CORE_BYTES_H
#define SLUICE_CORE_BYTES_H

#include <stddef.h>
#include <stdint.h>
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
