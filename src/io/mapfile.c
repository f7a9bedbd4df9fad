/* SPDX-License-Identifier: Apache-2.0 */
#include "io/mapfile.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

sl_status sl__mapfile_map(const char *path, const uint8_t **map, size_t *size, sl_err *err) {
    *map = NULL;
    *size = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO: refused, not waited on */
    if (fd < 0)
        return sl_err_set(err, errno == ENOENT ? SL_ENOENT : SL_EIO, "%s: %s", path,
                          strerror(errno));
    struct stat sb;
    sl_status st = SL_OK;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
        st = sl_err_set(err, SL_EIO, "%s: not a regular file", path);
    size_t n = st == SL_OK ? (size_t)sb.st_size : 0;
    if (st == SL_OK && n > 0) {
        void *p = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED)
            st = sl_err_set(err, SL_EIO, "%s: cannot map: %s", path, strerror(errno));
        else
            *map = p, *size = n;
    }
    close(fd);
    return st;
}

void sl__mapfile_unmap(const uint8_t *map, size_t size) {
    if (map) munmap((void *)map, size);
}
