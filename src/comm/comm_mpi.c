/* SPDX-License-Identifier: Apache-2.0 */
/* The MPI sl_comm backend: one rank per process over an MPI communicator (a duplicate of the one
 * the caller names, MPI_COMM_WORLD by default), for data-parallel training across CPU processes and
 * nodes launched by mpirun. All-reduce is MPI_Reduce to rank 0 followed by MPI_Bcast, not
 * MPI_Allreduce: MPI does not promise that every rank of an MPI_Allreduce gets the same bits, and
 * replicas must stay bit-identical; one reduction broadcast from one place guarantees it. The
 * average is the sum divided by the group size on rank 0 before the broadcast. MPI errors are
 * returned (MPI_ERRORS_RETURN on the duplicate) as SL_EMPI with MPI's text. The caller initialises
 * MPI (MPI_Init_thread) and finalises it after freeing the handle. */
#include "comm/comm_int.h"

#include "core/alloc.h"
#include "core/log.h"

#include <limits.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

typedef struct mpi_comm {
    sl_comm base;
    MPI_Comm comm;
    int broken;
} mpi_comm;

#define SL_MPI_TRY(err, expr)                                                                      \
    do {                                                                                           \
        int sl__rc = (expr);                                                                       \
        if (sl__rc != MPI_SUCCESS) {                                                               \
            char sl__msg[MPI_MAX_ERROR_STRING];                                                    \
            int sl__len = 0;                                                                       \
            MPI_Error_string(sl__rc, sl__msg, &sl__len);                                           \
            return sl_err_set((err), SL_EMPI, "%s at %s:%d: %s", #expr, __FILE__, __LINE__,        \
                              sl__msg);                                                            \
        }                                                                                          \
    } while (0)

static MPI_Datatype mpi_type(sl_dtype t) {
    switch (t) {
    case SL_DTYPE_F32:
        return MPI_FLOAT;
    case SL_DTYPE_F64:
        return MPI_DOUBLE;
    case SL_DTYPE_I32:
        return MPI_INT32_T;
    case SL_DTYPE_I64:
        return MPI_INT64_T;
    default:
        return MPI_DATATYPE_NULL;
    }
}

static sl_status check_open(mpi_comm *mc, const char *what, sl_err *err) {
    if (mc->broken)
        return sl_err_set(err, SL_ECLOSED, "%s (MPI rank %d): the communicator was aborted", what,
                          mc->base.rank);
    return SL_OK;
}

static sl_status mpi_allreduce(sl_comm *c, void *buf, int64_t count, sl_dtype dtype,
                               sl_reduce_op op, void *stream, sl_err *err) {
    mpi_comm *mc = (mpi_comm *)c;
    SL_TRY(check_open(mc, "allreduce", err));
    const MPI_Datatype type = mpi_type(dtype);
    const size_t esize = sl_dtype_size(dtype);
    /* MPI counts are int: go in chunks */
    for (int64_t done = 0; done < count;) {
        const int n = (int)SL_MIN(count - done, (int64_t)(INT_MAX / 8));
        char *p = (char *)buf + (size_t)done * esize;
        SL_MPI_TRY(err, MPI_Reduce(c->rank == 0 ? MPI_IN_PLACE : p, c->rank == 0 ? p : NULL, n,
                                   type, MPI_SUM, 0, mc->comm));
        if (c->rank == 0 && op == SL_REDUCE_AVG) {
            if (dtype == SL_DTYPE_F32)
                for (int i = 0; i < n; i++) ((float *)p)[i] /= (float)c->size;
            else
                for (int i = 0; i < n; i++) ((double *)p)[i] /= (double)c->size;
        }
        SL_MPI_TRY(err, MPI_Bcast(p, n, type, 0, mc->comm));
        done += n;
    }
    return SL_OK;
}

static sl_status mpi_broadcast(sl_comm *c, void *buf, size_t nbytes, int root, void *stream,
                               sl_err *err) {
    mpi_comm *mc = (mpi_comm *)c;
    SL_TRY(check_open(mc, "broadcast", err));
    for (size_t done = 0; done < nbytes;) {
        const int n = (int)SL_MIN(nbytes - done, (size_t)INT_MAX);
        SL_MPI_TRY(err, MPI_Bcast((char *)buf + done, n, MPI_BYTE, root, mc->comm));
        done += (size_t)n;
    }
    return SL_OK;
}

static sl_status mpi_barrier(sl_comm *c, sl_err *err) {
    mpi_comm *mc = (mpi_comm *)c;
    SL_TRY(check_open(mc, "barrier", err));
    SL_MPI_TRY(err, MPI_Barrier(mc->comm));
    return SL_OK;
}

static void mpi_abort(sl_comm *c) {
    ((mpi_comm *)c)->broken = 1;
}

static void mpi_free(sl_comm *c) {
    mpi_comm *mc = (mpi_comm *)c;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&mc->comm);
    free(mc);
}

static const sl__comm_ops mpi_ops = {mpi_allreduce, mpi_broadcast, mpi_barrier, mpi_abort,
                                     mpi_free};

sl_status sl__comm_mpi_create(const sl_comm_config *cfg, sl_comm **comms, sl_err *err) {
    int inited = 0, finalized = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (!inited || finalized)
        return sl_err_set(err, SL_ESTATE,
                          "sl_comm_create(mpi): MPI is not initialised (call MPI_Init_thread "
                          "first)");
    MPI_Comm base = cfg->mpi_comm ? *(const MPI_Comm *)cfg->mpi_comm : MPI_COMM_WORLD;
    mpi_comm *mc = sl__calloc(1, sizeof *mc, err);
    if (!mc) return SL_ENOMEM;
    int rc = MPI_Comm_dup(base, &mc->comm);
    if (rc != MPI_SUCCESS) {
        free(mc);
        return sl_err_set(err, SL_EMPI, "sl_comm_create(mpi): MPI_Comm_dup failed (%d)", rc);
    }
    MPI_Comm_set_errhandler(mc->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(mc->comm, &mc->base.rank);
    MPI_Comm_size(mc->comm, &mc->base.size);
    mc->base.ops = &mpi_ops;
    mc->base.kind = SL_COMM_MPI;
    mc->base.impl = mc;
    comms[0] = &mc->base;
    return SL_OK;
}
