/* SPDX-License-Identifier: Apache-2.0 */
/* Saved models and optimiser states (what `sluice train --load` and `--resume` read): a file
 * starting with the optimiser magic is restored into an optimiser of the kind and size its header
 * names (up to 2^16 floats, so that the state's own loop runs); anything else is loaded as a
 * model file with sl_mlp_load, which sizes the model from the file. The trailing CRC-32 is
 * recomputed first, so the fields behind it are what gets fuzzed. */
#include "fuzz.h"
#include "core/bytes.h"
#include "sluice/train.h"

#include <stdlib.h>
#include <string.h>

static void optimiser(const uint8_t *p, size_t size) {
    sl_optim_config c;
    sl_optim_config_default(&c);
    int64_t n = 16;
    if (size >= 40) { /* kind at 12, state vectors at 16, floats per vector at 24 */
        c.kind = (sl_optim_kind)(sl__get_u32(p + 12) % 3);
        if (c.kind == SL_OPTIM_SGD && sl__get_u32(p + 16) == 1) c.momentum = 0.9f;
        uint64_t want = sl__get_u64(p + 24);
        if (want >= 1 && want <= (1u << 16)) n = (int64_t)want;
    }
    sl_optim *o;
    sl_err err;
    if (sl_optim_create(&c, n, sl_cpu(), &o, &err) != SL_OK) return;
    sl_optim_deserialize(o, p, size, &err);
    sl_optim_free(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    if (size >= 8) sl__put_u32(buf + size - 4, sl__crc32(buf, size - 4));
    if (size >= 8 && memcmp(buf, "SLOPT\r\n\x1a", 8) == 0) {
        optimiser(buf, size);
    } else {
        const char *path = fuzz_write_file("model.slm", buf, size);
        sl_mlp *m;
        sl_err err;
        if (path && sl_mlp_load(path, sl_cpu(), &m, &err) == SL_OK) sl_mlp_free(m);
    }
    free(buf);
    return 0;
}
