/* SPDX-License-Identifier: Apache-2.0 */
/* The NCCL sl_comm backend: one rank per GPU. In one process, the communicators of all its GPUs
 * come from ncclCommInitAll; across processes (cfg->mpi_comm set, MPI builds), rank 0 of that MPI
 * communicator makes an ncclUniqueId, MPI_Bcast hands it to every process, and each process
 * initialises its GPUs' ranks (global rank = MPI rank * local GPUs + local index; every process
 * drives the same number) with ncclCommInitRank in one NCCL group. Each handle owns a stream and
 * two events: a collective waits for the caller's stream (an event recorded there), runs on the
 * handle's stream, and makes the caller's stream wait for its end, so it is ordered with the
 * caller's work without blocking the host. With a NULL stream the collective follows the legacy
 * default stream and returns once done (polling, so that an abort ends the wait). Averages are
 * ncclAvg. NCCL errors become SL_ENCCL with ncclGetErrorString's text (and the last-error line);
 * sl_comm_abort aborts every communicator of the process's group (ncclCommAbort), which also ends
 * kernels waiting for a peer that will never come; later calls fail with SL_ECLOSED. The last
 * handle freed finalises and destroys all of the group's communicators together. */
#include "comm/comm_int.h"

#include "core/alloc.h"
#include "core/log.h"
#include "core/cuda_check.h"

#include <cuda_runtime.h>
#include <nccl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef SLUICE_HAVE_MPI
#include <mpi.h>
#endif

typedef struct nccl_group nccl_group;

#define SCRATCH_TAIL  16 /* a broadcast's tail (nccl_broadcast) from here in a handle's scratch */
#define SCRATCH_BYTES 32

typedef struct nccl_comm {
    sl_comm base;
    nccl_group *g;
    int local; /* index in the group */
    int device;
    ncclComm_t comm;
    cudaStream_t stream;
    cudaEvent_t ev_in, ev_out;
    void *scratch;      /* device memory: the barrier's int, a broadcast's tail at SCRATCH_TAIL */
    pthread_mutex_t mu; /* held while enqueuing, and by abort */
    int aborted;
} nccl_comm;

struct nccl_group {
    pthread_mutex_t mu;
    int n, refs;
    int broken;
    nccl_comm **members;
};

#define SL_NCCL_TRY(err, comm, expr)                                                               \
    do {                                                                                           \
        ncclResult_t sl__r = (expr);                                                               \
        if (sl__r != ncclSuccess) {                                                                \
            const char *sl__last = (comm) ? ncclGetLastError(comm) : NULL;                         \
            return sl_err_set((err), SL_ENCCL, "%s at %s:%d: %s%s%s", #expr, __FILE__, __LINE__,   \
                              ncclGetErrorString(sl__r), sl__last && *sl__last ? " -- " : "",      \
                              sl__last ? sl__last : "");                                           \
        }                                                                                          \
    } while (0)

static nccl_comm *nc_of(sl_comm *c) {
    return (nccl_comm *)c;
}

static ncclDataType_t nccl_type(sl_dtype t) {
    switch (t) {
    case SL_DTYPE_F32:
        return ncclFloat32;
    case SL_DTYPE_F64:
        return ncclFloat64;
    case SL_DTYPE_I32:
        return ncclInt32;
    case SL_DTYPE_I64:
        return ncclInt64;
    default:
        return ncclUint8;
    }
}

static sl_status closed(nccl_comm *nc, const char *what, sl_err *err) {
    return sl_err_set(err, SL_ECLOSED, "%s (NCCL rank %d of %d): the group was aborted", what,
                      nc->base.rank, nc->base.size);
}

static int group_broken(nccl_group *g) {
    pthread_mutex_lock(&g->mu);
    int b = g->broken;
    pthread_mutex_unlock(&g->mu);
    return b;
}

/* Before a collective: the handle's stream waits for the caller's stream (NULL: legacy default). */
static sl_status order_in(nccl_comm *nc, void *stream, sl_err *err) {
    SL_CUDA_TRY(err, cudaSetDevice(nc->device));
    SL_CUDA_TRY(err, cudaEventRecord(nc->ev_in, (cudaStream_t)stream));
    SL_CUDA_TRY(err, cudaStreamWaitEvent(nc->stream, nc->ev_in, 0));
    return SL_OK;
}

/* After a collective: the caller's stream waits for its end; with no stream, the host does
 * (polling the event, NCCL's asynchronous error and the group's abort flag). */
