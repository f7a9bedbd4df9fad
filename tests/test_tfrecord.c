/* SPDX-License-Identifier: Apache-2.0 */
/* The TFRecord layer (src/io/tfrecord.c) and readers.tfrecord through the C builder API:
 * - CRC-32C against the RFC 3720 / iSCSI check values, the SSE 4.2 path (three streams joined,
 *   for 768 bytes and more) against the tables over lengths around its block sizes, and
 *   continuation (crc(a then b) == crc(ab));
 * - a framed record reads back; a changed length, length CRC or data byte, and a cut record, are
 *   errors naming the file and the offset;
 * - Examples: sluice's image/label encoder parsed back; int64 values packed and unpacked; the last
 *   map entry of a name wins; a list of the wrong kind is refused; malformed Examples are errors;
 * - readers.tfrecord built op by op, `features` given as the list of [name, feature] pairs the C
 *   API takes, gives the records' bytes (views) and labels, keyed by byte offset, and refuses bad
 *   feature specifications with messages naming the feature;
 * - the pipeline text's tfrec.* calls and names, and their errors. */
#include "check.h"
#include "io/tfrecord.h"

#include "sluice/pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void crcs(void) {
    CHECK_EQ_INT(sl__tfrec_crc32c(0, "123456789", 9), 0xe3069283u);
    CHECK_EQ_INT(sl__tfrec_crc32c_portable(0, "123456789", 9), 0xe3069283u);
    uint8_t z[32], ff[32], inc[32];
    for (int i = 0; i < 32; i++) z[i] = 0, ff[i] = 0xff, inc[i] = (uint8_t)i;
    CHECK_EQ_INT(sl__tfrec_crc32c(0, z, 32), 0x8a9136aau);
    CHECK_EQ_INT(sl__tfrec_crc32c(0, ff, 32), 0x62a8ab43u);
    CHECK_EQ_INT(sl__tfrec_crc32c(0, inc, 32), 0x46dd794eu);
    CHECK_EQ_INT(sl__tfrec_crc32c_portable(0, inc, 32), 0x46dd794eu);
    static uint8_t buf[80000];
    uint32_t s = 12345;
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)((s = s * 1103515245u + 12345u) >> 16);
    /* short records, and lengths around the 3-stream blocks (3 x 256 and 3 x 8192 bytes) */
    static const size_t lens[] = {767,   768,   769,   775,   776,   1536,  1543, 2000,
                                  24575, 24576, 24577, 25344, 49152, 50000, 79990};
    for (size_t k = 0; k < 43 + sizeof lens / sizeof lens[0]; k++)
        for (size_t at = 0; at < 9; at++) {
            size_t n = k < 43 ? 7 * k : lens[k - 43];
            uint32_t a = sl__tfrec_crc32c(0, buf + at, n),
                     b = sl__tfrec_crc32c_portable(0, buf + at, n);
            CHECK_MSG(a == b, "length %zu at %zu: %08x vs %08x", n, at, a, b);
            uint32_t c =
                sl__tfrec_crc32c(sl__tfrec_crc32c(0, buf + at, n / 3), buf + at + n / 3, n - n / 3);
            CHECK_MSG(a == c, "continued at %zu of %zu", n / 3, n);
        }
}

static void frames(void) {
    sl__pw_buf b = {0};
    sl__tfrec_put(&b, "hello", 5);
    sl__tfrec_put(&b, "", 0);
    CHECK_EQ_INT(b.len, 16 + 5 + 16);
    const uint8_t *d;
    uint64_t n, next;
    sl_err e;
    CHECK_OK(sl__tfrec_frame(b.data, b.len, 0, "f", true, &d, &n, &next, &e), &e);
    CHECK(n == 5 && !memcmp(d, "hello", 5) && next == 21);
    CHECK_OK(sl__tfrec_frame(b.data, b.len, 21, "f", true, &d, &n, &next, &e), &e);
    CHECK(n == 0 && next == 37);
    CHECK_FAILS(sl__tfrec_frame(b.data, b.len, 37, "f", true, &d, &n, &next, &e), SL_EFORMAT, &e,
                "f at offset 37: truncated record (0 bytes left");
    CHECK_FAILS(sl__tfrec_frame(b.data, 20, 0, "f", true, &d, &n, &next, &e), SL_EFORMAT, &e,
                "f at offset 0: truncated record (length 5");
    b.data[12] ^= 1; /* a data byte */
    CHECK_FAILS(sl__tfrec_frame(b.data, b.len, 0, "f", true, &d, &n, &next, &e), SL_EFORMAT, &e,
                "f at offset 0: bad data CRC");
    CHECK_OK(sl__tfrec_frame(b.data, b.len, 0, "f", false, &d, &n, &next, &e), &e);
    b.data[12] ^= 1;
    b.data[21] = 200; /* the second record's length */
    CHECK_FAILS(sl__tfrec_frame(b.data, b.len, 21, "f", true, &d, &n, &next, &e), SL_EFORMAT, &e,
                "f at offset 21: bad length CRC");
    b.data[21] = 0;
    b.data[29] ^= 0x80; /* its length's CRC */
    CHECK_FAILS(sl__tfrec_frame(b.data, b.len, 21, "f", true, &d, &n, &next, &e), SL_EFORMAT, &e,
                "f at offset 21: bad length CRC");
    sl__protowire_buf_free(&b);
}

