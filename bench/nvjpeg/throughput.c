/* SPDX-License-Identifier: Apache-2.0 */
/* Standalone nvJPEG throughput probe: how many of the DALI_extra photos a
 * second each nvJPEG back end, and libjpeg-turbo, decode on this machine, alone and side by side,
 * with no sluice code in the way. Each argument KIND:BACKEND:THREADS starts THREADS threads:
 *   batch:B:T      nvjpegDecodeBatched of B images per call (env B, default 128) with back end B
 *                  (0 default, 1 hybrid, 2 GPU hybrid, 3 hardware engines); env YUV=1: planes out
 *   decoupled:B:T  the decoupled API (parse, DecodeJpegHost, TransferToDevice, DecodeJpegDevice),
 *                  one image at a time per thread, back end B (1 hybrid, 2 GPU hybrid)
 *   cpu:0:T        libjpeg-turbo whole decodes
 * All run together for DUR seconds (env, default 3) after a warm-up; it prints images/s per group
 * and in total. batch: env DISTINCT=1 gives every slot its own copy of the bitstream (as a
 * pipeline's samples are); INIT_EACH=1 calls nvjpegDecodeBatchedInitialize before every call (as
 * sluice does); BVAR=1 alternates the batch size between B and B - 1 (implies INIT_EACH). Build and
 * run on the GPU machine, from the repository root (env FILES="A B C D": four other JPEGs instead
 * of the photos):
 *   gcc -O2 bench/nvjpeg/throughput.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64 \
 *       -lnvjpeg -lcudart -ljpeg -lpthread -o /tmp/nvjt
 *   PHOTOS=tests/fixtures/dali_extra/jpeg /tmp/nvjt batch:3:1 cpu:0:15
 * Figures: bench/RESULTS.md, section 6 ("The decode ceiling"). */
#define _GNU_SOURCE
#include <stdio.h>
#include <cuda_runtime.h>
#include <nvjpeg.h>
#include <jpeglib.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <stdatomic.h>

