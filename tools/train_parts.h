/* SPDX-License-Identifier: Apache-2.0 */
/* The parts of `sluice train` besides its phases (cmd_train.c): the model's ends read from the
 * pipelines' first batches, and what overlaps the start-up (NCCL's set-up on a thread of its own,
 * the GPUs' warm-up) with the profile's clock. */
#ifndef SLUICE_TOOLS_TRAIN_PARTS_H
#define SLUICE_TOOLS_TRAIN_PARTS_H

#include "sluice/comm.h"
#include "sluice/iterator.h"
#include "sluice/train.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/* Takes each pipeline's first batch (val: NULL on ranks that do not validate) and sets the model's
 * inputs and classes (m->sizes[0] and the last) from their outputs: images (B, ...) float32,
 * labels one-hot (their width the classes) or class ids (the classes from --arg num_classes=N,
 * user_classes, else map_classes, the count of the class map classes_from; "" when there is none).
 * Resuming without --hidden, the hidden sizes are the checkpoint's; with, they must match it.
 * *class_ids: the labels are class ids (one-hot is made for the trainer). why: where the sizes
 * came from, for the "model:" line. Errors name the files and outputs. */
sl_status sl_cli_model_ends(sl_iter *train, sl_iter *val, const char *tfile, const char *vfile,
                            const char *user_classes, const char *map_classes,
                            const char *classes_from, bool resume, bool hidden_given,
                            const sl_iter_batch **first, const sl_iter_batch **vfirst,
                            bool *class_ids, sl_mlp_config *m, char *why, size_t nwhy, sl_err *e);
/* "784 -> 1024 -> 1024 -> 10" */
void sl_cli_sizes_line(const sl_mlp_config *m, char *buf, size_t size);

/* One epoch's figures, as printed and written. */
typedef struct sl_cli_epoch {
    int epoch;
    double seconds, samples_per_s, loss, accuracy;
    /* --profile: seconds in sl_iter_next (waiting for data) and in sl_trainer_step (compute); the
     * training pipelines' op seconds (summed per batch) in the reader, the decoder and the other
     * ops */
    double wait_s, step_s, reader_s, decode_s, ops_s;
    double eval_s; /* validation after the epoch (not in seconds) */
} sl_cli_epoch;

/* The checkpoint file of an epoch: {epoch} in the path replaced by its number. */
void sl_cli_ck_name(const char *ck_path, int epoch, char *buf, size_t size);
/* Adds an epoch's line to the metrics file: the file is written again whole beside it (its lines
 * so far, then this one) and renamed over it, so that it never holds half a line. append: keep
 * the lines already there (a resumed run, or after this run's first epoch). 0, or 1 after a
 * "sluice train: PATH: ..." line on stderr. */
int sl_cli_metrics_line(const char *path, bool append, const sl_cli_epoch *r);

/* Seconds since the process started (Linux: /proc, 10 ms steps), or -1: what the start-up
 * profile cannot see from inside (loading the libraries, the CUDA driver's initialisation). */
double sl_cli_process_age(void);

/* The NCCL group of this process's GPUs (under mpirun: of every process's GPUs, over MPI), made on
 * a thread of its own from the start: its set-up (~0.5 s for 2 GPUs) then overlaps the GPU
 * contexts, the pipelines and the models. */
typedef struct sl_cli_nccl {
    pthread_t thread;
    int started;
    sl_comm_config cc;
    sl_comm *comms[SL_MAX_DEVICES];
    sl_status st;
    sl_err err;
} sl_cli_nccl;

void sl_cli_nccl_start(sl_cli_nccl *ns, const sl_device *devices, int n, const void *mpi_comm);
/* Joins the set-up; its comms then belong to the caller (SL_OK) or are none. */
sl_status sl_cli_nccl_join(sl_cli_nccl *ns, sl_err *err);
/* While NCCL sets up, the GPUs are idle: one forward/backward of a throwaway model like the real
 * one (same sizes, math and batch), a thread per GPU, loads the kernels of cuBLAS and sluice that
 * the first training step would otherwise load (lazily, ~0.1 s). Best effort: an error here
 * shows up again, and is reported, when the real model is made. */
void sl_cli_warm_gpus(const sl_mlp_config *mc, const sl_device *devs, int n, int rows);

#endif
