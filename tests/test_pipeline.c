/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline engine on the seed's chain over real data (the Caffe2 LMDB fixture): outputs are
 * byte-identical for any thread count and prefetch depth (with random shuffling and a random
 * mirror in the graph), the same from run to run, and an error raised inside a worker (a corrupt
 * JPEG in the middle of the data) comes back from sl_pipeline_next naming the record's key and the
 * op, after which the pipeline frees cleanly (the ASan build checks for leaks); so does a record
 * the reader itself cannot parse, raised in the read stage ahead of the decoder. */
#include "check.h"

#include "sluice/pipeline.h"

#include <lmdb.h>
#include <stdlib.h>
#include <string.h>

static const char *text =
    "@data_iterator(output_map=[\"images\", \"labels\"], reader_name=\"rd\", sharding=sharding)\n"
    "def pipe(data_path, num_shards, shard_id):\n"
    "    jpegs, labels = fn.readers.caffe2(path=data_path, random_shuffle=True, initial_fill=64,\n"
    "                                      name=\"rd\", num_shards=num_shards, shard_id=shard_id)\n"
    "    images = fn.decoders.image(jpegs, device=\"mixed\", output_type=types.GRAY)\n"
    "    coin = fn.random.coin_flip(probability=0.5)\n"
    "    images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, std=[255.0],\n"
    "                                      output_layout=\"CHW\", mirror=coin)\n"
    "    images = fn.reshape(images, shape=[image_size * image_size])\n"
    "    labels = fn.one_hot(labels.gpu(), num_classes=10)\n"
    "    return images, labels\n";

static sl_pipeline *make(const char *path, int threads, int prefetch, int batch, sl_err *e) {
    sl_pipeline_config c;
    sl_pipeline_config_init(&c);
    c.batch_size = batch;
    c.num_threads = threads;
    c.prefetch_cpu = prefetch;
    c.seed = 7;
    sl_pipeline_bind binds[4] = {
        {"data_path", path}, {"image_size", "28"}, {"num_shards", "1"}, {"shard_id", "0"}};
    return check_pipeline(&c, text, "test.py", 4, binds, e);
}

/* n batches of images and labels, concatenated */
static unsigned char *collect(sl_pipeline *p, int n, size_t *len) {
    size_t cap = 1 << 20, used = 0;
    unsigned char *buf = malloc(cap);
    for (int i = 0; i < n; i++) {
        sl_batch *b;
        sl_status st = sl_pipeline_next(p, &b);
        CHECK_MSG(st == SL_OK, "batch %d: %s", i, sl_pipeline_errmsg(p));
        if (st) break;
        for (int o = 0; o < 2; o++) {
            sl_tensor t;
            sl_err e;
            CHECK_OK(sl_batch_tensor(b, o, &t, &e), &e);
            size_t nb = sl_tensor_nbytes(&t);
            while (used + nb > cap) buf = realloc(buf, cap *= 2);
            memcpy(buf + used, t.data, nb);
            used += nb;
        }
        sl_pipeline_release(p, b);
    }
    *len = used;
    return buf;
}

static void test_determinism(void) {
    const char *path = fixture("caffe2-fmnist-256");
    const int configs[][2] = {{1, 1}, {8, 1}, {1, 4}, {8, 4}, {3, 2}};
    unsigned char *ref = NULL;
    size_t ref_len = 0;
    for (size_t k = 0; k < sizeof configs / sizeof configs[0]; k++) {
        sl_err e;
        sl_err_clear(&e);
        sl_pipeline *p = make(path, configs[k][0], configs[k][1], 32, &e);
        CHECK_MSG(p != NULL, "threads %d prefetch %d: %s", configs[k][0], configs[k][1], e.msg);
        if (!p) return;
        /* 20 batches of 32 = 2.5 epochs of 256 records */
        size_t len;
        unsigned char *got = collect(p, 20, &len);
        if (!ref) {
            ref = got;
            ref_len = len;
            CHECK_EQ_INT(len, 20 * 32 * (784 + 10) * 4);
        } else {
            CHECK_MSG(len == ref_len && memcmp(got, ref, len) == 0,
                      "threads %d prefetch %d: outputs differ from threads 1 prefetch 1",
                      configs[k][0], configs[k][1]);
            free(got);
        }
        sl_pipeline_free(p);
    }
    free(ref);
}

/* Copies the fixture LMDB into dir, replacing record `bad` with a truncated JPEG, or with a record
 * that is not a TensorProtos message when broken_record. */
