/* SPDX-License-Identifier: Apache-2.0 */
/* An iterator checkpoint (what `sluice run --resume` and `sluice train --resume` read) restored
 * into the seed's validation pipeline over the fixture LMDB, then one step taken. The CRC is
 * recomputed over the input's payload first, so the fields behind it are what gets fuzzed. Both
 * formats are read: the corpus keeps each finding as format 1 (as found) and as format 2
 * (`<name>_format2`, the same field values). */
#include "fuzz.h"
#include "sluice/iterator.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#ifndef SL_FIXTURES
#error "SL_FIXTURES: the fixtures folder"
#endif
#ifndef FUZZ_GLOBAL_ORDER /* fuzz_checkpoint_global.c: the same in global order, on 2 devices */
#define FUZZ_GLOBAL_ORDER 0
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    if (size >= 24) { /* header: magic, version, crc, reserved (u32), payload (u64) */
        uint32_t crc = (uint32_t)crc32(0L, buf + 24, (uInt)(size - 24));
        memcpy(buf + 8, &crc, 4);
    }
    sl_iter_config c;
    fuzz_checkpoint_config(&c, SL_FIXTURES, FUZZ_GLOBAL_ORDER, FUZZ_GLOBAL_ORDER ? 2 : 1);
    c.resume_bytes = buf;
    c.resume_size = size;
    sl_iter *it;
    sl_err err;
    if (sl_iter_create(&c, &it, &err) == SL_OK) {
        const sl_iter_batch *b;
        sl_iter_next(it, &b);
        sl_iter_free(it);
        err.msg[0] = '\0';
    }
    if (getenv("FUZZ_VERBOSE")) fprintf(stderr, "checkpoint: %s\n", err.msg);
    free(buf);
    return 0;
}
