/* SPDX-License-Identifier: Apache-2.0 */
/* sl_comm's public calls: argument checks common to every backend, then dispatch to the backend's
 * table (comm.h). Which backends exist depends on the build: LOCAL always, MPI where MPI was found,
 * NCCL where NCCL was found (src/comm/comm_nccl.c). */
#include "comm/comm_int.h"

#include "core/log.h"

#include <string.h>

int sl_comm_available(sl_comm_kind kind) {
    switch (kind) {
    case SL_COMM_LOCAL:
        return 1;
    case SL_COMM_MPI:
#ifdef SLUICE_HAVE_MPI
        return 1;
#else
        return 0;
#endif
    case SL_COMM_NCCL:
#ifdef SLUICE_HAVE_NCCL
        return 1;
#else
        return 0;
#endif
    }
    return 0;
}

const char *sl_comm_kind_name(sl_comm_kind kind) {
    switch (kind) {
    case SL_COMM_LOCAL:
        return "local";
    case SL_COMM_NCCL:
        return "nccl";
    case SL_COMM_MPI:
        return "mpi";
    }
    return "unknown";
}

sl_status sl_comm_create(const sl_comm_config *cfg, sl_comm **comms, int capacity, int *ncomms,
                         sl_err *err) {
    if (ncomms) *ncomms = 0;
    if (!cfg || !comms) return sl_err_set(err, SL_EINVAL, "sl_comm_create: cfg and comms needed");
    int n = cfg->kind == SL_COMM_MPI ? 1 : cfg->size;
    if (cfg->kind != SL_COMM_MPI && cfg->size < 1)
        return sl_err_set(err, SL_EINVAL, "sl_comm_create(%s): size %d, need >= 1",
                          sl_comm_kind_name(cfg->kind), cfg->size);
    if (capacity < n)
        return sl_err_set(err, SL_EINVAL, "sl_comm_create(%s): room for %d handles, need %d",
                          sl_comm_kind_name(cfg->kind), capacity, n);
    if (cfg->timeout_ms < 0)
        return sl_err_set(err, SL_EINVAL, "sl_comm_create: timeout_ms %d < 0", cfg->timeout_ms);
    sl_status st;
    switch (cfg->kind) {
    case SL_COMM_LOCAL:
        st = sl__comm_local_create(cfg, comms, err);
        break;
    case SL_COMM_MPI:
#ifdef SLUICE_HAVE_MPI
        st = sl__comm_mpi_create(cfg, comms, err);
#else
        st = sl_err_set(err, SL_ENOTSUP, "sl_comm_create: this build has no MPI");
#endif
        break;
    case SL_COMM_NCCL:
#ifdef SLUICE_HAVE_NCCL
        st = sl__comm_nccl_create(cfg, comms, err);
#else
        st = sl_err_set(err, SL_ENOTSUP, "sl_comm_create: this build has no NCCL");
#endif
        break;
    default:
        st = sl_err_set(err, SL_EINVAL, "sl_comm_create: unknown kind %d", (int)cfg->kind);
    }
    if (st == SL_OK && ncomms) *ncomms = n;
    return st;
}

void sl_comm_free(sl_comm *c) {
    if (c) c->ops->free(c);
}

sl_comm_kind sl_comm_kind_of(const sl_comm *c) {
    return c->kind;
}
int sl_comm_rank(const sl_comm *c) {
    return c->rank;
}
int sl_comm_size(const sl_comm *c) {
    return c->size;
}

sl_status sl_comm_allreduce(sl_comm *c, void *buf, int64_t count, sl_dtype dtype, sl_reduce_op op,
                            void *stream, sl_err *err) {
    SL_ASSERT(c != NULL);
    if (count < 0 || (count > 0 && !buf))
        return sl_err_set(err, SL_EINVAL, "allreduce (rank %d): count %lld, buf %p", c->rank,
                          (long long)count, buf);
    if (op != SL_REDUCE_SUM && op != SL_REDUCE_AVG)
        return sl_err_set(err, SL_EINVAL, "allreduce (rank %d): unknown op %d", c->rank, (int)op);
    switch (dtype) {
    case SL_DTYPE_F32:
    case SL_DTYPE_F64:
        break;
    case SL_DTYPE_I32:
    case SL_DTYPE_I64:
        if (op == SL_REDUCE_SUM) break;
        return sl_err_set(err, SL_EINVAL, "allreduce (rank %d): average of %s is not defined",
                          c->rank, sl_dtype_name(dtype));
    default:
        return sl_err_set(err, SL_EINVAL, "allreduce (rank %d): dtype %s not supported", c->rank,
                          sl_dtype_name(dtype));
    }
    return c->ops->allreduce(c, buf, count, dtype, op, stream, err);
}

sl_status sl_comm_broadcast(sl_comm *c, void *buf, size_t nbytes, int root, void *stream,
                            sl_err *err) {
    SL_ASSERT(c != NULL);
    if (root < 0 || root >= c->size)
        return sl_err_set(err, SL_EINVAL, "broadcast (rank %d): root %d not in [0, %d)", c->rank,
                          root, c->size);
    if (nbytes > 0 && !buf)
        return sl_err_set(err, SL_EINVAL, "broadcast (rank %d): NULL buffer", c->rank);
    return c->ops->broadcast(c, buf, nbytes, root, stream, err);
}

sl_status sl_comm_barrier(sl_comm *c, sl_err *err) {
    SL_ASSERT(c != NULL);
    return c->ops->barrier(c, err);
}

void sl_comm_abort(sl_comm *c) {
    if (c) c->ops->abort(c);
}
