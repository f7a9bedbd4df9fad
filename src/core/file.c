/* SPDX-License-Identifier: Apache-2.0 */
/* Files read whole and written whole (core/file.h). */
#include "core/file.h"

#include <errno.h>
#include <fcntl.h>
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
