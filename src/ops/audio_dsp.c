/* SPDX-License-Identifier: Apache-2.0 */
/* The audio operators' signal processing (ops/audio_dsp.h). */
#include "ops/audio_dsp.h"

#include "core/alloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* ---- resampling --------------------------------------------------------------------------------
 */

#define PER_UNIT 512

sl_status sl__audio_dsp_resampler_init(sl__audio_dsp_resampler *r, double quality, sl_err *err) {
    memset(r, 0, sizeof *r);
    if (!(quality >= 0 && quality <= 100))
        return sl_err_set(err, SL_EINVAL, "quality %g (0 to 100)", quality);
    r->lobes = (int)lround(0.007 * quality * quality - 0.09 * quality + 3);
    if (r->lobes < 1) r->lobes = 1;
    r->per_unit = PER_UNIT;
    r->size = r->lobes * PER_UNIT + 2;
    r->table = sl__malloc((size_t)r->size * sizeof *r->table, err);
    if (!r->table) return SL_ENOMEM;
    for (int i = 0; i < r->size; i++) {
        double x = (double)i / PER_UNIT;
        double s = x == 0 ? 1 : sin(M_PI * x) / (M_PI * x);
        double w = x >= r->lobes ? 0 : 0.5 * (1 + cos(M_PI * x / r->lobes));
        r->table[i] = (float)(s * w);
    }
    return SL_OK;
}

void sl__audio_dsp_resampler_free(sl__audio_dsp_resampler *r) {
    free(r->table);
    r->table = NULL;
}

int64_t sl__audio_dsp_resampled_length(int64_t in_len, double in_rate, double out_rate) {
    double x = (double)in_len * out_rate / in_rate;
    double c = ceil(x);
    if (c - x > 1 - 1e-9) c -= 1; /* x an integer up to rounding */
    return (int64_t)c;
}

static inline double kernel(const sl__audio_dsp_resampler *r, double x) {
    x = fabs(x) * r->per_unit;
    int i = (int)x;
    if (i >= r->size - 1) return 0;
    double t = x - i;
    return r->table[i] + t * (r->table[i + 1] - r->table[i]);
}

void sl__audio_dsp_resample(const sl__audio_dsp_resampler *r, const float *in, int64_t in_len,
                            int channels, double in_rate, float *out, int64_t out_len,
                            double out_rate) {
    double step = in_rate / out_rate;
    double f = step > 1 ? 1 / step : 1; /* cut-off, as a fraction of the input's Nyquist */
    double radius = r->lobes / f;
    double acc[16];
    for (int64_t i = 0; i < out_len; i++) {
        double x = (i + 0.5) * step - 0.5;
        int64_t j0 = (int64_t)ceil(x - radius), j1 = (int64_t)floor(x + radius);
        if (j0 < 0) j0 = 0;
        if (j1 > in_len - 1) j1 = in_len - 1;
        for (int c0 = 0; c0 < channels; c0 += 16) {
            int nc = channels - c0 < 16 ? channels - c0 : 16;
            for (int c = 0; c < nc; c++) acc[c] = 0;
            for (int64_t j = j0; j <= j1; j++) {
                double w = kernel(r, (x - (double)j) * f) * f;
                const float *s = in + j * channels + c0;
                for (int c = 0; c < nc; c++) acc[c] += w * s[c];
            }
            for (int c = 0; c < nc; c++) out[i * channels + c0 + c] = (float)acc[c];
        }
    }
}

/* ---- Fourier transform -------------------------------------------------------------------------
 */

/* Powers of two (n >= 4) take the real-input route: the n reals as n/2 complex values
 * z[j] = x[2j] + i x[2j+1], an n/2-point radix-2 FFT Z, then X[k] = E[k] + w^k O[k] with
 * E = (Z[k] + conj Z[m-k]) / 2 and O = (Z[k] - conj Z[m-k]) / 2i, w = e^(-2 pi i / n). */
sl_status sl__audio_dsp_fft_init(sl__audio_dsp_fft *f, int n, sl_err *err) {
    memset(f, 0, sizeof *f);
    if (n < 1) return sl_err_set(err, SL_EINVAL, "FFT size %d", n);
    f->n = n;
    f->radix2 = n >= 4 && (n & (n - 1)) == 0;
    int nt = f->radix2 ? n / 2 + 1 : n, m = n / 2;
    f->cos_t = sl__malloc((size_t)nt * sizeof(double), err);
    f->sin_t = sl__malloc((size_t)nt * sizeof(double), err);
    if (f->radix2) f->bitrev = sl__malloc((size_t)m * sizeof(int), err);
    if (!f->cos_t || !f->sin_t || (f->radix2 && !f->bitrev)) {
        sl__audio_dsp_fft_free(f);
        return SL_ENOMEM;
    }
    for (int k = 0; k < nt; k++) {
        f->cos_t[k] = cos(2 * M_PI * k / n);
        f->sin_t[k] = sin(2 * M_PI * k / n);
    }
    if (f->radix2) {
        int bits = 0;
        while ((1 << bits) < m) bits++;
        for (int i = 0; i < m; i++) {
            int r = 0;
            for (int b = 0; b < bits; b++)
                if (i & (1 << b)) r |= 1 << (bits - 1 - b);
            f->bitrev[i] = r;
        }
    }
    return SL_OK;
}

void sl__audio_dsp_fft_free(sl__audio_dsp_fft *f) {
    free(f->bitrev), free(f->cos_t), free(f->sin_t);
    f->bitrev = NULL, f->cos_t = f->sin_t = NULL;
}

int64_t sl__audio_dsp_fft_scratch(const sl__audio_dsp_fft *f) {
    return 2 * (int64_t)f->n;
}

