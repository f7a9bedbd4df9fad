/* SPDX-License-Identifier: Apache-2.0 */
/* A stalled call on the hardware JPEG engines (the test hook SLUICE_NVJPEG_TEST_STALL: a
 * decoder's third engine call blocks for three times SLUICE_NVJPEG_TIMEOUT, here 1 s) costs no
 * batch and no image: on the DALI_extra photos, decoders.image (RGB) and
 * decoders.image_random_crop on a GPU pipeline give, batch after batch and key for key, the bytes
 * the same pipeline gives on the CPU (libjpeg-turbo); each decoder logs one warning that names it
 * and the hardware back end; its later batches go without the engines; and freeing the pipeline
 * while the stalled call still blocks returns at once. Ten batches: the third engine call of each
 * decoder is one of its batches decoded ahead from the CPU stage. On a GPU without engines the
 * hook never fires and the test says so. */
#include "check.h"
#include "gpu.h"

#include "sluice/pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef SLUICE_HAVE_NVJPEG
static int stalls;  /* "made no progress" warnings */
static int named;   /* ... that name a decoder */
static int engines; /* decoders that found hardware engines */

static void on_log(sl_log_level level, const char *msg, void *user) {
    (void)user;
    if (strstr(msg, "nvJPEG") || strstr(msg, "JPEG decoder"))
        printf("log %d: %s\n", (int)level, msg);
    if (strstr(msg, "engines in use")) __atomic_fetch_add(&engines, 1, __ATOMIC_RELAXED);
    if (strstr(msg, "made no progress") && level == SL_LOG_WARN) {
        __atomic_fetch_add(&stalls, 1, __ATOMIC_RELAXED);
        if (strstr(msg, "decoders.image") && strstr(msg, "hardware back end"))
            __atomic_fetch_add(&named, 1, __ATOMIC_RELAXED);
    }
}

static sl_pipeline *make(const char *text, sl_device dev) {
    sl_pipeline_config cfg;
    sl_pipeline_config_init(&cfg);
    cfg.batch_size = 8;
    cfg.num_threads = 2;
    cfg.device = dev;
    cfg.seed = 7;
    sl_err e;
    sl_pipeline_bind bind = {"file_root", fixture("dali_extra/jpeg")};
    sl_pipeline *p = check_pipeline(&cfg, text, "photos.py", 1, &bind, &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    return p;
}

/* Output o of two batches, sample by sample, byte for byte. */
static void compare(const sl_batch *bc, const sl_batch *bg, int o, int it) {
    const sl_tlist *c = sl_batch_output(bc, o), *g = sl_batch_output(bg, o);
    CHECK_EQ_INT(c->count, g->count);
    for (int i = 0; i < c->count && i < g->count; i++) {
        size_t n = sl_tlist_sample_nbytes(c, i);
        CHECK_MSG(n == sl_tlist_sample_nbytes(g, i), "batch %d output %d sample %d: shapes differ",
                  it, o, i);
        if (n != sl_tlist_sample_nbytes(g, i)) continue;
        unsigned char *h = malloc(n ? n : 1);
        sl_tensor dt, ht;
        sl_err e;
        sl_tlist_sample(g, i, &dt);
        CHECK_OK(sl_tensor_wrap(&ht, h, SL_DTYPE_U8, sl_cpu(), dt.ndim, dt.shape, NULL), NULL);
        CHECK_OK(sl_tensor_copy(&ht, &dt, NULL, &e), &e);
        CHECK_MSG(memcmp(c->data[i], h, n) == 0, "batch %d output %d %s: differs from the CPU", it,
                  o, sl_batch_key(bc, i));
        free(h);
    }
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}
#endif

int main(void) {
    gpu_require(1);
#ifndef SLUICE_HAVE_NVJPEG
    printf("skipped: this build has no nvJPEG\n");
    return 0;
#else
    gpu_watchdog(120, "test_nvjpeg_stall");
    sl_log_set_callback(on_log, NULL);
    setenv("SLUICE_NVJPEG_TIMEOUT", "1", 1);
    setenv("SLUICE_NVJPEG_TEST_STALL", "3", 1);
    const char *text =
        "def photos(file_root):\n"
        "    jpegs, labels = fn.readers.file(file_root=file_root, random_shuffle=True,\n"
        "        files=['padlock-406986_640.jpg', 'site-1534685_1280.jpg',\n"
        "               'snail-4291306_1280.jpg', 'swan-3584559_640.jpg'])\n"
        "    rgb = fn.decoders.image(jpegs, device='mixed', cpu_decode_max_pixels=0)\n"
        "    crops = fn.decoders.image_random_crop(jpegs, device='mixed', seed=5,\n"
        "                                          cpu_decode_max_pixels=0)\n"
        "    return rgb, crops\n";
    sl_pipeline *c = make(text, sl_cpu()), *g = make(text, sl_cuda(0));
    int batches = 0;
    for (int it = 0; c && g && it < 10; it++) {
        sl_batch *bc = NULL, *bg = NULL;
        CHECK_OK(sl_pipeline_next(c, &bc), NULL);
        sl_status st = sl_pipeline_next(g, &bg);
        CHECK_MSG(st == SL_OK, "GPU pipeline, batch %d: %s", it, sl_pipeline_errmsg(g));
        if (bc && bg) {
            batches++;
            for (int k = 0; k < 8; k++) CHECK_STR(sl_batch_key(bc, k), sl_batch_key(bg, k));
            for (int o = 0; o < 2; o++) compare(bc, bg, o, it);
        }
        sl_pipeline_release(c, bc);
        sl_pipeline_release(g, bg);
        if (!bc || !bg) break;
    }
    CHECK_EQ_INT(batches, 10);
    double t0 = now();
    sl_pipeline_free(g); /* a stalled call may still block: the free does not wait for it */
    double freed = now() - t0;
    sl_pipeline_free(c);
    printf(
        "decoders with engines: %d; stall warnings: %d (naming their op: %d); free took %.2f s\n",
        engines, stalls, named, freed);
    if (engines == 0) {
        printf("no hardware JPEG engines on this GPU: the hook never fired\n");
        CHECK_EQ_INT(stalls, 0);
    } else {
        CHECK_EQ_INT(stalls, engines); /* one per decoder, then the engines are off for it */
        CHECK_EQ_INT(named, engines);
        CHECK_MSG(freed < 2.5, "freeing the pipeline waited %.2f s for the stalled call", freed);
    }
    sl_log_set_callback(NULL, NULL);
    return check_done();
#endif
}
