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

/* Writes len bytes to path whole or not at all: into path.tmp beside it, synced, renamed over
 * path, and the folder synced, so that after a crash path is the old file or the complete new
 * one and the rename lasts. A path that is there and is no regular file (a FIFO, a device, a
 * folder) is refused. On failure path is as it was, no temporary is left, and the message is
 * "<what> <file>: <step>: <cause>" (strerror's, e.g. "No space left on device"). */
sl_status sl__file_write_whole(const char *path, const char *what, const void *bytes, size_t len,
                               sl_err *err);

/* Writes len bytes to the file path (created, or truncated), synced and closed: 0; 1 when it
 * cannot be created, 2 when a write, the sync or the close failed (a file system may report a
 * failed write only at the sync or the close), errno set. */
int sl__file_write_synced(const char *path, const void *bytes, size_t len);

/* Syncs the folder that holds path (its directory entries: a rename or a new file there lasts);
 * 0 or -1 with errno set. */
int sl__file_sync_parent(const char *path);

#ifdef __cplusplus
}
#endif
#endif
