/* SPDX-License-Identifier: Apache-2.0 */
/* Pipeline text end to end: sl_pipeline_parse builds real graphs (the seed's pipeline files on the
 * Caffe2 fixture LMDB, CPU device, batch 8) that run and give batches of the expected shapes; and
 * errors the builder raises (unknown operators and arguments, output counts) point at the text. */
#include "check.h"

#include "sluice/pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sl_pipeline *make(int batch) {
    sl_pipeline_config cfg;
    sl_pipeline_config_init(&cfg);
    cfg.batch_size = batch;
    cfg.num_threads = 2;
    cfg.device = sl_cpu();
    sl_pipeline *p = NULL;
    sl_err e;
    CHECK_OK(sl_pipeline_create(&cfg, &p, &e), &e);
    return p;
}

/* Checks output i of the next batch: a dense tensor of the given dtype and shape. */
static void check_output(sl_batch *b, int i, sl_dtype dtype, int ndim, int64_t d0, int64_t d1) {
    sl_tensor t;
    sl_err e;
    CHECK_OK(sl_batch_tensor(b, i, &t, &e), &e);
    CHECK_EQ_INT(t.dtype, dtype);
    CHECK_EQ_INT(t.ndim, ndim);
    CHECK_EQ_INT(t.shape[0], d0);
    if (ndim > 1) CHECK_EQ_INT(t.shape[1], d1);
}

/* A reader-only pipeline (no image operators needed): labels (8, 1) int32. */
static void test_reader_only(void) {
    sl_pipeline *p = make(8);
    if (!p) return;
    sl_pipeline_bind binds[2] = {{"data_path", fixture("caffe2-fmnist-256")}, {"n", "2"}};
    sl_err e;
    CHECK_OK(sl_pipeline_parse(p,
                               "from nvidia.dali import fn\n"
                               "jpegs, labels = fn.readers.caffe2(path=data_path, num_shards=n,\n"
                               "                                  shard_id=n - 1, name='r')\n"
                               "return labels, jpegs\n",
                               "r.py", 2, binds, &e),
             &e);
    CHECK_EQ_INT(sl_pipeline_num_outputs(p), 2);
    CHECK_STR(sl_pipeline_output_name(p, 0), "labels");
    CHECK_STR(sl_pipeline_output_name(p, 1), "jpegs");
    CHECK_OK(sl_pipeline_build(p), NULL);
    sl_batch *b;
    CHECK_OK(sl_pipeline_next(p, &b), NULL);
    if (b) {
        check_output(b, 0, SL_DTYPE_I32, 2, 8, 1);
        sl_pipeline_release(p, b);
    }
    sl_reader_meta m;
    CHECK_OK(sl_pipeline_reader_meta(p, "r", &m), NULL);
    CHECK_EQ_INT(m.epoch_size, 256);
    CHECK_EQ_INT(m.number_of_shards, 2);
    CHECK_EQ_INT(m.shard_id, 1);
    sl_pipeline_free(p);
}

static void fails(const char *text, sl_status st, const char *want) {
    sl_pipeline *p = make(8);
    if (!p) return;
    sl_pipeline_bind bind = {"data_path", fixture("caffe2-fmnist-256")};
    sl_err e;
    CHECK_FAILS(sl_pipeline_parse(p, text, "t.py", 1, &bind, &e), st, &e, want);
    CHECK_STR(sl_pipeline_errmsg(p), e.msg);
    sl_pipeline_free(p);
}

