/* SPDX-License-Identifier: Apache-2.0 */
/* Sequences frame by frame: a batch of sequences unfolded into a batch of frames for an op with
 * SL_OPF_SEQUENCE, and its outputs folded back (see sequence.h). */
#include "operator/sequence.h"

#include "core/alloc.h"
#include "core/log.h"
#ifdef SLUICE_HAVE_CUDA
#include "core/cuda.h"
#endif

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_seq(const sl_tlist *l) {
    return l->ndim >= 1 && l->layout[0] == 'F';
}

/* the schema entry whose value is argument input `slot`, or -1 */
static int arg_of_slot(const sl__op_def *def, const sl__args *a, int slot) {
    for (int k = 0; k < a->count && def->args[k].name; k++)
        if (a->vals[k].kind == SL_VAL_NODE && a->vals[k].node == slot) return k;
    return -1;
}

sl_status sl__seq_check(const sl__op_def *def, const sl__args *a, const char *opname,
                        const sl__op_io *io, bool *expand, sl_err *err) {
    *expand = false;
    bool seq_op = (def->flags & SL_OPF_SEQUENCE) != 0;
    int per_frame = -1; /* an argument input given per frame */
    for (int j = 0; j < io->num_arg_inputs; j++) {
        if (!is_seq(io->arg_in[j])) continue;
        int k = arg_of_slot(def, a, j);
        const char *name = k >= 0 ? def->args[k].name : "?";
        if (!seq_op)
            return sl_err_set(err, SL_EINVAL,
                              "%s: argument %s is given per frame (layout \"%s\", fn.per_frame), "
                              "but %s takes no per-frame arguments (`sluice ops` marks those "
                              "that do)",
                              opname, name, io->arg_in[j]->layout, def->name);
        if (k < 0 || !(def->args[k].flags & SL_ARGF_PER_FRAME))
            return sl_err_set(err, SL_EINVAL,
                              "%s: argument %s is given per frame (layout \"%s\", fn.per_frame), "
                              "but it takes one value per sample, not per frame",
                              opname, name, io->arg_in[j]->layout);
        *expand = true;
        per_frame = j;
    }
    bool seq_input = false;
    for (int j = 0; seq_op && j < io->num_inputs; j++)
        if (is_seq(io->in[j])) seq_input = *expand = true;
    if (per_frame >= 0 && io->num_inputs > 0 && !seq_input &&
        !(def->flags & SL_OPF_ARG_FRAMES)) { /* as DALI: the input has frames */
        int k = arg_of_slot(def, a, per_frame);
        return sl_err_set(err, SL_EINVAL,
                          "%s: argument %s is given per frame, but input 0 has no frames: Tensor "
                          "input for argument %s is specified per frame (got %s layout). In that "
                          "case, samples in the input 0 must contain frames too. Got layout `%s` "
                          "that does not contain frames.",
                          opname, k >= 0 ? def->args[k].name : "?",
                          k >= 0 ? def->args[k].name : "?", io->arg_in[per_frame]->layout,
                          io->in[0]->layout);
    }
    if (*expand && (io->num_inputs > SL__SEQ_MAX_LISTS || io->num_arg_inputs > SL__SEQ_MAX_LISTS ||
                    io->num_outputs > SL__SEQ_MAX_LISTS))
        return sl_err_set(err, SL_EINVAL, "%s: too many inputs or outputs to take sequences",
                          opname);
    return SL_OK;
}

/* Sample i's frame count into s->frames[i], checking every sequence input and per-frame
 * argument against it. */
static sl_status count_frames(sl__seq *s, const sl__op_def *def, const sl__args *a,
                              const char *opname, const sl__op_io *io, int i, sl_err *err) {
    int64_t f = -1;
    int ref = -1; /* the input that set it */
    for (int j = 0; j < io->num_inputs; j++) {
        if (!is_seq(io->in[j])) continue;
        int64_t n = sl_tlist_shape(io->in[j], i)[0];
        if (f < 0) {
            f = n, ref = j;
        } else if (n != f) {
            return sl__op_fail(err, SL_EINVAL, io, i, opname,
                               "input %d has %lld frames, input %d %lld (sequence inputs have "
                               "one frame count)",
                               j, (long long)n, ref, (long long)f);
        }
    }
    int most = -1; /* no sequence input: the per-frame argument with most frames sets it */
    for (int j = 0; ref < 0 && j < io->num_arg_inputs; j++)
        if (is_seq(io->arg_in[j]) && sl_tlist_shape(io->arg_in[j], i)[0] > f)
            f = sl_tlist_shape(io->arg_in[j], i)[0], most = j;
    for (int j = 0; j < io->num_arg_inputs; j++) {
        if (!is_seq(io->arg_in[j])) continue;
        int64_t n = sl_tlist_shape(io->arg_in[j], i)[0];
        if (n == f || n == 1) continue;
        int k = arg_of_slot(def, a, j), km = most >= 0 ? arg_of_slot(def, a, most) : -1;
        if (ref >= 0)
            return sl__op_fail(err, SL_EINVAL, io, i, opname,
                               "argument %s has %lld frames, but input %d has %lld (a per-frame "
                               "argument has the input's frame count, or 1)",
                               k >= 0 ? def->args[k].name : "?", (long long)n, ref, (long long)f);
        return sl__op_fail(err, SL_EINVAL, io, i, opname,
                           "argument %s has %lld frames, but argument %s has %lld (per-frame "
                           "arguments have one frame count, or 1)",
                           k >= 0 ? def->args[k].name : "?", (long long)n,
                           km >= 0 ? def->args[km].name : "?", (long long)f);
    }
    s->frames[i] = f < 0 ? 0 : f;
    return SL_OK;
}

