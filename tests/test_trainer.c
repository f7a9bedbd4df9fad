/* SPDX-License-Identifier: Apache-2.0 */
/* sl_trainer, data-parallel in one process: one step (and three) on cpu:4 equals the same steps on
 * cpu:1 with the same global batch of 200 (gradients and parameter updates within 1e-5 relative;
 * the seed's model); all replicas hold bit-identical parameters after every step; cpu:1 equals a
 * plain loop of sl_mlp_loss_grad + sl_optim_step bit for bit; bad shards are refused before any
 * replica starts (the trainer stays usable); sl_trainer_sync copies replica 0 everywhere;
 * pipelined steps (sl_trainer_step_async + sl_trainer_wait) give each step's loss one call later,
 * the same losses and parameters as sl_trainer_step, bit for bit; a bad batch is refused without
 * losing the step in flight. */
#include "check.h"
#include "sluice/train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { B = 200, IN = 784, C = 10 };

static void make_batch(float *x, float *y, unsigned seed) {
    srand(seed);
    for (int i = 0; i < B * IN; i++) x[i] = (float)(rand() % 256) / 255.0f;
    memset(y, 0, sizeof(float) * B * C);
    for (int r = 0; r < B; r++) y[r * C + rand() % C] = 1.0f;
}

static sl_trainer *make_trainer(int K, float lr) {
    sl_trainer_config cfg;
    sl_trainer_config_default(&cfg);
    cfg.replicas = K;
    for (int k = 0; k < K; k++) cfg.devices[k] = sl_cpu();
    cfg.optim.lr = lr;
    sl_trainer *t = NULL;
    sl_err err;
    CHECK_OK(sl_trainer_create(&cfg, &t, &err), &err);
    return t;
}

/* max |a - b| over max |b|: the error relative to the buffer's scale */
static double rel_err(const float *a, const float *b, int64_t n) {
    double d = 0, s = 0;
    for (int64_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - (double)b[i]));
        s = fmax(s, fabs((double)b[i]));
    }
    return s > 0 ? d / s : d;
}

