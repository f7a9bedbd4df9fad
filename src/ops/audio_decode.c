/* SPDX-License-Identifier: Apache-2.0 */
/* decoders.audio: DALI's fn.decoders.audio. Encoded audio files (WAV, FLAC, OGG/Vorbis, through
 * libsndfile, io/audio.h) in, two outputs: the samples, (time,) with downmix=True, else (time,
 * channels) (mono files too), layout "t" / "tc"; and the sample rate, a float32 scalar. sample_rate
 * (per sample allowed; 0: the file's own) resamples with a windowed sinc whose width follows
 * quality (ops/audio_dsp.h); downmix averages the channels first. dtype FLOAT gives [-1, 1);
 * INT16 and INT32 full scale, saturated. Setup reads every file's header (the outputs' shapes);
 * the decoding runs on the pool. Also the helpers readers.nemo_asr decodes with (audio_decode.h).
 */
#include "ops/audio_decode.h"

#include "operator/argin.h"
#include "operator/dtype_conv.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the shared part ---- */

static sl_status out_length(sl__audio_decode_plan *p, sl_err *err);

sl_status sl__audio_decode_check(sl_dtype dtype, double quality, const char *opname, sl_err *err) {
    if (dtype != SL_DTYPE_F32 && dtype != SL_DTYPE_I16 && dtype != SL_DTYPE_I32)
        return sl_err_set(err, SL_EINVAL, "%s: dtype %s (FLOAT, INT16 or INT32)", opname,
                          sl_dtype_name(dtype));
    if (!(quality >= 0 && quality <= 100))
        return sl_err_set(err, SL_EINVAL, "%s: quality %g (0 to 100)", opname, quality);
    if (!sl__audio_available()) {
        sl__audio_info i;
        sl__audio_peek("", 0, &i, err);
        return sl_err_prefix(err, "%s: ", opname);
    }
    return SL_OK;
}

sl_status sl__audio_decode_prepare(const void *data, size_t size, double rate, bool downmix,
                                   sl__audio_decode_plan *p, sl_err *err) {
    memset(p, 0, sizeof *p);
    SL_TRY(sl__audio_peek(data, size, &p->info, err));
    if (!(rate >= 0 && rate <= 1e7))
        return sl_err_set(err, SL_EINVAL, "sample_rate %g (0 to 1e7; 0: the file's)", rate);
    p->out_rate = rate > 0 ? rate : p->info.rate;
    p->downmix = downmix && p->info.channels > 1;
    p->out_channels = downmix ? 1 : p->info.channels;
    p->first = 0, p->count = p->info.frames;
    return out_length(p, err);
}

/* p->out_frames from p->count */
static sl_status out_length(sl__audio_decode_plan *p, sl_err *err) {
    p->out_frames = p->out_rate != p->info.rate
                        ? sl__audio_dsp_resampled_length(p->count, p->info.rate, p->out_rate)
                        : p->count;
    if (p->out_frames > SL__AUDIO_MAX_FRAMES)
        return sl_err_set(err, SL_EINVAL, "%lld frames at %d Hz would be %lld at %g Hz (too many)",
                          (long long)p->count, p->info.rate, (long long)p->out_frames, p->out_rate);
    return SL_OK;
}

sl_status sl__audio_decode_window(sl__audio_decode_plan *p, double offset, double duration,
                                  sl_err *err) {
    double first = offset > 0 ? floor(offset * p->info.rate + 0.5) : 0;
    if (first > (double)p->info.frames)
        return sl_err_set(err, SL_EINVAL, "offset %g s is past the end (%g s)", offset,
                          (double)p->info.frames / p->info.rate);
    p->first = (int64_t)first;
    p->count = p->info.frames - p->first;
    if (duration >= 0) {
        double c = floor(duration * p->info.rate + 0.5);
        if (c < (double)p->count) p->count = (int64_t)c;
    }
    return out_length(p, err);
}

int64_t sl__audio_decode_scratch(const sl__audio_decode_plan *p) {
    int64_t n = p->info.frames * p->info.channels; /* decoded */
    if (p->downmix) n += p->info.frames;           /* mixed */
    n += p->out_frames * p->out_channels;          /* resampled / final float */
    return n > 0 ? n : 1;
}

