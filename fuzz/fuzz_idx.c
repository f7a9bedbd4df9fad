/* SPDX-License-Identifier: Apache-2.0 */
/* IDX files (MNIST's format), opened and every item read as the IDX reader does. */
#include "fuzz.h"
#include "io/idx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_write_file("x-idx3-ubyte", data, size);
    sl__idx *x;
    sl_err err;
    if (!path || sl__idx_open(path, &x, &err) != SL_OK) return 0;
    volatile uint8_t sink = 0;
    for (int64_t i = 0; i < sl__idx_count(x) && i < 4096; i++) {
        size_t n;
        const uint8_t *p = sl__idx_item(x, i, &n);
        if (p && n) sink ^= p[0] ^ p[n - 1];
    }
    (void)sink; /* read every item's ends: the reads are the test */
    sl__idx_close(x);
    return 0;
}
