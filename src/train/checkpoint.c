/* SPDX-License-Identifier: Apache-2.0 */
/* A training job's checkpoints (sluice/checkpoint.h): the file of one part per process ("SLMR",
 * version 1), packed and read back with its header walked against the file's size before a byte
 * of the rest is read, and the trainer's state (model and optimiser of replica 0) that an
 * iterator checkpoint carries as its extra bytes. */
#include "sluice/checkpoint.h"

#include "core/bytes.h"
#include "core/file.h"
#include "core/log.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define JOB_MAGIC   0x524d4c53u /* "SLMR" */
#define JOB_VERSION 1u
#define JOB_HEADER  12        /* magic, version, parts */
#define JOB_MAX     (1 << 16) /* no job has had that many processes */

sl_status sl_checkpoint_pack(int nparts, const void *const *parts, const size_t *sizes,
                             void **bytes, size_t *size, sl_err *err) {
    if (nparts < 1 || nparts > JOB_MAX)
        return sl_err_set(err, SL_EINVAL, "checkpoint: %d parts (1..%d)", nparts, JOB_MAX);
    size_t total = JOB_HEADER + 4;
    for (int r = 0; r < nparts; r++) {
        if (sizes[r] > SIZE_MAX - total - 8)
            return sl_err_set(err, SL_ENOMEM, "checkpoint: parts too large");
        total += 8 + sizes[r];
    }
    unsigned char *f = malloc(total);
    if (!f) return sl_err_set(err, SL_ENOMEM, "out of memory for a checkpoint of %zu bytes", total);
    sl__put_u32(f, JOB_MAGIC);
    sl__put_u32(f + 4, JOB_VERSION);
    sl__put_u32(f + 8, (uint32_t)nparts);
    size_t off = JOB_HEADER;
    for (int r = 0; r < nparts; r++) {
        sl__put_u64(f + off, sizes[r]);
        if (sizes[r]) memcpy(f + off + 8, parts[r], sizes[r]);
        off += 8 + sizes[r];
    }
    sl__put_u32(f + off, sl__crc32(f, off));
    *bytes = f;
    *size = total;
    return SL_OK;
}

sl_status sl_checkpoint_write(const char *path, int nparts, const void *const *parts,
                              const size_t *sizes, sl_err *err) {
    void *f;
    size_t n;
    sl_status st = sl_checkpoint_pack(nparts, parts, sizes, &f, &n, err);
    if (st == SL_ENOMEM) sl_err_prefix(err, "writing %s: ", path);
    if (st) return st;
    st = sl__file_write_whole(path, "checkpoint", f, n, err);
    free(f);
    return st;
}

/* The file at path whole (*out, malloc'd), once its header's part lengths add up to its size. */
static sl_status read_checked(const char *path, unsigned char **out, size_t *len, sl_err *err) {
    int fd;
    uint64_t fsize;
    SL_TRY(sl__file_open_regular(path, "checkpoint", &fd, &fsize, err));
    unsigned char head[JOB_HEADER];
    if (fsize < 16 || pread(fd, head, sizeof head, 0) != (ssize_t)sizeof head) {
        close(fd);
        return sl_err_set(err, SL_EFORMAT, "checkpoint %s: truncated (%lld bytes)", path,
                          (long long)fsize);
    }
    if (sl__get_u32(head) != JOB_MAGIC) {
        close(fd);
        return sl_err_set(err, SL_EFORMAT, "checkpoint %s: not a sluice checkpoint", path);
    }
    /* the parts' lengths must add up to the file's size: walked before the file is read */
    uint32_t nparts = sl__get_u32(head + 8);
    uint64_t end = JOB_HEADER;
    if (nparts > JOB_MAX) end = fsize + 1;
    for (uint32_t r = 0; r < nparts && end <= fsize; r++) {
        unsigned char lb[8];
        uint64_t l;
        if (end + 8 > fsize || pread(fd, lb, 8, (off_t)end) != 8 || (l = sl__get_u64(lb)) > fsize) {
            end = fsize + 1;
            break;
        }
        end += 8 + l;
    }
    if (nparts < 1 || end + 4 != fsize || fsize > (uint64_t)PTRDIFF_MAX) {
        close(fd);
        return sl_err_set(err, SL_EFORMAT,
                          "checkpoint %s: truncated or damaged (%lld bytes; its header gives %u "
                          "part(s) of other lengths)",
                          path, (long long)fsize, nparts);
    }
    unsigned char *buf = malloc((size_t)fsize);
    if (!buf) {
        close(fd);
        return sl_err_set(err, SL_ENOMEM, "checkpoint %s: out of memory for %zu bytes", path,
                          (size_t)fsize);
    }
    sl_status st = sl__file_pread_full(fd, buf, (size_t)fsize, 0, "checkpoint", path, err);
    close(fd);
    if (st) {
        free(buf);
        return st;
    }
    *out = buf;
    *len = (size_t)fsize;
    return SL_OK;
}

