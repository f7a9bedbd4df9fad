/* SPDX-License-Identifier: Apache-2.0 */
/* sl_mlp on the CPU: the seed's initial weights (fixtures/seed-model-init.json: first/last 8 values
 * of every parameter equal the float32 of numpy's doubles, sums within float tolerance), gradients
 * against central finite differences of the library's own loss on small nets (tanh and relu), the
 * loss and accuracy of hand-checkable cases, argument checks, and the parameter file: round trip,
 * truncated, bit-flipped, wrong-sizes and foreign files are refused with a clear error. */
#include "check.h"
#include "sluice/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the seed's initial weights ------------------------------------------------------------- */

static void test_seed_init(void) {
    FILE *f = fopen(fixture("seed-model-init.json"), "rb");
    CHECK_MSG(f != NULL, "cannot open %s", fixture("seed-model-init.json"));
    if (!f) return;
    static char json[1 << 16];
    size_t n = fread(json, 1, sizeof json - 1, f);
    json[n] = '\0';
    fclose(f);

    sl_err err;
    sl_mlp *m = NULL;
    CHECK_OK(sl_mlp_create(NULL, sl_cpu(), &m, &err), &err);
    if (!m) return;
    CHECK_EQ_INT(sl_mlp_num_params(m), 1863690);
    const sl_mlp_config *cfg = sl_mlp_config_of(m);
    CHECK_EQ_INT(cfg->nsizes, 4);
    CHECK_EQ_INT(cfg->sizes[1], 1024);
    CHECK_EQ_INT(cfg->activation, SL_ACT_TANH);
    float *p = malloc((size_t)sl_mlp_num_params(m) * sizeof *p);
    CHECK_OK(sl_mlp_get_params(m, p, sl_mlp_num_params(m), &err), &err);
    for (int l = 0; l < 3; l++) {
        for (int which = 0; which < 2; which++) {
            int64_t off = -1, count = 0;
            CHECK_OK(sl_mlp_param_range(m, l, which, &off, &count, &err), &err);
            char name[8];
            snprintf(name, sizeof name, "%c%d", which == 0 ? 'w' : 'b', l);
            const char *obj = check_json_object(json, name);
            CHECK_MSG(obj != NULL, "no %s in the fixture", name);
            if (!obj || off < 0) continue;
            double first[8], last[8];
            check_json_array(obj, "first8", first, 8);
            check_json_array(obj, "last8", last, 8);
            const float *v = p + off;
            for (int i = 0; i < 8; i++) {
                CHECK_MSG(v[i] == (float)first[i], "%s[%d]: %.9g vs %.9g", name, i, v[i],
                          (float)first[i]);
                CHECK_MSG(v[count - 8 + i] == (float)last[i], "%s[-%d]: %.9g vs %.9g", name, 8 - i,
                          v[count - 8 + i], (float)last[i]);
            }
            double sum = 0, sumsq = 0;
            for (int64_t i = 0; i < count; i++) {
                sum += v[i];
                sumsq += (double)v[i] * v[i];
            }
            /* float32 rounding moves each value by <= 2^-24 relative: the sums move by far less
             * than these bounds; a wrong draw order or scale moves them by whole units */
            double want = check_json_number(obj, "sum"), want_sq = check_json_number(obj, "sumsq");
            CHECK_MSG(fabs(sum - want) <= 1e-4 + 1e-6 * fabs(want), "%s sum %.12g vs %.12g", name,
                      sum, want);
            CHECK_MSG(fabs(sumsq - want_sq) <= 1e-6 * fabs(want_sq), "%s sumsq %.12g vs %.12g",
                      name, sumsq, want_sq);
        }
    }
    CHECK_FAILS(sl_mlp_param_range(m, 3, 0, NULL, NULL, &err), SL_EINVAL, &err, "layer 3");
    /* another seed gives other weights; the same seed the same */
    sl_mlp_config c2;
    sl_mlp_config_default(&c2);
    c2.seed = 1;
    sl_mlp *m2 = NULL;
    CHECK_OK(sl_mlp_create(&c2, sl_cpu(), &m2, &err), &err);
    if (m2) {
        float *q = malloc((size_t)sl_mlp_num_params(m2) * sizeof *q);
        CHECK_OK(sl_mlp_get_params(m2, q, sl_mlp_num_params(m2), &err), &err);
        CHECK(q[0] != p[0]);
        free(q);
    }
    sl_mlp_free(m2);
    free(p);
    sl_mlp_free(m);
}

