/* SPDX-License-Identifier: Apache-2.0 */
/* sl_optim against hand-computed updates: plain SGD (the seed's), SGD with weight decay, momentum
 * and Nesterov momentum (PyTorch semantics), Adam with L2 weight decay and AdamW (values worked out
 * in double with PyTorch's formulas); the update of the model through sl_optim_step; the state
 * round trip (a restored optimiser continues bit for bit); and argument checks. */
#include "check.h"
#include "sluice/train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static sl_optim *make(sl_optim_kind kind, float lr, float wd, float mom, int nesterov, int64_t n) {
    sl_optim_config c;
    sl_optim_config_default(&c);
    c.kind = kind;
    c.lr = lr;
    c.weight_decay = wd;
    c.momentum = mom;
    c.nesterov = nesterov;
    sl_optim *o = NULL;
    sl_err err;
    CHECK_OK(sl_optim_create(&c, n, sl_cpu(), &o, &err), &err);
    return o;
}

static void step(sl_optim *o, float *p, float *g, int64_t n) {
    sl_tensor tp, tg;
    int64_t s[1] = {n};
    sl_tensor_wrap(&tp, p, SL_DTYPE_F32, sl_cpu(), 1, s, NULL);
    sl_tensor_wrap(&tg, g, SL_DTYPE_F32, sl_cpu(), 1, s, NULL);
    sl_err err;
    CHECK_OK(sl_optim_apply(o, &tp, &tg, &err), &err);
}

#define REL(a, b) CHECK_NEAR((a), (b), 2e-6 * fabs((double)(b)) + 1e-7)

static void test_sgd(void) {
    sl_optim_config c;
    sl_optim_config_default(&c);
    CHECK_EQ_INT(c.kind, SL_OPTIM_SGD);
    CHECK(c.lr == 0.001f);
    CHECK(c.momentum == 0);

    sl_optim *o = make(SL_OPTIM_SGD, 0.1f, 0, 0, 0, 3);
    float p[3] = {1, -2, 0.5f}, g[3] = {0.5f, 1, -4};
    step(o, p, g, 3);
    REL(p[0], 0.95);
    REL(p[1], -2.1);
    REL(p[2], 0.9);
    CHECK_EQ_INT(sl_optim_steps(o), 1);
    sl_optim_free(o);

    o = make(SL_OPTIM_SGD, 0.1f, 0.01f, 0, 0, 3);
    float q[3] = {1, -2, 0.5f};
    step(o, q, g, 3);
    REL(q[0], 0.949);  /* 1 - 0.1 * (0.5 + 0.01) */
    REL(q[1], -2.098); /* -2 - 0.1 * (1 - 0.02) */
    REL(q[2], 0.8995); /* 0.5 - 0.1 * (-4 + 0.005) */
    sl_optim_free(o);

    /* momentum 0.9, lr 0.1, gradient 1 each step: buf 1, 1.9, 2.71 */
    o = make(SL_OPTIM_SGD, 0.1f, 0, 0.9f, 0, 1);
    float pm = 1, gm = 1;
    step(o, &pm, &gm, 1);
    REL(pm, 0.9);
    step(o, &pm, &gm, 1);
    REL(pm, 0.71);
    step(o, &pm, &gm, 1);
    REL(pm, 0.439);
    sl_optim_free(o);

    /* Nesterov: d = g + mu * buf: 1.9, then 2.71 */
    o = make(SL_OPTIM_SGD, 0.1f, 0, 0.9f, 1, 1);
    pm = 1;
    step(o, &pm, &gm, 1);
    REL(pm, 0.81);
    step(o, &pm, &gm, 1);
    REL(pm, 0.539);
    sl_optim_free(o);
}

static void test_adam(void) {
    /* lr 0.01, gradients 1, -3, 0.25 from p = 0.5 */
    sl_optim *o = make(SL_OPTIM_ADAM, 0.01f, 0, 0, 0, 1);
    float p = 0.5f;
    const float gs[3] = {1, -3, 0.25f};
    const double want[3] = {0.4900000001, 0.49494189841087444, 0.498246373928774};
    for (int i = 0; i < 3; i++) {
        float g = gs[i];
        step(o, &p, &g, 1);
        REL(p, want[i]);
    }
    sl_optim_free(o);

    /* with L2 weight decay 0.1 (Adam) and decoupled (AdamW), lr 0.1, from -2 */
    const float g2[3] = {0.5f, 0.5f, -1};
    const double want_l2[3] = {-2.099999996666667, -2.199897286205717, -2.1644210226605334};
    const double want_w[3] = {-2.079999998, -2.1591999960199995, -2.130043063091088};
    for (int kind = 0; kind < 2; kind++) {
        o = make(kind == 0 ? SL_OPTIM_ADAM : SL_OPTIM_ADAMW, 0.1f, 0.1f, 0, 0, 1);
        p = -2;
        for (int i = 0; i < 3; i++) {
            float g = g2[i];
            step(o, &p, &g, 1);
            REL(p, kind == 0 ? want_l2[i] : want_w[i]);
        }
        sl_optim_free(o);
    }
}