static sl_status order_out(nccl_comm *nc, void *stream, const char *what, sl_err *err) {
    SL_CUDA_TRY(err, cudaEventRecord(nc->ev_out, nc->stream));
    if (stream) {
        SL_CUDA_TRY(err, cudaStreamWaitEvent((cudaStream_t)stream, nc->ev_out, 0));
        return SL_OK;
    }
    for (unsigned spins = 0;; spins++) {
        cudaError_t e = cudaEventQuery(nc->ev_out);
        if (e == cudaSuccess) return SL_OK;
        if (e != cudaErrorNotReady) SL_CUDA_TRY(err, e);
        if (group_broken(nc->g)) return closed(nc, what, err);
        pthread_mutex_lock(&nc->mu);
        ncclResult_t async = ncclSuccess;
        if (!nc->aborted) ncclCommGetAsyncError(nc->comm, &async);
        pthread_mutex_unlock(&nc->mu);
        if (async != ncclSuccess && async != ncclInProgress)
            return sl_err_set(err, SL_ENCCL, "%s (NCCL rank %d): %s", what, nc->base.rank,
                              ncclGetErrorString(async));
        if (spins > 1000) {
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
    }
}

static sl_status nccl_allreduce(sl_comm *c, void *buf, int64_t count, sl_dtype dtype,
                                sl_reduce_op op, void *stream, sl_err *err) {
    nccl_comm *nc = nc_of(c);
    if (group_broken(nc->g)) return closed(nc, "allreduce", err);
    if (count == 0) return SL_OK;
    SL_TRY(order_in(nc, stream, err));
    pthread_mutex_lock(&nc->mu);
    ncclResult_t r =
        nc->aborted ? ncclInvalidUsage
                    : ncclAllReduce(buf, buf, (size_t)count, nccl_type(dtype),
                                    op == SL_REDUCE_AVG ? ncclAvg : ncclSum, nc->comm, nc->stream);
    int was_aborted = nc->aborted;
    pthread_mutex_unlock(&nc->mu);
    if (was_aborted) return closed(nc, "allreduce", err);
    SL_NCCL_TRY(err, nc->comm, r);
    return order_out(nc, stream, "allreduce", err);
}

/* NCCL's broadcast kernels read the buffer in whole words, past its end when nbytes is not a
 * multiple of them (compute-sanitizer flags a 4-byte read beyond a 777-byte buffer). So the
 * buffer's last nbytes % BCAST_ALIGN bytes travel through the handle's own scratch: copied there,
 * broadcast with the rest in one NCCL group, copied back, all on the handle's stream. */
#define BCAST_ALIGN 16

static sl_status nccl_broadcast(sl_comm *c, void *buf, size_t nbytes, int root, void *stream,
                                sl_err *err) {
    nccl_comm *nc = nc_of(c);
    if (group_broken(nc->g)) return closed(nc, "broadcast", err);
    if (nbytes == 0) return SL_OK;
    SL_TRY(order_in(nc, stream, err));
    const size_t head = nbytes - nbytes % BCAST_ALIGN, tail = nbytes - head;
    char *tail_buf = (char *)nc->scratch + SCRATCH_TAIL;
    if (tail)
        SL_CUDA_TRY(err, cudaMemcpyAsync(tail_buf, (char *)buf + head, tail,
                                         cudaMemcpyDeviceToDevice, nc->stream));
    pthread_mutex_lock(&nc->mu);
    ncclResult_t r = ncclInvalidUsage;
    if (!nc->aborted) {
        r = ncclGroupStart();
        if (r == ncclSuccess && head)
            r = ncclBroadcast(buf, buf, head, ncclUint8, root, nc->comm, nc->stream);
        if (r == ncclSuccess && tail)
            r = ncclBroadcast(tail_buf, tail_buf, BCAST_ALIGN, ncclUint8, root, nc->comm,
                              nc->stream);
        ncclResult_t r2 = ncclGroupEnd();
        if (r == ncclSuccess) r = r2;
    }
    int was_aborted = nc->aborted;
    pthread_mutex_unlock(&nc->mu);
    if (was_aborted) return closed(nc, "broadcast", err);
    SL_NCCL_TRY(err, nc->comm, r);
    if (tail)
        SL_CUDA_TRY(err, cudaMemcpyAsync((char *)buf + head, tail_buf, tail,
                                         cudaMemcpyDeviceToDevice, nc->stream));
    return order_out(nc, stream, "broadcast", err);
}

static sl_status nccl_barrier(sl_comm *c, sl_err *err) {
    /* an all-reduce of one int in device memory, waited for */
    return nccl_allreduce(c, nc_of(c)->scratch, 1, SL_DTYPE_I32, SL_REDUCE_SUM, NULL, err);
}

static void nccl_abort(sl_comm *c) {
    nccl_group *g = nc_of(c)->g;
    pthread_mutex_lock(&g->mu);
    g->broken = 1;
    pthread_mutex_unlock(&g->mu);
    for (int i = 0; i < g->n; i++) {
        nccl_comm *m = g->members[i];
        if (!m) continue;
        pthread_mutex_lock(&m->mu);
        if (!m->aborted && m->comm) {
            cudaSetDevice(m->device);
            ncclCommAbort(m->comm); /* frees the communicator */
            m->aborted = 1;
        }
        pthread_mutex_unlock(&m->mu);
    }
}

/* Releases a member's CUDA objects (the communicator is the group's business). */
static void member_release(nccl_comm *m) {
    cudaSetDevice(m->device);
    /* after an abort the stream may hold a collective whose peer never came: do not wait */
    if (m->stream && !m->aborted) cudaStreamSynchronize(m->stream);
    if (m->ev_in) cudaEventDestroy(m->ev_in);
    if (m->ev_out) cudaEventDestroy(m->ev_out);
    if (m->stream) cudaStreamDestroy(m->stream);
    if (m->scratch) cudaFree(m->scratch);
    (void)cudaGetLastError();
    pthread_mutex_destroy(&m->mu);
}

/* Destroys the whole group: finalises the live communicators together (one NCCL group, as NCCL
 * asks for communicators driven by one thread), then destroys them. */
static void group_destroy(nccl_group *g) {
    ncclGroupStart();
    for (int i = 0; i < g->n; i++) {
        nccl_comm *m = g->members[i];
        if (m && m->comm && !m->aborted) {
            cudaSetDevice(m->device);
            ncclCommFinalize(m->comm);
        }
    }
    ncclGroupEnd();
    for (int i = 0; i < g->n; i++) {
        nccl_comm *m = g->members[i];
        if (!m) continue;
        if (m->comm && !m->aborted) {
            cudaSetDevice(m->device);
            ncclCommDestroy(m->comm);
        }
        member_release(m);
        free(m);
    }
    pthread_mutex_destroy(&g->mu);
    free(g->members);
    free(g);
}

static void nccl_free(sl_comm *c) {
    nccl_group *g = nc_of(c)->g;
    pthread_mutex_lock(&g->mu);
    int last = --g->refs == 0;
    pthread_mutex_unlock(&g->mu);
    if (last) group_destroy(g);
}

static const sl__comm_ops nccl_ops = {nccl_allreduce, nccl_broadcast, nccl_barrier, nccl_abort,
                                      nccl_free};

/* The per-handle CUDA objects on its device. */
static sl_status member_setup(nccl_comm *m, sl_err *err) {
    SL_CUDA_TRY(err, cudaSetDevice(m->device));
    SL_CUDA_TRY(err, cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking));
    SL_CUDA_TRY(err, cudaEventCreateWithFlags(&m->ev_in, cudaEventDisableTiming));
    SL_CUDA_TRY(err, cudaEventCreateWithFlags(&m->ev_out, cudaEventDisableTiming));
    SL_CUDA_TRY(err, cudaMalloc(&m->scratch, SCRATCH_BYTES));
    SL_CUDA_TRY(err, cudaMemset(m->scratch, 0, SCRATCH_BYTES));
    return SL_OK;
}

