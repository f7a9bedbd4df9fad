/* SPDX-License-Identifier: Apache-2.0 */
/* power_spectrum: DALI's fn.power_spectrum. Along `axis` (default the last), each lane of a real
 * signal, cut or zero-padded to `nfft` values (default: the lane's length), goes through a
 * discrete Fourier transform; out[k] = |X_k|^power for k = 0 .. nfft / 2 (power 2, the default:
 * the power spectrum; 1: the magnitude). The output is float32, the input's shape with the axis'
 * extent nfft / 2 + 1, and its layout. Any numeric input type; CPU. The transform is
 * ops/audio_dsp.h's (a radix-2 FFT for powers of two, else the direct sum), in double. */
#include "operator/dtype_conv.h"
#include "operator/op.h"
#include "ops/audio_dsp.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdlib.h>
#include <string.h>

#define OP "power_spectrum"

static const sl__arg_schema ps_args[] = {
    {"nfft", SL_ARG_INT, "None", "the transform's size (default: the length along axis)", 0, NULL},
    {"axis", SL_ARG_INT, "-1", "the axis transformed (negative: from the last)", 0, NULL},
    {"power", SL_ARG_INT, "2", "exponent of the magnitude: 2 (power spectrum) or 1", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct ps_state {
    int nfft; /* 0: each sample's length along the axis */
    int axis, power;
    sl__audio_dsp_fft fft; /* nfft given: made once */
} ps_state;

static void ps_destroy(void *state) {
    ps_state *s = state;
    if (s) sl__audio_dsp_fft_free(&s->fft);
    free(s);
}

static sl_status ps_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    ps_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    sl_status st = SL_OK;
    s->axis = (int)sl__args_int(a, "axis");
    s->power = (int)sl__args_int(a, "power");
    if (s->power != 1 && s->power != 2)
        st = sl_err_set(err, SL_EINVAL, OP ": power %d (2: the power spectrum, 1: the magnitude)",
                        s->power);
    if (st == SL_OK && sl__args_get(a, "nfft")->kind != SL_VAL_NONE) {
        int64_t n = sl__args_int(a, "nfft");
        if (n < 1 || n > (1 << 24))
            st = sl_err_set(err, SL_EINVAL, OP ": nfft %lld (1 to 2^24)", (long long)n);
        else
            s->nfft = (int)n, st = sl__audio_dsp_fft_init(&s->fft, s->nfft, err);
    }
    if (st != SL_OK) {
        ps_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

static sl_status ps_setup(void *state, sl__op_io *io, sl_err *err) {
    ps_state *s = state;
    const sl_tlist *in = io->in[0];
    int nd = in->ndim;
    if (nd < 1 || s->axis < -nd || s->axis >= nd)
        return sl_err_set(err, SL_EINVAL, OP ": axis %d for %d-D input (-%d to %d)", s->axis, nd,
                          nd, nd - 1);
    if (in->dtype == SL_DTYPE_BOOL || in->dtype == SL_DTYPE_INTERP)
        return sl_err_set(err, SL_EINVAL, OP ": input type %s (a numeric signal)",
                          sl_dtype_name(in->dtype));
    int ax = s->axis < 0 ? s->axis + nd : s->axis;
    int64_t *shapes =
        sl__malloc((size_t)(io->batch > 0 ? io->batch : 1) * (size_t)nd * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0; i < io->batch && st == SL_OK; i++) {
        const int64_t *sh = sl_tlist_shape(in, i);
        int64_t n = s->nfft ? s->nfft : sh[ax];
        if (n < 1 || n > (1 << 24))
            st = sl__op_fail(err, SL_EINVAL, io, i, OP,
                             "%lld values along axis %d (nfft from 1 to 2^24)", (long long)n, ax);
        memcpy(shapes + (size_t)i * (size_t)nd, sh, (size_t)nd * sizeof *sh);
        shapes[(size_t)i * (size_t)nd + (size_t)ax] = n / 2 + 1;
    }
    if (st == SL_OK) st = sl_tlist_reset(io->out[0], io->batch, SL_DTYPE_F32, nd, sl_cpu(), err);
    if (st == SL_OK) st = sl_tlist_alloc(io->out[0], shapes, err);
    if (st == SL_OK) memcpy(io->out[0]->layout, in->layout, sizeof in->layout);
    free(shapes);
    return st;
}

static sl_status ps_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)worker;
    const ps_state *s = state;
    const sl_tlist *in = io->in[0];
    int nd = in->ndim, ax = s->axis < 0 ? s->axis + nd : s->axis;
    const int64_t *sh = sl_tlist_shape(in, i);
    int64_t len = sh[ax], outer = 1, inner = 1;
    for (int k = 0; k < ax; k++) outer *= sh[k];
    for (int k = ax + 1; k < nd; k++) inner *= sh[k];
    if (outer == 0 || inner == 0) return SL_OK;
    int n = s->nfft ? s->nfft : (int)len, bins = n / 2 + 1;
    sl__audio_dsp_fft own, *f = (sl__audio_dsp_fft *)&s->fft;
    if (!s->nfft) {
        SL_TRY(sl__audio_dsp_fft_init(&own, n, err));
        f = &own;
    }
    size_t need = (size_t)(n + sl__audio_dsp_fft_scratch(f) + bins);
    double *frame = sl__malloc(need * sizeof *frame, err);
    if (!frame) {
        if (!s->nfft) sl__audio_dsp_fft_free(&own);
        return SL_ENOMEM;
    }
    double *scr = frame + n, *res = scr + sl__audio_dsp_fft_scratch(f);
    float *out = io->out[0]->data[i];
    int64_t take = len < n ? len : n;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            for (int64_t t = 0; t < take; t++)
                frame[t] = sl__dtype_conv_load(in->data[i], in->dtype, (o * len + t) * inner + j);
            for (int64_t t = take; t < n; t++) frame[t] = 0;
            sl__audio_dsp_fft_power(f, frame, s->power, scr, res);
            for (int k = 0; k < bins; k++) out[(o * bins + k) * inner + j] = (float)res[k];
        }
    free(frame);
    if (!s->nfft) sl__audio_dsp_fft_free(&own);
    return SL_OK;
}

const sl__op_def sl__power_spectrum_op = {
    .name = "power_spectrum",
    .doc = "The power spectrum (|X_k|^2, or |X_k| with power=1, k = 0 .. nfft/2) of real "
           "signals along an axis, each cut or zero-padded to nfft (DALI's fn.power_spectrum).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = ps_args,
    .devices = SL_OPDEV_CPU,
    .create = ps_create,
    .setup = ps_setup,
    .run_cpu = ps_run_cpu,
    .destroy = ps_destroy,
};
