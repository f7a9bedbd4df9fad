/* SPDX-License-Identifier: Apache-2.0 */
/* The mixed image decoders with nvJPEG against the CPU decoders on the DALI_extra photos (4 JPEGs,
 * 640x408 to 1280x871): decoders.image RGB (hw_decoder_load 0.65, the default: most to the hardware
 * engines, the rest to the CPU pool), BGR with hw_decoder_load=0 (all on the CPU pool) and GRAY,
 * and decoders.image_random_crop, on a GPU pipeline with cpu_decode_max_pixels=0, against the same
 * pipeline on the CPU (libjpeg-turbo); then all of it again with SLUICE_NVJPEG_ENGINES=0 (nvJPEG's
 * default back end decodes every image). Same shapes and windows, and every output equal byte for
 * byte: colour JPEGs are decoded to their planes and finished with libjpeg-turbo's own upsampling
 * and conversion (ops/jpeg_ycc.h), and the CPU's cropped decode equals its full decode. (DALI only
 * asks for mean < 1 and max <= 12.) Prints what it measured. No image nvJPEG is given may end up
 * on the GPU stage's CPU fallback (which would also match the CPU decode): its log line fails the
 * test. Also: the small-image path (every image on the CPU pool, copied once per batch) equals the
 * CPU pipeline exactly. The RGB and GRAY decoders pass DALI's preallocation hints, which the
 * engines must accept. Eight batches, so that the engines' share is also decoded ahead (from the
 * CPU stage), which every decoder that gives the engines images must then do. */
#include "check.h"
#include "gpu.h"

#include "sluice/pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SLUICE_HAVE_NVJPEG
static int fallbacks; /* "nvJPEG did not decode" log lines (the GPU stage's thread) */
static int refusals;  /* the engines refused the preallocation hints */
static int engines;   /* decoders that found hardware engines */
static int ahead;     /* decoders that started decoding the engines' share ahead */

static void on_log(sl_log_level level, const char *msg, void *user) {
    (void)user;
    if (strstr(msg, "nvJPEG")) printf("log %d: %s\n", (int)level, msg);
    if (strstr(msg, "nvJPEG did not decode")) __atomic_fetch_add(&fallbacks, 1, __ATOMIC_RELAXED);
    if (strstr(msg, "preallocating the hardware decoder"))
        __atomic_fetch_add(&refusals, 1, __ATOMIC_RELAXED);
    if (strstr(msg, "engines in use")) __atomic_fetch_add(&engines, 1, __ATOMIC_RELAXED);
    if (strstr(msg, "decoded ahead")) __atomic_fetch_add(&ahead, 1, __ATOMIC_RELAXED);
}

