/* SPDX-License-Identifier: Apache-2.0 */
/* A TFRecord file: indexed by its length fields, every record's framing and CRCs checked (as
 * sluice index and inspect do) and its Example walked and searched -- also when its data CRC is
 * wrong, since the fuzzer cannot mend CRCs, and the whole input taken as one Example too -- then
 * two batches through readers.tfrecord with features of every kind (bytes, fixed-length int64,
 * float with a partial shape, variable-length int64). Damage must end in an error, never a
 * crash. */
#include "fuzz.h"
#include "io/tfrecord.h"

#include <stdio.h>

static void each(const char *name, size_t nlen, const sl__tfrec_value *v, void *user) {
    (void)name, (void)nlen, (void)user;
    const uint8_t *d;
    size_t n;
    int64_t i64[4];
    float f[4];
    sl__tfrec_bytes(v, &d, &n);
    sl__tfrec_int64s(v, i64, 4);
    sl__tfrec_floats(v, f, 4);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_write_file("data.tfrecord", data, size);
    if (!path) return 0;
    sl__tfrec *t;
    sl_err err;
    static const char *const names[3] = {"image/encoded", "image/class/label", "v"};
    sl__tfrec_value v[3];
    sl__tfrec_each(data, size, each, NULL, &err);
    if (sl__tfrec_parse(data, size, 3, names, v, &err) == SL_OK)
        for (int k = 0; k < 3; k++) each(names[k], 0, &v[k], NULL);
    if (sl__tfrec_open(1, &path, NULL, &t, &err) == SL_OK) {
        for (int64_t i = 0; i < sl__tfrec_count(t) && i < 4096; i++) {
            const uint8_t *d;
            uint64_t len, next;
            sl__tfrec_read(t, i, &d, &len, &err); /* the reader's check */
            if (sl__tfrec_frame(data, size, sl__tfrec_offset(t, i), path, false, &d, &len, &next,
                                &err) != SL_OK)
                continue;
            sl__tfrec_each(d, (size_t)len, each, NULL, &err);
            if (sl__tfrec_parse(d, (size_t)len, 3, names, v, &err) == SL_OK)
                for (int k = 0; k < 3; k++) each(names[k], 0, &v[k], NULL);
        }
        sl__tfrec_close(t);
    }
    char text[1024];
    snprintf(text, sizeof text,
             "def p():\n"
             "    a, b, c, d = fn.readers.tfrecord(path=\"%s\", features={\n"
             "        \"image/encoded\": tfrec.FixedLenFeature((), tfrec.string, \"\"),\n"
             "        \"image/class/label\": tfrec.FixedLenFeature([2], tfrec.int64, -1),\n"
             "        \"v\": tfrec.VarLenFeature([2], tfrec.float32, 0.0),\n"
             "        \"w\": tfrec.VarLenFeature(tfrec.int64, 0)})\n"
             "    return a, b, c, d\n",
             path);
    fuzz_run_text(text, 4, 2, "tfrecord");
    return 0;
}
