/* SPDX-License-Identifier: Apache-2.0 */
/* The audio operators in C, so that the sanitizer builds run them too (python/tests/test_audio.py
 * checks them against numpy/scipy/soundfile): WAV files written here (16-bit mono 16 kHz, float
 * stereo 22.05 kHz) decoded by decoders.audio (exact sample values, the exact downmix, the
 * resampled length and a resampled tone), read through a NeMo manifest by readers.nemo_asr (text,
 * index; a bad line named), the spectrogram against a direct DFT written here (radix-2 and
 * other sizes, both layouts, centred or not), the mel filter bank against Slaney's triangles
 * written here, to_decibels, preemphasis_filter, nonsilent_region (a tone between silences), mfcc
 * against a direct DCT-II, audio_resample and shapes; each on a pool of 2 threads. */
#include "check.h"
#include "io/audio.h"
#include "opharness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static char dir[256];

static void put16(FILE *f, unsigned v) {
    fputc((int)(v & 255), f), fputc((int)(v >> 8 & 255), f);
}
static void put32(FILE *f, unsigned v) {
    put16(f, v & 0xffff), put16(f, v >> 16);
}

/* a canonical WAV: 16-bit PCM (bits 16) or IEEE float (bits 32); x: frames x channels */
static void write_wav(const char *path, const float *x, int frames, int ch, int rate, int bits) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    unsigned bytes = (unsigned)(frames * ch * bits / 8);
    fwrite("RIFF", 1, 4, f), put32(f, 36 + bytes), fwrite("WAVEfmt ", 1, 8, f);
    put32(f, 16), put16(f, bits == 32 ? 3 : 1), put16(f, (unsigned)ch), put32(f, (unsigned)rate);
    put32(f, (unsigned)(rate * ch * bits / 8)), put16(f, (unsigned)(ch * bits / 8));
    put16(f, (unsigned)bits), fwrite("data", 1, 4, f), put32(f, bytes);
    for (int k = 0; k < frames * ch; k++) {
        if (bits == 16) {
            put16(f, (unsigned)(uint16_t)(int16_t)lrintf(x[k] * 32767));
        } else {
            uint32_t u;
            memcpy(&u, &x[k], 4);
            put32(f, u);
        }
    }
    fclose(f);
}

