/* SPDX-License-Identifier: Apache-2.0 */
/* The reader operators against real data: the Caffe2 and Caffe fixture LMDBs (written by the
 * official protobuf library from the Fashion-MNIST test set, record k = test image k) give the
 * right labels and JPEG bytes that decode to the test images; multiple paths, sharding meta,
 * checkpoints through the op hooks, readers.mnist and readers.file; and every kind of bad input
 * gives a clear error naming the path and key. */
#include "check.h"
#include "core/log.h"
#include "io/caffe2.h"
#include "io/caffe.h"
#include "io/idx.h"
#include "io/jpegenc.h"
#include "io/lmdb.h"
#include "io/protowire.h"
#include "operator/op.h"
#include "ops/registry.h"

#include <jpeglib.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FMNIST "/usr/share/datasets/fashion-mnist/"

typedef struct inst {
    const sl__op_def *op;
    sl__args args;
    void *state;
    int nout;
    sl_tlist out[8];
    sl_tlist *outp[8];
    sl__op_io io;
} inst;

/* creates op with "name=value" arguments (values in pipeline syntax) */
static sl_status make(inst *x, const char *opname, int batch, const char *const *kv, int n,
                      sl_err *e) {
    memset(x, 0, sizeof *x);
    x->op = sl__registry_find(opname);
    if (!x->op) return sl_err_set(e, SL_ENOENT, "no op %s", opname);
    const char *names[16];
    sl__val vals[16];
    char buf[16][512];
    for (int i = 0; i < n; i++) {
        snprintf(buf[i], sizeof buf[i], "%s", kv[i]);
        char *eq = strchr(buf[i], '=');
        *eq = 0;
        names[i] = buf[i];
        SL_TRY(sl__val_parse(eq + 1, &vals[i], e));
    }
    sl_status st = sl__args_build(x->op, n, names, vals, &x->args, e);
    for (int i = 0; i < n; i++) sl__val_free(&vals[i]);
    SL_TRY(st);
    sl__op_init init = {
        .name = opname, .device = sl_cpu(), .batch_size = batch, .threads = 1, .seed = 42};
    st = x->op->create(&x->args, &init, &x->state, e);
    if (st) {
        sl__args_free(&x->args);
        return st;
    }
    x->nout = x->op->num_outputs ? x->op->num_outputs(&x->args) : 1;
    for (int i = 0; i < x->nout; i++) x->outp[i] = &x->out[i];
    x->io.num_outputs = x->nout;
    x->io.out = x->outp;
    x->io.device = sl_cpu();
    return SL_OK;
}

/* setup, then run_cpu for every sample (readers.file reads its files there), as the pipeline does
 */
static sl_status step(inst *x, int batch, sl_err *e) {
    x->io.batch = batch;
    sl_status st = x->op->setup(x->state, &x->io, e);
    for (int i = 0; i < batch && st == SL_OK && x->op->run_cpu; i++)
        st = x->op->run_cpu(x->state, &x->io, i, 0, e);
    x->io.iteration++;
    return st;
}

static void destroy(inst *x) {
    if (x->state) x->op->destroy(x->state);
    for (int i = 0; i < x->nout; i++) sl_tlist_free(&x->out[i]);
    sl__args_free(&x->args);
    memset(x, 0, sizeof *x);
}

/* ---- JPEG checks with libjpeg ---- */
typedef struct jerr {
    struct jpeg_error_mgr pub;
    jmp_buf jb;
} jerr;
static void on_jerr(j_common_ptr c) {
    longjmp(((jerr *)c->err)->jb, 1);
}

/* decodes a grayscale JPEG into out (w*h); returns w*1000+h or -1 */
static int decode(const uint8_t *p, size_t n, uint8_t *out, size_t cap) {
    struct jpeg_decompress_struct c;
    jerr je;
    c.err = jpeg_std_error(&je.pub);
    je.pub.error_exit = on_jerr;
    if (setjmp(je.jb)) {
        jpeg_destroy_decompress(&c);
        return -1;
    }
    jpeg_create_decompress(&c);
    jpeg_mem_src(&c, p, (unsigned long)n);
    jpeg_read_header(&c, TRUE);
    c.out_color_space = JCS_GRAYSCALE;
    jpeg_start_decompress(&c);
    int w = (int)c.output_width, h = (int)c.output_height;
    if ((size_t)w * (size_t)h > cap) {
        jpeg_destroy_decompress(&c);
        return -1;
    }
    while (c.output_scanline < c.output_height) {
        uint8_t *row = out + (size_t)c.output_scanline * (size_t)w;
        jpeg_read_scanlines(&c, &row, 1);
    }
    jpeg_finish_decompress(&c);
    jpeg_destroy_decompress(&c);
    return w * 1000 + h;
}