static sl_pipeline *make(const char *text, sl_device dev) {
    sl_pipeline_config cfg;
    sl_pipeline_config_init(&cfg);
    cfg.batch_size = 8;
    cfg.num_threads = 2;
    cfg.device = dev;
    cfg.seed = 99;
    sl_err e;
    sl_pipeline_bind bind = {"file_root", fixture("dali_extra/jpeg")};
    sl_pipeline *p = check_pipeline(&cfg, text, "photos.py", 1, &bind, &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    return p;
}

/* Compares output o of two batches sample by sample; returns the worst per-image mean diff. */
static double compare(const sl_batch *bc, const sl_batch *bg, int o, const char *what) {
    const sl_tlist *c = sl_batch_output(bc, o), *g = sl_batch_output(bg, o);
    CHECK(g->device.kind == SL_DEVICE_CUDA);
    CHECK_EQ_INT(c->count, g->count);
    double worst_mean = 0;
    for (int i = 0; i < c->count && i < g->count; i++) {
        size_t n = sl_tlist_sample_nbytes(c, i);
        CHECK_MSG(n == sl_tlist_sample_nbytes(g, i), "%s %d: shapes differ", what, i);
        if (n != sl_tlist_sample_nbytes(g, i)) continue;
        unsigned char *h = malloc(n ? n : 1);
        sl_tensor dt, ht;
        sl_err e;
        sl_tlist_sample(g, i, &dt);
        CHECK_OK(sl_tensor_wrap(&ht, h, SL_DTYPE_U8, sl_cpu(), dt.ndim, dt.shape, NULL), NULL);
        CHECK_OK(sl_tensor_copy(&ht, &dt, NULL, &e), &e);
        const unsigned char *x = c->data[i];
        double sum = 0;
        int mx = 0;
        for (size_t k = 0; k < n; k++) {
            int d = abs((int)x[k] - (int)h[k]);
            sum += d;
            if (d > mx) mx = d;
        }
        double mean = n ? sum / (double)n : 0;
        const int64_t *sh = sl_tlist_shape(c, i);
        printf("%-28s %-26s %4lldx%-4lldx%lld  mean |cpu - nvjpeg| %.4f  max %d\n", what,
               sl_batch_key(bc, i), (long long)sh[0], (long long)sh[1], (long long)sh[2], mean, mx);
        CHECK_MSG(mx == 0, "%s %s: differs by %d", what, sl_batch_key(bc, i), mx);
        if (mean > worst_mean) worst_mean = mean;
        free(h);
    }
    return worst_mean;
}

static void run(const char *text) {
    sl_pipeline *c = make(text, sl_cpu()), *g = make(text, sl_cuda(0));
    for (int it = 0; c && g && it < 8; it++) { /* past the first batches: decoding ahead too */
        sl_batch *bc = NULL, *bg = NULL;
        CHECK_OK(sl_pipeline_next(c, &bc), NULL);
        sl_status st = sl_pipeline_next(g, &bg);
        CHECK_MSG(st == SL_OK, "GPU pipeline: %s", sl_pipeline_errmsg(g));
        if (!bc || !bg) {
            sl_pipeline_release(c, bc);
            sl_pipeline_release(g, bg);
            break;
        }
        for (int k = 0; k < 8; k++) CHECK_STR(sl_batch_key(bc, k), sl_batch_key(bg, k));
        const char *names[4] = {"decoders.image RGB", "BGR, hw_decoder_load=0",
                                "decoders.image GRAY", "image_random_crop"};
        for (int o = 0; o < sl_pipeline_num_outputs(c); o++) compare(bc, bg, o, names[o]);
        sl_pipeline_release(c, bc);
        sl_pipeline_release(g, bg);
    }
    sl_pipeline_free(c);
    sl_pipeline_free(g);
}

#endif

int main(void) {
    gpu_require(1);
#ifndef SLUICE_HAVE_NVJPEG
    printf("skipped: this build has no nvJPEG\n");
    return 0;
#else
    sl_log_set_callback(on_log, NULL);
    const char *text =
        "def photos(file_root):\n"
        "    jpegs, labels = fn.readers.file(file_root=file_root, random_shuffle=True,\n"
        "        files=['padlock-406986_640.jpg', 'site-1534685_1280.jpg',\n"
        "               'snail-4291306_1280.jpg', 'swan-3584559_640.jpg'])\n"
        "    rgb = fn.decoders.image(jpegs, device='mixed', cpu_decode_max_pixels=0,\n"
        "                            preallocate_width_hint=1280, preallocate_height_hint=960)\n"
        "    bgr = fn.decoders.image(jpegs, device='mixed', output_type=types.BGR,\n"
        "                            cpu_decode_max_pixels=0, hw_decoder_load=0)\n"
        "    gray = fn.decoders.image(jpegs, device='mixed', output_type=types.GRAY,\n"
        "                             cpu_decode_max_pixels=0, hw_decoder_load=0.5,\n"
        "                             preallocate_width_hint=1280, preallocate_height_hint=960)\n"
        "    crops = fn.decoders.image_random_crop(jpegs, device='mixed', seed=5,\n"
        "                                          cpu_decode_max_pixels=0)\n"
        "    return rgb, bgr, gray, crops\n";
    run(text);
    /* with engines, every decoder that gives them images (not BGR at load 0) decodes ahead once
     * its first batch has made the decoder */
    printf("decoders with engines: %d, decoding ahead: %d\n", engines, ahead);
    CHECK(engines == 0 || ahead == 3);
    /* the same without the engines: nvJPEG's default (GPU/hybrid) back end decodes everything */
    setenv("SLUICE_NVJPEG_ENGINES", "0", 1);
    printf("-- SLUICE_NVJPEG_ENGINES=0\n");
    run(text);
    unsetenv("SLUICE_NVJPEG_ENGINES");
    const char *small =
        "def photos(file_root):\n"
        "    jpegs, labels = fn.readers.file(file_root=file_root,\n"
        "        files=['padlock-406986_640.jpg', 'site-1534685_1280.jpg',\n"
        "               'snail-4291306_1280.jpg', 'swan-3584559_640.jpg'])\n"
        "    rgb = fn.decoders.image(jpegs, device='mixed', cpu_decode_max_pixels=10000000)\n"
        "    return rgb\n";
    run(small);
    sl_log_set_callback(NULL, NULL);
    CHECK_MSG(__atomic_load_n(&fallbacks, __ATOMIC_RELAXED) == 0,
              "%d decoder(s) sent images nvJPEG was given to the CPU fallback (see the log lines)",
              fallbacks);
    CHECK_MSG(__atomic_load_n(&refusals, __ATOMIC_RELAXED) == 0,
              "the engines refused %d preallocation(s) (see the log lines)", refusals);
    return check_done();
#endif
}
