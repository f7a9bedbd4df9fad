/* SPDX-License-Identifier: Apache-2.0 */
/* sl_comm's local (in-memory) backend with one thread per rank: all-reduce sum and average of f32,
 * f64, i32 and i64 for several group sizes and lengths (results equal the sum in rank order, the
 * same bits on every rank), many collectives back to back, broadcast from every root, barrier,
 * ranks that disagree on the count, abort and timeout. Also runs under ThreadSanitizer. */
#include "check.h"
#include "sluice/comm.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAXK 8

typedef struct rank_ctx {
    sl_comm *c;
    int rank, K;
    int64_t n;
    int scenario;
    float *f32;
    double *f64;
    int32_t *i32;
    int64_t *i64;
    sl_status st[8];
    sl_err err;
} rank_ctx;

static float val_f(int rank, int64_t i) {
    return (float)((i % 97) * 0.37 + rank * 1.1 + 0.1 / (rank + 1));
}

static void *run_rank(void *arg) {
    rank_ctx *r = arg;
    sl_err *err = &r->err;
    switch (r->scenario) {
    case 0: /* f32 sum, f32 avg, f64 avg, i32 sum, i64 sum; then 50 small ones */
        for (int64_t i = 0; i < r->n; i++) r->f32[i] = val_f(r->rank, i);
        r->st[0] = sl_comm_allreduce(r->c, r->f32, r->n, SL_DTYPE_F32, SL_REDUCE_SUM, NULL, err);
        r->st[1] = SL_OK;
        for (int it = 0; it < 50 && r->st[1] == SL_OK; it++) {
            double d = r->rank + it;
            r->st[1] = sl_comm_allreduce(r->c, &d, 1, SL_DTYPE_F64, SL_REDUCE_SUM, NULL, err);
            if (r->st[1] == SL_OK && d != (double)(r->K * it + r->K * (r->K - 1) / 2))
                r->st[1] = SL_EINVAL;
        }
        for (int64_t i = 0; i < r->n; i++) r->f64[i] = (double)val_f(r->rank, i) / 3.0;
        r->st[2] = sl_comm_allreduce(r->c, r->f64, r->n, SL_DTYPE_F64, SL_REDUCE_AVG, NULL, err);
        for (int64_t i = 0; i < r->n; i++) {
            r->i32[i] = (int32_t)(i * (r->rank + 1)) - 7;
            r->i64[i] = (int64_t)i * 1000000007LL * (r->rank + 1);
        }
        r->st[3] = sl_comm_allreduce(r->c, r->i32, r->n, SL_DTYPE_I32, SL_REDUCE_SUM, NULL, err);
        r->st[4] = sl_comm_allreduce(r->c, r->i64, r->n, SL_DTYPE_I64, SL_REDUCE_SUM, NULL, err);
        r->st[5] = sl_comm_barrier(r->c, err);
        break;
    case 1: /* broadcast from every root */
        r->st[0] = SL_OK;
        for (int root = 0; root < r->K && r->st[0] == SL_OK; root++) {
            for (int64_t i = 0; i < r->n; i++) r->f32[i] = (float)(r->rank * 1000 + i);
            r->st[0] = sl_comm_broadcast(r->c, r->f32, (size_t)r->n * 4, root, NULL, err);
            for (int64_t i = 0; i < r->n && r->st[0] == SL_OK; i++)
                if (r->f32[i] != (float)(root * 1000 + i)) r->st[0] = SL_EINVAL;
        }
        break;
    case 2: /* rank 1 passes another count: every rank fails, then the group still works */
        r->st[0] = sl_comm_allreduce(r->c, r->f32, r->rank == 1 ? r->n - 1 : r->n, SL_DTYPE_F32,
                                     SL_REDUCE_SUM, NULL, err);
        r->st[1] = sl_comm_barrier(r->c, NULL);
        break;
    case 3: /* the last rank aborts instead of joining */
        if (r->rank == r->K - 1)
            sl_comm_abort(r->c);
        else
            r->st[0] =
                sl_comm_allreduce(r->c, r->f32, r->n, SL_DTYPE_F32, SL_REDUCE_AVG, NULL, err);
        break;
    case 4: /* the last rank never comes: the others time out */
        if (r->rank != r->K - 1) r->st[0] = sl_comm_barrier(r->c, err);
        break;
    }
    return NULL;
}

