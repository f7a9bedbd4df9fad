/* SPDX-License-Identifier: Apache-2.0 */
/* readers.sequence (DALI's fn.readers.sequence, fn.sequence_reader, ops.SequenceReader): frame
 * sequences from a folder of streams. file_root holds one sub-folder per stream (an extracted
 * video), one image file per frame; the folders and the frames in each are taken in sorted order
 * (the store is readers.file's class-folder scan, io/folder.h, a stream's frames its label's run).
 * A stream of n frames gives a sequence at every step-th frame s while s + (sequence_length - 1) *
 * stride < n: sequences never cross streams and are never padded. A record is one sequence; its key
 * is its first frame's path relative to file_root. Setup reads each sequence's first frame and
 * sizes the output from its header; run_cpu reads and decodes the frames, on the pool, into one
 * (F, H, W, C) uint8 sample (image_type as the image decoders' output_type). Every frame of a
 * sequence must have the first's extents: one that differs is an error naming it. */
#include "ops/decode_image_cpu.h"
#include "ops/reader.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint8_t *p;
    size_t cap, size;
} bytes;

typedef struct seq_reader {
    sl__reader r; /* first: the common part */
    sl__img_type type;
    int64_t length, stride;
    int64_t *first; /* per sequence: its first frame's index in the folder */
    int threads;
    sl__decode_image_worker **workers; /* per pool worker */
    bytes *frame;                      /* per pool worker: the frame being decoded */
    bytes *head;                       /* batch: each sequence's first frame, read by setup */
    sl__decode_image_info *info;       /* batch: each sequence's first frame's header */
} seq_reader;

static const sl__arg_schema seq_args[] = {
    {"file_root", SL_ARG_STR, NULL,
     "a folder of streams: one sub-folder per stream, one image file per frame (sorted names)",
     SL_ARGF_REQUIRED, NULL},
    {"sequence_length", SL_ARG_INT, NULL, "frames per sequence (>= 1)", SL_ARGF_REQUIRED, NULL},
    {"step", SL_ARG_INT, "1", "frames between the starts of consecutive sequences (>= 1)", 0, NULL},
    {"stride", SL_ARG_INT, "1", "frames between consecutive frames of a sequence (>= 1)", 0, NULL},
    {"image_type", SL_ARG_ENUM, "types.RGB",
     "the frames' colour space: RGB, BGR, GRAY, YCbCr or ANY_DATA (as decoders.image's "
     "output_type)",
     0, "RGB|BGR|GRAY|YCbCr|ANY_DATA"},
    SL__READER_ARGS("accepted; no effect (a batch's frames are read, in parallel, as it is "
                    "prepared)",
                    "accepted; no effect (frames are read into memory, never mapped)",
                    "accepted; no effect (outputs are sized per batch from the frames' headers)"),
    {NULL, 0, NULL, NULL, 0, NULL},
};

static int seq_outputs(const sl__args *a) {
    (void)a;
    return 1;
}

static void bytes_free(bytes *b, int n) {
    for (int i = 0; b && i < n; i++) free(b[i].p);
    free(b);
}

static void seq_free(void *state) {
    seq_reader *s = state;
    if (!s) return;
    for (int i = 0; s->workers && i < s->threads; i++) sl__decode_image_worker_free(s->workers[i]);
    free(s->workers);
    bytes_free(s->frame, s->threads);
    bytes_free(s->head, s->r.batch_size);
    free(s->info);
    free(s->first);
    sl__reader_free(&s->r);
}

/* Every sequence of every stream (the folder's label runs; the folder has at least one file), by
 * DALI's rule: s->first, s->r.n. */
static sl_status find_sequences(seq_reader *s, int64_t step, sl_err *err) {
    const sl__folder *f = s->r.folder;
    int64_t nframes = sl__folder_count(f), longest = 0;
    s->first = sl__malloc((size_t)(nframes > 0 ? nframes : 1) * sizeof *s->first, err);
    if (!s->first) return SL_ENOMEM;
    int64_t n = 0, span = (s->length - 1) * s->stride;
    for (int64_t a = 0, b; a < nframes; a = b) {
        for (b = a + 1; b < nframes && sl__folder_label(f, b) == sl__folder_label(f, a);) b++;
        if (b - a > longest) longest = b - a;
        for (int64_t k = 0; k + span < b - a; k += step) s->first[n++] = a + k;
    }
    if (n == 0)
        return sl_err_set(err, SL_EINVAL,
                          "readers.sequence: %s: no stream is long enough for one sequence of "
                          "%lld frames %lld apart (the longest has %lld frames)",
                          s->r.path0, (long long)s->length, (long long)s->stride,
                          (long long)longest);
    s->r.n = n;
    return SL_OK;
}

