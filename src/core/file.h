/* SPDX-License-Identifier: Apache-2.0 */
/* Files read whole and written whole. A file is looked at before it is read: opened without
 * waiting (a FIFO with no writer would block an open for good), refused unless it is a regular file
 * (a directory reads as any size, a device for ever), and its size is known before a byte of it is
 * read, so that a reader can check its magic and the sizes its header gives against the file
 * before it reads the rest or allocates for it. */
#ifndef SLUICE_CORE_FILE_H
#define SLUICE_CORE_FILE_H

#include "sluice/status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opens path for reading (*fd, O_CLOEXEC) when it is a regular file, with its size in *size.
 * Messages begin "<what> <path>: "; a missing file is SL_ENOENT, a directory, FIFO, device or
 * socket SL_EINVAL ("not a regular file (a FIFO)"). */
sl_status sl__file_open_regular(const char *path, const char *what, int *fd, uint64_t *size,
                                sl_err *err);

/* Reads exactly len bytes at offset off (retrying short reads and EINTR); SL_EIO naming what and
 * path when the file ends first or a read fails. */
sl_status sl__file_pread_full(int fd, void *buf, size_t len, uint64_t off, const char *what,
                              const char *path, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