/* l's samples as frames: sample i's frame j (or its only frame, or the whole sample when l is no
 * sequence) is frame sample base_i + j of out */
static sl_status unfold(sl_tlist *out, const sl_tlist *l, const sl__seq *s, int batch, int total,
                        sl_err *err) {
    bool seq = is_seq(l);
    SL_TRY(sl_tlist_reset(out, total, l->dtype, seq ? l->ndim - 1 : l->ndim, l->device, err));
    const char *layout = seq ? l->layout + 1 : l->layout;
    memcpy(out->layout, layout, strlen(layout) + 1);
    int f = 0;
    for (int i = 0; i < batch; i++) {
        const int64_t *sh = sl_tlist_shape(l, i);
        size_t bytes = seq ? sl_dtype_size(l->dtype) : 0;
        for (int d = 1; seq && d < l->ndim; d++) bytes *= (size_t)sh[d];
        for (int64_t j = 0; j < s->frames[i]; j++, f++) {
            int64_t src = seq && sh[0] > 1 ? j : 0;
            /* a sample of no bytes may have no memory (NULL + 0 is undefined) */
            char *at = l->data[i] ? (char *)l->data[i] + (size_t)src * bytes : NULL;
            sl_tlist_set_external(out, f, at, seq ? sh + 1 : sh);
        }
    }
    return SL_OK;
}

/* the frames' record keys: "KEY, frame j" (or "sample i, frame j") */
static sl_status frame_keys(sl__seq *s, const sl__op_io *io, int total, sl_err *err) {
    size_t need = 0;
    for (int i = 0; i < io->batch; i++) {
        const char *k = io->keys && io->keys[i] ? io->keys[i] : "";
        need += (size_t)s->frames[i] * (strlen(k) + 48);
    }
    if (need > s->key_text_cap) {
        char *t = realloc(s->key_text, need);
        if (!t) return sl_err_set(err, SL_ENOMEM, "out of memory naming frames");
        s->key_text = t, s->key_text_cap = need;
    }
    if (total > s->keys_cap) {
        const char **k = realloc(s->keys, (size_t)total * sizeof *k);
        if (!k) return sl_err_set(err, SL_ENOMEM, "out of memory naming frames");
        s->keys = k, s->keys_cap = total;
    }
    char *p = s->key_text;
    for (int i = 0, f = 0; i < io->batch; i++) {
        const char *k = io->keys && io->keys[i] ? io->keys[i] : "";
        for (int64_t j = 0; j < s->frames[i]; j++, f++) {
            s->keys[f] = p;
            int n = k[0] ? snprintf(p, strlen(k) + 48, "%s, frame %lld", k, (long long)j)
                         : snprintf(p, 48, "sample %d, frame %lld", i, (long long)j);
            p += n + 1;
        }
    }
    return SL_OK;
}

sl_status sl__seq_expand(sl__seq *s, const sl__op_def *def, const sl__args *a, const char *opname,
                         const sl__op_io *io, sl_err *err) {
    if (io->batch > s->frames_cap) {
        int64_t *f = realloc(s->frames, (size_t)io->batch * sizeof *f);
        if (!f) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", opname);
        s->frames = f, s->frames_cap = io->batch;
    }
    int64_t total = 0;
    for (int i = 0; i < io->batch; i++) {
        SL_TRY(count_frames(s, def, a, opname, io, i, err));
        total += s->frames[i];
        if (total > INT_MAX / 2)
            return sl__op_fail(err, SL_EINVAL, io, i, opname, "the batch has over %d frames",
                               INT_MAX / 2);
    }
    int n = (int)total;
    for (int j = 0; j < io->num_inputs; j++) {
        SL_TRY(unfold(&s->in[j], io->in[j], s, io->batch, n, err));
        s->inp[j] = &s->in[j];
    }
    for (int j = 0; j < io->num_arg_inputs; j++) {
        SL_TRY(unfold(&s->arg_in[j], io->arg_in[j], s, io->batch, n, err));
        s->argp[j] = &s->arg_in[j];
    }
    for (int j = 0; j < io->num_outputs; j++) {
        if (!s->out[j].buf) s->out[j].pinned = io->out[j]->pinned;
        s->out[j].budget = io->out[j]->budget;
        s->outp[j] = &s->out[j];
    }
    SL_TRY(frame_keys(s, io, n, err));
    s->io = *io;
    s->io.batch = n;
    s->io.in = s->inp;
    s->io.arg_in = s->argp;
    s->io.out = s->outp;
    s->io.keys = s->keys;
    s->io.run_index = NULL;
    s->io.run_count = 0;
    s->io.batch_job = false;
    s->io.seq_frames = s->frames;
    s->io.num_sequences = io->batch;
    return SL_OK;
}