static void list_f32(sl_tlist *l, int n, const int64_t *len, const float *const *src) {
    sl_err e;
    memset(l, 0, sizeof *l);
    CHECK_OK(sl_tlist_reset(l, n, SL_DTYPE_F32, 1, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(l, len, &e), &e);
    for (int i = 0; i < n; i++) memcpy(l->data[i], src[i], (size_t)len[i] * sizeof(float));
}

static const sl_tlist *run1(oph *h, const char *op, const char *const *argv, sl_tlist *in) {
    sl_err e;
    sl_status st = oph_create(h, op, argv, 2, in ? in->count : 2, 1, &e);
    CHECK_OK(st, &e);
    if (st) return NULL;
    sl_tlist *ins[1] = {in};
    st = oph_run(h, in ? in->count : 2, ins, in ? 1 : 0, NULL, 0, NULL, 0, &e);
    CHECK_OK(st, &e);
    return st ? NULL : &h->out[0];
}

/* ---- decoding and the reader ---- */

static float tone[16000], stereo[2 * 11025];

static void test_decode(void) {
    char p1[300], p2[300];
    for (int t = 0; t < 16000; t++)
        tone[t] = t < 4000 || t >= 12000 ? 0 : 0.5f * (float)sin(2 * M_PI * 440 * t / 16000.0);
    for (int t = 0; t < 11025; t++) {
        stereo[2 * t] = 0.25f * (float)sin(2 * M_PI * 300 * t / 22050.0);
        stereo[2 * t + 1] = (float)(t % 7) / 10.0f - 0.3f;
    }
    snprintf(p1, sizeof p1, "%s/tone.wav", dir);
    snprintf(p2, sizeof p2, "%s/stereo.wav", dir);
    write_wav(p1, tone, 16000, 1, 16000, 16);
    write_wav(p2, stereo, 11025, 2, 22050, 32);
    if (!sl__audio_available()) {
        printf("skipped decoding: built without libsndfile\n");
        return;
    }
    size_t n1, n2;
    void *b1 = oph_read_file(p1, &n1), *b2 = oph_read_file(p2, &n2);
    const void *data[2] = {b1, b2};
    size_t len[2] = {n1, n2};
    sl_tlist bytes;
    sl_err e;
    memset(&bytes, 0, sizeof bytes);
    CHECK_OK(oph_bytes(&bytes, 2, data, len, &e), &e);
    oph h;
    const char *plain[] = {NULL};
    const sl_tlist *o = run1(&h, "decoders.audio", plain, &bytes);
    if (o) {
        CHECK_EQ_INT(o->ndim, 2); /* a stereo file in the batch: (time, channels) for both */
        CHECK_EQ_INT((int)sl_tlist_shape(o, 0)[0], 16000);
        CHECK_EQ_INT((int)sl_tlist_shape(o, 1)[1], 2);
        const float *a = o->data[0], *b = o->data[1];
        int bad = 0;
        for (int t = 0; t < 16000; t++)
            bad += a[t] != (float)(int16_t)lrintf(tone[t] * 32767) / 32768.0f;
        for (int k = 0; k < 2 * 11025; k++) bad += b[k] != stereo[k];
        CHECK_EQ_INT(bad, 0);
        CHECK_NEAR(*(float *)h.out[1].data[1], 22050.0, 0);
    }
    oph_destroy(&h);
    const char *mix[] = {"downmix=True", NULL};
    o = run1(&h, "decoders.audio", mix, &bytes);
    if (o) {
        CHECK_EQ_INT(o->ndim, 1);
        int bad = 0;
        for (int t = 0; t < 11025; t++)
            bad += ((float *)o->data[1])[t] !=
                   (float)(((double)stereo[2 * t] + stereo[2 * t + 1]) / 2);
        CHECK_EQ_INT(bad, 0);
    }
    oph_destroy(&h);
    const char *rate[] = {"downmix=True", "sample_rate=16000.0", NULL};
    o = run1(&h, "decoders.audio", rate, &bytes);
    if (o) {
        CHECK_EQ_INT((int)sl_tlist_shape(o, 0)[0], 16000); /* already 16 kHz: as it was */
        CHECK_EQ_INT((int)sl_tlist_shape(o, 1)[0], 8000);  /* ceil(11025 * 16000 / 22050) */
        CHECK_NEAR(*(float *)h.out[1].data[1], 16000.0, 0);
    }
    oph_destroy(&h);
    /* the tone resampled to 8 kHz: the same tone at the new positions */
    const void *one[1] = {b1};
    sl_tlist single;
    memset(&single, 0, sizeof single);
    CHECK_OK(oph_bytes(&single, 1, one, len, &e), &e);
    const char *down[] = {"sample_rate=8000.0", NULL};
    o = run1(&h, "decoders.audio", down, &single);
    if (o) {
        double worst = 0;
        for (int i = 2200; i < 5800; i++) {
            double t = (i + 0.5) / 8000.0 - 0.5 / 16000.0;
            double d = fabs(((float *)o->data[0])[i] - 0.5 * sin(2 * M_PI * 440 * t));
            if (d > worst) worst = d;
        }
        CHECK_MSG(worst < 2e-3, "resampled tone off by %g", worst);
    }
    oph_destroy(&h);
    /* not audio: the record named */
    const void *junk[1] = {"this is no audio file at all"};
    size_t jl[1] = {28};
    sl_tlist bad;
    memset(&bad, 0, sizeof bad);
    CHECK_OK(oph_bytes(&bad, 1, junk, jl, &e), &e);
    CHECK_OK(oph_create(&h, "decoders.audio", plain, 1, 1, 1, &e), &e);
    sl_tlist *ins[1] = {&bad};
    const char *keys[1] = {"junk.wav"};
    CHECK_FAILS(oph_run(&h, 1, ins, 1, NULL, 0, keys, 0, &e), SL_EFORMAT, &e, "junk.wav");
    oph_destroy(&h);
    sl_tlist_free(&bad);
    sl_tlist_free(&single);
    sl_tlist_free(&bytes);
    free(b1), free(b2);

    /* readers.nemo_asr over a manifest of both */
    char man[300], arg[400];
    snprintf(man, sizeof man, "%s/m.json", dir);
    FILE *f = fopen(man, "w");
    CHECK(f != NULL);
    if (!f) return;
    fprintf(f,
            "{\"audio_filepath\": \"tone.wav\", \"duration\": 1.0, \"text\": \"t\\u00f6ne\"}\n\n"
            "{\"audio_filepath\": \"%s\", \"text\": \"two\", \"extra\": [1, {\"a\": null}]}\n",
            p2);
    fclose(f);
    snprintf(arg, sizeof arg, "manifest_filepaths=[\"%s\"]", man);
    const char *rargs[] = {arg, "read_idxs=True", NULL};
    o = run1(&h, "readers.nemo_asr", rargs, NULL);
    if (o) {
        CHECK_EQ_INT(o->ndim, 1); /* downmix by default */
        CHECK_EQ_INT((int)sl_tlist_shape(o, 0)[0], 16000);
        CHECK_EQ_INT((int)sl_tlist_shape(&h.out[2], 0)[0], 5); /* "töne": 5 UTF-8 bytes */
        CHECK(memcmp(h.out[2].data[0], "t\xc3\xb6ne", 5) == 0);
        CHECK(memcmp(h.out[2].data[1], "two", 3) == 0);
        CHECK_EQ_INT((int)*(int64_t *)h.out[3].data[1], 1);
        CHECK_NEAR(*(float *)h.out[1].data[1], 22050.0, 0);
    }
    oph_destroy(&h);
    f = fopen(man, "w");
    if (f) fprintf(f, "{\"audio_filepath\": \"tone.wav\"}\n{\"text\": \"no path\"}\n"), fclose(f);
    CHECK_FAILS(oph_create(&h, "readers.nemo_asr", rargs, 1, 2, 1, &e), SL_EFORMAT, &e, "m.json:2");
}

/* ---- spectral ---- */

static double hann(int t, int n) {
    return 0.5 * (1 - cos(2 * M_PI * (t + 0.5) / n));
}

/* |DFT|^2 of window w of x, as the spectrogram defines it */
static double dft_power(const float *x, int64_t n, int64_t w, int wl, int step, int nfft, int k,
                        int center) {
    double re = 0, im = 0;
    int64_t start = w * step - (center ? wl / 2 : 0);
    for (int t = 0; t < wl; t++) {
        int64_t j = start + t;
        while (j < 0 || j >= n) j = j < 0 ? -j : 2 * n - 2 - j;
        double v = x[j] * (double)(float)hann(t, wl);
        re += v * cos(2 * M_PI * k * t / nfft);
        im -= v * sin(2 * M_PI * k * t / nfft);
    }
    return re * re + im * im;
}

static void test_spectrogram(void) {
    static float a[3000], b[777];
    for (int t = 0; t < 3000; t++) a[t] = (float)sin(t * 0.05) + (float)((t * 37) % 11) / 20.0f;
    for (int t = 0; t < 777; t++) b[t] = (float)cos(t * 0.3);
    int64_t len[2] = {3000, 777};
    const float *src[2] = {a, b};
    sl_tlist in;
    list_f32(&in, 2, len, src);
    struct {
        const char *args[6];
        int nfft, wl, step, center, tf;
    } cases[] = {
        {{"nfft=64", "window_length=40", "window_step=16", NULL}, 64, 40, 16, 1, 0},
        {{"nfft=48", "window_length=48", "window_step=20", "center_windows=False", "layout=\"tf\"",
          NULL},
         48,
         48,
         20,
         0,
         1},
    };
    for (size_t c = 0; c < 2; c++) {
        oph h;
        const sl_tlist *o = run1(&h, "spectrogram", cases[c].args, &in);
        for (int i = 0; o && i < 2; i++) {
            int64_t n = len[i], nw = cases[c].center ? n / cases[c].step + 1
                                                     : (n - cases[c].wl) / cases[c].step + 1;
            int bins = cases[c].nfft / 2 + 1;
            CHECK_EQ_INT((int)sl_tlist_shape(o, i)[cases[c].tf ? 0 : 1], (int)nw);
            CHECK_EQ_INT((int)sl_tlist_shape(o, i)[cases[c].tf ? 1 : 0], bins);
            double worst = 0;
            for (int64_t w = 0; w < nw; w += 7)
                for (int k = 0; k < bins; k++) {
                    double want = dft_power(src[i], n, w, cases[c].wl, cases[c].step, cases[c].nfft,
                                            k, cases[c].center);
                    float got =
                        ((const float *)o->data[i])[cases[c].tf ? w * bins + k : k * nw + w];
                    double d = fabs(got - want) / (1 + want);
                    if (d > worst) worst = d;
                }
            CHECK_MSG(worst < 1e-5, "spectrogram case %zu sample %d: off by %g", c, i, worst);
        }
        oph_destroy(&h);
    }
    sl_tlist_free(&in);
}

static double slaney(double hz) {
    return hz < 1000 ? hz * 3 / 200 : 15 + log(hz / 1000) * 27 / log(6.4);
}
static double slaney_hz(double mel) {
    return mel < 15 ? mel * 200 / 3 : 1000 * exp((mel - 15) * log(6.4) / 27);
}

static void test_mel_db_mfcc(void) {
    /* a (33, 6) "ft" spectrogram: nfft 64 at 8 kHz */
    sl_tlist in;
    sl_err e;
    int64_t shape[2] = {33, 6};
    memset(&in, 0, sizeof in);
    CHECK_OK(sl_tlist_reset(&in, 1, SL_DTYPE_F32, 2, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(&in, shape, &e), &e);
    strcpy(in.layout, "ft");
    float *x = in.data[0];
    for (int k = 0; k < 33 * 6; k++) x[k] = (float)((k * 13) % 17) / 4.0f;
    oph h;
    const char *margs[] = {"nfilter=10", "sample_rate=8000.0", NULL};
    const sl_tlist *o = run1(&h, "mel_filter_bank", margs, &in);
    if (o) {
        CHECK_EQ_INT((int)sl_tlist_shape(o, 0)[0], 10);
        double worst = 0;
        for (int m = 0; m < 10; m++) {
            double lo = slaney_hz(slaney(4000) * m / 11),
                   c = slaney_hz(slaney(4000) * (m + 1) / 11),
                   hi = slaney_hz(slaney(4000) * (m + 2) / 11);
            for (int t = 0; t < 6; t++) {
                double want = 0;
                for (int k = 0; k < 33; k++) {
                    double f = k * 8000.0 / 64,
                           wgt = fmin((f - lo) / (c - lo), (hi - f) / (hi - c));
                    if (wgt > 0) want += wgt * 2 / (hi - lo) * x[k * 6 + t];
                }
                double d = fabs(((float *)o->data[0])[m * 6 + t] - want);
                if (d > worst) worst = d;
            }
        }
        CHECK_MSG(worst < 1e-5, "mel off by %g", worst);
    }
    oph_destroy(&h);
    const char *dargs[] = {"multiplier=20.0", "cutoff_db=-40.0", NULL};
    o = run1(&h, "to_decibels", dargs, &in);
    if (o) {
        double most = 0, worst = 0;
        for (int k = 0; k < 33 * 6; k++) most = fmax(most, x[k]);
        for (int k = 0; k < 33 * 6; k++) {
            double want = 20 * log10(fmax(1e-2, x[k] / most));
            worst = fmax(worst, fabs(((float *)o->data[0])[k] - want));
        }
        CHECK_MSG(worst < 1e-4, "to_decibels off by %g", worst);
    }
    oph_destroy(&h);
    const char *cargs[] = {"n_mfcc=5", "normalize=True", "lifter=3.0", NULL};
    o = run1(&h, "mfcc", cargs, &in);
    if (o) {
        double worst = 0;
        for (int k = 0; k < 5; k++)
            for (int t = 0; t < 6; t++) {
                double s = 0;
                for (int j = 0; j < 33; j++) s += x[j * 6 + t] * cos(M_PI / 33 * (j + 0.5) * k);
                s *= k ? sqrt(2.0 / 33) : sqrt(1.0 / 33);
                s *= 1 + 1.5 * sin(M_PI * (k + 1) / 3.0);
                worst = fmax(worst, fabs(((float *)o->data[0])[k * 6 + t] - s));
            }
        CHECK_MSG(worst < 1e-4, "mfcc off by %g", worst);
    }
    oph_destroy(&h);
    const char *sargs[] = {NULL};
    o = run1(&h, "shapes", sargs, &in);
    if (o) CHECK(((int64_t *)o->data[0])[0] == 33 && ((int64_t *)o->data[0])[1] == 6);
    oph_destroy(&h);
    sl_tlist_free(&in);
}

static void test_signal_ops(void) {
    static float y[5000];
    for (int t = 0; t < 5000; t++) y[t] = t >= 1000 && t < 3000 ? (float)sin(t * 0.1) : 0;
    int64_t len[1] = {5000};
    const float *src[1] = {y};
    sl_tlist in;
    list_f32(&in, 1, len, src);
    oph h;
    const char *pargs[] = {"border=\"zero\"", "preemph_coeff=0.5", NULL};
    const sl_tlist *o = run1(&h, "preemphasis_filter", pargs, &in);
    if (o) {
        int bad = 0;
        for (int t = 0; t < 5000; t++)
            bad += ((float *)o->data[0])[t] != (float)(y[t] - 0.5 * (t ? y[t - 1] : 0));
        CHECK_EQ_INT(bad, 0);
    }
    oph_destroy(&h);
    const char *nargs[] = {"window_length=100", "cutoff_db=-30.0", "reset_interval=700", NULL};
    o = run1(&h, "nonsilent_region", nargs, &in);
    if (o) {
        int b = *(int32_t *)o->data[0], n = *(int32_t *)h.out[1].data[0];
        /* the first loud window ends just after sample 1000; the last at 3099 (it still holds
         * the tone's end) or a little before */
        CHECK_MSG(b >= 900 && b <= 1000 && b + n >= 3000 && b + n <= 3100, "region %d + %d", b, n);
    }
    oph_destroy(&h);
    const char *rargs[] = {"scale=0.5", NULL};
    o = run1(&h, "audio_resample", rargs, &in);
    if (o) CHECK_EQ_INT((int)sl_tlist_shape(o, 0)[0], 2500);
    oph_destroy(&h);
    sl_tlist_free(&in);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/sluice-test-audio-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    test_decode();
    test_spectrogram();
    test_mel_db_mfcc();
    test_signal_ops();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    return check_done();
}
