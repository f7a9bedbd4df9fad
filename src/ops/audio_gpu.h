/* SPDX-License-Identifier: Apache-2.0 */
/* The CUDA runs of the audio operators (audio_gpu.cu), called from audio_ops.c and
 * audio_spectral.c: pre-emphasis and decibels, one thread per element; the mel filter bank, one
 * thread per output element summing its triangle's bins in the CPU run's order; the spectrogram
 * through cuFFT, which is loaded at run time (dlopen, as cuBLAS: src/train/cublas_dl.cu), with
 * the windows cut and the power taken by kernels of our own. Shared by C and CUDA: plain structs.
 */
#ifndef SLUICE_OPS_AUDIO_GPU_H
#define SLUICE_OPS_AUDIO_GPU_H

#include "sluice/status.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl__cuda_preemph_desc {
    const void *in;
    void *out;
    int64_t n;
    double coeff;
} sl__cuda_preemph_desc;
/* border: 0 zero, 1 clamp, 2 reflect */
sl_status sl__cuda_preemphasis(const sl__cuda_preemph_desc *d, int n, int64_t max_len, int in_dtype,
                               int out_dtype, int border, void *stream, sl_err *err);

typedef struct sl__cuda_db_desc {
    const float *in;
    float *out;
    int64_t n;
} sl__cuda_db_desc;
/* ref 0: each sample's largest value (maxes: n floats of device scratch) */
sl_status sl__cuda_to_decibels(const sl__cuda_db_desc *d, int n, int64_t max_n, double mult,
                               double ref, double min_ratio, float *maxes, void *stream,
                               sl_err *err);

typedef struct sl__cuda_mel_desc {
    const float *in;
    float *out;
    int64_t outer, inner;
} sl__cuda_mel_desc;
/* W: (nfilter, nbins); first/last: per filter (device memory, beside d) */
sl_status sl__cuda_mel(const sl__cuda_mel_desc *d, int n, int64_t max_out, const float *W,
                       const int *first, const int *last, int nfilter, int nbins, void *stream,
                       sl_err *err);

typedef struct sl__cuda_spec_desc {
    const float *in;
    float *out;
    int64_t len;  /* signal samples */
    int64_t nwin; /* windows */
    int64_t row0; /* its first window's row in the batch's frames */
} sl__cuda_spec_desc;

typedef struct sl__cuda_fft sl__cuda_fft;
/* A batched real-to-complex cuFFT plan of nfft points, rows transforms per call. */
sl_status sl__cuda_fft_create(int nfft, int rows, sl__cuda_fft **out, sl_err *err);
void sl__cuda_fft_free(sl__cuda_fft *f);
/* frames: (total rows, nfft) floats of device scratch, spec: (total rows, nfft / 2 + 1) complex;
 * window: wlen floats on the device. total_rows: a multiple of the plan's rows. */
sl_status sl__cuda_spectrogram(sl__cuda_fft *f, const sl__cuda_spec_desc *d, int n, int64_t max_out,
                               const float *window, int wlen, int step, int center, int reflect,
                               int power, int tf, float *frames, void *spec, int64_t total_rows,
                               void *stream, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
