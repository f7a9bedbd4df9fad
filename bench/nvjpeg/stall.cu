/* SPDX-License-Identifier: Apache-2.0 */
/* Standalone probe: does nvJPEG's hardware back end (nvjpegDecodeBatched on the JPEG engines) stop
 * making progress when the GPU is busy with other work, and under which way of calling it? No
 * sluice code: nvJPEG, the CUDA runtime and a spinning kernel as the "someone else's work".
 * Settings, as key=value arguments:
 *   dec=N        decoding threads, each with its own state and stream on one shared hardware
 *                handle; their calls are serialised by one mutex (default 1)
 *   load=none|legacy|own   kernels of ~2 ms each keep every SM busy, queued on the legacy default
 *                stream (as PyTorch queues its work) or on a stream of their own (default legacy)
 *   sync=N       the load's thread waits for the whole device (cudaDeviceSynchronize, as
 *                torch.cuda.synchronize) every N kernels; 0: never (default 8)
 *   malloc=1     and frees and takes 256 MB of device memory each time (cudaFree waits for the
 * device) barrier=1    each decode call waits on the host for its own stream first after=1      and
 * the decoding thread waits on the host for its stream after each call yuv=0|1      planes out
 * (NVJPEG_OUTPUT_YUV) or interleaved RGB (default 1) supported=1  a thread parses headers and asks
 * nvjpegDecodeBatchedSupported on the hardware handle meanwhile, outside the mutex consumer=N   who
 * waits for each batch's event: 0 the decoding thread, on the host, before its next call; 1 a
 * consumer thread's stream (cudaStreamWaitEvent), whose kernel then reads the planes while the next
 * batch is decoded (two batch slots); 2 the same consumer, but waiting on the host
 * (cudaEventSynchronize) before its kernel; 3 nobody: the decoding thread calls again at once
 * (default 0) batch=B dur=S stall=S   images per call (128), seconds to run (20), seconds without a
 * batch that count as a stall (10) The JPEGs: every *.jpg under DIR (bench/make_photos makes them).
 * Prints one line: the settings, batches, images/s and "ok" or "STALL after K batches" (exit 3).
 *   nvcc -O2 bench/nvjpeg/stall.cu -lnvjpeg -lpthread -o /tmp/stall && /tmp/stall DIR load=legacy
 */
#include <cuda_runtime.h>
#include <nvjpeg.h>

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int n_dec = 1, sync_every = 8, do_malloc = 0, barrier = 0, after = 0, yuv = 1, supported = 0,
           consumer = 0, B = 128;
static double dur = 20, stall_s = 10;
static const char *load = "legacy";

static unsigned char **files;
static size_t *lens;
static int nfiles;

static nvjpegHandle_t hw;
static pthread_mutex_t engine = PTHREAD_MUTEX_INITIALIZER;
static volatile int stop;
static volatile long batches;
static volatile double last_progress;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