static void examples(void) {
    sl__pw_buf b = {0};
    sl__tfrec_encode_image(&b, "JPEG", 4, 7);
    const char *names[3] = {"image/class/label", "image/encoded", "absent"};
    sl__tfrec_value v[3];
    sl_err e;
    CHECK_OK(sl__tfrec_parse(b.data, b.len, 3, names, v, &e), &e);
    CHECK_EQ_INT(v[0].kind, SL_TFREC_INT64_LIST);
    CHECK_EQ_INT(v[1].kind, SL_TFREC_BYTES_LIST);
    CHECK_EQ_INT(v[2].kind, SL_TFREC_NONE);
    int64_t lab = 0;
    CHECK_EQ_INT(sl__tfrec_int64s(&v[0], &lab, 1), 1);
    CHECK_EQ_INT(lab, 7);
    const uint8_t *d = NULL;
    size_t n = 0;
    CHECK_EQ_INT(sl__tfrec_bytes(&v[1], &d, &n), 1);
    CHECK(n == 4 && !memcmp(d, "JPEG", 4));
    CHECK_EQ_INT(sl__tfrec_int64s(&v[1], NULL, 0), -1); /* a bytes list is no int64 list */
    CHECK_EQ_INT(sl__tfrec_floats(&v[0], NULL, 0), -1);

    /* by hand: "x" twice (the last wins), its int64s unpacked: -1 and 300; "y" floats packed */
    sl__pw_buf l = {0}, f = {0}, ent = {0}, feats = {0}, ex = {0};
    sl__protowire_put_varint(&l, 1, 5);
    sl__protowire_put_bytes(&f, 3, l.data, l.len);
    sl__protowire_put_bytes(&ent, 1, "x", 1);
    sl__protowire_put_bytes(&ent, 2, f.data, f.len);
    sl__protowire_put_bytes(&feats, 1, ent.data, ent.len);
    l.len = f.len = ent.len = 0;
    sl__protowire_put_varint(&l, 1, (uint64_t)-1);
    sl__protowire_put_varint(&l, 1, 300);
    sl__protowire_put_bytes(&f, 3, l.data, l.len);
    sl__protowire_put_bytes(&ent, 1, "x", 1);
    sl__protowire_put_bytes(&ent, 2, f.data, f.len);
    sl__protowire_put_bytes(&feats, 1, ent.data, ent.len);
    l.len = f.len = ent.len = 0;
    uint8_t packed[8] = {0, 0, 0xc0, 0x3f, 0, 0, 0x20, 0xc1}; /* 1.5, -10 */
    sl__protowire_put_bytes(&l, 1, packed, 8);
    sl__protowire_put_bytes(&f, 2, l.data, l.len);
    sl__protowire_put_bytes(&ent, 1, "y", 1);
    sl__protowire_put_bytes(&ent, 2, f.data, f.len);
    sl__protowire_put_bytes(&feats, 1, ent.data, ent.len);
    sl__protowire_put_bytes(&ex, 1, feats.data, feats.len);
    const char *xy[2] = {"x", "y"};
    CHECK_OK(sl__tfrec_parse(ex.data, ex.len, 2, xy, v, &e), &e);
    int64_t xs[2] = {0, 0};
    CHECK_EQ_INT(sl__tfrec_int64s(&v[0], xs, 2), 2);
    CHECK(xs[0] == -1 && xs[1] == 300);
    float ys[2] = {0, 0};
    CHECK_EQ_INT(sl__tfrec_floats(&v[1], ys, 2), 2);
    CHECK(ys[0] == 1.5f && ys[1] == -10.0f);
    /* malformed: the Example cut inside its Features */
    CHECK_FAILS(sl__tfrec_parse(ex.data, ex.len - 3, 2, xy, v, &e), SL_EFORMAT, &e, "malformed");
    uint8_t junk[3] = {0x0a, 0x05, 0x0a};
    CHECK_FAILS(sl__tfrec_parse(junk, 3, 2, xy, v, &e), SL_EFORMAT, &e, "malformed Example");
    sl__pw_buf *all[] = {&b, &l, &f, &ent, &feats, &ex};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) sl__protowire_buf_free(all[i]);
}

