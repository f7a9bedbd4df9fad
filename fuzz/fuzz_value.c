/* SPDX-License-Identifier: Apache-2.0 */
/* Argument literals as pipelines write them ("[0.485, 0.456]", "types.FLOAT", "'CHW'"), parsed
 * and written back. */
#include "fuzz.h"
#include "operator/op.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    sl__val v;
    sl_err err;
    if (sl__val_parse(text, &v, &err) == SL_OK) {
        char buf[256];
        sl__val_format(&v, buf, sizeof buf);
        sl__val_free(&v);
    }
    free(text);
    return 0;
}
