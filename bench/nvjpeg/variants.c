/* SPDX-License-Identifier: Apache-2.0 */
/* Standalone nvJPEG experiment: which way of calling nvJPEG's non-hardware back ends
 * decodes the dali_extra photos on this GPU. Reference: the hardware engines (batched), which
 * decode them exactly. Each variant gets fresh handles; "alone" variants run in a child process
 * that never creates a hardware handle. Prints status per image, max |v - hw|, and images/s.
 * Build on the GPU machine:
 *   gcc -O2 bench/nvjpeg/variants.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64 \
 *       -lnvjpeg -lcudart -o /tmp/nvjx && /tmp/nvjx tests/fixtures/dali_extra/jpeg/[a-z]*.jpg */
#include <cuda_runtime.h>
#include <nvjpeg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define N 4
static unsigned char *bits[N];
static size_t lens[N];
static int W[N], H[N], n;
static unsigned char *ref[N], *out[N]; /* device */
static cudaStream_t stream;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static nvjpegImage_t img(unsigned char *d, int i) {
    nvjpegImage_t m;
    memset(&m, 0, sizeof m);
    m.channel[0] = d;
    m.pitch[0] = (size_t)W[i] * 3;
    return m;
}

static int maxdiff(int i) {
    size_t sz = (size_t)W[i] * H[i] * 3;
    unsigned char *a = malloc(sz), *b = malloc(sz);
    cudaMemcpy(a, ref[i], sz, cudaMemcpyDeviceToHost);
    cudaMemcpy(b, out[i], sz, cudaMemcpyDeviceToHost);
    int mx = 0;
    for (size_t k = 0; k < sz; k++) {
        int d = abs(a[k] - b[k]);
        if (d > mx) mx = d;
    }
    free(a);
    free(b);
    return mx;
}

typedef int (*decode_fn)(void *ctx, int i); /* returns nvjpegStatus_t */

static void report(const char *name, decode_fn f, void *ctx) {
    int st[N], ok = 1;
    for (int i = 0; i < n; i++) {
        cudaMemset(out[i], 0, (size_t)W[i] * H[i] * 3);
        st[i] = f(ctx, i);
        ok &= st[i] == 0;
    }
    cudaError_t ce = cudaStreamSynchronize(stream);
    printf("%-44s status", name);
    for (int i = 0; i < n; i++) printf(" %d", st[i]);
    if (ce) printf("  cuda error %d", (int)ce);
    if (ok && !ce) {
        printf("  max|v-hw|");
        for (int i = 0; i < n; i++) printf(" %d", maxdiff(i));
        double t0 = now();
        int iters = 25;
        for (int k = 0; k < iters; k++)
            for (int i = 0; i < n; i++) f(ctx, i);
        cudaStreamSynchronize(stream);
        printf("  %.0f img/s (1 thread)", iters * n / (now() - t0));
    }
    printf("\n");
    fflush(stdout);
}

/* legacy single-image API on a handle made by create */
typedef struct legacy {
    nvjpegHandle_t h;
    nvjpegJpegState_t s;
} legacy;
static int legacy_decode(void *c, int i) {
    legacy *l = c;
    nvjpegImage_t m = img(out[i], i);
    return nvjpegDecode(l->h, l->s, bits[i], lens[i], NVJPEG_OUTPUT_RGBI, &m, stream);
}
static void run_legacy(const char *name, nvjpegBackend_t be, int simple) {
    legacy l;
    int r = simple ? nvjpegCreateSimple(&l.h) : nvjpegCreateEx(be, NULL, NULL, 0, &l.h);
    if (r) {
        printf("%-44s create failed: %d\n", name, r);
        return;
    }
    nvjpegJpegStateCreate(l.h, &l.s);
    report(name, legacy_decode, &l);
    nvjpegJpegStateDestroy(l.s);
    nvjpegDestroy(l.h);
}

