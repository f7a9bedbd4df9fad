/* SPDX-License-Identifier: Apache-2.0 */
/* GPU training benchmarks, each figure next to its peer measured in the same binary:
 *   1. one training step of the seed's MLP at batch 200 on one GPU (sl_trainer_step: forward and
 *      backward as a CUDA graph, optimiser kernel, the loss read back), per math mode;
 *   2. the all-reduce (average) of the seed's 1,863,690 gradients on 2 GPUs through sl_comm (one
 *      thread per GPU, as the trainer does) against plain NCCL (ncclAllReduce in a group call);
 *   3. scaling: 784-4096-4096-10 at batch 8192 per GPU on 1, 2, 4 ... GPUs, throughput ratio.
 *   4. the step's matrix products alone (cublasGemmEx against cuBLASLt's heuristic candidates), in
 *      fp32, tf32 and bf16 (bfloat16 arrays, as BF16 models hand cuBLAS).
 * Usage: bench_train_gpu [steps-for-part-1 [quick]] (quick: parts 1 and 4 only), or
 * bench_train_gpu profile (a few steps, for ncu). Prints one line per figure. */
#include "sluice/comm.h"
#include "sluice/train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(SLUICE_HAVE_CUDA) && defined(SLUICE_HAVE_NCCL)
#include "train/mlp.h" /* sl__mlp_train_step_async: steps queued back to back */

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <pthread.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define DIE(what, err)                                                                             \
    do {                                                                                           \
        fprintf(stderr, "bench: %s: %s\n", what, (err)->msg);                                      \
        exit(1);                                                                                   \
    } while (0)

/* K replicas of cfg's model on GPUs 0..K-1, each with a random shard of `rows` rows */
typedef struct setup {
    sl_trainer *t;
    sl_tensor xo[8], yo[8];
} setup;

static void make_setup(setup *s, const sl_mlp_config *mc, int K, int64_t rows) {
    sl_trainer_config cfg;
    sl_trainer_config_default(&cfg);
    cfg.model = *mc;
    cfg.replicas = K;
    for (int k = 0; k < K; k++) cfg.devices[k] = sl_cuda(k);
    sl_err err;
    if (sl_trainer_create(&cfg, &s->t, &err) != SL_OK) DIE("trainer", &err);
    const int in = mc->sizes[0], C = mc->sizes[mc->nsizes - 1];
    float *x = malloc(sizeof(float) * (size_t)rows * in), *y = calloc((size_t)rows * C, 4);
    srand(1);
    for (int64_t i = 0; i < rows * in; i++) x[i] = (float)rand() / (float)RAND_MAX;
    for (int64_t r = 0; r < rows; r++) y[r * C + rand() % C] = 1.0f;
    for (int k = 0; k < K; k++) {
        int64_t xs[2] = {rows, in}, ys[2] = {rows, C};
        sl_tensor hx, hy;
        sl_tensor_wrap(&hx, x, SL_DTYPE_F32, sl_cpu(), 2, xs, NULL);
        sl_tensor_wrap(&hy, y, SL_DTYPE_F32, sl_cpu(), 2, ys, NULL);
        if (sl_tensor_alloc(&s->xo[k], SL_DTYPE_F32, sl_cuda(k), 2, xs, NULL, &err) != SL_OK ||
            sl_tensor_alloc(&s->yo[k], SL_DTYPE_F32, sl_cuda(k), 2, ys, NULL, &err) != SL_OK ||
            sl_tensor_copy(&s->xo[k], &hx, NULL, &err) != SL_OK ||
            sl_tensor_copy(&s->yo[k], &hy, NULL, &err) != SL_OK)
            DIE("inputs", &err);
    }
    free(x);
    free(y);
}

static void free_setup(setup *s, int K) {
    for (int k = 0; k < K; k++) {
        sl_tensor_free(&s->xo[k]);
        sl_tensor_free(&s->yo[k]);
    }
    sl_trainer_free(s->t);
}

/* seconds per step over `steps` steps after `warm` */
static double time_steps(setup *s, int warm, int steps, float *loss) {
    sl_err err;
    for (int i = 0; i < warm; i++)
        if (sl_trainer_step(s->t, s->xo, s->yo, loss, &err) != SL_OK) DIE("step", &err);
    double t0 = now();
    for (int i = 0; i < steps; i++)
        if (sl_trainer_step(s->t, s->xo, s->yo, loss, &err) != SL_OK) DIE("step", &err);
    return (now() - t0) / steps;
}

