/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline's checkpoints (pipeline_checkpoint.c) as the executor and the builder use them:
 * snapshots of the op states, the ring the stages keep them in, and the restore applied at build.
 * The checkpoint after a given batch, which the iterator takes, is declared in pipeline.h. */
#ifndef SLUICE_PIPELINE_PIPELINE_CHECKPOINT_H
#define SLUICE_PIPELINE_PIPELINE_CHECKPOINT_H

#include "sluice/pipeline.h"

#include <stddef.h>
#include <stdint.h>

/* Serialises every op's checkpoint state and counters ("before batch seq"). */
sl_status sl__pipeline_checkpoint_snapshot(sl_pipeline *p, int64_t seq, void **bytes, size_t *size,
                                           sl_err *err);
/* Keeps the snapshot taken before batch seq in the ring, which owns bytes from then on. */
void sl__pipeline_checkpoint_store(sl_pipeline *p, int64_t seq, void *bytes, size_t size);
/* The stage that takes snapshots has ended: wakes anyone waiting for one that will never come. */
/* why: the error of the batch that stopped the stage (NULL: it ended without one); a checkpoint
 * waiting for a later batch fails with it. */
void sl__pipeline_checkpoint_end(sl_pipeline *p, const sl_err *why);

/* At build, once the op instances exist: checks the bytes given to sl_pipeline_restore and restores
 * every op's state and the batch count from them (SL_OK when none were given). */
sl_status sl__pipeline_checkpoint_apply(sl_pipeline *p);

#endif
