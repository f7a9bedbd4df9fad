/* SPDX-License-Identifier: Apache-2.0 */
/* nvJPEG batched decoding (decode_image_nvjpeg.h). Handles and states are made once, on the GPU
 * stage's thread; each batch parses every header once (nvjpegJpegStreamParseHeader), which gives
 * the planes' sizes and tells whether the hardware back end takes the image
 * (nvjpegDecodeBatchedSupported), sends those to the engines (nvjpegDecodeBatchedInitialize +
 * nvjpegDecodeBatched) and everything else to the default back end (nvjpegDecode per image), all
 * on the pipeline's stream. (The hw_decoder_load split happens before, in the decoder's setup: what
 * the engines are not given is decoded on the CPU pool.) Colour images go through
 * NVJPEG_OUTPUT_YUV: their planes land in a per-batch device scratch block and one sl__cuda_ycc
 * launch finishes them as libjpeg-turbo does (an image whose planes nvJPEG sizes differently from
 * libjpeg goes to the CPU; if the engines refuse YUV output, the default back end takes those
 * images). Whatever a back end fails on goes on: from the default back end to the engines when
 * they support the image, else (and from the engines) back to the caller, who decodes it on the
 * CPU. A default back end that has failed on its first images and never succeeded is left alone
 * from then on (on the H200 with CUDA 13 it answered NVJPEG_STATUS_BAD_JPEG to everything).
 * Decoding ahead (sl__nvjpeg_ahead_*): a GPU stage that also called the engines left them idle
 * while it parsed, finished and synced each batch. From its second batch on, the decoder's CPU
 * stage has the engines' share decoded itself (on the stage's thread, while the pool decodes the
 * CPU's share), with its own engine state, parser and stream, into a per-batch planes block; the
 * GPU stage finishes the planes. What the engines do not decode there goes through
 * sl__nvjpeg_decode as before. The two threads share the handles (nvJPEG allows that, one state per
 * thread) and only atomic counters.
 * Every call that makes the engines work is made by the decoder's engine thread (engine_call),
 * which drains the call's stream before and after it (engine_run says why) while the caller waits
 * at most timeout_s.
 * One GPU's engines take one batched decode at a time: two threads that call nvjpegDecodeBatched on
 * the same GPU's engines at once (each with its own state, even each with its own handle) hang
 * inside it for good with CUDA 13 on the H200, while two GPUs' engines at once do not, nor does
 * parsing headers beside a decode (bench/RESULTS.md, section 6: a 100-line program with nothing of
 * sluice in it). Those threads are this decoder's CPU and GPU stages, other decoders of the same
 * pipeline, and other pipelines on the same GPU (a training and a validation pipeline), so every
 * call that makes the engines work holds its GPU's engine lock (engine_lock). */
#include "ops/decode_image_nvjpeg.h"

#include "core/alloc.h"
#include "core/log.h"
#include "ops/jpeg_ycc.h"
#include "operator/gpu_args.h"

#include <nvjpeg.h>

#include "core/pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One batch's arrays and device blocks: the decoder's own (the GPU stage's), and one per batch
 * decoded ahead (sl__nvjpeg_ahead). */
typedef struct work {
    int cap;
    const unsigned char **bits;
    size_t *lens;
    nvjpegImage_t *imgs;
    char *on_hw; /* per image: 1 engines, 0 default back end; 2 engines after the default failed;
                    3 not decoded here (the caller's fallback) */
    char *hw_ok; /* per image: the engines support it */
    char *yuv;   /* per image: decoded to planes and finished by sl__cuda_ycc */
    size_t *plane_off; /* per yuv image: its planes' offset in the scratch block */
    sl__gpu_scratch planes;
    bool planes_held; /* a stalled engine call may still write into planes: never freed */
    sl__gpu_args ycc; /* the sl__cuda_ycc descriptors */
} work;

/* One call on the engines (Initialize + DecodeBatched over k images), made by the decoder's engine
 * thread for a caller that waits for it at most so long (engine_call). The job owns its arrays, so
 * that a call its caller has stopped waiting for keeps what it reads. */
typedef struct engine_job {
    nvjpegHandle_t h;
    nvjpegJpegState_t state;
    int k;
    const unsigned char **bits;
    size_t *lens;
    nvjpegImage_t *imgs;
    nvjpegOutputFormat_t fmt;
    cudaStream_t stream;
    nvjpegStatus_t result;
    bool done;      /* the thread is through with it */
    bool abandoned; /* its caller stopped waiting: the thread frees it if the call returns */
} engine_job;