static char dir[512], file[700];

#define FEATURES                                                                                   \
    "[[\"image/encoded\", [tfrec.FixedLenFeature, [], tfrec.string, \"\"]], "                      \
    "[\"image/class/label\", [tfrec.FixedLenFeature, [1], tfrec.int64, -1]]]"

/* readers.tfrecord over file, built op by op; NULL with the message in e when it fails */
static sl_pipeline *built(const char *features, int batch, sl_err *e) {
    sl_pipeline_config c;
    sl_pipeline_config_init(&c);
    c.batch_size = batch;
    c.num_threads = 2;
    sl_pipeline *p;
    if (sl_pipeline_create(&c, &p, e)) return NULL;
    char path[800];
    snprintf(path, sizeof path, "\"%s\"", file);
    sl_pipeline_op *op = sl_pipeline_op_begin(p, "readers.tfrecord");
    int out[2], count = 0;
    sl_pipeline_op_arg(op, "path", path);
    sl_pipeline_op_arg(op, "features", features);
    if (sl_pipeline_op_end(op, out, 2, &count) || sl_pipeline_set_outputs(p, count, out, NULL) ||
        sl_pipeline_build(p)) {
        snprintf(e->msg, sizeof e->msg, "%s", sl_pipeline_errmsg(p));
        sl_pipeline_free(p);
        return NULL;
    }
    return p;
}

