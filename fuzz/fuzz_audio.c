/* SPDX-License-Identifier: Apache-2.0 */
/* Audio files (WAV, FLAC, OGG/Vorbis, ... through libsndfile): the header, then the decoding,
 * downmix and resampling decoders.audio and readers.nemo_asr run, into memory the header sized. */
#include "fuzz.h"
#include "io/audio.h"
#include "ops/audio_decode.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sl_err err;
    sl__audio_decode_plan p;
    /* one more byte of the input picks the resampling and the downmix */
    unsigned pick = size ? data[size - 1] : 0;
    double rate = (pick & 3) == 0 ? 0 : (pick & 3) == 1 ? 16000 : (pick & 3) == 2 ? 22050 : 7999;
    if (sl__audio_decode_prepare(data, size, rate, pick & 4, &p, &err) != SL_OK) return 0;
    if (pick & 8) sl__audio_decode_window(&p, (pick >> 4) * 0.01, 0.05, &err);
    /* a header may claim more than the bytes could hold: bound what is decoded */
    if (sl__audio_decode_scratch(&p) > ((int64_t)1 << 24) ||
        p.out_frames * p.out_channels > ((int64_t)1 << 22))
        return 0;
    sl__audio_dsp_resampler r;
    if (sl__audio_dsp_resampler_init(&r, 20, &err) != SL_OK) return 0;
    float *scratch = malloc((size_t)sl__audio_decode_scratch(&p) * sizeof(float));
    float *out = malloc((size_t)(p.out_frames * p.out_channels + 1) * sizeof(float));
    if (scratch && out) sl__audio_decode_run(&p, data, size, &r, SL_DTYPE_F32, out, scratch, &err);
    free(scratch);
    free(out);
    sl__audio_dsp_resampler_free(&r);
    return 0;
}