struct sl__nvjpeg {
    int device;
    char name[64]; /* the op, for the warnings */
    /* the engine thread: every call that makes the engines work (engine_call) */
    pthread_t thread;
    bool thread_started, quit;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC */
    engine_job *job;   /* the call in flight (NULL: none) */
    int stalled;       /* a call did not come back in time: the engines are off (atomic) */
    double timeout_s;  /* how long a call may take (SLUICE_NVJPEG_TIMEOUT) */
    long calls;        /* engine calls so far, for the test hook below (the thread's own) */
    long stall_at;     /* SLUICE_NVJPEG_TEST_STALL=N: call N blocks for 3 x timeout_s (0: never) */
    nvjpegHandle_t hw, sw;
    nvjpegJpegState_t hw_state, sw_state;
    nvjpegJpegStream_t parse;
    work w;
    /* decoding ahead (a CPU stage thread): its own engine state, parser and stream */
    nvjpegJpegState_t ahead_state;
    nvjpegJpegStream_t ahead_parse;
    cudaStream_t ahead_stream;
    int priority;            /* ahead_stream's CUDA priority (the pipeline's) */
    int pre_n, pre_w, pre_h; /* preallocate_*_hint: for the engines' states (0: none) */
    bool pre_gray;
    int said_hw;               /* the engines' failure was logged (atomic) */
    int hw_yuv_ok, hw_yuv_bad; /* the engines' YUV batches that worked / failed so far (atomic) */
    int64_t sw_ok, sw_bad;     /* the default back end's successes and failures so far */
};

struct sl__nvjpeg_ahead {
    work w; /* its planes: written by the engines, finished by the GPU stage */
};

/* After this many failures without one success the default back end is no longer tried. */
#define SW_GIVE_UP 16

/* The engine locks, one per GPU (device ids past the table share a lock: that only serialises). */
#define ENGINE_LOCKS 64
static pthread_mutex_t engine_locks[ENGINE_LOCKS];
static pthread_once_t engine_locks_once = PTHREAD_ONCE_INIT;

static void engine_locks_init(void) {
    for (int i = 0; i < ENGINE_LOCKS; i++) pthread_mutex_init(&engine_locks[i], NULL);
}

static pthread_mutex_t *engine_lock(const sl__nvjpeg *d) {
    pthread_once(&engine_locks_once, engine_locks_init);
    return &engine_locks[(unsigned)d->device % ENGINE_LOCKS];
}

/* The engines are in use: the GPU has them and no call on them has stalled. */
static bool engines_on(const sl__nvjpeg *d) {
    return d->hw && !__atomic_load_n(&d->stalled, __ATOMIC_RELAXED);
}

static double mono_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static struct timespec mono_at(double t) {
    struct timespec ts;
    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    return ts;
}

/* The call itself, on the engine thread. nvJPEG's hardware back end stops for good, inside
 * nvjpegDecodeBatched (cuEventSynchronize) with a GPU-side wait that never ends, when it is called
 * while work it queued on the stream before is still pending and other GPU work keeps the device
 * busy (bench/RESULTS.md, section 6: bench/nvjpeg/stall.cu, with nothing of sluice in it). So the
 * stream is drained before the call, and again after it, on this thread, where a wait that never
 * ends is the only harm: the caller waits at most timeout_s. After the second drain nothing queued
 * by the engines is pending, and nothing else needs to wait for them on the GPU. */
static nvjpegStatus_t engine_run(sl__nvjpeg *d, engine_job *j) {
    if (d->stall_at && ++d->calls == d->stall_at) { /* the test hook: a call that stalls */
        struct timespec t = mono_at(3 * d->timeout_s);
        while (nanosleep(&t, &t) != 0) {
        }
        return NVJPEG_STATUS_EXECUTION_FAILED;
    }
    if (cudaStreamSynchronize(j->stream) != cudaSuccess) return NVJPEG_STATUS_EXECUTION_FAILED;
    pthread_mutex_lock(engine_lock(d));
    nvjpegStatus_t r = nvjpegDecodeBatchedInitialize(j->h, j->state, j->k, 1, j->fmt);
    if (r == NVJPEG_STATUS_SUCCESS)
        r = nvjpegDecodeBatched(j->h, j->state, j->bits, j->lens, j->imgs, j->stream);
    pthread_mutex_unlock(engine_lock(d));
    if (cudaStreamSynchronize(j->stream) != cudaSuccess && r == NVJPEG_STATUS_SUCCESS)
        r = NVJPEG_STATUS_EXECUTION_FAILED;
    return r;
}

static void free_job(engine_job *j) {
    free(j->bits);
    free(j->lens);
    free(j->imgs);
    free(j);
}

