/* SPDX-License-Identifier: Apache-2.0 */
/* RNGs: Philox4x32-10 against the Random123 known-answer vectors; numpy's legacy RandomState
 * against numpy's own numbers and, as a golden test, the seed model's initial weights
 * (fixtures/seed-model-init.json: first/last values bit-exact, sums within 1e-12 relative). */
#include "check.h"
#include "core/rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_philox(void) {
    /* Random123 kat_vectors: philox4x32 10 rounds */
    uint32_t out[4];
    uint32_t c0[4] = {0, 0, 0, 0}, k0[2] = {0, 0};
    sl__rng_philox_block(c0, k0, out);
    CHECK_EQ_INT(out[0], 0x6627e8d5u);
    CHECK_EQ_INT(out[1], 0xe169c58du);
    CHECK_EQ_INT(out[2], 0xbc57ac4cu);
    CHECK_EQ_INT(out[3], 0x9b00dbd8u);
    uint32_t c1[4] = {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu};
    uint32_t k1[2] = {0xffffffffu, 0xffffffffu};
    sl__rng_philox_block(c1, k1, out);
    CHECK_EQ_INT(out[0], 0x408f276du);
    CHECK_EQ_INT(out[1], 0x41c83b0eu);
    CHECK_EQ_INT(out[2], 0xa20bc7c6u);
    CHECK_EQ_INT(out[3], 0x6d5451fdu);
    uint32_t c2[4] = {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u};
    uint32_t k2[2] = {0xa4093822u, 0x299f31d0u};
    sl__rng_philox_block(c2, k2, out);
    CHECK_EQ_INT(out[0], 0xd16cfe09u);
    CHECK_EQ_INT(out[1], 0x94fdccebu);
    CHECK_EQ_INT(out[2], 0x5001e420u);
    CHECK_EQ_INT(out[3], 0x24126ea1u);

    /* streams are reproducible and distinct; uniform in [0,1), below() in range and unbiased-ish */
    sl__rng_philox a, b;
    sl__rng_philox_init(&a, 42, 7);
    sl__rng_philox_init(&b, 42, 7);
    int same = 1;
    for (int i = 0; i < 100; i++) same &= sl__rng_philox_u32(&a) == sl__rng_philox_u32(&b);
    CHECK(same);
    sl__rng_philox_init(&b, 42, 8);
    CHECK(sl__rng_philox_u32(&a) != sl__rng_philox_u32(&b));
    int counts[10] = {0};
    double mean = 0;
    for (int i = 0; i < 100000; i++) {
        double u = sl__rng_philox_uniform(&a);
        CHECK(u >= 0 && u < 1);
        mean += u;
        counts[sl__rng_philox_below(&a, 10)]++;
    }
    CHECK_NEAR(mean / 100000, 0.5, 0.01);
    for (int i = 0; i < 10; i++) CHECK_NEAR(counts[i], 10000, 500);
    CHECK(sl__rng_mix(1, 2) != sl__rng_mix(2, 1));
}

static void test_numpy(void) {
    sl__rng_mt r;
    sl__rng_mt_seed(&r, 0);
    /* numpy.random.RandomState(0).random_sample(2) */
    CHECK(sl__rng_mt_random_sample(&r) == 0.5488135039273248);
    CHECK(sl__rng_mt_random_sample(&r) == 0.7151893663724195);
    sl__rng_mt_seed(&r, 0);
    /* numpy.random.RandomState(0).randn(3) */
    CHECK(sl__rng_mt_randn(&r) == 1.764052345967664);
    CHECK(sl__rng_mt_randn(&r) == 0.4001572083672233);
    CHECK(sl__rng_mt_randn(&r) == 0.9787379841057392);
}

static void test_seed_model(void) {
    FILE *f = fopen(fixture("seed-model-init.json"), "rb");
    CHECK_MSG(f != NULL, "cannot open %s", fixture("seed-model-init.json"));
    if (!f) return;
    static char json[1 << 16];
    size_t n = fread(json, 1, sizeof json - 1, f);
    json[n] = '\0';
    fclose(f);

    const int layers[4] = {784, 1024, 1024, 10};
    sl__rng_mt r;
    sl__rng_mt_seed(&r, 0);
    for (int l = 0; l < 3; l++) {
        for (int part = 0; part < 2; part++) { /* w then b, as the seed draws them */
            size_t count = part == 0 ? (size_t)layers[l] * layers[l + 1] : (size_t)layers[l + 1];
            double *v = malloc(count * sizeof *v);
            double sum = 0, c = 0, sumsq = 0, c2 = 0; /* Neumaier sums */
            for (size_t i = 0; i < count; i++) {
                v[i] = 0.1 * sl__rng_mt_randn(&r);
                double t = sum + v[i];
                c += fabs(sum) >= fabs(v[i]) ? (sum - t) + v[i] : (v[i] - t) + sum;
                sum = t;
                double sq = v[i] * v[i], t2 = sumsq + sq;
                c2 += fabs(sumsq) >= fabs(sq) ? (sumsq - t2) + sq : (sq - t2) + sumsq;
                sumsq = t2;
            }
            sum += c;
            sumsq += c2;
            char name[8];
            snprintf(name, sizeof name, "%c%d", part == 0 ? 'w' : 'b', l);
            const char *obj = check_json_object(json, name);
            CHECK_MSG(obj != NULL, "no %s in the fixture", name);
            if (obj) {
                double first[8], last[8];
                check_json_array(obj, "first8", first, 8);
                check_json_array(obj, "last8", last, 8);
                for (int i = 0; i < 8; i++) {
                    CHECK_MSG(v[i] == first[i], "%s[%d]: %.17g vs %.17g", name, i, v[i], first[i]);
                    CHECK_MSG(v[count - 8 + i] == last[i], "%s[-%d]: %.17g vs %.17g", name, 8 - i,
                              v[count - 8 + i], last[i]);
                }
                double want_sum = check_json_number(obj, "sum"),
                       want_sq = check_json_number(obj, "sumsq");
                CHECK_MSG(fabs(sum - want_sum) <= 1e-12 * fabs(want_sum), "%s sum %.17g vs %.17g",
                          name, sum, want_sum);
                CHECK_MSG(fabs(sumsq - want_sq) <= 1e-12 * fabs(want_sq), "%s sumsq %.17g vs %.17g",
                          name, sumsq, want_sq);
            }
            free(v);
        }
    }
}

int main(void) {
    test_philox();
    test_numpy();
    test_seed_model();
    return check_done();
}