sl_status sl_checkpoint_read(const char *path, int rank, int nranks, bool any_size, void **bytes,
                             size_t *size, sl_err *err) {
    unsigned char *buf = NULL;
    size_t len = 0;
    SL_TRY(read_checked(path, &buf, &len, err));
    uint32_t version = sl__get_u32(buf + 4), parts = sl__get_u32(buf + 8);
    sl_status st = SL_OK;
    if (sl__crc32(buf, len - 4) != sl__get_u32(buf + len - 4)) {
        st = sl_err_set(err, SL_ECHECKSUM,
                        "checkpoint %s: checksum mismatch (truncated, altered or damaged)", path);
    } else if (version != JOB_VERSION || (!any_size && (int)parts != nranks)) {
        st = sl_err_set(err, SL_EINVAL,
                        "checkpoint %s was written by %u process(es), this run has %d%s", path,
                        parts, nranks,
                        version == JOB_VERSION ? " (in DALI's order a run resumes only on the "
                                                 "same processes)"
                                               : "");
    } else if (rank < 0 || rank >= nranks) {
        st = sl_err_set(err, SL_EINVAL, "checkpoint %s: rank %d of %d", path, rank, nranks);
    }
    /* on another process count (global order) every rank starts from part 0 */
    uint32_t mine = (int)parts == nranks ? (uint32_t)rank : 0;
    size_t off = JOB_HEADER; /* the lengths were walked against the size before the read */
    for (uint32_t r = 0; st == SL_OK && r <= mine; r++) {
        size_t l = (size_t)sl__get_u64(buf + off);
        if (r == mine) {
            *bytes = malloc(l ? l : 1);
            if (!*bytes) {
                st = sl_err_set(err, SL_ENOMEM, "out of memory");
                break;
            }
            memcpy(*bytes, buf + off + 8, l);
            *size = l;
        }
        off += 8 + l;
    }
    free(buf);
    return st;
}

/* ---- the trainer's state --------------------------------------------------------------------- */

sl_status sl_trainer_state_save(sl_trainer *t, void **bytes, size_t *size, sl_err *err) {
    size_t nm = 0, no = 0;
    SL_TRY(sl_mlp_serialize(sl_trainer_model(t, 0), NULL, 0, &nm, err));
    SL_TRY(sl_optim_serialize(sl_trainer_optim(t, 0), NULL, 0, &no, err));
    unsigned char *buf = malloc(16 + nm + no);
    if (!buf) return sl_err_set(err, SL_ENOMEM, "out of memory");
    sl__put_u64(buf, nm);
    sl__put_u64(buf + 8, no);
    sl_status st = sl_mlp_serialize(sl_trainer_model(t, 0), buf + 16, nm, &nm, err);
    if (st == SL_OK) st = sl_optim_serialize(sl_trainer_optim(t, 0), buf + 16 + nm, no, &no, err);
    if (st) {
        free(buf);
        return st;
    }
    *bytes = buf;
    *size = 16 + nm + no;
    return SL_OK;
}

/* The model's bytes of the state (*nm long) and the optimiser's length; SL_EFORMAT unless they
 * add up to size. */
static sl_status state_parts(const void *bytes, size_t size, uint64_t *nm, uint64_t *no,
                             sl_err *err) {
    if (size < 16) return sl_err_set(err, SL_EFORMAT, "checkpoint: no model state");
    *nm = sl__get_u64(bytes);
    *no = sl__get_u64((const unsigned char *)bytes + 8);
    if (*nm > size - 16 || *no != size - 16 - *nm) /* not 16 + nm + no: that can wrap around */
        return sl_err_set(err, SL_EFORMAT, "checkpoint: bad model state lengths");
    return SL_OK;
}

sl_status sl_trainer_state_load(sl_trainer *t, const void *bytes, size_t size, sl_err *err) {
    uint64_t nm, no;
    SL_TRY(state_parts(bytes, size, &nm, &no, err));
    const char *p = (const char *)bytes + 16;
    SL_TRY(sl_mlp_deserialize(sl_trainer_model(t, 0), p, (size_t)nm, err));
    SL_TRY(sl_optim_deserialize(sl_trainer_optim(t, 0), p + nm, (size_t)no, err));
    return sl_trainer_sync(t, err);
}

sl_status sl_trainer_state_peek(const void *bytes, size_t size, sl_mlp_config *cfg, sl_err *err) {
    uint64_t nm, no;
    SL_TRY(state_parts(bytes, size, &nm, &no, err));
    return sl_mlp_peek_config((const char *)bytes + 16, (size_t)nm, cfg, err);
}