static void *engine_thread(void *arg) {
    sl__nvjpeg *d = arg;
    sl__thread_begin("sluice-nvjpeg");
    cudaSetDevice(d->device);
    pthread_mutex_lock(&d->mu);
    for (;;) {
        while (!d->quit && (!d->job || d->job->done)) pthread_cond_wait(&d->cv, &d->mu);
        if (d->quit && (!d->job || d->job->done)) break;
        engine_job *j = d->job;
        pthread_mutex_unlock(&d->mu);
        nvjpegStatus_t r = engine_run(d, j);
        pthread_mutex_lock(&d->mu);
        j->result = r;
        j->done = true;
        if (j->abandoned) { /* came back after all: its caller has gone on without it */
            free_job(j);
            d->job = NULL;
        }
        pthread_cond_broadcast(&d->cv);
    }
    pthread_mutex_unlock(&d->mu);
    sl__thread_end();
    return NULL;
}

/* One call on the engines over w's first k images, made by the engine thread; the caller waits
 * for it at most timeout_s. A call that does not come back by then is a stall: the engines are
 * turned off for this decoder (its later batches are planned without them), w's planes block is
 * left to the call, and the images go to the CPU as after any failure of the engines. */
static nvjpegStatus_t engine_call(sl__nvjpeg *d, work *w, nvjpegJpegState_t state, int k,
                                  nvjpegOutputFormat_t fmt, cudaStream_t stream) {
    if (!engines_on(d)) return NVJPEG_STATUS_EXECUTION_FAILED;
    engine_job *j = calloc(1, sizeof *j);
    if (j) {
        j->bits = malloc((size_t)k * sizeof *j->bits);
        j->lens = malloc((size_t)k * sizeof *j->lens);
        j->imgs = malloc((size_t)k * sizeof *j->imgs);
    }
    if (!j || !j->bits || !j->lens || !j->imgs) {
        if (j) free_job(j);
        return NVJPEG_STATUS_ALLOCATOR_FAILURE;
    }
    memcpy(j->bits, w->bits, (size_t)k * sizeof *j->bits);
    memcpy(j->lens, w->lens, (size_t)k * sizeof *j->lens);
    memcpy(j->imgs, w->imgs, (size_t)k * sizeof *j->imgs);
    j->h = d->hw, j->state = state, j->k = k, j->fmt = fmt, j->stream = stream;
    struct timespec at = mono_at(mono_now() + d->timeout_s);
    pthread_mutex_lock(&d->mu);
    /* one call at a time: the decoder's CPU and GPU stages can both have one */
    while (d->job && !__atomic_load_n(&d->stalled, __ATOMIC_RELAXED) &&
           pthread_cond_timedwait(&d->cv, &d->mu, &at) != ETIMEDOUT) {
    }
    if (d->job || __atomic_load_n(&d->stalled, __ATOMIC_RELAXED)) { /* the other one stalled */
        pthread_mutex_unlock(&d->mu);
        free_job(j);
        return NVJPEG_STATUS_EXECUTION_FAILED;
    }
    d->job = j;
    pthread_cond_broadcast(&d->cv);
    while (!j->done && pthread_cond_timedwait(&d->cv, &d->mu, &at) != ETIMEDOUT) {
    }
    if (j->done) {
        nvjpegStatus_t r = j->result;
        d->job = NULL;
        pthread_cond_broadcast(&d->cv);
        pthread_mutex_unlock(&d->mu);
        free_job(j);
        return r;
    }
    j->abandoned = true;
    w->planes_held = true;
    __atomic_store_n(&d->stalled, 1, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    sl__log(SL_LOG_WARN,
            "%s: the hardware JPEG decoder (nvJPEG's hardware back end) made no progress on a "
            "batch of %d images for %g s; those images are decoded on the CPU, and this decoder's "
            "later batches without the engines (SLUICE_NVJPEG_TIMEOUT sets the time)",
            d->name, k, d->timeout_s);
    return NVJPEG_STATUS_EXECUTION_FAILED;
}

#define NVJ_TRY(err, expr)                                                                         \
    do {                                                                                           \
        nvjpegStatus_t nvj__s = (expr);                                                            \
        if (nvj__s != NVJPEG_STATUS_SUCCESS)                                                       \
            return sl_err_set((err), SL_ECUDA, "%s at %s:%d: nvJPEG status %d", #expr, __FILE__,   \
                              __LINE__, (int)nvj__s);                                              \
    } while (0)

static void free_arrays(work *w) {
    free(w->bits);
    free(w->lens);
    free(w->imgs);
    free(w->on_hw);
    free(w->hw_ok);
    free(w->yuv);
    free(w->plane_off);
}

/* w's planes block, unless a stalled engine call may still write into it (then it is left to
 * that call: a leak, instead of a block given out again while the engines may write into it). */
static void drop_planes(work *w) {
    if (w->planes_held)
        memset(&w->planes, 0, sizeof w->planes);
    else
        sl__gpu_scratch_free(&w->planes);
    w->planes_held = false;
}

static void free_work(work *w) {
    drop_planes(w);
    sl__gpu_args_free(&w->ycc);
    free_arrays(w);
    memset(w, 0, sizeof *w);
}

void sl__nvjpeg_free(sl__nvjpeg *d) {
    if (!d) return;
    bool stuck = false;
    if (d->thread_started) {
        pthread_mutex_lock(&d->mu);
        d->quit = true;
        stuck = d->job != NULL; /* only an abandoned call is still in flight here */
        pthread_cond_broadcast(&d->cv);
        pthread_mutex_unlock(&d->mu);
        if (stuck)
            pthread_detach(d->thread);
        else
            pthread_join(d->thread, NULL);
    }
    if (d->ahead_parse) nvjpegJpegStreamDestroy(d->ahead_parse);
    if (d->parse) nvjpegJpegStreamDestroy(d->parse);
    if (stuck) { /* a call that never came back may still use the engines' handle, states, stream
                    and the decoder itself: all are left to it (a leak, once, instead of a hang) */
        sl__log(SL_LOG_WARN,
                "%s: a call on the hardware JPEG decoder never came back; its handle and "
                "buffers are left to it",
                d->name);
        return;
    }
    if (d->ahead_stream) cudaStreamDestroy(d->ahead_stream);
    if (d->thread_started) {
        pthread_mutex_destroy(&d->mu);
        pthread_cond_destroy(&d->cv);
    }
    if (d->hw) { /* the engines' state and handle: not while the GPU's engines decode */
        pthread_mutex_lock(engine_lock(d));
        if (d->ahead_state) nvjpegJpegStateDestroy(d->ahead_state);
        if (d->hw_state) nvjpegJpegStateDestroy(d->hw_state);
        nvjpegDestroy(d->hw);
        pthread_mutex_unlock(engine_lock(d));
    }
    if (d->sw_state) nvjpegJpegStateDestroy(d->sw_state);
    if (d->sw) nvjpegDestroy(d->sw);
    free_work(&d->w);
    free(d);
}

/* A positive number of seconds from the environment, or def. */
static double env_seconds(const char *name, double def) {
    const char *v = getenv(name);
    char *end = NULL;
    double x = v ? strtod(v, &end) : 0;
    return v && end != v && *end == 0 && x > 0 && x < 1e6 ? x : def;
}

static sl_status start_thread(sl__nvjpeg *d, sl_err *err) {
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int e = pthread_mutex_init(&d->mu, NULL);
    if (e == 0 && (e = pthread_cond_init(&d->cv, &ca)) != 0) pthread_mutex_destroy(&d->mu);
    pthread_condattr_destroy(&ca);
    if (e == 0 && (e = pthread_create(&d->thread, NULL, engine_thread, d)) != 0) {
        pthread_cond_destroy(&d->cv);
        pthread_mutex_destroy(&d->mu);
    }
    if (e != 0)
        return sl_err_set(err, SL_ENOMEM, "nvJPEG: cannot start the engines' thread: %s",
                          strerror(e));
    d->thread_started = true;
    return SL_OK;
}

static sl_status create(sl__nvjpeg *d, sl_err *err) {
    if (cudaGetDevice(&d->device) != cudaSuccess)
        return sl_err_set(err, SL_ECUDA, "nvJPEG: no current CUDA device");
    d->timeout_s = env_seconds("SLUICE_NVJPEG_TIMEOUT", SL__NVJPEG_TIMEOUT_S);
    d->stall_at = (long)env_seconds("SLUICE_NVJPEG_TEST_STALL", 0);
    NVJ_TRY(err, nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, NULL, NULL, 0, &d->sw));
    NVJ_TRY(err, nvjpegJpegStateCreate(d->sw, &d->sw_state));
    const char *env = getenv("SLUICE_NVJPEG_ENGINES");
    if (!(env && !strcmp(env, "0"))) { /* the engines: not while the GPU's engines decode */
        pthread_mutex_lock(engine_lock(d));
        if (nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, NULL, NULL, 0, &d->hw) !=
            NVJPEG_STATUS_SUCCESS) {
            d->hw = NULL;
        } else if (nvjpegJpegStateCreate(d->hw, &d->hw_state) != NVJPEG_STATUS_SUCCESS ||
                   nvjpegJpegStreamCreate(d->hw, &d->parse) != NVJPEG_STATUS_SUCCESS) {
            if (d->hw_state) nvjpegJpegStateDestroy(d->hw_state);
            nvjpegDestroy(d->hw);
            d->hw = NULL, d->hw_state = NULL;
        }
        pthread_mutex_unlock(engine_lock(d));
    }
    if (!d->parse) NVJ_TRY(err, nvjpegJpegStreamCreate(d->sw, &d->parse));
    if (d->hw) SL_TRY(start_thread(d, err));
    sl__log(SL_LOG_INFO, "nvJPEG: %s",
            d->hw                      ? "hardware JPEG decoder engines in use"
            : env && !strcmp(env, "0") ? "SLUICE_NVJPEG_ENGINES=0: GPU/hybrid back end only"
                                       : "no hardware JPEG decoder: GPU/hybrid back end only");
    return SL_OK;
}

