/* SPDX-License-Identifier: Apache-2.0 */
/* sl_comm: collective communication between the replicas of a data-parallel run.
 *
 * One sl_comm handle stands for one rank (one replica). Backends:
 *   SL_COMM_LOCAL  K ranks in one process, one thread each, through shared memory (cpu:K replicas);
 *   SL_COMM_NCCL   one rank per GPU: ncclCommInitAll for the GPUs of one process, or across
 *                  processes with ncclCommInitRank (mpi_comm set; the unique id goes over MPI);
 *   SL_COMM_MPI    one rank per process, through MPI (MPI_Allreduce, MPI_Bcast, MPI_Barrier).
 * Collectives are called by every rank of the group with the same arguments (count, dtype, op,
 * root), each from its own thread for the in-process backends. Results are deterministic: the local
 * backend sums in rank order, so every rank gets bit-identical results, run after run.
 * Buffers live where the backend wants them: host memory for LOCAL and MPI, device memory (with a
 * cudaStream_t as `stream`) for NCCL. NCCL collectives run on the handle's own stream, ordered
 * after the work already queued on `stream`, and `stream` waits for them: the call returns without
 * waiting. With stream NULL they follow the legacy default stream and return when done. */
#ifndef SLUICE_COMM_H
#define SLUICE_COMM_H

#include "sluice/status.h"
#include "sluice/tensor.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sl_comm_kind { SL_COMM_LOCAL = 0, SL_COMM_NCCL = 1, SL_COMM_MPI = 2 } sl_comm_kind;

typedef enum sl_reduce_op {
    SL_REDUCE_SUM = 0,
    SL_REDUCE_AVG = 1 /* the sum divided by the group size (JAX's pmean) */
} sl_reduce_op;

typedef struct sl_comm_config {
    sl_comm_kind kind;
    /* LOCAL: number of ranks K (>= 1). NCCL: number of devices. MPI: ignored (one per process). */
    int size;
    /* NCCL: the devices, size entries. Others: ignored (may be NULL). */
    const sl_device *devices;
    /* MPI: pointer to the MPI_Comm to use (duplicated); NULL means MPI_COMM_WORLD. MPI must have
     * been initialised by the caller (MPI_Init_thread, MPI_THREAD_MULTIPLE when several threads of
     * a process use MPI).
     * NCCL: NULL for one process; a pointer to an MPI_Comm makes one NCCL group across all of its
     * processes (MPI builds), each driving `size` GPUs (the same number everywhere), global rank =
     * MPI rank * size + index. */
    const void *mpi_comm;
    /* LOCAL: how long a rank waits for the others in a collective before giving up with
     * SL_ETIMEOUT (and aborting the group); 0 waits forever. */
    int timeout_ms;
} sl_comm_config;

typedef struct sl_comm sl_comm;

/* Whether this build has the backend (NCCL and MPI are compiled only where found). */
int sl_comm_available(sl_comm_kind kind);
const char *sl_comm_kind_name(sl_comm_kind kind);

/* Creates the handles this process drives: cfg->size for LOCAL and NCCL, 1 for MPI. comms must
 * have room for that many; *ncomms (may be NULL) receives the count. Each handle is freed with
 * sl_comm_free; the group's shared state goes with the last one. */
sl_status sl_comm_create(const sl_comm_config *cfg, sl_comm **comms, int capacity, int *ncomms,
                         sl_err *err);
void sl_comm_free(sl_comm *c);

sl_comm_kind sl_comm_kind_of(const sl_comm *c);
int sl_comm_rank(const sl_comm *c);
int sl_comm_size(const sl_comm *c);

/* In place: buf (count elements of dtype) becomes the sum (or average) over all ranks.
 * dtypes: F32, F64 (LOCAL, MPI, NCCL), I32, I64 (SUM only). */
sl_status sl_comm_allreduce(sl_comm *c, void *buf, int64_t count, sl_dtype dtype, sl_reduce_op op,
                            void *stream, sl_err *err);
/* Copies root's nbytes of buf to every other rank's buf. */
sl_status sl_comm_broadcast(sl_comm *c, void *buf, size_t nbytes, int root, void *stream,
                            sl_err *err);
/* Returns once every rank has entered. */
sl_status sl_comm_barrier(sl_comm *c, sl_err *err);
/* Breaks the group: every rank waiting in or later entering a collective gets SL_ECLOSED (LOCAL:
 * immediately; MPI: MPI_Abort is left to the caller; NCCL: ncclCommAbort). Used when one replica
 * fails and can no longer take part, so that the others do not wait forever. */
void sl_comm_abort(sl_comm *c);

#ifdef __cplusplus
}
#endif
#endif
