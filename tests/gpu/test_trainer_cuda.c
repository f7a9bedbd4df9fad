/* SPDX-License-Identifier: Apache-2.0 */
/* The data-parallel trainer on GPUs: one step on 2 GPUs (NCCL average) equals one step on 1 GPU
 * with the same global batch within 1e-5 relative (loss, averaged gradients, parameters after the
 * update), and stays so over several steps (SGD; Adam: the first step's gradients); both replicas
 * hold the same bits after every step; the 1-GPU trainer matches the CPU trainer within 1e-4;
 * sl_trainer_sync copies across GPUs; evaluation on replica 0 with device tensors; pipelined steps
 * (sl_trainer_step_async, two batches in turn as from a pipeline's ring) give the same losses,
 * one call later, and the same parameters as sl_trainer_step, bit for bit, on 1 and 2 GPUs. */
#include "check.h"
#include "gpu.h"
#include "sluice/train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static float frand(void) {
    return check_frand(&rng_state);
}

#define B  200
#define IN 784
#define C  10

static float X[B * IN], Y[B * C];

static sl_trainer *make(int K, int gpu, sl_optim_kind kind) {
    sl_trainer_config cfg;
    sl_trainer_config_default(&cfg);
    cfg.replicas = K;
    cfg.optim.kind = kind;
    for (int k = 0; k < K; k++) cfg.devices[k] = gpu ? sl_cuda(k) : sl_cpu();
    sl_trainer *t = NULL;
    sl_err err;
    CHECK_OK(sl_trainer_create(&cfg, &t, &err), &err);
    return t;
}

/* shard k of the global batch on replica k's device (owners freed by the caller) */
static void shards_of(sl_trainer *t, float *gx, float *gy, sl_tensor *xo, sl_tensor *yo,
                      sl_tensor *xs, sl_tensor *ys) {
    const int K = sl_trainer_replicas(t);
    sl_err err;
    for (int k = 0; k < K; k++) {
        sl_device d = sl_mlp_device(sl_trainer_model(t, k));
        int64_t xshape[2] = {B / K, IN}, yshape[2] = {B / K, C};
        sl_tensor hx, hy;
        sl_tensor_wrap(&hx, gx + (size_t)k * (B / K) * IN, SL_DTYPE_F32, sl_cpu(), 2, xshape, NULL);
        sl_tensor_wrap(&hy, gy + (size_t)k * (B / K) * C, SL_DTYPE_F32, sl_cpu(), 2, yshape, NULL);
        if (d.kind == SL_DEVICE_CPU) {
            xs[k] = hx;
            ys[k] = hy;
            memset(&xo[k], 0, sizeof xo[k]);
            memset(&yo[k], 0, sizeof yo[k]);
            continue;
        }
        CHECK_OK(sl_tensor_alloc(&xo[k], SL_DTYPE_F32, d, 2, xshape, NULL, &err), &err);
        CHECK_OK(sl_tensor_alloc(&yo[k], SL_DTYPE_F32, d, 2, yshape, NULL, &err), &err);
        CHECK_OK(sl_tensor_copy(&xo[k], &hx, NULL, &err), &err);
        CHECK_OK(sl_tensor_copy(&yo[k], &hy, NULL, &err), &err);
        xs[k] = xo[k];
        ys[k] = yo[k];
    }
}

static void shards(sl_trainer *t, sl_tensor *xo, sl_tensor *yo, sl_tensor *xs, sl_tensor *ys) {
    shards_of(t, X, Y, xo, yo, xs, ys);
}

