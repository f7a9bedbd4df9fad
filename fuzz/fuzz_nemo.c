/* SPDX-License-Identifier: Apache-2.0 */
/* NeMo ASR manifests (JSON lines): the parser of one line, then whole manifests with and without
 * the duration filters. */
#include "fuzz.h"
#include "io/nemo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sl_err err;
    sl__nemo_entry e;
    if (sl__nemo_parse_line((const char *)data, size, &e, &err) == SL_OK) sl__nemo_entry_clear(&e);
    for (int f = 0; f < 2; f++) {
        sl__nemo *m;
        if (sl__nemo_open_text("fuzz/manifest.json", (const char *)data, size, f ? 0.5 : 0,
                               f ? 20 : 0, &m, &err) != SL_OK)
            continue;
        for (int64_t i = 0; i < sl__nemo_count(m); i++) {
            const sl__nemo_entry *x = sl__nemo_get(m, i);
            if (!x->path[0] || x->text[x->text_len] != 0) __builtin_trap();
        }
        sl__nemo_close(m);
    }
    return 0;
}