static void write_corrupt_lmdb(const char *src_path, const char *dir, int bad, bool broken_record,
                               char *badkey) {
    MDB_env *src, *dst;
    MDB_txn *rt, *wt;
    MDB_dbi rd, wd;
    MDB_cursor *cur;
    CHECK(mdb_env_create(&src) == 0);
    CHECK(mdb_env_open(src, src_path, MDB_RDONLY | MDB_NOLOCK, 0664) == 0);
    CHECK(mdb_env_create(&dst) == 0);
    mdb_env_set_mapsize(dst, 64 << 20);
    CHECK(mdb_env_open(dst, dir, 0, 0664) == 0);
    mdb_txn_begin(src, NULL, MDB_RDONLY, &rt);
    mdb_dbi_open(rt, NULL, 0, &rd);
    mdb_txn_begin(dst, NULL, 0, &wt);
    mdb_dbi_open(wt, NULL, 0, &wd);
    mdb_cursor_open(rt, rd, &cur);
    MDB_val k, v;
    int i = 0;
    while (mdb_cursor_get(cur, &k, &v, i ? MDB_NEXT : MDB_FIRST) == 0) {
        if (i == bad) {
            /* TensorProtos { TensorProto { data_type: STRING, string_data: <60 bytes of JPEG> },
             *                TensorProto { data_type: INT32, int32_data: 3 } } */
            const unsigned char *jpeg = NULL;
            const unsigned char *val = v.mv_data;
            for (size_t j = 0; j + 1 < v.mv_size; j++)
                if (val[j] == 0xff && val[j + 1] == 0xd8) {
                    jpeg = val + j;
                    break;
                }
            CHECK(jpeg != NULL);
            unsigned char rec[128];
            size_t n = 0;
            rec[n++] = 0x0a; /* protos, wire type 2 */
            rec[n++] = 2 + 2 + 60;
            rec[n++] = 0x10; /* data_type */
            rec[n++] = 4;    /* STRING */
            rec[n++] = 0x32; /* string_data */
            rec[n++] = 60;
            memcpy(rec + n, jpeg, 60);
            n += 60;
            const unsigned char lab[] = {0x0a, 4, 0x10, 2, 0x20, 3};
            memcpy(rec + n, lab, sizeof lab);
            n += sizeof lab;
            if (broken_record) {
                rec[1] = 120; /* the first message runs past the record's end */
                n = 8;
            }
            MDB_val nv = {n, rec};
            CHECK(mdb_put(wt, wd, &k, &nv, 0) == 0);
            snprintf(badkey, 64, "%.*s", (int)k.mv_size, (const char *)k.mv_data);
        } else {
            CHECK(mdb_put(wt, wd, &k, &v, 0) == 0);
        }
        i++;
    }
    mdb_cursor_close(cur);
    mdb_txn_abort(rt);
    CHECK(mdb_txn_commit(wt) == 0);
    mdb_env_close(src);
    mdb_env_close(dst);
}

/* The reader and decoder over dir, no shuffle, batch 32. */
static sl_pipeline *make_plain(const char *dir, int threads, int prefetch, sl_err *e) {
    const char *plain =
        "def pipe(data_path):\n"
        "    jpegs, labels = fn.readers.caffe2(path=data_path, name=\"rd\")\n"
        "    images = fn.decoders.image(jpegs, device=\"mixed\", output_type=types.GRAY)\n"
        "    return images, labels\n";
    sl_pipeline_config c;
    sl_pipeline_config_init(&c);
    c.batch_size = 32;
    c.num_threads = threads;
    c.prefetch_cpu = prefetch;
    sl_pipeline *p;
    CHECK_OK(sl_pipeline_create(&c, &p, e), e);
    sl_pipeline_bind b1 = {"data_path", dir};
    CHECK_OK(sl_pipeline_parse(p, plain, "plain.py", 1, &b1, e), e);
    CHECK_MSG(sl_pipeline_build(p) == SL_OK, "%s", sl_pipeline_errmsg(p));
    return p;
}

/* Takes up to 8 batches, stopping at the first that fails (its status in *st): how many came out.
 * With whole, each must hold a whole batch of decoded images. */
static int take_until_error(sl_pipeline *p, bool whole, sl_status *st, sl_err *e) {
    int ok = 0;
    *st = SL_OK;
    for (int i = 0; i < 8; i++) {
        sl_batch *b;
        *st = sl_pipeline_next(p, &b);
        if (*st) break;
        if (whole) {
            sl_tensor t;
            CHECK_OK(sl_batch_tensor(b, 0, &t, e), e);
            CHECK_EQ_INT(t.shape[0], 32);
        }
        ok++;
        sl_pipeline_release(p, b);
    }
    return ok;
}

