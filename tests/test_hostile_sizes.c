/* SPDX-License-Identifier: Apache-2.0 */
/* Hostile sizes: files and shapes whose extents multiply past 2^64 (or past PTRDIFF_MAX), so that
 * a product computed without a check wraps to a small number that matches a short buffer. Each
 * file is made here at run time and read through the real readers and decoders; each must be an
 * error naming the file or the record, never a crash (the ASan build runs this) nor a silent
 * accept. Also the checked-size functions themselves, and the tensor allocators refusing such
 * shapes. */
#include "check.h"
#include "opharness.h"

#include "core/size.h"
#include "io/caffe2.h"
#include "io/lmdb.h"
#include "io/protowire.h"
#include "ops/decode_image.h"
#include "sluice/pipeline.h"
#include "sluice/tensor.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* ---- checked size arithmetic ---- */

static void checked_sizes(void) {
    size_t n = 0;
    CHECK(!sl__size_mul(3, 5, &n) && n == 15);
    CHECK(!sl__size_mul(0, SIZE_MAX, &n) && n == 0);
    CHECK(sl__size_mul((size_t)1 << 32, (size_t)1 << 32, &n)); /* wraps to 0 unchecked */
    CHECK(sl__size_mul((size_t)1 << 62, 2, &n));               /* 2^63: over PTRDIFF_MAX */
    CHECK(!sl__size_mul((size_t)1 << 61, 2, &n) && n == (size_t)1 << 62);
    CHECK(!sl__size_add(1, 2, &n) && n == 3);
    CHECK(sl__size_add(SL__SIZE_LIMIT, 1, &n));
    CHECK(sl__size_add(SIZE_MAX, 1, &n));
    CHECK(!sl__size_from_i64(-1, &n));
    CHECK(sl__size_from_i64(INT64_MAX, &n) && n == (size_t)INT64_MAX);

    int bad = -1;
    int64_t ok[3] = {28, 28, 1};
    CHECK_EQ_INT(sl__size_shape(ok, 3, 4, &n, &bad), SL__SIZE_OK);
    CHECK_EQ_INT(n, 28 * 28 * 4);
    CHECK_EQ_INT(sl__size_shape(ok, 0, 8, &n, &bad), SL__SIZE_OK);
    CHECK_EQ_INT(n, 8);
    int64_t wrap[3] = {(int64_t)1 << 31, (int64_t)1 << 31, 4}; /* 2^64 bytes */
    CHECK_EQ_INT(sl__size_shape(wrap, 3, 1, &n, &bad), SL__SIZE_OVERFLOW);
    CHECK_EQ_INT(bad, 2);
    int64_t neg[2] = {3, -1};
    CHECK_EQ_INT(sl__size_shape(neg, 2, 1, &n, &bad), SL__SIZE_NEGATIVE);
    CHECK_EQ_INT(bad, 1);
    /* a zero extent makes 0 bytes, but the other extents must still multiply within the limit
       (strides are their partial products) */
    int64_t zero_ok[3] = {0, 1000, 3};
    CHECK_EQ_INT(sl__size_shape(zero_ok, 3, 4, &n, &bad), SL__SIZE_OK);
    CHECK_EQ_INT(n, 0);
    int64_t zero_wrap[3] = {0, (int64_t)1 << 40, (int64_t)1 << 40};
    CHECK_EQ_INT(sl__size_shape(zero_wrap, 3, 1, &n, &bad), SL__SIZE_OVERFLOW);
    int64_t elem_wrap[1] = {(int64_t)1 << 61};
    CHECK_EQ_INT(sl__size_shape(elem_wrap, 1, 8, &n, &bad), SL__SIZE_OVERFLOW); /* 2^64 */
}

/* ---- tensors and sample lists ---- */