/* batched API on a non-hardware handle (what sluice first did) */
static int batched_decode(void *c, int i) {
    legacy *l = c;
    if (i != n - 1) return 0;
    nvjpegImage_t m[N];
    for (int k = 0; k < n; k++) m[k] = img(out[k], k);
    int r = nvjpegDecodeBatchedInitialize(l->h, l->s, n, 1, NVJPEG_OUTPUT_RGBI);
    if (r) return r;
    return nvjpegDecodeBatched(l->h, l->s, (const unsigned char *const *)bits, lens, m, stream);
}

/* decoupled API: decoder + state + pinned/device buffers + stream + params */
typedef struct dec {
    nvjpegHandle_t h;
    nvjpegJpegDecoder_t d;
    nvjpegJpegState_t s;
    nvjpegBufferPinned_t pb;
    nvjpegBufferDevice_t db;
    nvjpegJpegStream_t js;
    nvjpegDecodeParams_t p;
    int one_call;
} dec;
static int dec_decode(void *c, int i) {
    dec *x = c;
    nvjpegImage_t m = img(out[i], i);
    int r = nvjpegJpegStreamParse(x->h, bits[i], lens[i], 0, 0, x->js);
    if (r) return 100 + r;
    if (x->one_call) return nvjpegDecodeJpeg(x->h, x->d, x->s, x->js, &m, x->p, stream);
    if ((r = nvjpegDecodeJpegHost(x->h, x->d, x->s, x->p, x->js))) return 200 + r;
    if ((r = nvjpegDecodeJpegTransferToDevice(x->h, x->d, x->s, x->js, stream))) return 300 + r;
    if ((r = nvjpegDecodeJpegDevice(x->h, x->d, x->s, &m, stream))) return 400 + r;
    return 0;
}
static void run_decoupled(const char *name, nvjpegBackend_t hbe, nvjpegBackend_t dbe, int one) {
    dec x;
    memset(&x, 0, sizeof x);
    x.one_call = one;
    int r = nvjpegCreateEx(hbe, NULL, NULL, 0, &x.h);
    if (!r) r = nvjpegDecoderCreate(x.h, dbe, &x.d);
    if (!r) r = nvjpegDecoderStateCreate(x.h, x.d, &x.s);
    if (!r) r = nvjpegBufferPinnedCreate(x.h, NULL, &x.pb);
    if (!r) r = nvjpegBufferDeviceCreate(x.h, NULL, &x.db);
    if (!r) r = nvjpegStateAttachPinnedBuffer(x.s, x.pb);
    if (!r) r = nvjpegStateAttachDeviceBuffer(x.s, x.db);
    if (!r) r = nvjpegJpegStreamCreate(x.h, &x.js);
    if (!r) r = nvjpegDecodeParamsCreate(x.h, &x.p);
    if (!r) r = nvjpegDecodeParamsSetOutputFormat(x.p, NVJPEG_OUTPUT_RGBI);
    if (r) {
        printf("%-44s setup failed: %d\n", name, r);
        return;
    }
    report(name, dec_decode, &x);
}

