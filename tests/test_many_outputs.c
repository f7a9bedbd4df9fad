/* SPDX-License-Identifier: Apache-2.0 */
/* Ops and pipelines of many outputs and inputs, sized when the pipeline is built (DALI's
 * test_join forms): an external_source of 100 outputs, cat and stack of its 100 outputs, and a
 * pipeline returning 102 outputs, from pipeline text and built op by op; every sample compared
 * with what the source made. element_extract of 12 indices (12 outputs); python_function's and
 * external_source's num_outputs past the old limits; empty constants ((3, 0) and (0)) and cat of
 * them with others, on 1 and 3 threads. */
#include "check.h"

#include "sluice/pipeline.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 3, N = 100, BATCHES = 2 };

/* The call on pipeline p must return SL_OK; else the pipeline's message is printed. */
#define PCHECK(p, expr) CHECK_MSG((expr) == SL_OK, "%s: %s", #expr, sl_pipeline_errmsg(p))

/* Output o of sample s: int32 (2, len(s)), element (r, k) = s * 100000 + o * 100 + r * 10 + k. */
static int64_t len_of(int64_t s) {
    return 1 + s % 3;
}
static int32_t val(int64_t s, int o, int r, int64_t k) {
    return (int32_t)(s * 100000 + o * 100 + r * 10 + k);
}

static sl_status grid_shape(void *user, const sl_source_info *f, sl_dtype *dt, int *nd, int64_t *sh,
                            sl_err *err) {
    (void)user, (void)err;
    *dt = SL_DTYPE_I32;
    *nd = 2;
    sh[0] = 2;
    sh[1] = len_of(f->sample);
    return SL_OK;
}

static sl_status grid_fill(void *user, const sl_source_info *f, void *dst, size_t nbytes,
                           sl_err *err) {
    (void)user;
    int64_t len = len_of(f->sample);
    if (nbytes != (size_t)(2 * len) * sizeof(int32_t))
        return sl_err_set(err, SL_EINVAL, "asked for %zu bytes", nbytes);
    int32_t *d = dst;
    for (int r = 0; r < 2; r++)
        for (int64_t k = 0; k < len; k++) d[r * len + k] = val(f->sample, f->output, r, k);
    return SL_OK;
}

static sl_pipeline *new_pipeline(int threads) {
    sl_pipeline_config c;
    sl_pipeline_config_init(&c);
    c.batch_size = B;
    c.num_threads = threads;
    sl_pipeline *p = NULL;
    sl_err e;
    CHECK_OK(sl_pipeline_create(&c, &p, &e), &e);
    sl_source src = {grid_shape, grid_fill, NULL, NULL, NULL, NULL, NULL, false};
    PCHECK(p, sl_pipeline_add_source(p, "grid", &src));
    return p;
}

/* The text: o0, ..., o99 = fn.external_source(...); joined = fn.cat(o0, ..., axis=1); stacked =
 * fn.stack(o0, ...); return joined, stacked, o0, ..., o99. */
static char *make_text(void) {
    size_t cap = 16384, n = 0;
    char *t = malloc(cap);
    CHECK(t != NULL);
    n += (size_t)snprintf(t + n, cap - n, "def pipe():\n    ");
    for (int o = 0; o < N; o++) n += (size_t)snprintf(t + n, cap - n, "%so%d", o ? ", " : "", o);
    n +=
        (size_t)snprintf(t + n, cap - n, " = fn.external_source(source=grid, num_outputs=%d)\n", N);
    const char *ops[2][2] = {{"joined", "cat"}, {"stacked", "stack"}};
    for (int j = 0; j < 2; j++) {
        n += (size_t)snprintf(t + n, cap - n, "    %s = fn.%s(", ops[j][0], ops[j][1]);
        for (int o = 0; o < N; o++) n += (size_t)snprintf(t + n, cap - n, "o%d, ", o);
        n += (size_t)snprintf(t + n, cap - n, "axis=%d)\n", j == 0 ? 1 : 0);
    }
    n += (size_t)snprintf(t + n, cap - n, "    return joined, stacked");
    for (int o = 0; o < N; o++) n += (size_t)snprintf(t + n, cap - n, ", o%d", o);
    n += (size_t)snprintf(t + n, cap - n, "\n");
    CHECK(n < cap);
    return t;
}