bool sl__nvjpeg_has_engines(const sl__nvjpeg *d) {
    return engines_on(d);
}

bool sl__nvjpeg_stalled(const sl__nvjpeg *d) {
    return __atomic_load_n(&d->stalled, __ATOMIC_RELAXED) != 0;
}

static void preallocate(sl__nvjpeg *d, nvjpegJpegState_t state) {
    int n = d->pre_n, w = d->pre_w, h = d->pre_h;
    bool gray = d->pre_gray;
    if (!d->hw || n < 1 || w < 1 || h < 1) return;
    pthread_mutex_lock(engine_lock(d));
    nvjpegStatus_t r = nvjpegDecodeBatchedPreAllocate(d->hw, state, n, w, h,
                                                      gray ? NVJPEG_CSS_GRAY : NVJPEG_CSS_444,
                                                      gray ? NVJPEG_OUTPUT_Y : NVJPEG_OUTPUT_YUV);
    pthread_mutex_unlock(engine_lock(d));
    if (r != NVJPEG_STATUS_SUCCESS)
        sl__log(SL_LOG_WARN,
                "nvJPEG: preallocating the hardware decoder for %d images of %dx%d failed "
                "(status %d); its buffers grow as batches need them",
                n, w, h, (int)r);
}

void sl__nvjpeg_preallocate(sl__nvjpeg *d, int n, int w, int h, bool gray) {
    d->pre_n = n, d->pre_w = w, d->pre_h = h, d->pre_gray = gray;
    preallocate(d, d->hw_state);
}