static sl_status copy_bytes(void *dst, const void *src, size_t n, const sl_tlist *l,
                            const sl__op_io *io, sl_err *err) {
    if (!n) return SL_OK;
    if (l->device.kind == SL_DEVICE_CPU) {
        memcpy(dst, src, n);
        return SL_OK;
    }
#ifdef SLUICE_HAVE_CUDA
    return sl__cuda_memcpy(dst, true, src, true, n, io->stream, err);
#else
    (void)io;
    return sl_err_set(err, SL_ENOTSUP, "a device copy in a build without CUDA");
#endif
}

/* output o of the frames back into sequences */
static sl_status fold_one(sl__seq *s, const char *opname, const sl__op_io *io, int o, sl_err *err) {
    const sl_tlist *e = &s->out[o];
    sl_tlist *out = io->out[o];
    if (e->count != s->io.batch)
        return sl_err_set(err, SL_EINVAL, "%s: output %d has %d frames, the batch %d", opname, o,
                          e->count, s->io.batch);
    if (e->ndim + 1 > SL_MAX_DIMS)
        return sl_err_set(err, SL_EINVAL,
                          "%s: output %d: frames of %d dims make sequences of "
                          "more than %d",
                          opname, o, e->ndim, SL_MAX_DIMS);
    int nd = e->ndim + 1;
    int64_t *shapes =
        sl__calloc((size_t)(io->batch ? io->batch : 1) * (size_t)nd, sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0, f = 0; i < io->batch && st == SL_OK; i++) {
        int64_t *sh = shapes + (size_t)i * (size_t)nd;
        sh[0] = s->frames[i];
        if (s->frames[i]) memcpy(sh + 1, sl_tlist_shape(e, f), (size_t)e->ndim * sizeof *sh);
        for (int64_t j = 1; j < s->frames[i] && st == SL_OK; j++)
            if (memcmp(sh + 1, sl_tlist_shape(e, f + (int)j), (size_t)e->ndim * sizeof *sh))
                st = sl__op_fail(err, SL_EINVAL, io, i, opname,
                                 "output %d: frame %lld has another shape than frame 0 (the "
                                 "frames of a sequence come out with one shape)",
                                 o, (long long)j);
        f += (int)s->frames[i];
    }
    if (st == SL_OK) st = sl_tlist_reset(out, io->batch, e->dtype, nd, e->device, err);
    if (st == SL_OK) st = sl_tlist_alloc(out, shapes, err);
    free(shapes);
    for (int i = 0, f = 0; i < io->batch && st == SL_OK; i++) {
        size_t fb = s->frames[i] ? sl_tlist_sample_nbytes(e, f) : 0;
        char *dst = out->data[i];
        int64_t j = fb ? 0 : s->frames[i]; /* frames of no bytes (maybe no memory): no copy */
        while (j < s->frames[i] && st == SL_OK) { /* frames back to back: one copy */
            int64_t run = 1;
            while (j + run < s->frames[i] &&
                   (char *)e->data[f + j + run] == (char *)e->data[f + j] + (size_t)run * fb)
                run++;
            st = copy_bytes(dst + (size_t)j * fb, e->data[f + j], (size_t)run * fb, e, io, err);
            j += run;
        }
        f += (int)s->frames[i];
    }
    if (st != SL_OK) return st;
    memset(out->layout, 0, sizeof out->layout);
    out->layout[0] = 'F';
    bool named = (int)strlen(e->layout) == e->ndim;
    for (int d = 0; d < e->ndim && d + 1 < SL_LAYOUT_MAX + 1; d++)
        out->layout[d + 1] = named ? e->layout[d] : '*';
    return SL_OK;
}

sl_status sl__seq_fold(sl__seq *s, const char *opname, const sl__op_io *io, sl_err *err) {
    for (int o = 0; o < io->num_outputs; o++) SL_TRY(fold_one(s, opname, io, o, err));
    return SL_OK;
}

void sl__seq_free(sl__seq *s) {
    if (!s) return;
    for (int j = 0; j < SL__SEQ_MAX_LISTS; j++) {
        sl_tlist_free(&s->in[j]);
        sl_tlist_free(&s->arg_in[j]);
        sl_tlist_free(&s->out[j]);
    }
    free(s->frames);
    free(s->keys);
    free(s->key_text);
}