static sl__idx *test_images, *test_labels;

/* the image i of a batch is a JPEG of test image `want`, within JPEG error */
static void check_jpeg(const sl_tlist *l, int i, int64_t want) {
    const uint8_t *p = l->data[i];
    size_t n = (size_t)sl_tlist_shape(l, i)[0];
    CHECK(n > 4 && p[0] == 0xFF && p[1] == 0xD8 && p[n - 2] == 0xFF && p[n - 1] == 0xD9);
    uint8_t img[28 * 28];
    CHECK_EQ_INT(decode(p, n, img, sizeof img), 28028);
    size_t sz;
    const uint8_t *ref = sl__idx_item(test_images, want, &sz);
    double se = 0;
    int maxd = 0;
    for (int k = 0; k < 784; k++) {
        int d = abs((int)img[k] - (int)ref[k]);
        se += d * d;
        maxd = d > maxd ? d : maxd;
    }
    CHECK_MSG(se / 784 < 8 && maxd < 64, "record %lld: MSE %.2f max diff %d", (long long)want,
              se / 784, maxd);
}

static int64_t test_label(int64_t i) {
    size_t sz;
    return *sl__idx_item(test_labels, i, &sz);
}

static void fixtures(void) {
    sl_err e;
    inst x;
    char path[1100];
    /* caffe2: 256 records in key order, batch 10 (the last batch wraps to the next epoch) */
    snprintf(path, sizeof path, "path=\"%s\"", fixture("caffe2-fmnist-256"));
    const char *a1[] = {path};
    CHECK_OK(make(&x, "readers.caffe2", 10, a1, 1, &e), &e);
    CHECK_EQ_INT(x.nout, 2);
    sl_reader_meta m;
    x.op->reader_meta(x.state, &m);
    CHECK_EQ_INT(m.epoch_size, 256);
    CHECK_EQ_INT(m.epoch_size_padded, 256);
    int64_t next = 0;
    for (int b = 0; b < 27; b++) {
        CHECK_OK(step(&x, 10, &e), &e);
        CHECK_EQ_INT(x.out[0].dtype, SL_DTYPE_U8);
        CHECK_EQ_INT(x.out[0].ndim, 1);
        CHECK_EQ_INT(x.out[1].dtype, SL_DTYPE_I32);
        for (int i = 0; i < 10; i++, next++) {
            int64_t r = next % 256;
            char key[16];
            snprintf(key, sizeof key, "%08lld", (long long)r);
            CHECK_STR(x.io.keys[i], key);
            CHECK_EQ_INT(sl_tlist_shape(&x.out[1], i)[0], 1);
            CHECK_EQ_INT(*(int32_t *)x.out[1].data[i], test_label(r));
            if (r % 5 == 0 || b == 0) check_jpeg(&x.out[0], i, r);
        }
    }
    destroy(&x);

    /* caffe: 64 Datum records, missing `encoded` would mean encoded; labels int32 (1,) */
    snprintf(path, sizeof path, "path=\"%s\"", fixture("caffe-fmnist-64"));
    CHECK_OK(make(&x, "readers.caffe", 64, a1, 1, &e), &e);
    CHECK_EQ_INT(x.nout, 2);
    CHECK_OK(step(&x, 64, &e), &e);
    for (int i = 0; i < 64; i++) {
        CHECK_EQ_INT(*(int32_t *)x.out[1].data[i], test_label(i));
        check_jpeg(&x.out[0], i, i);
    }
    destroy(&x);

    /* several paths read as one data set; shards over it */
    char two[2300];
    snprintf(two, sizeof two, "path=[\"%s\", \"%s\"]", fixture("caffe-fmnist-64"),
             fixture("caffe-fmnist-64"));
    const char *a2[] = {two, "num_shards=3", "shard_id=2", "pad_last_batch=True"};
    CHECK_OK(make(&x, "readers.caffe", 5, a2, 4, &e), &e);
    x.op->reader_meta(x.state, &m);
    CHECK_EQ_INT(m.epoch_size, 128);
    CHECK_EQ_INT(m.epoch_size_padded, 129);
    CHECK_EQ_INT(m.shard_id, 2);
    CHECK(m.pad_last_batch);
    CHECK_OK(step(&x, 5, &e), &e);
    /* shard 2 of 3 over 128 = [85, 128): record 85 is the second copy's record 21 */
    CHECK_STR(x.io.keys[0], "00000021");
    CHECK_EQ_INT(*(int32_t *)x.out[1].data[0], test_label(21));
    destroy(&x);
}

