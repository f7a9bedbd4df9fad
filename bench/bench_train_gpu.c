/* GPU training benchmarks (issue 9), each figure next to its peer measured in the same binary:
 *   1. one training step of the seed's MLP at batch 200 on one GPU (sl_trainer_step: forward and
 *      backward as a CUDA graph, optimiser kernel, the loss read back), per math mode;
 *   2. the all-reduce (average) of the seed's 1,863,690 gradients on 2 GPUs through sl_comm (one
 *      thread per GPU, as the trainer does) against plain NCCL (ncclAllReduce in a group call);
 *   3. scaling: 784-4096-4096-10 at batch 8192 per GPU on 1, 2, 4 ... GPUs, throughput ratio.
 * Usage: bench_train_gpu [steps-for-part-1]. Prints one line per figure. */
#include "sluice/comm.h"
#include "sluice/train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(SLUICE_HAVE_CUDA) && defined(SLUICE_HAVE_NCCL)
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
            printf("      of which forward+backward %.1f us, optimiser update %.1f us (each waited "
                   "for)\n",
                   (t1 - t0) / (steps / 4) * 1e6, (t2 - t1) / (steps / 4) * 1e6);
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
    int steps = argc > 1 ? atoi(argv[1]) : 2000;
    struct cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    printf("bench_train_gpu: %d x %s\n", n, prop.name);
    bench_step(steps);
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
