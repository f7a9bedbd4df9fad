/* SPDX-License-Identifier: Apache-2.0 */
/* readers.nemo_asr: DALI's fn.readers.nemo_asr. Reads the entries of NeMo ASR manifests
 * (io/nemo.h: JSON lines with audio_filepath, duration, offset, text), filtered by min_duration
 * and max_duration, through the loader every reader shares (reader.h: shards, shuffling, global
 * order, checkpoints), and decodes their audio as decoders.audio does (ops/audio_decode.h:
 * sample_rate, downmix, dtype, quality). An entry with an "offset" is cut to [offset, offset +
 * duration). Outputs, in order: the audio, (time,) with downmix (the default) or (time,
 * channels), mono files too; with read_sample_rate (default) the rate, float32 (1,); with read_text
 * (default) the transcript's UTF-8 bytes, uint8 (length,); with read_idxs the entry's index among
 * the manifests' kept entries, int64 (1,). The key of a sample is its audio_filepath as written.
 * Setup reads the batch's files and their headers (the outputs' shapes); the pool decodes. */
#include "ops/audio_decode.h"
#include "ops/reader.h"

#include "core/alloc.h"
#include "core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_FILE ((int64_t)1 << 32)

typedef struct nemo_reader {
    sl__reader r; /* first: the common part */
    double rate, quality;
    bool downmix, read_rate, read_text, read_idxs;
    sl_dtype dtype;
    sl__audio_dsp_resampler rs;
    uint8_t **bytes; /* batch: each file's bytes */
    size_t *size, *cap;
    sl__audio_decode_plan *plans; /* batch */
    int64_t *shapes;              /* batch x 2 */
    sl__worker_scratch scratch;
} nemo_reader;

static const sl__arg_schema nemo_args[] = {
    {"manifest_filepaths", SL_ARG_STRS, NULL, "the NeMo manifests (JSON lines) to read",
     SL_ARGF_REQUIRED, NULL},
    {"sample_rate", SL_ARG_FLOAT, "-1.0", "resample to this rate (Hz); -1: keep each file's", 0,
     NULL},
    {"quality", SL_ARG_FLOAT, "50.0", "resampling quality, 0 to 100", 0, NULL},
    {"downmix", SL_ARG_BOOL, "True", "average the channels into one", 0, NULL},
    {"dtype", SL_ARG_DTYPE, "types.FLOAT", "audio type: FLOAT, INT16 or INT32", 0, NULL},
    {"min_duration", SL_ARG_FLOAT, "0.0", "leave out entries shorter than this (seconds)", 0, NULL},
    {"max_duration", SL_ARG_FLOAT, "0.0", "leave out entries longer than this (seconds; 0: none)",
     0, NULL},
    {"read_sample_rate", SL_ARG_BOOL, "True", "output the sample rate", 0, NULL},
    {"read_text", SL_ARG_BOOL, "True", "output the transcript (UTF-8 bytes)", 0, NULL},
    {"read_idxs", SL_ARG_BOOL, "False", "output the entry's index (int64)", 0, NULL},
    {"shuffle_after_epoch_seed", SL_ARG_INT, "None",
     "accepted only as None: use seed for shuffle_after_epoch's order", 0, NULL},
    SL__READER_ARGS("accepted; no effect (a batch's files are read as it is prepared)",
                    "accepted; no effect (files are read, never mapped)",
                    "accepted; no effect (outputs are sized per batch from the files' headers)"),
    {NULL, 0, NULL, NULL, 0, NULL},
};

static int nemo_outputs(const sl__args *a) {
    return 1 + sl__args_bool(a, "read_sample_rate") + sl__args_bool(a, "read_text") +
           sl__args_bool(a, "read_idxs");
}

static void nemo_free(void *state) {
    nemo_reader *f = state;
    if (!f) return;
    if (f->bytes)
        for (int i = 0; i < f->r.batch_size; i++) free(f->bytes[i]);
    free(f->bytes), free(f->size), free(f->cap), free(f->plans), free(f->shapes);
    sl__audio_dsp_resampler_free(&f->rs);
    sl__worker_scratch_free(&f->scratch);
    sl__reader_free(&f->r);
}