static void run_group(int K, int64_t n, int scenario, int timeout_ms, rank_ctx *ctx) {
    sl_comm_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.kind = SL_COMM_LOCAL;
    cfg.size = K;
    cfg.timeout_ms = timeout_ms;
    sl_comm *comms[MAXK];
    int got = 0;
    sl_err err;
    CHECK_OK(sl_comm_create(&cfg, comms, MAXK, &got, &err), &err);
    CHECK_EQ_INT(got, K);
    pthread_t th[MAXK];
    for (int r = 0; r < K; r++) {
        memset(&ctx[r].st, 0, sizeof ctx[r].st);
        ctx[r].c = comms[r];
        ctx[r].rank = r;
        ctx[r].K = K;
        ctx[r].n = n;
        ctx[r].scenario = scenario;
        ctx[r].f32 = calloc((size_t)n + 1, 4);
        ctx[r].f64 = calloc((size_t)n + 1, 8);
        ctx[r].i32 = calloc((size_t)n + 1, 4);
        ctx[r].i64 = calloc((size_t)n + 1, 8);
        CHECK_EQ_INT(sl_comm_rank(comms[r]), r);
        CHECK_EQ_INT(sl_comm_size(comms[r]), K);
        sl_err_clear(&ctx[r].err);
    }
    for (int r = 0; r < K; r++) pthread_create(&th[r], NULL, run_rank, &ctx[r]);
    for (int r = 0; r < K; r++) pthread_join(th[r], NULL);
    for (int r = 0; r < K; r++) sl_comm_free(comms[r]);
}

static void free_ctx(rank_ctx *ctx, int K) {
    for (int r = 0; r < K; r++) {
        free(ctx[r].f32);
        free(ctx[r].f64);
        free(ctx[r].i32);
        free(ctx[r].i64);
    }
}

static void test_reduce(void) {
    const int Ks[] = {1, 2, 3, 4, 7};
    const int64_t ns[] = {0, 1, 5, 16, 17, 1000, 100003};
    for (size_t a = 0; a < sizeof Ks / sizeof Ks[0]; a++) {
        for (size_t b = 0; b < sizeof ns / sizeof ns[0]; b++) {
            const int K = Ks[a];
            const int64_t n = ns[b];
            rank_ctx ctx[MAXK];
            run_group(K, n, 0, 0, ctx);
            int bad = 0;
            for (int r = 0; r < K; r++)
                for (int s = 0; s < 6; s++)
                    CHECK_MSG(ctx[r].st[s] == SL_OK, "K=%d n=%lld rank %d op %d: %s %s", K,
                              (long long)n, r, s, sl_status_name(ctx[r].st[s]), ctx[r].err.msg);
            for (int64_t i = 0; i < n && bad < 5; i++) {
                float want = val_f(0, i);
                for (int k = 1; k < K; k++) want += val_f(k, i);
                double want64 = (double)val_f(0, i) / 3.0;
                for (int k = 1; k < K; k++) want64 += (double)val_f(k, i) / 3.0;
                want64 /= K;
                int32_t wi = 0;
                int64_t wl = 0;
                for (int k = 0; k < K; k++) {
                    wi += (int32_t)(i * (k + 1)) - 7;
                    wl += (int64_t)i * 1000000007LL * (k + 1);
                }
                for (int r = 0; r < K; r++) {
                    /* bit-identical to the rank-order sum, on every rank */
                    if (memcmp(&ctx[r].f32[i], &want, 4) != 0 || ctx[r].f64[i] != want64 ||
                        ctx[r].i32[i] != wi || ctx[r].i64[i] != wl) {
                        CHECK_MSG(0,
                                  "K=%d n=%lld rank %d element %lld: %.9g vs %.9g, %.17g vs %.17g",
                                  K, (long long)n, r, (long long)i, ctx[r].f32[i], want,
                                  ctx[r].f64[i], want64);
                        bad++;
                    }
                }
            }
            free_ctx(ctx, K);
        }
    }
}