static void variants(int with_hw) {
    char nm[96];
    const char *tag = with_hw ? "" : " [alone]";
#define NAME(s) (snprintf(nm, sizeof nm, "%s%s", s, tag), nm)
    run_legacy(NAME("A  CreateEx(DEFAULT) + nvjpegDecode"), NVJPEG_BACKEND_DEFAULT, 0);
    run_legacy(NAME("B  CreateSimple + nvjpegDecode"), NVJPEG_BACKEND_DEFAULT, 1);
    run_legacy(NAME("C  CreateEx(HYBRID) + nvjpegDecode"), NVJPEG_BACKEND_HYBRID, 0);
    run_legacy(NAME("D  CreateEx(GPU_HYBRID) + nvjpegDecode"), NVJPEG_BACKEND_GPU_HYBRID, 0);
    {
        legacy l;
        if (!nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, NULL, NULL, 0, &l.h) &&
            !nvjpegJpegStateCreate(l.h, &l.s))
            report(NAME("E  CreateEx(DEFAULT) + DecodeBatched"), batched_decode, &l);
    }
    run_decoupled(NAME("F  decoupled, decoder HYBRID"), NVJPEG_BACKEND_DEFAULT,
                  NVJPEG_BACKEND_HYBRID, 0);
    run_decoupled(NAME("G  decoupled, decoder GPU_HYBRID"), NVJPEG_BACKEND_DEFAULT,
                  NVJPEG_BACKEND_GPU_HYBRID, 0);
    run_decoupled(NAME("H  nvjpegDecodeJpeg, decoder HYBRID"), NVJPEG_BACKEND_DEFAULT,
                  NVJPEG_BACKEND_HYBRID, 1);
    run_decoupled(NAME("I  nvjpegDecodeJpeg, decoder GPU_HYBRID"), NVJPEG_BACKEND_DEFAULT,
                  NVJPEG_BACKEND_GPU_HYBRID, 1);
}

int main(int argc, char **argv) {
    int maj = 0, min = 0, pat = 0;
    nvjpegGetProperty(MAJOR_VERSION, &maj);
    nvjpegGetProperty(MINOR_VERSION, &min);
    nvjpegGetProperty(PATCH_LEVEL, &pat);
    printf("nvJPEG %d.%d.%d (header %d.%d)\n", maj, min, pat, NVJPEG_VER_MAJOR, NVJPEG_VER_MINOR);
    for (int a = 1; a < argc && n < N; a++, n++) {
        FILE *f = fopen(argv[a], "rb");
        if (!f) return 1;
        fseek(f, 0, SEEK_END);
        lens[n] = (size_t)ftell(f);
        fseek(f, 0, SEEK_SET);
        bits[n] = malloc(lens[n]);
        if (fread(bits[n], 1, lens[n], f) != lens[n]) return 1;
        fclose(f);
    }
    /* child first: no hardware handle ever made in its process */
    pid_t pid = fork();
    int alone = pid == 0;
    if (!alone) waitpid(pid, NULL, 0);
    cudaSetDevice(0);
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    nvjpegHandle_t hw;
    nvjpegJpegState_t hs;
    nvjpegJpegStream_t ps;
    int r = nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, NULL, NULL, 0, &hw);
    if (r) {
        printf("no hardware back end (%d)\n", r);
        return 1;
    }
    nvjpegJpegStateCreate(hw, &hs);
    nvjpegJpegStreamCreate(hw, &ps);
    nvjpegImage_t m[N];
    for (int i = 0; i < n; i++) {
        int nc;
        nvjpegChromaSubsampling_t sub;
        int ws[NVJPEG_MAX_COMPONENT], hs2[NVJPEG_MAX_COMPONENT];
        nvjpegGetImageInfo(hw, bits[i], lens[i], &nc, &sub, ws, hs2);
        W[i] = ws[0], H[i] = hs2[0];
        cudaMalloc((void **)&ref[i], (size_t)W[i] * H[i] * 3);
        cudaMalloc((void **)&out[i], (size_t)W[i] * H[i] * 3);
        m[i] = img(ref[i], i);
        if (!alone)
            printf("image %d: %dx%d, %d components, subsampling %d\n", i, W[i], H[i], nc, (int)sub);
    }
    r = nvjpegDecodeBatchedInitialize(hw, hs, n, 1, NVJPEG_OUTPUT_RGBI);
    if (!r) r = nvjpegDecodeBatched(hw, hs, (const unsigned char *const *)bits, lens, m, stream);
    cudaStreamSynchronize(stream);
    if (!alone) printf("hardware reference: status %d\n", r);
    if (alone) {
        /* the reference handle above was made only to decode the reference; make a fresh
           process image for the variants: destroy it first */
        nvjpegJpegStreamDestroy(ps);
        nvjpegJpegStateDestroy(hs);
        nvjpegDestroy(hw);
    }
    variants(!alone);
    return 0;
}
