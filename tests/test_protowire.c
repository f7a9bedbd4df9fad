/* SPDX-License-Identifier: Apache-2.0 */
/* The protobuf wire reader: round trips of packed and unpacked repeated fields, rejection of
 * malformed input, and a fuzz-style run over random bytes and every truncation and single-byte
 * corruption of real records (the fixture's Caffe2 and Caffe records): parsers must return an
 * error or a result, never read past the buffer (the ASan build checks that). Each input is copied
 * into a buffer of its exact size so that any overread is caught. */
#include "check.h"
#include "core/rng.h"
#include "io/caffe.h"
#include "io/caffe2.h"
#include "io/lmdb.h"
#include "io/protowire.h"

#include <stdlib.h>
#include <string.h>

static int parse_all(const uint8_t *p, size_t n) {
    uint8_t *copy = malloc(n ? n : 1);
    memcpy(copy, p, n);
    static sl__caffe2_record rec;
    sl__caffe_datum d;
    sl_err e;
    int ok = 0;
    if (sl__caffe2_parse(copy, n, &rec, &e) == SL_OK) {
        ok++;
        for (int i = 0; i < rec.n; i++) {
            double v[4];
            int64_t dims[4];
            sl__caffe2_values(&rec.t[i], v, 4);
            sl__caffe2_dims(&rec.t[i], dims, 4);
        }
    }
    if (sl__caffe_parse(copy, n, &d, &e) == SL_OK) ok++;
    sl__protowire_valid(copy, n);
    sl__protowire_repeated(copy, n, 4, SL_PW_VARINT, NULL, 0);
    free(copy);
    return ok;
}

static void round_trip(void) {
    sl__pw_buf b = {0};
    sl__protowire_put_varint(&b, 4, 1);
    sl__pw_buf packed = {0};
    sl__protowire_put_raw_varint(&packed, 300);
    sl__protowire_put_raw_varint(&packed, (uint64_t)(int64_t)-2);
    sl__protowire_put_bytes(&b, 4, packed.data, packed.len);
    sl__protowire_put_varint(&b, 4, 7);
    sl__protowire_put_fixed32(&b, 9, 0xdeadbeef);
    uint64_t v[8];
    CHECK_EQ_INT(sl__protowire_repeated(b.data, b.len, 4, SL_PW_VARINT, v, 8), 4);
    CHECK_EQ_INT(v[0], 1);
    CHECK_EQ_INT(v[1], 300);
    CHECK_EQ_INT((int32_t)v[2], -2);
    CHECK_EQ_INT(v[3], 7);
    CHECK_EQ_INT(sl__protowire_repeated(b.data, b.len, 9, SL_PW_FIXED32, v, 8), 1);
    CHECK_EQ_INT(v[0], 0xdeadbeef);
    /* a varint field read as fixed32 is a type error */
    CHECK_EQ_INT(sl__protowire_repeated(b.data, b.len, 4, SL_PW_FIXED32, v, 8), -1);
    CHECK(sl__protowire_valid(b.data, b.len));
    sl__protowire_buf_free(&b);
    sl__protowire_buf_free(&packed);

    /* malformed: truncated varint, length past the end, group wire types, field 0, 11-byte varint
     */
    static const uint8_t bad[][12] = {
        {0x08, 0x80},
        {0x0a, 0x05, 1, 2},
        {0x0b},
        {0x0c},
        {0x0e, 0},
        {0x00, 0x01},
        {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}};
    static const size_t bad_len[] = {2, 4, 1, 1, 2, 2, 11};
    for (size_t i = 0; i < sizeof bad_len / sizeof bad_len[0]; i++)
        CHECK_MSG(!sl__protowire_valid(bad[i], bad_len[i]), "bad input %zu accepted", i);
    /* a packed run that ends inside a varint */
    const uint8_t cut[] = {0x22, 0x02, 0x96, 0x82};
    CHECK_EQ_INT(sl__protowire_repeated(cut, sizeof cut, 4, SL_PW_VARINT, v, 8), -1);
    /* the largest valid varint */
    const uint8_t big[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    CHECK_EQ_INT(sl__protowire_repeated(big, sizeof big, 1, SL_PW_VARINT, v, 8), 1);
    CHECK(v[0] == UINT64_MAX);
}

static void fuzz(void) {
    /* real records */
    sl__lmdb *db[2];
    sl_err e;
    const char *p2[] = {fixture("caffe2-fmnist-256")}, *p1[] = {fixture("caffe-fmnist-64")};
    CHECK_OK(sl__lmdb_open(1, p2, &db[0], &e), &e);
    CHECK_OK(sl__lmdb_open(1, p1, &db[1], &e), &e);
    if (!db[0] || !db[1]) return;
    long parsed = 0, inputs = 0;
    sl__rng_philox r;
    sl__rng_philox_init(&r, 2024, 1);
    for (int k = 0; k < 2; k++) {
        const uint8_t *v;
        size_t n;
        sl__lmdb_value(db[k], 3, &v, &n);
        uint8_t *m = malloc(n);
        CHECK(parse_all(v, n) == (k == 0 ? 1 : 2) || parse_all(v, n) >= 1);
        for (size_t cut = 0; cut < n; cut++, inputs++) parsed += parse_all(v, cut) > 0;
        for (int t = 0; t < 3000; t++, inputs++) { /* corrupt one to three bytes */
            memcpy(m, v, n);
            int c = 1 + (int)sl__rng_philox_below(&r, 3);
            for (int j = 0; j < c; j++)
                m[sl__rng_philox_below(&r, n)] = (uint8_t)sl__rng_philox_u32(&r);
            parsed += parse_all(m, n) > 0;
        }
        free(m);
    }
    uint8_t buf[512];
    for (int t = 0; t < 20000; t++, inputs++) { /* random bytes, biased to look like protobuf */
        size_t n = sl__rng_philox_below(&r, sizeof buf);
        for (size_t j = 0; j < n; j++) {
            uint32_t x = sl__rng_philox_u32(&r);
            buf[j] = (x & 3) == 0 ? (uint8_t)(0x08 + 8 * (x >> 8 & 7) + (x >> 12 & 1) * 2)
                                  : (uint8_t)(x >> 16);
        }
        parsed += parse_all(buf, n) > 0;
    }
    printf("fuzz: %ld inputs, %ld parsed without error, none crashed\n", inputs, parsed);
    CHECK(inputs > 25000);
    sl__lmdb_close(db[0]);
    sl__lmdb_close(db[1]);
}

int main(void) {
    round_trip();
    fuzz();
    return check_done();
}
