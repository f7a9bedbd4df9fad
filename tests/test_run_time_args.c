/* SPDX-License-Identifier: Apache-2.0 */
/* Argument values that DALI checks when its op runs, not when the pipeline is built: those of
 * arguments it takes per sample, given as literals (pad's align, axes and shape, the random ops'
 * range, stddev, probability, alpha and beta, jpeg_compression_distortion's quality). Such a
 * pipeline builds, and its first batch fails with the op's message (each later call too); an
 * error DALI gives at build (pad given both axes and axis_names) still fails the build, and so
 * does one of another op of the same pipeline. The same values given per sample (an op output)
 * fail the batch too, naming the record. */
#include "check.h"

#include "sluice/pipeline.h"

#include <stdio.h>
#include <string.h>

/* a pipeline of text over 2 constant samples (batch 2); NULL when its build fails (e: why) */
static sl_pipeline *make(const char *body, sl_err *e) {
    sl_pipeline_config c;
    sl_pipeline_config_init(&c);
    c.batch_size = 2;
    c.num_threads = 1;
    sl_pipeline *p = NULL;
    if (sl_pipeline_create(&c, &p, e)) return NULL;
    char text[1024];
    snprintf(text, sizeof text,
             "def pipe():\n"
             "    x = fn.constant(fdata=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[2, 3],\n"
             "                    layout='HW')\n"
             "    return %s\n",
             body);
    sl_status st = sl_pipeline_parse(p, text, "args.py", 0, NULL, e);
    if (st == SL_OK) st = sl_pipeline_build(p);
    if (st != SL_OK) {
        e->status = st;
        snprintf(e->msg, sizeof e->msg, "%s", sl_pipeline_errmsg(p));
        sl_pipeline_free(p);
        return NULL;
    }
    return p;
}

/* body builds; its first batch (and the next call) fails with SL_EINVAL and a message with want */
static void fails_at_run(const char *body, const char *want) {
    sl_err e;
    sl_pipeline *p = make(body, &e);
    CHECK_MSG(p != NULL, "%s: the build failed: %s", body, e.msg);
    if (!p) return;
    for (int k = 0; k < 2; k++) {
        sl_batch *b = NULL;
        sl_status st = sl_pipeline_next(p, &b);
        CHECK_MSG(st == SL_EINVAL, "%s: batch %d: status %d (%s)", body, k, st,
                  sl_pipeline_errmsg(p));
        CHECK_MSG(b == NULL, "%s: a failed batch was handed out", body);
        CHECK_MSG(strstr(sl_pipeline_errmsg(p), want) != NULL, "%s: message \"%s\" lacks \"%s\"",
                  body, sl_pipeline_errmsg(p), want);
        if (b) sl_pipeline_release(p, b);
    }
    sl_pipeline_free(p);
}

static void fails_at_build(const char *body, const char *want) {
    sl_err e;
    sl_pipeline *p = make(body, &e);
    CHECK_MSG(p == NULL, "%s: built", body);
    sl_pipeline_free(p);
    CHECK_MSG(strstr(e.msg, want) != NULL, "%s: message \"%s\" lacks \"%s\"", body, e.msg, want);
}

int main(void) {
    fails_at_run("fn.pad(x, align=0)",
                 "pad: align 0 (Values of `align` argument must be positive.)");
    fails_at_run("fn.pad(x, axes=[0], shape=[-3])", "pad: shape value -3");
    fails_at_run("fn.random.uniform(range=[1.0, 0.0])",
                 "random.uniform: range must be [lo, hi] with lo < hi");
    fails_at_run("fn.random.normal(stddev=-2.0)", "random.normal: stddev -2 is negative");
    fails_at_run("fn.random.coin_flip(probability=1.5)",
                 "random.coin_flip: probability 1.5 outside [0, 1]");
    fails_at_run("fn.random.beta(alpha=0.0)", "random.beta: alpha 0 and beta 1 must be > 0");
    fails_at_run("fn.jpeg_compression_distortion(fn.cast(fn.reshape(x, shape=[1, 2, 3], "
                 "layout='HWC'), dtype=types.UINT8), quality=0)",
                 "jpeg_compression_distortion: quality 0 (1 to 100)");
    /* the same values per sample: the batch fails, naming the sample */
    fails_at_run("fn.pad(x, align=fn.constant(idata=[0], shape=[1]))", "align 0");
    /* what DALI checks at build still fails the build */
    fails_at_build("fn.pad(x, axes=[0], axis_names='H')", "pad: give axes or axis_names, not both");
    fails_at_build("(fn.pad(x, align=0), fn.get_property(x, key='size'))",
                   "get_property: Unsupported property key: size");
    /* a good pipeline beside: the values in range run */
    sl_err e;
    sl_pipeline *p = make("fn.pad(x, align=4)", &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    if (p) {
        sl_batch *b = NULL;
        CHECK_MSG(sl_pipeline_next(p, &b) == SL_OK, "%s", sl_pipeline_errmsg(p));
        if (b) {
            const sl_tlist *l = sl_batch_output(b, 0);
            CHECK_EQ_INT((int)l->shapes[0], 4);
            CHECK_EQ_INT((int)l->shapes[1], 4);
            sl_pipeline_release(p, b);
        }
        sl_pipeline_free(p);
    }
    return check_done();
}