static void test_equivalence(void) {
    sl_err err;
    float *x = malloc(sizeof(float) * B * IN), *y = malloc(sizeof(float) * B * C);
    sl_tensor tx, ty;
    int64_t sx[2] = {B, IN}, sy[2] = {B, C};
    sl_tensor_wrap(&tx, x, SL_DTYPE_F32, sl_cpu(), 2, sx, NULL);
    sl_tensor_wrap(&ty, y, SL_DTYPE_F32, sl_cpu(), 2, sy, NULL);
    /* a large learning rate, so that the update is far above float noise and a wrong average
     * (a sum, or one replica's gradient) could not hide */
    const float lr = 0.5f;
    sl_trainer *t1 = make_trainer(1, lr), *t4 = make_trainer(4, lr);
    if (!t1 || !t4) return;
    CHECK_EQ_INT(sl_trainer_replicas(t4), 4);
    const int64_t P = sl_mlp_num_params(sl_trainer_model(t1, 0));
    float *p0 = malloc(P * 4), *p1 = malloc(P * 4), *p4 = malloc(P * 4), *pk = malloc(P * 4);
    float *g1 = malloc(P * 4), *g4 = malloc(P * 4), *d1 = malloc(P * 4), *d4 = malloc(P * 4);
    /* the plain loop that cpu:1 must equal */
    sl_mlp *ref = NULL;
    sl_optim *ropt = NULL;
    CHECK_OK(sl_mlp_create(NULL, sl_cpu(), &ref, &err), &err);
    sl_optim_config oc;
    sl_optim_config_default(&oc);
    oc.lr = lr;
    CHECK_OK(sl_optim_create(&oc, P, sl_cpu(), &ropt, &err), &err);
    for (int step = 0; step < 3; step++) {
        make_batch(x, y, 100 + step);
        sl_mlp_get_params(sl_trainer_model(t1, 0), p0, P, NULL);
        float l1 = 0, l4 = 0, lr_ = 0;
        CHECK_OK(sl_trainer_step_global(t1, &tx, &ty, &l1, &err), &err);
        CHECK_OK(sl_trainer_step_global(t4, &tx, &ty, &l4, &err), &err);
        CHECK_OK(sl_mlp_loss_grad(ref, &tx, &ty, &lr_, &err), &err);
        CHECK_OK(sl_optim_step(ropt, ref, &err), &err);
        CHECK(l1 > 0 && isfinite(l1));
        CHECK(l1 == lr_);
        CHECK_NEAR(l4, l1, 1e-5 * l1);
        sl_mlp_get_params(sl_trainer_model(t1, 0), p1, P, NULL);
        sl_mlp_get_params(ref, pk, P, NULL);
        CHECK_MSG(memcmp(p1, pk, P * 4) == 0, "step %d: cpu:1 differs from the plain loop", step);
        /* after the step the grads buffers hold the averaged gradient */
        sl_mlp_get_grads(sl_trainer_model(t1, 0), g1, P, NULL);
        sl_mlp_get_grads(sl_trainer_model(t4, 0), g4, P, NULL);
        double ge = rel_err(g4, g1, P);
        CHECK_MSG(ge <= 1e-5, "step %d: cpu:4 gradient differs from cpu:1 by %.3g relative", step,
                  ge);
        sl_mlp_get_params(sl_trainer_model(t4, 0), p4, P, NULL);
        if (step == 0) {
            /* the first step starts from the same weights: compare the updates themselves */
            for (int64_t i = 0; i < P; i++) {
                d1[i] = p1[i] - p0[i];
                d4[i] = p4[i] - p0[i];
            }
            double de = rel_err(d4, d1, P);
            CHECK_MSG(de <= 1e-5, "step 0: cpu:4 update differs from cpu:1 by %.3g relative", de);
            double dmax = 0;
            for (int64_t i = 0; i < P; i++) dmax = fmax(dmax, fabs(d1[i]));
            CHECK(dmax > 1e-3); /* the step did move the weights */
        }
        double pe = rel_err(p4, p1, P);
        CHECK_MSG(pe <= 1e-5, "step %d: cpu:4 params differ from cpu:1 by %.3g relative", step, pe);
        for (int k = 1; k < 4; k++) {
            sl_mlp_get_params(sl_trainer_model(t4, k), pk, P, NULL);
            CHECK_MSG(memcmp(pk, p4, P * 4) == 0, "step %d: replica %d differs from replica 0",
                      step, k);
        }
    }

    /* bad shards: refused up front, nothing moves, the trainer still works */
    sl_mlp_get_params(sl_trainer_model(t4, 0), p0, P, NULL);
    sl_tensor xs[4], ys[4];
    for (int k = 0; k < 4; k++) {
        sl_tensor_slice(&tx, 0, k * 50, (k + 1) * 50, &xs[k], NULL);
        sl_tensor_slice(&ty, 0, k * 50, (k + 1) * 50, &ys[k], NULL);
    }
    sl_tensor saved = ys[2];
    ys[2].shape[0] = 49;
    CHECK_FAILS(sl_trainer_step(t4, xs, ys, NULL, &err), SL_EINVAL, &err, "shard 2");
    ys[2] = saved;
    xs[3].device = sl_cuda(0);
    CHECK_FAILS(sl_trainer_step(t4, xs, ys, NULL, &err), SL_EINVAL, &err, "device");
    sl_tensor_slice(&tx, 0, 150, 200, &xs[3], NULL);
    sl_mlp_get_params(sl_trainer_model(t4, 1), p4, P, NULL);
    CHECK(memcmp(p0, p4, P * 4) == 0);
    sl_tensor odd;
    sl_tensor_slice(&tx, 0, 0, 198, &odd, NULL);
    CHECK_FAILS(sl_trainer_step_global(t4, &odd, &ty, NULL, &err), SL_EINVAL, &err, "");
    /* per-replica shards of different sizes are allowed */
    sl_tensor_slice(&tx, 0, 0, 20, &xs[0], NULL);
    sl_tensor_slice(&ty, 0, 0, 20, &ys[0], NULL);
    float l = 0;
    CHECK_OK(sl_trainer_step(t4, xs, ys, &l, &err), &err);
    CHECK(l > 0);

    /* sync: replica 0's weights everywhere */
    memset(p4, 0, P * 4);
    CHECK_OK(sl_mlp_set_params(sl_trainer_model(t4, 0), p4, P, &err), &err);
    CHECK_OK(sl_trainer_sync(t4, &err), &err);
    sl_mlp_get_params(sl_trainer_model(t4, 3), pk, P, NULL);
    CHECK(memcmp(pk, p4, P * 4) == 0);

    sl_mlp_free(ref);
    sl_optim_free(ropt);
    sl_trainer_free(t1);
    sl_trainer_free(t4);
    free(p0);
    free(p1);
    free(p4);
    free(pk);
    free(g1);
    free(g4);
    free(d1);
    free(d4);
    free(x);
    free(y);
}

