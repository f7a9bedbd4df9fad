/* SPDX-License-Identifier: Apache-2.0 */
/* The CUDA backend of sl_mlp and sl_optim against the CPU backend: forward (log-probabilities),
 * loss and gradients within 1e-4 relative in fp32 (seed model and an odd-sized relu model with
 * strided input rows); CUDA graphs on and off give the same bits, also when the batch size and the
 * input buffers change; TF32/BF16 stay close (BF16 also off the seed's path); evaluation with
 * device images and labels; and every optimiser gives the CPU's bits on the GPU (state saved and
 * restored across devices). */
#include "check.h"
#include "gpu.h"
#include "sluice/train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 88172645463325252ull;
static float frand(void) {
    return check_frand(&rng_state);
}

/* x: (B, ld) with the first n columns random in [0, 1); y: (B, C) one-hot */
static void make_batch(float *x, int64_t B, int n, int ld, float *y, int C, int32_t *ids) {
    for (int64_t r = 0; r < B; r++) {
        for (int j = 0; j < ld; j++) x[r * ld + j] = j < n ? frand() : -7.0f;
        int c = (int)(frand() * C) % C;
        for (int j = 0; j < C; j++) y[r * C + j] = j == c ? 1.0f : 0.0f;
        if (ids) ids[r] = c;
    }
}

/* a device copy of a host (B, cols) matrix with row pitch ld floats, viewed as (B, cols) */
static void to_device(const float *host, int64_t B, int cols, int ld, int dev, sl_tensor *owner,
                      sl_tensor *view) {
    sl_err err;
    int64_t shape[2] = {B, ld};
    CHECK_OK(sl_tensor_alloc(owner, SL_DTYPE_F32, sl_cuda(dev), 2, shape, NULL, &err), &err);
    sl_tensor h;
    CHECK_OK(sl_tensor_wrap(&h, (void *)host, SL_DTYPE_F32, sl_cpu(), 2, shape, NULL), NULL);
    CHECK_OK(sl_tensor_copy(owner, &h, NULL, &err), &err);
    CHECK_OK(sl_tensor_slice(owner, 1, 0, cols, view, &err), &err);
}

static void host_view(const float *host, int64_t B, int cols, int ld, sl_tensor *view) {
    sl_err err;
    int64_t shape[2] = {B, ld};
    sl_tensor h;
    CHECK_OK(sl_tensor_wrap(&h, (void *)host, SL_DTYPE_F32, sl_cpu(), 2, shape, NULL), NULL);
    CHECK_OK(sl_tensor_slice(&h, 1, 0, cols, view, &err), &err);
}