static sl_status seq_create(const sl__args *a, const sl__op_init *init, void **state, sl_err *err) {
    seq_reader *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    sl__reader *r = &s->r;
    r->fmt = SL__READER_SEQUENCE;
    r->opname = "readers.sequence";
    s->type = (sl__img_type)sl__decode_image_type(sl__args_str(a, "image_type"));
    s->length = sl__args_int(a, "sequence_length");
    s->stride = sl__args_int(a, "stride");
    int64_t step = sl__args_int(a, "step");
    const char *root = sl__args_str(a, "file_root");
    sl_status st = SL_OK;
    const char *names[] = {"sequence_length", "step", "stride"};
    int64_t vals[] = {s->length, step, s->stride};
    for (int k = 0; k < 3 && !st; k++)
        if (vals[k] < 1 || vals[k] > INT32_MAX)
            st = sl_err_set(err, SL_EINVAL, "readers.sequence: %s must be 1..2^31-1 (got %lld)",
                            names[k], (long long)vals[k]);
    if (!st && !(r->path0 = strdup(root))) st = sl_err_set(err, SL_ENOMEM, "out of memory");
    if (!st) {
        st = sl__folder_open(root, NULL, 0, NULL, 0, NULL, &r->folder, err);
        if (st) st = sl_err_prefix(err, "readers.sequence: ");
    }
    if (!st) st = find_sequences(s, step, err);
    if (!st) st = sl__reader_start(r, a, init, err);
    s->threads = init->threads < 1 ? 1 : init->threads;
    size_t b = (size_t)r->batch_size;
    if (!st && (!(s->workers = sl__calloc((size_t)s->threads, sizeof *s->workers, err)) ||
                !(s->frame = sl__calloc((size_t)s->threads, sizeof *s->frame, err)) ||
                !(s->head = sl__calloc(b ? b : 1, sizeof *s->head, err)) ||
                !(s->info = sl__calloc(b ? b : 1, sizeof *s->info, err))))
        st = SL_ENOMEM;
    for (int i = 0; !st && i < s->threads; i++)
        st = sl__decode_image_worker_create(true, &s->workers[i], err);
    r->folder_rec = s->first;
    if (st) {
        seq_free(s);
        return st;
    }
    *state = s;
    return SL_OK;
}

/* frame k of sample i's sequence: its index in the folder */
static int64_t frame_of(const seq_reader *s, int i, int64_t k) {
    return s->first[s->r.recs[i]] + k * s->stride;
}

/* Reads a frame into b and peeks its header into info; errors name the frame. */
static sl_status read_frame(const seq_reader *s, int i, int64_t k, bytes *b,
                            sl__decode_image_info *info, sl_err *err) {
    const sl__folder *f = s->r.folder;
    int64_t idx = frame_of(s, i, k);
    if (sl__folder_read(f, idx, &b->p, &b->cap, &b->size, err))
        return sl_err_prefix(err, "readers.sequence: key %s: frame %lld: ", s->r.keys[i],
                             (long long)k);
    char why[256];
    if (sl__decode_image_peek(b->p, b->size, s->type, true, 0, info, why, sizeof why))
        return sl__reader_fail(&s->r, i, SL_EFORMAT, err, "frame %lld (%s): %s", (long long)k,
                               sl__folder_name(f, idx), why);
    return SL_OK;
}

static sl_status seq_setup(void *state, sl__op_io *io, sl_err *err) {
    seq_reader *s = state;
    sl__reader *r = &s->r;
    SL_TRY(sl__reader_next(r, io, err));
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, SL_DTYPE_U8, 4, sl_cpu(), err));
    int64_t *shapes = sl__malloc((size_t)(io->batch > 0 ? io->batch : 1) * 4 * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0; i < io->batch && !st; i++) {
        st = read_frame(s, i, 0, &s->head[i], &s->info[i], err);
        int64_t *d = shapes + (size_t)i * 4;
        d[0] = s->length, d[1] = s->info[i].out_h, d[2] = s->info[i].out_w, d[3] = s->info[i].c;
    }
    if (!st) st = sl_tlist_alloc(out, shapes, err);
    free(shapes);
    if (!st) memcpy(out->layout, "FHWC", 5);
    return st;
}

/* sample i: every frame of its sequence decoded into its place */
static sl_status seq_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    seq_reader *s = state;
    const sl_tlist *out = io->out[0];
    const sl__decode_image_info *head = &s->info[i];
    size_t frame_bytes = sl_tlist_sample_nbytes(out, i) / (size_t)s->length;
    for (int64_t k = 0; k < s->length; k++) {
        sl__decode_image_info info = *head;
        const bytes *b = &s->head[i];
        if (k > 0) {
            SL_TRY(read_frame(s, i, k, &s->frame[worker], &info, err));
            b = &s->frame[worker];
        }
        const char *name = sl__folder_name(s->r.folder, frame_of(s, i, k));
        if (info.out_h != head->out_h || info.out_w != head->out_w || info.c != head->c)
            return sl__reader_fail(&s->r, i, SL_EFORMAT, err,
                                   "frame %lld (%s) is %lldx%lldx%d, the sequence's first frame "
                                   "%lldx%lldx%d: a sequence's frames must share their extents",
                                   (long long)k, name, (long long)info.out_h, (long long)info.out_w,
                                   info.c, (long long)head->out_h, (long long)head->out_w, head->c);
        char why[512]; /* libjpeg's messages are shorter */
        uint8_t *to = (uint8_t *)out->data[i] + (size_t)k * frame_bytes;
        if (sl__decode_image_run(s->workers[worker], b->p, b->size, &info, s->type, NULL, false, to,
                                 why, sizeof why))
            return sl__reader_fail(&s->r, i, SL_EFORMAT, err, "frame %lld (%s): %s", (long long)k,
                                   name, why);
    }
    return SL_OK;
}

const sl__op_def sl__reader_sequence_op = {
    SL__READER_OP_COMMON,
    .name = "readers.sequence",
    .aliases = "sequence_reader",
    .doc = "Reads frame sequences from a folder of streams (one sub-folder of image files per "
           "stream): decoded (F, H, W, C) uint8 sequences of sequence_length frames, stride apart, "
           "one starting every step frames; the key is the first frame's relative path.",
    .args = seq_args,
    .num_outputs = seq_outputs,
    .create = seq_create,
    .setup = seq_setup,
    .run_cpu = seq_run_cpu,
    .destroy = seq_free,
};