static void test_errors(void) {
    /* unknown operator: the closest known one, caret under the call */
    fails("def f(data_path):\n"
          "    jpegs, labels = fn.readers.cafe2(path=data_path)\n"
          "    return labels\n",
          SL_EINVAL,
          "t.py:2:21: error: unknown operator 'fn.readers.cafe2'; did you mean 'readers.caffe2'?\n"
          "    jpegs, labels = fn.readers.cafe2(path=data_path)\n"
          "                    ^");
    fails("def f(data_path):\n"
          "    jpegs, labels = fn.readers.caffe2(path=data_path)\n"
          "    images = fn.decoders.imag(jpegs, device=\"mixed\", output_type=types.GRAY)\n"
          "    return images\n",
          SL_EINVAL,
          "t.py:3:14: error: unknown operator 'fn.decoders.imag'; did you mean 'decoders.image'?\n"
          "    images = fn.decoders.imag(jpegs, device=\"mixed\", output_type=types.GRAY)\n"
          "             ^");
    /* unknown argument: the schema's suggestion, caret under the argument */
    fails("def f(data_path):\n"
          "    jpegs, labels = fn.readers.caffe2(path=data_path,\n"
          "                                      random_shufle=True)\n"
          "    return labels\n",
          SL_EINVAL,
          "t.py:3:39: error: readers.caffe2 has no argument 'random_shufle'; did "
          "you mean 'random_shuffle'?\n"
          "                                      random_shufle=True)\n"
          "                                      ^");
    /* a wrong type for a known argument */
    fails("jpegs, labels = fn.readers.caffe2(path=data_path, shard_id='one')\nreturn labels\n",
          SL_EINVAL, "t.py:1:51: error: ");
    /* output counts */
    fails("x = fn.readers.caffe2(path=data_path)\nreturn x\n", SL_EINVAL,
          "t.py:1:5: error: fn.readers.caffe2 gives 2 outputs; unpack them: a, b = "
          "fn.readers.caffe2(...)");
    fails("a, b, c = fn.readers.caffe2(path=data_path)\nreturn a\n", SL_EINVAL,
          "t.py:1:11: error: fn.readers.caffe2 gives 2 outputs, not 3");
    /* the builder's own checks: a reader takes no inputs */
    fails("a, b = fn.readers.caffe2(path=data_path)\nc, d = fn.readers.caffe2(a, path=data_path)\n"
          "return c\n",
          SL_EINVAL, "t.py:2:8: error: readers.caffe2 takes 0..0 inputs, got 1");
}

/* Argument values go from the text to the builder as the values the evaluator made: a string that
 * pipeline syntax can only write with escapes arrives whole; the builder names the argument it
 * refuses, and the caret goes under it; and the C builder refuses a value that is not a literal
 * rather than taking it as a string. */
static void test_typed_values(void) {
    sl_pipeline *p = make(8);
    if (!p) return;
    sl_pipeline_bind bind = {"data_path", fixture("caffe2-fmnist-256")};
    sl_err e;
    CHECK_OK(sl_pipeline_parse(p,
                               "jpegs, labels = fn.readers.caffe2(path=data_path,\n"
                               "                                  name='it\\'s \"r\"')\n"
                               "return labels\n",
                               "q.py", 1, &bind, &e),
             &e);
    CHECK_STR(sl_pipeline_reader_name(p, 0), "it's \"r\"");
    sl_pipeline_free(p);

    p = make(8);
    if (!p) return;
    sl_pipeline_bind big = {"big", "1e400"};
    CHECK_FAILS(sl_pipeline_parse(p, "x = fn.random.uniform(range=[0.0, big])\nreturn x\n", "t.py",
                                  1, &big, &e),
                SL_EINVAL, &e, "t.py:1:23: error: random.uniform: argument range wants float");
    sl_pipeline_free(p);

    p = make(8);
    if (!p) return;
    sl_pipeline_op *op = sl_pipeline_op_begin(p, "reshape");
    CHECK(op != NULL);
    CHECK(sl_pipeline_op_arg(op, "shape", "[1, 2") != SL_OK);
    CHECK(strstr(sl_pipeline_errmsg(p), "reshape: argument shape: ") == sl_pipeline_errmsg(p));
    sl_pipeline_op_end(op, NULL, 0, NULL);
    sl_pipeline_free(p);
}

/* The seed's three pipeline files, unchanged, on the CPU: images (8, 784) f32, labels one-hot
 * (8, 10) f32 for training and (8, 1) int32 for validation. */