static void tensors(void) {
    sl_err e;
    sl_tensor t;
    int64_t wrap[3] = {(int64_t)1 << 31, (int64_t)1 << 31, 4};
    CHECK_FAILS(sl_tensor_alloc(&t, SL_DTYPE_U8, sl_cpu(), 3, wrap, "HWC", &e), SL_EINVAL, &e,
                "holds more than");
    int64_t wrap4[1] = {(int64_t)1 << 62}; /* 2^64 bytes of float32 */
    CHECK_FAILS(sl_tensor_alloc(&t, SL_DTYPE_F32, sl_cpu(), 1, wrap4, NULL, &e), SL_EINVAL, &e,
                "float32");
    int64_t zero_wrap[3] = {0, (int64_t)1 << 40, (int64_t)1 << 40};
    CHECK_FAILS(sl_tensor_alloc(&t, SL_DTYPE_U8, sl_cpu(), 3, zero_wrap, NULL, &e), SL_EINVAL, &e,
                "dim 2");
    int64_t neg[2] = {2, -3};
    CHECK_FAILS(sl_tensor_alloc(&t, SL_DTYPE_U8, sl_cpu(), 2, neg, NULL, &e), SL_EINVAL, &e,
                "negative extent -3 in dim 1");
    uint8_t byte = 0;
    CHECK(sl_tensor_wrap(&t, &byte, SL_DTYPE_U8, sl_cpu(), 3, wrap, NULL) == SL_EINVAL);
    int64_t fine[2] = {3, 5};
    CHECK_OK(sl_tensor_alloc(&t, SL_DTYPE_F64, sl_cpu(), 2, fine, NULL, &e), &e);
    CHECK_EQ_INT(sl_tensor_numel(&t), 15);
    CHECK_EQ_INT(sl_tensor_nbytes(&t), 120);
    sl_tensor_free(&t);
    /* a descriptor filled by hand: numel and nbytes say so instead of wrapping */
    sl_tensor h;
    memset(&h, 0, sizeof h);
    h.dtype = SL_DTYPE_U8;
    h.ndim = 3;
    memcpy(h.shape, wrap, sizeof wrap);
    CHECK_EQ_INT(sl_tensor_numel(&h), -1);
    CHECK(sl_tensor_nbytes(&h) == SIZE_MAX);
    int64_t big[1] = {(int64_t)1 << 40};
    sl_tensor v;
    CHECK_OK(sl_tensor_wrap(&v, &byte, SL_DTYPE_U8, sl_cpu(), 1, big, NULL), NULL);
    int64_t re[2] = {(int64_t)1 << 40, (int64_t)1 << 40};
    CHECK_FAILS(sl_tensor_reshape(&v, 2, re, &h, &e), SL_EINVAL, &e, "overflows");

    /* sample lists: one sample that wraps, and four that each fit but wrap together */
    sl_tlist l;
    memset(&l, 0, sizeof l);
    CHECK_OK(sl_tlist_reset(&l, 1, SL_DTYPE_U8, 3, sl_cpu(), &e), &e);
    CHECK_FAILS(sl_tlist_alloc(&l, wrap, &e), SL_EINVAL, &e, "sample 0");
    int64_t quarter[4] = {(int64_t)1 << 62, (int64_t)1 << 62, (int64_t)1 << 62, (int64_t)1 << 62};
    CHECK_OK(sl_tlist_reset(&l, 4, SL_DTYPE_U8, 1, sl_cpu(), &e), &e);
    CHECK_FAILS(sl_tlist_alloc(&l, quarter, &e), SL_EINVAL, &e, "sample 1");
    int64_t neg1[2] = {4, -1};
    CHECK_OK(sl_tlist_reset(&l, 2, SL_DTYPE_I32, 1, sl_cpu(), &e), &e);
    CHECK_FAILS(sl_tlist_alloc(&l, neg1, &e), SL_EINVAL, &e, "sample 1: negative extent -1");
    int64_t two[2] = {4, 5};
    CHECK_OK(sl_tlist_alloc(&l, two, &e), &e);
    CHECK_EQ_INT(sl_tlist_sample_nbytes(&l, 1), 20);
    int64_t claim[1] = {(int64_t)1 << 62}; /* an external sample claiming 2^64 bytes */
    sl_tlist_set_external(&l, 1, &byte, claim);
    CHECK(sl_tlist_sample_nbytes(&l, 1) == SIZE_MAX);
    sl_tlist_free(&l);
}

/* ---- files ---- */

static void put_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8),
    p[3] = (uint8_t)v;
}

static void write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    CHECK(fwrite(data, 1, n, f) == n);
    fclose(f);
}

/* an IDX file of u8 with the given extents and `data` bytes of payload */
static void write_idx(const char *path, int ndim, const uint32_t *dims, size_t data) {
    size_t n = 4 + 4 * (size_t)ndim + data;
    uint8_t *b = calloc(1, n);
    b[2] = 0x08, b[3] = (uint8_t)ndim;
    for (int d = 0; d < ndim; d++) put_be32(b + 4 + 4 * d, dims[d]);
    write_file(path, b, n);
    free(b);
}

static sl_pipeline *pipe_of(const char *body, int batch, sl_err *e) {
    sl_pipeline_config c;
    sl_pipeline_config_init(&c);
    c.batch_size = batch;
    c.num_threads = 1;
    char text[4096];
    snprintf(text, sizeof text, "def pipe():\n%s", body);
    return check_pipeline(&c, text, "hostile.py", 0, NULL, e);
}