sl_status sl__audio_decode_run(const sl__audio_decode_plan *p, const void *data, size_t size,
                               const sl__audio_dsp_resampler *r, sl_dtype dtype, void *out,
                               float *scratch, sl_err *err) {
    const sl__audio_info *in = &p->info;
    float *dec = scratch;
    SL_TRY(sl__audio_decode(data, size, in, dec, err));
    float *cur = dec + p->first * in->channels;
    int ch = in->channels;
    if (p->downmix) {
        float *mix = dec + in->frames * in->channels;
        for (int64_t t = 0; t < p->count; t++) {
            double s = 0;
            for (int c = 0; c < ch; c++) s += cur[t * ch + c];
            mix[t] = (float)(s / ch);
        }
        cur = mix, ch = 1;
    }
    float *fin = scratch + in->frames * in->channels + (p->downmix ? in->frames : 0);
    if (p->out_rate != in->rate) {
        sl__audio_dsp_resample(r, cur, p->count, ch, in->rate, fin, p->out_frames, p->out_rate);
        cur = fin;
    }
    int64_t n = p->out_frames * p->out_channels;
    if (dtype == SL_DTYPE_F32) {
        memcpy(out, cur, (size_t)n * sizeof(float));
    } else {
        double full = dtype == SL_DTYPE_I16 ? 32767.0 : 2147483647.0;
        for (int64_t k = 0; k < n; k++) sl__dtype_conv_store(out, dtype, k, cur[k] * full);
    }
    return SL_OK;
}

/* ---- decoders.audio ---- */