/* convert's encoders reproduce the fixtures (libjpeg at quality 95; records written by the official
 * protobuf library) byte for byte: JPEG, Caffe2 record and Caffe record */
static void encoders_match_fixtures(void) {
    sl_err e;
    const char *p2[] = {fixture("caffe2-fmnist-256")}, *p1[] = {fixture("caffe-fmnist-64")};
    sl__lmdb *c2, *c1;
    CHECK_OK(sl__lmdb_open(1, p2, &c2, &e), &e);
    CHECK_OK(sl__lmdb_open(1, p1, &c1, &e), &e);
    if (!c2 || !c1) return;
    int same2 = 0, same1 = 0;
    for (int i = 0; i < 256; i++) {
        size_t sz, n;
        const uint8_t *px = sl__idx_item(test_images, i, &sz), *v;
        uint8_t *jpg;
        size_t jn;
        CHECK_OK(sl__jpegenc_encode(px, 28, 28, 1, 95, &jpg, &jn, &e), &e);
        sl__image_info info;
        CHECK_OK(sl__jpegenc_probe(jpg, jn, &info, &e), &e);
        CHECK(info.width == 28 && info.height == 28 && info.channels == 1);
        sl__pw_buf r = {0};
        sl__caffe2_encode(&r, jpg, jn, false, 28, 28, 1, (int32_t)test_label(i));
        sl__lmdb_value(c2, i, &v, &n);
        same2 += n == r.len && !memcmp(v, r.data, n);
        if (i < 64) {
            r.len = 0;
            sl__caffe_encode(&r, jpg, jn, false, 28, 28, 1, (int32_t)test_label(i));
            sl__lmdb_value(c1, i, &v, &n);
            same1 += n == r.len && !memcmp(v, r.data, n);
        }
        sl__protowire_buf_free(&r);
        free(jpg);
    }
    CHECK_EQ_INT(same2, 256);
    CHECK_EQ_INT(same1, 64);
    sl__lmdb_close(c2);
    sl__lmdb_close(c1);
}

static void shuffled_and_checkpoint(void) {
    sl_err e;
    inst a, b;
    char path[1100];
    snprintf(path, sizeof path, "path=\"%s\"", fixture("caffe2-fmnist-256"));
    const char *args[] = {path, "random_shuffle=True", "initial_fill=64", "num_shards=2",
                          "shard_id=1"};
    CHECK_OK(make(&a, "readers.caffe2", 16, args, 5, &e), &e);
    CHECK_OK(make(&b, "readers.caffe2", 16, args, 5, &e), &e);
    /* one epoch of shard 1: [128, 256) each once, shuffled */
    int seen[256] = {0}, moved = 0;
    for (int s = 0; s < 8; s++) {
        CHECK_OK(step(&a, 16, &e), &e);
        for (int i = 0; i < 16; i++) {
            int k = atoi(a.io.keys[i]);
            CHECK(k >= 128 && k < 256);
            if (k >= 0 && k < 256) seen[k]++;
            moved += k != 128 + s * 16 + i;
            CHECK_EQ_INT(*(int32_t *)a.out[1].data[i], test_label(k));
        }
    }
    for (int k = 128; k < 256; k++) CHECK_EQ_INT(seen[k], 1);
    CHECK(moved > 64);
    /* save, run on, restore into b: b continues exactly as a did */
    void *blob;
    size_t size;
    CHECK_OK(a.op->save(a.state, &blob, &size, &e), &e);
    char keys[5][16][16];
    for (int s = 0; s < 5; s++) {
        CHECK_OK(step(&a, 16, &e), &e);
        for (int i = 0; i < 16; i++) snprintf(keys[s][i], 16, "%s", a.io.keys[i]);
    }
    CHECK_OK(b.op->restore(b.state, blob, size, &e), &e);
    for (int s = 0; s < 5; s++) {
        CHECK_OK(step(&b, 16, &e), &e);
        for (int i = 0; i < 16; i++) CHECK_STR(b.io.keys[i], keys[s][i]);
    }
    free(blob);
    destroy(&a);
    destroy(&b);
}