/* compares forward/backward of a CPU and a GPU model of cfg on one batch */
static void compare_backends(const sl_mlp_config *cfg, int64_t B, int ld, const char *name) {
    sl_err err;
    sl_mlp *cpu = NULL, *gpu = NULL;
    CHECK_OK(sl_mlp_create(cfg, sl_cpu(), &cpu, &err), &err);
    CHECK_OK(sl_mlp_create(cfg, sl_cuda(0), &gpu, &err), &err);
    if (!cpu || !gpu) return;
    const int n = cfg->sizes[0], C = cfg->sizes[cfg->nsizes - 1];
    float *x = malloc(sizeof(float) * (size_t)(B * ld)),
          *y = malloc(sizeof(float) * (size_t)(B * C));
    make_batch(x, B, n, ld, y, C, NULL);
    sl_tensor xd_own, yd_own, xd, yd, xh, yh;
    to_device(x, B, n, ld, 0, &xd_own, &xd);
    to_device(y, B, C, C, 0, &yd_own, &yd);
    host_view(x, B, n, ld, &xh);
    host_view(y, B, C, C, &yh);

    const int64_t P = sl_mlp_num_params(cpu);
    float *pc = malloc(sizeof(float) * (size_t)P), *pg = malloc(sizeof(float) * (size_t)P);
    CHECK_OK(sl_mlp_get_params(cpu, pc, P, &err), &err);
    CHECK_OK(sl_mlp_get_params(gpu, pg, P, &err), &err);
    CHECK(memcmp(pc, pg, sizeof(float) * (size_t)P) == 0); /* same initial weights */

    float lc = 0, lg = 0;
    CHECK_OK(sl_mlp_loss_grad(cpu, &xh, &yh, &lc, &err), &err);
    CHECK_OK(sl_mlp_loss_grad(gpu, &xd, &yd, &lg, &err), &err);
    CHECK_MSG(fabs(lc - lg) <= 1e-5 * fabs(lc), "%s: loss cpu %.9g gpu %.9g", name, lc, lg);
    CHECK_OK(sl_mlp_get_grads(cpu, pc, P, &err), &err);
    CHECK_OK(sl_mlp_get_grads(gpu, pg, P, &err), &err);
    double worst = 0;
    for (int l = 0; l < cfg->nsizes - 1; l++)
        for (int w = 0; w < 2; w++) {
            int64_t off, cnt;
            CHECK_OK(sl_mlp_param_range(cpu, l, w, &off, &cnt, &err), &err);
            double r = rel_normwise(pg + off, pc + off, cnt);
            if (r > worst) worst = r;
            CHECK_MSG(r <= 1e-4, "%s: layer %d %s gradient: relative difference %.3g", name, l,
                      w ? "b" : "w", r);
        }
    printf("%s: loss cpu %.9g gpu %.9g, worst gradient difference %.3g (relative)\n", name, lc, lg,
           worst);

    /* forward only: logprobs into host and device outputs */
    float *lpc = malloc(sizeof(float) * (size_t)(B * C)),
          *lpg = malloc(sizeof(float) * (size_t)(B * C));
    sl_tensor lpc_t, lpg_t, lpd_own;
    int64_t lshape[2] = {B, C};
    sl_tensor_wrap(&lpc_t, lpc, SL_DTYPE_F32, sl_cpu(), 2, lshape, NULL);
    sl_tensor_wrap(&lpg_t, lpg, SL_DTYPE_F32, sl_cpu(), 2, lshape, NULL);
    CHECK_OK(sl_mlp_predict(cpu, &xh, &lpc_t, &err), &err);
    CHECK_OK(sl_mlp_predict(gpu, &xd, &lpg_t, &err), &err);
    double r = rel_normwise(lpg, lpc, B * C);
    CHECK_MSG(r <= 1e-5, "%s: logprobs differ by %.3g", name, r);
    CHECK_OK(sl_tensor_alloc(&lpd_own, SL_DTYPE_F32, sl_cuda(0), 2, lshape, NULL, &err), &err);
    CHECK_OK(sl_mlp_predict(gpu, &xd, &lpd_own, &err), &err);
    memset(lpg, 0, sizeof(float) * (size_t)(B * C));
    CHECK_OK(sl_tensor_copy(&lpg_t, &lpd_own, NULL, &err), &err);
    CHECK(rel_normwise(lpg, lpc, B * C) <= 1e-5);
    float l2 = 0;
    CHECK_OK(sl_mlp_loss(gpu, &xd, &yd, &l2, &err), &err);
    CHECK_MSG(fabs(l2 - lc) <= 1e-5 * fabs(lc), "%s: sl_mlp_loss %.9g vs %.9g", name, l2, lc);

    sl_tensor_free(&lpd_own);
    sl_tensor_free(&xd_own);
    sl_tensor_free(&yd_own);
    free(lpc);
    free(lpg);
    free(pc);
    free(pg);
    free(x);
    free(y);
    sl_mlp_free(cpu);
    sl_mlp_free(gpu);
}

/* graphs on/off: the same bits, through batch and buffer changes (FP32 and BF16); TF32/BF16 close
 * to FP32, also after the parameters are replaced (BF16's copies of them follow) */