static const sl__arg_schema da_args[] = {
    {"sample_rate", SL_ARG_FLOAT, "0.0",
     "resample to this rate (Hz); 0: keep the file's (may be per sample)", SL_ARGF_PER_SAMPLE,
     NULL},
    {"downmix", SL_ARG_BOOL, "False", "average the channels into one", 0, NULL},
    {"dtype", SL_ARG_DTYPE, "types.FLOAT", "output type: FLOAT ([-1, 1)), INT16 or INT32", 0, NULL},
    {"quality", SL_ARG_FLOAT, "50.0", "resampling quality, 0 to 100 (the sinc's width)", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct da_state {
    double rate;
    int rate_node;
    bool downmix;
    sl_dtype dtype;
    sl__audio_dsp_resampler rs;
    sl__audio_decode_plan *plans; /* batch */
    int cap;
    sl__worker_scratch scratch;
} da_state;

static void da_destroy(void *state) {
    da_state *s = state;
    if (!s) return;
    sl__audio_dsp_resampler_free(&s->rs);
    sl__worker_scratch_free(&s->scratch);
    free(s->plans);
    free(s);
}

static int da_outputs(const sl__args *a) {
    (void)a;
    return 2;
}

static sl_status da_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    da_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->rate_node = sl__args_node(a, "sample_rate");
    s->rate = s->rate_node >= 0 ? 0 : sl__args_float(a, "sample_rate");
    s->downmix = sl__args_bool(a, "downmix");
    s->dtype = sl__args_dtype(a, "dtype");
    double q = sl__args_float(a, "quality");
    sl_status st = sl__audio_decode_check(s->dtype, q, "decoders.audio", err);
    if (!st && !(s->rate >= 0 && s->rate <= 1e7))
        st = sl_err_set(err, SL_EINVAL, "decoders.audio: sample_rate %g (0 to 1e7; 0: the file's)",
                        s->rate);
    if (!st) st = sl__audio_dsp_resampler_init(&s->rs, q, err);
    if (!st) st = sl__worker_scratch_init(&s->scratch, init->threads, err);
    if (!st) {
        s->cap = init->batch_size > 0 ? init->batch_size : 1;
        s->plans = sl__calloc((size_t)s->cap, sizeof *s->plans, err);
        if (!s->plans) st = SL_ENOMEM;
    }
    if (st) {
        da_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

static sl_status da_setup(void *state, sl__op_io *io, sl_err *err) {
    da_state *s = state;
    const sl_tlist *in = io->in[0];
    if (in->dtype != SL_DTYPE_U8 || in->ndim != 1)
        return sl_err_set(err, SL_EINVAL,
                          "decoders.audio: the input must be encoded files (uint8, 1-D), not %s "
                          "with %d dimensions",
                          sl_dtype_name(in->dtype), in->ndim);
    if (io->batch > s->cap) {
        sl__audio_decode_plan *p = realloc(s->plans, (size_t)io->batch * sizeof *p);
        if (!p) return sl_err_set(err, SL_ENOMEM, "decoders.audio: out of memory");
        s->plans = p, s->cap = io->batch;
    }
    int nd = s->downmix ? 1 : 2;
    int64_t *shapes = sl__malloc((size_t)(io->batch > 0 ? io->batch : 1) * 2 * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0; i < io->batch && st == SL_OK; i++) {
        double rate = s->rate;
        if (s->rate_node >= 0) {
            double v = 0;
            if (sl__argin_values(io, s->rate_node, i, &v, 1) != 1)
                st = sl__op_fail(err, SL_EINVAL, io, i, "decoders.audio",
                                 "sample_rate must be one value per sample");
            rate = v;
        }
        if (st == SL_OK && sl__audio_decode_prepare(in->data[i], (size_t)sl_tlist_shape(in, i)[0],
                                                    rate, s->downmix, &s->plans[i], err) != SL_OK) {
            char msg[SL_ERRMSG_MAX];
            memcpy(msg, err->msg, sizeof msg);
            st = sl__op_fail(err, err->status, io, i, "decoders.audio", "%s", msg);
        }
    }
    /* (time,) with downmix, else (time, channels) for every file, mono ones too (as DALI) */
    for (int i = 0; i < io->batch && st == SL_OK; i++) {
        shapes[(size_t)i * nd] = s->plans[i].out_frames;
        if (nd == 2) shapes[(size_t)i * nd + 1] = s->plans[i].out_channels;
    }
    if (st == SL_OK) st = sl_tlist_reset(io->out[0], io->batch, s->dtype, nd, sl_cpu(), err);
    if (st == SL_OK) st = sl_tlist_alloc(io->out[0], shapes, err);
    if (st == SL_OK) {
        memset(io->out[0]->layout, 0, sizeof io->out[0]->layout);
        memcpy(io->out[0]->layout, nd == 1 ? "t" : "tc", (size_t)nd);
        st = sl_tlist_reset(io->out[1], io->batch, SL_DTYPE_F32, 0, sl_cpu(), err);
    }
    if (st == SL_OK) st = sl_tlist_alloc(io->out[1], shapes, err);
    for (int i = 0; i < io->batch && st == SL_OK; i++)
        *(float *)io->out[1]->data[i] = (float)s->plans[i].out_rate;
    free(shapes);
    return st;
}

static sl_status da_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    da_state *s = state;
    const sl__audio_decode_plan *p = &s->plans[i];
    float *scratch = sl__worker_scratch_get(&s->scratch, worker,
                                            (size_t)sl__audio_decode_scratch(p) * sizeof(float));
    if (!scratch)
        return sl__op_fail(err, SL_ENOMEM, io, i, "decoders.audio", "out of memory (%lld frames)",
                           (long long)p->info.frames);
    if (sl__audio_decode_run(p, io->in[0]->data[i], (size_t)sl_tlist_shape(io->in[0], i)[0], &s->rs,
                             s->dtype, io->out[0]->data[i], scratch, err) != SL_OK) {
        char msg[SL_ERRMSG_MAX];
        memcpy(msg, err->msg, sizeof msg);
        return sl__op_fail(err, err->status, io, i, "decoders.audio", "%s", msg);
    }
    return SL_OK;
}

const sl__op_def sl__decode_audio_op = {
    .name = "decoders.audio",
    .aliases = "audio_decoder",
    .doc = "Decodes audio files (WAV, FLAC, OGG/Vorbis; libsndfile) to float or integer samples, "
           "downmixed and resampled if asked; also outputs the sample rate (DALI's "
           "fn.decoders.audio).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = da_args,
    .devices = SL_OPDEV_CPU,
    .flags = SL_OPF_DECODER,
    .num_outputs = da_outputs,
    .create = da_create,
    .setup = da_setup,
    .run_cpu = da_run_cpu,
    .destroy = da_destroy,
};
