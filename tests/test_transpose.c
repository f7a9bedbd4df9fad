/* SPDX-License-Identifier: Apache-2.0 */
/* transpose, element by element against the index formula out[i0..] = in[at perm]:
 * - uint8 HWC -> CHW with perm [2, 0, 1] (layout "CHW");
 * - float32 matrices of varied shapes with the default perm (reversed), layout left empty;
 * - int16 rank 4 with perm [0, 2, 1, 3] and output_layout; transpose_layout=False keeps the
 *   input's layout;
 * - a permutation that only moves extents of 1 (a plain copy);
 * - errors: a perm that is not a permutation (at creation), a perm of the wrong rank (per batch).
 * Runs on 3 pool threads. */
#include "check.h"
#include "opharness.h"

#include <stdlib.h>
#include <string.h>

enum { N = 3 };

static void make(sl_tlist *l, sl_dtype t, int nd, const int64_t *shapes, const char *layout) {
    sl_err e;
    memset(l, 0, sizeof *l);
    CHECK_OK(sl_tlist_reset(l, N, t, nd, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(l, shapes, &e), &e);
    snprintf(l->layout, sizeof l->layout, "%s", layout);
    size_t es = sl_dtype_size(t);
    for (int i = 0; i < N; i++) {
        size_t n = sl_tlist_sample_nbytes(l, i) / es;
        for (size_t k = 0; k < n; k++) {
            uint64_t v = k * 2654435761u + (uint64_t)i * 97;
            memcpy((uint8_t *)l->data[i] + k * es, &v, es);
        }
    }
}

/* Checks out against in permuted by perm, sample by sample. */
static void check_perm(const sl_tlist *in, const sl_tlist *out, const int *perm) {
    int nd = in->ndim;
    size_t es = sl_dtype_size(in->dtype);
    CHECK_EQ_INT(out->ndim, nd);
    CHECK_EQ_INT(out->dtype, in->dtype);
    for (int i = 0; i < N; i++) {
        const int64_t *is = sl_tlist_shape(in, i), *os = sl_tlist_shape(out, i);
        int64_t istride[8], k = 1;
        for (int d = nd - 1; d >= 0; d--) istride[d] = k, k *= is[d];
        for (int d = 0; d < nd; d++) CHECK_EQ_INT(os[d], is[perm[d]]);
        int64_t idx[8] = {0};
        size_t n = sl_tlist_sample_nbytes(out, i) / es, wrong = 0;
        for (size_t e = 0; e < n; e++) {
            int64_t off = 0, rem = (int64_t)e;
            for (int d = nd - 1; d >= 0; d--) idx[d] = rem % os[d], rem /= os[d];
            for (int d = 0; d < nd; d++) off += idx[d] * istride[perm[d]];
            wrong += memcmp((uint8_t *)out->data[i] + e * es,
                            (uint8_t *)in->data[i] + (size_t)off * es, es) != 0;
        }
        CHECK_MSG(wrong == 0, "sample %d: %zu of %zu elements misplaced", i, wrong, n);
    }
}

static const sl_tlist *run(oph *h, const char *const *argv, sl_tlist *in, sl_err *e,
                           sl_status *st) {
    *st = oph_create(h, "transpose", argv, 3, N, 1, e);
    if (*st != SL_OK) return NULL;
    sl_tlist *ins[1] = {in};
    *st = oph_run(h, N, ins, 1, NULL, 0, NULL, 0, e);
    return *st == SL_OK ? &h->out[0] : NULL;
}

int main(void) {
    oph h;
    sl_err e;
    sl_status st;
    sl_tlist img, mat, vol, thin;
    int64_t s3[N * 3] = {5, 7, 3, 1, 9, 3, 4, 4, 3};
    make(&img, SL_DTYPE_U8, 3, s3, "HWC");
    const char *a1[] = {"perm=[2, 0, 1]", NULL};
    const sl_tlist *out = run(&h, a1, &img, &e, &st);
    CHECK_MSG(out != NULL, "%s", e.msg);
    if (out) {
        check_perm(&img, out, (int[]){2, 0, 1});
        CHECK_STR(out->layout, "CHW");
    }
    oph_destroy(&h);

    int64_t s2[N * 2] = {3, 8, 1, 5, 6, 2};
    make(&mat, SL_DTYPE_F32, 2, s2, "");
    const char *a2[] = {NULL};
    out = run(&h, a2, &mat, &e, &st);
    CHECK_MSG(out != NULL, "%s", e.msg);
    if (out) {
        check_perm(&mat, out, (int[]){1, 0});
        CHECK_STR(out->layout, "");
    }
    oph_destroy(&h);

    int64_t s4[N * 4] = {2, 3, 4, 5, 1, 2, 3, 2, 3, 1, 2, 4};
    make(&vol, SL_DTYPE_I16, 4, s4, "NHWC");
    const char *a3[] = {"perm=[0, 2, 1, 3]", "output_layout=\"ABCD\"", NULL};
    out = run(&h, a3, &vol, &e, &st);
    CHECK_MSG(out != NULL, "%s", e.msg);
    if (out) {
        check_perm(&vol, out, (int[]){0, 2, 1, 3});
        CHECK_STR(out->layout, "ABCD");
    }
    oph_destroy(&h);
    const char *a4[] = {"perm=[3, 2, 1, 0]", "transpose_layout=False", NULL};
    out = run(&h, a4, &vol, &e, &st);
    CHECK_MSG(out != NULL, "%s", e.msg);
    if (out) {
        check_perm(&vol, out, (int[]){3, 2, 1, 0});
        CHECK_STR(out->layout, "NHWC");
    }
    oph_destroy(&h);

    int64_t s1[N * 3] = {1, 5, 1, 1, 1, 1, 1, 3, 1};
    make(&thin, SL_DTYPE_F64, 3, s1, "");
    const char *a5[] = {"perm=[2, 1, 0]", NULL};
    out = run(&h, a5, &thin, &e, &st);
    if (out) check_perm(&thin, out, (int[]){2, 1, 0});
    CHECK(out != NULL);
    oph_destroy(&h);

    const char *b1[] = {"perm=[0, 0, 1]", NULL};
    out = run(&h, b1, &img, &e, &st);
    CHECK(out == NULL && st == SL_EINVAL);
    CHECK_MSG(!check_needle_missing(e.msg, "perm must hold each of 0..2 once (entry 1 is 0)"), "%s",
              e.msg);
    oph_destroy(&h);
    const char *b2[] = {"perm=[1, 0]", NULL};
    out = run(&h, b2, &img, &e, &st);
    CHECK(out == NULL && st == SL_EINVAL);
    CHECK_MSG(!check_needle_missing(e.msg, "perm has 2 entries, the input 3 dimensions"), "%s",
              e.msg);
    oph_destroy(&h);

    sl_tlist_free(&img);
    sl_tlist_free(&mat);
    sl_tlist_free(&vol);
    sl_tlist_free(&thin);
    return check_done();
}