static sl_status nemo_create(const sl__args *a, const sl__op_init *init, void **state,
                             sl_err *err) {
    nemo_reader *f = sl__calloc(1, sizeof *f, err);
    if (!f) return SL_ENOMEM;
    sl__reader *r = &f->r;
    r->fmt = SL__READER_NEMO;
    r->opname = "readers.nemo_asr";
    f->rate = sl__args_float(a, "sample_rate");
    f->quality = sl__args_float(a, "quality");
    f->downmix = sl__args_bool(a, "downmix");
    f->dtype = sl__args_dtype(a, "dtype");
    f->read_rate = sl__args_bool(a, "read_sample_rate");
    f->read_text = sl__args_bool(a, "read_text");
    f->read_idxs = sl__args_bool(a, "read_idxs");
    const char *const *man;
    int nman = sl__args_strs(a, "manifest_filepaths", &man);
    sl_status st = sl__audio_decode_check(f->dtype, f->quality, r->opname, err);
    if (!st && !(f->rate == -1 || (f->rate > 0 && f->rate <= 1e7)))
        st = sl_err_set(err, SL_EINVAL, "%s: sample_rate %g (> 0, or -1: each file's)", r->opname,
                        f->rate);
    if (!st && sl__args_get(a, "shuffle_after_epoch_seed")->kind != SL_VAL_NONE)
        st = sl_err_set(err, SL_ENOTSUP,
                        "%s: shuffle_after_epoch_seed is not supported; seed sets the order",
                        r->opname);
    if (!st && nman < 1)
        st = sl_err_set(err, SL_EINVAL, "%s: manifest_filepaths is empty", r->opname);
    if (!st) {
        r->path0 = strdup(man[0]);
        if (!r->path0) st = sl_err_set(err, SL_ENOMEM, "out of memory");
    }
    if (!st) {
        st = sl__nemo_open(nman, man, sl__args_float(a, "min_duration"),
                           sl__args_float(a, "max_duration"), &r->nemo, err);
        if (st) sl_err_prefix(err, "%s: ", r->opname);
    }
    if (!st) {
        r->n = sl__nemo_count(r->nemo);
        if (r->n == 0)
            st = sl_err_set(err, SL_EINVAL, "%s: %s: no entries%s", r->opname, r->path0,
                            sl__nemo_skipped(r->nemo) ? " pass min_duration / max_duration" : "");
    }
    if (!st) st = sl__reader_start(r, a, init, err);
    if (!st) st = sl__audio_dsp_resampler_init(&f->rs, f->quality, err);
    if (!st) st = sl__worker_scratch_init(&f->scratch, init->threads, err);
    if (!st) {
        size_t b = (size_t)r->batch_size;
        f->bytes = sl__calloc(b, sizeof *f->bytes, err);
        f->size = sl__calloc(b, sizeof *f->size, err);
        f->cap = sl__calloc(b, sizeof *f->cap, err);
        f->plans = sl__calloc(b, sizeof *f->plans, err);
        f->shapes = sl__calloc(b * 2, sizeof *f->shapes, err);
        if (!f->bytes || !f->size || !f->cap || !f->plans || !f->shapes) st = SL_ENOMEM;
    }
    if (st) {
        nemo_free(f);
        return st;
    }
    *state = f;
    return SL_OK;
}

