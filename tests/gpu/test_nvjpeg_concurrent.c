/* SPDX-License-Identifier: Apache-2.0 */
/* Two pipelines on one GPU at once, both giving every image to the hardware JPEG engines, as a
 * training and a validation pipeline may: pulled from two threads, each pipeline's CPU and GPU
 * stages call the same GPU's engines while the other's do. Their batches must come out whole and,
 * the two having the same seed, equal byte for byte: nothing is mixed up between the two decoders.
 * Why it matters: two threads in nvjpegDecodeBatched on one GPU's engines at once, with batches of
 * 128, hang inside it for good in a standalone program (CUDA 13, H200: bench/RESULTS.md,
 * section 6), so the decoders take a per-GPU engine lock. (This test did not hang without the lock
 * in the runs made, but a hang here would be that; a watchdog fails the test after 120 s instead of
 * leaving it to hang.) */
#include "check.h"
#include "gpu.h"

#include "sluice/pipeline.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef SLUICE_HAVE_NVJPEG
enum { BATCHES = 24, BATCH = 128, PIPES = 2 };

typedef struct puller {
    sl_pipeline *p;
    uint64_t sums[BATCHES]; /* FNV-1a of each batch's bytes, sample after sample */
    int got;
    char err[512];
} puller;

static int engines; /* decoders that found hardware engines */

static void on_log(sl_log_level level, const char *msg, void *user) {
    (void)level, (void)user;
    if (strstr(msg, "engines in use")) __atomic_fetch_add(&engines, 1, __ATOMIC_RELAXED);
}

static uint64_t fnv(uint64_t h, const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static void *pull(void *arg) {
    puller *u = arg;
    unsigned char *host = NULL;
    size_t cap = 0;
    for (; u->got < BATCHES; u->got++) {
        sl_batch *b = NULL;
        if (sl_pipeline_next(u->p, &b) != SL_OK) {
            snprintf(u->err, sizeof u->err, "batch %d: %s", u->got, sl_pipeline_errmsg(u->p));
            break;
        }
        const sl_tlist *out = sl_batch_output(b, 0);
        uint64_t h = 1469598103934665603ull;
        for (int i = 0; i < out->count; i++) {
            size_t n = sl_tlist_sample_nbytes(out, i);
            if (n > cap) {
                free(host);
                host = malloc(n);
                cap = host ? n : 0;
            }
            sl_tensor dt, ht;
            sl_err e;
            sl_tlist_sample(out, i, &dt);
            if (!host || sl_tensor_wrap(&ht, host, dt.dtype, sl_cpu(), dt.ndim, dt.shape, NULL) ||
                sl_tensor_copy(&ht, &dt, NULL, &e)) {
                snprintf(u->err, sizeof u->err, "batch %d sample %d: copy to the host failed",
                         u->got, i);
                break;
            }
            h = fnv(h, host, n);
        }
        u->sums[u->got] = h;
        sl_pipeline_release(u->p, b);
        if (u->err[0]) break;
    }
    free(host);
    return NULL;
}

#endif

int main(void) {
    gpu_require(1);
#ifndef SLUICE_HAVE_NVJPEG
    printf("skipped: this build has no nvJPEG\n");
    return 0;
#else
    sl_log_set_callback(on_log, NULL);
    gpu_watchdog(120, "two pipelines decoding on GPU 0's engines at once");
    const char *text =
        "def photos(file_root):\n"
        "    jpegs, labels = fn.readers.file(file_root=file_root, random_shuffle=True,\n"
        "        files=['padlock-406986_640.jpg', 'site-1534685_1280.jpg',\n"
        "               'snail-4291306_1280.jpg', 'swan-3584559_640.jpg'])\n"
        "    images = fn.decoders.image_random_crop(jpegs, device='mixed', hw_decoder_load=1.0,\n"
        "                                           cpu_decode_max_pixels=0)\n"
        "    return fn.resize(images, resize_x=224, resize_y=224)\n";
    puller u[PIPES];
    memset(u, 0, sizeof u);
    for (int k = 0; k < PIPES; k++) {
        sl_pipeline_config cfg;
        sl_pipeline_config_init(&cfg);
        cfg.batch_size = BATCH;
        cfg.num_threads = 2;
        cfg.device = sl_cuda(0);
        cfg.seed = 7;
        sl_err e;
        sl_pipeline_bind bind = {"file_root", fixture("dali_extra/jpeg")};
        u[k].p = check_pipeline(&cfg, text, "photos.py", 1, &bind, &e);
        CHECK_MSG(u[k].p != NULL, "%s", e.msg);
    }
    if (u[0].p && u[1].p) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        pthread_t th[PIPES];
        for (int k = 0; k < PIPES; k++) CHECK(pthread_create(&th[k], NULL, pull, &u[k]) == 0);
        for (int k = 0; k < PIPES; k++) pthread_join(th[k], NULL);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        printf("%d pipelines x %d batches of %d on GPU 0 in %.2f s; decoders with engines: %d\n",
               PIPES, BATCHES, BATCH, s, engines);
        for (int k = 0; k < PIPES; k++) {
            CHECK_MSG(!u[k].err[0], "pipeline %d: %s", k, u[k].err);
            CHECK_EQ_INT(u[k].got, BATCHES);
            for (int i = 0; i < u[0].got && i < u[k].got; i++)
                CHECK_MSG(u[0].sums[i] == u[k].sums[i],
                          "batch %d differs between pipelines 0 and %d", i, k);
        }
    }
    for (int k = 0; k < PIPES; k++) sl_pipeline_free(u[k].p);
    sl_log_set_callback(NULL, NULL);
    return check_done();
#endif
}
