/* SPDX-License-Identifier: Apache-2.0 */
/* Sizes that arguments ask for, against the memory a pipeline may take: an op output of more
 * host bytes than a batch is allowed (max_batch_bytes, SLUICE_MAX_BATCH_BYTES) fails its batch
 * with SL_ENOMEM naming the op and the bytes asked, before anything is allocated; a batch_size
 * whose bookkeeping alone passes the limit is refused at build; and arguments whose extents
 * multiply past 2^63, or are negative (reshape's shape, random's shape, crop, resize's size),
 * are refused at build with the op and the argument named. Each would otherwise allocate tens of
 * gigabytes, overflow a signed product, or be accepted silently. */
#include "check.h"

#include "sluice/pipeline.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sl_pipeline *pipe_of(const char *body, int batch, size_t limit, sl_err *e) {
    sl_pipeline_config c;
    sl_pipeline_config_init(&c);
    c.batch_size = batch;
    c.num_threads = 1;
    c.prefetch_cpu = 1;
    c.max_batch_bytes = limit;
    char text[4096];
    snprintf(text, sizeof text, "def pipe():\n%s", body);
    return check_pipeline(&c, text, "limits.py", 0, NULL, e);
}

/* Builds and runs one batch; the status of the first failure, its message in msg. */
static sl_status run_one(const char *body, int batch, size_t limit, char *msg, size_t cap) {
    sl_err e;
    memset(&e, 0, sizeof e);
    sl_pipeline *p = pipe_of(body, batch, limit, &e);
    if (!p) {
        snprintf(msg, cap, "%s", e.msg);
        return e.status ? e.status : SL_EINVAL;
    }
    sl_batch *b = NULL;
    sl_status st = sl_pipeline_next(p, &b);
    if (st == SL_OK) sl_pipeline_release(p, b);
    snprintf(msg, cap, "%s", st == SL_OK ? "" : sl_pipeline_errmsg(p));
    sl_pipeline_free(p);
    return st;
}

static void fails_with(const char *body, int batch, size_t limit, sl_status want,
                       const char *needle1, const char *needle2) {
    char msg[1024];
    sl_status st = run_one(body, batch, limit, msg, sizeof msg);
    CHECK_MSG(st == want, "status %d (want %d) for\n%s: %s", st, want, body, msg);
    CHECK_MSG(strstr(msg, needle1) != NULL, "message \"%s\" lacks \"%s\"", msg, needle1);
    CHECK_MSG(!needle2 || strstr(msg, needle2) != NULL, "message \"%s\" lacks \"%s\"", msg,
              needle2);
    printf("  %s\n", msg);
}

static void passes(const char *body, int batch, size_t limit) {
    char msg[1024];
    sl_status st = run_one(body, batch, limit, msg, sizeof msg);
    CHECK_MSG(st == SL_OK, "status %d for\n%s: %s", st, body, msg);
}

#define LABEL "    x = fn.random.uniform(range=[0.0, 5.0], shape=[1])\n"

static void one_hot_past_the_limit(void) {
    /* 2 samples of 2e9 float32 classes: 16e9 bytes */
    fails_with(LABEL "    return fn.one_hot(x, num_classes=2000000000)\n", 2, (size_t)1 << 30,
               SL_ENOMEM, "one_hot", "16000000000 bytes");
    /* the default limit, a share of the physical memory, stops it too: 16 TB */
    fails_with(LABEL "    return fn.one_hot(x, num_classes=2000000000)\n", 2000, 0, SL_ENOMEM,
               "one_hot", "16000000000000 bytes");
    /* within the limit it runs */
    passes(LABEL "    return fn.one_hot(x, num_classes=1000)\n", 2, (size_t)1 << 20);
    /* the limit counts the whole batch: 2 x 300000 x 4 bytes of one-hot rows fit 4 MB alone, not
       beside a copy of them */
    const char *two = LABEL "    y = fn.one_hot(x, num_classes=300000)\n"
                            "    return y, y * 2.0\n";
    passes(two, 2, (size_t)8 << 20);
    fails_with(two, 2, (size_t)4 << 20, SL_ENOMEM, "2400000 bytes", "already holds 2400");
}

static void environment(void) {
    const char *body = LABEL "    return fn.one_hot(x, num_classes=1000000)\n"; /* 8 MB */
    setenv("SLUICE_MAX_BATCH_BYTES", "1M", 1);
    fails_with(body, 2, 0, SL_ENOMEM, "one_hot", "1048576 bytes per batch");
    passes(body, 2, (size_t)64 << 20); /* the config's own limit wins */
    setenv("SLUICE_MAX_BATCH_BYTES", "100M", 1);
    passes(body, 2, 0);
    setenv("SLUICE_MAX_BATCH_BYTES", "12X", 1);
    fails_with(body, 2, 0, SL_EINVAL, "SLUICE_MAX_BATCH_BYTES=\"12X\"", "byte count");
    setenv("SLUICE_MAX_BATCH_BYTES", "99999999999999999999", 1);
    fails_with(body, 2, 0, SL_EINVAL, "SLUICE_MAX_BATCH_BYTES", "byte count");
    unsetenv("SLUICE_MAX_BATCH_BYTES");
}

static void batch_size(void) {
    /* a billion samples: refused at build, before any per-sample array is made */
    fails_with(LABEL "    return x\n", 1000000000, 0, SL_ENOMEM, "batch_size 1000000000",
               "bytes per batch");
    fails_with(LABEL "    return x\n", 4096, (size_t)1 << 20, SL_ENOMEM, "batch_size 4096",
               "limit of 1048576");
}

static void shapes_from_arguments(void) {
    /* 2^62 x 4 elements: past 2^63 */
    fails_with(LABEL "    return fn.reshape(x, shape=[4611686018427387904, 4])\n", 1, 0, SL_EINVAL,
               "reshape", "shape");
    fails_with(LABEL "    return fn.reshape(x, shape=[-1, 4611686018427387904, 4])\n", 1, 0,
               SL_EINVAL, "reshape", "2^63");
    /* rel_shape far past any extent */
    fails_with(LABEL "    return fn.reshape(x, rel_shape=[1e300])\n", 1, 0, SL_EINVAL, "reshape",
               "rel_shape");
    fails_with("    return fn.random.uniform(shape=[4611686018427387904, 4])\n", 1, 0, SL_EINVAL,
               "random.uniform", "shape");
}

#define IMAGE "    x = fn.random.uniform(range=[0.0, 1.0], shape=[8, 8, 3])\n"

static void negative_sizes(void) {
    fails_with(IMAGE "    return fn.crop_mirror_normalize(x, crop=(-3, 5))\n", 1, 0, SL_EINVAL,
               "crop_mirror_normalize", "crop");
    fails_with(IMAGE "    return fn.crop(x, crop=(-3, 5))\n", 1, 0, SL_EINVAL, "crop", "-3");
    fails_with(IMAGE "    return fn.crop(x, crop_h=-2.0)\n", 1, 0, SL_EINVAL, "crop", "crop_h");
    fails_with(IMAGE "    return fn.resize(x, size=[-5, -5])\n", 1, 0, SL_EINVAL, "resize",
               "size[0]");
    fails_with(IMAGE "    return fn.resize(x, resize_x=-5.0)\n", 1, 0, SL_EINVAL, "resize",
               "resize_x");
    passes(IMAGE "    return fn.crop(x, crop=(4, 5))\n", 1, 0);
}

int main(void) {
    one_hot_past_the_limit();
    environment();
    batch_size();
    shapes_from_arguments();
    negative_sizes();
    return check_done();
}
