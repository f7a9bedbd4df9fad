/* SPDX-License-Identifier: Apache-2.0 */
/* Sequences frame by frame (DALI's sequence operators and per-frame arguments), for every op of
 * the table with SL_OPF_SEQUENCE; the executor calls these around an op's setup and run.
 *
 * A batch is a batch of sequences for such an op when one of its inputs has a layout starting
 * with F (frames, the outermost dim) or one of its argument inputs does (fn.per_frame: one value
 * per frame, an SL_ARGF_PER_FRAME argument). Sample i then has F_i frames: the first such input's
 * outermost extent, else the largest frame count of the per-frame arguments. The op runs once
 * per frame, on a batch of sum F_i samples that are views: frame j of a sequence input, and of a
 * per-frame argument (its only frame when it has one: broadcast); a non-sequence input or a
 * per-sample argument is the same for every frame of its sample (DALI: "if the input is not a
 * sequence and a per-frame argument is given, the input is broadcast"). Each output's frames are
 * then copied back into sequences, (F_i, ...) with layout F + the frame's layout (all frames of a
 * sample must come out with one shape). A per-frame argument whose frame count is neither F_i nor
 * 1, a second sequence input of another length, or an argument given per frame to an op or an
 * argument that takes none, is an error naming the op, the argument, the sample and the counts. */
#ifndef SLUICE_OPERATOR_SEQUENCE_H
#define SLUICE_OPERATOR_SEQUENCE_H

#include "operator/op.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SL__SEQ_MAX_LISTS 8

/* One op's batch of frames (kept per batch slot: the views and the frames' outputs must live
 * until the fold's copies are done, on the GPU stage's stream). Zeroed before first use. */
typedef struct sl__seq {
    sl__op_io io; /* the batch of frames the op runs on */
    sl_tlist in[SL__SEQ_MAX_LISTS], arg_in[SL__SEQ_MAX_LISTS], out[SL__SEQ_MAX_LISTS];
    sl_tlist *inp[SL__SEQ_MAX_LISTS], *argp[SL__SEQ_MAX_LISTS], *outp[SL__SEQ_MAX_LISTS];
    int64_t *frames; /* per sample of the batch: its frame count */
    int frames_cap;
    const char **keys; /* per frame: "KEY, frame j" */
    char *key_text;
    size_t key_text_cap;
    int keys_cap;
} sl__seq;

/* Whether op def (instance opname, arguments a) takes batch io as sequences (*expand), after
 * refusing an argument given per frame that it does not take per frame. */
sl_status sl__seq_check(const sl__op_def *def, const sl__args *a, const char *opname,
                        const sl__op_io *io, bool *expand, sl_err *err);
/* Makes s->io, the batch of frames of io. */
sl_status sl__seq_expand(sl__seq *s, const sl__op_def *def, const sl__args *a, const char *opname,
                         const sl__op_io *io, sl_err *err);
/* After the op ran on s->io: its outputs' frames into io's outputs, as sequences (on io->stream
 * for device outputs). */
sl_status sl__seq_fold(sl__seq *s, const char *opname, const sl__op_io *io, sl_err *err);
void sl__seq_free(sl__seq *s);

#ifdef __cplusplus
}
#endif
#endif