static void test_graphs_and_math(void) {
    sl_err err;
    sl_mlp_config cfg;
    sl_mlp_config_default(&cfg);
    const int n = 784, C = 10;
    const int64_t sizes[4] = {64, 32, 64, 64};
    float *x = malloc(sizeof(float) * 64 * n * 2), *y = malloc(sizeof(float) * 64 * C * 2);
    make_batch(x, 128, n, n, y, C, NULL);
    sl_tensor xo[2], yo[2], xv[2], yv[2];
    for (int i = 0; i < 2; i++) {
        to_device(x + i * 64 * n, 64, n, n, 0, &xo[i], &xv[i]);
        to_device(y + i * 64 * C, 64, C, C, 0, &yo[i], &yv[i]);
    }
    enum { NM = 5 };
    sl_mlp *m[NM] = {NULL, NULL, NULL, NULL,
                     NULL}; /* graph fp32, eager fp32, tf32, bf16, eager bf16 */
    for (int k = 0; k < NM; k++) {
        sl_mlp_config c = cfg;
        c.cuda_graph = k != 1 && k != 4;
        c.math = k == 2 ? SL_MATH_TF32 : k >= 3 ? SL_MATH_BF16 : SL_MATH_FP32;
        CHECK_OK(sl_mlp_create(&c, sl_cuda(0), &m[k], &err), &err);
        if (!m[k]) return;
    }
    const int64_t P = sl_mlp_num_params(m[0]);
    float *g[NM], *p = malloc(sizeof(float) * (size_t)P);
    for (int k = 0; k < NM; k++) g[k] = malloc(sizeof(float) * (size_t)P);
    double worst_tf32 = 0, worst_bf16 = 0;
    for (int step = 0; step < 5; step++) {
        const int64_t B = sizes[step % 4];
        const int buf = step == 3;
        if (step == 4) { /* new parameters for every model: w, b *= -0.8 */
            CHECK_OK(sl_mlp_get_params(m[0], p, P, &err), &err);
            for (int64_t i = 0; i < P; i++) p[i] *= -0.8f;
            for (int k = 0; k < NM; k++) CHECK_OK(sl_mlp_set_params(m[k], p, P, &err), &err);
        }
        sl_tensor xs, ys;
        CHECK_OK(sl_tensor_slice(&xv[buf], 0, 0, B, &xs, &err), &err);
        CHECK_OK(sl_tensor_slice(&yv[buf], 0, 0, B, &ys, &err), &err);
        float loss[NM];
        for (int k = 0; k < NM; k++) {
            CHECK_OK(sl_mlp_loss_grad(m[k], &xs, &ys, &loss[k], &err), &err);
            CHECK_OK(sl_mlp_get_grads(m[k], g[k], P, &err), &err);
        }
        CHECK_MSG(memcmp(g[0], g[1], sizeof(float) * (size_t)P) == 0 && loss[0] == loss[1],
                  "step %d (B %lld): graph and plain launches differ", step, (long long)B);
        CHECK_MSG(memcmp(g[3], g[4], sizeof(float) * (size_t)P) == 0 && loss[3] == loss[4],
                  "step %d (B %lld): bf16 graph and plain launches differ", step, (long long)B);
        double t = rel_normwise(g[2], g[0], P), b = rel_normwise(g[3], g[0], P);
        worst_tf32 = t > worst_tf32 ? t : worst_tf32;
        worst_bf16 = b > worst_bf16 ? b : worst_bf16;
        CHECK_MSG(t < 2e-2 && b < 1e-1, "step %d: tf32 %.3g bf16 %.3g off fp32", step, t, b);
        CHECK(fabs(loss[2] - loss[0]) < 1e-2 * fabs(loss[0]));
        CHECK(fabs(loss[3] - loss[0]) < 5e-2 * fabs(loss[0]));
    }
    printf("graphs: same bits over batch/buffer changes; gradients vs fp32: tf32 %.3g, bf16 %.3g "
           "(max |d| / max |g|)\n",
           worst_tf32, worst_bf16);
    for (int k = 0; k < NM; k++) {
        free(g[k]);
        sl_mlp_free(m[k]);
    }
    free(p);
    for (int i = 0; i < 2; i++) {
        sl_tensor_free(&xo[i]);
        sl_tensor_free(&yo[i]);
    }
    free(x);
    free(y);
}

/* BF16 off the seed's path: odd sizes (unaligned rows, the scalar conversions), strided input rows,
 * a narrow last layer without the head, and a wide last layer (the log-softmax kernel's dz):
 * graphs and plain launches give the same bits, and both stay close to fp32 (gradients and
 * log-probabilities) over three steps on one batch (staged, captured in place, replayed) */