/* writes an LMDB of the given records (keys 0000000k) */
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

static void label_types(void) {
    /* a synthetic Caffe2 LMDB: raw BYTE image (2,3,1), FLOAT multi labels, an INT64 extra, bbox */
    const char *dir = scratch_dir("readers_c2_labels");
    sl__pw_buf recs[3];
    memset(recs, 0, sizeof recs);
    for (int i = 0; i < 3; i++) {
        sl__pw_buf img = {0}, lab = {0}, extra = {0}, box = {0};
        uint8_t px[6] = {1, 2, 3, 4, 5, (uint8_t)i};
        sl__protowire_put_varint(&img, 1, 2);
        sl__protowire_put_varint(&img, 1, 3);
        sl__protowire_put_varint(&img, 2, SL_C2_BYTE);
        sl__protowire_put_bytes(&img, 5, px, 6);
        /* label indices, unpacked floats (proto2 parsers accept both) */
        sl__protowire_put_varint(&lab, 2, SL_C2_FLOAT);
        sl__protowire_put_fixed32(&lab, 3, 0x40000000u); /* 2.0 */
        sl__protowire_put_fixed32(&lab, 3, 0x40800000u); /* 4.0 */
        sl__protowire_put_varint(&extra, 2, SL_C2_INT64);
        sl__protowire_put_varint(&extra, 10, (uint64_t)-5); /* unpacked negative int64 */
        sl__protowire_put_varint(&box, 2, SL_C2_INT32);
        sl__pw_buf packed = {0};
        for (int k = 0; k < 4; k++) sl__protowire_put_raw_varint(&packed, (uint64_t)(10 * k + i));
        sl__protowire_put_bytes(&box, 4, packed.data, packed.len);
        sl__protowire_put_bytes(&recs[i], 1, img.data, img.len);
        sl__protowire_put_bytes(&recs[i], 1, lab.data, lab.len);
        sl__protowire_put_bytes(&recs[i], 1, extra.data, extra.len);
        sl__protowire_put_bytes(&recs[i], 1, box.data, box.len);
        sl__protowire_buf_free(&img);
        sl__protowire_buf_free(&lab);
        sl__protowire_buf_free(&extra);
        sl__protowire_buf_free(&box);
        sl__protowire_buf_free(&packed);
    }
    write_lmdb(dir, 3, recs);
    for (int i = 0; i < 3; i++) sl__protowire_buf_free(&recs[i]);
    char path[1100];
    snprintf(path, sizeof path, "path=\"%s\"", dir);
    sl_err e;
    inst x;
    const char *sparse[] = {path, "label_type=1", "num_labels=6", "additional_inputs=1",
                            "bbox=True"};
    CHECK_OK(make(&x, "readers.caffe2", 3, sparse, 5, &e), &e);
    CHECK_EQ_INT(x.nout, 4);
    CHECK_OK(step(&x, 3, &e), &e);
    CHECK_EQ_INT(x.out[0].ndim, 3);
    CHECK_EQ_INT(sl_tlist_shape(&x.out[0], 2)[1], 3);
    CHECK_EQ_INT(((uint8_t *)x.out[0].data[2])[5], 2);
    CHECK_STR(x.out[0].layout, "HWC");
    CHECK_EQ_INT(x.out[1].dtype, SL_DTYPE_F32);
    CHECK_EQ_INT(sl_tlist_shape(&x.out[1], 0)[0], 6);
    const float *l = x.out[1].data[0];
    CHECK(l[0] == 0 && l[2] == 1 && l[3] == 0 && l[4] == 1);
    CHECK_EQ_INT(x.out[2].dtype, SL_DTYPE_I64);
    CHECK_EQ_INT(*(int64_t *)x.out[2].data[1], -5);
    CHECK_EQ_INT(x.out[3].dtype, SL_DTYPE_I32);
    CHECK_EQ_INT(((int32_t *)x.out[3].data[1])[3], 31);
    destroy(&x);
    const char *dense[] = {path, "label_type=2", "additional_inputs=1", "bbox=True"};
    CHECK_OK(make(&x, "readers.caffe2", 3, dense, 4, &e), &e);
    CHECK_OK(step(&x, 3, &e), &e);
    CHECK_EQ_INT(sl_tlist_shape(&x.out[1], 0)[0], 2);
    CHECK_NEAR(((float *)x.out[1].data[0])[1], 4.0, 0);
    destroy(&x);
    /* SINGLE_LABEL on a 2-value label: a record error naming path and key */
    const char *single[] = {path};
    CHECK_OK(make(&x, "readers.caffe2", 3, single, 1, &e), &e);
    CHECK_FAILS(step(&x, 3, &e), SL_EFORMAT, &e, "at key 00000000: label has 2 values");
    CHECK(strstr(e.msg, dir) != NULL);
    destroy(&x);
    /* the sparse index out of range */
    const char *small[] = {path, "label_type=1", "num_labels=3"};
    CHECK_OK(make(&x, "readers.caffe2", 1, small, 3, &e), &e);
    CHECK_FAILS(step(&x, 1, &e), SL_EFORMAT, &e, "label index 4 is outside");
    destroy(&x);
}