static void test_broadcast_and_errors(void) {
    rank_ctx ctx[MAXK];
    run_group(4, 333, 1, 0, ctx);
    for (int r = 0; r < 4; r++) CHECK_OK(ctx[r].st[0], &ctx[r].err);
    free_ctx(ctx, 4);

    run_group(3, 64, 2, 0, ctx);
    for (int r = 0; r < 3; r++) {
        CHECK_FAILS(ctx[r].st[0], SL_EINVAL, &ctx[r].err, "rank 1 passed count 63");
        CHECK_OK(ctx[r].st[1], NULL);
    }
    free_ctx(ctx, 3);

    run_group(4, 64, 3, 0, ctx);
    for (int r = 0; r < 3; r++) CHECK_FAILS(ctx[r].st[0], SL_ECLOSED, &ctx[r].err, "aborted");
    free_ctx(ctx, 4);

    run_group(3, 1, 4, 50, ctx);
    /* one waiter times out and breaks the group; the other sees the break (or times out too) */
    int timeouts = 0;
    for (int r = 0; r < 2; r++) {
        CHECK(ctx[r].st[0] == SL_ETIMEOUT || ctx[r].st[0] == SL_ECLOSED);
        timeouts += ctx[r].st[0] == SL_ETIMEOUT;
    }
    CHECK(timeouts >= 1);
    free_ctx(ctx, 3);

    /* argument checks, on a group of one */
    sl_comm_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.kind = SL_COMM_LOCAL;
    cfg.size = 1;
    sl_comm *c = NULL;
    sl_err err;
    CHECK_OK(sl_comm_create(&cfg, &c, 1, NULL, &err), &err);
    if (c) {
        float f = 3;
        int32_t i = 3;
        CHECK_OK(sl_comm_allreduce(c, &f, 1, SL_DTYPE_F32, SL_REDUCE_AVG, NULL, &err), &err);
        CHECK(f == 3);
        CHECK_FAILS(sl_comm_allreduce(c, &i, 1, SL_DTYPE_I32, SL_REDUCE_AVG, NULL, &err), SL_EINVAL,
                    &err, "average");
        CHECK_FAILS(sl_comm_allreduce(c, &f, 1, SL_DTYPE_U8, SL_REDUCE_SUM, NULL, &err), SL_EINVAL,
                    &err, "uint8");
        CHECK_FAILS(sl_comm_broadcast(c, &f, 4, 1, NULL, &err), SL_EINVAL, &err, "root 1");
        CHECK_OK(sl_comm_barrier(c, &err), &err);
        sl_comm_abort(c);
        CHECK_FAILS(sl_comm_allreduce(c, &f, 1, SL_DTYPE_F32, SL_REDUCE_SUM, NULL, &err),
                    SL_ECLOSED, &err, "aborted");
        sl_comm_free(c);
    }
    cfg.size = 0;
    CHECK_FAILS(sl_comm_create(&cfg, &c, 1, NULL, &err), SL_EINVAL, &err, "size 0");
    cfg.size = 3;
    CHECK_FAILS(sl_comm_create(&cfg, &c, 1, NULL, &err), SL_EINVAL, &err, "need 3");
    cfg.kind = SL_COMM_NCCL;
    CHECK(sl_comm_available(SL_COMM_LOCAL));
    CHECK_STR(sl_comm_kind_name(SL_COMM_MPI), "mpi");
}

int main(void) {
    test_reduce();
    test_broadcast_and_errors();
    return check_done();
}