/* the pipeline must fail (when built, or at its first batch) with a message holding the needles
 * (needle3 may be NULL) */
static void pipeline_fails3(const char *body, const char *needle1, const char *needle2,
                            const char *needle3) {
    sl_err e;
    memset(&e, 0, sizeof e);
    sl_pipeline *p = pipe_of(body, 1, &e);
    const char *msg = e.msg;
    if (p) {
        sl_batch *b = NULL;
        sl_status st = sl_pipeline_next(p, &b);
        CHECK_MSG(st != SL_OK, "the pipeline accepted a hostile file:\n%s", body);
        if (st == SL_OK) sl_pipeline_release(p, b);
        msg = sl_pipeline_errmsg(p);
    }
    CHECK_MSG(strstr(msg, needle1) != NULL, "message \"%s\" lacks \"%s\"", msg, needle1);
    CHECK_MSG(strstr(msg, needle2) != NULL, "message \"%s\" lacks \"%s\"", msg, needle2);
    if (needle3)
        CHECK_MSG(strstr(msg, needle3) != NULL, "message \"%s\" lacks \"%s\"", msg, needle3);
    printf("  %s\n", msg);
    if (p) sl_pipeline_free(p);
}

static void pipeline_fails(const char *body, const char *needle1, const char *needle2) {
    pipeline_fails3(body, needle1, needle2, NULL);
}

static void idx_files(void) {
    const char *dir = scratch_dir("hostile_idx");
    char img[1024], lab[1024], body[4096];
    snprintf(lab, sizeof lab, "%s/labels", dir);
    uint32_t one[1] = {1};
    write_idx(lab, 1, one, 1);

    /* 2^16 items of 2^16 x 2^16 x 2^16 bytes: 2^64 bytes, which wraps to the 0 the file holds */
    snprintf(img, sizeof img, "%s/wrap-images", dir);
    uint32_t wrap[4] = {65536, 65536, 65536, 65536};
    write_idx(img, 4, wrap, 0);
    snprintf(body, sizeof body,
             "    images, labels = fn.readers.mnist(path=\"%s\", labels=\"%s\")\n"
             "    return images, labels\n",
             img, lab);
    pipeline_fails(body, img, "give more than");
    /* one item whose extents wrap the item size to 0 */
    uint32_t wrap1[4] = {1, 1u << 31, 1u << 31, 4};
    write_idx(img, 4, wrap1, 0);
    pipeline_fails(body, img, "give more than");
    /* the largest extents: the product does not fit in 64 bits at all */
    uint32_t huge[3] = {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu};
    write_idx(img, 3, huge, 16);
    pipeline_fails(body, img, "IDX header");
    /* truncated: two 28x28 items, 100 bytes of data; and a header cut inside its extents */
    uint32_t two[3] = {2, 28, 28};
    write_idx(img, 3, two, 100);
    pipeline_fails(body, img, "the file holds 100 bytes");
    write_idx(img, 3, two, 0);
    FILE *f = fopen(img, "r+b");
    if (f) {
        CHECK(ftruncate(fileno(f), 9) == 0);
        fclose(f);
    }
    pipeline_fails(body, img, "truncated IDX header");
}

static void write_lmdb(const char *dir, int n, const sl__pw_buf *recs) {
    sl__lmdb_writer *w;
    sl_err e;
    CHECK_OK(sl__lmdb_writer_open(dir, &w, &e), &e);
    for (int i = 0; i < n; i++) {
        char key[16];
        snprintf(key, sizeof key, "%08d", i);
        CHECK_OK(sl__lmdb_writer_put(w, key, 8, recs[i].data, recs[i].len, &e), &e);
    }
    CHECK_OK(sl__lmdb_writer_close(w, &e), &e);
}

/* a Caffe2 record: a BYTE image with these dims and nbytes of byte_data, and an INT32 label */
static void c2_record(sl__pw_buf *rec, int nd, const uint64_t *dims, size_t nbytes) {
    sl__pw_buf img = {0}, lab = {0}, packed = {0};
    for (int d = 0; d < nd; d++) sl__protowire_put_varint(&img, 1, dims[d]);
    sl__protowire_put_varint(&img, 2, SL_C2_BYTE);
    uint8_t *px = calloc(1, nbytes ? nbytes : 1);
    sl__protowire_put_bytes(&img, 5, px, nbytes);
    free(px);
    sl__protowire_put_varint(&lab, 1, 1);
    sl__protowire_put_varint(&lab, 2, SL_C2_INT32);
    sl__protowire_put_raw_varint(&packed, 7);
    sl__protowire_put_bytes(&lab, 4, packed.data, packed.len);
    sl__protowire_put_bytes(rec, 1, img.data, img.len);
    sl__protowire_put_bytes(rec, 1, lab.data, lab.len);
    sl__protowire_buf_free(&img);
    sl__protowire_buf_free(&lab);
    sl__protowire_buf_free(&packed);
}

