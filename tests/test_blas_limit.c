/* SPDX-License-Identifier: Apache-2.0 */
/* The CPU model under an address-space limit (RLIMIT_AS, ulimit -v). OpenBLAS maps a work buffer
 * for a thread at its first sgemm and, when the mapping fails, tries again for ever: a step with
 * too little room left spun at 100% CPU. Here, in a process where no sgemm has run yet, a step with
 * less room than that buffer fails with SL_ENOMEM naming OpenBLAS and the size; with room for it
 * the step runs; once the buffer is mapped, a step needs no room for it again. An alarm ends the
 * test if a step spins. Sanitizer runtimes reserve terabytes of address space, so the test has
 * nothing to measure under them. */
#include "check.h"
#include "sluice/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#endif

enum { B = 128, IN = 784, HID = 256, OUT = 10 };

#ifndef UNDER_SANITIZER /* (the test is skipped there) */
/* The process's mapped bytes now (/proc/self/statm: size in pages). */
static size_t mapped_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (f) {
        if (fscanf(f, "%lu", &pages) != 1) pages = 0;
        fclose(f);
    }
    return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
}

/* Leaves `room` bytes of address space above what is mapped now. */
static void limit_room(size_t room) {
    struct rlimit rl;
    CHECK(getrlimit(RLIMIT_AS, &rl) == 0);
    rl.rlim_cur = mapped_bytes() + room;
    CHECK_MSG(setrlimit(RLIMIT_AS, &rl) == 0, "setrlimit(RLIMIT_AS, %llu)",
              (unsigned long long)rl.rlim_cur);
}

static void unlimit(void) {
    struct rlimit rl;
    CHECK(getrlimit(RLIMIT_AS, &rl) == 0);
    rl.rlim_cur = rl.rlim_max;
    CHECK(setrlimit(RLIMIT_AS, &rl) == 0);
}
#endif

int main(void) {
#ifdef UNDER_SANITIZER
    printf("skipped: a sanitizer's runtime reserves more address space than any limit leaves\n");
    return 0;
#else
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur != RLIM_INFINITY) {
        printf("skipped: the test runs under an address-space limit already\n");
        return 0;
    }
    alarm(60); /* a step that spins inside OpenBLAS ends the test with SIGALRM */
    sl_err err;
    sl_mlp_config cfg = {0};
    cfg.nsizes = 3;
    cfg.sizes[0] = IN;
    cfg.sizes[1] = HID;
    cfg.sizes[2] = OUT;
    sl_mlp *m = NULL;
    CHECK_OK(sl_mlp_create(&cfg, sl_cpu(), &m, &err), &err);
    if (!m) return check_done();
    float *x = malloc(sizeof(float) * B * IN), *y = calloc(B * OUT, sizeof(float));
    uint64_t rng = 88172645463325252ull;
    for (int i = 0; i < B * IN; i++) x[i] = check_frand(&rng);
    for (int r = 0; r < B; r++) y[r * OUT + r % OUT] = 1.0f;
    sl_tensor xt, yt;
    int64_t xs[2] = {B, IN}, ys[2] = {B, OUT};
    CHECK_OK(sl_tensor_wrap(&xt, x, SL_DTYPE_F32, sl_cpu(), 2, xs, NULL), NULL);
    CHECK_OK(sl_tensor_wrap(&yt, y, SL_DTYPE_F32, sl_cpu(), 2, ys, NULL), NULL);
    int threads = 0;
    size_t buffer = 0;
    sl_mlp_blas_threads(&threads, &buffer);
    CHECK_MSG(threads >= 1 && buffer >= ((size_t)32 << 20), "threads %d, buffer %zu", threads,
              buffer);
    float loss = NAN;

    /* 32 MiB of room: the step's own scratch fits (B x HID floats), OpenBLAS's buffer does not */
    limit_room((size_t)32 << 20);
    CHECK_FAILS(sl_mlp_loss_grad(m, &xt, &yt, &loss, &err), SL_ENOMEM, &err, "OpenBLAS");
    CHECK_MSG(strstr(err.msg, "MiB of work buffer") && strstr(err.msg, "ulimit -v"), "%s", err.msg);
    /* refused again, and nothing is left half done */
    CHECK_FAILS(sl_mlp_loss_grad(m, &xt, &yt, &loss, &err), SL_ENOMEM, &err, "MLP forward");
    unlimit();

    /* room for the buffers (the caller's and, at a first call, one for each OpenBLAS thread: they
     * may map theirs only now) and the scratch: the step runs (the size the backend checks for is
     * enough for what OpenBLAS maps) */
    limit_room((size_t)threads * buffer + ((size_t)32 << 20));
    CHECK_OK(sl_mlp_loss_grad(m, &xt, &yt, &loss, &err), &err);
    CHECK_MSG(isfinite(loss) && loss > 0, "loss %g", loss);
    unlimit();

    /* the buffer is OpenBLAS's for good now: a step needs no room for it */
    float again = NAN;
    limit_room((size_t)32 << 20);
    CHECK_OK(sl_mlp_loss_grad(m, &xt, &yt, &again, &err), &err);
    CHECK_MSG(again == loss, "the same step gave %.9g, then %.9g", loss, again);
    unlimit();

    sl_mlp_free(m);
    free(x);
    free(y);
    return check_done();
#endif
}
