/* SPDX-License-Identifier: Apache-2.0 */
// The audio operators' CUDA runs (ops/audio_gpu.h). cuFFT is dlopen'ed by its soname (the one
// this build's cufft.h names), else from the folder of the CUDA runtime, the first time a GPU
// spectrogram is made; a process that never makes one never loads it.
#include "core/cuda_check.h"
#include "core/cuda_launch.h"
#include "ops/audio_gpu.h"

#include "operator/dtype_conv.h"

#include <cufft.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XSTR(x)      STR(x)
#define STR(x)       #x
#define CUFFT_SONAME "libcufft.so." XSTR(CUFFT_VER_MAJOR)

// ---- pre-emphasis -------------------------------------------------------------------------------

__global__ static void preemph_kernel(const sl__cuda_preemph_desc *d, int n, int it, int ot,
                                      int border) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        int64_t len = d[s].n;
        SL__CUDA_FOR_ELEMS(t, len) {
            double v = sl__dtype_conv_load(d[s].in, (sl_dtype)it, t), prev;
            if (t > 0)
                prev = sl__dtype_conv_load(d[s].in, (sl_dtype)it, t - 1);
            else
                prev = border == 0   ? 0
                       : border == 1 ? v
                                     : sl__dtype_conv_load(d[s].in, (sl_dtype)it, len > 1 ? 1 : 0);
            if (it == SL_DTYPE_F32 && ot == SL_DTYPE_F32) // as the CPU run's float path
                ((float *)d[s].out)[t] = (float)(SL__DADD(v, -SL__DMUL(d[s].coeff, prev)));
            else
                sl__dtype_conv_store(d[s].out, (sl_dtype)ot, t,
                                     SL__DADD(v, -SL__DMUL(d[s].coeff, prev)));
        }
    }
}

extern "C" sl_status sl__cuda_preemphasis(const sl__cuda_preemph_desc *d, int n, int64_t max_len,
                                          int in_dtype, int out_dtype, int border, void *stream,
                                          sl_err *err) {
    if (n < 1 || max_len < 1) return SL_OK;
    preemph_kernel<<<sl__cuda_batch_grid(max_len, n), SL__CUDA_THREADS, 0, (cudaStream_t)stream>>>(
        d, n, in_dtype, out_dtype, border);
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}

// ---- decibels -----------------------------------------------------------------------------------

__global__ static void max_kernel(const sl__cuda_db_desc *d, int n, float *maxes) {
    __shared__ float part[SL__CUDA_THREADS];
    for (int s = (int)blockIdx.x; s < n; s += (int)gridDim.x) {
        float m = 0;
        for (int64_t k = threadIdx.x; k < d[s].n; k += blockDim.x) m = fmaxf(m, d[s].in[k]);
        part[threadIdx.x] = m;
        __syncthreads();
        for (int w = blockDim.x / 2; w > 0; w /= 2) {
            if ((int)threadIdx.x < w)
                part[threadIdx.x] = fmaxf(part[threadIdx.x], part[threadIdx.x + w]);
            __syncthreads();
        }
        if (threadIdx.x == 0) maxes[s] = part[0];
        __syncthreads();
    }
}

__global__ static void db_kernel(const sl__cuda_db_desc *d, int n, double mult, double ref,
                                 double min_ratio, const float *maxes) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        double r0 = ref != 0 ? ref : (maxes[s] > 0 ? (double)maxes[s] : 1.0);
        double inv = 1 / r0;
        SL__CUDA_FOR_ELEMS(k, d[s].n) {
            double r = SL__DMUL((double)d[s].in[k], inv);
            d[s].out[k] = (float)SL__DMUL(mult, log10(r > min_ratio ? r : min_ratio));
        }
    }
}

extern "C" sl_status sl__cuda_to_decibels(const sl__cuda_db_desc *d, int n, int64_t max_n,
                                          double mult, double ref, double min_ratio, float *maxes,
                                          void *stream, sl_err *err) {
    if (n < 1 || max_n < 1) return SL_OK;
    cudaStream_t st = (cudaStream_t)stream;
    if (ref == 0) {
        unsigned blocks = (unsigned)(n < 65535 ? n : 65535);
        max_kernel<<<blocks, SL__CUDA_THREADS, 0, st>>>(d, n, maxes);
        SL_CUDA_TRY(err, cudaGetLastError());
    }
    db_kernel<<<sl__cuda_batch_grid(max_n, n), SL__CUDA_THREADS, 0, st>>>(d, n, mult, ref,
                                                                          min_ratio, maxes);
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}