sl_status sl__nvjpeg_create(sl__nvjpeg **out, const char *name, int priority, sl_err *err) {
    *out = NULL;
    sl__nvjpeg *d = sl__calloc(1, sizeof *d, err);
    if (!d) return SL_ENOMEM;
    d->priority = priority;
    snprintf(d->name, sizeof d->name, "%s", name);
    sl_status st = create(d, err);
    if (st != SL_OK) {
        sl__nvjpeg_free(d);
        return st;
    }
    *out = d;
    return SL_OK;
}

static sl_status grow(work *w, int n, sl_err *err) {
    if (n <= w->cap) return SL_OK;
    free_arrays(w);
    size_t k = (size_t)n;
    w->bits = calloc(k, sizeof *w->bits);
    w->lens = calloc(k, sizeof *w->lens);
    w->imgs = calloc(k, sizeof *w->imgs);
    w->on_hw = calloc(k, 1);
    w->hw_ok = calloc(k, 1);
    w->yuv = calloc(k, 1);
    w->plane_off = calloc(k, sizeof *w->plane_off);
    w->cap = 0;
    if (!w->bits || !w->lens || !w->imgs || !w->on_hw || !w->hw_ok || !w->yuv || !w->plane_off)
        return sl_err_set(err, SL_ENOMEM, "nvJPEG: out of memory for %d images", n);
    w->cap = n;
    return SL_OK;
}

/* The engines have failed every YUV batch so far, twice or more: they are not asked again. */
static bool no_hw_yuv(const sl__nvjpeg *d) {
    return __atomic_load_n(&d->hw_yuv_ok, __ATOMIC_RELAXED) == 0 &&
           __atomic_load_n(&d->hw_yuv_bad, __ATOMIC_RELAXED) >= 2;
}

/* Plane pitches: rows start on 32-byte boundaries. */
static size_t pitch_of(int64_t w) {
    return ((size_t)w + 31) & ~(size_t)31;
}

