/* SPDX-License-Identifier: Apache-2.0 */
/* The NCCL sl_comm backend on every visible GPU (at least 2): all-reduce sum and average of f32
 * (an odd count over 1M), f64, i32 and i64 with exact expected values, on a caller's stream and
 * synchronously; broadcast from a non-zero root; barrier; bad devices rejected; and abort: after
 * one handle aborts the group, every rank's collectives return SL_ECLOSED. */
#include "check.h"
#include "gpu.h"
#include "sluice/comm.h"

#include <cuda_runtime.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXG  8
#define N_F32 1000003

typedef struct rank_ctx {
    sl_comm *c;
    int dev, rank, size;
    int failures;
} rank_ctx;

static void fail_if(rank_ctx *r, int bad, const char *what) {
    if (bad) {
        fprintf(stderr, "rank %d: %s\n", r->rank, what);
        r->failures++;
    }
}

static void *rank_main(void *arg) {
    rank_ctx *r = arg;
    sl_err err;
    memset(&err, 0, sizeof err);
    cudaSetDevice(r->dev);
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    const int K = r->size;
    float *h = malloc(sizeof(float) * N_F32);
    float *d;
    cudaMalloc((void **)&d, sizeof(float) * N_F32);
    for (int op = 0; op < 2; op++) {
        for (int i = 0; i < N_F32; i++) h[i] = (float)(r->rank + 1) * 0.5f + (float)(i % 1000);
        cudaMemcpy(d, h, sizeof(float) * N_F32, cudaMemcpyHostToDevice);
        sl_status st = sl_comm_allreduce(r->c, d, N_F32, SL_DTYPE_F32,
                                         op ? SL_REDUCE_AVG : SL_REDUCE_SUM, s, &err);
        fail_if(r, st != SL_OK, err.msg);
        cudaMemcpyAsync(h, d, sizeof(float) * N_F32, cudaMemcpyDeviceToHost, s);
        cudaStreamSynchronize(s);
        int bad = 0;
        for (int i = 0; i < N_F32 && !bad; i++) {
            double want = 0.25 * K * (K + 1) + (double)K * (i % 1000);
            if (op) want /= K;
            bad = h[i] != (float)want;
        }
        fail_if(r, bad, op ? "f32 average wrong" : "f32 sum wrong");
    }
    /* f64 / i32 / i64, stream NULL (synchronous) */
    double hd[3] = {r->rank + 0.25, 1e-300 * (r->rank + 1), -(double)r->rank};
    int32_t hi[2] = {r->rank + 1, -7};
    int64_t hl[2] = {(int64_t)1 << 40, r->rank};
    void *dd, *di, *dl;
    cudaMalloc(&dd, sizeof hd);
    cudaMalloc(&di, sizeof hi);
    cudaMalloc(&dl, sizeof hl);
    cudaMemcpy(dd, hd, sizeof hd, cudaMemcpyHostToDevice);
    cudaMemcpy(di, hi, sizeof hi, cudaMemcpyHostToDevice);
    cudaMemcpy(dl, hl, sizeof hl, cudaMemcpyHostToDevice);
    fail_if(r, sl_comm_allreduce(r->c, dd, 3, SL_DTYPE_F64, SL_REDUCE_AVG, NULL, &err) != SL_OK,
            err.msg);
    fail_if(r, sl_comm_allreduce(r->c, di, 2, SL_DTYPE_I32, SL_REDUCE_SUM, NULL, &err) != SL_OK,
            err.msg);
    fail_if(r, sl_comm_allreduce(r->c, dl, 2, SL_DTYPE_I64, SL_REDUCE_SUM, NULL, &err) != SL_OK,
            err.msg);
    fail_if(r, sl_comm_allreduce(r->c, dl, 0, SL_DTYPE_I64, SL_REDUCE_SUM, NULL, &err) != SL_OK,
            "count 0");
    cudaMemcpy(hd, dd, sizeof hd, cudaMemcpyDeviceToHost);
    cudaMemcpy(hi, di, sizeof hi, cudaMemcpyDeviceToHost);
    cudaMemcpy(hl, dl, sizeof hl, cudaMemcpyDeviceToHost);
    fail_if(r, hd[0] != (0.5 * K * (K - 1) + 0.25 * K) / K, "f64 average");
    fail_if(r, hi[0] != K * (K + 1) / 2 || hi[1] != -7 * K, "i32 sum");
    fail_if(r, hl[0] != ((int64_t)K << 40) || hl[1] != (int64_t)K * (K - 1) / 2, "i64 sum");
    /* broadcast from the last rank */
    unsigned char bytes[777];
    memset(bytes, r->rank, sizeof bytes);
    void *db;
    cudaMalloc(&db, sizeof bytes);
    cudaMemcpy(db, bytes, sizeof bytes, cudaMemcpyHostToDevice);
    fail_if(r, sl_comm_broadcast(r->c, db, sizeof bytes, K - 1, s, &err) != SL_OK, err.msg);
    cudaMemcpyAsync(bytes, db, sizeof bytes, cudaMemcpyDeviceToHost, s);
    cudaStreamSynchronize(s);
    int bad = 0;
    for (size_t i = 0; i < sizeof bytes; i++) bad |= bytes[i] != K - 1;
    fail_if(r, bad, "broadcast");
    fail_if(r, sl_comm_barrier(r->c, &err) != SL_OK, err.msg);
    cudaFree(d);
    cudaFree(dd);
    cudaFree(di);
    cudaFree(dl);
    cudaFree(db);
    cudaStreamDestroy(s);
    free(h);
    return NULL;
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    int G = gpu_require(2);
    if (G > MAXG) G = MAXG;
    gpu_watchdog(60, "test_nccl");
    CHECK(sl_comm_available(SL_COMM_NCCL));
    sl_device devs[MAXG];
    for (int i = 0; i < G; i++) devs[i] = sl_cuda(i);
    sl_comm_config cc;
    memset(&cc, 0, sizeof cc);
    cc.kind = SL_COMM_NCCL;
    cc.size = G;
    cc.devices = devs;
    sl_comm *comms[MAXG];
    sl_err err;
    int nc = 0;
    CHECK_OK(sl_comm_create(&cc, comms, MAXG, &nc, &err), &err);
    CHECK_EQ_INT(nc, G);
    if (nc != G) return check_done();
    rank_ctx ctx[MAXG];
    pthread_t th[MAXG];
    for (int i = 0; i < G; i++) {
        memset(&ctx[i], 0, sizeof ctx[i]);
        ctx[i].c = comms[i];
        ctx[i].dev = i;
        ctx[i].rank = sl_comm_rank(comms[i]);
        ctx[i].size = sl_comm_size(comms[i]);
        CHECK_EQ_INT(ctx[i].rank, i);
        CHECK_EQ_INT(ctx[i].size, G);
        CHECK(sl_comm_kind_of(comms[i]) == SL_COMM_NCCL);
        pthread_create(&th[i], NULL, rank_main, &ctx[i]);
    }
    for (int i = 0; i < G; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ_INT(ctx[i].failures, 0);
    }
    printf("nccl: all-reduce (f32 sum/avg of %d, f64, i32, i64), broadcast, barrier on %d GPUs\n",
           N_F32, G);
    for (int i = 0; i < G; i++) sl_comm_free(comms[i]);

    /* bad devices */
    sl_device bad[2] = {sl_cuda(0), sl_cuda(0)};
    cc.size = 2;
    cc.devices = bad;
    CHECK_FAILS(sl_comm_create(&cc, comms, MAXG, NULL, &err), SL_EINVAL, &err, "twice");
    bad[1] = sl_cuda(99);
    CHECK_FAILS(sl_comm_create(&cc, comms, MAXG, NULL, &err), SL_EINVAL, &err, "not a GPU");

    /* abort: once one handle aborts the group, every rank's collectives fail with SL_ECLOSED.
     * (A rank already waiting inside NCCL for a peer that never comes is released by
     * ncclCommAbort only as far as NCCL's kernels honour its abort flag; not tested here.) */
    cc.devices = devs;
    CHECK_OK(sl_comm_create(&cc, comms, MAXG, NULL, &err), &err);
    sl_comm_abort(comms[1]);
    CHECK_FAILS(sl_comm_allreduce(comms[0], comms, 1, SL_DTYPE_F32, SL_REDUCE_SUM, NULL, &err),
                SL_ECLOSED, &err, "aborted");
    CHECK_FAILS(sl_comm_barrier(comms[1], &err), SL_ECLOSED, &err, "aborted");
    sl_comm_free(comms[0]);
    sl_comm_free(comms[1]);
    printf("nccl: abort closes the group\n");
    return check_done();
}