#ifdef SLUICE_HAVE_MPI
/* The ncclUniqueId from MPI rank 0 of *comm, and this process's MPI rank and size. */
static sl_status mpi_unique_id(const void *mpi_comm, ncclUniqueId *id, int *rank, int *size,
                               sl_err *err) {
    MPI_Comm comm = *(const MPI_Comm *)mpi_comm;
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) return sl_err_set(err, SL_EINVAL, "NCCL over MPI: MPI is not initialised");
    if (MPI_Comm_rank(comm, rank) != MPI_SUCCESS || MPI_Comm_size(comm, size) != MPI_SUCCESS)
        return sl_err_set(err, SL_EMPI, "NCCL over MPI: MPI_Comm_rank/size failed");
    if (*rank == 0) SL_NCCL_TRY(err, NULL, ncclGetUniqueId(id));
    if (MPI_Bcast(id, (int)sizeof *id, MPI_BYTE, 0, comm) != MPI_SUCCESS)
        return sl_err_set(err, SL_EMPI, "NCCL over MPI: MPI_Bcast of the unique id failed");
    return SL_OK;
}
#endif

/* Makes the NCCL communicators of members[0..n) (devices already set). */
static sl_status init_comms(const sl_comm_config *cfg, nccl_group *g, sl_err *err) {
    const int n = g->n;
    ncclComm_t *raw = sl__calloc((size_t)n, sizeof *raw, err);
    int *devs = sl__calloc((size_t)n, sizeof *devs, err);
    if (!raw || !devs) {
        free(raw);
        free(devs);
        return SL_ENOMEM;
    }
    for (int i = 0; i < n; i++) devs[i] = g->members[i]->device;
    sl_status st = SL_OK;
    ncclResult_t r = ncclSuccess;
    int base = 0, total = n;
    if (!cfg->mpi_comm) {
        r = ncclCommInitAll(raw, n, devs);
    } else {
#ifdef SLUICE_HAVE_MPI
        ncclUniqueId id;
        int mrank = 0, msize = 1;
        st = mpi_unique_id(cfg->mpi_comm, &id, &mrank, &msize, err);
        base = mrank * n;
        total = msize * n;
        if (st == SL_OK) {
            r = ncclGroupStart();
            for (int i = 0; i < n && r == ncclSuccess; i++) {
                cudaSetDevice(devs[i]);
                r = ncclCommInitRank(&raw[i], total, id, base + i);
            }
            ncclResult_t r2 = ncclGroupEnd();
            if (r == ncclSuccess) r = r2;
        }
#else
        st = sl_err_set(err, SL_ENOTSUP, "NCCL across processes needs an MPI build");
#endif
    }
    if (st == SL_OK && r != ncclSuccess)
        st = sl_err_set(err, SL_ENCCL, "creating %d NCCL communicators: %s%s%s", n,
                        ncclGetErrorString(r), *ncclGetLastError(NULL) ? " -- " : "",
                        ncclGetLastError(NULL));
    for (int i = 0; i < n; i++) {
        nccl_comm *m = g->members[i];
        m->comm = st == SL_OK ? raw[i] : NULL;
        m->base.rank = base + i;
        m->base.size = total;
    }
    free(raw);
    free(devs);
    return st;
}