/* entry i of the batch's file into f->bytes[i] */
static sl_status read_file(nemo_reader *f, int i, const sl__nemo_entry *e, sl_err *err) {
    int fd = open(e->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return sl_err_set(err, SL_EIO, "%s: %s", e->path, strerror(errno));
    struct stat sb;
    sl_status st = SL_OK;
    if (fstat(fd, &sb) != 0)
        st = sl_err_set(err, SL_EIO, "%s: %s", e->path, strerror(errno));
    else if (!S_ISREG(sb.st_mode))
        st = sl_err_set(err, SL_EIO, "%s: not a regular file", e->path);
    else if ((int64_t)sb.st_size > MAX_FILE)
        st = sl_err_set(err, SL_EIO, "%s: %lld bytes (at most 4 GiB)", e->path,
                        (long long)sb.st_size);
    size_t n = st ? 0 : (size_t)sb.st_size;
    if (!st && (n > f->cap[i] || !f->bytes[i])) {
        uint8_t *b = realloc(f->bytes[i], n ? n : 1);
        if (!b)
            st = sl_err_set(err, SL_ENOMEM, "%s: out of memory (%zu bytes)", e->path, n);
        else
            f->bytes[i] = b, f->cap[i] = n ? n : 1;
    }
    size_t got = 0;
    while (!st && got < n) {
        ssize_t k = read(fd, f->bytes[i] + got, n - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            st = sl_err_set(err, SL_EIO, "%s: read %zu of %zu bytes%s%s", e->path, got, n,
                            k < 0 ? ": " : "", k < 0 ? strerror(errno) : "");
            break;
        }
        got += (size_t)k;
    }
    close(fd);
    f->size[i] = n;
    return st;
}

/* "readers.nemo_asr: manifest.json:3 (a/b.wav): <what>" */
static sl_status entry_fail(const nemo_reader *f, int i, sl_status st, sl_err *err) {
    char msg[SL_ERRMSG_MAX];
    memcpy(msg, err->msg, sizeof msg);
    const sl__nemo_entry *e = sl__nemo_get(f->r.nemo, f->r.recs[i]);
    return sl_err_set(err, st, "readers.nemo_asr: %s:%lld (%s): %s",
                      sl__nemo_manifest(f->r.nemo, f->r.recs[i]), (long long)e->line, e->name, msg);
}

static sl_status nemo_setup(void *state, sl__op_io *io, sl_err *err) {
    nemo_reader *f = state;
    sl__reader *r = &f->r;
    SL_TRY(sl__reader_next(r, io, err));
    for (int i = 0; i < io->batch; i++) {
        const sl__nemo_entry *e = sl__nemo_get(r->nemo, r->recs[i]);
        sl_status st = read_file(f, i, e, err);
        if (!st)
            st = sl__audio_decode_prepare(f->bytes[i], f->size[i], f->rate > 0 ? f->rate : 0,
                                          f->downmix, &f->plans[i], err);
        if (!st && e->offset >= 0)
            st = sl__audio_decode_window(&f->plans[i], e->offset, e->duration, err);
        if (st) return entry_fail(f, i, st, err);
    }
    int nd = f->downmix ? 1 : 2, k = 0; /* (time, channels) without downmix, mono too */
    for (int i = 0; i < io->batch; i++) {
        f->shapes[(size_t)i * nd] = f->plans[i].out_frames;
        if (nd == 2) f->shapes[(size_t)i * nd + 1] = f->plans[i].out_channels;
    }
    sl_tlist *audio = io->out[k++];
    SL_TRY(sl_tlist_reset(audio, io->batch, f->dtype, nd, sl_cpu(), err));
    SL_TRY(sl_tlist_alloc(audio, f->shapes, err));
    memset(audio->layout, 0, sizeof audio->layout);
    memcpy(audio->layout, nd == 1 ? "t" : "tc", (size_t)nd);
    for (int i = 0; i < io->batch; i++) f->shapes[i] = 1;
    if (f->read_rate) {
        sl_tlist *o = io->out[k++];
        SL_TRY(sl_tlist_reset(o, io->batch, SL_DTYPE_F32, 1, sl_cpu(), err));
        SL_TRY(sl_tlist_alloc(o, f->shapes, err));
        for (int i = 0; i < io->batch; i++) *(float *)o->data[i] = (float)f->plans[i].out_rate;
    }
    if (f->read_text) {
        sl_tlist *o = io->out[k++];
        for (int i = 0; i < io->batch; i++)
            f->shapes[i] = (int64_t)sl__nemo_get(r->nemo, r->recs[i])->text_len;
        SL_TRY(sl_tlist_reset(o, io->batch, SL_DTYPE_U8, 1, sl_cpu(), err));
        SL_TRY(sl_tlist_alloc(o, f->shapes, err));
        for (int i = 0; i < io->batch; i++) {
            const sl__nemo_entry *e = sl__nemo_get(r->nemo, r->recs[i]);
            if (e->text_len) memcpy(o->data[i], e->text, e->text_len);
        }
        for (int i = 0; i < io->batch; i++) f->shapes[i] = 1;
    }
    if (f->read_idxs) {
        sl_tlist *o = io->out[k++];
        SL_TRY(sl_tlist_reset(o, io->batch, SL_DTYPE_I64, 1, sl_cpu(), err));
        SL_TRY(sl_tlist_alloc(o, f->shapes, err));
        for (int i = 0; i < io->batch; i++) *(int64_t *)o->data[i] = r->recs[i];
    }
    return SL_OK;
}

static sl_status nemo_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    nemo_reader *f = state;
    const sl__audio_decode_plan *p = &f->plans[i];
    float *scratch = sl__worker_scratch_get(&f->scratch, worker,
                                            (size_t)sl__audio_decode_scratch(p) * sizeof(float));
    sl_status st = scratch ? SL_OK : sl_err_set(err, SL_ENOMEM, "out of memory");
    if (!st)
        st = sl__audio_decode_run(p, f->bytes[i], f->size[i], &f->rs, f->dtype, io->out[0]->data[i],
                                  scratch, err);
    return st ? entry_fail(f, i, st, err) : SL_OK;
}

const sl__op_def sl__reader_nemo_asr_op = {
    SL__READER_OP_COMMON,
    .name = "readers.nemo_asr",
    .aliases = "nemo_asr_reader",
    .doc = "Reads NeMo ASR manifests (JSON lines: audio_filepath, duration, offset, text) and "
           "decodes the audio (WAV, FLAC, OGG; libsndfile): audio, sample rate, text bytes, "
           "entry index (DALI's fn.readers.nemo_asr).",
    .args = nemo_args,
    .num_outputs = nemo_outputs,
    .create = nemo_create,
    .setup = nemo_setup,
    .run_cpu = nemo_run_cpu,
    .destroy = nemo_free,
};