#define CK(x)                                                                                      \
    do {                                                                                           \
        int e__ = (int)(x);                                                                        \
        if (e__) {                                                                                 \
            printf("%s failed: %d (line %d)\n", #x, e__, __LINE__);                                \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

__global__ void spin(long long cycles) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
}

__global__ void touch(const unsigned char *p, size_t n, unsigned *out) {
    unsigned s = 0;
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        s += p[i];
    atomicAdd(out, s);
}

static void *load_thread(void *arg) {
    (void)arg;
    cudaStream_t s = 0;
    if (!strcmp(load, "own")) CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    void *big = NULL;
    if (do_malloc) CK(cudaMalloc(&big, 256 << 20));
    for (long k = 1; !stop; k++) {
        spin<<<132 * 8, 256, 0, s>>>(4000000); /* ~2 ms at the H200's clock */
        if (sync_every && k % sync_every == 0) {
            CK(cudaDeviceSynchronize());
            if (do_malloc) {
                CK(cudaFree(big));
                CK(cudaMalloc(&big, 256 << 20));
            }
        }
    }
    return NULL;
}

/* A batch slot: planes (or RGB) block, its event, and whether the consumer still reads it. */
typedef struct slot {
    unsigned char *dev;
    size_t bytes;
    cudaEvent_t ev;
    int busy;
} slot;

static pthread_mutex_t qm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t qc = PTHREAD_COND_INITIALIZER;
static slot *queue[64];
static int qhead, qtail;

static void *consumer_thread(void *arg) {
    (void)arg;
    cudaStream_t cs;
    CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
    unsigned *sum;
    CK(cudaMalloc(&sum, sizeof *sum));
    while (!stop) {
        pthread_mutex_lock(&qm);
        while (qhead == qtail && !stop) pthread_cond_wait(&qc, &qm);
        slot *sl = qhead == qtail ? NULL : queue[qhead++ % 64];
        pthread_mutex_unlock(&qm);
        if (!sl) break;
        if (consumer == 2)
            CK(cudaEventSynchronize(sl->ev));
        else
            CK(cudaStreamWaitEvent(cs, sl->ev, 0));
        touch<<<132, 256, 0, cs>>>(sl->dev, sl->bytes, sum);
        CK(cudaStreamSynchronize(cs));
        pthread_mutex_lock(&qm);
        sl->busy = 0;
        pthread_cond_broadcast(&qc);
        pthread_mutex_unlock(&qm);
    }
    return NULL;
}

static void *supported_thread(void *arg) {
    (void)arg;
    nvjpegJpegStream_t js;
    CK(nvjpegJpegStreamCreate(hw, &js));
    for (int i = 0; !stop; i++) {
        int no = 1;
        if (nvjpegJpegStreamParseHeader(hw, files[i % nfiles], lens[i % nfiles], js) == 0)
            nvjpegDecodeBatchedSupported(hw, js, &no);
    }
    nvjpegJpegStreamDestroy(js);
    return NULL;
}

static void *decode_thread(void *arg) {
    long id = (long)arg;
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    nvjpegJpegState_t state;
    pthread_mutex_lock(&engine);
    CK(nvjpegJpegStateCreate(hw, &state));
    pthread_mutex_unlock(&engine);
    nvjpegJpegStream_t js;
    CK(nvjpegJpegStreamCreate(hw, &js));
    const unsigned char **bits = (const unsigned char **)calloc(B, sizeof *bits);
    size_t *bl = (size_t *)calloc(B, sizeof *bl);
    nvjpegImage_t *imgs = (nvjpegImage_t *)calloc(B, sizeof *imgs);
    slot slots[2];
    size_t per = (size_t)512 * 512 * 3; /* room for any of the photos, planes or RGB */
    for (int s = 0; s < 2; s++) {
        slots[s].bytes = per * B;
        CK(cudaMalloc(&slots[s].dev, slots[s].bytes));
        CK(cudaEventCreateWithFlags(&slots[s].ev, cudaEventDisableTiming));
        slots[s].busy = 0;
    }
    for (long k = 0; !stop; k++) {
        slot *sl = &slots[k % 2];
        pthread_mutex_lock(&qm);
        while (sl->busy && !stop) pthread_cond_wait(&qc, &qm);
        pthread_mutex_unlock(&qm);
        for (int i = 0; i < B; i++) {
            int f = (int)((k * B + i + id * 7) % nfiles);
            bits[i] = files[f], bl[i] = lens[f];
            unsigned char *p = sl->dev + per * i;
            memset(&imgs[i], 0, sizeof imgs[i]);
            if (yuv) { /* planes of up to 512 x 512 luma, 4:2:0 chroma */
                imgs[i].channel[0] = p, imgs[i].pitch[0] = 512;
                imgs[i].channel[1] = p + 512 * 512, imgs[i].pitch[1] = 256;
                imgs[i].channel[2] = p + 512 * 512 + 256 * 256, imgs[i].pitch[2] = 256;
            } else {
                imgs[i].channel[0] = p, imgs[i].pitch[0] = 512 * 3;
            }
        }
        if (barrier) CK(cudaStreamSynchronize(st));
        pthread_mutex_lock(&engine);
        nvjpegStatus_t r = nvjpegDecodeBatchedInitialize(
            hw, state, B, 1, yuv ? NVJPEG_OUTPUT_YUV : NVJPEG_OUTPUT_RGBI);
        if (r == 0) r = nvjpegDecodeBatched(hw, state, bits, bl, imgs, st);
        pthread_mutex_unlock(&engine);
        if (r != 0) {
            printf("nvjpegDecodeBatched: status %d\n", (int)r);
            exit(2);
        }
        if (after) CK(cudaStreamSynchronize(st));
        CK(cudaEventRecord(sl->ev, st));
        if (consumer == 1 || consumer == 2) {
            pthread_mutex_lock(&qm);
            sl->busy = 1;
            queue[qtail++ % 64] = sl;
            pthread_cond_broadcast(&qc);
            pthread_mutex_unlock(&qm);
        } else if (consumer == 0) {
            CK(cudaEventSynchronize(sl->ev));
        }
        __atomic_fetch_add(&batches, 1, __ATOMIC_RELAXED);
        last_progress = now();
    }
    return NULL;
}

static void read_dir(const char *dir, int depth) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t n = strlen(e->d_name);
        if (n > 4 && !strcmp(e->d_name + n - 4, ".jpg")) {
            FILE *f = fopen(path, "rb");
            if (!f) continue;
            fseek(f, 0, SEEK_END);
            long sz = ftell(f);
            fseek(f, 0, SEEK_SET);
            files = (unsigned char **)realloc(files, (nfiles + 1) * sizeof *files);
            lens = (size_t *)realloc(lens, (nfiles + 1) * sizeof *lens);
            files[nfiles] = (unsigned char *)malloc(sz);
            lens[nfiles] = fread(files[nfiles], 1, sz, f);
            nfiles++;
            fclose(f);
        } else if (depth < 2) {
            read_dir(path, depth + 1);
        }
    }
    closedir(d);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR [key=value...]\n", argv[0]);
        return 2;
    }
    read_dir(argv[1], 0);
    if (nfiles == 0) {
        fprintf(stderr, "no .jpg under %s\n", argv[1]);
        return 2;
    }
    char cfg[512] = "";
    for (int i = 2; i < argc; i++) {
        char *v = strchr(argv[i], '=');
        if (!v) continue;
        *v++ = 0;
        const char *k = argv[i];
        if (!strcmp(k, "dec"))
            n_dec = atoi(v);
        else if (!strcmp(k, "load"))
            load = v;
        else if (!strcmp(k, "sync"))
            sync_every = atoi(v);
        else if (!strcmp(k, "malloc"))
            do_malloc = atoi(v);
        else if (!strcmp(k, "barrier"))
            barrier = atoi(v);
        else if (!strcmp(k, "after"))
            after = atoi(v);
        else if (!strcmp(k, "yuv"))
            yuv = atoi(v);
        else if (!strcmp(k, "supported"))
            supported = atoi(v);
        else if (!strcmp(k, "consumer"))
            consumer = atoi(v);
        else if (!strcmp(k, "batch"))
            B = atoi(v);
        else if (!strcmp(k, "dur"))
            dur = atof(v);
        else if (!strcmp(k, "stall"))
            stall_s = atof(v);
        else {
            fprintf(stderr, "unknown setting %s\n", k);
            return 2;
        }
    }
    snprintf(cfg, sizeof cfg,
             "dec=%d load=%s sync=%d malloc=%d barrier=%d after=%d yuv=%d "
             "supported=%d consumer=%d batch=%d",
             n_dec, load, sync_every, do_malloc, barrier, after, yuv, supported, consumer, B);
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    CK(nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, NULL, NULL, 0, &hw));
    pthread_t t[8];
    int nt = 0;
    if (strcmp(load, "none")) pthread_create(&t[nt++], NULL, load_thread, NULL);
    if (supported) pthread_create(&t[nt++], NULL, supported_thread, NULL);
    if (consumer == 1 || consumer == 2) pthread_create(&t[nt++], NULL, consumer_thread, NULL);
    for (long i = 0; i < n_dec; i++) pthread_create(&t[nt++], NULL, decode_thread, (void *)i);
    double t0 = now();
    last_progress = t0;
    while (now() - t0 < dur) {
        usleep(100000);
        if (now() - last_progress > stall_s) {
            printf("%s: STALL after %ld batches (none for %.0f s)\n", cfg, batches, stall_s);
            fflush(stdout);
            _exit(3);
        }
    }
    printf("%s: ok, %ld batches, %.0f images/s\n", cfg, batches,
           batches * (double)B / (now() - t0));
    fflush(stdout);
    _exit(0);
}
