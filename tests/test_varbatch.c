/* SPDX-License-Identifier: Apache-2.0 */
/* Variable batch size (DALI's): a source with a `count` makes each batch as long as it says, up
 * to the pipeline's batch_size, and every op of the pipeline works on that many samples.
 * - Batches of 0 .. B samples (B included), from pipeline text: the source's samples through a
 *   cast and arithmetic, a random.uniform with no input and a random.coin_flip, and the same
 *   through two sources of one count; every output has the batch's count, sl_batch_size says it,
 *   the values are the source's, and each random value is the one a pipeline of full batches
 *   draws for that (batch, sample): a sample's random stream does not depend on its batch's size.
 *   1 and 3 threads give the same batches.
 * - Errors: a count over batch_size, a failing count (its message kept), two sources whose counts
 *   differ, a short batch beside a reader.
 * - The iterator passes short batches on without a size (the shard is as long as the batch), and
 *   refuses them, naming the sizes, with an explicit size. */
#include "check.h"

#include "sluice/iterator.h"
#include "sluice/pipeline.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { B = 8, BATCHES = 12 };

/* batch k's size: 0 .. B, B included */
static int size_of(int64_t k) {
    static const int sizes[] = {3, 1, 8, 0, 5, 7, 2, 8, 4, 6, 1, 8};
    return sizes[k % (int64_t)(sizeof sizes / sizeof sizes[0])];
}

typedef struct src {
    bool full;     /* every batch full (NULL count) */
    int over;      /* batch whose count is B + 1 (-1: none) */
    int fail;      /* batch whose count fails (-1: none) */
    int offset;    /* added to every count after batch 0 (the disagreeing source) */
    int32_t scale; /* value of sample i of batch k: scale * (k * 100 + i) */
} src;

static sl_status src_count(void *user, int64_t it, int max, int *n, sl_err *err) {
    const src *s = user;
    if (max != B) return sl_err_set(err, SL_EINVAL, "max %d", max);
    if (it == s->fail)
        return sl_err_set(err, SL_EIO, "the socket closed at batch %lld", (long long)it);
    *n = it == s->over ? B + 1 : size_of(it) + (it > 0 ? s->offset : 0);
    return SL_OK;
}

static sl_status src_shape(void *user, const sl_source_info *f, sl_dtype *dt, int *nd, int64_t *sh,
                           sl_err *err) {
    (void)user;
    if (f->idx_in_batch < 0 || f->idx_in_batch >= B ||
        f->sample != f->iteration * B + f->idx_in_batch)
        return sl_err_set(err, SL_EINVAL, "bad info");
    *dt = SL_DTYPE_I32;
    *nd = 1;
    sh[0] = 1 + f->idx_in_batch % 3;
    return SL_OK;
}

static sl_status src_fill(void *user, const sl_source_info *f, void *dst, size_t nbytes,
                          sl_err *err) {
    const src *s = user;
    (void)err;
    int32_t *d = dst;
    for (size_t k = 0; k < nbytes / 4; k++)
        d[k] = s->scale * (int32_t)(f->iteration * 100 + f->idx_in_batch);
    return SL_OK;
}

static const char *TEXT = "def pipe():\n"
                          "    x = fn.external_source(source=a, dtype=types.INT32, ndim=1)\n"
                          "    y = fn.external_source(source=b)\n"
                          "    f = fn.cast(x, dtype=types.FLOAT) * 2.0 + y\n"
                          "    u = fn.random.uniform(range=[0.0, 1.0], seed=5)\n"
                          "    c = fn.random.coin_flip(probability=0.5, seed=6)\n"
                          "    return x, f, u, c\n";

/* A built pipeline from text with sources a and b; NULL with e set on failure. */
static sl_pipeline *make(const char *text, int threads, src *a, src *b, sl_err *e) {
    sl_pipeline_config c;
    sl_pipeline_config_init(&c);
    c.batch_size = B;
    c.num_threads = threads;
    c.seed = 11;
    sl_pipeline *p = NULL;
    if (sl_pipeline_create(&c, &p, e)) return NULL;
    sl_source sa = {src_shape, src_fill, a, a->full ? NULL : src_count, NULL, NULL, NULL, false};
    sl_source sb = {src_shape, src_fill, b, b->full ? NULL : src_count, NULL, NULL, NULL, false};
    sl_status st = sl_pipeline_add_source(p, "a", &sa);
    if (st == SL_OK) st = sl_pipeline_add_source(p, "b", &sb);
    if (st == SL_OK) st = sl_pipeline_parse(p, text, "varbatch.py", 0, NULL, e);
    if (st == SL_OK) st = sl_pipeline_build(p);
    if (st != SL_OK) {
        e->status = st;
        snprintf(e->msg, sizeof e->msg, "%s", sl_pipeline_errmsg(p));
        sl_pipeline_free(p);
        return NULL;
    }
    return p;
}

