/* SPDX-License-Identifier: Apache-2.0 */
/* The audio operators of the frequency domain (DALI's names, arguments and defaults), CPU:
 *   spectrogram      |STFT|^power of 1-D float audio: windows of window_length samples every
 *                    window_step, each multiplied by window_fn (default DALI's Hann,
 *                    0.5 (1 - cos(2 pi (t + 0.5) / N))) and zero-padded to nfft (default
 *                    window_length) points; nfft // 2 + 1 bins. center_windows (default) pads
 *                    the signal by window_length // 2 on each side, mirrored (reflect_padding)
 *                    or with zeros, and gives len // window_step + 1 windows; without it only
 *                    windows wholly inside the signal, (len - window_length) // window_step + 1.
 *                    layout "ft" (frequency, time; the default) or "tf".
 *   mel_filter_bank  triangular mel filters (ops/audio_dsp.h; Slaney or HTK) applied along the
 *                    layout's "f" axis (else the second to last): nfilter values in its place.
 *   mfcc             DCT-II along `axis` (default 0), n_mfcc coefficients, orthonormal with
 *                    normalize, then cepstral liftering 1 + lifter / 2 sin(pi (k + 1) / lifter).
 * The Fourier transform is radix 2 for powers of two and a direct sum otherwise (ops/audio_dsp.h),
 * computed in double; results are float32. */
#include "operator/gpu_args.h"
#include "operator/op.h"
#include "ops/audio_dsp.h"
#include "ops/audio_gpu.h"

#include "core/alloc.h"
#include "core/log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- spectrogram ----------------------------------------------------------------------------- */

