/* SPDX-License-Identifier: Apache-2.0 */
/* Benchmark: one training step of the seed's MLP (784-1024-1024-10, tanh, SGD lr 0.001) at global
 * batch 200 on the CPU: forward+backward alone, the full sl_trainer step on cpu:1, and on cpu:2
 * (two replicas of 100 rows, gradients averaged through the local sl_comm). Prints the median and
 * the minimum over the timed steps, after warm-up. Usage: bench_mlp [steps] (default 50). */
#include "sluice/train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *what, double *t, int n, int batch) {
    qsort(t, (size_t)n, sizeof *t, cmp);
    printf("%-34s median %8.2f ms  min %8.2f ms  (%.0f samples/s)\n", what, 1e3 * t[n / 2],
           1e3 * t[0], batch / t[n / 2]);
}

int main(int argc, char **argv) {
    const int steps = argc > 1 ? atoi(argv[1]) : 50;
    const int B = 200, IN = 784, C = 10, warm = 3;
    if (steps < 1) return 2;
    float *x = malloc(sizeof(float) * B * IN), *y = calloc((size_t)B * C, sizeof(float));
    double *t = malloc(sizeof(double) * (size_t)steps);
    srand(1);
    for (int i = 0; i < B * IN; i++) x[i] = (float)(rand() % 256) / 255.0f;
    for (int r = 0; r < B; r++) y[r * C + rand() % C] = 1.0f;
    sl_tensor tx, ty;
    int64_t sx[2] = {B, IN}, sy[2] = {B, C};
    sl_tensor_wrap(&tx, x, SL_DTYPE_F32, sl_cpu(), 2, sx, NULL);
    sl_tensor_wrap(&ty, y, SL_DTYPE_F32, sl_cpu(), 2, sy, NULL);
    sl_err err;
    const char *core, *suggest;
    sl_mlp_blas_info(&core, &suggest);
    printf("OpenBLAS core: %s%s%s\n", core, suggest ? "; faster here: OPENBLAS_CORETYPE=" : "",
           suggest ? suggest : "");

    sl_mlp *m = NULL;
    if (sl_mlp_create(NULL, sl_cpu(), &m, &err) != SL_OK) {
        fprintf(stderr, "bench_mlp: %s\n", err.msg);
        return 1;
    }
    for (int i = 0; i < warm + steps; i++) {
        double t0 = now();
        sl_mlp_loss_grad(m, &tx, &ty, NULL, NULL);
        if (i >= warm) t[i - warm] = now() - t0;
    }
    report("forward+backward, batch 200", t, steps, B);
    sl_mlp_free(m);

    for (int K = 1; K <= 2; K++) {
        sl_trainer_config cfg;
        sl_trainer_config_default(&cfg);
        cfg.replicas = K;
        for (int k = 0; k < K; k++) cfg.devices[k] = sl_cpu();
        sl_trainer *tr = NULL;
        if (sl_trainer_create(&cfg, &tr, &err) != SL_OK) {
            fprintf(stderr, "bench_mlp: %s\n", err.msg);
            return 1;
        }
        for (int i = 0; i < warm + steps; i++) {
            double t0 = now();
            if (sl_trainer_step_global(tr, &tx, &ty, NULL, &err) != SL_OK) {
                fprintf(stderr, "bench_mlp: %s\n", err.msg);
                return 1;
            }
            if (i >= warm) t[i - warm] = now() - t0;
        }
        char what[64];
        snprintf(what, sizeof what, "trainer step cpu:%d, batch 200", K);
        report(what, t, steps, B);
        sl_trainer_free(tr);
    }
    free(t);
    free(x);
    free(y);
    return 0;
}
