/* SPDX-License-Identifier: Apache-2.0 */
/* GPU tests: how many GPUs a test needs. gpu_require(n) returns the number of visible GPUs when
 * there are at least n; otherwise it prints "skipped: N GPUs" and exits 0 -- except that with no
 * GPU at all while SL_REQUIRE_GPU=1 is set (the GPU machine's runs), it fails (exit 1). */
#ifndef SLUICE_TEST_GPU_H
#define SLUICE_TEST_GPU_H

#include "core/alloc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static inline int gpu_require(int n) {
    int have = sl__cuda_device_count();
    if (have >= n) return have;
    const char *req = getenv("SL_REQUIRE_GPU");
    if (have == 0 && req && strcmp(req, "1") == 0) {
        fprintf(stderr, "FAIL: SL_REQUIRE_GPU=1 but no GPU is visible\n");
        exit(1);
    }
    printf("skipped: %d GPUs (this test needs %d)\n", have, n);
    exit(0);
}

/* Fails the test (exit 1, saying what) if it is still running after seconds: a test that could
 * hang inside a library stops with a message instead of waiting for ctest's timeout. */
typedef struct gpu_watchdog_ {
    int seconds;
    const char *what;
} gpu_watchdog_;
static inline void *gpu_watchdog_run_(void *arg) {
    const gpu_watchdog_ *w = (const gpu_watchdog_ *)arg;
    unsigned left = (unsigned)w->seconds;
    while (left) left = sleep(left);
    fprintf(stderr, "FAIL: %s did not finish in %d s (hung?)\n", w->what, w->seconds);
    fflush(stderr);
    _exit(1);
}
static inline void gpu_watchdog(int seconds, const char *what) {
    static gpu_watchdog_ w;
    pthread_t t;
    w.seconds = seconds, w.what = what;
    if (pthread_create(&t, NULL, gpu_watchdog_run_, &w) == 0) pthread_detach(t);
}

/* max |a - b| / max |b| over n floats (0 when b is all zeros and a == b) */
static inline double rel_normwise(const float *a, const float *b, int64_t n) {
    double d = 0, m = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = a[i] > b[i] ? (double)a[i] - b[i] : (double)b[i] - a[i];
        double v = b[i] < 0 ? -(double)b[i] : (double)b[i];
        if (e > d) d = e;
        if (v > m) m = v;
    }
    return m > 0 ? d / m : d;
}

#endif
