/* SPDX-License-Identifier: Apache-2.0 */
/* JPEG, PNG, BMP, PNM, (with libtiff) TIFF and (with OpenJPEG) JPEG 2000 headers (peek) and, when
 * they pass, a full CPU decode into a buffer of the size the header says -- as the decoders do,
 * with their pixel limit -- in four output types (ANY_DATA keeps the file's channels, the others
 * convert them). */
#include "fuzz.h"
#include "io/image_info.h"
#include "ops/decode_image_cpu.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static sl__decode_image_worker *w;
    sl_err err;
    if (!w && sl__decode_image_worker_create(false, &w, &err) != SL_OK) return 0;
    static const char *const types[] = {"RGB", "GRAY", "YCbCr", "ANY_DATA"};
    char why[256];
    for (int k = 0; k < 4; k++) {
        sl__decode_image_info info;
        sl__img_type type = (sl__img_type)sl__decode_image_type(types[k]);
        if (sl__decode_image_peek(data, size, type, true, 1 << 22, &info, why, sizeof why))
            continue;
        size_t n = (size_t)info.out_h * (size_t)info.out_w * (size_t)info.c;
        uint8_t *out = malloc(n ? n : 1);
        if (!out) continue;
        sl__decode_image_run(w, data, size, &info, type, NULL, false, out, why, sizeof why);
        free(out);
    }
    return 0;
}