// ---- mel filter bank ----------------------------------------------------------------------------

__global__ static void mel_kernel(const sl__cuda_mel_desc *d, int n, const float *W,
                                  const int *first, const int *last, int nfilter, int nbins) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        int64_t inner = d[s].inner, total = d[s].outer * nfilter * inner;
        SL__CUDA_FOR_ELEMS(e, total) {
            int64_t t = e % inner, m = (e / inner) % nfilter, o = e / (inner * nfilter);
            const float *w = W + m * nbins;
            float acc = 0;
            for (int k = first[m]; k < last[m]; k++)
                acc = SL__FADD(acc, SL__FMUL(w[k], d[s].in[(o * nbins + k) * inner + t]));
            d[s].out[e] = acc;
        }
    }
}

extern "C" sl_status sl__cuda_mel(const sl__cuda_mel_desc *d, int n, int64_t max_out,
                                  const float *W, const int *first, const int *last, int nfilter,
                                  int nbins, void *stream, sl_err *err) {
    if (n < 1 || max_out < 1) return SL_OK;
    mel_kernel<<<sl__cuda_batch_grid(max_out, n), SL__CUDA_THREADS, 0, (cudaStream_t)stream>>>(
        d, n, W, first, last, nfilter, nbins);
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}

// ---- spectrogram: cuFFT -------------------------------------------------------------------------

typedef cufftResult (*plan_many_fn)(cufftHandle *, int, int *, int *, int, int, int *, int, int,
                                    cufftType, int);
typedef cufftResult (*set_stream_fn)(cufftHandle, cudaStream_t);
typedef cufftResult (*exec_r2c_fn)(cufftHandle, cufftReal *, cufftComplex *);
typedef cufftResult (*destroy_fn)(cufftHandle);

static struct {
    plan_many_fn plan_many;
    set_stream_fn set_stream;
    exec_r2c_fn exec_r2c;
    destroy_fn destroy;
} api;
static int loaded;
static char why[512];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void *open_beside_cudart(void) {
    Dl_info info;
    if (!dladdr((void *)&cudaGetDeviceCount, &info) || !info.dli_fname) return NULL;
    const char *slash = strrchr(info.dli_fname, '/');
    if (!slash) return NULL;
    char path[1024];
    snprintf(path, sizeof path, "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname,
             CUFFT_SONAME);
    return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

static void load(void) {
    void *h = dlopen(CUFFT_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, sizeof why, "%s", e ? e : "not found");
        h = open_beside_cudart();
        if (!h) return;
    }
#define LOAD(field, fn)                                                                            \
    do {                                                                                           \
        api.field = (decltype(api.field))dlsym(h, #fn);                                            \
        if (!api.field) {                                                                          \
            snprintf(why, sizeof why, "%s has no %s", CUFFT_SONAME, #fn);                          \
            return;                                                                                \
        }                                                                                          \
    } while (0)
    LOAD(plan_many, cufftPlanMany);
    LOAD(set_stream, cufftSetStream);
    LOAD(exec_r2c, cufftExecR2C);
    LOAD(destroy, cufftDestroy);
#undef LOAD
    loaded = 1;
}

struct sl__cuda_fft {
    cufftHandle plan;
    int nfft, rows;
};

#define CUFFT_TRY(err, expr)                                                                       \
    do {                                                                                           \
        cufftResult r_ = (expr);                                                                   \
        if (r_ != CUFFT_SUCCESS)                                                                   \
            return sl_err_set(err, SL_ECUDA, "%s at %s:%d: cuFFT error %d", #expr, __FILE__,       \
                              __LINE__, (int)r_);                                                  \
    } while (0)

extern "C" sl_status sl__cuda_fft_create(int nfft, int rows, sl__cuda_fft **out, sl_err *err) {
    pthread_once(&once, load);
    if (!loaded)
        return sl_err_set(err, SL_ECUDA, "spectrogram: cannot load cuFFT (%s): %s", CUFFT_SONAME,
                          why);
    sl__cuda_fft *f = (sl__cuda_fft *)calloc(1, sizeof *f);
    if (!f) return sl_err_set(err, SL_ENOMEM, "spectrogram: out of memory");
    int n[1] = {nfft};
    cufftResult r =
        api.plan_many(&f->plan, 1, n, NULL, 1, nfft, NULL, 1, nfft / 2 + 1, CUFFT_R2C, rows);
    if (r != CUFFT_SUCCESS) {
        free(f);
        return sl_err_set(err, SL_ECUDA, "spectrogram: cufftPlanMany(%d points, %d rows): error %d",
                          nfft, rows, (int)r);
    }
    f->nfft = nfft, f->rows = rows;
    *out = f;
    return SL_OK;
}

extern "C" void sl__cuda_fft_free(sl__cuda_fft *f) {
    if (!f) return;
    api.destroy(f->plan);
    free(f);
}

// one thread per frame element: the window's sample (mirrored or zero outside the signal) times
// the window function, zero beyond the window
__global__ static void frames_kernel(const sl__cuda_spec_desc *d, int n, const float *window,
                                     int wlen, int step, int nfft, int center, int reflect,
                                     float *frames) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        int64_t total = d[s].nwin * nfft, len = d[s].len, off = center ? wlen / 2 : 0;
        SL__CUDA_FOR_ELEMS(e, total) {
            int64_t w = e / nfft, t = e % nfft;
            float v = 0;
            if (t < wlen) {
                int64_t j = w * step - off + t;
                double x = 0;
                if (j >= 0 && j < len) {
                    x = d[s].in[j];
                } else if (reflect && len > 1) {
                    while (j < 0 || j >= len) j = j < 0 ? -j : 2 * len - 2 - j;
                    x = d[s].in[j];
                } else if (reflect && len == 1) {
                    x = d[s].in[0];
                }
                v = (float)(x * window[t]);
            }
            frames[(d[s].row0 + w) * nfft + t] = v;
        }
    }
}