/* The failed pipeline's message names the record and the op, and it stays failed; then frees. */
static void check_failed_and_free(sl_pipeline *p, const char *badkey, const char *op) {
    const char *msg = sl_pipeline_errmsg(p);
    CHECK_MSG(strstr(msg, badkey) != NULL, "message lacks key %s: %s", badkey, msg);
    CHECK_MSG(strstr(msg, op) != NULL, "message lacks %s: %s", op, msg);
    sl_batch *b;
    CHECK_EQ_INT(sl_pipeline_next(p, &b), SL_EFORMAT); /* stays failed */
    sl_pipeline_free(p);
}

static void test_worker_error(void) {
    const char *dir = scratch_dir("pipeline-corrupt");
    char badkey[64] = "";
    write_corrupt_lmdb(fixture("caffe2-fmnist-256"), dir, 150, false, badkey);
    sl_err e;
    sl_err_clear(&e);
    sl_pipeline *p = make_plain(dir, 4, 2, &e);
    sl_status st;
    /* no shuffle: the bad record sits in batch 150 / 32 = 4 */
    CHECK_EQ_INT(take_until_error(p, false, &st, &e), 4);
    CHECK_EQ_INT(st, SL_EFORMAT);
    check_failed_and_free(p, badkey, "decoders.image");
}

/* A record the reader cannot parse, in a pipeline where a decoder follows the reader (so the
 * reader runs in its read stage, ahead of the decoder): the batches before it come out whole, then
 * the error, naming the store, the record and the reader; the pipeline stays failed and frees
 * cleanly. */
static void test_reader_error(void) {
    const char *dir = scratch_dir("pipeline-bad-record");
    char badkey[64] = "";
    write_corrupt_lmdb(fixture("caffe2-fmnist-256"), dir, 100, true, badkey);
    for (int prefetch = 1; prefetch <= 3; prefetch += 2) {
        sl_err e;
        sl_err_clear(&e);
        sl_pipeline *p = make_plain(dir, 3, prefetch, &e);
        sl_status st;
        /* record 100 is in batch 100 / 32 = 3 */
        CHECK_EQ_INT(take_until_error(p, true, &st, &e), 3);
        CHECK_EQ_INT(st, SL_EFORMAT);
        check_failed_and_free(p, badkey, "readers.caffe2");
    }
}

static void test_build_errors(void) {
    sl_pipeline_config c;
    sl_pipeline_config_init(&c);
    sl_pipeline *p;
    sl_err e;
    CHECK_OK(sl_pipeline_create(&c, &p, &e), &e);
    CHECK(sl_pipeline_op_begin(p, "decoders.imag") == NULL);
    CHECK_MSG(strstr(sl_pipeline_errmsg(p), "did you mean 'decoders.image'") != NULL, "%s",
              sl_pipeline_errmsg(p));
    /* a gpu op on a CPU input without .gpu() is refused at build, as DALI does, where sluice
     * has the op on the GPU; one it runs on the CPU alone (every op of a build without CUDA)
     * runs there, its outputs counting as GPU data */
    sl_pipeline_op *op = sl_pipeline_op_begin(p, "readers.caffe2");
    char path[1100];
    snprintf(path, sizeof path, "\"%s\"", fixture("caffe2-fmnist-256"));
    sl_pipeline_op_arg(op, "path", path);
    int rd[2];
    CHECK_OK(sl_pipeline_op_end(op, rd, 2, NULL), NULL);
    op = sl_pipeline_op_begin(p, "one_hot");
    sl_pipeline_op_input(op, rd[1]);
    sl_pipeline_op_device(op, "gpu");
    sl_pipeline_op_arg(op, "num_classes", "10");
    int oh;
#ifdef SLUICE_HAVE_CUDA
    CHECK_EQ_INT(sl_pipeline_op_end(op, &oh, 1, NULL), SL_EINVAL);
    CHECK_MSG(strstr(sl_pipeline_errmsg(p), ".gpu()") != NULL, "%s", sl_pipeline_errmsg(p));
#else
    CHECK_OK(sl_pipeline_op_end(op, &oh, 1, NULL), NULL);
#endif
    /* a missing store fails at build, naming the path */
    op = sl_pipeline_op_begin(p, "readers.caffe2");
    sl_pipeline_op_arg(op, "path", "\"/nonexistent/lmdb\"");
    int r2[2];
    CHECK_OK(sl_pipeline_op_end(op, r2, 2, NULL), NULL);
    CHECK_OK(sl_pipeline_set_outputs(p, 1, r2, NULL), NULL);
    CHECK(sl_pipeline_build(p) != SL_OK);
    CHECK_MSG(strstr(sl_pipeline_errmsg(p), "/nonexistent/lmdb") != NULL, "%s",
              sl_pipeline_errmsg(p));
    sl_pipeline_free(p);
}

int main(void) {
    test_build_errors();
    test_determinism();
    test_worker_error();
    test_reader_error();
    return check_done();
}