/* The same graph through the C API: the outputs past a small buffer through
 * sl_pipeline_last_op_output. */
static void build_by_hand(sl_pipeline *p) {
    sl_pipeline_op *op = sl_pipeline_op_begin(p, "external_source");
    CHECK(op != NULL);
    sl_pipeline_op_arg(op, "source", "\"grid\"");
    sl_pipeline_op_arg(op, "num_outputs", "100");
    int few[4], count = 0;
    PCHECK(p, sl_pipeline_op_end(op, few, 4, &count));
    CHECK_EQ_INT(count, N);
    int src[N];
    for (int o = 0; o < N; o++) {
        src[o] = sl_pipeline_last_op_output(p, o);
        CHECK(src[o] >= 0);
        if (o < 4) CHECK_EQ_INT(src[o], few[o]);
    }
    CHECK_EQ_INT(sl_pipeline_last_op_output(p, N), -1);
    int outs[N + 2];
    const char *names[N + 2];
    char buf[N][8];
    const char *kinds[2] = {"cat", "stack"};
    for (int j = 0; j < 2; j++) {
        op = sl_pipeline_op_begin(p, kinds[j]);
        for (int o = 0; o < N; o++) PCHECK(p, sl_pipeline_op_input(op, src[o]));
        sl_pipeline_op_arg(op, "axis", j == 0 ? "1" : "0");
        PCHECK(p, sl_pipeline_op_end(op, &outs[j], 1, NULL));
        names[j] = j == 0 ? "joined" : "stacked";
    }
    for (int o = 0; o < N; o++) {
        outs[2 + o] = src[o];
        snprintf(buf[o], sizeof buf[o], "o%d", o);
        names[2 + o] = buf[o];
    }
    PCHECK(p, sl_pipeline_set_outputs(p, N + 2, outs, names));
}

static void check_batch(sl_pipeline *p, sl_batch *b, int64_t iteration) {
    CHECK_EQ_INT(sl_pipeline_num_outputs(p), N + 2);
    CHECK_STR(sl_pipeline_output_name(p, 0), "joined");
    CHECK_STR(sl_pipeline_output_name(p, 1), "stacked");
    CHECK_STR(sl_pipeline_output_name(p, N + 1), "o99");
    const sl_tlist *joined = sl_batch_output(b, 0), *stacked = sl_batch_output(b, 1);
    CHECK(sl_batch_output(b, N + 2) == NULL);
    int bad = 0;
    for (int i = 0; i < B; i++) {
        int64_t s = iteration * B + i, len = len_of(s);
        const int64_t *js = sl_tlist_shape(joined, i), *ss = sl_tlist_shape(stacked, i);
        CHECK_EQ_INT(joined->ndim, 2);
        CHECK_EQ_INT(js[0], 2);
        CHECK_EQ_INT(js[1], N * len);
        CHECK_EQ_INT(stacked->ndim, 3);
        CHECK(ss[0] == N && ss[1] == 2 && ss[2] == len);
        const int32_t *jd = joined->data[i], *sd = stacked->data[i];
        for (int o = 0; o < N; o++) {
            const sl_tlist *single = sl_batch_output(b, 2 + o);
            const int32_t *od = single->data[i];
            CHECK_EQ_INT(sl_tlist_shape(single, i)[1], len);
            for (int r = 0; r < 2; r++)
                for (int64_t k = 0; k < len; k++) {
                    int32_t want = val(s, o, r, k);
                    bad += od[r * len + k] != want;
                    bad += jd[r * N * len + o * len + k] != want; /* cat along axis 1 */
                    bad += sd[(o * 2 + r) * len + k] != want;     /* stack along a new axis 0 */
                }
        }
    }
    CHECK_EQ_INT(bad, 0);
}