__global__ static void power_kernel(const sl__cuda_spec_desc *d, int n, const cufftComplex *spec,
                                    int bins, int power, int tf) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        int64_t nw = d[s].nwin, total = nw * bins;
        SL__CUDA_FOR_ELEMS(e, total) {
            int64_t w, k;
            if (tf)
                w = e / bins, k = e % bins;
            else
                k = e / nw, w = e % nw;
            cufftComplex c = spec[(d[s].row0 + w) * bins + k];
            float p = SL__FADD(SL__FMUL(c.x, c.x), SL__FMUL(c.y, c.y));
            d[s].out[e] = power == 2 ? p : sqrtf(p);
        }
    }
}

extern "C" sl_status sl__cuda_spectrogram(sl__cuda_fft *f, const sl__cuda_spec_desc *d, int n,
                                          int64_t max_out, const float *window, int wlen, int step,
                                          int center, int reflect, int power, int tf, float *frames,
                                          void *spec, int64_t total_rows, void *stream,
                                          sl_err *err) {
    if (n < 1 || total_rows < 1) return SL_OK;
    cudaStream_t st = (cudaStream_t)stream;
    int nfft = f->nfft, bins = nfft / 2 + 1;
    // rows no window fills (the last chunk's) are zero: their transforms are computed, not used
    SL_CUDA_TRY(err, cudaMemsetAsync(frames, 0, (size_t)total_rows * nfft * sizeof(float), st));
    frames_kernel<<<sl__cuda_batch_grid(max_out, n), SL__CUDA_THREADS, 0, st>>>(
        d, n, window, wlen, step, nfft, center, reflect, frames);
    SL_CUDA_TRY(err, cudaGetLastError());
    CUFFT_TRY(err, api.set_stream(f->plan, st));
    for (int64_t r = 0; r < total_rows; r += f->rows)
        CUFFT_TRY(err, api.exec_r2c(f->plan, frames + r * nfft, (cufftComplex *)spec + r * bins));
    power_kernel<<<sl__cuda_batch_grid(max_out, n), SL__CUDA_THREADS, 0, st>>>(
        d, n, (const cufftComplex *)spec, bins, power, tf);
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}
