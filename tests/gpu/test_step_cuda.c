/* SPDX-License-Identifier: Apache-2.0 */
/* The one-GPU training step (the trainer's single graph: the output head kernel, the head's sums on
 * the second stream, the update split by layers) against the CPU trainer, over model shapes that
 * take each path: a two-layer model (the head right after the first layer), a head of 16 classes
 * over several rounds of rows, a model whose last layer is too narrow in K for the head (33
 * inputs), a one-layer model, and the seed's. For SGD and momentum the update of every parameter
 * (after - before) must match the CPU's within 1e-4 of the largest update (lr 0.1, so that the
 * updates stand well above float32 rounding of the parameters); for Adam, the losses within 1e-4
 * and the parameters as test_trainer_cuda checks them. Graphs on and off must give the same bits.
 * Runs on one GPU. */
#include "check.h"
#include "gpu.h"
#include "sluice/train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static float frand(void) {
    return check_frand(&rng_state);
}

#define STEPS 3

typedef struct shape {
    const char *name;
    int nsizes, sizes[5];
    sl_activation act;
    int64_t rows;
} shape;

/* a trainer of one replica on dev for s, with optimiser kind (lr and momentum given) and graphs on
 * or off */
static sl_trainer *make(const shape *s, sl_device dev, sl_optim_kind kind, float lr, float mu,
                        int graph) {
    sl_trainer_config cfg;
    sl_trainer_config_default(&cfg);
    cfg.model.nsizes = s->nsizes;
    memcpy(cfg.model.sizes, s->sizes, sizeof(int) * (size_t)s->nsizes);
    cfg.model.activation = s->act;
    cfg.model.seed = 5;
    cfg.model.cuda_graph = graph;
    cfg.optim.kind = kind;
    cfg.optim.lr = lr;
    cfg.optim.momentum = mu;
    cfg.replicas = 1;
    cfg.devices[0] = dev;
    sl_trainer *t = NULL;
    sl_err err;
    CHECK_OK(sl_trainer_create(&cfg, &t, &err), &err);
    return t;
}

/* STEPS steps of t on (x, y) (host arrays, copied to the trainer's device); losses and the
 * parameters before and after into the caller's arrays */
static void run(sl_trainer *t, const float *x, const float *y, const shape *s, float *loss,
                float *before, float *after) {
    sl_err err;
    sl_mlp *m = sl_trainer_model(t, 0);
    const int64_t P = sl_mlp_num_params(m);
    const int in = s->sizes[0], C = s->sizes[s->nsizes - 1];
    int64_t xs[2] = {s->rows, in}, ys[2] = {s->rows, C};
    sl_tensor hx, hy, dx, dy;
    sl_tensor_wrap(&hx, (void *)x, SL_DTYPE_F32, sl_cpu(), 2, xs, NULL);
    sl_tensor_wrap(&hy, (void *)y, SL_DTYPE_F32, sl_cpu(), 2, ys, NULL);
    const sl_device d = sl_mlp_device(m);
    CHECK_OK(sl_tensor_alloc(&dx, SL_DTYPE_F32, d, 2, xs, NULL, &err), &err);
    CHECK_OK(sl_tensor_alloc(&dy, SL_DTYPE_F32, d, 2, ys, NULL, &err), &err);
    CHECK_OK(sl_tensor_copy(&dx, &hx, NULL, &err), &err);
    CHECK_OK(sl_tensor_copy(&dy, &hy, NULL, &err), &err);
    CHECK_OK(sl_mlp_get_params(m, before, P, &err), &err);
    for (int i = 0; i < STEPS; i++) CHECK_OK(sl_trainer_step(t, &dx, &dy, &loss[i], &err), &err);
    CHECK_OK(sl_mlp_get_params(m, after, P, &err), &err);
    sl_tensor_free(&dx);
    sl_tensor_free(&dy);
}