static void test_bf16_shapes(void) {
    static const struct {
        int nsizes, sizes[5], ld;
        sl_activation act;
    } cases[2] = {{5, {37, 65, 130, 33, 7}, 40, SL_ACT_RELU}, {3, {37, 40, 24}, 37, SL_ACT_TANH}};
    for (int ci = 0; ci < 2; ci++) {
        sl_err err;
        sl_mlp_config c;
        memset(&c, 0, sizeof c);
        c.nsizes = cases[ci].nsizes;
        memcpy(c.sizes, cases[ci].sizes, sizeof c.sizes[0] * (size_t)c.nsizes);
        c.activation = cases[ci].act;
        c.seed = 5;
        sl_mlp *m[3] = {NULL, NULL, NULL}; /* fp32 graph, bf16 graph, bf16 plain */
        for (int k = 0; k < 3; k++) {
            c.math = k ? SL_MATH_BF16 : SL_MATH_FP32;
            c.cuda_graph = k != 2;
            CHECK_OK(sl_mlp_create(&c, sl_cuda(0), &m[k], &err), &err);
        }
        if (!m[0] || !m[1] || !m[2]) return;
        const int64_t B = 30, P = sl_mlp_num_params(m[0]);
        const int n = c.sizes[0], C = c.sizes[c.nsizes - 1], ld = cases[ci].ld;
        float *x = malloc(sizeof(float) * (size_t)(B * ld)), *y = malloc(sizeof(float) * B * C);
        make_batch(x, B, n, ld, y, C, NULL);
        sl_tensor xo, yo, xv, yv, lo;
        to_device(x, B, n, ld, 0, &xo, &xv);
        to_device(y, B, C, C, 0, &yo, &yv);
        const int64_t lshape[2] = {B, C};
        CHECK_OK(sl_tensor_alloc(&lo, SL_DTYPE_F32, sl_cuda(0), 2, lshape, NULL, &err), &err);
        float *g[3], *lp[3];
        for (int k = 0; k < 3; k++) {
            g[k] = malloc(sizeof(float) * (size_t)P);
            lp[k] = malloc(sizeof(float) * (size_t)(B * C));
        }
        for (int step = 0; step < 3; step++) {
            float loss[3];
            for (int k = 0; k < 3; k++) {
                CHECK_OK(sl_mlp_loss_grad(m[k], &xv, &yv, &loss[k], &err), &err);
                CHECK_OK(sl_mlp_get_grads(m[k], g[k], P, &err), &err);
            }
            CHECK_MSG(memcmp(g[1], g[2], sizeof(float) * (size_t)P) == 0 && loss[1] == loss[2],
                      "case %d step %d: bf16 graph and plain launches differ", ci, step);
            const double r = rel_normwise(g[1], g[0], P);
            CHECK_MSG(r < 1e-1 && fabs(loss[1] - loss[0]) < 5e-2 * fabs(loss[0]),
                      "case %d step %d: bf16 gradients %.3g off fp32, loss %g vs %g", ci, step, r,
                      loss[1], loss[0]);
        }
        for (int k = 0; k < 3; k++) {
            sl_tensor lh;
            host_view(lp[k], B, C, C, &lh);
            CHECK_OK(sl_mlp_predict(m[k], &xv, &lo, &err), &err);
            CHECK_OK(sl_tensor_copy(&lh, &lo, NULL, &err), &err);
        }
        CHECK(memcmp(lp[1], lp[2], sizeof(float) * (size_t)(B * C)) == 0);
        CHECK_MSG(rel_normwise(lp[1], lp[0], B * C) < 5e-2, "case %d: bf16 logprobs %.3g off", ci,
                  rel_normwise(lp[1], lp[0], B * C));
        for (int k = 0; k < 3; k++) {
            free(g[k]);
            free(lp[k]);
            sl_mlp_free(m[k]);
        }
        sl_tensor_free(&xo);
        sl_tensor_free(&yo);
        sl_tensor_free(&lo);
        free(x);
        free(y);
    }
    printf("bf16 off the seed's path: graphs = plain launches, close to fp32\n");
}