static const sl__arg_schema sp_args[] = {
    {"nfft", SL_ARG_INT, "None", "FFT size (default window_length); nfft // 2 + 1 bins out", 0,
     NULL},
    {"window_length", SL_ARG_INT, "512", "window size in samples", 0, NULL},
    {"window_step", SL_ARG_INT, "256", "samples between the windows' starts", 0, NULL},
    {"window_fn", SL_ARG_FLOATS, "[]", "the window's window_length values (default: Hann)", 0,
     NULL},
    {"power", SL_ARG_INT, "2", "exponent of the magnitude: 1 (amplitude) or 2 (power)", 0, NULL},
    {"center_windows", SL_ARG_BOOL, "True",
     "pad the signal so that windows are centred at multiples of window_step", 0, NULL},
    {"reflect_padding", SL_ARG_BOOL, "True",
     "with center_windows, mirror the signal at its ends (else pad with zeros)", 0, NULL},
    {"layout", SL_ARG_STR, "\"ft\"", "output layout: \"ft\" (frequency, time) or \"tf\"", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct sp_state {
    int nfft, wlen, step, power;
    bool center, reflect, tf;
    float *window;
    sl__audio_dsp_fft fft;
    sl__worker_scratch scratch;
    /* the CUDA run: cuFFT's plan (made at the first GPU batch), descriptors, frames, spectra */
    sl__cuda_fft *gfft;
    sl__gpu_args gpu;
    sl__gpu_scratch gframes, gspec;
} sp_state;

static void sp_destroy(void *state) {
    sp_state *s = state;
    if (!s) return;
    free(s->window);
    sl__audio_dsp_fft_free(&s->fft);
    sl__worker_scratch_free(&s->scratch);
#ifdef SLUICE_HAVE_CUDA
    sl__cuda_fft_free(s->gfft);
#endif
    sl__gpu_args_free(&s->gpu);
    sl__gpu_scratch_free(&s->gframes);
    sl__gpu_scratch_free(&s->gspec);
    free(s);
}

static sl_status sp_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    sp_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    sl_status st = SL_OK;
    int64_t wl = sl__args_int(a, "window_length"), step = sl__args_int(a, "window_step");
    int64_t nfft = sl__args_get(a, "nfft")->kind == SL_VAL_NONE ? wl : sl__args_int(a, "nfft");
    int64_t power = sl__args_int(a, "power");
    const char *layout = sl__args_str(a, "layout");
    const double *wf;
    int nwf = sl__args_floats(a, "window_fn", &wf);
    if (wl < 1 || wl > (1 << 20))
        st = sl_err_set(err, SL_EINVAL, "spectrogram: window_length %lld (1 to 2^20)",
                        (long long)wl);
    else if (step < 1 || step > (1 << 24))
        st = sl_err_set(err, SL_EINVAL, "spectrogram: window_step %lld (1 to 2^24)",
                        (long long)step);
    else if (nfft < wl || nfft > (1 << 20))
        st = sl_err_set(err, SL_EINVAL,
                        "spectrogram: nfft %lld (at least window_length %lld, at most 2^20)",
                        (long long)nfft, (long long)wl);
    else if (power != 1 && power != 2)
        st = sl_err_set(err, SL_EINVAL, "spectrogram: power %lld (1 or 2)", (long long)power);
    else if (!layout || (strcmp(layout, "ft") != 0 && strcmp(layout, "tf") != 0))
        st = sl_err_set(err, SL_EINVAL, "spectrogram: layout \"%s\" (\"ft\" or \"tf\")",
                        layout ? layout : "");
    else if (nwf != 0 && nwf != wl)
        st = sl_err_set(err, SL_EINVAL,
                        "spectrogram: window_fn has %d values for window_length %lld", nwf,
                        (long long)wl);
    if (st) {
        sp_destroy(s);
        return st;
    }
    s->nfft = (int)nfft, s->wlen = (int)wl, s->step = (int)step, s->power = (int)power;
    s->center = sl__args_bool(a, "center_windows");
    s->reflect = sl__args_bool(a, "reflect_padding");
    s->tf = strcmp(layout, "tf") == 0;
    s->window = sl__malloc((size_t)wl * sizeof *s->window, err);
    if (!s->window) st = SL_ENOMEM;
    if (!st) {
        if (nwf)
            for (int t = 0; t < wl; t++) s->window[t] = (float)wf[t];
        else
            sl__audio_dsp_hann(s->window, (int)wl);
        st = sl__audio_dsp_fft_init(&s->fft, s->nfft, err);
    }
    if (!st) st = sl__worker_scratch_init(&s->scratch, init->threads, err);
    if (st) {
        sp_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

/* the signal's length: (time,), (1, time) or (time, 1) */
static int64_t signal_length(const sl_tlist *in, int i) {
    const int64_t *sh = sl_tlist_shape(in, i);
    if (in->ndim == 1) return sh[0];
    return sh[0] == 1 ? sh[1] : sh[0];
}

static int64_t sp_windows(const sp_state *s, int64_t n) {
    if (s->center) return n / s->step + 1;
    return n < s->wlen ? 0 : (n - s->wlen) / s->step + 1;
}

static sl_status sp_setup(void *state, sl__op_io *io, sl_err *err) {
    sp_state *s = state;
    const sl_tlist *in = io->in[0];
    if (in->dtype != SL_DTYPE_F32 || in->ndim < 1 || in->ndim > 2)
        return sl_err_set(err, SL_EINVAL,
                          "spectrogram: the input must be one channel of float32 audio, (time,), "
                          "(1, time) or (time, 1); not %d-D %s",
                          in->ndim, sl_dtype_name(in->dtype));
    int64_t *shapes = sl__malloc((size_t)(io->batch > 0 ? io->batch : 1) * 2 * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    sl_status st = SL_OK;
    int64_t bins = s->nfft / 2 + 1;
    for (int i = 0; i < io->batch; i++) {
        const int64_t *sh = sl_tlist_shape(in, i);
        if (in->ndim == 2 && sh[0] != 1 && sh[1] != 1) {
            st = sl__op_fail(err, SL_EINVAL, io, i, "spectrogram",
                             "shape (%lld, %lld): one channel only", (long long)sh[0],
                             (long long)sh[1]);
            break;
        }
        int64_t nw = sp_windows(s, signal_length(in, i));
        shapes[2 * i] = s->tf ? nw : bins;
        shapes[2 * i + 1] = s->tf ? bins : nw;
    }
    if (st == SL_OK) st = sl_tlist_reset(io->out[0], io->batch, SL_DTYPE_F32, 2, io->device, err);
    if (st == SL_OK) st = sl_tlist_alloc(io->out[0], shapes, err);
    if (st == SL_OK) {
        memset(io->out[0]->layout, 0, sizeof io->out[0]->layout);
        memcpy(io->out[0]->layout, s->tf ? "tf" : "ft", 2);
    }
    free(shapes);
    return st;
}

#define SP_BLOCK 16 /* "ft": windows whose spectra are written out together */

static sl_status sp_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    sp_state *s = state;
    const sl_tlist *in = io->in[0];
    const float *x = in->data[i];
    float *y = io->out[0]->data[i];
    int64_t n = signal_length(in, i), nw = sp_windows(s, n);
    int nfft = s->nfft, bins = nfft / 2 + 1;
    size_t need = (size_t)(nfft + sl__audio_dsp_fft_scratch(&s->fft) + (int64_t)SP_BLOCK * bins) *
                  sizeof(double);
    double *frame = sl__worker_scratch_get(&s->scratch, worker, need);
    if (!frame) return sl__op_fail(err, SL_ENOMEM, io, i, "spectrogram", "out of memory");
    double *scr = frame + nfft, *blk = scr + sl__audio_dsp_fft_scratch(&s->fft);
    int64_t offset = s->center ? s->wlen / 2 : 0;
    for (int t = s->wlen; t < nfft; t++) frame[t] = 0;
    for (int64_t w0 = 0; w0 < nw; w0 += SP_BLOCK) {
        int nb = nw - w0 < SP_BLOCK ? (int)(nw - w0) : SP_BLOCK;
        for (int b = 0; b < nb; b++) {
            int64_t start = (w0 + b) * s->step - offset;
            if (start >= 0 && start + s->wlen <= n) { /* inside the signal */
                const float *src = x + start;
                for (int t = 0; t < s->wlen; t++) frame[t] = (double)src[t] * s->window[t];
            } else {
                for (int t = 0; t < s->wlen; t++) {
                    int64_t j = start + t;
                    double v = 0;
                    if (j >= 0 && j < n) {
                        v = x[j];
                    } else if (s->reflect && n > 1) {
                        while (j < 0 || j >= n) j = j < 0 ? -j : 2 * n - 2 - j;
                        v = x[j];
                    } else if (s->reflect && n == 1) {
                        v = x[0];
                    }
                    frame[t] = v * s->window[t];
                }
            }
            double *pw = blk + (int64_t)b * bins;
            sl__audio_dsp_fft_power(&s->fft, frame, s->power, scr, pw);
            if (s->tf)
                for (int k = 0; k < bins; k++) y[(w0 + b) * bins + k] = (float)pw[k];
        }
        if (!s->tf) /* (bins, windows): a block's row of each bin at once */
            for (int k = 0; k < bins; k++) {
                float *row = y + (int64_t)k * nw + w0;
                for (int b = 0; b < nb; b++) row[b] = (float)blk[(int64_t)b * bins + k];
            }
    }
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
#define SP_ROWS 1024 /* windows per cuFFT call */

static sl_status sp_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    sp_state *s = state;
    const sl_tlist *in = io->in[0];
    int n = io->batch;
    if (!s->gfft) SL_TRY(sl__cuda_fft_create(s->nfft, SP_ROWS, &s->gfft, err));
    size_t dbytes = sl__gpu_args_align((size_t)(n ? n : 1) * sizeof(sl__cuda_spec_desc));
    size_t bytes = dbytes + (size_t)s->wlen * sizeof(float);
    sl__cuda_spec_desc *d = sl__gpu_args_host(&s->gpu, io->device.id, bytes, err);
    if (!d) return err->status;
    int64_t rows = 0, most = 0;
    for (int i = 0; i < n; i++) {
        d[i].in = in->data[i], d[i].out = io->out[0]->data[i];
        d[i].len = signal_length(in, i);
        d[i].nwin = sp_windows(s, d[i].len);
        d[i].row0 = rows;
        rows += d[i].nwin;
        if (d[i].nwin * s->nfft > most) most = d[i].nwin * s->nfft;
    }
    memcpy((char *)d + dbytes, s->window, (size_t)s->wlen * sizeof(float));
    if (rows == 0) return SL_OK;
    int64_t total = (rows + SP_ROWS - 1) / SP_ROWS * SP_ROWS;
    float *frames =
        sl__gpu_scratch_get(&s->gframes, io->device.id,
                            (size_t)total * (size_t)s->nfft * sizeof(float), io->stream, err);
    if (!frames) return err->status;
    void *spec = sl__gpu_scratch_get(&s->gspec, io->device.id,
                                     (size_t)total * (size_t)(s->nfft / 2 + 1) * 2 * sizeof(float),
                                     io->stream, err);
    if (!spec) return err->status;
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, bytes, io->stream, &dd, err));
    return sl__cuda_spectrogram(s->gfft, dd, n, most, (const float *)((char *)dd + dbytes), s->wlen,
                                s->step, s->center, s->reflect, s->power, s->tf, frames, spec,
                                total, io->stream, err);
}
#define SP_DEVICES .devices = SL_OPDEV_CPU | SL_OPDEV_GPU, .run_gpu = sp_run_gpu,
#else
#define SP_DEVICES .devices = SL_OPDEV_CPU,
#endif

const sl__op_def sl__spectrogram_op = {
    .name = "spectrogram",
    .doc =
        "Power (or amplitude) spectrogram of 1-D float audio: windowed STFT, nfft // 2 + 1 bins, "
        "layout \"ft\" or \"tf\" (DALI's fn.spectrogram).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = sp_args,
    SP_DEVICES.create = sp_create,
    .setup = sp_setup,
    .run_cpu = sp_run_cpu,
    .destroy = sp_destroy,
};

/* ---- along one axis: outer x n x inner ------------------------------------------------------- */

static void split_axis(const sl_tlist *l, int i, int axis, int64_t *outer, int64_t *n,
                       int64_t *inner) {
    const int64_t *sh = sl_tlist_shape(l, i);
    *outer = 1, *inner = 1, *n = sh[axis];
    for (int d = 0; d < axis; d++) *outer *= sh[d];
    for (int d = axis + 1; d < l->ndim; d++) *inner *= sh[d];
}

/* out: in's shapes with axis's extent set to m */
static sl_status replace_axis(const sl_tlist *in, sl_tlist *out, int batch, int axis, int64_t m,
                              sl_device dev, sl_err *err) {
    int nd = in->ndim;
    int64_t *shapes =
        sl__malloc((size_t)(batch > 0 ? batch : 1) * (size_t)nd * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    for (int i = 0; i < batch; i++) {
        memcpy(shapes + (size_t)i * nd, sl_tlist_shape(in, i), (size_t)nd * sizeof *shapes);
        shapes[(size_t)i * nd + axis] = m;
    }
    sl_status st = sl_tlist_reset(out, batch, SL_DTYPE_F32, nd, dev, err);
    if (st == SL_OK) st = sl_tlist_alloc(out, shapes, err);
    if (st == SL_OK) memcpy(out->layout, in->layout, sizeof out->layout);
    free(shapes);
    return st;
}

/* ---- mel_filter_bank ------------------------------------------------------------------------- */

static const sl__arg_schema mel_args[] = {
    {"nfilter", SL_ARG_INT, "128", "number of mel filters", 0, NULL},
    {"sample_rate", SL_ARG_FLOAT, "44100.0", "the audio's sample rate (Hz)", 0, NULL},
    {"freq_low", SL_ARG_FLOAT, "0.0", "the lowest frequency (Hz)", 0, NULL},
    {"freq_high", SL_ARG_FLOAT, "0.0", "the highest frequency (Hz; 0: sample_rate / 2)", 0, NULL},
    {"normalize", SL_ARG_BOOL, "True",
     "scale each triangle by 2 / its width in Hz (equal area, Slaney's); else peak 1", 0, NULL},
    {"mel_formula", SL_ARG_ENUM, "\"slaney\"", "the mel scale", 0, "slaney|htk"},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct mel_state {
    int nfilter;
    double rate, flo, fhi;
    bool normalize, htk;
    int nbins; /* the bank below is for this many bins (0: none yet) */
    float *W;  /* (nfilter, nbins) */
    int *first, *last;
    int axis; /* this batch's */
    sl__gpu_args gpu;
} mel_state;

static void mel_destroy(void *state) {
    mel_state *s = state;
    if (!s) return;
    free(s->W), free(s->first), free(s->last);
    sl__gpu_args_free(&s->gpu);
    free(s);
}

static sl_status mel_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    mel_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    int64_t nf = sl__args_int(a, "nfilter");
    s->rate = sl__args_float(a, "sample_rate");
    s->flo = sl__args_float(a, "freq_low");
    s->fhi = sl__args_float(a, "freq_high");
    s->normalize = sl__args_bool(a, "normalize");
    s->htk = strcmp(sl__args_str(a, "mel_formula"), "htk") == 0;
    if (s->fhi == 0) s->fhi = s->rate / 2;
    sl_status st = SL_OK;
    if (nf < 1 || nf > 65536)
        st =
            sl_err_set(err, SL_EINVAL, "mel_filter_bank: nfilter %lld (1 to 65536)", (long long)nf);
    else if (!(s->rate > 0 && s->rate <= 1e7))
        st = sl_err_set(err, SL_EINVAL, "mel_filter_bank: sample_rate %g (> 0)", s->rate);
    else if (!(s->flo >= 0 && s->fhi > s->flo && s->fhi <= s->rate / 2))
        st = sl_err_set(err, SL_EINVAL,
                        "mel_filter_bank: freq_low %g, freq_high %g (0 <= freq_low < freq_high <= "
                        "sample_rate / 2 = %g)",
                        s->flo, s->fhi, s->rate / 2);
    /* the tables only once nfilter is known to be in range (2^31 filters: 8 GiB of them) */
    if (!st) {
        s->nfilter = (int)nf;
        s->first = sl__calloc((size_t)nf, sizeof(int), err);
        s->last = sl__calloc((size_t)nf, sizeof(int), err);
        if (!s->first || !s->last) st = SL_ENOMEM;
    }
    if (st) {
        mel_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

/* the frequency axis: the layout's 'f', else the second to last */
static int freq_axis(const sl_tlist *in) {
    const char *f = strchr(in->layout, 'f');
    if (f && in->layout[0]) return (int)(f - in->layout);
    return in->ndim - 2;
}

static sl_status mel_setup(void *state, sl__op_io *io, sl_err *err) {
    mel_state *s = state;
    const sl_tlist *in = io->in[0];
    if (in->dtype != SL_DTYPE_F32 || in->ndim < 2)
        return sl_err_set(err, SL_EINVAL,
                          "mel_filter_bank: the input must be a float32 spectrogram (2 or more "
                          "dimensions), not %d-D %s",
                          in->ndim, sl_dtype_name(in->dtype));
    s->axis = freq_axis(in);
    int nbins = 0;
    for (int i = 0; i < io->batch; i++) {
        int64_t b = sl_tlist_shape(in, i)[s->axis];
        if (b < 2 || b > (1 << 20))
            return sl__op_fail(err, SL_EINVAL, io, i, "mel_filter_bank",
                               "%lld frequency bins (2 to 2^20)", (long long)b);
        if (nbins && b != nbins)
            return sl__op_fail(err, SL_EINVAL, io, i, "mel_filter_bank",
                               "%lld frequency bins, sample 0 has %d: one FFT size a batch",
                               (long long)b, nbins);
        nbins = (int)b;
    }
    if (nbins && nbins != s->nbins) {
        float *W = realloc(s->W, (size_t)s->nfilter * (size_t)nbins * sizeof *W);
        if (!W) return sl_err_set(err, SL_ENOMEM, "mel_filter_bank: out of memory");
        s->W = W;
        sl__audio_dsp_mel_bank(s->nfilter, nbins, 2 * (nbins - 1), s->rate, s->flo, s->fhi, s->htk,
                               s->normalize, s->W, s->first, s->last);
        s->nbins = nbins;
    }
    return replace_axis(in, io->out[0], io->batch, s->axis, s->nfilter, io->device, err);
}

static sl_status mel_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)worker, (void)err;
    mel_state *s = state;
    int64_t outer, n, inner;
    split_axis(io->in[0], i, s->axis, &outer, &n, &inner);
    const float *x = io->in[0]->data[i];
    float *y = io->out[0]->data[i];
    if (outer == 0 || inner == 0) return SL_OK; /* no bytes, maybe no memory (NULL + 0) */
    for (int64_t o = 0; o < outer; o++)
        for (int m = 0; m < s->nfilter; m++) {
            float *dst = y + (o * s->nfilter + m) * inner;
            for (int64_t t = 0; t < inner; t++) dst[t] = 0;
            const float *w = s->W + (int64_t)m * n;
            for (int k = s->first[m]; k < s->last[m]; k++) {
                const float *src = x + (o * n + k) * inner;
                float wk = w[k];
                for (int64_t t = 0; t < inner; t++) dst[t] += wk * src[t];
            }
        }
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
static sl_status mel_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    mel_state *s = state;
    int n = io->batch;
    if (n == 0) return SL_OK;
    size_t dbytes = sl__gpu_args_align((size_t)n * sizeof(sl__cuda_mel_desc));
    size_t wbytes = sl__gpu_args_align((size_t)s->nfilter * (size_t)s->nbins * sizeof(float));
    size_t ibytes = (size_t)s->nfilter * sizeof(int);
    sl__cuda_mel_desc *d =
        sl__gpu_args_host(&s->gpu, io->device.id, dbytes + wbytes + 2 * ibytes, err);
    if (!d) return err->status;
    int64_t most = 0;
    for (int i = 0; i < n; i++) {
        int64_t nb;
        d[i].in = io->in[0]->data[i], d[i].out = io->out[0]->data[i];
        split_axis(io->in[0], i, s->axis, &d[i].outer, &nb, &d[i].inner);
        if (d[i].outer * s->nfilter * d[i].inner > most)
            most = d[i].outer * s->nfilter * d[i].inner;
    }
    char *p = (char *)d;
    memcpy(p + dbytes, s->W, (size_t)s->nfilter * (size_t)s->nbins * sizeof(float));
    memcpy(p + dbytes + wbytes, s->first, ibytes);
    memcpy(p + dbytes + wbytes + ibytes, s->last, ibytes);
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, dbytes + wbytes + 2 * ibytes, io->stream, &dd, err));
    char *q = dd;
    return sl__cuda_mel(
        dd, n, most, (const float *)(q + dbytes), (const int *)(q + dbytes + wbytes),
        (const int *)(q + dbytes + wbytes + ibytes), s->nfilter, s->nbins, io->stream, err);
}
#define MEL_DEVICES .devices = SL_OPDEV_CPU | SL_OPDEV_GPU, .run_gpu = mel_run_gpu,
#else
#define MEL_DEVICES .devices = SL_OPDEV_CPU,
#endif

