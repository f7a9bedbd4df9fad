/* SPDX-License-Identifier: Apache-2.0 */
/* Conditionals on data (DALI's enable_conditionals=True) in the executor and the pipeline text:
 * - if/elif/else on per-sample predicates, nested, names assigned before, in one branch or both,
 *   and/or/not and `x if c else y` on data: each sample's outputs as C computes them from its
 *   inputs, batch after batch, for 1 and 3 threads (the same bytes);
 * - random ops inside a branch draw only for its samples (values in its range; the same for any
 *   thread count);
 * - empty branches (every predicate true, every predicate false);
 * - the builder's calls from C: split and merge made once per node and branch, a branch's data
 *   refused outside it and as an output, else/endif without an if, an open if at build;
 * - errors naming the line: no enable_conditionals, a name one branch leaves unset, different
 *   constants, return inside a branch, a predicate that is not bool. */
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 16 };

static sl_pipeline *pipe_of(const char *text, int threads, sl_err *e) {
    sl_pipeline_config c;
    sl_pipeline_config_init(&c);
    c.batch_size = B;
    c.num_threads = threads;
    c.seed = 7;
    return check_pipeline(&c, text, "cond.py", 0, NULL, e);
}

static const char *const TEXT =
    "@pipeline_def(enable_conditionals=True)\n"
    "def pipe():\n"
    "    x = fn.cast(fn.random.uniform(range=[-10.0, 10.0]), dtype=types.INT32)\n"
    "    y = x * 0\n"
    "    if x > 3:\n"
    "        y = x * 10\n"
    "        r = fn.random.uniform(range=[100.0, 101.0])\n"
    "    elif x == 0:\n"
    "        r = fn.random.uniform(range=[200.0, 201.0])\n"
    "    else:\n"
    "        if x < -5:\n"
    "            y = y - 1\n"
    "        r = fn.random.uniform(range=[300.0, 301.0])\n"
    "    both = (x > 0) and (x % 2 == 0)\n"
    "    either = (x < -8) or (x == 5)\n"
    "    neg = not (x > 0)\n"
    "    z = x * 100 if x >= 7 else x - 1000\n"
    "    return x, y, r, both, either, neg, z\n";