static void caffe2_records(void) {
    char body[4096];
    const char *cases[][2] = {{"hostile_c2_wrap", "has a negative extent or more than"},
                              {"hostile_c2_wrap2", "has a negative extent or more than"},
                              {"hostile_c2_short", "needs 12 bytes, byte_data has 11"},
                              {"hostile_c2_neg", "has a negative extent or more than"}};
    uint64_t dims[4][3] = {{1ull << 31, 1ull << 31, 4}, /* 2^64: wraps to 0 */
                           {1ull << 32, 1ull << 32, 1},
                           {2, 2, 3},
                           {(uint64_t)-1, 1, 1}};
    size_t have[4] = {0, 0, 11, 0};
    for (int k = 0; k < 4; k++) {
        const char *dir = scratch_dir(cases[k][0]);
        sl__pw_buf rec = {0};
        c2_record(&rec, 3, dims[k], have[k]);
        write_lmdb(dir, 1, &rec);
        sl__protowire_buf_free(&rec);
        /* the image goes on to crop_mirror_normalize, which would read the claimed extents */
        snprintf(body, sizeof body,
                 "    images, labels = fn.readers.caffe2(path=\"%s\")\n"
                 "    out = fn.crop_mirror_normalize(images, crop=(2, 2))\n"
                 "    return out, labels\n",
                 dir);
        pipeline_fails3(body, dir, "at key 00000000", cases[k][1]);
    }
}

/* a Caffe Datum: raw (encoded = false) with these extents and ndata bytes */
static void datum(sl__pw_buf *b, uint64_t c, uint64_t h, uint64_t w, size_t ndata) {
    sl__protowire_put_varint(b, 1, c);
    sl__protowire_put_varint(b, 2, h);
    sl__protowire_put_varint(b, 3, w);
    uint8_t px[16] = {0};
    sl__protowire_put_bytes(b, 4, px, ndata);
    sl__protowire_put_varint(b, 5, 3);
    sl__protowire_put_varint(b, 7, 0);
}

static void caffe_records(void) {
    char body[4096];
    /* 2^22 x 2^21 x 2^21 = 2^64, which wraps to the 0 bytes of data */
    const char *dir = scratch_dir("hostile_caffe_wrap");
    sl__pw_buf rec = {0};
    datum(&rec, 1u << 22, 1u << 21, 1u << 21, 0);
    write_lmdb(dir, 1, &rec);
    sl__protowire_buf_free(&rec);
    snprintf(body, sizeof body,
             "    images, labels = fn.readers.caffe(path=\"%s\")\n"
             "    out = fn.crop_mirror_normalize(images, crop=(2, 2))\n"
             "    return out, labels\n",
             dir);
    pipeline_fails3(body, dir, "at key 00000000", "its size overflows");
    /* a height past int32 (it used to be cut to its low bits: 2^32 + 2 read as 2) */
    dir = scratch_dir("hostile_caffe_int32");
    memset(&rec, 0, sizeof rec);
    datum(&rec, 1, (1ull << 32) + 2, 2, 4);
    write_lmdb(dir, 1, &rec);
    sl__protowire_buf_free(&rec);
    snprintf(body, sizeof body,
             "    images, labels = fn.readers.caffe(path=\"%s\")\n"
             "    return images, labels\n",
             dir);
    pipeline_fails3(body, dir, "at key 00000000", "Datum.height is 4294967298, outside int32");
}

/* ---- image headers ---- */

static void put_chunk(uint8_t **p, const char *type, const uint8_t *data, uint32_t len) {
    put_be32(*p, len);
    memcpy(*p + 4, type, 4);
    if (len) memcpy(*p + 8, data, len);
    put_be32(*p + 8 + len, (uint32_t)crc32(0L, *p + 4, len + 4));
    *p += 12 + len;
}

