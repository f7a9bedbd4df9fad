/* SPDX-License-Identifier: Apache-2.0 */
/* Damaged JPEGs through the mixed decoder, on the hardware engines and on nvJPEG's default back
 * end, against the same pipeline on the CPU. Each damaged photo (cut at 60% or 97% of its bytes, or
 * right after its scan header) sits in a batch with good ones. On the CPU libjpeg-turbo reports
 * the cut stream and the batch fails naming the file; the GPU pipeline must fail the same way
 * (nvJPEG, engines and default back end alike, pads a cut stream and reports success: before such
 * streams were kept on the CPU, this test saw GPU batches go through with padded images).
 * With skip_bad_records=True both pipelines must give the same batch byte for byte (the damaged
 * record as an image of zeros). A watchdog fails the test after 120 s instead of leaving a hang. */
#include "check.h"
#include "gpu.h"

#include "sluice/pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SLUICE_HAVE_NVJPEG
static void write_file(const char *dir, const char *name, const void *d, size_t n) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    CHECK_MSG(f != NULL, "cannot write %s", path);
    if (!f) return;
    CHECK(fwrite(d, 1, n, f) == n);
    fclose(f);
}

/* offset just past the first scan header (SOS segment), or 0 */
static size_t after_sos(const unsigned char *d, size_t n) {
    for (size_t p = 2; p + 3 < n; p++)
        if (d[p] == 0xFF && d[p + 1] == 0xDA) return p + 2 + (size_t)(d[p + 2] << 8 | d[p + 3]);
    return 0;
}

static sl_pipeline *make(const char *dir, const char *bad, bool skip, sl_device dev) {
    char text[2048];
    snprintf(text, sizeof text,
             "def photos(file_root):\n"
             "    jpegs, labels = fn.readers.file(file_root=file_root,\n"
             "        files=['padlock-406986_640.jpg', 'swan-3584559_640.jpg', '%s',\n"
             "               'snail-4291306_1280.jpg'])\n"
             "    return fn.decoders.image(jpegs, device='mixed', cpu_decode_max_pixels=0,\n"
             "                             hw_decoder_load=1.0, skip_bad_records=%s)\n",
             bad, skip ? "True" : "False");
    sl_pipeline_config cfg;
    sl_pipeline_config_init(&cfg);
    cfg.batch_size = 4;
    cfg.num_threads = 2;
    cfg.device = dev;
    sl_err e;
    sl_pipeline_bind bind = {"file_root", dir};
    sl_pipeline *p = check_pipeline(&cfg, text, "photos.py", 1, &bind, &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    return p;
}

/* the batch's keys and bytes (host copies), or the error; returns the status */
static sl_status first_batch(sl_pipeline *p, char *keys, size_t kn, unsigned char **bytes,
                             size_t *nbytes, char *msg, size_t mn) {
    sl_batch *b = NULL;
    sl_status st = sl_pipeline_next(p, &b);
    keys[0] = 0, msg[0] = 0, *bytes = NULL, *nbytes = 0;
    if (st != SL_OK) {
        snprintf(msg, mn, "%s", sl_pipeline_errmsg(p));
        return st;
    }
    const sl_tlist *out = sl_batch_output(b, 0);
    size_t total = 0;
    for (int i = 0; i < out->count; i++) total += sl_tlist_sample_nbytes(out, i);
    *bytes = malloc(total ? total : 1);
    for (int i = 0; i < out->count; i++) {
        size_t used = strlen(keys);
        snprintf(keys + used, kn - used, "%s%s", i ? " " : "", sl_batch_key(b, i));
        sl_tensor dt, ht;
        sl_err e;
        sl_tlist_sample(out, i, &dt);
        size_t n = sl_tlist_sample_nbytes(out, i);
        CHECK_OK(sl_tensor_wrap(&ht, *bytes + *nbytes, dt.dtype, sl_cpu(), dt.ndim, dt.shape, NULL),
                 NULL);
        CHECK_OK(sl_tensor_copy(&ht, &dt, NULL, &e), &e);
        *nbytes += n;
    }
    sl_pipeline_release(p, b);
    return SL_OK;
}

static void run(const char *dir, const char *bad, bool skip, const char *mode) {
    sl_pipeline *c = make(dir, bad, skip, sl_cpu()), *g = make(dir, bad, skip, sl_cuda(0));
    char kc[1024], kg[1024], mc[1024], mg[1024];
    unsigned char *bc = NULL, *bg = NULL;
    size_t nc = 0, ng = 0;
    if (c && g) {
        sl_status sc = first_batch(c, kc, sizeof kc, &bc, &nc, mc, sizeof mc);
        sl_status sg = first_batch(g, kg, sizeof kg, &bg, &ng, mg, sizeof mg);
        printf("%-8s %-22s skip=%d  CPU: %s%s  GPU: %s%s\n", mode, bad, (int)skip,
               sc == SL_OK ? kc : "error: ", sc == SL_OK ? "" : mc,
               sg == SL_OK ? kg : "error: ", sg == SL_OK ? "" : mg);
        if (!skip) {
            CHECK_MSG(sc != SL_OK && strstr(mc, bad), "%s: the CPU pipeline did not name %s", mode,
                      bad);
            CHECK_MSG(sg != SL_OK, "%s: the GPU pipeline handed on a batch with %s in it", mode,
                      bad);
            CHECK_MSG(sg == SL_OK || strstr(mg, bad), "%s: the GPU error does not name %s: %s",
                      mode, bad, mg);
            CHECK_EQ_INT(sg, sc);
        } else {
            CHECK_EQ_INT(sc, SL_OK);
            CHECK_EQ_INT(sg, SL_OK);
            CHECK_STR(kg, kc);
            CHECK_MSG(ng == nc && (nc == 0 || memcmp(bc, bg, nc) == 0),
                      "%s: the skipping batches differ (%zu and %zu bytes)", mode, nc, ng);
        }
    }
    free(bc);
    free(bg);
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
    gpu_watchdog(120, "damaged JPEGs on the GPU");
    const char *dir = scratch_dir("nvjpeg_bad");
    const char *good[] = {"padlock-406986_640.jpg", "swan-3584559_640.jpg",
                          "snail-4291306_1280.jpg"};
    char rel[256];
    for (int k = 0; k < 3; k++) {
        snprintf(rel, sizeof rel, "dali_extra/jpeg/%s", good[k]);
        size_t n = 0;
        void *d = check_read_file(fixture(rel), &n);
        CHECK_MSG(d != NULL, "cannot read %s", rel);
        if (d) write_file(dir, good[k], d, n);
        free(d);
    }
    size_t n = 0;
    unsigned char *site = check_read_file(fixture("dali_extra/jpeg/site-1534685_1280.jpg"), &n);
    CHECK(site != NULL);
    if (!site) return check_done();
    size_t sos = after_sos(site, n);
    CHECK(sos > 0 && sos < n);
    write_file(dir, "cut60.jpg", site, n * 6 / 10);
    write_file(dir, "cut97.jpg", site, n * 97 / 100);
    write_file(dir, "no_scan_data.jpg", site, sos);
    const char *bad[] = {"cut60.jpg", "cut97.jpg", "no_scan_data.jpg"};
    for (int engines = 1; engines >= 0; engines--) {
        if (!engines) setenv("SLUICE_NVJPEG_ENGINES", "0", 1);
        for (int k = 0; k < 3; k++)
            for (int skip = 0; skip < 2; skip++)
                run(dir, bad[k], skip, engines ? "engines" : "default");
    }
    unsetenv("SLUICE_NVJPEG_ENGINES");
    free(site);
    return check_done();
#endif
}