static void bench_step(int steps) {
    static const sl_math modes[3] = {SL_MATH_FP32, SL_MATH_TF32, SL_MATH_BF16};
    for (int graph = 1; graph >= 0; graph--)
        for (int i = 0; i < 3; i++) {
            if (!graph && i > 0) continue;
            sl_mlp_config mc;
            sl_mlp_config_default(&mc);
            mc.math = modes[i];
            mc.cuda_graph = graph;
            setup s;
            make_setup(&s, &mc, 1, 200);
            float loss = 0;
            double t = time_steps(&s, 50, steps, &loss);
            printf("step  seed MLP, batch 200, 1 GPU, %s%s: %.1f us/step (loss %.4f; target <= 40, "
                   "JAX 100)\n",
                   sl_math_name(modes[i]), graph ? ", CUDA graph" : ", no graph", t * 1e6, loss);
            /* where the time goes: forward+backward alone (waited for), the update alone */
            sl_mlp *m = sl_trainer_model(s.t, 0);
            sl_optim *o = sl_trainer_optim(s.t, 0);
            sl_err err;
            double t0 = now();
            for (int k = 0; k < steps / 4; k++)
                if (sl_mlp_loss_grad(m, &s.xo[0], &s.yo[0], NULL, &err) != SL_OK)
                    DIE("loss_grad", &err);
            double t1 = now();
            for (int k = 0; k < steps / 4; k++)
                if (sl_optim_step(o, m, &err) != SL_OK) DIE("optim", &err);
            double t2 = now();
            /* device time per step: steps queued back to back, one wait at the end */
            for (int k = 0; k < 20; k++)
                if (sl__mlp_train_step_async(m, o, &s.xo[0], &s.yo[0], &err) != SL_OK)
                    DIE("train_step_async", &err);
            if (sl__mlp_read_loss(m, &loss, &err) != SL_OK) DIE("read_loss", &err);
            double t3 = now();
            for (int k = 0; k < steps; k++)
                if (sl__mlp_train_step_async(m, o, &s.xo[0], &s.yo[0], &err) != SL_OK)
                    DIE("train_step_async", &err);
            if (sl__mlp_read_loss(m, &loss, &err) != SL_OK) DIE("read_loss", &err);
            double t4 = now();
            printf("      of which forward+backward %.1f us, optimiser update %.1f us (each waited "
                   "for); steps queued back to back %.1f us/step\n",
                   (t1 - t0) / (steps / 4) * 1e6, (t2 - t1) / (steps / 4) * 1e6,
                   (t4 - t3) / steps * 1e6);
            free_setup(&s, 1);
        }
}

/* the data-parallel step at global batch 200 on 2 GPUs (100 rows each) */
static void bench_step2(int steps) {
    static const sl_math modes[2] = {SL_MATH_FP32, SL_MATH_TF32};
    for (int i = 0; i < 2; i++) {
        sl_mlp_config mc;
        sl_mlp_config_default(&mc);
        mc.math = modes[i];
        setup s;
        make_setup(&s, &mc, 2, 100);
        float loss = 0;
        double t = time_steps(&s, 50, steps, &loss);
        printf("step  seed MLP, global batch 200, 2 GPUs (100 each), %s, CUDA graph: %.1f us/step "
               "(loss %.4f)\n",
               sl_math_name(modes[i]), t * 1e6, loss);
        free_setup(&s, 2);
    }
}

/* ---- the step's matrix products alone: cublasGemmEx's default against cuBLASLt's candidates ---
 */

typedef struct gemm_shape {
    const char *what;
    cublasOperation_t ta, tb;
    int m, n, k;
} gemm_shape;

static double time_gemm_ex(cublasHandle_t h, const gemm_shape *g, cublasComputeType_t ct,
                           cudaDataType in, const void *A, const void *B, float *C,
                           cudaStream_t st) {
    const float one = 1.0f, zero = 0.0f;
    const int lda = g->ta == CUBLAS_OP_N ? g->m : g->k, ldb = g->tb == CUBLAS_OP_N ? g->k : g->n;
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    for (int rep = 0; rep < 2; rep++) {
        cudaEventRecord(e0, st);
        for (int i = 0; i < 200; i++)
            cublasGemmEx(h, g->ta, g->tb, g->m, g->n, g->k, &one, A, in, lda, B, in, ldb, &zero, C,
                         CUDA_R_32F, g->m, ct, CUBLAS_GEMM_DEFAULT);
        cudaEventRecord(e1, st);
    }
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return ms * 1e3 / 200;
}