sl_status sl__comm_nccl_create(const sl_comm_config *cfg, sl_comm **comms, sl_err *err) {
    const int n = cfg->size;
    if (!cfg->devices) return sl_err_set(err, SL_EINVAL, "sl_comm_create(nccl): no devices given");
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess) {
        (void)cudaGetLastError();
        ndev = 0;
    }
    for (int i = 0; i < n; i++) {
        if (cfg->devices[i].kind != SL_DEVICE_CUDA || cfg->devices[i].id < 0 ||
            cfg->devices[i].id >= ndev)
            return sl_err_set(err, SL_EINVAL,
                              "sl_comm_create(nccl): device %d is not a GPU of this machine (%d "
                              "visible)",
                              i, ndev);
        for (int j = 0; j < i; j++)
            if (cfg->devices[j].id == cfg->devices[i].id)
                return sl_err_set(err, SL_EINVAL, "sl_comm_create(nccl): cuda:%d given twice",
                                  cfg->devices[i].id);
    }
    nccl_group *g = sl__calloc(1, sizeof *g, err);
    if (!g) return SL_ENOMEM;
    g->members = sl__calloc((size_t)n, sizeof *g->members, err);
    if (!g->members) {
        free(g);
        return SL_ENOMEM;
    }
    pthread_mutex_init(&g->mu, NULL);
    g->n = n;
    sl_status st = SL_OK;
    for (int i = 0; i < n && st == SL_OK; i++) {
        nccl_comm *m = sl__calloc(1, sizeof *m, err);
        if (!m) {
            st = SL_ENOMEM;
            break;
        }
        g->members[i] = m;
        pthread_mutex_init(&m->mu, NULL);
        m->g = g;
        m->local = i;
        m->device = cfg->devices[i].id;
        m->base.ops = &nccl_ops;
        m->base.kind = SL_COMM_NCCL;
        m->base.impl = m;
        st = member_setup(m, err);
    }
    if (st == SL_OK) st = init_comms(cfg, g, err);
    if (st != SL_OK) {
        group_destroy(g);
        return st;
    }
    g->refs = n;
    for (int i = 0; i < n; i++) comms[i] = &g->members[i]->base;
    return SL_OK;
}
