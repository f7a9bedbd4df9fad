/* SPDX-License-Identifier: Apache-2.0 */
/* A Caffe2 LMDB (data.mdb) through readers.caffe2 and the image decoder: opened, indexed, and two
 * batches read. A damaged store must end in an error, never a crash. */
#include "fuzz.h"

#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!fuzz_write_file("data.mdb", data, size)) return 0;
    char text[512];
    snprintf(text, sizeof text,
             "def p():\n"
             "    jpegs, labels = fn.readers.caffe2(path=\"%s\")\n"
             "    return fn.decoders.image(jpegs, output_type=types.GRAY), labels\n",
             fuzz_dir());
    fuzz_run_text(text, 8, 2, "store");
    return 0;
}
