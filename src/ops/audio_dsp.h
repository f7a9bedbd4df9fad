/* SPDX-License-Identifier: Apache-2.0 */
/* The signal processing that the audio operators share (audio_dsp.c): band-limited resampling
 * (a Hann-windowed sinc, DALI's quality to lobes rule), a discrete Fourier transform of real
 * frames (radix 2 on n/2 complex points for powers of two, a direct sum otherwise), DALI's Hann
 * window, mel filter banks (Slaney and HTK scales) and the DCT-II table of mfcc. All CPU, in double
 * inside. */
#ifndef SLUICE_OPS_AUDIO_DSP_H
#define SLUICE_OPS_AUDIO_DSP_H

#include "sluice/status.h"

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- resampling ---- */
typedef struct sl__audio_dsp_resampler {
    int lobes;    /* zero crossings of the sinc on each side */
    int per_unit; /* table points per unit of x */
    int size;     /* table points: lobes * per_unit + 2 */
    float *table; /* sinc(x) * hann(x / lobes) at x = i / per_unit */
} sl__audio_dsp_resampler;

/* quality 0..100 (DALI's: lobes = round(0.007 q^2 - 0.09 q + 3)) */
sl_status sl__audio_dsp_resampler_init(sl__audio_dsp_resampler *r, double quality, sl_err *err);
void sl__audio_dsp_resampler_free(sl__audio_dsp_resampler *r);
/* ceil(in_len * out_rate / in_rate): the length of in_len samples resampled */
int64_t sl__audio_dsp_resampled_length(int64_t in_len, double in_rate, double out_rate);
/* in: (in_len, channels) interleaved -> out: (out_len, channels); output sample i sits at input
 * position (i + 0.5) * in_rate / out_rate - 0.5; samples outside the input are zero; the kernel
 * is widened by in_rate / out_rate when downsampling (no aliasing). */
void sl__audio_dsp_resample(const sl__audio_dsp_resampler *r, const float *in, int64_t in_len,
                            int channels, double in_rate, float *out, int64_t out_len,
                            double out_rate);

/* ---- Fourier transform of real frames ---- */
typedef struct sl__audio_dsp_fft {
    int n;
    bool radix2;
    int *bitrev;           /* radix2: n / 2 (the half-size complex transform's) */
    double *cos_t, *sin_t; /* radix2: n / 2 + 1 twiddles; otherwise n (the direct sum's) */
} sl__audio_dsp_fft;

sl_status sl__audio_dsp_fft_init(sl__audio_dsp_fft *f, int n, sl_err *err);
void sl__audio_dsp_fft_free(sl__audio_dsp_fft *f);
/* Doubles of scratch sl__audio_dsp_fft_power needs. */
int64_t sl__audio_dsp_fft_scratch(const sl__audio_dsp_fft *f);
/* frame: n reals (changed); out[k] = |X_k|^power for k = 0..n/2, with X the DFT of frame and
 * power 1 or 2; scratch of sl__audio_dsp_fft_scratch doubles. */
void sl__audio_dsp_fft_power(const sl__audio_dsp_fft *f, double *frame, int power, double *scratch,
                             double *out);

/* DALI's Hann window: w[t] = 0.5 (1 - cos(2 pi (t + 0.5) / n)) */
void sl__audio_dsp_hann(float *w, int n);

/* ---- mel filter banks ---- */
double sl__audio_dsp_hz_to_mel(double hz, bool htk);
double sl__audio_dsp_mel_to_hz(double mel, bool htk);
/* W: (nfilter, nbins) triangles over the bins' frequencies k * rate / nfft (k < nbins), their
 * corners nfilter + 2 points evenly spaced in mel between freq_low and freq_high; normalize:
 * each triangle scaled by 2 / (its upper corner - its lower corner) in Hz (Slaney's equal
 * area). first/last: per filter, its first bin and one past its last with a nonzero weight. */
void sl__audio_dsp_mel_bank(int nfilter, int nbins, int nfft, double rate, double freq_low,
                            double freq_high, bool htk, bool normalize, float *W, int *first,
                            int *last);

/* ---- DCT ---- */
/* T: (ndct, n), T[k][j] = s_k cos(pi / n (j + 0.5) k): DCT-II, s = 1, or with normalize the
 * orthonormal scales s_0 = sqrt(1 / n), s_k = sqrt(2 / n) */
void sl__audio_dsp_dct2(float *T, int ndct, int n, bool normalize);

#ifdef __cplusplus
}
#endif
#endif