static inline double mag(double re, double im, int power) {
    double p = re * re + im * im;
    return power == 2 ? p : sqrt(p);
}

void sl__audio_dsp_fft_power(const sl__audio_dsp_fft *f, double *frame, int power, double *scratch,
                             double *out) {
    int n = f->n, nb = n / 2 + 1;
    if (f->radix2) {
        int m = n / 2;
        double *re = scratch, *im = scratch + m;
        for (int j = 0; j < m; j++)
            re[f->bitrev[j]] = frame[2 * j], im[f->bitrev[j]] = frame[2 * j + 1];
        for (int a = 0; a + 1 < m; a += 2) { /* the first stage: every twiddle is 1 */
            double tr = re[a + 1], ti = im[a + 1];
            re[a + 1] = re[a] - tr, im[a + 1] = im[a] - ti;
            re[a] += tr, im[a] += ti;
        }
        for (int len = 4; len <= m; len <<= 1) {
            int half = len / 2, stride = 2 * (m / len); /* w_m^j = w_n^(2j) */
            for (int s = 0; s < m; s += len)
                for (int k = 0; k < half; k++) {
                    double wr = f->cos_t[k * stride], wi = -f->sin_t[k * stride];
                    int a = s + k, b = s + k + half;
                    double tr = re[b] * wr - im[b] * wi, ti = re[b] * wi + im[b] * wr;
                    re[b] = re[a] - tr, im[b] = im[a] - ti;
                    re[a] += tr, im[a] += ti;
                }
        }
        for (int k = 0; k <= m; k++) {
            int p = k % m, q = (m - k) % m;
            double a = re[p], b = im[p], c = re[q], d = im[q];
            double er = (a + c) / 2, ei = (b - d) / 2, orr = (b + d) / 2, oi = -(a - c) / 2;
            double wr = f->cos_t[k], wi = -f->sin_t[k];
            out[k] = mag(er + wr * orr - wi * oi, ei + wr * oi + wi * orr, power);
        }
        return;
    }
    (void)scratch;
    for (int k = 0; k < nb; k++) {
        double sr = 0, si = 0;
        int64_t idx = 0;
        for (int t = 0; t < n; t++) {
            sr += frame[t] * f->cos_t[idx];
            si -= frame[t] * f->sin_t[idx];
            idx += k;
            if (idx >= n) idx -= n;
        }
        out[k] = mag(sr, si, power);
    }
}

void sl__audio_dsp_hann(float *w, int n) {
    for (int t = 0; t < n; t++) w[t] = (float)(0.5 * (1.0 - cos(2 * M_PI * (t + 0.5) / n)));
}

/* ---- mel ------------------------------------------------------------------------------------- */

/* Slaney: linear below 1 kHz (3 mel per 200 Hz), logarithmic above (27 mel per factor 6.4) */
#define SLANEY_F_SP    (200.0 / 3)
#define SLANEY_MIN_LOG 1000.0
#define SLANEY_LOGSTEP (log(6.4) / 27)

double sl__audio_dsp_hz_to_mel(double hz, bool htk) {
    if (htk) return 2595.0 * log10(1 + hz / 700.0);
    if (hz < SLANEY_MIN_LOG) return hz / SLANEY_F_SP;
    return SLANEY_MIN_LOG / SLANEY_F_SP + log(hz / SLANEY_MIN_LOG) / SLANEY_LOGSTEP;
}

double sl__audio_dsp_mel_to_hz(double mel, bool htk) {
    if (htk) return 700.0 * (pow(10, mel / 2595.0) - 1);
    double min_log_mel = SLANEY_MIN_LOG / SLANEY_F_SP;
    if (mel < min_log_mel) return mel * SLANEY_F_SP;
    return SLANEY_MIN_LOG * exp(SLANEY_LOGSTEP * (mel - min_log_mel));
}

void sl__audio_dsp_mel_bank(int nfilter, int nbins, int nfft, double rate, double freq_low,
                            double freq_high, bool htk, bool normalize, float *W, int *first,
                            int *last) {
    double m0 = sl__audio_dsp_hz_to_mel(freq_low, htk),
           m1 = sl__audio_dsp_hz_to_mel(freq_high, htk);
    double step = (m1 - m0) / (nfilter + 1);
    for (int m = 0; m < nfilter; m++) {
        double lo = sl__audio_dsp_mel_to_hz(m0 + step * m, htk);
        double c = sl__audio_dsp_mel_to_hz(m0 + step * (m + 1), htk);
        double hi = sl__audio_dsp_mel_to_hz(m0 + step * (m + 2), htk);
        double scale = normalize ? 2.0 / (hi - lo) : 1.0;
        first[m] = nbins, last[m] = 0;
        for (int k = 0; k < nbins; k++) {
            double fk = k * rate / nfft;
            double up = (fk - lo) / (c - lo), down = (hi - fk) / (hi - c);
            double w = up < down ? up : down;
            if (w < 0) w = 0;
            W[(int64_t)m * nbins + k] = (float)(w * scale);
            if (w > 0) {
                if (k < first[m]) first[m] = k;
                last[m] = k + 1;
            }
        }
        if (first[m] > last[m]) first[m] = last[m] = 0;
    }
}

void sl__audio_dsp_dct2(float *T, int ndct, int n, bool normalize) {
    for (int k = 0; k < ndct; k++) {
        double s = normalize ? (k == 0 ? sqrt(1.0 / n) : sqrt(2.0 / n)) : 1.0;
        for (int j = 0; j < n; j++)
            T[(int64_t)k * n + j] = (float)(s * cos(M_PI / n * (j + 0.5) * k));
    }
}