static void pipelined(int K, sl_optim_kind kind, const char *name) {
    enum { STEPS = 7 };
    static float X2[B * IN];
    for (int i = 0; i < B * IN; i++) X2[i] = X[(i + 7 * IN) % (B * IN)]; /* rows rotated */
    sl_trainer *ts = make(K, 1, kind), *ta = make(K, 1, kind);
    if (!ts || !ta) return;
    sl_tensor xo[2][2], yo[2][2], x[2][2], y[2][2];
    shards_of(ta, X, Y, xo[0], yo[0], x[0], y[0]);
    shards_of(ta, X2, Y, xo[1], yo[1], x[1], y[1]);
    float want[STEPS], got[STEPS + 1];
    sl_err err;
    for (int s = 0; s < STEPS; s++) {
        CHECK_OK(sl_trainer_step(ts, x[s % 2], y[s % 2], &want[s], &err), &err);
        CHECK_OK(sl_trainer_step_async(ta, x[s % 2], y[s % 2], &got[s], &err), &err);
    }
    CHECK_OK(sl_trainer_wait(ta, &got[STEPS], &err), &err);
    CHECK_MSG(isnan(got[0]), "%s, %d GPU(s): a loss (%g) before any step was done", name, K,
              got[0]);
    for (int s = 0; s < STEPS; s++)
        CHECK_MSG(memcmp(&got[s + 1], &want[s], sizeof(float)) == 0,
                  "%s, %d GPU(s), step %d: pipelined loss %.9g, one by one %.9g", name, K, s,
                  got[s + 1], want[s]);
    CHECK_MSG(want[STEPS - 1] != want[STEPS - 3], "%s: the losses do not change", name);
    const int64_t P = sl_mlp_num_params(sl_trainer_model(ts, 0));
    float *a = malloc(sizeof(float) * P), *b = malloc(sizeof(float) * P);
    for (int k = 0; k < K; k++) {
        CHECK_OK(sl_mlp_get_params(sl_trainer_model(ts, k), a, P, &err), &err);
        CHECK_OK(sl_mlp_get_params(sl_trainer_model(ta, k), b, P, &err), &err);
        CHECK_MSG(memcmp(a, b, sizeof(float) * P) == 0,
                  "%s, %d GPU(s): pipelined parameters differ on replica %d", name, K, k);
    }
    printf("%s, %d GPU(s): %d pipelined steps give the losses and parameters of one by one\n", name,
           K, STEPS);
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < K; k++) {
            sl_tensor_free(&xo[i][k]);
            sl_tensor_free(&yo[i][k]);
        }
    free(a);
    free(b);
    sl_trainer_free(ts);
    sl_trainer_free(ta);
}