/* Four steps on two batches in turn, pipelined on one trainer and one by one on another */
static void test_pipelined(int K) {
    sl_err err;
    float *x[2], *y[2];
    sl_tensor tx[2], ty[2];
    int64_t sx[2] = {B, IN}, sy[2] = {B, C};
    for (int i = 0; i < 2; i++) {
        x[i] = malloc(sizeof(float) * B * IN);
        y[i] = malloc(sizeof(float) * B * C);
        make_batch(x[i], y[i], 7 + i);
        sl_tensor_wrap(&tx[i], x[i], SL_DTYPE_F32, sl_cpu(), 2, sx, NULL);
        sl_tensor_wrap(&ty[i], y[i], SL_DTYPE_F32, sl_cpu(), 2, sy, NULL);
    }
    sl_trainer *ts = make_trainer(K, 0.05f), *ta = make_trainer(K, 0.05f);
    if (!ts || !ta) return;
    float want[4], got[5], l = 0;
    CHECK_OK(sl_trainer_wait(ta, &l, &err), &err); /* nothing in flight: NAN, no error */
    CHECK(isnan(l));
    for (int s = 0; s < 4; s++) {
        CHECK_OK(sl_trainer_step_global(ts, &tx[s % 2], &ty[s % 2], &want[s], &err), &err);
        sl_tensor xs[4], ys[4];
        for (int k = 0; k < K; k++) {
            CHECK_OK(sl_tensor_slice(&tx[s % 2], 0, k * (B / K), (k + 1) * (B / K), &xs[k], &err),
                     &err);
            CHECK_OK(sl_tensor_slice(&ty[s % 2], 0, k * (B / K), (k + 1) * (B / K), &ys[k], &err),
                     &err);
        }
        CHECK_OK(sl_trainer_step_async(ta, xs, ys, &got[s], &err), &err);
    }
    /* a bad batch is refused before anything is queued: the step in flight is still waited for */
    sl_tensor bad;
    CHECK_OK(sl_tensor_slice(&tx[0], 1, 0, IN - 1, &bad, &err), &err);
    sl_tensor bads[4] = {bad, bad, bad, bad};
    float none = 0;
    CHECK_FAILS(sl_trainer_step_async(ta, bads, bads, &none, &err), SL_EINVAL, &err, "shard 0");
    CHECK_OK(sl_trainer_wait(ta, &got[4], &err), &err);
    CHECK_MSG(isnan(got[0]), "cpu:%d: the first pipelined step gave a loss (%g) before the next", K,
              got[0]);
    for (int s = 0; s < 4; s++)
        CHECK_MSG(memcmp(&got[s + 1], &want[s], sizeof(float)) == 0,
                  "cpu:%d step %d: pipelined loss %.9g, one by one %.9g", K, s, got[s + 1],
                  want[s]);
    CHECK_OK(sl_trainer_wait(ta, &l, &err), &err);
    CHECK(isnan(l));
    const int64_t P = sl_mlp_num_params(sl_trainer_model(ts, 0));
    float *ps = malloc(P * 4), *pa = malloc(P * 4);
    CHECK_OK(sl_mlp_get_params(sl_trainer_model(ts, 0), ps, P, &err), &err);
    CHECK_OK(sl_mlp_get_params(sl_trainer_model(ta, K - 1), pa, P, &err), &err);
    CHECK_MSG(memcmp(ps, pa, P * 4) == 0, "cpu:%d: pipelined parameters differ", K);
    free(ps);
    free(pa);
    for (int i = 0; i < 2; i++) {
        free(x[i]);
        free(y[i]);
    }
    sl_trainer_free(ts);
    sl_trainer_free(ta);
}

static void test_config_errors(void) {
    sl_trainer_config cfg;
    sl_trainer_config_default(&cfg);
    cfg.replicas = 0;
    sl_trainer *t = NULL;
    sl_err err;
    CHECK_FAILS(sl_trainer_create(&cfg, &t, &err), SL_EINVAL, &err, "0 replicas");
    sl_trainer_config_default(&cfg);
    cfg.replicas = 2;
    cfg.devices[1] = sl_cuda(0);
    CHECK_FAILS(sl_trainer_create(&cfg, &t, &err), SL_EINVAL, &err, "CPUs and GPUs");
    CHECK(t == NULL);
}

int main(void) {
    test_equivalence();
    test_pipelined(1);
    test_pipelined(2);
    test_config_errors();
    return check_done();
}