static unsigned char *img[4];
static size_t len[4];
static int W[4], H[4];
static double dur = 3.0;
static int B = 128;
static atomic_int go, stop;
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
#define CK(x)                                                                                      \
    do {                                                                                           \
        nvjpegStatus_t s_ = (x);                                                                   \
        if (s_) {                                                                                  \
            fprintf(stderr, "%s:%d %s -> %d\n", __FILE__, __LINE__, #x, (int)s_);                  \
            return (void *)(long)s_;                                                               \
        }                                                                                          \
    } while (0)
#define CC(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_) {                                                                                  \
            fprintf(stderr, "%s:%d %s -> %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));   \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

typedef struct {
    int kind;
    int backend;
    int tid;
    long count;
    int fail;
} job;
enum { K_BATCH, K_DECOUPLED, K_CPU };

static void *batch_worker(void *a) {
    job *j = a;
    CC(cudaSetDevice(0));
    int yuv = getenv("YUV") != NULL;
    nvjpegHandle_t h;
    CK(nvjpegCreateEx((nvjpegBackend_t)j->backend, NULL, NULL, 0, &h));
    nvjpegJpegState_t st;
    CK(nvjpegJpegStateCreate(h, &st));
    cudaStream_t s;
    CC(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const unsigned char **bits = calloc(B, sizeof *bits);
    size_t *lens = calloc(B, sizeof *lens);
    nvjpegImage_t *out = calloc(B, sizeof *out);
    const int distinct = getenv("DISTINCT") != NULL, init_each = getenv("INIT_EACH") != NULL;
    const int bvar = getenv("BVAR") != NULL;
    for (int i = 0; i < B; i++) {
        int k = (i + j->tid) % 4;
        bits[i] = img[k];
        lens[i] = len[k];
        if (distinct) { /* each slot its own copy, as a pipeline's samples are */
            unsigned char *c = malloc(len[k]);
            if (!c) {
                fprintf(stderr, "out of memory for the bitstream copies\n");
                exit(1);
            }
            memcpy(c, img[k], len[k]);
            bits[i] = c;
        }
        CC(cudaMalloc((void **)&out[i].channel[0], (size_t)W[k] * H[k] * 3));
        out[i].pitch[0] = (size_t)W[k] * 3;
        if (yuv) {
            size_t yp = (W[k] + 31) & ~31, cp = ((W[k] + 1) / 2 + 31) & ~31;
            out[i].pitch[0] = yp;
            out[i].pitch[1] = out[i].pitch[2] = cp;
            out[i].channel[1] = out[i].channel[0] + yp * H[k];
            out[i].channel[2] = out[i].channel[1] + cp * ((H[k] + 1) / 2);
        }
    }
    CK(nvjpegDecodeBatchedInitialize(h, st, B, 1, yuv ? NVJPEG_OUTPUT_YUV : NVJPEG_OUTPUT_RGBI));
    CK(nvjpegDecodeBatched(h, st, bits, lens, out, s));
    CC(cudaStreamSynchronize(s)); /* warm */
    while (!atomic_load(&go))
        ;
    int calls = 0;
    while (!atomic_load(&stop)) {
        const int nb = bvar && (calls++ & 1) ? B - 1 : B; /* BVAR: batch sizes alternate */
        nvjpegStatus_t r = NVJPEG_STATUS_SUCCESS;
        if (init_each || bvar) /* INIT_EACH: initialised before every call, as sluice does */
            r = nvjpegDecodeBatchedInitialize(h, st, nb, 1,
                                              yuv ? NVJPEG_OUTPUT_YUV : NVJPEG_OUTPUT_RGBI);
        if (!r) r = nvjpegDecodeBatched(h, st, bits, lens, out, s);
        if (r) {
            if (!j->fail++) fprintf(stderr, "batched backend %d: status %d\n", j->backend, r);
            break;
        }
        CC(cudaStreamSynchronize(s));
        j->count += nb;
    }
    return NULL;
}

static void *decoupled_worker(void *a) {
    job *j = a;
    CC(cudaSetDevice(0));
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    nvjpegHandle_t h;
    nvjpegJpegDecoder_t dec;
    nvjpegJpegState_t st;
    nvjpegBufferPinned_t pin[2];
    nvjpegBufferDevice_t devb;
    nvjpegJpegStream_t js[2];
    nvjpegDecodeParams_t par;
    pthread_mutex_lock(&mu);
    CK(nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, NULL, NULL, 0, &h));
    CK(nvjpegDecoderCreate(h, (nvjpegBackend_t)j->backend, &dec));
    CK(nvjpegDecoderStateCreate(h, dec, &st));
    CK(nvjpegBufferPinnedCreate(h, NULL, &pin[0]));
    CK(nvjpegBufferPinnedCreate(h, NULL, &pin[1]));
    CK(nvjpegBufferDeviceCreate(h, NULL, &devb));
    CK(nvjpegJpegStreamCreate(h, &js[0]));
    CK(nvjpegJpegStreamCreate(h, &js[1]));
    CK(nvjpegDecodeParamsCreate(h, &par));
    CK(nvjpegDecodeParamsSetOutputFormat(par, NVJPEG_OUTPUT_RGBI));
    CK(nvjpegStateAttachDeviceBuffer(st, devb));
    pthread_mutex_unlock(&mu);
    cudaStream_t s;
    CC(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    nvjpegImage_t out[4];
    memset(out, 0, sizeof out);
    for (int k = 0; k < 4; k++) {
        CC(cudaMalloc((void **)&out[k].channel[0], (size_t)W[k] * H[k] * 3));
        out[k].pitch[0] = (size_t)W[k] * 3;
    }
    int i = j->tid, warm = 4;
    while (!atomic_load(&stop)) {
        if (warm == 0) {
            while (!atomic_load(&go))
                ;
            warm = -1;
        }
        int k = i % 4, b = i & 1;
        i++;
        nvjpegStatus_t r = nvjpegJpegStreamParse(h, img[k], len[k], 0, 0, js[b]);
        if (!r) r = nvjpegStateAttachPinnedBuffer(st, pin[b]);
        if (!r) r = nvjpegDecodeJpegHost(h, dec, st, par, js[b]);
        if (!r) r = nvjpegDecodeJpegTransferToDevice(h, dec, st, js[b], s);
        if (!r) r = nvjpegDecodeJpegDevice(h, dec, st, &out[k], s);
        if (r) {
            if (!j->fail++) fprintf(stderr, "decoupled backend %d: status %d\n", j->backend, r);
            break;
        }
        if (warm > 0) {
            warm--;
            CC(cudaStreamSynchronize(s));
            continue;
        }
        j->count++;
    }
    CC(cudaStreamSynchronize(s));
    return NULL;
}

static void *cpu_worker(void *a) {
    job *j = a;
    unsigned char *buf = malloc(1280 * 900 * 3);
    struct jpeg_decompress_struct ci;
    struct jpeg_error_mgr em;
    ci.err = jpeg_std_error(&em);
    jpeg_create_decompress(&ci);
    int i = j->tid;
    while (!atomic_load(&go))
        ;
    while (!atomic_load(&stop)) {
        int k = i++ % 4;
        jpeg_mem_src(&ci, img[k], len[k]);
        jpeg_read_header(&ci, 1);
        ci.out_color_space = JCS_RGB;
        jpeg_start_decompress(&ci);
        while (ci.output_scanline < ci.output_height) {
            JSAMPROW r = buf + (size_t)ci.output_scanline * W[k] * 3;
            jpeg_read_scanlines(&ci, &r, 1);
        }
        jpeg_finish_decompress(&ci);
        j->count++;
    }
    return NULL;
}

int main(int argc, char **argv) {
    const char *names[4] = {"padlock-406986_640", "site-1534685_1280", "snail-4291306_1280",
                            "swan-3584559_640"};
    const char *dir = getenv("PHOTOS");
    char *files = getenv("FILES") ? strdup(getenv("FILES")) : NULL, *next = files;
    for (int k = 0; k < 4; k++) {
        char p[512];
        char *f1 = next ? strsep(&next, " ") : NULL;
        if (files && (!f1 || !*f1)) {
            fprintf(stderr, "FILES names fewer than 4 images\n");
            return 1;
        }
        if (f1)
            snprintf(p, sizeof p, "%s", f1);
        else
            snprintf(p, sizeof p, "%s/%s.jpg", dir, names[k]);
        FILE *f = fopen(p, "rb");
        if (!f) {
            perror(p);
            return 1;
        }
        fseek(f, 0, SEEK_END);
        len[k] = ftell(f);
        rewind(f);
        img[k] = malloc(len[k]);
        if (fread(img[k], 1, len[k], f) != len[k]) return 1;
        fclose(f);
        int nc;
        nvjpegChromaSubsampling_t ss;
        int w[4], hh[4];
        nvjpegHandle_t h;
        nvjpegCreateSimple(&h);
        nvjpegGetImageInfo(h, img[k], len[k], &nc, &ss, w, hh);
        W[k] = w[0];
        H[k] = hh[0];
        nvjpegDestroy(h);
    }
    if (getenv("B")) B = atoi(getenv("B"));
    if (getenv("DUR")) dur = atof(getenv("DUR"));
    /* simple API check */
    {
        nvjpegHandle_t h;
        nvjpegJpegState_t st;
        void *d;
        cudaMalloc(&d, 1280 * 900 * 3);
        int bes[] = {NVJPEG_BACKEND_DEFAULT, NVJPEG_BACKEND_HYBRID, NVJPEG_BACKEND_GPU_HYBRID};
        for (int b = 0; b < 3; b++) {
            nvjpegStatus_t r = nvjpegCreateEx(bes[b], NULL, NULL, 0, &h);
            if (r) {
                printf("simple create backend %d: %d\n", bes[b], r);
                continue;
            }
            nvjpegJpegStateCreate(h, &st);
            nvjpegImage_t o = {0};
            o.channel[0] = d;
            o.pitch[0] = W[1] * 3;
            r = nvjpegDecode(h, st, img[1], len[1], NVJPEG_OUTPUT_RGBI, &o, 0);
            cudaDeviceSynchronize();
            printf("simple nvjpegDecode backend %d: status %d\n", bes[b], r);
            nvjpegJpegStateDestroy(st);
            nvjpegDestroy(h);
        }
    }
    /* argv: kind:backend:threads ... e.g. batch:3:1 decoupled:1:8 cpu:0:8 */
    job jobs[256];
    pthread_t th[256];
    int n = 0;
    char *lab[256];
    for (int a = 1; a < argc; a++) {
        char kind[32];
        int be, t;
        if (sscanf(argv[a], "%31[a-z]:%d:%d", kind, &be, &t) != 3) return 2;
        for (int x = 0; x < t; x++) {
            jobs[n] = (job){!strcmp(kind, "batch")       ? K_BATCH
                            : !strcmp(kind, "decoupled") ? K_DECOUPLED
                                                         : K_CPU,
                            be, x, 0, 0};
            lab[n] = argv[a];
            pthread_create(&th[n], NULL,
                           jobs[n].kind == K_BATCH       ? batch_worker
                           : jobs[n].kind == K_DECOUPLED ? decoupled_worker
                                                         : cpu_worker,
                           &jobs[n]);
            n++;
        }
    }
    struct timespec ts = {1, 500000000};
    nanosleep(&ts, NULL);
    double t0 = now();
    atomic_store(&go, 1);
    ts.tv_sec = (time_t)dur;
    ts.tv_nsec = (long)((dur - (int)dur) * 1e9);
    nanosleep(&ts, NULL);
    atomic_store(&stop, 1);
    double t1 = now();
    long tot = 0;
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
    const char *last = NULL;
    long grp = 0;
    for (int i = 0; i <= n; i++) {
        if (i == n || (last && strcmp(last, lab[i]))) {
            printf("  %-16s %8.0f img/s\n", last, grp / (t1 - t0));
            grp = 0;
        }
        if (i == n) break;
        last = lab[i];
        grp += jobs[i].count;
        tot += jobs[i].count;
    }
    printf("TOTAL %s: %.0f img/s (B=%d)\n", argc > 1 ? argv[1] : "", tot / (t1 - t0), B);
    return 0;
}