/* The output descriptor of job j: its three planes in the scratch block, or dst itself. */
static void describe(const work *w, int i, const sl__nvjpeg_job *j, int c, nvjpegImage_t *im) {
    memset(im, 0, sizeof *im);
    if (!w->yuv[i]) {
        im->channel[0] = j->dst;
        im->pitch[0] = (size_t)j->w * (size_t)c;
        return;
    }
    unsigned char *p = (unsigned char *)w->planes.dev + w->plane_off[i];
    size_t yp = pitch_of(j->ycc.w), cp = pitch_of(j->ycc.cw);
    im->channel[0] = p;
    im->channel[1] = p + yp * (size_t)j->ycc.h;
    im->channel[2] = im->channel[1] + cp * (size_t)j->ycc.ch;
    im->pitch[0] = yp;
    im->pitch[1] = im->pitch[2] = cp;
}

/* One nvjpegDecodeBatched (engines) or nvjpegDecode per image (default back end) over the images
 * of w whose on_hw flag equals want and whose yuv flag equals yuv; an image it does not decode
 * gets its next route in on_hw (3, not decoded here, when ahead: the GPU stage tries it again). */
static void run_batch(sl__nvjpeg *d, work *w, nvjpegHandle_t h, nvjpegJpegState_t s, int n,
                      char want, char yuv, const sl__nvjpeg_job *jobs, int c,
                      nvjpegOutputFormat_t direct, cudaStream_t stream, bool ahead, int *count) {
    nvjpegOutputFormat_t fmt = yuv ? NVJPEG_OUTPUT_YUV : direct;
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (w->on_hw[i] != want || w->yuv[i] != yuv) continue;
        w->bits[k] = jobs[i].data;
        w->lens[k] = jobs[i].len;
        describe(w, i, &jobs[i], c, &w->imgs[k]);
        k++;
    }
    *count = k;
    if (k == 0) return;
    if (want) { /* the hardware engines: one batched call; if it fails, all of it goes on */
        nvjpegStatus_t r = engine_call(d, w, s, k, fmt, stream);
        if (r == NVJPEG_STATUS_SUCCESS) {
            if (yuv) __atomic_fetch_add(&d->hw_yuv_ok, 1, __ATOMIC_RELAXED);
            return;
        }
        bool stalled = !engines_on(d); /* a stall: to the CPU, as engine_call said */
        /* planes the engines refuse go to the default back end (while it works) */
        bool to_sw =
            !ahead && !stalled && yuv && want == 1 && !(d->sw_ok == 0 && d->sw_bad >= SW_GIVE_UP);
        if (yuv && !stalled) __atomic_fetch_add(&d->hw_yuv_bad, 1, __ATOMIC_RELAXED);
        if (!stalled && !__atomic_fetch_add(&d->said_hw, 1, __ATOMIC_RELAXED))
            sl__log(SL_LOG_WARN,
                    "nvJPEG: the hardware decoder failed on a batch of %d (status %d, %s output); "
                    "those images are decoded %s",
                    k, (int)r, yuv ? "YUV" : "direct",
                    ahead   ? "again by the GPU stage"
                    : to_sw ? "by the default back end"
                            : "on the CPU");
        for (int i = 0; i < n; i++)
            if (w->on_hw[i] == want && w->yuv[i] == yuv) w->on_hw[i] = to_sw ? 0 : 3;
        *count = 0;
        return;
    }
    /* the default back end, image by image; what it fails on goes to the engines when they
     * support it (on_hw = 2, the caller's second engine batch), else to the CPU. */
    for (int i = 0, j = 0; i < n; i++) {
        if (w->on_hw[i] != want || w->yuv[i] != yuv) continue;
        nvjpegStatus_t r =
            d->sw_ok == 0 && d->sw_bad >= SW_GIVE_UP
                ? NVJPEG_STATUS_JPEG_NOT_SUPPORTED
                : nvjpegDecode(h, s, w->bits[j], w->lens[j], fmt, &w->imgs[j], stream);
        j++;
        if (r == NVJPEG_STATUS_SUCCESS) {
            d->sw_ok++;
            continue;
        }
        if (d->sw_bad++ == 0)
            sl__log(SL_LOG_WARN,
                    "nvJPEG: the default back end failed (status %d); images the hardware "
                    "engines support go to them, the others are decoded on the CPU",
                    (int)r);
        w->on_hw[i] = engines_on(d) && w->hw_ok[i] && !(yuv && no_hw_yuv(d)) ? 2 : 3;
        (*count)--;
    }
}

/* Parses each header once (nvjpegJpegStreamParseHeader on parse, made with the engines' handle
 * when there are engines): marks the jobs that go through planes and places their planes in w's
 * scratch block, and asks the engines whether they take each image. An image whose planes nvJPEG
 * would size differently from libjpeg, or whose header nvJPEG does not parse, is not decoded here
 * (on_hw = 3); ahead, neither is one the engines do not take. */
