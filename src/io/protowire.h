/* SPDX-License-Identifier: Apache-2.0 */
/* A small zero-copy reader (and writer) of the protobuf wire format: fields are walked in place,
 * length-delimited payloads are views into the input, repeated scalars are read from both packed
 * and unpacked encodings, and malformed input (truncated varints or payloads, bad wire types,
 * field number 0, groups) is rejected without ever reading past the buffer. */
#ifndef SLUICE_IO_PROTOWIRE_H
#define SLUICE_IO_PROTOWIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { SL_PW_VARINT = 0, SL_PW_FIXED64 = 1, SL_PW_LEN = 2, SL_PW_FIXED32 = 5 };

typedef struct sl__pw_field {
    uint32_t num;
    int wt;              /* SL_PW_* */
    uint64_t u;          /* VARINT / FIXED32 / FIXED64 value (raw bits) */
    const uint8_t *data; /* LEN payload */
    size_t len;
} sl__pw_field;

typedef struct sl__pw {
    const uint8_t *p, *end;
} sl__pw;

static inline void sl__protowire_init(sl__pw *r, const void *data, size_t len) {
    r->p = (const uint8_t *)data;
    r->end = r->p + len;
}
/* 1: a field in *f; 0: end of message; -1: malformed (r is left at the bad spot). */
int sl__protowire_next(sl__pw *r, sl__pw_field *f);
/* Checks that a whole message is well-formed at the wire level (not recursing into payloads). */
bool sl__protowire_valid(const void *msg, size_t len);
/* Values of repeated scalar field num of msg, accepting packed (LEN) and unpacked occurrences;
 * kind is SL_PW_VARINT, SL_PW_FIXED32 or SL_PW_FIXED64. Stores up to cap raw values in out (may be
 * NULL) and returns how many there are, or -1 when malformed or of another wire type. */
int64_t sl__protowire_repeated(const void *msg, size_t len, uint32_t num, int kind, uint64_t *out,
                               int64_t cap);

/* Writing into a growable buffer. */
typedef struct sl__pw_buf {
    uint8_t *data;
    size_t len, cap;
    bool oom;
} sl__pw_buf;
void sl__protowire_put_varint(sl__pw_buf *b, uint32_t num, uint64_t v);
void sl__protowire_put_fixed32(sl__pw_buf *b, uint32_t num, uint32_t v);
void sl__protowire_put_bytes(sl__pw_buf *b, uint32_t num, const void *data, size_t len);
/* a raw varint (no tag), e.g. for packed payloads */
void sl__protowire_put_raw_varint(sl__pw_buf *b, uint64_t v);
void sl__protowire_put_raw(sl__pw_buf *b, const void *data, size_t len);
void sl__protowire_buf_free(sl__pw_buf *b);

#ifdef __cplusplus
}
#endif
#endif