static void reader(void) {
    snprintf(dir, sizeof dir, "%s", scratch_dir("tfrecord"));
    snprintf(file, sizeof file, "%s/a.tfrecord", dir);
    sl__pw_buf all = {0}, rec = {0};
    uint64_t offs[5];
    for (int i = 0; i < 5; i++) {
        char img[16];
        snprintf(img, sizeof img, "image %d", i);
        rec.len = 0;
        sl__tfrec_encode_image(&rec, img, strlen(img), 10 * i);
        offs[i] = all.len;
        sl__tfrec_put(&all, rec.data, rec.len);
    }
    FILE *f = fopen(file, "wb");
    CHECK(f && fwrite(all.data, 1, all.len, f) == all.len);
    if (f) fclose(f);
    sl_err e;
    sl_pipeline *p = built(FEATURES, 5, &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    sl_batch *b;
    if (p && sl_pipeline_next(p, &b) == SL_OK) {
        const sl_tlist *img = sl_batch_output(b, 0), *lab = sl_batch_output(b, 1);
        CHECK_EQ_INT(img->dtype, SL_DTYPE_U8);
        CHECK_EQ_INT(lab->dtype, SL_DTYPE_I64);
        for (int i = 0; i < 5; i++) {
            char want[16], key[32];
            snprintf(want, sizeof want, "image %d", i);
            snprintf(key, sizeof key, "%llu", (unsigned long long)offs[i]);
            CHECK_STR(sl_batch_key(b, i), key);
            CHECK(sl_tlist_sample_nbytes(img, i) == strlen(want) &&
                  !memcmp(img->data[i], want, strlen(want)));
            CHECK_EQ_INT(*(const int64_t *)lab->data[i], 10 * i);
        }
        sl_pipeline_release(p, b);
    } else {
        CHECK_MSG(false, "no batch: %s", p ? sl_pipeline_errmsg(p) : e.msg);
    }
    sl_pipeline_free(p);

    static const struct {
        const char *features, *needle;
    } bad[] = {
        {"[[\"image/encoded\", [tfrec.VarLenFeature, tfrec.string, \"\"]]]",
         "feature 'image/encoded': tensors of strings are not supported"},
        {"[[\"image/encoded\", [tfrec.FixedLenFeature, [2], tfrec.string, \"\"]]]",
         "tensors of strings are not supported"},
        {"[[\"x\", [tfrec.FixedLenFeature, [1], tfrec.int64]]]",
         "feature 'x': tfrec.FixedLenFeature takes (shape, dtype, default_value) (got 2"},
        {"[[\"x\", [tfrec.FixedLenFeature, [1], tfrec.int32, 0]]]",
         "feature 'x': dtype must be tfrec.string, tfrec.int64 or tfrec.float32"},
        {"[[\"x\", [tfrec.FixedLenFeature, [1], tfrec.int64, 0.5]]]",
         "feature 'x': default_value must be a number for tfrec.int64"},
        {"[[\"x\", [tfrec.FixedLenFeature, [0], tfrec.int64, 0]]]",
         "feature 'x': shape size 0 out of range"},
        {"[[\"x\", [tfrec.Feature, [1], tfrec.int64, 0]]]",
         "feature 'x': not a tfrec.FixedLenFeature or tfrec.VarLenFeature"},
        {"[[\"x\", [tfrec.VarLenFeature, tfrec.int64, 0]], [\"x\", [tfrec.VarLenFeature, "
         "tfrec.int64, 0]]]",
         "feature 'x' given twice"},
        {"[\"x\"]", "argument features wants dict of str to tfrec feature"},
        {"[]", "features names no feature"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        p = built(bad[i].features, 2, &e);
        CHECK(p == NULL);
        sl_pipeline_free(p);
        CHECK_MSG(!check_needle_missing(e.msg, bad[i].needle), "%s: \"%s\" lacks \"%s\"",
                  bad[i].features, e.msg, bad[i].needle);
    }
    sl__protowire_buf_free(&all);
    sl__protowire_buf_free(&rec);
}

static void text(void) {
    sl_pipeline_config c;
    sl_pipeline_config_init(&c);
    c.batch_size = 2;
    c.num_threads = 1;
    char t[2048];
    snprintf(t, sizeof t,
             "import nvidia.dali.tfrecord as tfrec\n"
             "def pipe():\n"
             "    feats = {'image/encoded': tfrec.FixedLenFeature((), tfrec.string, ''),\n"
             "             'image/class/label': nvidia.dali.tfrecord.FixedLenFeature(\n"
             "                 shape=[1], dtype=tfrec.int64, default_value=-1)}\n"
             "    img, lab = fn.readers.tfrecord(path='%s', features=feats)\n"
             "    return img, lab\n",
             file);
    sl_err e;
    sl_pipeline *p = check_pipeline(&c, t, "t.py", 0, NULL, &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    sl_batch *b;
    if (p && sl_pipeline_next(p, &b) == SL_OK) {
        CHECK_EQ_INT(*(const int64_t *)sl_batch_output(b, 1)->data[1], 10);
        sl_pipeline_release(p, b);
    }
    sl_pipeline_free(p);
    static const struct {
        const char *expr, *needle;
    } bad[] = {
        {"tfrec.FixedLenFeature", "'tfrec.FixedLenFeature' is a feature type: call it"},
        {"tfrec.FixedLenFeature([1], tfrec.int8, 0)", "unknown 'tfrec.int8'"},
        {"tfrec.FixedLenFeature([1], tfrec.int64)", "tfrec.FixedLenFeature needs default_value"},
        {"tfrec.VarLenFeature(tfrec.int64, 0, shape=[1])",
         "tfrec.VarLenFeature takes partial_shape, dtype and default_value"},
        {"tfrec.FixedLenFeature([1], tfrec.int64, 0, 1)",
         "tfrec.FixedLenFeature takes at most 3 arguments"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(t, sizeof t,
                 "def pipe():\n"
                 "    img = fn.readers.tfrecord(path='%s', features={'x': %s})\n"
                 "    return img\n",
                 file, bad[i].expr);
        p = check_pipeline(&c, t, "t.py", 0, NULL, &e);
        CHECK(p == NULL);
        sl_pipeline_free(p);
        CHECK_MSG(!check_needle_missing(e.msg, bad[i].needle), "%s: \"%s\" lacks \"%s\"",
                  bad[i].expr, e.msg, bad[i].needle);
        CHECK_MSG(!check_needle_missing(e.msg, "t.py:2:"), "%s: no position: %s", bad[i].expr,
                  e.msg);
    }
}

int main(void) {
    crcs();
    frames();
    examples();
    reader();
    text();
    return check_done();
}