static void test_evaluate(void) {
    sl_err err;
    sl_mlp *cpu = NULL, *gpu = NULL;
    CHECK_OK(sl_mlp_create(NULL, sl_cpu(), &cpu, &err), &err);
    CHECK_OK(sl_mlp_create(NULL, sl_cuda(0), &gpu, &err), &err);
    if (!cpu || !gpu) return;
    const int64_t B = 500;
    float *x = malloc(sizeof(float) * B * 784), *y = malloc(sizeof(float) * B * 10);
    int32_t *ids = malloc(sizeof(int32_t) * B);
    make_batch(x, B, 784, 784, y, 10, ids);
    sl_tensor xo, xd, xh, ih, idd, yo, yd;
    to_device(x, B, 784, 784, 0, &xo, &xd);
    to_device(y, B, 10, 10, 0, &yo, &yd);
    host_view(x, B, 784, 784, &xh);
    int64_t ishape[1] = {B};
    sl_tensor_wrap(&ih, ids, SL_DTYPE_I32, sl_cpu(), 1, ishape, NULL);
    CHECK_OK(sl_tensor_alloc(&idd, SL_DTYPE_I32, sl_cuda(0), 1, ishape, NULL, &err), &err);
    CHECK_OK(sl_tensor_copy(&idd, &ih, NULL, &err), &err);
    int64_t c0 = -1, c1 = -2, c2 = -3;
    double l1 = 0, l2 = 0;
    CHECK_OK(sl_mlp_evaluate(cpu, &xh, &ih, &c0, NULL, &err), &err);
    CHECK_OK(sl_mlp_evaluate(gpu, &xd, &idd, &c1, NULL, &err), &err);
    CHECK_OK(sl_mlp_evaluate(gpu, &xd, &yd, &c2, &l2, &err), &err);
    sl_tensor yh;
    host_view(y, B, 10, 10, &yh);
    CHECK_OK(sl_mlp_evaluate(cpu, &xh, &yh, NULL, &l1, &err), &err);
    CHECK_EQ_INT(c0, c1);
    CHECK_EQ_INT(c0, c2);
    CHECK_MSG(fabs(l1 - l2) <= 1e-5 * fabs(l1), "evaluate loss %.9g vs %.9g", l1, l2);
    printf("evaluate: %lld of %lld correct on CPU and GPU (device labels)\n", (long long)c0,
           (long long)B);
    sl_tensor_free(&xo);
    sl_tensor_free(&yo);
    sl_tensor_free(&idd);
    free(x);
    free(y);
    free(ids);
    sl_mlp_free(cpu);
    sl_mlp_free(gpu);
}