/* a PNG: IHDR with these extents (8-bit, colour type ct), a small IDAT, IEND */
static size_t make_png(uint8_t *out, uint32_t w, uint32_t h, int ct) {
    uint8_t *p = out;
    memcpy(p, "\x89PNG\r\n\x1a\n", 8);
    p += 8;
    uint8_t ihdr[13] = {0};
    put_be32(ihdr, w);
    put_be32(ihdr + 4, h);
    ihdr[8] = 8, ihdr[9] = (uint8_t)ct;
    put_chunk(&p, "IHDR", ihdr, 13);
    uint8_t raw[64] = {0}, z[128];
    uLongf zn = sizeof z;
    compress(z, &zn, raw, sizeof raw);
    put_chunk(&p, "IDAT", z, (uint32_t)zn);
    put_chunk(&p, "IEND", NULL, 0);
    return (size_t)(p - out);
}

static sl_status decode(const void *data, size_t len, const char *key, const char *const *argv,
                        oph *h, sl_err *e) {
    sl_status st = oph_create(h, "decoders.image", argv, 1, 1, 0, e);
    if (st != SL_OK) return st;
    sl_tlist in;
    memset(&in, 0, sizeof in);
    const void *d[1] = {data};
    st = oph_bytes(&in, 1, d, &len, e);
    sl_tlist *ins[1] = {&in};
    if (st == SL_OK) st = oph_run(h, 1, ins, 1, NULL, 0, &key, 0, e);
    sl_tlist_free(&in);
    return st;
}

static void images(void) {
    sl_err e;
    oph h;
    uint8_t png[256];
    const char *rgb[] = {"output_type=types.RGB", NULL};
    const char *nolimit[] = {"output_type=types.ANY_DATA", "max_image_pixels=0", NULL};
    const char *skip[] = {"output_type=types.ANY_DATA", "max_image_pixels=0",
                          "skip_bad_records=True", NULL};

    /* (2^32 - 1)^2 pixels: the product overflows int64, and must not slip under the limit */
    size_t n = make_png(png, 0xFFFFFFFFu, 0xFFFFFFFFu, 6);
    CHECK_FAILS(decode(png, n, "png-max", rgb, &h, &e), SL_EFORMAT, &e, "record png-max");
    printf("  %s\n", e.msg);
    oph_destroy(&h);
    /* 2^31 x 2^31 RGBA is 2^64 bytes: refused, with no limit set */
    n = make_png(png, 1u << 31, 1u << 31, 6);
    CHECK_FAILS(decode(png, n, "png-wrap", nolimit, &h, &e), SL_EFORMAT, &e, "record png-wrap");
    printf("  %s\n", e.msg);
    oph_destroy(&h);
    /* skipped, it must become an empty image, not a 2^31 x 2^31 one over a 0-byte buffer */
    CHECK_OK(decode(png, n, "png-wrap-skip", skip, &h, &e), &e);
    CHECK_EQ_INT(sl__decode_image_skipped(h.state), 1);
    const int64_t *s = sl_tlist_shape(&h.out[0], 0);
    CHECK_EQ_INT(s[0] * s[1], 0);
    oph_destroy(&h);
    /* the largest sides PNG allows: (2^31 - 1)^2 x 4 bytes is past the size limit */
    n = make_png(png, 0x7FFFFFFFu, 0x7FFFFFFFu, 6);
    CHECK_FAILS(decode(png, n, "png-big", nolimit, &h, &e), SL_EFORMAT, &e, "too large to decode");
    CHECK(strstr(e.msg, "record png-big") != NULL);
    oph_destroy(&h);
    /* within the size limit but over max_image_pixels */
    n = make_png(png, 100000, 100000, 2);
    CHECK_FAILS(decode(png, n, "png-limit", rgb, &h, &e), SL_EFORMAT, &e, "max_image_pixels");
    oph_destroy(&h);

    /* a JPEG whose frame header claims 65500 x 65500: stopped by max_image_pixels */
    uint8_t jpg[] = {0xFF, 0xD8,                                     /* SOI */
                     0xFF, 0xC0, 0x00, 0x11, 0x08, 0xFF, 0xDC, 0xFF, /* SOF0, 65500 x 65500 */
                     0xDC, 0x03, 0x01, 0x22, 0x00, 0x02, 0x11, 0x01,
                     0x03, 0x11, 0x01, 0xFF, 0xD9}; /* EOI */
    CHECK_FAILS(decode(jpg, sizeof jpg, "jpeg-huge", rgb, &h, &e), SL_EFORMAT, &e,
                "exceeds max_image_pixels");
    CHECK(strstr(e.msg, "record jpeg-huge") != NULL);
    printf("  %s\n", e.msg);
    oph_destroy(&h);
}

int main(void) {
    checked_sizes();
    tensors();
    idx_files();
    caffe2_records();
    caffe_records();
    images();
    return check_done();
}
