/* SPDX-License-Identifier: Apache-2.0 */
/* Encoded audio files in memory (WAV 8/16/24/32-bit and float, FLAC, OGG/Vorbis and the other
 * formats libsndfile reads), decoded through libsndfile: the header (frames, channels, sample
 * rate) and the samples as interleaved float in [-1, 1). Without libsndfile at build time every
 * call is SL_ENOTSUP saying so. Errors say what is wrong; the caller names the file. */
#ifndef SLUICE_IO_AUDIO_H
#define SLUICE_IO_AUDIO_H

#include "sluice/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* the most frames and channels a file may claim (2^34 frames: 99 hours at 48 kHz) */
#define SL__AUDIO_MAX_FRAMES   ((int64_t)1 << 34)
#define SL__AUDIO_MAX_CHANNELS 256

typedef struct sl__audio_info {
    int64_t frames; /* samples per channel */
    int channels;
    int rate;        /* samples per second */
    char format[24]; /* "WAV", "FLAC", "OGG", ... */
} sl__audio_info;

/* Whether this build decodes audio (libsndfile was found). */
bool sl__audio_available(void);
/* Reads the header of the file in data[0, size). */
sl_status sl__audio_peek(const void *data, size_t size, sl__audio_info *info, sl_err *err);
/* Decodes the whole file into out: info->frames x info->channels floats, interleaved (info from
 * sl__audio_peek of the same bytes). A file that ends before info->frames is SL_EFORMAT. */
sl_status sl__audio_decode(const void *data, size_t size, const sl__audio_info *info, float *out,
                           sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
