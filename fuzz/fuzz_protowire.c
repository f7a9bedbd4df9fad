/* SPDX-License-Identifier: Apache-2.0 */
/* The protobuf wire reader: a message walked field by field, and its repeated-field reader. */
#include "fuzz.h"
#include "io/protowire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sl__protowire_valid(data, size);
    sl__pw r;
    sl__pw_field f;
    sl__protowire_init(&r, data, size);
    for (int i = 0; i < 100000 && sl__protowire_next(&r, &f) > 0; i++) {
        if (f.wt == SL_PW_LEN) sl__protowire_valid(f.data, f.len);
    }
    uint64_t out[64];
    for (uint32_t num = 1; num < 8; num++)
        for (int kind = 0; kind < 3; kind++) sl__protowire_repeated(data, size, num, kind, out, 64);
    return 0;
}
