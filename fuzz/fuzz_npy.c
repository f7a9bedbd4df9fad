/* SPDX-License-Identifier: Apache-2.0 */
/* NumPy .npy headers, from memory and from a file (the reader's path). */
#include "fuzz.h"
#include "io/npy.h"

#include <fcntl.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sl__npy_header h;
    size_t need;
    sl_err err;
    sl__npy_parse(data, size, &h, &need, &err);
    const char *path = fuzz_write_file("x.npy", data, size);
    int fd = path ? open(path, O_RDONLY) : -1;
    if (fd >= 0) {
        sl__npy_read_header(fd, size, &h, &err);
        close(fd);
    }
    return 0;
}