static void bad_input(void) {
    sl_err e;
    inst x;
    char path[1100];
    const char *a1[] = {path};
    /* missing path */
    snprintf(path, sizeof path, "path=\"/nonexistent/sluice-lmdb\"");
    CHECK_FAILS(make(&x, "readers.caffe2", 4, a1, 1, &e), SL_ENOENT, &e,
                "/nonexistent/sluice-lmdb: No such file");
    /* a folder that is not an LMDB */
    snprintf(path, sizeof path, "path=\"%s\"", fixture("dali_extra"));
    CHECK_FAILS(make(&x, "readers.caffe2", 4, a1, 1, &e), SL_EFORMAT, &e, "not an LMDB");
    CHECK(strstr(e.msg, "dali_extra") != NULL);
    /* a data.mdb of garbage */
    const char *gdir = scratch_dir("readers_garbage_env");
    char f[1100];
    snprintf(f, sizeof f, "%s/data.mdb", gdir);
    FILE *fp = fopen(f, "wb");
    for (int i = 0; i < 20000; i++) fputc((i * 7919) & 0xff, fp);
    fclose(fp);
    snprintf(path, sizeof path, "path=\"%s\"", gdir);
    CHECK_FAILS(make(&x, "readers.caffe2", 4, a1, 1, &e), SL_EFORMAT, &e, "not a readable LMDB");
    CHECK(strstr(e.msg, gdir) != NULL);

    /* records: garbage, truncated, wrong label type, a wrong image type */
    const char *dir = scratch_dir("readers_bad_records");
    sl__pw_buf recs[5];
    memset(recs, 0, sizeof recs);
    uint8_t jpeg[4] = {0xFF, 0xD8, 0xFF, 0xD9};
    sl__caffe2_encode(&recs[0], jpeg, 4, false, 0, 0, 0, 3); /* good */
    const uint8_t garbage[6] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f};
    sl__protowire_put_raw(&recs[1], garbage, sizeof garbage);
    sl__caffe2_encode(&recs[2], jpeg, 4, false, 0, 0, 0, 3);
    recs[2].len -= 3; /* truncated */
    {                 /* label proto of type STRING */
        sl__pw_buf img = {0}, lab = {0};
        sl__protowire_put_varint(&img, 2, SL_C2_STRING);
        sl__protowire_put_bytes(&img, 6, jpeg, 4);
        sl__protowire_put_varint(&lab, 2, SL_C2_STRING);
        sl__protowire_put_bytes(&lab, 6, "7", 1);
        sl__protowire_put_bytes(&recs[3], 1, img.data, img.len);
        sl__protowire_put_bytes(&recs[3], 1, lab.data, lab.len);
        sl__protowire_buf_free(&img);
        sl__protowire_buf_free(&lab);
    }
    { /* image proto of type FLOAT */
        sl__pw_buf img = {0};
        sl__protowire_put_varint(&img, 2, SL_C2_FLOAT);
        sl__protowire_put_bytes(&recs[4], 1, img.data, img.len);
        sl__protowire_buf_free(&img);
    }
    write_lmdb(dir, 5, recs);
    for (int i = 0; i < 5; i++) sl__protowire_buf_free(&recs[i]);
    snprintf(path, sizeof path, "path=\"%s\"", dir);
    CHECK_OK(make(&x, "readers.caffe2", 1, a1, 1, &e), &e);
    CHECK_OK(step(&x, 1, &e), &e);
    CHECK_EQ_INT(*(int32_t *)x.out[1].data[0], 3);
    CHECK_FAILS(step(&x, 1, &e), SL_EFORMAT, &e, "at key 00000001: not a TensorProtos message");
    CHECK(strstr(e.msg, dir) != NULL);
    CHECK_FAILS(step(&x, 1, &e), SL_EFORMAT, &e, "at key 00000002:");
    CHECK_FAILS(step(&x, 1, &e), SL_EFORMAT, &e,
                "at key 00000003: unsupported label data type 4 (INT32 or FLOAT wanted)");
    CHECK_FAILS(step(&x, 1, &e), SL_EFORMAT, &e, "at key 00000004: image proto has data type 1");
    destroy(&x);
    /* the same records through readers.caffe: garbage is refused too */
    CHECK_OK(make(&x, "readers.caffe", 2, a1, 1, &e), &e);
    CHECK_FAILS(step(&x, 2, &e), SL_EFORMAT, &e, "at key 0000000");
    destroy(&x);

    /* shard arguments, named with the path */
    snprintf(path, sizeof path, "path=\"%s\"", fixture("caffe-fmnist-64"));
    const char *s1[] = {path, "num_shards=4", "shard_id=4"};
    CHECK_FAILS(make(&x, "readers.caffe", 4, s1, 3, &e), SL_EINVAL, &e,
                "shard_id 4 is out of range for num_shards 4");
    CHECK(strstr(e.msg, "caffe-fmnist-64") != NULL);
    const char *s2[] = {path, "num_shards=65"};
    CHECK_FAILS(make(&x, "readers.caffe", 4, s2, 2, &e), SL_EINVAL, &e,
                "num_shards 65 is larger than the data set (64 records)");
    CHECK(strstr(e.msg, "caffe-fmnist-64") != NULL);
}

