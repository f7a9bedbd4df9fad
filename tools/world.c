/* SPDX-License-Identifier: Apache-2.0 */
/* Processes of a run (see world.h). The multi-rank checkpoint file is
 *   "SLMR" u32 version(1) u32 ranks, then per rank: u64 length + that rank's iterator checkpoint
 *   (itself CRC-checked), then u32 CRC-32 of everything before it;
 * rank 0 writes it (atomically) after gathering the parts; on resume each rank reads its own part.
 */
#include "world.h"
#include "cli.h"

#include "sluice/iterator.h"

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#ifdef SLUICE_HAVE_MPI
#include <mpi.h>
#endif

#define MR_MAGIC 0x524d4c53u /* "SLMR" */

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

int sl_cli_world_threads(const sl_cli_world *w, int pipelines) {
    long all = (long)(w->local_size > 0 ? w->local_size : 1) * (pipelines > 0 ? pipelines : 1);
    return sl_pipeline_default_threads(all > INT_MAX ? INT_MAX : (int)all);
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

/* CRC-32 of n bytes, n beyond what one zlib call takes included */
static uint32_t crc_all(const unsigned char *p, size_t n) {
    uLong c = crc32(0L, Z_NULL, 0);
    for (size_t off = 0; off < n;) {
        size_t k = n - off < (1u << 30) ? n - off : (1u << 30);
        c = crc32(c, p + off, (uInt)k);
        off += k;
    }
    return (uint32_t)c;
}

static void put32(unsigned char *p, uint32_t v) {
    memcpy(p, &v, 4);
}

sl_status sl_cli_world_save(const sl_cli_world *w, const char *path, const void *mine, size_t n,
                            sl_err *err) {
    int size = w->size;
    uint64_t *lens = calloc((size_t)size, sizeof *lens);
    if (!lens) return sl_err_set(err, SL_ENOMEM, "out of memory");
    uint64_t n64 = n;
    unsigned char *all = NULL;
    size_t total = 0;
#ifdef SLUICE_HAVE_MPI
    if (w->mpi) {
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
    } else
#endif
    {
        lens[0] = n64;
        total = n;
        all = malloc(n ? n : 1);
        if (all) memcpy(all, mine, n);
    }
    sl_status st = SL_OK;
    if (w->rank == 0) {
        size_t flen = 12 + (size_t)size * 8 + total + 4;
        unsigned char *f = all ? malloc(flen) : NULL;
        if (!f) {
            st = sl_err_set(err, SL_ENOMEM, "out of memory writing %s", path);
        } else {
            put32(f, MR_MAGIC);
            put32(f + 4, 1);
            put32(f + 8, (uint32_t)size);
            size_t off = 12, src = 0;
            for (int r = 0; r < size; r++) {
                memcpy(f + off, &lens[r], 8);
                memcpy(f + off + 8, all + src, (size_t)lens[r]);
                off += 8 + (size_t)lens[r];
                src += (size_t)lens[r];
            }
            put32(f + off, crc_all(f, off));
            st = sl_file_write(path, f, off + 4, err);
            free(f);
        }
    }
    free(all);
    free(lens);
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
    /* the file is looked at before it is read: a regular file (a FIFO would block, a directory
     * reads as any size), of a size this process can hold, whose header is a checkpoint's */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO's open does not wait */
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        int e = errno;
        if (fd >= 0) close(fd);
        return sl_err_set(err, SL_EIO, "checkpoint %s: %s", path, strerror(e));
    }
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0) {
        int e = errno;
        fclose(f);
        return sl_err_set(err, SL_EIO, "checkpoint %s: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        fclose(f);
        return sl_err_set(err, SL_EINVAL, "checkpoint %s: not a regular file (%s)", path,
                          S_ISDIR(sb.st_mode)    ? "a directory"
                          : S_ISFIFO(sb.st_mode) ? "a FIFO"
                                                 : "a device or socket");
    }
    unsigned char head[12];
    if (sb.st_size < 16 || fread(head, 1, sizeof head, f) != sizeof head) {
        fclose(f);
        return sl_err_set(err, SL_EFORMAT, "checkpoint %s: truncated (%lld bytes)", path,
                          (long long)sb.st_size);
    }
    uint32_t hmagic;
    memcpy(&hmagic, head, 4);
    if (hmagic != MR_MAGIC) {
        fclose(f);
        return sl_err_set(err, SL_EFORMAT, "checkpoint %s: not a sluice checkpoint", path);
    }
    /* the parts' lengths must add up to the file's size: walked before the file is read */
    uint32_t hranks;
    memcpy(&hranks, head + 8, 4);
    uint64_t end = 12, fsize = (uint64_t)sb.st_size;
    if (hranks > (1u << 16)) end = fsize + 1; /* no job has had that many processes */
    for (uint32_t r = 0; r < hranks && end <= fsize; r++) {
        uint64_t l;
        if (end + 8 > fsize || pread(fileno(f), &l, 8, (off_t)end) != 8 || l > fsize) {
            end = fsize + 1;
            break;
        }
        end += 8 + l;
    }
    if (hranks < 1 || end + 4 != fsize || fsize > (uint64_t)PTRDIFF_MAX) {
        fclose(f);
        return sl_err_set(err, SL_EFORMAT,
                          "checkpoint %s: truncated or damaged (%lld bytes; its header gives %u "
                          "part(s) of other lengths)",
                          path, (long long)sb.st_size, hranks);
    }
    size_t len = (size_t)sb.st_size;
    unsigned char *buf = malloc(len);
    if (!buf) {
        fclose(f);
        return sl_err_set(err, SL_ENOMEM, "checkpoint %s: out of memory for %zu bytes", path, len);
    }
    memcpy(buf, head, sizeof head);
    size_t got = sizeof head + fread(buf + sizeof head, 1, len - sizeof head, f);
    fclose(f);
    if (got != len) {
        free(buf);
        return sl_err_set(err, SL_EIO, "checkpoint %s: read %zu of %zu bytes", path, got, len);
    }
    uint32_t magic = 0, version = 0, ranks = 0, crc = 0;
    if (len >= 16) {
        memcpy(&magic, buf, 4);
        memcpy(&version, buf + 4, 4);
        memcpy(&ranks, buf + 8, 4);
        memcpy(&crc, buf + len - 4, 4);
    }
    sl_status st = SL_OK;
    if (len < 16 || magic != MR_MAGIC) {
        st = sl_err_set(err, SL_EFORMAT, "checkpoint %s: truncated or not a sluice checkpoint",
                        path);
    } else if (crc_all(buf, len - 4) != crc) {
        st = sl_err_set(err, SL_ECHECKSUM,
                        "checkpoint %s: checksum mismatch (truncated, altered or damaged)", path);
    } else if (version != 1 || ranks < 1 || (!any_size && (int)ranks != w->size)) {
        st = sl_err_set(err, SL_EINVAL,
                        "checkpoint %s was written by %u process(es), this run has %d%s", path,
                        ranks, w->size,
                        version == 1 && ranks >= 1 ? " (in DALI's order a run resumes only on the "
                                                     "same processes)"
                                                   : "");
    }
    /* on another process count (global order) every rank starts from rank 0's part */
    int mine = (int)ranks == w->size ? w->rank : 0;
    size_t off = 12;
    for (int r = 0; st == SL_OK && r <= mine; r++) {
        uint64_t l;
        if (off + 8 > len - 4) {
            st = sl_err_set(err, SL_EFORMAT, "checkpoint %s: truncated", path);
            break;
        }
        memcpy(&l, buf + off, 8);
        if (l > len - 4 - off - 8) {
            st = sl_err_set(err, SL_EFORMAT, "checkpoint %s: truncated", path);
            break;
        }
        if (r == mine) {
            *bytes = malloc(l ? (size_t)l : 1);
            if (!*bytes) {
                st = sl_err_set(err, SL_ENOMEM, "out of memory");
                break;
            }
            memcpy(*bytes, buf + off + 8, (size_t)l);
            *n = (size_t)l;
        }
        off += 8 + (size_t)l;
    }
    free(buf);
    return st;
}