static void check_shape(const shape *s, sl_optim_kind kind, float mu, const char *oname) {
    const int in = s->sizes[0], C = s->sizes[s->nsizes - 1];
    float *x = malloc(sizeof(float) * (size_t)(s->rows * in));
    float *y = calloc((size_t)(s->rows * C), sizeof(float));
    for (int64_t i = 0; i < s->rows * in; i++) x[i] = frand() - 0.5f;
    for (int64_t r = 0; r < s->rows; r++) y[r * C + (int)(frand() * C) % C] = 1.0f;
    const float lr = kind == SL_OPTIM_ADAM ? 0.001f : 0.1f;
    sl_trainer *tc = make(s, sl_cpu(), kind, lr, mu, 0), *tg = make(s, sl_cuda(0), kind, lr, mu, 1),
               *tn = make(s, sl_cuda(0), kind, lr, mu, 0);
    if (!tc || !tg || !tn) goto out;
    const int64_t P = sl_mlp_num_params(sl_trainer_model(tc, 0));
    float *b[3], *a[3], loss[3][STEPS];
    for (int i = 0; i < 3; i++) {
        b[i] = malloc(sizeof(float) * P);
        a[i] = malloc(sizeof(float) * P);
    }
    run(tc, x, y, s, loss[0], b[0], a[0]);
    run(tg, x, y, s, loss[1], b[1], a[1]);
    run(tn, x, y, s, loss[2], b[2], a[2]);
    CHECK_MSG(memcmp(b[0], b[1], sizeof(float) * P) == 0, "%s: initial weights differ", s->name);
    CHECK_MSG(memcmp(a[1], a[2], sizeof(float) * P) == 0 &&
                  memcmp(loss[1], loss[2], sizeof loss[1]) == 0,
              "%s, %s: graphs on and off give different bits", s->name, oname);
    for (int i = 0; i < STEPS; i++)
        CHECK_MSG(fabsf(loss[1][i] - loss[0][i]) <= 1e-4f * fabsf(loss[0][i]),
                  "%s, %s, step %d: loss GPU %.9g, CPU %.9g", s->name, oname, i, loss[1][i],
                  loss[0][i]);
    /* the updates, relative to the largest one */
    double dmax = 0, worst = 0, pmax = 0, pworst = 0;
    for (int64_t i = 0; i < P; i++) {
        const double uc = (double)a[0][i] - b[0][i], ug = (double)a[1][i] - b[1][i];
        dmax = fmax(dmax, fabs(uc));
        worst = fmax(worst, fabs(ug - uc));
        pmax = fmax(pmax, fabs(a[0][i]));
        pworst = fmax(pworst, fabs((double)a[1][i] - a[0][i]));
    }
    CHECK_MSG(dmax > 0, "%s, %s: the CPU steps changed nothing", s->name, oname);
    if (kind == SL_OPTIM_ADAM) /* near-zero gradients flip Adam's update: test_trainer_cuda */
        CHECK_MSG(pworst <= 1e-2 * pmax, "%s, adam: parameters GPU vs CPU differ by %.3g of %.3g",
                  s->name, pworst, pmax);
    else
        CHECK_MSG(worst <= 1e-4 * dmax, "%s, %s: updates GPU vs CPU differ by %.3g of %.3g",
                  s->name, oname, worst, dmax);
    printf(
        "%s, %s: losses %.6g -> %.6g; updates GPU vs CPU %.3g of %.3g; graphs on/off same bits\n",
        s->name, oname, loss[1][0], loss[1][STEPS - 1], worst, dmax);
    for (int i = 0; i < 3; i++) {
        free(b[i]);
        free(a[i]);
    }
out:
    sl_trainer_free(tc);
    sl_trainer_free(tg);
    sl_trainer_free(tn);
    free(x);
    free(y);
}

int main(void) {
    gpu_require(1);
    static const shape shapes[] = {
        {"36-64-8 tanh, B 300 (head after the first layer, two rounds)",
         3,
         {36, 64, 8},
         SL_ACT_TANH,
         300},
        {"52-96-128-16 relu, B 700 (16 classes, three rounds)",
         4,
         {52, 96, 128, 16},
         SL_ACT_RELU,
         700},
        {"37-65-130-33-7 relu, B 50 (no head: 33 inputs)",
         5,
         {37, 65, 130, 33, 7},
         SL_ACT_RELU,
         50},
        {"20-5 (one layer)", 2, {20, 5}, SL_ACT_TANH, 64},
        {"seed 784-1024-1024-10, B 200", 4, {784, 1024, 1024, 10}, SL_ACT_TANH, 200},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        check_shape(&shapes[i], SL_OPTIM_SGD, 0.0f, "sgd");
        check_shape(&shapes[i], SL_OPTIM_SGD, 0.9f, "momentum");
        check_shape(&shapes[i], SL_OPTIM_ADAM, 0.0f, "adam");
    }
    return check_done();
}