/* The full pipeline's random outputs, per (batch, sample): uniform and coin flip. */
static float ref_u[BATCHES][B];
static uint8_t ref_c[BATCHES][B];

static void reference(void) {
    src a = {true, -1, -1, 0, 1}, b = {true, -1, -1, 0, 1};
    sl_err e;
    sl_pipeline *p = make(TEXT, 2, &a, &b, &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    if (!p) return;
    for (int k = 0; k < BATCHES; k++) {
        sl_batch *bt = NULL;
        sl_status st = sl_pipeline_next(p, &bt);
        CHECK_MSG(st == SL_OK, "%s", sl_pipeline_errmsg(p));
        if (st) break;
        CHECK_EQ_INT(sl_batch_size(bt), B);
        const sl_tlist *u = sl_batch_output(bt, 2), *c = sl_batch_output(bt, 3);
        CHECK_EQ_INT(u->dtype, SL_DTYPE_F32);
        for (int i = 0; i < B; i++) {
            ref_u[k][i] = *(const float *)u->data[i];
            ref_c[k][i] = *(const uint8_t *)c->data[i];
        }
        sl_pipeline_release(p, bt);
    }
    sl_pipeline_free(p);
}

static void test_sizes(int threads, uint64_t *sum) {
    src a = {false, -1, -1, 0, 1}, b = {false, -1, -1, 0, 3};
    sl_err e;
    sl_pipeline *p = make(TEXT, threads, &a, &b, &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    if (!p) return;
    int coins = 0, drawn = 0;
    for (int k = 0; k < BATCHES; k++) {
        sl_batch *bt = NULL;
        sl_status st = sl_pipeline_next(p, &bt);
        CHECK_MSG(st == SL_OK, "batch %d: %s", k, sl_pipeline_errmsg(p));
        if (st) break;
        int n = size_of(k);
        CHECK_EQ_INT(sl_batch_size(bt), n);
        CHECK_EQ_INT(sl_batch_index(bt), k);
        const sl_tlist *x = sl_batch_output(bt, 0), *f = sl_batch_output(bt, 1),
                       *u = sl_batch_output(bt, 2), *c = sl_batch_output(bt, 3);
        CHECK_EQ_INT(x->count, n);
        CHECK_EQ_INT(f->count, n);
        CHECK_EQ_INT(u->count, n);
        CHECK_EQ_INT(c->count, n);
        CHECK_EQ_INT(x->dtype, SL_DTYPE_I32);
        CHECK_EQ_INT(f->dtype, SL_DTYPE_F32);
        for (int i = 0; i < n; i++) {
            int32_t v = (int32_t)(k * 100 + i);
            CHECK_EQ_INT(x->shapes[i * x->ndim], 1 + i % 3);
            const int32_t *xs = x->data[i];
            const float *fs = f->data[i];
            for (int j = 0; j < 1 + i % 3; j++) {
                CHECK_EQ_INT(xs[j], v);
                CHECK_MSG(fs[j] == (float)v * 2.0f + (float)(3 * v), "batch %d sample %d: %g", k, i,
                          (double)fs[j]);
            }
            float uv = *(const float *)u->data[i];
            uint8_t cv = *(const uint8_t *)c->data[i];
            CHECK_MSG(uv == ref_u[k][i], "batch %d sample %d: uniform %g, full batch %g", k, i,
                      (double)uv, (double)ref_u[k][i]);
            CHECK_EQ_INT(cv, ref_c[k][i]);
            coins += cv;
            drawn++;
            uint32_t bits;
            memcpy(&bits, &uv, 4);
            *sum = *sum * 31 + bits + (uint64_t)xs[0];
        }
        sl_pipeline_release(p, bt);
    }
    CHECK(coins > 0 && coins < drawn); /* the coin flips are not all the same */
    sl_pipeline_free(p);
}

/* The first error of a pipeline with sources a and b: status, and the message in msg. */
static sl_status first_error(const char *text, src *a, src *b, char *msg, size_t size) {
    sl_err e;
    sl_pipeline *p = make(text, 2, a, b, &e);
    if (!p) {
        snprintf(msg, size, "%s", e.msg);
        return e.status;
    }
    sl_status st = SL_OK;
    for (int k = 0; k < BATCHES && st == SL_OK; k++) {
        sl_batch *bt = NULL;
        st = sl_pipeline_next(p, &bt);
        if (bt) sl_pipeline_release(p, bt);
    }
    snprintf(msg, size, "%s", st == SL_OK ? "" : sl_pipeline_errmsg(p));
    sl_pipeline_free(p);
    return st;
}

#define CHECK_ERR(st, want, msg, needle)                                                           \
    do {                                                                                           \
        CHECK_EQ_INT(st, want);                                                                    \
        CHECK_MSG(!check_needle_missing(msg, needle), "message \"%s\" lacks \"%s\"", msg, needle); \
    } while (0)

static void test_errors(void) {
    char msg[SL_ERRMSG_MAX];
    src over = {false, 2, -1, 0, 1}, ok = {false, -1, -1, 0, 1};
    sl_status st = first_error(TEXT, &over, &ok, msg, sizeof msg);
    CHECK_ERR(st, SL_EINVAL, msg,
              "source 'a': batch 2 has 9 samples, but the batch size is at most 8");
    src fails = {false, -1, 1, 0, 1};
    st = first_error(TEXT, &ok, &fails, msg, sizeof msg);
    CHECK_ERR(st, SL_EIO, msg, "source 'b': batch 1: the socket closed at batch 1");
    src more = {false, -1, -1, 1, 1};
    st = first_error(TEXT, &ok, &more, msg, sizeof msg);
    CHECK_ERR(st, SL_EINVAL, msg,
              "batch 1: external_source (source 'a') gives 1 samples but "
              "external_source (source 'b') gives 2: the external sources of "
              "one batch must give as many");
    /* a source without count gives full batches, which a short one then contradicts */
    src full = {true, -1, -1, 0, 1};
    st = first_error(TEXT, &ok, &full, msg, sizeof msg);
    CHECK_ERR(st, SL_EINVAL, msg,
              "batch 0: external_source (source 'a') gives 3 samples but "
              "external_source (source 'b') gives 8");
    char text[512];
    snprintf(text, sizeof text,
             "def pipe():\n"
             "    x = fn.external_source(source=a)\n"
             "    jpegs, labels = fn.readers.caffe2(path=\"%s\")\n"
             "    return x, labels\n",
             fixture("caffe2-fmnist-256"));
    st = first_error(text, &ok, &ok, msg, sizeof msg);
    CHECK_ERR(st, SL_EINVAL, msg,
              "batch 0: external_source (source 'a') gives 3 samples, but the reader "
              "readers.caffe2 gives "
              "full batches of 8");
}

static sl_status prepare(sl_pipeline *p, int shard_id, int num_shards, void *user, sl_err *err) {
    (void)shard_id, (void)num_shards, (void)err;
    sl_source s = {src_shape, src_fill, user, src_count, NULL, NULL, NULL, false};
    sl_status st = sl_pipeline_add_source(p, "a", &s);
    return st ? st : sl_pipeline_add_source(p, "b", &s);
}

static void test_iterator(void) {
    src a = {false, -1, -1, 0, 1};
    sl_iter_config c;
    sl_iter_config_init(&c);
    sl_err e;
    c.text = TEXT;
    c.filename = "varbatch.py";
    c.prepare = prepare;
    c.build_user = &a;
    c.batch_size = B;
    CHECK_OK(sl_iter_parse_devices("cpu:1", &c, &e), &e);
    sl_iter *it = NULL;
    sl_status st = sl_iter_create(&c, &it, &e);
    CHECK_MSG(st == SL_OK, "%s", e.msg);
    if (st != SL_OK) return;
    for (int k = 0; k < 5; k++) {
        const sl_iter_batch *b;
        st = sl_iter_next(it, &b);
        CHECK_MSG(st == SL_OK, "step %d: %s", k, sl_iter_errmsg(it));
        if (st) break;
        const sl_tlist *x = sl_iter_shard_list(b, 0, 0);
        CHECK_EQ_INT(x->count, size_of(k));
        CHECK_EQ_INT(sl_iter_batch_valid(b, 0), size_of(k));
        sl_tensor u;
        if (size_of(k) > 0) { /* (an empty list is no tensor) */
            CHECK_OK(sl_iter_shard(b, 2, 0, &u, &e), &e);
            CHECK_EQ_INT(u.shape[0], size_of(k));
        }
    }
    sl_iter_free(it);
    c.size = 40;
    it = NULL;
    st = sl_iter_create(&c, &it, &e);
    if (st == SL_OK) {
        const sl_iter_batch *b;
        st = sl_iter_next(it, &b);
        snprintf(e.msg, sizeof e.msg, "%s", sl_iter_errmsg(it));
    }
    CHECK_ERR(st, SL_EINVAL, e.msg,
              "device 0: a batch of 3 samples, but batch_size is 8: variable batch size is not "
              "supported by the iterator with an explicit size");
    sl_iter_free(it);
}

int main(void) {
    reference();
    uint64_t sums[2] = {0, 0};
    test_sizes(1, &sums[0]);
    test_sizes(3, &sums[1]);
    CHECK(sums[0] != 0 && sums[0] == sums[1]);
    test_errors();
    test_iterator();
    return check_done();
}