static void test_state_and_model(void) {
    sl_err err;
    const int64_t n = 1000;
    float *p1 = malloc(n * 4), *p2 = malloc(n * 4), *g = malloc(n * 4);
    for (int64_t i = 0; i < n; i++) {
        p1[i] = p2[i] = (float)sin((double)i);
        g[i] = (float)cos(0.3 * (double)i);
    }
    for (int kind = 0; kind < 3; kind++) {
        sl_optim *a = kind == 0   ? make(SL_OPTIM_SGD, 0.05f, 0.01f, 0.9f, 0, n)
                      : kind == 1 ? make(SL_OPTIM_ADAM, 0.01f, 0, 0, 0, n)
                                  : make(SL_OPTIM_SGD, 0.05f, 0, 0, 0, n);
        sl_optim *b = kind == 0   ? make(SL_OPTIM_SGD, 0.05f, 0.01f, 0.9f, 0, n)
                      : kind == 1 ? make(SL_OPTIM_ADAM, 0.01f, 0, 0, 0, n)
                                  : make(SL_OPTIM_SGD, 0.05f, 0, 0, 0, n);
        if (!a || !b) return;
        step(a, p1, g, n);
        step(a, p1, g, n);
        memcpy(p2, p1, n * 4);
        size_t size = 0;
        CHECK_OK(sl_optim_serialize(a, NULL, 0, &size, &err), &err);
        unsigned char *buf = malloc(size);
        CHECK_OK(sl_optim_serialize(a, buf, size, &size, &err), &err);
        CHECK_OK(sl_optim_deserialize(b, buf, size, &err), &err);
        CHECK_EQ_INT(sl_optim_steps(b), 2);
        step(a, p1, g, n);
        step(b, p2, g, n);
        CHECK(memcmp(p1, p2, n * 4) == 0);
        CHECK_FAILS(sl_optim_deserialize(b, buf, size - 1, &err), SL_EFORMAT, &err, "truncated");
        if (size > 44) {
            buf[44] ^= 4;
            CHECK_FAILS(sl_optim_deserialize(b, buf, size, &err), SL_ECHECKSUM, &err, "checksum");
        }
        free(buf);
        sl_optim_free(a);
        sl_optim_free(b);
    }
    /* a state of one kind does not load into another */
    sl_optim *sgd = make(SL_OPTIM_SGD, 0.1f, 0, 0, 0, n),
             *adam = make(SL_OPTIM_ADAM, 0.1f, 0, 0, 0, n);
    size_t size = 0;
    sl_optim_serialize(sgd, NULL, 0, &size, NULL);
    unsigned char *buf = malloc(size);
    CHECK_OK(sl_optim_serialize(sgd, buf, size, &size, &err), &err);
    CHECK_FAILS(sl_optim_deserialize(adam, buf, size, &err), SL_EINVAL, &err, "kind");
    free(buf);
    sl_optim_free(sgd);
    sl_optim_free(adam);

    /* sl_optim_step updates the model's params from its grads */
    sl_mlp_config mc;
    sl_mlp_config_default(&mc);
    mc.nsizes = 2;
    mc.sizes[0] = 4;
    mc.sizes[1] = 3;
    sl_mlp *m = NULL;
    CHECK_OK(sl_mlp_create(&mc, sl_cpu(), &m, &err), &err);
    sl_optim *o = make(SL_OPTIM_SGD, 0.5f, 0, 0, 0, 15);
    if (m && o) {
        float before[15], after[15], grads[15];
        for (int i = 0; i < 15; i++) grads[i] = (float)i;
        sl_mlp_get_params(m, before, 15, NULL);
        CHECK_OK(sl_mlp_set_grads(m, grads, 15, &err), &err);
        CHECK_OK(sl_optim_step(o, m, &err), &err);
        sl_mlp_get_params(m, after, 15, NULL);
        for (int i = 0; i < 15; i++) CHECK(after[i] == before[i] - 0.5f * (float)i);
    }
    sl_mlp_free(m);
    sl_optim_free(o);

    /* argument checks */
    sl_optim_config c;
    sl_optim_config_default(&c);
    c.lr = -1;
    CHECK_FAILS(sl_optim_create(&c, 3, sl_cpu(), &o, &err), SL_EINVAL, &err, "learning rate");
    sl_optim_config_default(&c);
    c.momentum = 1.5f;
    CHECK_FAILS(sl_optim_create(&c, 3, sl_cpu(), &o, &err), SL_EINVAL, &err, "momentum");
    sl_optim_config_default(&c);
    c.nesterov = 1;
    CHECK_FAILS(sl_optim_create(&c, 3, sl_cpu(), &o, &err), SL_EINVAL, &err, "Nesterov");
    sl_optim_config_default(&c);
    CHECK_FAILS(sl_optim_parse_kind("lion", &c, &err), SL_EINVAL, &err, "lion");
    CHECK_OK(sl_optim_parse_kind("adam", &c, &err), &err);
    CHECK_EQ_INT(c.kind, SL_OPTIM_ADAM);
    CHECK_OK(sl_optim_parse_kind("momentum", &c, &err), &err);
    CHECK(c.kind == SL_OPTIM_SGD && c.momentum == 0.9f);
    o = make(SL_OPTIM_SGD, 0.1f, 0, 0, 0, 3);
    float four[4] = {0};
    sl_tensor t4, t3;
    int64_t s4[1] = {4}, s3[1] = {3};
    sl_tensor_wrap(&t4, four, SL_DTYPE_F32, sl_cpu(), 1, s4, NULL);
    sl_tensor_wrap(&t3, four, SL_DTYPE_F32, sl_cpu(), 1, s3, NULL);
    CHECK_FAILS(sl_optim_apply(o, &t4, &t3, &err), SL_EINVAL, &err, "float32[3]");
    CHECK_EQ_INT(sl_optim_steps(o), 0);
    sl_optim_free(o);
    free(p1);
    free(p2);
    free(g);
}

int main(void) {
    test_sgd();
    test_adam();
    test_state_and_model();
    return check_done();
}
