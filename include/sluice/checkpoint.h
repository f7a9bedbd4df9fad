/* SPDX-License-Identifier: Apache-2.0 */
/* Checkpoints of a training job: the trainer's state (model and optimiser) that rides in an
 * iterator checkpoint's extra bytes, and the file that holds one part per process of a job that
 * runs under several (mpirun), each part what sl_iter_save gave that process.
 *
 * The job's file (version 1), in little-endian fields:
 *     "SLMR"  u32 version (1)  u32 parts
 *     per part: u64 length, then that many bytes (an iterator checkpoint, itself CRC-checked)
 *     u32 CRC-32 of everything before it
 * A one-process run writes a file of one part. `sluice run --checkpoint` and
 * `sluice train --checkpoint` write it; the file is looked at before it is read (a regular file
 * whose header gives lengths that add up to its size), so a truncated, damaged or foreign file is
 * an error naming it, never a crash, a wait or a read of its whole length first.
 *
 *     const void *parts[2] = {rank0_bytes, rank1_bytes};   // gathered from the processes
 *     const size_t sizes[2] = {rank0_size, rank1_size};
 *     sl_checkpoint_write("ck", 2, parts, sizes, &err);
 *     ...
 *     sl_checkpoint_read("ck", rank, 2, false, &mine, &n, &err);  // this process's part
 *     c.resume = "ck"; c.resume_bytes = mine; c.resume_size = n;   // sl_iter_config
 */
#ifndef SLUICE_CHECKPOINT_H
#define SLUICE_CHECKPOINT_H

#include "sluice/status.h"
#include "sluice/train.h"

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The job's file as bytes (malloc'd, *size long): nparts >= 1 parts, part r sizes[r] bytes. */
sl_status sl_checkpoint_pack(int nparts, const void *const *parts, const size_t *sizes,
                             void **bytes, size_t *size, sl_err *err);
/* The same, written to path whole or not at all (sl_file_write). */
sl_status sl_checkpoint_write(const char *path, int nparts, const void *const *parts,
                              const size_t *sizes, sl_err *err);
/* Process rank's part (of nranks) of the job's file at path, as bytes (malloc'd, *size long).
 * A file of another part count is refused (SL_EINVAL naming both counts), unless any_size: then
 * every rank gets part 0 (global order, whose parts all hold the same position). Errors name the
 * file: SL_ENOENT/SL_EIO when it cannot be read, SL_EINVAL for a folder, a FIFO or a device,
 * SL_EFORMAT when it is not such a file or truncated, SL_ECHECKSUM when its bytes were altered. */
sl_status sl_checkpoint_read(const char *path, int rank, int nranks, bool any_size, void **bytes,
                             size_t *size, sl_err *err);

/* The trainer's state for a checkpoint: replica 0's model (sl_mlp_serialize) and optimiser
 * (sl_optim_serialize), as u64 model length, u64 optimiser length, the two (malloc'd). */
sl_status sl_trainer_state_save(sl_trainer *t, void **bytes, size_t *size, sl_err *err);
/* Loads such state into every replica (then sl_trainer_sync); SL_EFORMAT when the lengths do not
 * add up, or what the model's or optimiser's loader says (another shape, another optimiser). */
sl_status sl_trainer_state_load(sl_trainer *t, const void *bytes, size_t size, sl_err *err);
/* The model configuration held in such state (sl_mlp_peek_config), without a trainer. */
sl_status sl_trainer_state_peek(const void *bytes, size_t size, sl_mlp_config *cfg, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