static void bench_gemms(void) {
    static const gemm_shape shapes[] = {
        {"fwd l0  z=x@w0 (o1024,B200,k784)", CUBLAS_OP_N, CUBLAS_OP_N, 1024, 200, 784},
        {"fwd l1  z=a@w1 (1024,200,k1024)", CUBLAS_OP_N, CUBLAS_OP_N, 1024, 200, 1024},
        {"fwd l2  z=a@w2 (10,200,k1024)", CUBLAS_OP_N, CUBLAS_OP_N, 10, 200, 1024},
        {"bwd dw2 (10,1024,k200)", CUBLAS_OP_N, CUBLAS_OP_T, 10, 1024, 200},
        {"bwd da1 (1024,200,k10)", CUBLAS_OP_T, CUBLAS_OP_N, 1024, 200, 10},
        {"bwd dw1 (1024,1024,k200)", CUBLAS_OP_N, CUBLAS_OP_T, 1024, 1024, 200},
        {"bwd da0 (1024,200,k1024)", CUBLAS_OP_T, CUBLAS_OP_N, 1024, 200, 1024},
        {"bwd dw0 (1024,784,k200)", CUBLAS_OP_N, CUBLAS_OP_T, 1024, 784, 200},
    };
    cudaSetDevice(0);
    cudaStream_t st;
    cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    float *A, *B, *C;
    void *ws;
    const size_t ws_bytes = (size_t)32 << 20;
    cudaMalloc((void **)&A, 4u << 22);
    cudaMalloc((void **)&B, 4u << 22);
    cudaMalloc((void **)&C, 4u << 22);
    cudaMalloc(&ws, ws_bytes);
    cudaMemset(A, 0x3c, 4u << 22); /* ~0.01, not zeros */
    cudaMemset(B, 0x3c, 4u << 22);
    cublasHandle_t h;
    cublasCreate(&h);
    cublasSetStream(h, st);
    cublasSetWorkspace(h, ws, ws_bytes);
    cublasLtHandle_t lt;
    cublasLtCreate(&lt);
    /* fp32, tf32, and bf16 (bfloat16 arrays, as the model's BF16 mode hands cuBLAS) */
    static const char *const mname[3] = {"fp32", "tf32", "bf16"};
    for (int tf = 0; tf < 3; tf++) {
        cublasSetMathMode(h, tf == 1 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
        const cublasComputeType_t ct = tf == 1 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
        const cudaDataType in = tf == 2 ? CUDA_R_16BF : CUDA_R_32F;
        double sum_ex = 0, sum_best = 0;
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            const gemm_shape *g = &shapes[si];
            double ex = time_gemm_ex(h, g, ct, in, A, B, C, st);
            /* cuBLASLt: the heuristic's candidates, each timed */
            cublasLtMatmulDesc_t op;
            cublasLtMatmulDescCreate(&op, ct, CUDA_R_32F);
            cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &g->ta, sizeof g->ta);
            cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &g->tb, sizeof g->tb);
            const int ar = g->ta == CUBLAS_OP_N ? g->m : g->k,
                      ac = g->ta == CUBLAS_OP_N ? g->k : g->m;
            const int br = g->tb == CUBLAS_OP_N ? g->k : g->n,
                      bc = g->tb == CUBLAS_OP_N ? g->n : g->k;
            cublasLtMatrixLayout_t la, lb, lc;
            cublasLtMatrixLayoutCreate(&la, in, (uint64_t)ar, (uint64_t)ac, ar);
            cublasLtMatrixLayoutCreate(&lb, in, (uint64_t)br, (uint64_t)bc, br);
            cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, (uint64_t)g->m, (uint64_t)g->n, g->m);
            cublasLtMatmulPreference_t pref;
            cublasLtMatmulPreferenceCreate(&pref);
            cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                 &ws_bytes, sizeof ws_bytes);
            cublasLtMatmulHeuristicResult_t res[16];
            int nres = 0;
            cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 16, res, &nres);
            double best = 1e9, first = 0;
            int best_i = -1;
            const float one = 1.0f, zero = 0.0f;
            cudaEvent_t e0, e1;
            cudaEventCreate(&e0);
            cudaEventCreate(&e1);
            for (int r = 0; r < nres; r++) {
                int okrun = 1;
                for (int rep = 0; rep < 2 && okrun; rep++) {
                    cudaEventRecord(e0, st);
                    for (int i = 0; i < 200; i++)
                        if (cublasLtMatmul(lt, op, &one, A, la, B, lb, &zero, C, lc, C, lc,
                                           &res[r].algo, ws, ws_bytes,
                                           st) != CUBLAS_STATUS_SUCCESS) {
                            okrun = 0;
                            break;
                        }
                    cudaEventRecord(e1, st);
                }
                cudaEventSynchronize(e1);
                float ms = 0;
                cudaEventElapsedTime(&ms, e0, e1);
                double us = okrun ? ms * 1e3 / 200 : 1e9;
                if (r == 0) first = us;
                if (us < best) {
                    best = us;
                    best_i = r;
                }
            }
            cudaEventDestroy(e0);
            cudaEventDestroy(e1);
            sum_ex += ex;
            sum_best += best < ex ? best : ex;
            printf("gemm  %s %-34s GemmEx %6.2f us | Lt #0 %6.2f us | best of %2d: #%d %6.2f us "
                   "(%.1f TFLOP/s)\n",
                   mname[tf], g->what, ex, first, nres, best_i, best,
                   2.0 * g->m * g->n * g->k / (best < ex ? best : ex) / 1e6);
            cublasLtMatmulPreferenceDestroy(pref);
            cublasLtMatrixLayoutDestroy(la);
            cublasLtMatrixLayoutDestroy(lb);
            cublasLtMatrixLayoutDestroy(lc);
            cublasLtMatmulDescDestroy(op);
        }
        printf("gemm  %s: sum GemmEx %.1f us, sum best %.1f us (back to back, no gaps)\n",
               mname[tf], sum_ex, sum_best);
    }
    cublasLtDestroy(lt);
    cublasDestroy(h);
    cudaFree(A);
    cudaFree(B);
    cudaFree(C);
    cudaFree(ws);
    cudaStreamDestroy(st);
}

