/* SPDX-License-Identifier: Apache-2.0 */
/* A Caffe2 LMDB (data.mdb) through readers.caffe2 and the image decoder: opened, indexed, and two
 * batches read. A damaged store must end in an error, never a crash. */
#include "fuzz.h"
#include "sluice/pipeline.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!fuzz_write_file("data.mdb", data, size)) return 0;
    char text[512];
    snprintf(text, sizeof text,
             "def p():\n"
             "    jpegs, labels = fn.readers.caffe2(path=\"%s\")\n"
             "    return fn.decoders.image(jpegs, output_type=types.GRAY), labels\n",
             fuzz_dir());
    sl_pipeline_config cfg;
    sl_pipeline_config_init(&cfg);
    cfg.batch_size = 8;
    cfg.num_threads = 1;
    cfg.prefetch_cpu = cfg.prefetch_gpu = 1;
    sl_pipeline *p;
    sl_err err;
    if (sl_pipeline_create(&cfg, &p, &err) != SL_OK) return 0;
    if (sl_pipeline_parse(p, text, "fuzz.py", 0, NULL, &err) == SL_OK &&
        sl_pipeline_build(p) == SL_OK) {
        for (int i = 0; i < 2; i++) {
            sl_batch *b;
            if (sl_pipeline_next(p, &b) != SL_OK) break;
            sl_pipeline_release(p, b);
        }
    }
    if (getenv("FUZZ_VERBOSE")) fprintf(stderr, "store: %s\n", sl_pipeline_errmsg(p));
    sl_pipeline_free(p);
    return 0;
}