const sl__op_def sl__mel_filter_bank_op = {
    .name = "mel_filter_bank",
    .doc = "Triangular mel filters (Slaney or HTK scale) over a spectrogram's frequency axis "
           "(DALI's fn.mel_filter_bank).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = mel_args,
    MEL_DEVICES.create = mel_create,
    .setup = mel_setup,
    .run_cpu = mel_run_cpu,
    .destroy = mel_destroy,
};

/* ---- mfcc ------------------------------------------------------------------------------------ */

static const sl__arg_schema mfcc_args[] = {
    {"axis", SL_ARG_INT, "0", "the axis the DCT runs along", 0, NULL},
    {"dct_type", SL_ARG_INT, "2", "the DCT's type (2)", 0, NULL},
    {"n_mfcc", SL_ARG_INT, "20", "number of coefficients", 0, NULL},
    {"normalize", SL_ARG_BOOL, "False", "orthonormal DCT", 0, NULL},
    {"lifter", SL_ARG_FLOAT, "0.0", "cepstral liftering coefficient (0: none)", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct mfcc_state {
    int axis, ndct;
    bool normalize;
    double lifter;
    int n;    /* the table below is for this input extent */
    float *T; /* (ndct, n), liftering folded in */
} mfcc_state;

static void mfcc_destroy(void *state) {
    mfcc_state *s = state;
    if (s) free(s->T);
    free(s);
}

static sl_status mfcc_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    mfcc_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    int64_t axis = sl__args_int(a, "axis"), type = sl__args_int(a, "dct_type");
    int64_t nd = sl__args_int(a, "n_mfcc");
    s->normalize = sl__args_bool(a, "normalize");
    s->lifter = sl__args_float(a, "lifter");
    sl_status st = SL_OK;
    if (axis < 0 || axis >= SL_MAX_DIMS)
        st = sl_err_set(err, SL_EINVAL, "mfcc: axis %lld", (long long)axis);
    else if (type != 2)
        st = sl_err_set(err, SL_ENOTSUP, "mfcc: dct_type %lld (only 2 is implemented)",
                        (long long)type);
    else if (nd < 1 || nd > 65536)
        st = sl_err_set(err, SL_EINVAL, "mfcc: n_mfcc %lld (1 to 65536)", (long long)nd);
    else if (!isfinite(s->lifter))
        st = sl_err_set(err, SL_EINVAL, "mfcc: lifter %g", s->lifter);
    if (st) {
        mfcc_destroy(s);
        return st;
    }
    s->axis = (int)axis, s->ndct = (int)nd;
    *out = s;
    return SL_OK;
}

static sl_status mfcc_setup(void *state, sl__op_io *io, sl_err *err) {
    mfcc_state *s = state;
    const sl_tlist *in = io->in[0];
    if (in->dtype != SL_DTYPE_F32 || s->axis >= in->ndim)
        return sl_err_set(err, SL_EINVAL,
                          "mfcc: the input must be float32 with an axis %d, not %d-D %s", s->axis,
                          in->ndim, sl_dtype_name(in->dtype));
    int n = 0;
    for (int i = 0; i < io->batch; i++) {
        int64_t e = sl_tlist_shape(in, i)[s->axis];
        if (e < s->ndct || e > 65536)
            return sl__op_fail(err, SL_EINVAL, io, i, "mfcc",
                               "%lld values along axis %d for n_mfcc %d (at least n_mfcc)",
                               (long long)e, s->axis, s->ndct);
        if (n && e != n)
            return sl__op_fail(err, SL_EINVAL, io, i, "mfcc",
                               "%lld values along axis %d, sample 0 has %d", (long long)e, s->axis,
                               n);
        n = (int)e;
    }
    if (n && n != s->n) {
        float *T = realloc(s->T, (size_t)s->ndct * (size_t)n * sizeof *T);
        if (!T) return sl_err_set(err, SL_ENOMEM, "mfcc: out of memory");
        s->T = T;
        sl__audio_dsp_dct2(T, s->ndct, n, s->normalize);
        if (s->lifter != 0)
            for (int k = 0; k < s->ndct; k++) {
                double l = 1 + s->lifter / 2 * sin(3.14159265358979323846 * (k + 1) / s->lifter);
                for (int j = 0; j < n; j++)
                    T[(int64_t)k * n + j] = (float)(T[(int64_t)k * n + j] * l);
            }
        s->n = n;
    }
    return replace_axis(in, io->out[0], io->batch, s->axis, s->ndct, sl_cpu(), err);
}

static sl_status mfcc_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)worker, (void)err;
    mfcc_state *s = state;
    int64_t outer, n, inner;
    split_axis(io->in[0], i, s->axis, &outer, &n, &inner);
    const float *x = io->in[0]->data[i];
    float *y = io->out[0]->data[i];
    for (int64_t o = 0; o < outer; o++)
        for (int k = 0; k < s->ndct; k++) {
            float *dst = y + (o * s->ndct + k) * inner;
            for (int64_t t = 0; t < inner; t++) dst[t] = 0;
            const float *c = s->T + (int64_t)k * n;
            for (int64_t j = 0; j < n; j++) {
                const float *src = x + (o * n + j) * inner;
                float cj = c[j];
                for (int64_t t = 0; t < inner; t++) dst[t] += cj * src[t];
            }
        }
    return SL_OK;
}

const sl__op_def sl__mfcc_op = {
    .name = "mfcc",
    .doc = "Mel-frequency cepstral coefficients: a DCT-II along axis, n_mfcc values, optionally "
           "orthonormal and liftered (DALI's fn.mfcc).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = mfcc_args,
    .devices = SL_OPDEV_CPU,
    .create = mfcc_create,
    .setup = mfcc_setup,
    .run_cpu = mfcc_run_cpu,
    .destroy = mfcc_destroy,
};
