/* SPDX-License-Identifier: Apache-2.0 */
/* Files read whole and written whole (core/file.h). */
#include "core/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

sl_status sl__file_open_regular(const char *path, const char *what, int *fd, uint64_t *size,
                                sl_err *err) {
    *fd = -1;
    *size = 0;
    int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO's open does not wait */
    if (f < 0)
        return sl_err_set(err, errno == ENOENT ? SL_ENOENT : SL_EIO, "%s %s: %s", what, path,
                          strerror(errno));
    struct stat sb;
    if (fstat(f, &sb) != 0) {
        int e = errno;
        close(f);
        return sl_err_set(err, SL_EIO, "%s %s: %s", what, path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(f);
        return sl_err_set(err, SL_EINVAL, "%s %s: not a regular file (%s)", what, path,
                          S_ISDIR(sb.st_mode)    ? "a directory"
                          : S_ISFIFO(sb.st_mode) ? "a FIFO"
                                                 : "a device or socket");
    }
    /* reads of a regular file never wait anyway; the flag is dropped for what follows */
    int fl = fcntl(f, F_GETFL);
    if (fl >= 0) fcntl(f, F_SETFL, fl & ~O_NONBLOCK);
    *fd = f;
    *size = (uint64_t)sb.st_size;
    return SL_OK;
}

sl_status sl__file_pread_full(int fd, void *buf, size_t len, uint64_t off, const char *what,
                              const char *path, sl_err *err) {
    size_t got = 0;
    while (got < len) {
        ssize_t r = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return sl_err_set(err, SL_EIO, "%s %s: %s", what, path, strerror(errno));
        if (r == 0)
            return sl_err_set(err, SL_EIO, "%s %s: ends after %llu of %llu bytes", what, path,
                              (unsigned long long)(off + got), (unsigned long long)(off + len));
        got += (size_t)r;
    }
    return SL_OK;
}

int sl__file_sync_parent(const char *path) {
    size_t n = strlen(path);
    char *dir = malloc(n + 2);
    if (!dir) {
        errno = ENOMEM;
        return -1;
    }
    memcpy(dir, path, n + 1);
    char *slash = strrchr(dir, '/');
    if (!slash)
        strcpy(dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int r = -1, e = errno;
    if (fd >= 0) {
        r = fsync(fd);
        e = errno;
        close(fd);
    }
    free(dir);
    errno = e;
    return r;
}

int sl__file_write_synced(const char *path, const void *bytes, size_t len) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return 1;
    int e = 0;
    size_t off = 0;
    while (!e && off < len) {
        ssize_t w = write(fd, (const char *)bytes + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0)
            e = w < 0 ? errno : ENOSPC;
        else
            off += (size_t)w;
    }
    if (!e && fsync(fd) != 0) e = errno;
    if (close(fd) != 0 && !e) e = errno;
    errno = e;
    return e ? 2 : 0;
}

sl_status sl__file_write_whole(const char *path, const char *what, const void *bytes, size_t len,
                               sl_err *err) {
    struct stat sb; /* a device or FIFO there would be replaced by the rename */
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return sl_err_set(err, SL_EINVAL, "%s %s: not a regular file", what, path);
    size_t n = strlen(path) + 5;
    char *tmp = malloc(n);
    if (!tmp) return sl_err_set(err, SL_ENOMEM, "%s %s: out of memory", what, path);
    snprintf(tmp, n, "%s.tmp", path);
    int r = sl__file_write_synced(tmp, bytes, len);
    if (r == 1) {
        sl_status st =
            sl_err_set(err, SL_EIO, "%s %s: cannot create: %s", what, tmp, strerror(errno));
        free(tmp);
        return st;
    }
    /* the first step that fails gives the cause */
    const char *step = r ? "write failed" : NULL;
    int e = r ? errno : 0;
    if (!step && rename(tmp, path) != 0) step = "rename failed", e = errno;
    if (step) {
        unlink(tmp);
        sl_status st = sl_err_set(err, SL_EIO, "%s %s: %s: %s", what,
                                  strcmp(step, "rename failed") ? tmp : path, step, strerror(e));
        free(tmp);
        return st;
    }
    free(tmp);
    if (sl__file_sync_parent(path) != 0)
        return sl_err_set(err, SL_EIO, "%s %s: syncing its folder: %s", what, path,
                          strerror(errno));
    return SL_OK;
}
