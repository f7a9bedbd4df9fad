/* SPDX-License-Identifier: Apache-2.0 */
/* Audio files in memory through libsndfile's virtual I/O (io/audio.h): the bytes are read where
 * they lie, never written to a temporary file. libsndfile scales integer PCM to [-1, 1) (divided
 * by 2^(bits-1)) when read as float, as Python's soundfile does. */
#include "io/audio.h"

#include <stdio.h>
#include <string.h>

#ifdef SLUICE_HAVE_SNDFILE
#include <sndfile.h>

bool sl__audio_available(void) {
    return true;
}

typedef struct vmem {
    const unsigned char *data;
    sf_count_t size, pos;
} vmem;

static sf_count_t v_len(void *u) {
    return ((vmem *)u)->size;
}

static sf_count_t v_seek(sf_count_t off, int whence, void *u) {
    vmem *m = u;
    sf_count_t to = whence == SEEK_SET ? off : whence == SEEK_CUR ? m->pos + off : m->size + off;
    if (to < 0) to = 0;
    if (to > m->size) to = m->size;
    m->pos = to;
    return to;
}

static sf_count_t v_read(void *ptr, sf_count_t n, void *u) {
    vmem *m = u;
    if (n < 0) n = 0;
    if (n > m->size - m->pos) n = m->size - m->pos;
    memcpy(ptr, m->data + m->pos, (size_t)n);
    m->pos += n;
    return n;
}

static sf_count_t v_write(const void *ptr, sf_count_t n, void *u) {
    (void)ptr, (void)n, (void)u;
    return 0;
}

static sf_count_t v_tell(void *u) {
    return ((vmem *)u)->pos;
}

static const char *format_name(int f) {
    switch (f & SF_FORMAT_TYPEMASK) {
    case SF_FORMAT_WAV:
        return "WAV";
    case SF_FORMAT_WAVEX:
        return "WAVEX";
    case SF_FORMAT_FLAC:
        return "FLAC";
    case SF_FORMAT_OGG:
        return "OGG";
    case SF_FORMAT_AIFF:
        return "AIFF";
    case SF_FORMAT_AU:
        return "AU";
    case SF_FORMAT_RF64:
        return "RF64";
    case SF_FORMAT_W64:
        return "W64";
    case SF_FORMAT_CAF:
        return "CAF";
    default:
        return "audio";
    }
}

static SNDFILE *open_mem(vmem *m, const void *data, size_t size, SF_INFO *si, sl_err *err) {
    static SF_VIRTUAL_IO io = {v_len, v_seek, v_read, v_write, v_tell};
    m->data = data;
    m->size = (sf_count_t)size;
    m->pos = 0;
    memset(si, 0, sizeof *si);
    if (size == 0) {
        sl_err_set(err, SL_EFORMAT, "the file is empty");
        return NULL;
    }
    SNDFILE *f = sf_open_virtual(&io, SFM_READ, si, m);
    if (!f)
        sl_err_set(err, SL_EFORMAT,
                   "not an audio file libsndfile reads (WAV, FLAC, OGG/Vorbis, ...): %s",
                   sf_strerror(NULL));
    return f;
}

sl_status sl__audio_peek(const void *data, size_t size, sl__audio_info *info, sl_err *err) {
    vmem m;
    SF_INFO si;
    SNDFILE *f = open_mem(&m, data, size, &si, err);
    if (!f) return err->status;
    sl_status st = SL_OK;
    if (si.channels < 1 || si.channels > SL__AUDIO_MAX_CHANNELS)
        st = sl_err_set(err, SL_EFORMAT, "%d channels (1 to %d)", si.channels,
                        SL__AUDIO_MAX_CHANNELS);
    else if (si.samplerate < 1)
        st = sl_err_set(err, SL_EFORMAT, "sample rate %d", si.samplerate);
    else if (si.frames < 0 || si.frames > SL__AUDIO_MAX_FRAMES)
        st = sl_err_set(err, SL_EFORMAT, "%lld frames (at most %lld)", (long long)si.frames,
                        (long long)SL__AUDIO_MAX_FRAMES);
    sf_close(f);
    if (st) return st;
    info->frames = si.frames;
    info->channels = si.channels;
    info->rate = si.samplerate;
    snprintf(info->format, sizeof info->format, "%s", format_name(si.format));
    return SL_OK;
}

sl_status sl__audio_decode(const void *data, size_t size, const sl__audio_info *info, float *out,
                           sl_err *err) {
    vmem m;
    SF_INFO si;
    SNDFILE *f = open_mem(&m, data, size, &si, err);
    if (!f) return err->status;
    sl_status st = SL_OK;
    if (si.channels != info->channels || si.frames != info->frames || si.samplerate != info->rate)
        st = sl_err_set(err, SL_EFORMAT, "the file changed between its header and its decoding");
    int64_t done = 0;
    while (st == SL_OK && done < info->frames) {
        int64_t want = info->frames - done;
        if (want > 65536) want = 65536;
        sf_count_t got = sf_readf_float(f, out + done * info->channels, want);
        if (got <= 0) {
            int e = sf_error(f);
            st = sl_err_set(
                err, SL_EFORMAT, "truncated or corrupt: %lld of %lld frames decoded%s%s",
                (long long)done, (long long)info->frames, e ? ": " : "", e ? sf_strerror(f) : "");
        }
        done += got > 0 ? got : 0;
    }
    sf_close(f);
    return st;
}

#else

bool sl__audio_available(void) {
    return false;
}

static sl_status missing(sl_err *err) {
    return sl_err_set(err, SL_ENOTSUP,
                      "this build has no audio decoding (libsndfile was not found when it was "
                      "configured; apt-get install libsndfile1-dev and rebuild)");
}

sl_status sl__audio_peek(const void *data, size_t size, sl__audio_info *info, sl_err *err) {
    (void)data, (void)size, (void)info;
    return missing(err);
}

sl_status sl__audio_decode(const void *data, size_t size, const sl__audio_info *info, float *out,
                           sl_err *err) {
    (void)data, (void)size, (void)info, (void)out;
    return missing(err);
}

#endif