/* ---- gradients vs finite differences -------------------------------------------------------- */

static void make_batch(int B, int in, int C, float *x, float *y, unsigned seed) {
    srand(seed);
    for (int i = 0; i < B * in; i++) x[i] = (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
    memset(y, 0, (size_t)B * C * sizeof *y);
    for (int r = 0; r < B; r++) y[r * C + rand() % C] = 1.0f;
}

static void check_fd(sl_activation act, int nsizes, const int *sizes, double init_scale) {
    sl_err err;
    sl_mlp_config cfg;
    sl_mlp_config_default(&cfg);
    cfg.nsizes = nsizes;
    for (int i = 0; i < nsizes; i++) cfg.sizes[i] = sizes[i];
    cfg.activation = act;
    cfg.seed = 3;
    cfg.init_scale = init_scale;
    sl_mlp *m = NULL;
    CHECK_OK(sl_mlp_create(&cfg, sl_cpu(), &m, &err), &err);
    if (!m) return;
    const int B = 6, in = sizes[0], C = sizes[nsizes - 1];
    float *x = malloc((size_t)B * in * sizeof *x), *y = malloc((size_t)B * C * sizeof *y);
    make_batch(B, in, C, x, y, 11);
    /* one row of soft labels: the gradient must not assume rows sum to one */
    y[0] = 0.25f;
    y[1] = 0.5f;
    sl_tensor tx, ty;
    int64_t sx[2] = {B, in}, sy[2] = {B, C};
    sl_tensor_wrap(&tx, x, SL_DTYPE_F32, sl_cpu(), 2, sx, NULL);
    sl_tensor_wrap(&ty, y, SL_DTYPE_F32, sl_cpu(), 2, sy, NULL);
    const int64_t P = sl_mlp_num_params(m);
    float *p = malloc((size_t)P * sizeof *p), *g = malloc((size_t)P * sizeof *g);
    float loss = 0;
    CHECK_OK(sl_mlp_loss_grad(m, &tx, &ty, &loss, &err), &err);
    CHECK_OK(sl_mlp_get_grads(m, g, P, &err), &err);
    CHECK_OK(sl_mlp_get_params(m, p, P, &err), &err);
    CHECK(loss > 0 && isfinite(loss));
    int bad = 0;
    double gnorm = 0;
    for (int64_t i = 0; i < P; i++) gnorm = fmax(gnorm, fabs(g[i]));
    for (int64_t i = 0; i < P; i++) {
        /* relu: a smaller step, so that few pre-activations cross the kink at 0 */
        const float h = act == SL_ACT_RELU ? 2e-3f : 1e-2f;
        const float orig = p[i];
        float lp, lm;
        p[i] = orig + h;
        CHECK_OK(sl_mlp_set_params(m, p, P, &err), &err);
        CHECK_OK(sl_mlp_loss(m, &tx, &ty, &lp, &err), &err);
        p[i] = orig - h;
        CHECK_OK(sl_mlp_set_params(m, p, P, &err), &err);
        CHECK_OK(sl_mlp_loss(m, &tx, &ty, &lm, &err), &err);
        p[i] = orig;
        /* step sizes as actually represented in float */
        const double fd = ((double)lp - (double)lm) / ((double)(orig + h) - (double)(orig - h));
        /* float32 loss rounding (~1e-7 * loss / 2h) plus the O(h^2) truncation */
        const double noise = 8 * 6e-8 * (double)loss / (2 * (double)h);
        const double tol = 2e-3 * fabs(fd) + 2e-4 * gnorm + noise + 1e-5;
        if (fabs(fd - g[i]) > tol) {
            if (bad++ < 5)
                CHECK_MSG(0, "%s param %lld: backprop %.8g, finite difference %.8g",
                          act == SL_ACT_TANH ? "tanh" : "relu", (long long)i, g[i], fd);
        }
    }
    CHECK_MSG(bad == 0, "%d of %lld gradients differ from finite differences", bad, (long long)P);
    /* the gradient is not trivially small: the test would notice a zeroed buffer */
    CHECK(gnorm > 1e-2);
    free(p);
    free(g);
    free(x);
    free(y);
    sl_mlp_free(m);
}

static void test_gradients(void) {
    const int s1[] = {5, 7, 6, 4};
    check_fd(SL_ACT_TANH, 4, s1, 0.5);
    check_fd(SL_ACT_RELU, 4, s1, 0.5);
    const int s2[] = {3, 4};
    check_fd(SL_ACT_TANH, 2, s2, 0.5);
}

/* ---- loss, prediction, accuracy by hand ----------------------------------------------------- */

static void test_by_hand(void) {
    sl_err err;
    /* one layer 2 -> 3: logits = x @ w + b */
    sl_mlp_config cfg;
    sl_mlp_config_default(&cfg);
    cfg.nsizes = 2;
    cfg.sizes[0] = 2;
    cfg.sizes[1] = 3;
    sl_mlp *m = NULL;
    CHECK_OK(sl_mlp_create(&cfg, sl_cpu(), &m, &err), &err);
    if (!m) return;
    CHECK_EQ_INT(sl_mlp_num_params(m), 9);
    const float p[9] = {1, 0, -1, /* w row 0 */ 0, 2, 0, /* w row 1 */ 0.5f, 0, 0 /* b */};
    CHECK_OK(sl_mlp_set_params(m, p, 9, &err), &err);
    float x[4] = {1, 0, 0, 1}; /* logits: row0 (1.5, 0, -1), row1 (0.5, 2, 0) */
    float y[6] = {1, 0, 0, 1, 0, 0};
    sl_tensor tx, ty, tlp;
    int64_t sx[2] = {2, 2}, sy[2] = {2, 3};
    sl_tensor_wrap(&tx, x, SL_DTYPE_F32, sl_cpu(), 2, sx, NULL);
    sl_tensor_wrap(&ty, y, SL_DTYPE_F32, sl_cpu(), 2, sy, NULL);
    float lp[6];
    sl_tensor_wrap(&tlp, lp, SL_DTYPE_F32, sl_cpu(), 2, sy, NULL);
    CHECK_OK(sl_mlp_predict(m, &tx, &tlp, &err), &err);
    const double l0[3] = {1.5, 0, -1}, l1[3] = {0.5, 2, 0};
    const double lse0 = log(exp(1.5) + exp(0.0) + exp(-1.0)), lse1 = log(exp(0.5) + exp(2.0) + 1);
    for (int j = 0; j < 3; j++) {
        CHECK_NEAR(lp[j], l0[j] - lse0, 1e-6);
        CHECK_NEAR(lp[3 + j], l1[j] - lse1, 1e-6);
    }
    float loss = 0;
    CHECK_OK(sl_mlp_loss(m, &tx, &ty, &loss, &err), &err);
    CHECK_NEAR(loss, -((1.5 - lse0) + (0.5 - lse1)) / 2, 1e-6);
    /* row 0 predicts class 0 (right), row 1 class 1 (label 0: wrong) */
    int64_t correct = -1;
    double lsum = 0;
    CHECK_OK(sl_mlp_evaluate(m, &tx, &ty, &correct, &lsum, &err), &err);
    CHECK_EQ_INT(correct, 1);
    CHECK_NEAR(lsum, 2 * (double)loss, 1e-5);
    int32_t ilab[2] = {0, 1};
    sl_tensor tl;
    int64_t sl[1] = {2};
    sl_tensor_wrap(&tl, ilab, SL_DTYPE_I32, sl_cpu(), 1, sl, NULL);
    CHECK_OK(sl_mlp_evaluate(m, &tx, &tl, &correct, NULL, &err), &err);
    CHECK_EQ_INT(correct, 2);
    uint8_t ulab[2] = {2, 1};
    sl_tensor_wrap(&tl, ulab, SL_DTYPE_U8, sl_cpu(), 1, sl, NULL);
    CHECK_OK(sl_mlp_evaluate(m, &tx, &tl, &correct, NULL, &err), &err);
    CHECK_EQ_INT(correct, 1);
    CHECK_FAILS(sl_mlp_evaluate(m, &tx, &tl, &correct, &lsum, &err), SL_EINVAL, &err, "one-hot");

    /* gradient by hand: dlogits = (softmax - y) / B; dw = x^T dlogits; db = sum rows */
    CHECK_OK(sl_mlp_loss_grad(m, &tx, &ty, NULL, &err), &err);
    float g[9];
    CHECK_OK(sl_mlp_get_grads(m, g, 9, &err), &err);
    double d0[3], d1[3];
    for (int j = 0; j < 3; j++) {
        d0[j] = (exp(l0[j] - lse0) - (j == 0)) / 2;
        d1[j] = (exp(l1[j] - lse1) - (j == 0)) / 2;
    }
    for (int j = 0; j < 3; j++) {
        CHECK_NEAR(g[j], d0[j], 1e-6);     /* w row 0 = x[:,0]^T d = d0 */
        CHECK_NEAR(g[3 + j], d1[j], 1e-6); /* w row 1 = d1 */
        CHECK_NEAR(g[6 + j], d0[j] + d1[j], 1e-6);
    }

    /* argument checks */
    float scratch;
    int64_t bad_shape[2] = {2, 3};
    sl_tensor tbad;
    float xb[6] = {0};
    sl_tensor_wrap(&tbad, xb, SL_DTYPE_F32, sl_cpu(), 2, bad_shape, NULL);
    CHECK_FAILS(sl_mlp_loss(m, &tbad, &ty, &scratch, &err), SL_EINVAL, &err, "images");
    int32_t ib[6] = {0};
    sl_tensor tib;
    sl_tensor_wrap(&tib, ib, SL_DTYPE_I32, sl_cpu(), 2, sy, NULL);
    CHECK_FAILS(sl_mlp_loss(m, &tx, &tib, &scratch, &err), SL_EINVAL, &err, "labels");
    int64_t s3[2] = {3, 3};
    float y3[9] = {0};
    sl_tensor_wrap(&tbad, y3, SL_DTYPE_F32, sl_cpu(), 2, s3, NULL);
    CHECK_FAILS(sl_mlp_loss_grad(m, &tx, &tbad, NULL, &err), SL_EINVAL, &err, "labels");
    sl_tensor tcuda = tx;
    tcuda.device = sl_cuda(0);
    CHECK_FAILS(sl_mlp_loss(m, &tcuda, &ty, &scratch, &err), SL_EINVAL, &err, "device");
    CHECK_FAILS(sl_mlp_set_params(m, p, 8, &err), SL_EINVAL, &err, "9");
    sl_mlp_free(m);

    /* strided rows (a column slice of a wider buffer) give the same loss */
    cfg.sizes[0] = 2;
    CHECK_OK(sl_mlp_create(&cfg, sl_cpu(), &m, &err), &err);
    if (!m) return;
    CHECK_OK(sl_mlp_set_params(m, p, 9, &err), &err);
    float wide[8] = {1, 0, 99, 99, 0, 1, 99, 99};
    sl_tensor tw, tws;
    int64_t sw[2] = {2, 4};
    sl_tensor_wrap(&tw, wide, SL_DTYPE_F32, sl_cpu(), 2, sw, NULL);
    CHECK_OK(sl_tensor_slice(&tw, 1, 0, 2, &tws, &err), &err);
    float loss2 = 0;
    CHECK_OK(sl_mlp_loss(m, &tws, &ty, &loss2, &err), &err);
    CHECK(loss2 == loss);
    sl_mlp_free(m);

    /* bad configs */
    sl_mlp_config_default(&cfg);
    cfg.nsizes = 1;
    CHECK_FAILS(sl_mlp_create(&cfg, sl_cpu(), &m, &err), SL_EINVAL, &err, "sizes");
    sl_mlp_config_default(&cfg);
    cfg.sizes[2] = 0;
    CHECK_FAILS(sl_mlp_create(&cfg, sl_cpu(), &m, &err), SL_EINVAL, &err, "layer 2");
    sl_mlp_config_default(&cfg);
    cfg.activation = (sl_activation)7;
    CHECK_FAILS(sl_mlp_create(&cfg, sl_cpu(), &m, &err), SL_EINVAL, &err, "activation");
}

/* ---- files ---------------------------------------------------------------------------------- */

static int write_bytes(const char *path, const unsigned char *b, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fwrite(b, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

static void test_files(void) {
    sl_err err;
    sl_mlp_config cfg;
    sl_mlp_config_default(&cfg);
    cfg.nsizes = 3;
    cfg.sizes[0] = 20;
    cfg.sizes[1] = 16;
    cfg.sizes[2] = 5;
    cfg.activation = SL_ACT_RELU;
    cfg.seed = 9;
    sl_mlp *a = NULL, *b = NULL, *c = NULL;
    CHECK_OK(sl_mlp_create(&cfg, sl_cpu(), &a, &err), &err);
    cfg.seed = 10;
    CHECK_OK(sl_mlp_create(&cfg, sl_cpu(), &b, &err), &err);
    if (!a || !b) return;
    const int64_t P = sl_mlp_num_params(a);
    float *pa = malloc((size_t)P * 4), *pb = malloc((size_t)P * 4);
    sl_mlp_get_params(a, pa, P, NULL);
    sl_mlp_get_params(b, pb, P, NULL);
    CHECK(memcmp(pa, pb, (size_t)P * 4) != 0);

    const char *dir = scratch_dir("mlp");
    char path[1100], bad[1100];
    snprintf(path, sizeof path, "%s/model.slmlp", dir);
    snprintf(bad, sizeof bad, "%s/bad.slmlp", dir);
    CHECK_OK(sl_mlp_save(a, path, &err), &err);
    CHECK_OK(sl_mlp_load_into(b, path, &err), &err);
    sl_mlp_get_params(b, pb, P, NULL);
    CHECK(memcmp(pa, pb, (size_t)P * 4) == 0);
    CHECK_OK(sl_mlp_load(path, sl_cpu(), &c, &err), &err);
    if (c) {
        CHECK_EQ_INT(sl_mlp_config_of(c)->activation, SL_ACT_RELU);
        CHECK_EQ_INT(sl_mlp_config_of(c)->sizes[1], 16);
        sl_mlp_get_params(c, pb, P, NULL);
        CHECK(memcmp(pa, pb, (size_t)P * 4) == 0);
    }
    sl_mlp_free(c);
    c = NULL;

    size_t size = 0;
    CHECK_OK(sl_mlp_serialize(a, NULL, 0, &size, &err), &err);
    CHECK_EQ_INT(size, 8 + 4 + 4 + 4 + 3 * 4 + 8 + P * 4 + 4);
    unsigned char *buf = malloc(size);
    CHECK_OK(sl_mlp_serialize(a, buf, size, &size, &err), &err);
    CHECK(memcmp(buf, "SLMLP\r\n\x1a", 8) == 0);
    CHECK_FAILS(sl_mlp_serialize(a, buf, size - 1, &size, &err), SL_EINVAL, &err, "need");

    /* truncated: at every kind of place */
    const size_t cuts[] = {0, 5, 20, 30, size / 2, size - 4, size - 1};
    for (size_t i = 0; i < (sizeof cuts / sizeof cuts[0]); i++) {
        CHECK(write_bytes(bad, buf, cuts[i]));
        CHECK_FAILS(sl_mlp_load_into(b, bad, &err), SL_EFORMAT, &err, "");
        CHECK_MSG(strstr(err.msg, bad) != NULL, "message names the file: %s", err.msg);
    }
    CHECK(write_bytes(bad, buf, size / 2));
    CHECK_FAILS(sl_mlp_load_into(b, bad, &err), SL_EFORMAT, &err, "truncated");
    /* one flipped bit in the data, in the checksum, or in the header */
    const size_t flips[] = {size / 2, size - 2, 13};
    const sl_status want[] = {SL_ECHECKSUM, SL_ECHECKSUM, SL_EFORMAT};
    for (size_t i = 0; i < (sizeof flips / sizeof flips[0]); i++) {
        buf[flips[i]] ^= 0x10;
        CHECK(write_bytes(bad, buf, size));
        CHECK_FAILS(sl_mlp_load_into(b, bad, &err), want[i], &err, "");
        buf[flips[i]] ^= 0x10;
    }
    buf[size / 2] ^= 0x01;
    CHECK(write_bytes(bad, buf, size));
    CHECK_FAILS(sl_mlp_load(bad, sl_cpu(), &c, &err), SL_ECHECKSUM, &err, "checksum");
    CHECK(c == NULL);
    buf[size / 2] ^= 0x01;
    /* the failed loads left b as it was */
    sl_mlp_get_params(b, pb, P, NULL);
    CHECK(memcmp(pa, pb, (size_t)P * 4) == 0);
    /* trailing bytes, another magic, a missing file */
    unsigned char *longer = calloc(1, size + 3);
    memcpy(longer, buf, size);
    CHECK(write_bytes(bad, longer, size + 3));
    CHECK_FAILS(sl_mlp_load_into(b, bad, &err), SL_EFORMAT, &err, "after its end");
    free(longer);
    CHECK(write_bytes(bad, (const unsigned char *)"P5\n28 28\n255\n", 13));
    CHECK_FAILS(sl_mlp_load_into(b, bad, &err), SL_EFORMAT, &err, "not an sluice MLP file");
    snprintf(bad, sizeof bad, "%s/missing.slmlp", dir);
    CHECK_FAILS(sl_mlp_load_into(b, bad, &err), SL_ENOENT, &err, "missing.slmlp");
    /* looked at before it is read: a FIFO with no writer (its open waited for one, for good), a
     * folder, and files of 64 GiB (sparse) that are no model or have one and 64 GiB more (read
     * whole before: an allocation of 128 GiB, or minutes of zeros) are refused at once */
    alarm(60);
    snprintf(bad, sizeof bad, "%s/fifo.slmlp", dir);
    CHECK(mkfifo(bad, 0600) == 0);
    CHECK_FAILS(sl_mlp_load_into(b, bad, &err), SL_EINVAL, &err, "not a regular file (a FIFO)");
    CHECK_FAILS(sl_mlp_load(bad, sl_cpu(), &c, &err), SL_EINVAL, &err, "fifo.slmlp");
    unlink(bad);
    CHECK_FAILS(sl_mlp_load_into(b, dir, &err), SL_EINVAL, &err,
                "not a regular file (a directory)");
    snprintf(bad, sizeof bad, "%s/huge.slmlp", dir);
    CHECK(write_bytes(bad, (const unsigned char *)"P5\n28 28\n255\n", 13));
    CHECK(truncate(bad, (off_t)64 << 30) == 0);
    CHECK_FAILS(sl_mlp_load_into(b, bad, &err), SL_EFORMAT, &err, "bad magic");
    CHECK(write_bytes(bad, buf, size));
    CHECK(truncate(bad, (off_t)size + ((off_t)64 << 30)) == 0);
    CHECK_FAILS(sl_mlp_load(bad, sl_cpu(), &c, &err), SL_EFORMAT, &err, "after its end");
    CHECK_MSG(strstr(err.msg, "huge.slmlp") != NULL, "message names the file: %s", err.msg);
    unlink(bad);
    alarm(0);

    /* a model of other sizes or activation refuses the file */
    cfg.sizes[1] = 17;
    CHECK_OK(sl_mlp_create(&cfg, sl_cpu(), &c, &err), &err);
    if (c) CHECK_FAILS(sl_mlp_load_into(c, path, &err), SL_EINVAL, &err, "20-16-5");
    sl_mlp_free(c);
    cfg.sizes[1] = 16;
    cfg.activation = SL_ACT_TANH;
    CHECK_OK(sl_mlp_create(&cfg, sl_cpu(), &c, &err), &err);
    if (c) CHECK_FAILS(sl_mlp_load_into(c, path, &err), SL_EINVAL, &err, "activation");
    sl_mlp_free(c);

    free(buf);
    free(pa);
    free(pb);
    sl_mlp_free(a);
    sl_mlp_free(b);
}

int main(void) {
    test_seed_init();
    test_gradients();
    test_by_hand();
    test_files();
    return check_done();
}