static void run_and_check(sl_pipeline *p) {
    for (int64_t it = 0; it < BATCHES; it++) {
        sl_batch *b = NULL;
        PCHECK(p, sl_pipeline_next(p, &b));
        check_batch(p, b, it);
        sl_pipeline_release(p, b);
    }
}

/* 12 indices into the outer dim of (2, len): 12 outputs, each a row. */
static void element_extract_many(void) {
    sl_pipeline *p = new_pipeline(2);
    sl_pipeline_op *op = sl_pipeline_op_begin(p, "external_source");
    sl_pipeline_op_arg(op, "source", "\"grid\"");
    int seq;
    PCHECK(p, sl_pipeline_op_end(op, &seq, 1, NULL));
    op = sl_pipeline_op_begin(p, "element_extract");
    sl_pipeline_op_input(op, seq);
    sl_pipeline_op_arg(op, "element_map", "[1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 1]");
    int count = 0;
    PCHECK(p, sl_pipeline_op_end(op, NULL, 0, &count));
    CHECK_EQ_INT(count, 12);
    int outs[12];
    for (int k = 0; k < 12; k++) outs[k] = sl_pipeline_last_op_output(p, k);
    PCHECK(p, sl_pipeline_set_outputs(p, 12, outs, NULL));
    PCHECK(p, sl_pipeline_build(p));
    sl_batch *b = NULL;
    PCHECK(p, sl_pipeline_next(p, &b));
    static const int map[12] = {1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 1};
    for (int k = 0; k < 12; k++) {
        const sl_tlist *l = sl_batch_output(b, k);
        for (int i = 0; i < B; i++) {
            CHECK_EQ_INT(l->ndim, 1);
            CHECK_EQ_INT(sl_tlist_shape(l, i)[0], len_of(i));
            for (int64_t x = 0; x < len_of(i); x++)
                CHECK_EQ_INT(((const int32_t *)l->data[i])[x], val(i, 0, map[k], x));
        }
    }
    CHECK_STR(sl_pipeline_output_name(p, 11), "out11");
    sl_pipeline_release(p, b);
    CHECK_EQ_INT(sl_pipeline_set_outputs(p, 1, outs, NULL), SL_ESTATE); /* the batches are sized */
    CHECK_EQ_INT(sl_pipeline_num_outputs(p), 12);
    sl_pipeline_free(p);
}