static void idx_and_files(void) {
    sl_err e;
    inst x;
    const char *a[] = {"path=\"" FMNIST "t10k-images-idx3-ubyte.gz\"",
                       "labels=\"" FMNIST "t10k-labels-idx1-ubyte.gz\"", "num_shards=2",
                       "shard_id=1"};
    CHECK_OK(make(&x, "readers.mnist", 8, a, 4, &e), &e);
    CHECK_OK(step(&x, 8, &e), &e);
    CHECK_STR(x.io.keys[0], "5000");
    CHECK_EQ_INT(sl_tlist_shape(&x.out[0], 0)[0], 28);
    CHECK_EQ_INT(sl_tlist_shape(&x.out[0], 0)[2], 1);
    size_t sz;
    CHECK(memcmp(x.out[0].data[3], sl__idx_item(test_images, 5003, &sz), 784) == 0);
    CHECK_EQ_INT(*(int32_t *)x.out[1].data[3], test_label(5003));
    destroy(&x);
    const char *bad[] = {"path=\"" FMNIST "t10k-labels-idx1-ubyte.gz\""};
    CHECK_FAILS(make(&x, "readers.mnist", 8, bad, 1, &e), SL_EFORMAT, &e, "need 3 or 4 dims");

    /* a class-folder tree: root/a/x.jpg (label 0), root/b/y.jpg, root/b/z.jpg (label 1) */
    const char *root = scratch_dir("readers_files");
    char cmd[2400];
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/a %s/b && printf 'AAAA' > %s/a/x.jpg && printf 'BB' > %s/b/y.jpg && "
             "printf 'C' > %s/b/z.JPEG && printf 'n' > %s/b/notes.txt && "
             "printf 'b/y.jpg 7\\na/x.jpg 3\\n' > %s/list.txt",
             root, root, root, root, root, root, root);
    CHECK_EQ_INT(system(cmd), 0);
    char r1[1200];
    snprintf(r1, sizeof r1, "file_root=\"%s\"", root);
    const char *fa[] = {r1};
    CHECK_OK(make(&x, "readers.file", 3, fa, 1, &e), &e);
    CHECK_OK(step(&x, 3, &e), &e);
    CHECK_STR(x.io.keys[0], "a/x.jpg");
    CHECK_STR(x.io.keys[2], "b/z.JPEG");
    CHECK_EQ_INT(sl_tlist_shape(&x.out[0], 0)[0], 4);
    CHECK(memcmp(x.out[0].data[1], "BB", 2) == 0);
    CHECK_EQ_INT(*(int32_t *)x.out[1].data[0], 0);
    CHECK_EQ_INT(*(int32_t *)x.out[1].data[2], 1);
    destroy(&x);
    char l1[1200];
    snprintf(l1, sizeof l1, "file_list=\"%s/list.txt\"", root);
    const char *fl[] = {l1};
    CHECK_OK(make(&x, "readers.file", 2, fl, 1, &e), &e);
    CHECK_OK(step(&x, 2, &e), &e);
    CHECK_STR(x.io.keys[0], "b/y.jpg");
    CHECK_EQ_INT(*(int32_t *)x.out[1].data[0], 7);
    CHECK_EQ_INT(*(int32_t *)x.out[1].data[1], 3);
    destroy(&x);
    /* files that vanish or change size after the listing: errors naming the file and key */
    CHECK_OK(make(&x, "readers.file", 3, fa, 1, &e), &e);
    x.io.batch = 3;
    CHECK_OK(x.op->setup(x.state, &x.io, &e), &e); /* sized: a/x.jpg 4 bytes, b/y.jpg 2 */
    snprintf(cmd, sizeof cmd, "printf 'AA' > %s/a/x.jpg && printf 'BBB' > %s/b/y.jpg", root, root);
    CHECK_EQ_INT(system(cmd), 0);
    CHECK_FAILS(x.op->run_cpu(x.state, &x.io, 0, 0, &e), SL_EIO, &e, "short read: 2 of 4 bytes");
    CHECK(strstr(e.msg, "key a/x.jpg") && strstr(e.msg, "/a/x.jpg"));
    CHECK_FAILS(x.op->run_cpu(x.state, &x.io, 1, 0, &e), SL_EIO, &e,
                "changed size while being read (2 -> 3 bytes)");
    CHECK(strstr(e.msg, "key b/y.jpg") && strstr(e.msg, "/b/y.jpg"));
    snprintf(cmd, sizeof cmd, "rm %s/b/z.JPEG", root);
    CHECK_EQ_INT(system(cmd), 0);
    CHECK_FAILS(x.op->run_cpu(x.state, &x.io, 2, 0, &e), SL_EIO, &e, "No such file");
    CHECK(strstr(e.msg, "key b/z.JPEG") && strstr(e.msg, "/b/z.JPEG"));
    x.io.iteration++;
    CHECK_FAILS(step(&x, 3, &e), SL_EIO, &e, "b/z.JPEG: No such file"); /* gone before setup */
    CHECK(strstr(e.msg, "readers.file: key b/z.JPEG") != NULL);
    destroy(&x);
    const char *missing[] = {"file_root=\"/nonexistent/sluice-files\""};
    CHECK_FAILS(make(&x, "readers.file", 2, missing, 1, &e), SL_ENOENT, &e,
                "/nonexistent/sluice-files");
}

int main(void) {
    sl_err e;
    CHECK_OK(sl__idx_open(FMNIST "t10k-images-idx3-ubyte.gz", &test_images, &e), &e);
    CHECK_OK(sl__idx_open(FMNIST "t10k-labels-idx1-ubyte.gz", &test_labels, &e), &e);
    if (!test_images || !test_labels) return check_done();
    fixtures();
    encoders_match_fixtures();
    shuffled_and_checkpoint();
    label_types();
    bad_input();
    idx_and_files();
    sl__idx_close(test_images);
    sl__idx_close(test_labels);
    return check_done();
}
