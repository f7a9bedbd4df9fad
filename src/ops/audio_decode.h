/* SPDX-License-Identifier: Apache-2.0 */
/* Decoding one audio file as decoders.audio and readers.nemo_asr do (audio_decode.c): the plan
 * (what the file holds, the output's length and channels) made in setup, the decoding, downmix,
 * resampling and type conversion done on the pool. */
#ifndef SLUICE_OPS_AUDIO_DECODE_H
#define SLUICE_OPS_AUDIO_DECODE_H

#include "io/audio.h"
#include "ops/audio_dsp.h"

#include "sluice/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl__audio_decode_plan {
    sl__audio_info info;
    double out_rate;      /* the output's rate (the file's unless resampled) */
    bool downmix;         /* channels averaged into one */
    int64_t out_frames;   /* output samples per channel */
    int out_channels;     /* 1 with downmix, else the file's */
    int64_t first, count; /* the frames decoded into the output: all, unless windowed */
} sl__audio_decode_plan;

/* The audio arguments both ops take (DALI's names and defaults). */
sl_status sl__audio_decode_check(sl_dtype dtype, double quality, const char *opname, sl_err *err);
/* Reads the header of data[0, size) and plans its output: rate (> 0) resamples to that rate, 0
 * keeps the file's. */
sl_status sl__audio_decode_prepare(const void *data, size_t size, double rate, bool downmix,
                                   sl__audio_decode_plan *p, sl_err *err);
/* Narrows p to offset seconds from the start, duration seconds long (< 0: to the end), clipped
 * at the end; an offset past the end is an error. */
sl_status sl__audio_decode_window(sl__audio_decode_plan *p, double offset, double duration,
                                  sl_err *err);
/* Floats of scratch sl__audio_decode_run needs for p. */
int64_t sl__audio_decode_scratch(const sl__audio_decode_plan *p);
/* Decodes into out: p->out_frames x p->out_channels values of dtype (FLOAT, INT16 or INT32; the
 * integers full scale, saturated). */
sl_status sl__audio_decode_run(const sl__audio_decode_plan *p, const void *data, size_t size,
                               const sl__audio_dsp_resampler *r, sl_dtype dtype, void *out,
                               float *scratch, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
