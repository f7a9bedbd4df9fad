/* SPDX-License-Identifier: Apache-2.0 */
/* Internal side of sl_comm: the struct every handle shares and the table of operations a backend
 * fills in (comm_local.c; comm_nccl.c and comm_mpi.c where NCCL / MPI are found). comm.c checks
 * arguments once for every backend and dispatches through the table. */
#ifndef SLUICE_COMM_COMM_INT_H
#define SLUICE_COMM_COMM_INT_H

#include "sluice/comm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl__comm_ops {
    /* arguments already checked by comm.c: count >= 0, dtype/op supported, 0 <= root < size */
    sl_status (*allreduce)(sl_comm *c, void *buf, int64_t count, sl_dtype dtype, sl_reduce_op op,
                           void *stream, sl_err *err);
    sl_status (*broadcast)(sl_comm *c, void *buf, size_t nbytes, int root, void *stream,
                           sl_err *err);
    sl_status (*barrier)(sl_comm *c, sl_err *err);
    void (*abort)(sl_comm *c);
    void (*free)(sl_comm *c);
} sl__comm_ops;

struct sl_comm {
    const sl__comm_ops *ops;
    sl_comm_kind kind;
    int rank, size;
    void *impl; /* the backend's state */
};

/* Each creates cfg->size handles (LOCAL, NCCL) or one (MPI) into comms. */
sl_status sl__comm_local_create(const sl_comm_config *cfg, sl_comm **comms, sl_err *err);
#ifdef SLUICE_HAVE_NCCL
sl_status sl__comm_nccl_create(const sl_comm_config *cfg, sl_comm **comms, sl_err *err);
#endif
#ifdef SLUICE_HAVE_MPI
sl_status sl__comm_mpi_create(const sl_comm_config *cfg, sl_comm **comms, sl_err *err);
#endif

#ifdef __cplusplus
}
#endif
#endif
