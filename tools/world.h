/* SPDX-License-Identifier: Apache-2.0 */
/* The processes of a run: one, or several launched by mpirun (MPI). Subcommands ask for their rank
 * and size, let rank 0 alone print and write files, gather every rank's checkpoint into one file,
 * and stop every rank when one fails. Without MPI (or not under mpirun) there is one rank. */
#ifndef SLUICE_TOOLS_WORLD_H
#define SLUICE_TOOLS_WORLD_H

#include "sluice/comm.h"
#include "sluice/iterator.h"
#include "sluice/status.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct sl_cli_world {
    int rank, size, local_rank, local_size;
    bool mpi;         /* MPI was initialised by us */
    bool mpi_threads; /* ... and takes calls from several threads at once (MPI_THREAD_MULTIPLE) */
} sl_cli_world;

/* Initialises MPI when the process was launched by mpirun (OMPI_/PMI_/PMIX_ variables). */
int sl_cli_world_init(sl_cli_world *w, int *argc, char ***argv);
void sl_cli_world_finalize(sl_cli_world *w);
/* Prints "sluice <cmd>: rank R: <msg>" and stops every rank (MPI_Abort) when there are several;
 * returns 1 otherwise. */
int sl_cli_world_fail(const sl_cli_world *w, const char *cmd, const char *msg);
/* The trainer's communicators across the ranks for this process's k devices: NCCL over MPI for
 * GPUs (k handles), MPI for a CPU device (k must be 1). SL_ENOTSUP without MPI. */
sl_status sl_cli_world_comms(const sl_cli_world *w, const sl_device *devices, int k, sl_comm **out,
                             sl_err *err);
/* MPI_COMM_WORLD for sl_comm_config.mpi_comm when other threads may call MPI while this one does
 * not (NCCL's set-up on its own thread, over MPI); NULL when they may not, or without MPI. */
const void *sl_cli_world_mpi_comm(const sl_cli_world *w);
/* Gathers every rank's bytes and (rank 0) writes them as one multi-rank checkpoint to path. */
sl_status sl_cli_world_save(const sl_cli_world *w, const char *path, const void *mine, size_t n,
                            sl_err *err);
/* Reads this rank's part of a checkpoint written by sl_cli_world_save (malloc'd). A checkpoint of
 * a single-process run is that process's part. any_size: a checkpoint of another process count
 * is taken too, every rank reading rank 0's part (global order, whose parts hold the same
 * position); else it is refused. */
sl_status sl_cli_world_load(const sl_cli_world *w, const char *path, bool any_size, void **bytes,
                            size_t *n, sl_err *err);
void sl_cli_world_barrier(const sl_cli_world *w);
/* This process's place in the job, for the library's settings (sl_iter_settle). */
void sl_cli_world_settings(const sl_cli_world *w, sl_iter_settings *s);

#endif