static void test_optimisers(void) {
    sl_err err;
    const int64_t n = 100003;
    float *p0 = malloc(sizeof(float) * n), *g = malloc(sizeof(float) * n);
    float *pc = malloc(sizeof(float) * n), *pg = malloc(sizeof(float) * n);
    for (int64_t i = 0; i < n; i++) {
        p0[i] = frand() - 0.5f;
        g[i] = (frand() - 0.5f) * 0.01f;
    }
    const char *names[5] = {"sgd", "sgd+wd", "nesterov", "adam", "adamw"};
    for (int kind = 0; kind < 5; kind++) {
        sl_optim_config oc;
        sl_optim_config_default(&oc);
        oc.lr = 0.01f;
        if (kind == 1) oc.weight_decay = 0.05f;
        if (kind == 2) {
            oc.momentum = 0.9f;
            oc.nesterov = 1;
            oc.weight_decay = 0.01f;
        }
        if (kind == 3) {
            oc.kind = SL_OPTIM_ADAM;
            oc.weight_decay = 0.01f;
        }
        if (kind == 4) {
            oc.kind = SL_OPTIM_ADAMW;
            oc.weight_decay = 0.1f;
        }
        sl_optim *oc_ = NULL, *og = NULL, *og2 = NULL;
        CHECK_OK(sl_optim_create(&oc, n, sl_cpu(), &oc_, &err), &err);
        CHECK_OK(sl_optim_create(&oc, n, sl_cuda(0), &og, &err), &err);
        CHECK_OK(sl_optim_create(&oc, n, sl_cuda(0), &og2, &err), &err);
        if (!oc_ || !og || !og2) return;
        memcpy(pc, p0, sizeof(float) * n);
        int64_t shape[1] = {n};
        sl_tensor ph, gh, pd, gd;
        sl_tensor_wrap(&ph, pc, SL_DTYPE_F32, sl_cpu(), 1, shape, NULL);
        sl_tensor_wrap(&gh, g, SL_DTYPE_F32, sl_cpu(), 1, shape, NULL);
        CHECK_OK(sl_tensor_alloc(&pd, SL_DTYPE_F32, sl_cuda(0), 1, shape, NULL, &err), &err);
        CHECK_OK(sl_tensor_alloc(&gd, SL_DTYPE_F32, sl_cuda(0), 1, shape, NULL, &err), &err);
        CHECK_OK(sl_tensor_copy(&pd, &ph, NULL, &err), &err);
        CHECK_OK(sl_tensor_copy(&gd, &gh, NULL, &err), &err);
        for (int s = 0; s < 3; s++) {
            CHECK_OK(sl_optim_apply(oc_, &ph, &gh, &err), &err);
            CHECK_OK(sl_optim_apply(og, &pd, &gd, &err), &err);
        }
        sl_tensor pgt;
        sl_tensor_wrap(&pgt, pg, SL_DTYPE_F32, sl_cpu(), 1, shape, NULL);
        CHECK_OK(sl_tensor_copy(&pgt, &pd, NULL, &err), &err);
        int64_t diff = 0;
        for (int64_t i = 0; i < n; i++) diff += memcmp(&pc[i], &pg[i], 4) != 0;
        CHECK_MSG(diff == 0, "%s: %lld of %lld parameters differ between CPU and GPU", names[kind],
                  (long long)diff, (long long)n);
        /* state: GPU -> bytes == CPU -> bytes; restored into another GPU optimiser */
        size_t sc = 0, sg = 0;
        CHECK_OK(sl_optim_serialize(oc_, NULL, 0, &sc, &err), &err);
        CHECK_OK(sl_optim_serialize(og, NULL, 0, &sg, &err), &err);
        CHECK_EQ_INT(sc, sg);
        unsigned char *bc = malloc(sc), *bg = malloc(sg), *bg2 = malloc(sg);
        CHECK_OK(sl_optim_serialize(oc_, bc, sc, &sc, &err), &err);
        CHECK_OK(sl_optim_serialize(og, bg, sg, &sg, &err), &err);
        CHECK(memcmp(bc, bg, sc) == 0);
        CHECK_OK(sl_optim_deserialize(og2, bg, sg, &err), &err);
        CHECK_OK(sl_optim_serialize(og2, bg2, sg, &sg, &err), &err);
        CHECK(memcmp(bg, bg2, sg) == 0);
        printf("optimiser %s: CPU and GPU agree to the bit after 3 steps (%lld differ)\n",
               names[kind], (long long)diff);
        free(bc);
        free(bg);
        free(bg2);
        sl_tensor_free(&pd);
        sl_tensor_free(&gd);
        sl_optim_free(oc_);
        sl_optim_free(og);
        sl_optim_free(og2);
    }
    free(p0);
    free(g);
    free(pc);
    free(pg);
}

int main(void) {
    gpu_require(1);
    sl_mlp_config seed;
    sl_mlp_config_default(&seed);
    compare_backends(&seed, 200, 784, "seed 784-1024-1024-10 tanh, B 200");
    sl_mlp_config odd;
    memset(&odd, 0, sizeof odd);
    odd.nsizes = 5;
    int s[5] = {37, 65, 130, 33, 7};
    memcpy(odd.sizes, s, sizeof s);
    odd.activation = SL_ACT_RELU;
    odd.seed = 3;
    odd.cuda_graph = 1;
    compare_backends(&odd, 50, 40, "37-65-130-33-7 relu, strided rows, B 50");
    odd.cuda_graph = 0;
    compare_backends(&odd, 1, 37, "37-65-130-33-7 relu, B 1, no graph");
    test_graphs_and_math();
    test_bf16_shapes();
    test_evaluate();
    test_optimisers();
    return check_done();
}