static void test_seed_files(void) {
    const char *files[3] = {"seed_training_sharding.py", "seed_training_devices.py",
                            "seed_validation.py"};
    sl_pipeline_bind binds[5] = {{"data_path", fixture("caffe2-fmnist-256")},
                                 {"image_size", "28"},
                                 {"num_classes", "10"},
                                 {"num_shards", "1"},
                                 {"shard_id", "0"}};
    for (int f = 0; f < 3; f++) {
        char *text = check_read_text(tool_pipeline(files[f]));
        CHECK_MSG(text != NULL, "cannot read %s", files[f]);
        sl_pipeline *p = text ? make(8) : NULL;
        if (!p) {
            free(text);
            continue;
        }
        sl_err e;
        sl_status st = sl_pipeline_parse(p, text, files[f], 5, binds, &e);
        CHECK_MSG(st == SL_OK, "%s", e.msg);
        if (st == SL_OK) st = sl_pipeline_build(p);
        CHECK_MSG(st == SL_OK, "%s", sl_pipeline_errmsg(p));
        if (st != SL_OK) {
            sl_pipeline_free(p);
            free(text);
            continue;
        }
        CHECK_STR(sl_pipeline_output_name(p, 0), "images");
        CHECK_STR(sl_pipeline_output_name(p, 1), "labels");
        for (int it = 0; it < 3 && sl_pipeline_status(p) == SL_OK; it++) {
            sl_batch *b = NULL;
            CHECK_OK(sl_pipeline_next(p, &b), NULL);
            if (!b) break;
            check_output(b, 0, SL_DTYPE_F32, 2, 8, 784);
            if (f < 2)
                check_output(b, 1, SL_DTYPE_F32, 2, 8, 10);
            else
                check_output(b, 1, SL_DTYPE_I32, 2, 8, 1);
            sl_tensor t;
            if (sl_batch_tensor(b, 0, &t, NULL) == SL_OK) { /* pixel / 255 lies in [0, 1] */
                const float *x = t.data;
                float lo = 1, hi = 0;
                for (int k = 0; k < 8 * 784; k++)
                    lo = x[k] < lo ? x[k] : lo, hi = x[k] > hi ? x[k] : hi;
                CHECK(lo >= 0.0f && hi <= 1.0f && hi > 0.5f);
            }
            if (f < 2 && sl_batch_tensor(b, 1, &t, NULL) == SL_OK) { /* one-hot rows */
                const float *y = t.data;
                for (int r = 0; r < 8; r++) {
                    float sum = 0;
                    for (int c = 0; c < 10; c++) sum += y[r * 10 + c];
                    CHECK_NEAR(sum, 1.0, 0);
                }
            }
            sl_pipeline_release(p, b);
        }
        sl_pipeline_free(p);
        free(text);
    }
}

/* Per-sample argument inputs (mirror=coin), nested calls and inline .gpu(): builds and runs. */
static void test_per_sample_args(void) {
    sl_pipeline *p = make(8);
    if (!p) return;
    sl_pipeline_bind bind = {"data_path", fixture("caffe2-fmnist-256")};
    sl_err e;
    CHECK_OK(sl_pipeline_parse(
                 p,
                 "@pipeline_def(batch_size=8)\n"
                 "def aug(data_path, size=28):\n"
                 "    jpegs, labels = fn.readers.caffe2(path=data_path, seed=7)\n"
                 "    coin = fn.random.coin_flip(probability=0.5)\n"
                 "    images = fn.crop_mirror_normalize(\n"
                 "        fn.decoders.image(jpegs, device='mixed', output_type=types.GRAY),\n"
                 "        dtype=types.FLOAT, mean=[0.5 * 255], std=[255.0], mirror=coin)\n"
                 "    return fn.reshape(images, shape=[size * size]), "
                 "fn.one_hot(labels.gpu(), num_classes=10)\n",
                 "aug.py", 1, &bind, &e),
             &e);
    CHECK_STR(sl_pipeline_output_name(p, 0), "out0");
    CHECK_STR(sl_pipeline_output_name(p, 1), "out1");
    CHECK_OK(sl_pipeline_build(p), NULL);
    sl_batch *b = NULL;
    CHECK_OK(sl_pipeline_next(p, &b), NULL);
    if (b) {
        check_output(b, 0, SL_DTYPE_F32, 2, 8, 784);
        check_output(b, 1, SL_DTYPE_F32, 2, 8, 10);
        sl_tensor t;
        if (sl_batch_tensor(b, 0, &t, NULL) == SL_OK) { /* (pixel - 127.5) / 255 */
            const float *x = t.data;
            float lo = 1;
            for (int k = 0; k < 8 * 784; k++) lo = x[k] < lo ? x[k] : lo;
            CHECK(lo >= -0.5f && lo < 0.0f);
        }
        sl_pipeline_release(p, b);
    }
    sl_pipeline_free(p);
}

int main(void) {
    test_per_sample_args();
    test_reader_only();
    test_seed_files();
    test_errors();
    test_typed_values();
    return check_done();
}