/* a few steps for a profiler (ncu): 1 GPU, fp32, tf32 then bf16, graphs on */
static void profile_steps(void) {
    static const sl_math modes[3] = {SL_MATH_FP32, SL_MATH_TF32, SL_MATH_BF16};
    for (int i = 0; i < 3; i++) {
        sl_mlp_config mc;
        sl_mlp_config_default(&mc);
        mc.math = modes[i];
        setup s;
        make_setup(&s, &mc, 1, 200);
        float loss;
        time_steps(&s, 3, 2, &loss);
        free_setup(&s, 1);
    }
}

/* ---- all-reduce ---------------------------------------------------------------------------- */

#define AR_N     1863690
#define AR_ITERS 500

typedef struct ar_ctx {
    sl_comm *c;
    int dev;
    float *buf;
    cudaStream_t stream;
    pthread_barrier_t *bar;
    int sync_each;
    double secs;
} ar_ctx;

static void *ar_thread(void *arg) {
    ar_ctx *a = arg;
    sl_err err;
    cudaSetDevice(a->dev);
    for (int w = 0; w < 20; w++)
        if (sl_comm_allreduce(a->c, a->buf, AR_N, SL_DTYPE_F32, SL_REDUCE_AVG, a->stream, &err))
            DIE("allreduce", &err);
    cudaStreamSynchronize(a->stream);
    pthread_barrier_wait(a->bar);
    double t0 = now();
    for (int i = 0; i < AR_ITERS; i++) {
        if (sl_comm_allreduce(a->c, a->buf, AR_N, SL_DTYPE_F32, SL_REDUCE_AVG,
                              a->sync_each ? NULL : a->stream, &err))
            DIE("allreduce", &err);
    }
    cudaStreamSynchronize(a->stream);
    pthread_barrier_wait(a->bar);
    a->secs = (now() - t0) / AR_ITERS;
    return NULL;
}