static sl_status plan(sl__nvjpeg *d, work *w, nvjpegJpegStream_t parse, int n,
                      const sl__nvjpeg_job *jobs, sl__img_type type, bool ahead,
                      cudaStream_t stream, sl_err *err) {
    nvjpegHandle_t h = d->hw ? d->hw : d->sw; /* the handle parse was made with */
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        const sl__ycc_layout *l = &jobs[i].ycc;
        w->on_hw[i] = ahead ? 3 : 0;
        w->yuv[i] = type != SL__IMG_GRAY && l->w > 0;
        w->hw_ok[i] = 0;
        bool ask_hw = engines_on(d) && !(w->yuv[i] && no_hw_yuv(d));
        if (!w->yuv[i] && !ask_hw) continue;
        if (nvjpegJpegStreamParseHeader(h, jobs[i].data, jobs[i].len, parse) !=
            NVJPEG_STATUS_SUCCESS) {
            if (w->yuv[i]) w->on_hw[i] = 3;
            continue;
        }
        if (w->yuv[i]) {
            unsigned nc = 0, wd[3] = {0}, ht[3] = {0};
            bool same =
                nvjpegJpegStreamGetComponentsNum(parse, &nc) == NVJPEG_STATUS_SUCCESS && nc == 3;
            for (unsigned c = 0; c < 3 && same; c++)
                same = nvjpegJpegStreamGetComponentDimensions(parse, c, &wd[c], &ht[c]) ==
                       NVJPEG_STATUS_SUCCESS;
            if (!same || wd[0] != (unsigned)l->w || ht[0] != (unsigned)l->h ||
                wd[1] != (unsigned)l->cw || ht[1] != (unsigned)l->ch || wd[2] != (unsigned)l->cw ||
                ht[2] != (unsigned)l->ch) {
                w->on_hw[i] = 3;
                continue;
            }
            w->plane_off[i] = total;
            total += (pitch_of(l->w) * (size_t)l->h + 2 * pitch_of(l->cw) * (size_t)l->ch + 255) &
                     ~(size_t)255;
        }
        int no = 1;
        if (ask_hw && nvjpegDecodeBatchedSupported(d->hw, parse, &no) == NVJPEG_STATUS_SUCCESS &&
            no == 0)
            w->on_hw[i] = w->hw_ok[i] = 1;
    }
    if (w->planes_held) drop_planes(w); /* a stalled call's: a new block */
    if (total && !sl__gpu_scratch_get(&w->planes, d->device, total, stream, err))
        return err->status;
    return SL_OK;
}

/* One sl__cuda_ycc launch over w's images decoded to planes. */
static sl_status finish_planes(sl__nvjpeg *d, work *w, int n, const sl__nvjpeg_job *jobs,
                               sl__img_type type, cudaStream_t stream, sl_err *err) {
    int m = 0;
    for (int i = 0; i < n; i++) m += w->yuv[i] && w->on_hw[i] != 3;
    if (m == 0) return SL_OK;
    sl__cuda_ycc_desc *q = sl__gpu_args_host(&w->ycc, d->device, (size_t)m * sizeof *q, err);
    if (!q) return err->status;
    int64_t maxpix = 0;
    m = 0;
    for (int i = 0; i < n; i++) {
        if (!w->yuv[i] || w->on_hw[i] == 3) continue;
        const sl__nvjpeg_job *j = &jobs[i];
        nvjpegImage_t im;
        describe(w, i, j, 3, &im);
        sl__cuda_ycc_desc *x = &q[m++];
        x->y = im.channel[0], x->cb = im.channel[1], x->cr = im.channel[2];
        x->ypitch = (int64_t)im.pitch[0], x->cpitch = (int64_t)im.pitch[1];
        x->l = j->ycc;
        bool win = j->out_w > 0;
        x->y0 = win ? j->y0 : 0, x->x0 = win ? j->x0 : 0;
        x->out_h = win ? j->out_h : j->ycc.h, x->out_w = win ? j->out_w : j->ycc.w;
        x->out = j->dst;
        if ((int64_t)x->out_h * x->out_w > maxpix) maxpix = (int64_t)x->out_h * x->out_w;
    }
    void *dev = NULL;
    SL_TRY(sl__gpu_args_send(&w->ycc, (size_t)m * sizeof *q, stream, &dev, err));
    return sl__cuda_ycc(dev, m, maxpix, type == SL__IMG_BGR, stream, err);
}

static nvjpegOutputFormat_t direct_format(sl__img_type type) {
    return type == SL__IMG_GRAY  ? NVJPEG_OUTPUT_Y
           : type == SL__IMG_BGR ? NVJPEG_OUTPUT_BGRI
                                 : NVJPEG_OUTPUT_RGBI;
}