/* the outputs of the first 3 batches: B samples x 7 outputs, as int64 (r as its range's start) */
static void run_text(int threads, int64_t *got) {
    sl_err e;
    sl_pipeline *p = pipe_of(TEXT, threads, &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    for (int batch = 0; p && batch < 3; batch++) {
        sl_batch *b = NULL;
        CHECK_OK(sl_pipeline_next(p, &b), NULL);
        if (!b) break;
        CHECK_EQ_INT(sl_batch_output(b, 3)->dtype, SL_DTYPE_BOOL);
        CHECK_EQ_INT(sl_batch_output(b, 5)->dtype, SL_DTYPE_BOOL);
        for (int i = 0; i < B; i++) {
            int64_t *g = got + ((int64_t)batch * B + i) * 7;
            int32_t x = *(int32_t *)sl_batch_output(b, 0)->data[i];
            int32_t y = *(int32_t *)sl_batch_output(b, 1)->data[i];
            float r = *(float *)sl_batch_output(b, 2)->data[i];
            uint8_t both = *(uint8_t *)sl_batch_output(b, 3)->data[i];
            uint8_t either = *(uint8_t *)sl_batch_output(b, 4)->data[i];
            uint8_t neg = *(uint8_t *)sl_batch_output(b, 5)->data[i];
            int32_t z = *(int32_t *)sl_batch_output(b, 6)->data[i];
            int64_t want_y = x > 3 ? x * 10 : x == 0 ? 0 : x < -5 ? -1 : 0;
            CHECK_MSG(y == want_y, "x %d: y %d, want %lld", x, y, (long long)want_y);
            double lo = x > 3 ? 100 : x == 0 ? 200 : 300;
            CHECK_MSG(r >= lo && r < lo + 1, "x %d: r %g outside [%g, %g)", x, r, lo, lo + 1);
            CHECK_EQ_INT(both, x > 0 && x % 2 == 0);
            CHECK_EQ_INT(either, x < -8 || x == 5);
            CHECK_EQ_INT(neg, !(x > 0));
            CHECK_EQ_INT(z, x >= 7 ? x * 100 : x - 1000);
            int64_t row[7] = {x, y, (int64_t)(r * 1e6), both, either, neg, z};
            memcpy(g, row, sizeof row);
        }
        sl_pipeline_release(p, b);
    }
    sl_pipeline_free(p);
}

static void test_text(void) {
    int64_t *one = calloc(3 * B * 7, sizeof *one), *three = calloc(3 * B * 7, sizeof *three);
    run_text(1, one);
    run_text(3, three);
    CHECK(memcmp(one, three, 3 * B * 7 * sizeof *one) == 0);
    free(one);
    free(three);
}

/* every predicate one way: the other branch runs on no samples */
static void test_empty_branches(void) {
    for (int way = 0; way < 2; way++) {
        char text[512];
        snprintf(text, sizeof text,
                 "@pipeline_def(enable_conditionals=True)\n"
                 "def pipe():\n"
                 "    x = fn.random.uniform(range=[1.0, 2.0])\n"
                 "    if x %s 0.0:\n"
                 "        y = x * 2.0\n"
                 "        n = fn.random.normal()\n"
                 "    else:\n"
                 "        y = x * 3.0\n"
                 "        n = fn.random.uniform(range=[0.0, 0.5])\n"
                 "    return x, y\n",
                 way ? "<" : ">");
        sl_err e;
        sl_pipeline *p = pipe_of(text, 2, &e);
        CHECK_MSG(p != NULL, "%s", e.msg);
        sl_batch *b = NULL;
        if (p && sl_pipeline_next(p, &b) == SL_OK) {
            for (int i = 0; i < B; i++) {
                float x = *(float *)sl_batch_output(b, 0)->data[i];
                float y = *(float *)sl_batch_output(b, 1)->data[i];
                CHECK(y == x * (way ? 3.0f : 2.0f));
            }
            sl_pipeline_release(p, b);
        }
        CHECK_MSG(b != NULL, "%s", p ? sl_pipeline_errmsg(p) : "");
        sl_pipeline_free(p);
    }
}

static void fails(const char *text, const char *needle, bool at_run) {
    sl_err e;
    sl_pipeline *p = pipe_of(text, 1, &e);
    const char *msg = e.msg;
    if (at_run) {
        CHECK_MSG(p != NULL, "%s", e.msg);
        sl_batch *b = NULL;
        CHECK(p && sl_pipeline_next(p, &b) != SL_OK);
        msg = p ? sl_pipeline_errmsg(p) : "";
    } else {
        CHECK(p == NULL);
    }
    CHECK_MSG(!check_needle_missing(msg, needle), "%s\n  lacks: %s", msg, needle);
    sl_pipeline_free(p);
}

static void test_text_errors(void) {
    fails("def pipe():\n"
          "    x = fn.random.uniform()\n"
          "    if x > 0.5:\n"
          "        x = x * 2.0\n"
          "    return x\n",
          "cond.py:3:10: error: 'if' on an op output: a condition on data needs "
          "@pipeline_def(enable_conditionals=True), as in DALI",
          false);
    fails("@pipeline_def(enable_conditionals=True)\n"
          "def pipe():\n"
          "    x = fn.random.uniform()\n"
          "    if x > 0.5:\n"
          "        y = x * 2.0\n"
          "    return y\n",
          "cond.py:6:12: error: 'y' is assigned in only one branch of the `if` on data at line 4",
          false);
    fails("@pipeline_def(enable_conditionals=True)\n"
          "def pipe():\n"
          "    x = fn.random.uniform()\n"
          "    if x > 0.5:\n"
          "        k = 1\n"
          "    else:\n"
          "        k = 2\n"
          "    return x * k\n",
          "cond.py:4:10: error: variable 'k' is an int in the `if` branch and an int in the "
          "`else` branch",
          false);
    fails("@pipeline_def(enable_conditionals=True)\n"
          "def pipe():\n"
          "    x = fn.random.uniform()\n"
          "    if x > 0.5:\n"
          "        return x\n"
          "    return x * 2.0\n",
          "cond.py:4:5: error: `return` inside an `if` on data is not supported", false);
    fails("@pipeline_def(enable_conditionals=True)\n"
          "def pipe():\n"
          "    x = fn.random.uniform()\n"
          "    if x:\n"
          "        x = x * 2.0\n"
          "    return x\n",
          "an `if` condition must be a bool scalar per sample (got float32", true);
    fails("@pipeline_def(enable_conditionals=True)\n"
          "def pipe():\n"
          "    x = fn.random.uniform()\n"
          "    if x > 0.5:\n"
          "        y = x * 2.0\n"
          "    else:\n"
          "        y = fn.cast(x, dtype=types.INT32)\n"
          "    return y\n",
          "_conditional.merge: the branches give different data: float32 with 0 dimensions in "
          "the `if` branch, int32",
          true);
}

/* the builder's calls, from C */
static void test_builder(void) {
    sl_pipeline_config c;
    sl_pipeline_config_init(&c);
    c.batch_size = B;
    c.num_threads = 2;
    sl_err e;
    sl_pipeline *p = NULL;
    CHECK_OK(sl_pipeline_create(&c, &p, &e), &e);
    int x, pred, t, f, out, n;
    sl_pipeline_op *op = sl_pipeline_op_begin(p, "random.uniform");
    sl_pipeline_op_arg(op, "range", "[-1.0, 1.0]");
    CHECK_OK(sl_pipeline_op_end(op, &x, 1, NULL), NULL);
    op = sl_pipeline_op_begin(p, "arithmetic");
    sl_pipeline_op_input(op, x);
    sl_pipeline_op_arg(op, "op", "\"gt\"");
    sl_pipeline_op_arg(op, "constant", "0");
    CHECK_OK(sl_pipeline_op_end(op, &pred, 1, NULL), NULL);
    CHECK(sl_pipeline_else(p) == SL_ESTATE);
    CHECK(sl_pipeline_endif(p) == SL_ESTATE);
    CHECK_OK(sl_pipeline_if(p, pred), NULL);
    for (int k = 0; k < 2; k++) { /* x used twice in the branch: split once */
        op = sl_pipeline_op_begin(p, "arithmetic");
        sl_pipeline_op_input(op, x);
        sl_pipeline_op_arg(op, "op", "\"mul\"");
        sl_pipeline_op_arg(op, "constant", "10.0");
        sl_pipeline_op_arg(op, "constant_type", "\"float32\"");
        CHECK_OK(sl_pipeline_op_end(op, &t, 1, NULL), NULL);
    }
    CHECK_EQ_INT(sl_pipeline_set_outputs(p, 1, &t, NULL), SL_EINVAL);
    CHECK(!check_needle_missing(sl_pipeline_errmsg(p), "output 0 is data of a conditional "
                                                       "branch"));
    CHECK_OK(sl_pipeline_else(p), NULL);
    op = sl_pipeline_op_begin(p, "arithmetic");
    sl_pipeline_op_input(op, t); /* the if branch's data in the else branch */
    sl_pipeline_op_arg(op, "op", "\"minus\"");
    CHECK_EQ_INT(sl_pipeline_op_end(op, &f, 1, NULL), SL_EINVAL);
    CHECK(!check_needle_missing(sl_pipeline_errmsg(p), "arithmetic: input 0: the output of "
                                                       "arithmetic is data of a conditional "
                                                       "branch"));
    op = sl_pipeline_op_begin(p, "arithmetic");
    sl_pipeline_op_input(op, x);
    sl_pipeline_op_arg(op, "op", "\"minus\"");
    CHECK_OK(sl_pipeline_op_end(op, &f, 1, NULL), NULL);
    CHECK_EQ_INT(sl_pipeline_build(p), SL_EINVAL); /* still open */
    CHECK(!check_needle_missing(sl_pipeline_errmsg(p), "a conditional is still open"));
    CHECK_OK(sl_pipeline_endif(p), NULL);
    CHECK_OK(sl_pipeline_merge(p, pred, t, f, &out), NULL);
    int outs[2] = {x, out};
    CHECK_OK(sl_pipeline_set_outputs(p, 2, outs, NULL), NULL);
    CHECK_OK(sl_pipeline_build(p), NULL);
    sl_pipeline_stats stats;
    sl_pipeline_get_stats(p, &stats);
    n = 0;
    for (int k = 0; k < stats.num_ops; k++) n += !strcmp(stats.ops[k].name, "_conditional.split");
    CHECK_EQ_INT(n, 2); /* the predicate's (sizing the branches) and x's, once for both uses */
    for (int batch = 0; batch < 2; batch++) {
        sl_batch *b = NULL;
        CHECK_OK(sl_pipeline_next(p, &b), NULL);
        if (!b) break;
        for (int i = 0; i < B; i++) {
            float xv = *(float *)sl_batch_output(b, 0)->data[i];
            float ov = *(float *)sl_batch_output(b, 1)->data[i];
            CHECK(ov == (xv > 0 ? (float)(xv * 10.0f) : -xv));
        }
        sl_pipeline_release(p, b);
    }
    sl_pipeline_free(p);
}

int main(void) {
    test_text();
    test_empty_branches();
    test_text_errors();
    test_builder();
    return check_done();
}