/* DALI's test_cat_empty_input and test_cat_all_empty: a (3, 0) constant joined with others. */
static void empty_constants(int threads) {
    sl_pipeline *p = new_pipeline(threads);
    const char *text = "def pipe():\n"
                       "    a = fn.constant(idata=[1, 2, 3, 4, 5, 6], shape=[3, 2])\n"
                       "    e = fn.constant(idata=[], shape=[3, 0])\n"
                       "    c = fn.constant(idata=[7, 8, 9], shape=[3, 1])\n"
                       "    flat = fn.constant(fdata=[])\n"
                       "    return fn.cat(a, e, c, axis=1), fn.cat(e, e, e, axis=1), e, flat, "
                       "fn.stack(e, e), fn.cat(e, e, axis=0)\n";
    sl_err e;
    CHECK_OK(sl_pipeline_parse(p, text, "empty.py", 0, NULL, &e), &e);
    PCHECK(p, sl_pipeline_build(p));
    for (int it = 0; it < 2; it++) {
        sl_batch *b = NULL;
        PCHECK(p, sl_pipeline_next(p, &b));
        static const int32_t want[3][3] = {{1, 2, 7}, {3, 4, 8}, {5, 6, 9}};
        static const int64_t shapes[6][3] = {{3, 3}, {3, 0}, {3, 0}, {0}, {2, 3, 0}, {6, 0}};
        static const int ndims[6] = {2, 2, 2, 1, 3, 2};
        for (int o = 0; o < 6; o++) {
            const sl_tlist *l = sl_batch_output(b, o);
            CHECK_EQ_INT(l->count, B);
            CHECK_EQ_INT(l->ndim, ndims[o]);
            CHECK_EQ_INT(l->dtype, o == 3 ? SL_DTYPE_F32 : SL_DTYPE_I32);
            for (int i = 0; i < B; i++) {
                for (int d = 0; d < ndims[o]; d++)
                    CHECK_EQ_INT(sl_tlist_shape(l, i)[d], shapes[o][d]);
                if (o == 0) CHECK(memcmp(l->data[i], want, sizeof want) == 0);
            }
        }
        sl_pipeline_release(p, b);
    }
    sl_pipeline_free(p);
    /* values that do not fill the shape are still refused, naming the argument */
    p = new_pipeline(1);
    CHECK_OK(sl_pipeline_parse(p, "def f():\n    return fn.constant(idata=[], shape=[3, 2])\n",
                               "bad.py", 0, NULL, &e),
             &e);
    CHECK_EQ_INT(sl_pipeline_build(p), SL_EINVAL);
    CHECK_MSG(strstr(sl_pipeline_errmsg(p), "idata has 0 values, the shape 6") != NULL, "%s",
              sl_pipeline_errmsg(p));
    sl_pipeline_free(p);
}

/* num_outputs past the old limits of external_source (16) and python_function (16); refusals. */
static void limits(void) {
    sl_pipeline *p = new_pipeline(1);
    sl_pipeline_op *op = sl_pipeline_op_begin(p, "external_source");
    sl_pipeline_op_arg(op, "source", "\"grid\"");
    sl_pipeline_op_arg(op, "num_outputs", "0");
    CHECK_EQ_INT(sl_pipeline_op_end(op, NULL, 0, NULL), SL_EINVAL);
    CHECK(strstr(sl_pipeline_errmsg(p), "num_outputs") != NULL);
    op = sl_pipeline_op_begin(p, "external_source");
    sl_pipeline_op_arg(op, "source", "\"grid\"");
    sl_pipeline_op_arg(op, "num_outputs", "100000000");
    CHECK_EQ_INT(sl_pipeline_op_end(op, NULL, 0, NULL), SL_EINVAL);
    CHECK_MSG(strstr(sl_pipeline_errmsg(p), "100000000 outputs") != NULL, "%s",
              sl_pipeline_errmsg(p));
    CHECK_EQ_INT(sl_pipeline_set_outputs(p, 0, NULL, NULL), SL_EINVAL);
    op = sl_pipeline_op_begin(p, "cat");
    CHECK_EQ_INT(sl_pipeline_op_end(op, NULL, 0, NULL), SL_EINVAL);
    CHECK_MSG(strstr(sl_pipeline_errmsg(p), "cat takes at least 1 inputs, got 0") != NULL, "%s",
              sl_pipeline_errmsg(p));
    sl_pipeline_free(p);
}

int main(void) {
    for (int threads = 1; threads <= 3; threads += 2) {
        char *text = make_text();
        sl_pipeline *p = new_pipeline(threads);
        sl_err e;
        CHECK_OK(sl_pipeline_parse(p, text, "join.py", 0, NULL, &e), &e);
        PCHECK(p, sl_pipeline_build(p));
        run_and_check(p);
        sl_pipeline_free(p);
        free(text);

        p = new_pipeline(threads);
        build_by_hand(p);
        PCHECK(p, sl_pipeline_build(p));
        run_and_check(p);
        sl_pipeline_free(p);
        empty_constants(threads);
    }
    element_extract_many();
    limits();
    return check_done();
}