sl_status sl__nvjpeg_decode(sl__nvjpeg *d, int n, const sl__nvjpeg_job *jobs, sl__img_type type,
                            void *stream, int *hw, char *failed, sl_err *err) {
    *hw = 0;
    if (n < 1) return SL_OK;
    memset(failed, 0, (size_t)n);
    work *w = &d->w;
    SL_TRY(grow(w, n, err));
    nvjpegOutputFormat_t fmt = direct_format(type);
    int c = type == SL__IMG_GRAY ? 1 : 3;
    cudaStream_t st = (cudaStream_t)stream;
    SL_TRY(plan(d, w, d->parse, n, jobs, type, false, st, err));
    int k;
    for (int yuv = 1; yuv >= 0; yuv--) /* planes first: a refusal moves them to the default */
        if (engines_on(d)) {
            run_batch(d, w, d->hw, d->hw_state, n, 1, (char)yuv, jobs, c, fmt, st, false, &k);
            *hw += k;
        }
    for (int yuv = 1; yuv >= 0; yuv--)
        run_batch(d, w, d->sw, d->sw_state, n, 0, (char)yuv, jobs, c, fmt, st, false, &k);
    /* what the default back end could not decode */
    for (int yuv = 1; yuv >= 0 && engines_on(d); yuv--) {
        run_batch(d, w, d->hw, d->hw_state, n, 2, (char)yuv, jobs, c, fmt, st, false, &k);
        *hw += k;
    }
    SL_TRY(finish_planes(d, w, n, jobs, type, st, err));
    for (int i = 0; i < n; i++) failed[i] = w->on_hw[i] == 3;
    return SL_OK;
}

/* ---- decoding ahead ------------------------------------------------------------------------- */

void sl__nvjpeg_ahead_free(sl__nvjpeg_ahead *a) {
    if (!a) return;
    free_work(&a->w); /* the engine call that wrote its planes came back, drained, or stalled */
    free(a);
}

sl_status sl__nvjpeg_ahead_run(sl__nvjpeg *d, sl__nvjpeg_ahead **slot, int n,
                               const sl__nvjpeg_job *jobs, sl__img_type type, char *done,
                               sl_err *err) {
    memset(done, 0, (size_t)n);
    if (!engines_on(d) || n < 1) return SL_OK;
    if (cudaSetDevice(d->device) != cudaSuccess)
        return sl_err_set(err, SL_ECUDA, "nvJPEG: cannot use GPU %d", d->device);
    if (!d->ahead_stream) { /* once, on the first batch decoded ahead (the CPU stage's thread) */
        if (cudaStreamCreateWithPriority(&d->ahead_stream, cudaStreamNonBlocking, d->priority) !=
            cudaSuccess) {
            d->ahead_stream = NULL;
            return sl_err_set(err, SL_ECUDA, "nvJPEG: cannot make a stream on GPU %d", d->device);
        }
        pthread_mutex_lock(engine_lock(d));
        nvjpegStatus_t r = nvjpegJpegStateCreate(d->hw, &d->ahead_state);
        pthread_mutex_unlock(engine_lock(d));
        NVJ_TRY(err, r);
        NVJ_TRY(err, nvjpegJpegStreamCreate(d->hw, &d->ahead_parse));
        preallocate(d, d->ahead_state);
        sl__log(SL_LOG_INFO, "nvJPEG: the engines' share of each batch is now decoded ahead, "
                             "from the CPU stage");
    }
    sl__nvjpeg_ahead *a = *slot;
    if (!a) {
        a = sl__calloc(1, sizeof *a, err);
        if (!a) return SL_ENOMEM;
        *slot = a;
    }
    work *w = &a->w;
    SL_TRY(grow(w, n, err));
    int c = type == SL__IMG_GRAY ? 1 : 3, k;
    SL_TRY(plan(d, w, d->ahead_parse, n, jobs, type, true, d->ahead_stream, err));
    for (int yuv = 1; yuv >= 0; yuv--)
        run_batch(d, w, d->hw, d->ahead_state, n, 1, (char)yuv, jobs, c, direct_format(type),
                  d->ahead_stream, true, &k);
    for (int i = 0; i < n; i++) done[i] = w->on_hw[i] == 1;
    return SL_OK;
}

sl_status sl__nvjpeg_ahead_finish(sl__nvjpeg *d, sl__nvjpeg_ahead *a, int n,
                                  const sl__nvjpeg_job *jobs, sl__img_type type, void *stream,
                                  sl_err *err) {
    if (!a || n < 1) return SL_OK;
    /* the engines' work is done (engine_run drained their stream): nothing to wait for */
    return finish_planes(d, &a->w, n, jobs, type, (cudaStream_t)stream, err);
}