static void run(sl_optim_kind kind, const char *name) {
    sl_trainer *t1 = make(1, 1, kind), *t2 = make(2, 1, kind), *tc = make(1, 0, kind);
    if (!t1 || !t2 || !tc) return;
    sl_tensor xo1[1], yo1[1], x1[1], y1[1], xo2[2], yo2[2], x2[2], y2[2], xoc[1], yoc[1], xc[1],
        yc[1];
    shards(t1, xo1, yo1, x1, y1);
    shards(t2, xo2, yo2, x2, y2);
    shards(tc, xoc, yoc, xc, yc);
    const int64_t P = sl_mlp_num_params(sl_trainer_model(t1, 0));
    float *a = malloc(sizeof(float) * P), *b = malloc(sizeof(float) * P),
          *c = malloc(sizeof(float) * P), *p0 = malloc(sizeof(float) * P);
    sl_err err;
    CHECK_OK(sl_mlp_get_params(sl_trainer_model(t1, 0), p0, P, &err), &err);
    double worst_p = 0, worst_g = 0, worst_cpu = 0;
    for (int step = 0; step < 5; step++) {
        float l1 = 0, l2 = 0, lc = 0;
        CHECK_OK(sl_trainer_step(t1, x1, y1, &l1, &err), &err);
        CHECK_OK(sl_trainer_step(t2, x2, y2, &l2, &err), &err);
        CHECK_OK(sl_trainer_step(tc, xc, yc, &lc, &err), &err);
        CHECK_MSG(fabs(l1 - l2) <= 1e-5 * fabs(l1), "%s step %d: loss 1 GPU %.9g, 2 GPUs %.9g",
                  name, step, l1, l2);
        CHECK_MSG(fabs(l1 - lc) <= 1e-4 * fabs(lc), "%s step %d: loss GPU %.9g, CPU %.9g", name,
                  step, l1, lc);
        /* the averaged gradients (replica 0 of 2) and the update, relative to its size */
        CHECK_OK(sl_mlp_get_grads(sl_trainer_model(t1, 0), a, P, &err), &err);
        CHECK_OK(sl_mlp_get_grads(sl_trainer_model(t2, 0), b, P, &err), &err);
        double rg = rel_normwise(b, a, P);
        worst_g = rg > worst_g ? rg : worst_g;
        /* with Adam, near-zero gradients make rounding-level differences into updates of size lr
         * (sign flips), so after the first update the two runs see slightly different weights */
        if (kind == SL_OPTIM_SGD || step == 0)
            CHECK_MSG(rg <= 1e-5, "%s step %d: gradients 2 GPUs vs 1 GPU differ by %.3g", name,
                      step, rg);
        CHECK_OK(sl_mlp_get_params(sl_trainer_model(t1, 0), a, P, &err), &err);
        CHECK_OK(sl_mlp_get_params(sl_trainer_model(t2, 0), b, P, &err), &err);
        CHECK_OK(sl_mlp_get_params(sl_trainer_model(t2, 1), c, P, &err), &err);
        CHECK_MSG(memcmp(b, c, sizeof(float) * P) == 0, "%s step %d: replicas differ", name, step);
        /* parameters after the update: 2 GPUs vs 1 GPU, and the 1-GPU trainer vs the CPU one
         * (differences of updates alone would measure float32 rounding of p - lr*g) */
        double rp = rel_normwise(b, a, P);
        worst_p = rp > worst_p ? rp : worst_p;
        const double tol = kind == SL_OPTIM_SGD ? 1e-5 : 1e-2; /* Adam: see above */
        CHECK_MSG(rp <= tol, "%s step %d: parameters 2 GPUs vs 1 GPU differ by %.3g", name, step,
                  rp);
        CHECK_OK(sl_mlp_get_params(sl_trainer_model(tc, 0), c, P, &err), &err);
        double rc = rel_normwise(a, c, P);
        worst_cpu = rc > worst_cpu ? rc : worst_cpu;
        CHECK_MSG(rc <= 10 * tol, "%s step %d: GPU vs CPU parameters differ by %.3g", name, step,
                  rc);
        if (step == 0)
            printf("%s step 0: loss 1 GPU %.9g, 2 GPUs %.9g, CPU %.9g\n", name, l1, l2, lc);
    }
    printf("%s, 5 steps: 2 GPUs vs 1 GPU: gradients %.3g, parameters %.3g; GPU vs CPU parameters "
           "%.3g (max |d| / max |x|)\n",
           name, worst_g, worst_p, worst_cpu);

    /* evaluation on replica 0 of the 2-GPU trainer, device images and one-hot labels */
    int64_t c1 = -1, c2 = -2;
    double s1 = 0, s2 = 0;
    CHECK_OK(sl_mlp_evaluate(sl_trainer_model(t2, 0), &x2[0], &y2[0], &c2, &s2, &err), &err);
    CHECK_OK(sl_mlp_evaluate(sl_trainer_model(t1, 0), &x2[0], &y2[0], &c1, &s1, &err), &err);
    CHECK_EQ_INT(c1, c2);
    CHECK(fabs(s1 - s2) <= 1e-4 * fabs(s1));

    /* sync: replica 1 gets replica 0's state after being disturbed */
    for (int64_t i = 0; i < P; i++) a[i] = 0.5f;
    CHECK_OK(sl_mlp_set_params(sl_trainer_model(t2, 1), a, P, &err), &err);
    CHECK_OK(sl_trainer_sync(t2, &err), &err);
    CHECK_OK(sl_mlp_get_params(sl_trainer_model(t2, 0), b, P, &err), &err);
    CHECK_OK(sl_mlp_get_params(sl_trainer_model(t2, 1), c, P, &err), &err);
    CHECK(memcmp(b, c, sizeof(float) * P) == 0);

    for (int k = 0; k < 2; k++) {
        sl_tensor_free(&xo2[k]);
        sl_tensor_free(&yo2[k]);
    }
    sl_tensor_free(&xo1[0]);
    sl_tensor_free(&yo1[0]);
    sl_trainer_free(t1);
    sl_trainer_free(t2);
    sl_trainer_free(tc);
    free(a);
    free(b);
    free(c);
    free(p0);
}

int main(void) {
    gpu_require(2);
    for (int i = 0; i < B * IN; i++) X[i] = frand();
    for (int r = 0; r < B; r++) {
        int k = (int)(frand() * C) % C;
        for (int j = 0; j < C; j++) Y[r * C + j] = j == k ? 1.0f : 0.0f;
    }
    run(SL_OPTIM_SGD, "sgd");
    run(SL_OPTIM_ADAM, "adam");
    for (int K = 1; K <= 2; K++) {
        pipelined(K, SL_OPTIM_SGD, "sgd");
        pipelined(K, SL_OPTIM_ADAM, "adam");
    }
    return check_done();
}
