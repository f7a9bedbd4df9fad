/* An iterator checkpoint (what `sluice run --resume` and `sluice train --resume` read) restored
 * into the seed's validation pipeline over the fixture LMDB, then one step taken. The CRC is
 * recomputed over the input's payload first, so the fields behind it are what gets fuzzed. */
#include "fuzz.h"
#include "sluice/iterator.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#ifndef SL_FIXTURES
#error "SL_FIXTURES: the fixtures folder"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    if (size >= 24) { /* header: magic, version, crc, pad (u32), payload (u64) */
        uint32_t crc = (uint32_t)crc32(0L, buf + 24, (uInt)(size - 24));
        memcpy(buf + 8, &crc, 4);
    }
    static const char text[] =
        "def p(data_path):\n"
        "    jpegs, labels = fn.readers.caffe2(path=data_path, random_shuffle=True, name=\"r\")\n"
        "    images = fn.decoders.image(jpegs, output_type=types.GRAY)\n"
        "    return images, labels\n";
    sl_pipeline_bind bind = {"data_path", SL_FIXTURES "/caffe2-fmnist-256"};
    sl_iter_config c;
    sl_iter_config_init(&c);
    c.text = text;
    c.binds = &bind;
    c.nbinds = 1;
    c.batch_size = 16;
    c.num_threads = 1;
    c.prefetch_cpu = c.prefetch_gpu = 1;
    c.reader_name = "r";
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
