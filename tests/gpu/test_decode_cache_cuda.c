/* SPDX-License-Identifier: Apache-2.0 */
/* decoders.image's decoded-image cache on a GPU pipeline (device memory, hits copied on the
 * device): over 3 epochs of the Caffe2 fixture (256 Fashion-MNIST JPEGs, shuffled), the GPU
 * pipeline with cache_size equals the CPU pipeline without it byte for byte, and decodes 256, 0, 0
 * images per epoch (cache_debug's misses); with every JPEG sent to nvJPEG
 * (cpu_decode_max_pixels=0, hw_decoder_load=1 so that each image always takes the same route;
 * images nvJPEG does not take are decoded on the CPU) the cached GPU
 * run equals the uncached GPU run. */
#include "check.h"
#include "gpu.h"

#include "sluice/pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BATCH = 32, PER_EPOCH = 256 / BATCH, EPOCHS = 3 };

static int misses[EPOCHS * PER_EPOCH];

static void on_log(sl_log_level level, const char *msg, void *user) {
    (void)level, (void)user;
    const char *p = strstr(msg, "cache: batch ");
    long long b;
    int h, m;
    if (p && sscanf(p, "cache: batch %lld: %d hits, %d misses", &b, &h, &m) == 3 && b >= 0 &&
        b < EPOCHS * PER_EPOCH)
        misses[b] = m;
}

static unsigned char *collect(const char *args, sl_device dev, size_t *len) {
    sl_pipeline_config c;
    sl_pipeline_config_init(&c);
    c.batch_size = BATCH;
    c.num_threads = 3;
    c.seed = 5;
    c.device = dev;
    sl_err e;
    *len = 0;
    char text[1024];
    snprintf(text, sizeof text,
             "def pipe(data_path):\n"
             "    jpegs, labels = fn.readers.caffe2(path=data_path, random_shuffle=True)\n"
             "    images = fn.decoders.image(jpegs, device=\"mixed\", output_type=types.GRAY%s)\n"
             "    return images, labels\n",
             args);
    sl_pipeline_bind bind = {"data_path", fixture("caffe2-fmnist-256")};
    sl_pipeline *p = check_pipeline(&c, text, "cache.py", 1, &bind, &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    if (!p) return NULL;
    sl_status st = SL_OK;
    size_t cap = 1 << 20, used = 0;
    unsigned char *buf = malloc(cap);
    for (int i = 0; st == SL_OK && i < EPOCHS * PER_EPOCH; i++) {
        sl_batch *b = NULL;
        st = sl_pipeline_next(p, &b);
        CHECK_MSG(st == SL_OK, "%s", sl_pipeline_errmsg(p));
        if (!b) break;
        for (int o = 0; o < 2; o++) {
            const sl_tlist *l = sl_batch_output(b, o);
            for (int k = 0; k < l->count; k++) {
                sl_tensor dt, ht;
                sl_tlist_sample(l, k, &dt);
                size_t nb = sl_tlist_sample_nbytes(l, k);
                while (used + nb > cap) buf = realloc(buf, cap *= 2);
                CHECK_OK(
                    sl_tensor_wrap(&ht, buf + used, dt.dtype, sl_cpu(), dt.ndim, dt.shape, NULL),
                    NULL);
                CHECK_OK(sl_tensor_copy(&ht, &dt, NULL, &e), &e);
                used += nb;
            }
        }
        sl_pipeline_release(p, b);
    }
    sl_pipeline_free(p);
    *len = used;
    return buf;
}

static void run(const char *base, const char *cache, sl_device ref_dev) {
    size_t n0, n1;
    unsigned char *ref = collect(base, ref_dev, &n0);
    memset(misses, 0, sizeof misses);
    char args[512];
    snprintf(args, sizeof args, "%s%s", base, cache);
    unsigned char *got = collect(args, sl_cuda(0), &n1);
    CHECK_MSG(n0 > 0 && n0 == n1 && ref && got && memcmp(ref, got, n0) == 0,
              "%s: cached GPU outputs differ from the %s run", args,
              ref_dev.kind == SL_DEVICE_CUDA ? "uncached GPU" : "CPU");
    int dec[EPOCHS] = {0, 0, 0};
    for (int b = 0; b < EPOCHS * PER_EPOCH; b++) dec[b / PER_EPOCH] += misses[b];
    printf("%-60s decodes per epoch: %d %d %d\n", args, dec[0], dec[1], dec[2]);
    CHECK_EQ_INT(dec[0], 256);
    CHECK_EQ_INT(dec[1], 0);
    CHECK_EQ_INT(dec[2], 0);
    free(ref);
    free(got);
}

int main(void) {
    gpu_require(1);
    sl_log_set_callback(on_log, NULL);
    run("", ", cache_size=1, cache_debug=True", sl_cpu());
    run(", cpu_decode_max_pixels=0, hw_decoder_load=1.0", ", cache_size=1, cache_debug=True",
        sl_cuda(0));
    sl_log_set_callback(NULL, NULL);
    return check_done();
}
