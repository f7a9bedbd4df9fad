/* SPDX-License-Identifier: Apache-2.0 */
/* Processes of a run (see world.h). A checkpoint of the run is the library's file of one part per
 * process (sluice/checkpoint.h): rank 0 writes it after gathering the parts; on resume each rank
 * reads its own part. */
#include "world.h"
#include "cli.h"

#include "sluice/checkpoint.h"
#include "sluice/iterator.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SLUICE_HAVE_MPI
#include <mpi.h>
#endif

static int env_int(const char *a, const char *b, const char *c) {
    const char *v = getenv(a);
    if (!v) v = getenv(b);
    if (!v) v = getenv(c);
    return v ? atoi(v) : -1;
}

int sl_cli_world_init(sl_cli_world *w, int *argc, char ***argv) {
    memset(w, 0, sizeof *w);
    w->size = 1;
    w->local_size = 1;
    int size = env_int("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE");
    if (size <= 1) return 0;
#ifdef SLUICE_HAVE_MPI
    int provided;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "sluice: MPI_Init_thread failed\n");
        return 1;
    }
    w->mpi = true;
    w->mpi_threads = provided >= MPI_THREAD_MULTIPLE;
    MPI_Comm_rank(MPI_COMM_WORLD, &w->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &w->size);
    int lr = env_int("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMIX_LOCAL_RANK");
    w->local_rank = lr >= 0 ? lr : w->rank;
    int ls = env_int("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMIX_LOCAL_SIZE");
    w->local_size = ls > 0 ? ls : 1;
    return 0;
#else
    (void)argc, (void)argv;
    fprintf(stderr, "sluice: launched as one of %d processes, but this build has no MPI\n", size);
    return 1;
#endif
}

void sl_cli_world_finalize(sl_cli_world *w) {
#ifdef SLUICE_HAVE_MPI
    if (w->mpi) MPI_Finalize();
#endif
    w->mpi = false;
}

int sl_cli_world_fail(const sl_cli_world *w, const char *cmd, const char *msg) {
    sl_cli_progress_end();
    if (w->size > 1) {
        fprintf(stderr, "sluice %s: rank %d of %d: %s\n", cmd, w->rank, w->size, msg);
        fflush(stderr);
#ifdef SLUICE_HAVE_MPI
        if (w->mpi) MPI_Abort(MPI_COMM_WORLD, 1);
#endif
        return 1;
    }
    fprintf(stderr, "sluice %s: %s\n", cmd, msg);
    return 1;
}

void sl_cli_world_settings(const sl_cli_world *w, sl_iter_settings *s) {
    s->rank = w->rank;
    s->nranks = w->size;
    s->local_rank = w->local_rank;
    s->local_size = w->local_size > 0 ? w->local_size : 1;
}

void sl_cli_world_barrier(const sl_cli_world *w) {
#ifdef SLUICE_HAVE_MPI
    if (w->mpi) MPI_Barrier(MPI_COMM_WORLD);
#else
    (void)w;
#endif
}

#ifdef SLUICE_HAVE_MPI
/* MPI_COMM_WORLD where sl_comm_config.mpi_comm can point at it */
static const MPI_Comm *world_comm(void) {
    static MPI_Comm world;
    world = MPI_COMM_WORLD;
    return &world;
}
#endif

sl_status sl_cli_world_comms(const sl_cli_world *w, const sl_device *devices, int k, sl_comm **out,
                             sl_err *err) {
#ifdef SLUICE_HAVE_MPI
    if (!w->mpi) return sl_err_set(err, SL_ENOTSUP, "not an MPI run");
    sl_comm_config cc;
    memset(&cc, 0, sizeof cc);
    cc.mpi_comm = world_comm();
    if (devices[0].kind == SL_DEVICE_CUDA) {
        cc.kind = SL_COMM_NCCL;
        cc.size = k;
        cc.devices = devices;
        return sl_comm_create(&cc, out, k, NULL, err);
    }
    if (k != 1)
        return sl_err_set(err, SL_EINVAL,
                          "with several processes each one drives one CPU device (--devices cpu), "
                          "not %d",
                          k);
    cc.kind = SL_COMM_MPI;
    cc.size = 1;
    return sl_comm_create(&cc, out, 1, NULL, err);
#else
    (void)w, (void)devices, (void)k, (void)out;
    return sl_err_set(err, SL_ENOTSUP, "this build has no MPI");
#endif
}

const void *sl_cli_world_mpi_comm(const sl_cli_world *w) {
#ifdef SLUICE_HAVE_MPI
    return w->mpi && w->mpi_threads ? world_comm() : NULL;
#else
    (void)w;
    return NULL;
#endif
}

sl_status sl_cli_world_save(const sl_cli_world *w, const char *path, const void *mine, size_t n,
                            sl_err *err) {
    int size = w->size;
    uint64_t *lens = calloc((size_t)size, sizeof *lens);
    const void **parts = calloc((size_t)size, sizeof *parts);
    size_t *sizes = calloc((size_t)size, sizeof *sizes);
    sl_status st = SL_OK;
    if (!lens || !parts || !sizes) {
        free(lens);
        free(parts);
        free(sizes);
        return sl_err_set(err, SL_ENOMEM, "out of memory");
    }
    unsigned char *all = NULL;
#ifdef SLUICE_HAVE_MPI
    if (w->mpi) {
        uint64_t n64 = n;
        size_t total = 0;
        MPI_Gather(&n64, 1, MPI_UINT64_T, lens, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
        int *counts = NULL, *displs = NULL;
        if (w->rank == 0) {
            counts = calloc((size_t)size, sizeof *counts);
            displs = calloc((size_t)size, sizeof *displs);
            for (int r = 0; r < size; r++) {
                counts[r] = (int)lens[r];
                displs[r] = (int)total;
                total += lens[r];
            }
            all = malloc(total ? total : 1);
        }
        MPI_Gatherv(mine, (int)n, MPI_BYTE, all, counts, displs, MPI_BYTE, 0, MPI_COMM_WORLD);
        free(counts);
        free(displs);
        for (int r = 0, off = 0; all && r < size; off += (int)lens[r], r++) {
            parts[r] = all + off;
            sizes[r] = (size_t)lens[r];
        }
        if (w->rank == 0 && !all) st = sl_err_set(err, SL_ENOMEM, "out of memory writing %s", path);
    } else
#endif
    {
        parts[0] = mine;
        sizes[0] = n;
    }
    if (w->rank == 0 && st == SL_OK) st = sl_checkpoint_write(path, size, parts, sizes, err);
    free(all);
    free(lens);
    free(parts);
    free(sizes);
#ifdef SLUICE_HAVE_MPI
    if (w->mpi) { /* every rank learns whether rank 0 wrote it */
        int s = st;
        MPI_Bcast(&s, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (w->rank != 0 && s != SL_OK)
            st = sl_err_set(err, (sl_status)s, "rank 0 could not write %s", path);
    }
#endif
    return st;
}

sl_status sl_cli_world_load(const sl_cli_world *w, const char *path, bool any_size, void **bytes,
                            size_t *n, sl_err *err) {
    return sl_checkpoint_read(path, w->rank, w->size, any_size, bytes, n, err);
}