static void bench_allreduce(void) {
    const int G = 2;
    sl_device devs[2] = {sl_cuda(0), sl_cuda(1)};
    float *bufs[2];
    cudaStream_t streams[2];
    for (int i = 0; i < G; i++) {
        cudaSetDevice(i);
        cudaMalloc((void **)&bufs[i], sizeof(float) * AR_N);
        cudaMemset(bufs[i], 0, sizeof(float) * AR_N);
        cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking);
    }
    /* plain NCCL: one thread, a group call per iteration */
    ncclComm_t nc[2];
    int ids[2] = {0, 1};
    if (ncclCommInitAll(nc, G, ids) != ncclSuccess) {
        fprintf(stderr, "bench: ncclCommInitAll failed\n");
        exit(1);
    }
    double nccl_t = 0;
    for (int rep = 0; rep < 2; rep++) {
        double t0 = now();
        int iters = rep ? AR_ITERS : 20;
        for (int it = 0; it < iters; it++) {
            ncclGroupStart();
            for (int i = 0; i < G; i++)
                ncclAllReduce(bufs[i], bufs[i], AR_N, ncclFloat32, ncclAvg, nc[i], streams[i]);
            ncclGroupEnd();
        }
        for (int i = 0; i < G; i++) {
            cudaSetDevice(i);
            cudaStreamSynchronize(streams[i]);
        }
        nccl_t = (now() - t0) / iters;
    }
    for (int i = 0; i < G; i++) ncclCommDestroy(nc[i]);
    /* sl_comm: one thread per GPU */
    sl_comm_config cc;
    memset(&cc, 0, sizeof cc);
    cc.kind = SL_COMM_NCCL;
    cc.size = G;
    cc.devices = devs;
    sl_comm *comms[2];
    sl_err err;
    if (sl_comm_create(&cc, comms, 2, NULL, &err) != SL_OK) DIE("sl_comm_create", &err);
    double sl_t[2] = {0, 0};
    for (int sync_each = 0; sync_each < 2; sync_each++) {
        pthread_barrier_t bar;
        pthread_barrier_init(&bar, NULL, G);
        ar_ctx a[2];
        pthread_t th[2];
        for (int i = 0; i < G; i++) {
            a[i].c = comms[i];
            a[i].dev = i;
            a[i].buf = bufs[i];
            a[i].stream = streams[i];
            a[i].bar = &bar;
            a[i].sync_each = sync_each;
            pthread_create(&th[i], NULL, ar_thread, &a[i]);
        }
        for (int i = 0; i < G; i++) pthread_join(th[i], NULL);
        sl_t[sync_each] = a[0].secs > a[1].secs ? a[0].secs : a[1].secs;
        pthread_barrier_destroy(&bar);
    }
    for (int i = 0; i < G; i++) sl_comm_free(comms[i]);
    printf("allreduce  %d floats (avg), 2 GPUs: NCCL alone %.1f us, sl_comm %.1f us (%.2fx), "
           "sl_comm waiting each call %.1f us\n",
           AR_N, nccl_t * 1e6, sl_t[0] * 1e6, sl_t[0] / nccl_t, sl_t[1] * 1e6);
    for (int i = 0; i < G; i++) {
        cudaSetDevice(i);
        cudaFree(bufs[i]);
        cudaStreamDestroy(streams[i]);
    }
}

/* ---- scaling ------------------------------------------------------------------------------- */

static void bench_scaling(int ngpus) {
    static const sl_math modes[2] = {SL_MATH_FP32, SL_MATH_TF32};
    for (int mi = 0; mi < 2; mi++) {
        double base = 0;
        for (int K = 1; K <= ngpus && K <= 8; K *= 2) {
            sl_mlp_config mc;
            sl_mlp_config_default(&mc);
            mc.sizes[1] = mc.sizes[2] = 4096;
            mc.math = modes[mi];
            setup s;
            make_setup(&s, &mc, K, 8192);
            float loss;
            double t = time_steps(&s, 3, 20, &loss);
            double thr = K * 8192.0 / t;
            if (K == 1) base = thr;
            printf("scaling  784-4096-4096-10, batch 8192/GPU, %s, %d GPU%s: %.2f ms/step, %.0f "
                   "samples/s, efficiency %.3f\n",
                   sl_math_name(modes[mi]), K, K > 1 ? "s" : "", t * 1e3, thr, thr / (K * base));
            free_setup(&s, K);
        }
    }
}

int main(int argc, char **argv) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
        printf("bench_train_gpu: no GPU\n");
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "profile") == 0) {
        profile_steps();
        return 0;
    }
    const int quick = argc > 2 && strcmp(argv[2], "quick") == 0; /* the batch-200 step only */
    int steps = argc > 1 ? atoi(argv[1]) : 2000;
    struct cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    printf("bench_train_gpu: %d x %s\n", n, prop.name);
    bench_step(steps);
    if (n >= 2) bench_step2(steps);
    bench_gemms();
    if (quick) return 0;
    if (n >= 2)
        bench_allreduce();
    else
        printf("allreduce: skipped (1 GPU)\n");
    bench_scaling(n);
    return 0;
}
#else
int main(void) {
    printf("bench_train_gpu: this build has no CUDA/NCCL\n");
    return 0;
}
#endif
