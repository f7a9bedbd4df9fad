/* SPDX-License-Identifier: Apache-2.0 */
/* cuBLAS is loaded at run time (src/train/cublas_dl.cu), not linked: the library this build was
 * made against is found and every entry point the GPU model calls resolves -- no GPU is needed for
 * that
 * -- also when a preload thread and the caller race for it; and the tool itself does not map cuBLAS
 * until it trains on a GPU. Builds without CUDA have nothing to load: the test says so and passes.
 */
#include "check.h"
#ifdef SLUICE_HAVE_CUDA
#include "train/mlp.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void) {
#ifndef SLUICE_HAVE_CUDA
    printf("skipped: built without CUDA\n");
    return 0;
#else
    sl_err err;
    memset(&err, 0, sizeof err);
    sl__cuda_blas_preload(); /* a second loader, racing the call below */
    CHECK_OK(sl__cuda_blas_load(&err), &err);
    CHECK_OK(sl__cuda_blas_load(&err), &err); /* loaded once; later calls return at once */
    /* the sluice tool does not map cuBLAS by itself: `sluice --help` runs without it */
    char tool[512], cmd[1024];
    snprintf(tool, sizeof tool, "%s/sluice", SL_BUILD_DIR);
    CHECK_MSG(access(tool, X_OK) == 0, "no tool at %s", tool); /* else grep would count 0 */
    snprintf(cmd, sizeof cmd, "LD_DEBUG=libs %s --help 2>&1 >/dev/null | grep -c libcublas", tool);
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    if (p) {
        int n = -1;
        CHECK(fscanf(p, "%d", &n) == 1);
        pclose(p);
        CHECK_MSG(n == 0, "sluice --help loaded libcublas (%d loader lines)", n);
    }
    return check_done();
#endif
}
